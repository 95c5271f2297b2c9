"""A scriptable local OpenAI-compatible chat-completions server for tests.

Runs ``http.server.ThreadingHTTPServer`` on 127.0.0.1, port 0 (a free port), in a daemon
thread. Each POST to ``.../chat/completions`` takes the next :class:`Reply` from a queue
(``server.script(...)``); when the queue is empty it uses ``default`` (a Reply, or a
callable ``request_json -> Reply | str``). Every request is recorded in
``server.requests`` (method, path, headers, parsed JSON body) for assertions.

Reply kinds: ``Reply.text("ACTION: 1")`` (a valid completion), ``Reply.status(500)``,
``Reply.slow(2.0, "ACTION: 1")`` (answers late), ``Reply.drop()`` (closes the connection
without answering), ``Reply.raw(b"not json")`` (a malformed envelope),
``Reply.trickle(0.2)`` (one byte every 0.2 s, never a complete reply),
``Reply.redirect(url)`` (a 307 to ``url``).

    with ChatServer(default=Reply.text("ACTION: 1")) as server:
        server.script(Reply.status(500), Reply.text("ACTION: 3"))
        ...  # point a client at server.api_base
        assert len(server.requests) == 2

Also runnable for manual checks: ``python tests/chat_server.py --reply "ACTION: 1"``.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Deque, Dict, List, Optional, Union

__all__ = ["Reply", "RecordedRequest", "ChatServer"]


@dataclass
class Reply:
    """One scripted server behaviour."""

    kind: str = "text"  # "text", "status", "drop", "raw", "trickle"
    content: Optional[str] = "ACTION: 1"
    status_code: int = 200
    delay: float = 0.0
    body: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)
    usage: Optional[Dict[str, int]] = None
    max_bytes: int = 0  # "trickle": bytes sent before the connection is closed
    trickle_head: bool = False  # "trickle": the status line and headers are trickled too

    @classmethod
    def text(
        cls, content: Optional[str], delay: float = 0.0, usage: Optional[Dict[str, int]] = None
    ) -> "Reply":
        return cls("text", content=content, delay=delay, usage=usage)

    @classmethod
    def status(
        cls,
        code: int = 500,
        message: str = "internal error",
        headers: Optional[Dict[str, str]] = None,
    ) -> "Reply":
        body = json.dumps(
            {"error": {"message": message, "type": "server_error", "code": code}}
        ).encode()
        return cls("status", content=None, status_code=code, body=body, headers=dict(headers or {}))

    @classmethod
    def slow(cls, delay: float, content: Optional[str] = "ACTION: 1") -> "Reply":
        return cls("text", content=content, delay=delay)

    @classmethod
    def drop(cls, delay: float = 0.0) -> "Reply":
        return cls("drop", content=None, delay=delay)

    @classmethod
    def raw(
        cls, body: bytes, status_code: int = 200, content_type: str = "application/json"
    ) -> "Reply":
        return cls(
            "raw",
            content=None,
            status_code=status_code,
            body=body,
            headers={"Content-Type": content_type},
        )

    @classmethod
    def redirect(cls, location: str, status_code: int = 307) -> "Reply":
        return cls(
            "raw",
            content=None,
            status_code=status_code,
            body=b"",
            headers={"Content-Type": "text/plain", "Location": location},
        )

    @classmethod
    def trickle(
        cls, interval: float = 0.2, max_bytes: int = 50, headers_first: bool = True
    ) -> "Reply":
        """One byte every ``interval`` seconds of a reply that announces more than it ever
        sends: at most ``max_bytes`` bytes, then the connection is closed (so a client
        without a total deadline fails after ``interval * max_bytes`` s, not never).
        ``headers_first``: the status line and headers at once, then the body byte by byte;
        else the status line and headers are trickled too."""
        return cls(
            "trickle",
            content=None,
            delay=interval,
            max_bytes=max_bytes,
            trickle_head=not headers_first,
        )


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: Any  # http.client.HTTPMessage: case-insensitive, as HTTP header names are
    body: bytes
    json: Any

    def texts(self) -> List[str]:
        """All text parts of all messages (strings or content-part lists)."""
        out: List[str] = []
        for message in (self.json or {}).get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(p.get("text", "") for p in content if p.get("type") == "text")
        return out

    def image_urls(self) -> List[str]:
        """The ``image_url.url`` of every image part, in order."""
        out: List[str] = []
        for message in (self.json or {}).get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                out.extend(p["image_url"]["url"] for p in content if p.get("type") == "image_url")
        return out


Responder = Callable[[Any], Union[Reply, str]]


class ChatServer:
    """A chat-completions server in a background thread; use as a context manager."""

    def __init__(self, default: Union[Reply, Responder, None] = None, model: str = "m"):
        self.default = default if default is not None else Reply.text("ACTION: 1")
        self.model = model
        self.requests: List[RecordedRequest] = []
        self._queue: Deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stop_lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self.port: Optional[int] = None

    # ------------------------------------------------------------------ control
    def start(self) -> "ChatServer":
        server = self

        class Handler(_Handler):
            owner = server

        self._stop.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port or 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"chat-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket: later requests get 'connection refused'.

        Idempotent and safe to call from several threads (e.g. from inside a responder)."""
        self._stop.set()
        with self._stop_lock:
            httpd, thread = self._httpd, self._thread
            self._httpd, self._thread = None, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Union[Reply, str]) -> None:
        """Queue replies (a str is shorthand for ``Reply.text(str)``)."""
        with self._lock:
            for r in replies:
                self._queue.append(Reply.text(r) if isinstance(r, str) else r)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def chat_requests(self) -> List[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # ---------------------------------------------------------------- internals
    def _next_reply(self, payload: Any) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        default = self.default
        if callable(default) and not isinstance(default, Reply):
            default = default(payload)
        return Reply.text(default) if isinstance(default, str) else default

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)


class _Handler(BaseHTTPRequestHandler):
    owner: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send_json(self, code: int, obj: Any, headers: Optional[Dict[str, str]] = None) -> None:
        self._send_bytes(code, json.dumps(obj).encode("utf-8"), headers)

    def _send_bytes(self, code: int, body: bytes, headers: Optional[Dict[str, str]] = None) -> None:
        headers = dict(headers or {})
        self.send_response(code)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_GET(self) -> None:
        self.owner._record(RecordedRequest("GET", self.path, self.headers, b"", None))
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(
                200, {"object": "list", "data": [{"id": self.owner.model, "object": "model"}]}
            )
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            payload = json.loads(body.decode("utf-8")) if body else None
        except ValueError:
            payload = None
        self.owner._record(RecordedRequest("POST", self.path, self.headers, body, payload))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if payload is None:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        reply = self.owner._next_reply(payload)
        if reply.kind == "trickle":
            self._trickle(reply)
            return
        if reply.delay > 0 and self.owner._stop.wait(reply.delay):
            return  # server stopping: give up on this request
        try:
            if reply.kind == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.kind in ("status", "raw"):
                self._send_bytes(reply.status_code, reply.body or b"", reply.headers)
                return
            usage = reply.usage or {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
            self._send_json(
                200,
                {
                    "id": f"chatcmpl-{int(time.time() * 1e6)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": payload.get("model", self.owner.model),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": reply.content},
                        }
                    ],
                    "usage": usage,
                },
            )
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up (e.g. timed out) before we answered

    def _trickle(self, reply: Reply) -> None:
        body = json.dumps(
            {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "ACTION: 1 " * 10_000}}
                ]
            }
        ).encode()
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        data = (head + body if reply.trickle_head else body)[: reply.max_bytes]
        self.close_connection = True
        try:
            if not reply.trickle_head:
                self.wfile.write(head)
                self.wfile.flush()
            for i in range(len(data)):
                if self.owner._stop.wait(reply.delay):
                    return
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
        except OSError:
            pass  # the client gave up


def _main() -> None:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description="Local chat-completions server that always answers --reply."
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reply", default="ACTION: 1")
    args = parser.parse_args()
    server = ChatServer(default=Reply.text(args.reply))
    server.port = args.port or None
    server.start()
    print(server.api_base, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    _main()
