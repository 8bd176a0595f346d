"""What a candidate request looks like when it leaves lighteval's litellm client (with our patches),
captured at the stub for an OpenAI model, an OpenAI reasoning model and an Anthropic model, and
checked against what each provider refuses. lighteval 0.13 alone sends both `max_tokens` and
`max_completion_tokens` (and `stop: []`) to an OpenAI-compatible server."""

from __future__ import annotations

import litellm
import pytest

from oab_bench.judge.generation import lighteval_compat

MESSAGES = [{"role": "system", "content": "Regras do exame."}, {"role": "user", "content": "Questão?"}]


def refusals(model: str, body: dict) -> list[str]:
    """What the provider's API refuses in `body` (its documented rules, as far as they bear on us)."""
    provider = model.split("/", 1)[0]
    found = []
    limits = [k for k in ("max_tokens", "max_completion_tokens") if k in body]
    if len(limits) != 1:
        found.append(f"token limits {limits}: exactly one")
    limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
    most = litellm.get_model_info(model).get("max_output_tokens")
    if most and limit > most:
        found.append(f"{limit} tokens over the model's {most}")
    if "stop" in body and not body["stop"]:
        found.append("an empty stop list")
    if provider == "openai" and litellm.supports_reasoning(model) and "max_tokens" in body:
        found.append("max_tokens on a reasoning model (OpenAI wants max_completion_tokens)")
    if provider == "anthropic":
        if "max_tokens" not in body:
            found.append("no max_tokens (Anthropic requires it)")
        if "temperature" in body and "top_p" in body:
            found.append("temperature and top_p together")
        if not 0 <= body.get("temperature", 1) <= 1:
            found.append("temperature outside 0..1")
        if "n" in body or "logprobs" in body:
            found.append("OpenAI-only parameters")
    return found


def candidate_request(server, model: str, monkeypatch, max_new_tokens: int = 8192) -> dict:
    from lighteval.models.endpoints.litellm_model import LiteLLMClient, LiteLLMModelConfig
    from lighteval.models.model_input import GenerationParameters

    monkeypatch.setenv("OPENAI_API_KEY", "sk-shape-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-shape-test")
    monkeypatch.delenv("OAB_ANSWER_CACHE", raising=False)  # every call reaches the stub
    lighteval_compat.install(task="oab_bench", system_key="oab_system_prompt")
    base = server.url if model.startswith("openai/") else server.url.removesuffix("/v1")
    config = LiteLLMModelConfig(  # as `oab-bench run` writes model_config.yaml
        model_name=model,
        base_url=base,
        max_model_length=32768,
        api_max_retry=1,
        generation_parameters=GenerationParameters(temperature=0.7),
    )
    before = server.count
    LiteLLMClient(config)._LiteLLMClient__call_api(MESSAGES, False, max_new_tokens, 1, [])
    assert server.count == before + 1
    return server.requests[-1]["body"]


@pytest.mark.slow  # imports lighteval's model code (seconds)
@pytest.mark.parametrize(
    ("model", "limit", "expected"),
    [
        ("openai/gpt-4o-mini", "max_tokens", 8192),
        ("openai/gpt-5.2", "max_completion_tokens", 32768),  # reasoning: lighteval's 10x, capped
        ("anthropic/claude-sonnet-4-6", "max_tokens", 32768),
    ],
)
def test_a_candidate_request_no_provider_refuses(stub, monkeypatch, model, limit, expected):
    body = candidate_request(stub(), model, monkeypatch)
    print(model, sorted(body))
    assert refusals(model, body) == [], body
    assert body[limit] == expected and body["temperature"] == 0.7
    assert body["model"] == model.split("/", 1)[1]
    if model.startswith("anthropic/"):  # the exam's rules are Anthropic's system field
        assert body["system"][0]["text"] == "Regras do exame." and [m["role"] for m in body["messages"]] == [
            "user"
        ]
    else:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_the_shape_keeps_an_explicit_generation_limit():
    shaped = lighteval_compat.request_shape({"max_tokens": 8192, "max_completion_tokens": 4096, "stop": []})
    assert shaped == {"max_tokens": 4096}
    assert lighteval_compat.request_shape({"max_tokens": 10, "stop": ["</fim>"]}) == {
        "max_tokens": 10,
        "stop": ["</fim>"],
    }
