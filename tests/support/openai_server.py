"""A small OpenAI-compatible HTTP server for tests: scripted answers, recorded requests.

    server = FakeOpenAIServer().start()          # or the `openai_server` fixture
    server.chat_json({"summary": "…", "facts": []})   # next /v1/chat/completions answer
    server.error(500)                            # then a 500 (any endpoint)
    server.chat_tool_calls([("remember", {"subject": "x"})])
    server.chat_message({"role": "assistant", "content": [{"type": "text", "text": "…"}]})
    server.embeddings([[0.1, …]])                # next /v1/embeddings answer
    settings.LLM_BASE_URL = server.base_url      # "http://127.0.0.1:<port>/v1"
    server.requests                              # what the client sent, in order
                                                 # (header names lowercased)
    server.stop()

A `responder` (a callable from the request body to an assistant message) answers the chat
calls nothing was scripted for, like a model (tests/support/model.py). Each endpoint has its
own queue of scripted responses; `error`, `raw` and `delay`
take `endpoint="chat"` (default) or `"embeddings"`. An empty queue answers with the
endpoint's default (a valid JSON reply / unit vectors) unless `strict` is set, in
which case it answers 500 so that an unexpected call fails the test.
"""

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDPOINTS = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings"}


@dataclass
class Scripted:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class RecordedRequest:
    endpoint: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


def _completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeOpenAIServer:
    """Serves /v1/chat/completions and /v1/embeddings on 127.0.0.1 at a free port."""

    def __init__(self, *, dimensions: int = 1024, strict: bool = False):
        self.dimensions = dimensions
        self.strict = strict
        self.requests: list[RecordedRequest] = []
        # Answers a chat call that nothing was scripted for: body -> assistant message
        # (tests/support/model.py's PromptFollowingModel).
        self.responder: Callable[[Any], dict[str, Any]] | None = None
        self._queues: dict[str, list[Scripted]] = {"chat": [], "embeddings": []}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                server._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # --- scripting ---------------------------------------------------------------------------

    def push(self, endpoint: str, scripted: Scripted) -> "FakeOpenAIServer":
        with self._lock:
            self._queues[endpoint].append(scripted)
        return self

    def chat_text(self, content: str, *, delay: float = 0.0,
                  finish_reason: str = "stop") -> "FakeOpenAIServer":
        body = _completion({"role": "assistant", "content": content}, finish_reason)
        return self.push("chat", Scripted(body=json.dumps(body).encode(), delay=delay))

    def chat_json(self, data: Any, *, delay: float = 0.0) -> "FakeOpenAIServer":
        return self.chat_text(json.dumps(data), delay=delay)

    def chat_message(self, message: dict[str, Any], *,
                     finish_reason: str = "stop") -> "FakeOpenAIServer":
        """The next chat answer is `message` as given: any shape a server might send."""
        body = _completion(message, finish_reason)
        return self.push("chat", Scripted(body=json.dumps(body).encode()))

    def chat_tool_calls(self, calls: list[tuple[str, dict[str, Any]]],
                        content: str | None = None, *, delay: float = 0.0) -> "FakeOpenAIServer":
        message = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for i, (name, arguments) in enumerate(calls)
            ],
        }
        body = _completion(message, "tool_calls")
        return self.push("chat", Scripted(body=json.dumps(body).encode(), delay=delay))

    def embeddings(self, vectors: list[list[float]], *, delay: float = 0.0) -> "FakeOpenAIServer":
        body = {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v}
                     for i, v in enumerate(vectors)],
            "model": "test-embedding",
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        return self.push("embeddings", Scripted(body=json.dumps(body).encode(), delay=delay))

    def error(self, status: int, message: str = "scripted error", *, endpoint: str = "chat",
              headers: dict[str, str] | None = None) -> "FakeOpenAIServer":
        body = {"error": {"message": message, "type": "server_error", "code": status}}
        return self.push(endpoint, Scripted(status=status, body=json.dumps(body).encode(),
                                            headers=headers or {}))

    def raw(self, body: bytes | str, *, status: int = 200, endpoint: str = "chat",
            delay: float = 0.0) -> "FakeOpenAIServer":
        data = body.encode() if isinstance(body, str) else body
        return self.push(endpoint, Scripted(status=status, body=data, delay=delay))

    def delay(self, seconds: float, *, endpoint: str = "chat") -> "FakeOpenAIServer":
        """Answer the next request after `seconds` (with the endpoint's default reply)."""
        return self.push(endpoint, Scripted(body=self._default(endpoint, None), delay=seconds))

    def calls(self, endpoint: str = "chat") -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.endpoint == endpoint]

    def pending(self, endpoint: str = "chat") -> int:
        with self._lock:
            return len(self._queues[endpoint])

    # --- serving -----------------------------------------------------------------------------

    def _default(self, endpoint: str, body: Any) -> bytes:
        if endpoint == "embeddings":
            inputs = body.get("input", [""]) if isinstance(body, dict) else [""]
            inputs = inputs if isinstance(inputs, list) else [inputs]
            vector = [1.0] + [0.0] * (self.dimensions - 1)
            data = [{"object": "embedding", "index": i, "embedding": vector}
                    for i in range(len(inputs))]
            return json.dumps({"object": "list", "data": data, "model": "test-embedding",
                               "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        reply = json.dumps({"summary": "A default summary from the fake server.", "facts": []})
        return json.dumps(_completion({"role": "assistant", "content": reply})).encode()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        path = handler.path.split("?")[0]
        endpoint = ENDPOINTS.get(path)
        with self._lock:
            if endpoint is not None:
                self.requests.append(RecordedRequest(
                    endpoint=endpoint, path=path,
                    headers={k.lower(): v for k, v in handler.headers.items()}, body=body
                ))
                queue = self._queues[endpoint]
                scripted = queue.pop(0) if queue else None
        if endpoint is None:
            scripted = Scripted(status=404, body=b'{"error": {"message": "no such endpoint"}}')
        elif scripted is None and endpoint == "chat" and self.responder is not None:
            message = self.responder(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            scripted = Scripted(body=json.dumps(_completion(message, finish)).encode())
        elif scripted is None:
            scripted = (
                Scripted(status=500, body=b'{"error": {"message": "no scripted response"}}')
                if self.strict else Scripted(body=self._default(endpoint, body))
            )
        if scripted.delay:
            time.sleep(scripted.delay)
        try:
            handler.send_response(scripted.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(scripted.body)))
            for name, value in scripted.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(scripted.body)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout); that is what a delay test wants.
            return
