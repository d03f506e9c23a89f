"""A real HTTP receiver on 127.0.0.1 that records what it was sent (tests only)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int
    status: int = 200
    received: list[Received] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/moderation"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        with self.arrived:
            ok = self.arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout)
        assert ok, f"expected {count} webhook(s), got {len(self.received)}"
        return list(self.received)


def start_receiver(port: int) -> tuple[Receiver, ThreadingHTTPServer]:
    receiver = Receiver(port=port)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.arrived:
                receiver.received.append(Received(dict(self.headers.items()), body))
                receiver.arrived.notify_all()
            self.send_response(receiver.status)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
