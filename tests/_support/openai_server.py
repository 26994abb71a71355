"""A scriptable OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Tests drive the real litellm client and HTTP path against it. Script replies with
`Reply` objects (or a function of the request body); every request body is recorded.

    with OpenAIServer() as server:
        server.script(Reply.text("hi"), Reply.error(500), Reply.tools(("call_1", "f", {"x": 1})))
        ... litellm.completion(model="openai/test", api_base=server.base_url, api_key="k", ...)
        assert server.request_count == 3
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; bytes/str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @staticmethod
    def completion(content: str | None, tool_calls: list[dict] | None = None, *,
                   prompt_tokens: int = 10, completion_tokens: int = 5, cached_tokens: int = 0,
                   model: str = "test-model") -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": usage,
        }

    @classmethod
    def text(cls, content: str, **usage: Any) -> "Reply":
        return cls(body=cls.completion(content, **usage))

    @classmethod
    def tools(cls, *calls: tuple[str, str, Any], content: str | None = None, **usage: Any) -> "Reply":
        tool_calls = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ]
        return cls(body=cls.completion(content, tool_calls, **usage))

    @classmethod
    def error(cls, status: int, message: str = "error", headers: dict[str, str] | None = None) -> "Reply":
        return cls(status=status, body={"error": {"message": message, "type": "server_error", "code": status}},
                   headers=headers or {})

    @classmethod
    def malformed(cls) -> "Reply":
        return cls(body=b"{this is not json")


class OpenAIServer:
    """Serves scripted replies; unscripted requests get ``Reply.text("echo: <last user text>")``."""

    def __init__(self) -> None:
        self._queue: deque[Reply | Callable[[dict], Reply]] = deque()
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    item = server._queue.popleft() if server._queue else None
                reply = item(body) if callable(item) else item
                if reply is None:
                    reply = Reply.text("echo: " + _last_user_text(body))
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                data = payload if isinstance(payload, bytes) else (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # a short poll interval so stop() returns in ~50 ms instead of 500 ms
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def script(self, *replies: Reply | Callable[[dict], Reply]) -> None:
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> "OpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _last_user_text(body: dict) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""
