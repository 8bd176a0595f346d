"""An OpenAI-compatible chat server on 127.0.0.1 for tests: deterministic answers, injectable faults.

It plays two parts, chosen by the request:
- a *judge* (a `json_schema` response format, or a model name starting with "judge"): it
  fills the schema; each enum (a rubric item's allowed scores) gets a value chosen by
  `policy`. Without a schema it answers free text ending in `[[nota]]` (`legacy_score`).
- a *candidate* (any other model): a fixed Portuguese answer naming the model and a hash
  of the prompt, optionally wrapped in a `<think>` block.

Faults are rules `{kind, count, match, after}` applied in order to the requests whose body
contains `match` (all when empty), once `after` of them went through; `count` None means
forever. Kinds: `429`
(`retry_after` seconds in the header), `500`, `400`, `hang` (sleeps `seconds`),
`malformed` (judge content that is not JSON), `bad_score` (a score outside the enum),
`truncated` (finish_reason length), `empty_reasoning` (no content, reasoning tokens),
`refusal`, `empty` (empty content), `die` (the server stops: connection reset), `401`/`403`
(quoting the key), `404` (no such model).

Use in-process (`with StubServer() as s: s.url`) or as a process:
`python -m tests.openai_stub --port 0 --config config.json` (prints the port).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from aiohttp import web


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


class Policy:
    """Pick a value from an enum; deterministic given the enum's position in the schema."""

    @staticmethod
    def choose(policy: str, values: list, index: int) -> Any:
        if policy == "max":
            return values[-1]
        if policy == "min":
            return values[0]
        if policy == "alternate":  # max for even positions, 0 for odd
            return values[-1] if index % 2 == 0 else values[0]
        raise ValueError(policy)


def fill_schema(schema: dict, policy: str, counter: list[int], defs: dict | None = None) -> Any:
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return fill_schema(defs[schema["$ref"].split("/")[-1]], policy, counter, defs)
    if "enum" in schema:
        i = counter[0]
        counter[0] += 1
        return Policy.choose(policy, schema["enum"], i)
    kind = schema.get("type")
    if kind == "object":
        return {k: fill_schema(v, policy, counter, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [fill_schema(schema.get("items", {}), policy, counter, defs)]
    if kind == "string":
        return "Análise do item: a resposta aborda o ponto."
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return True
    return None


class StubServer:
    def __init__(
        self,
        *,
        policy: str = "max",
        latency: float = 0.0,
        faults: list[dict] | None = None,
        think: bool = False,
        legacy_score: str = "0,50",
        record: bool = True,
        max_model_len: int | None = None,
        served: tuple[str, ...] = ("candidate", "judge"),
    ):
        self.policy = policy
        self.latency = latency
        self.faults = [dict(f) for f in faults or []]
        self.think = think
        self.legacy_score = legacy_score
        self.record = record
        self.max_model_len = max_model_len  # set: /v1/models reports it and /tokenize counts, like vLLM
        self.served = served
        self.requests: list[dict] = []
        self.count = 0
        self.inflight = 0
        self.max_inflight = 0
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping: asyncio.Event | None = None

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/tokenize", self.tokenize)
        return app

    async def _start(self, port: int) -> None:
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def start(self, port: int = 0) -> StubServer:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start(port))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    async def _shutdown(self) -> None:
        self._stopping.set()  # hung handlers return now
        if self._runner:
            await self._runner.cleanup()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in others:
            t.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def stop(self) -> None:
        if self._loop and self._loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            with contextlib.suppress(Exception):
                fut.result(15)
            self._runner = None
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread:
                self._thread.join(5)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- behaviour --------------------------------------------------------------------------

    def _fault_for(self, raw: str) -> dict | None:
        with self._lock:
            for rule in self.faults:
                if rule.get("match") and rule["match"] not in raw:
                    continue
                if rule.get("after", 0) > 0:  # let this many matching requests through first
                    rule["after"] -= 1
                    continue
                if rule.get("count") is None:
                    return rule
                if rule["count"] > 0:
                    rule["count"] -= 1
                    return rule
        return None

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def models(self, request: web.Request) -> web.Response:
        if self.max_model_len is None:
            return web.json_response({"data": [], "object": "list"})
        cards = [{"id": name, "object": "model", "max_model_len": self.max_model_len} for name in self.served]
        return web.json_response({"data": cards, "object": "list"})

    async def tokenize(self, request: web.Request) -> web.Response:
        """vLLM's /tokenize for chat messages; one token per 4 characters of the contents."""
        if self.max_model_len is None:
            raise web.HTTPNotFound()
        body = await request.json()
        count = sum(len(m["content"]) for m in body["messages"]) // 4 + 3 * len(body["messages"])
        return web.json_response({"count": count, "max_model_len": self.max_model_len})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            return await self._chat(request)
        finally:
            with self._lock:
                self.inflight -= 1

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.text()
        body = json.loads(raw)
        with self._lock:
            self.count += 1
            if self.record:
                self.requests.append({"body": body, "headers": dict(request.headers), "time": time.time()})
        if self.latency:
            await asyncio.sleep(self.latency)
        fault = self._fault_for(raw + json.dumps(body, ensure_ascii=False))  # match escaped or not
        kind = fault["kind"] if fault else None
        if kind == "die":
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._runner.cleanup()))
            request.transport.close()
            raise web.HTTPServiceUnavailable()
        if kind == "429":
            return web.json_response(
                {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                status=429,
                headers={"Retry-After": str(fault.get("retry_after", 1))},
            )
        if kind == "404":
            return web.json_response(
                {
                    "error": {
                        "message": f"The model `{body.get('model')}` does not exist",
                        "type": "not_found",
                    }
                },
                status=404,
            )
        if kind in ("401", "403"):  # like providers that quote the key they were given
            message = f"Incorrect API key provided: {request.headers.get('Authorization', '')}"
            return web.json_response(
                {"error": {"message": message, "type": "invalid_request_error"}}, status=int(kind)
            )
        if kind in ("500", "400"):
            return web.json_response(
                {"error": {"message": f"injected {kind}", "type": "server_error"}}, status=int(kind)
            )
        if kind == "hang":
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), fault.get("seconds", 3600))

        model = body.get("model", "")
        content, finish, reasoning_tokens, refusal = self._content(body, model, kind)
        prompt_text = json.dumps(body.get("messages", []), ensure_ascii=False)
        prompt_tokens = max(1, len(prompt_text) // 4)
        completion_tokens = max(1, len(content or "") // 4) + reasoning_tokens
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal:
            message["refusal"] = refusal
        return web.json_response(
            {
                "id": f"chatcmpl-{self.count}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": prompt_tokens // 2},
                    "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
                },
            }
        )

    def _content(self, body: dict, model: str, kind: str | None) -> tuple[str | None, str, int, str | None]:
        if kind == "refusal":
            return None, "stop", 0, "Não posso ajudar com isso."
        if kind == "empty":
            return "", "stop", 0, None
        if kind == "empty_reasoning":
            return "", "length", 500, None
        if model.startswith("judge") or (body.get("response_format") or {}).get("type") == "json_schema":
            text = self._judge(body, kind)
        else:
            user = body["messages"][-1]["content"]
            text = (
                f"Resposta do candidato {model} ({_digest(user)}): "
                "a medida cabível é a ação prevista em lei, com fundamento no artigo pertinente."
            )
            if self.think:
                text = f"<think>raciocínio interno {_digest(user)}</think>\n{text}"
        if kind == "truncated":
            return text[: len(text) // 2], "length", 0, None
        return text, "stop", 0, None

    def _judge(self, body: dict, kind: str | None) -> str:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
            data = fill_schema(schema, self.policy, [0])
            if kind == "malformed":
                return json.dumps(data)[:-7] + "...não é JSON"
            if kind == "bad_score":
                items = data.get("items", {})
                if isinstance(items, dict) and items:
                    first = next(iter(items))
                    items[first]["score"] = 0.123
            return json.dumps(data, ensure_ascii=False)
        if kind == "malformed":
            return "Análise sem nota no final."
        return f"Análise item a item.\n\nNota final: [[{self.legacy_score}]]"


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible stub server for tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--config", help="JSON file with StubServer keyword arguments")
    args = parser.parse_args()
    kwargs = json.loads(Path(args.config).read_text()) if args.config else {}
    server = StubServer(record=False, **kwargs).start(args.port)
    print(server.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
