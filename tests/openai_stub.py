"""An OpenAI-compatible chat server on 127.0.0.1 for tests: deterministic answers, injectable faults.

It plays two parts, chosen by the request:
- a *judge* (a `json_schema` response format, or a model name starting with "judge"): it
  fills the schema; each enum (a rubric item's allowed scores) gets a value chosen by
  `policy`. Without a schema it answers free text ending in `[[nota]]` (`legacy_score`).
  Policy `overlap` reads our judge prompt: with s the share of the reference's word trigrams
  the answer contains, the first s of the rubric items get their maximum, the rest 0.
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

Batch API (`/v1/files`, `/v1/batches`, `/v1/batches/{id}`, `/v1/files/{id}/content`; none of them
with `batch_routes=False`, as on a vLLM server): each line
of a batch is answered by this server's own chat endpoint (so the policies and faults above
apply, and `requests` records it with the header `X-Stub-Batch`), at once (or, with `batch_hold`, once `release_batches()` is called).
`batch_faults` are rules of the same shape for batch lines, kinds `failed` (the line goes to the
error file) and `expired` (not answered: the batch ends `expired`, the line in the error file
with code `batch_expired`). `batch_creations` and `batch_retrievals` count the batches created and polled.

Anthropic's `/v1/messages` answers as a candidate (what litellm sends an `anthropic/` model).

Use in-process (`with StubServer() as s: s.url`) or as a process:
`python -m tests.openai_stub --port 0 --config config.json` (prints the port).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from aiohttp import web


@functools.cache
def _encoding():
    """tiktoken's o200k (GPT-4o/5), from litellm's bundled files: no download. None without tiktoken."""
    try:
        import tiktoken

        spec = importlib.util.find_spec("litellm")
        if spec and spec.submodule_search_locations:
            bundled = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
        return tiktoken.get_encoding("o200k_base")
    except Exception:
        return None


def count_prompt_tokens(messages: list[dict]) -> int:
    """Prompt tokens as an OpenAI server reports them: o200k tokens of each content plus 3 per
    message and 3 to prime the reply (one per 4 characters without tiktoken)."""
    texts = []
    for m in messages:
        content = m.get("content") or ""
        texts.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content))
    enc = _encoding()
    if enc is None:
        return max(1, sum(len(t) for t in texts) // 4)
    return sum(len(enc.encode(t, disallowed_special=())) for t in texts) + 3 * len(messages) + 3


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


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def reference_share(user: str) -> float:
    """Share of the reference's word trigrams present in the candidate's answer (our judge prompt)."""
    reference = user.split("# Padrão de respostas: gabarito comentado", 1)[-1]
    reference = reference.split("# Padrão de respostas: tabela de pontuação", 1)[0]
    answer = user.rsplit("<resposta_do_candidato>", 1)[-1].split("</resposta_do_candidato>", 1)[0]
    wanted = _trigrams(reference)
    return len(wanted & _trigrams(answer)) / len(wanted) if wanted else 0.0


def fill_by_overlap(schema: dict, share: float) -> dict:
    """Our rubric schema filled as a judge that credits content: item i of n gets its max if (i + 0.5) / n <= share."""
    items = schema["properties"]["items"]["properties"]
    n = len(items)
    return {
        "items": {
            item_id: {
                "analysis": f"A resposta contém {share:.0%} do gabarito.",
                "score": spec["properties"]["score"]["enum"][-1 if (i + 0.5) / n <= share else 0],
            }
            for i, (item_id, spec) in enumerate(items.items())
        }
    }


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
        batch_faults: list[dict] | None = None,
        batch_hold: bool = False,
        batch_page: int = 100,
        batch_routes: bool = True,
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
        self.batch_faults = [dict(f) for f in batch_faults or []]
        self.batch_hold = batch_hold  # batches stay in_progress until release_batches()
        self.batch_page = batch_page  # GET /v1/batches: at most this many per page (OpenAI: 100)
        self.batch_routes = batch_routes  # False: no /v1/files nor /v1/batches (a vLLM server): 404
        self._released: asyncio.Event | None = None
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batch_creations = 0
        self.batch_retrievals = 0
        self.batch_api: list[dict] = []  # {path, headers} of every files/batches request
        self._batch_tasks: set[asyncio.Task] = set()
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
        app.router.add_post("/v1/messages", self.messages)  # Anthropic's, to see what litellm sends there
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/tokenize", self.tokenize)
        if self.batch_routes:
            app.router.add_post("/v1/files", self.upload)
            app.router.add_get("/v1/files", self.list_files)
            app.router.add_get("/v1/files/{id}/content", self.file_content)
            app.router.add_post("/v1/batches", self.create_batch)
            app.router.add_get("/v1/batches", self.list_batches)
            app.router.add_get("/v1/batches/{id}", self.retrieve_batch)
        app.middlewares.append(self._record_batch_api)
        return app

    @web.middleware
    async def _record_batch_api(self, request: web.Request, handler):
        if request.path.startswith(("/v1/files", "/v1/batches")):
            self.batch_api.append({"path": request.path, "headers": dict(request.headers)})
        return await handler(request)

    async def _start(self, port: int) -> None:
        self._stopping = asyncio.Event()
        self._released = asyncio.Event()
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def start(self, port: int = 0) -> StubServer:
        _encoding()  # loaded now: loading it on the first request held every other request back (~1 s)
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

    def _fault_for(self, raw: str, rules: list[dict] | None = None) -> dict | None:
        with self._lock:
            for rule in self.faults if rules is None else rules:
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
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        raw = await request.text()
        body = json.loads(raw)
        self._count(request, body)
        # counted before the wait, and the wait ends `latency` after arrival: the reply comes in
        # `latency` however many requests arrive at once (as a server with spare capacity would
        # answer), not `latency` plus this server's own queue of token counts
        prompt_tokens = count_prompt_tokens(body.get("messages", []))
        if self.latency:
            await asyncio.sleep(max(0.0, arrived + self.latency - loop.time()))
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

    def _count(self, request: web.Request, body: dict) -> None:
        with self._lock:
            self.count += 1
            if self.record:
                self.requests.append({"body": body, "headers": dict(request.headers), "time": time.time()})

    async def messages(self, request: web.Request) -> web.Response:
        """Anthropic's Messages API, as a candidate: recorded like a chat request, answered in kind."""
        body = await request.json()
        self._count(request, body)
        text = f"Resposta do candidato {body.get('model', '')}."
        return web.json_response(
            {
                "id": f"msg_{self.count}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": max(1, len(text) // 4)},
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
            if self.policy == "overlap":
                data = fill_by_overlap(schema, reference_share(body["messages"][-1]["content"]))
            else:
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

    # --- Batch API ------------------------------------------------------------------------------

    def _new_file(self, data: bytes, name: str, purpose: str) -> dict:
        fid = f"file-{len(self.files) + 1}"
        self.files[fid] = data
        return {
            "id": fid,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": purpose,
            "status": "processed",
        }

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        field = form["file"]
        data = field.file.read() if hasattr(field, "file") else str(field).encode()
        return web.json_response(self._new_file(data, getattr(field, "filename", "upload"), form["purpose"]))

    async def list_files(self, request: web.Request) -> web.Response:
        limit = int(request.query.get("limit", 10000))
        files = [{"id": fid, "object": "file", "bytes": len(data)} for fid, data in self.files.items()]
        return web.json_response({"object": "list", "data": files[:limit], "has_more": len(files) > limit})

    async def file_content(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["id"])
        if data is None:
            raise web.HTTPNotFound()
        return web.Response(body=data, content_type="application/octet-stream")

    async def create_batch(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("input_file_id") not in self.files:
            return web.json_response(
                {"error": {"message": "no such file", "type": "invalid_request"}}, status=400
            )
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].decode().splitlines() if x.strip()]
        self.batch_creations += 1
        bid = f"batch_{self.batch_creations}"
        batch = {
            "id": bid,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window", "24h"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.batches[bid] = batch
        task = asyncio.ensure_future(self._process(batch, lines, f"http://127.0.0.1:{self.port}"))
        self._batch_tasks.add(task)
        task.add_done_callback(self._batch_tasks.discard)
        return web.json_response(batch)

    async def list_batches(self, request: web.Request) -> web.Response:
        """Newest first, in pages (`limit`, `after`), as OpenAI lists them."""
        newest = list(reversed(self.batches.values()))
        after = request.query.get("after")
        if after:
            ids = [b["id"] for b in newest]
            newest = newest[ids.index(after) + 1 :] if after in ids else []
        limit = min(int(request.query.get("limit", 20)), self.batch_page)
        page = newest[:limit]
        return web.json_response(
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(newest) > limit,
            }
        )

    async def retrieve_batch(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        self.batch_retrievals += 1
        if batch is None:
            raise web.HTTPNotFound()
        return web.json_response(batch)

    def release_batches(self) -> None:
        self.batch_hold = False
        self._loop.call_soon_threadsafe(self._released.set)

    async def _process(self, batch: dict, lines: list[dict], base: str) -> None:
        import aiohttp

        batch["status"] = "in_progress"
        if self.batch_hold:
            await self._released.wait()
        out, errors, expired = [], [], []
        counts = batch["request_counts"]
        async with aiohttp.ClientSession() as session:
            for n, line in enumerate(lines):
                rule = self._fault_for(json.dumps(line, ensure_ascii=False), self.batch_faults)
                if rule and rule["kind"] == "expired":
                    expired.append(line["custom_id"])
                    continue
                entry: dict[str, Any] = {"id": f"{batch['id']}_req_{n}", "custom_id": line["custom_id"]}
                if rule and rule["kind"] == "failed":
                    errors.append(
                        entry | {"response": None, "error": {"code": "server_error", "message": "injected"}}
                    )
                    counts["failed"] += 1
                    continue
                headers = {"X-Stub-Batch": batch["id"]}
                async with session.post(base + line["url"], json=line["body"], headers=headers) as resp:
                    reply = await resp.json()
                    entry |= {"response": {"status_code": resp.status, "body": reply}, "error": None}
                (out if resp.status == 200 else errors).append(entry)
                counts["completed" if resp.status == 200 else "failed"] += 1
        for custom_id in expired:
            error = {"code": "batch_expired", "message": "not completed within the window"}
            errors.append({"id": None, "custom_id": custom_id, "response": None, "error": error})
        for kind, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
                batch[kind] = self._new_file(data, f"{batch['id']}_{kind}.jsonl", "batch_output")["id"]
        batch["status"] = "expired" if expired else "completed"


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
