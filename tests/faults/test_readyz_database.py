"""/readyz while PostgreSQL (or the cache's Redis) goes away, for real.

The app reaches the test database through a small TCP proxy started by the test. Stopping the
proxy closes the listening socket and every open connection, which is what the app sees when
the database server dies (the open connection breaks, new ones are refused), without stopping
the PostgreSQL server that other test sessions on this machine share."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

pytestmark = pytest.mark.integration


class TcpProxy:
    """Forwards 127.0.0.1:`port` to `upstream` until stop(); start() again on the same port."""

    def __init__(self, upstream: tuple[str, int], port: int = 0) -> None:
        self.upstream = upstream
        self.port = port
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None

    def start(self) -> TcpProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            server = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        if self._listener is not None:
            # shutdown() first: close() alone does not wake the thread blocked in accept(),
            # which would take one more connection.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._sockets.clear()


@pytest.fixture
def database_behind_proxy(transactional_db: None, django_db_blocker: Any) -> Iterator[TcpProxy]:
    """This process's connection to the test database, through a TcpProxy (no test transaction
    around it: the connection is closed and reopened through the proxy)."""
    with django_db_blocker.unblock():
        saved = dict(connection.settings_dict)
        proxy = TcpProxy((saved["HOST"] or "127.0.0.1", int(saved["PORT"] or 5432))).start()
        connection.close()
        connection.settings_dict.update({"HOST": "127.0.0.1", "PORT": str(proxy.port)})
        try:
            yield proxy
        finally:
            connection.close()
            proxy.stop()
            connection.settings_dict.clear()
            connection.settings_dict.update(saved)


def test_readyz_names_the_database_while_postgres_is_down(client, database_behind_proxy, triton_settings):
    proxy = database_behind_proxy
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.content
    assert connection.connection is not None  # the probe's connection is open, through the proxy

    proxy.stop()
    for _ in range(2):  # the broken open connection first, then a refused new one
        response = client.get("/readyz")
        assert response.status_code == 503, response.content
        body = response.json()
        assert body["error"]["code"] == "not_ready"
        assert body["error"]["fields"] == {"database": ["unavailable"]}
        assert response["Retry-After"].isdigit()
        assert str(proxy.port) not in response.content.decode()

    proxy.start()  # the database is back on the same address
    assert client.get("/readyz").status_code == 200


def test_readyz_names_the_cache_when_its_redis_goes_away(client, db, triton_settings):
    """The same with the cache's Redis: open connections broken, new ones refused."""
    from urllib.parse import urlsplit

    caches = {**triton_settings.CACHES}
    upstream = urlsplit(caches["default"]["LOCATION"])
    proxy = TcpProxy((upstream.hostname or "127.0.0.1", upstream.port or 6379)).start()
    try:
        caches["default"] = {**caches["default"], "LOCATION": f"redis://127.0.0.1:{proxy.port}{upstream.path}"}
        triton_settings.CACHES = caches  # Django resets its cache handlers on this setting change
        assert client.get("/readyz").status_code == 200

        proxy.stop()
        response = client.get("/readyz")
        assert response.status_code == 503, response.content
        assert response.json()["error"]["fields"] == {"cache": ["unavailable"]}
    finally:
        proxy.stop()
