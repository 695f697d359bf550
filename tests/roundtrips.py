"""A loopback TCP relay in front of the test PostgreSQL server that counts round trips.

It reads the client's side of PostgreSQL's wire protocol and counts the messages
after which a client waits for the server: ``Sync`` (the end of a statement, or of a
pipeline), ``Flush`` (a pipelined client asking for the results sent so far, which
it then reads) and ``Query`` (a simple-protocol statement). However many statements a
pipeline puts on the wire before it waits, that is one round trip; each statement
sent and waited for alone is one. So a test can assert how many times the store
waited for the server without looking inside the driver, and without timing anything.

It also counts statements: each ``Execute`` (a statement of the extended protocol,
pipelined or not) and each ``Query`` (psycopg sends one statement per simple query).
Each costs CPU in the driver and in the server whether or not the client waited for
it, so a test can pin how many statements a write takes as well as how many waits.
"""

from __future__ import annotations

import selectors
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


class RoundTrips:
    """Relays every connection to ``target`` and counts round trips across all of them."""

    def __init__(self, target_url: str) -> None:
        parts = urlsplit(target_url)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{port}"
        self.url = urlunsplit(
            parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host)
        )
        self._lock = threading.Lock()
        self._count = 0
        self._statements = 0
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    @property
    def statements(self) -> int:
        with self._lock:
            return self._statements

    def _serve(self) -> None:
        self._listener.settimeout(0.2)
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.create_connection(self._target)
            self._socks += [client, server]
            t = threading.Thread(target=self._relay, args=(client, server), daemon=True)
            self._threads.append(t)
            t.start()

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ)
        sel.register(server, selectors.EVENT_READ)
        reader = _Frontend()
        try:
            while not self._closed.is_set():
                for key, _ in sel.select(0.2):
                    src: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = src.recv(65536)
                    if not data:
                        return
                    if src is client:
                        waits, statements = reader.feed(data)
                        if waits or statements:
                            with self._lock:
                                self._count += waits
                                self._statements += statements
                        server.sendall(data)
                    else:
                        client.sendall(data)
        except OSError:
            return
        finally:
            sel.close()
            client.close()
            server.close()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        for t in self._threads:
            t.join(2)
        self._accept.join(2)


_UNTYPED = {80877103, 80877104}  # SSLRequest, GSSENCRequest: answered by one byte
_MARKERS = frozenset(b"SH")  # Sync, Flush: the client waits for what it sent before
_QUERY = ord("Q")  # a simple-protocol statement: sent and waited for alone
_EXECUTE = ord("E")  # an extended-protocol statement run


class _Frontend:
    """Splits the client's byte stream into messages and counts those it waits after.

    A marker after another with no statement between them (the Flush psycopg sends
    after a pipeline's Sync) is the same wait: counted by what the client sent, never
    by when the server's answer happened to arrive between them (that raced under
    load: a Sync answered before the relay read its Flush counted twice)."""

    def __init__(self) -> None:
        self._buf = b""
        self._started = False
        self._sent = False
        """Statements sent since the last wait counted."""

    def feed(self, data: bytes) -> tuple[int, int]:
        """The waits and the statements in what the client sent (whole messages)."""
        self._buf += data
        waits = statements = 0
        while True:
            if not self._started:
                if len(self._buf) < 8:
                    return waits, statements
                size = int.from_bytes(self._buf[:4], "big")
                code = int.from_bytes(self._buf[4:8], "big")
                if len(self._buf) < size:
                    return waits, statements
                self._buf = self._buf[size:]
                self._started = code not in _UNTYPED
                continue
            if len(self._buf) < 5:
                return waits, statements
            size = int.from_bytes(self._buf[1:5], "big")
            if len(self._buf) < 1 + size:
                return waits, statements
            kind = self._buf[0]
            if kind == _QUERY:
                waits += 1
                statements += 1
                self._sent = False
            elif kind in _MARKERS:
                waits += int(self._sent)
                self._sent = False
            else:
                statements += kind == _EXECUTE
                self._sent = True
            self._buf = self._buf[1 + size :]
