"""A TCP forwarder between Splice and a server (moto's S3, a broker) that a
test can cut and restore: an outage of the network path, the server itself
left running.

Cut, it closes every connection it carries and its listening socket, so a
client's next connection is refused, as a store behind a failed link or a
restarting load balancer refuses it; restored, it listens on the same port
again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


class Forwarder:
    """Forwards 127.0.0.1:``port`` to ``target`` (host, port) until cut.
    ``received`` holds every byte its clients sent, in arrival order (what a
    client really put on the wire: a request's headers, say)."""

    def __init__(self, target: tuple[str, int], port: int = 0) -> None:
        self.target = target
        self.received = bytearray()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = port
        self.restore()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def restore(self) -> None:
        """Listen again (on the same port once it has one)."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True,
                         name="forwarder-accept").start()

    def cut(self) -> None:
        """Refuse new connections and drop the ones open."""
        with self._lock:
            listener, self._listener = self._listener, None
            open_now, self._open = self._open, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for sock in open_now:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    close = cut

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # cut
                return
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    server.close()
                    return
                self._open |= {client, server}
            for a, b, kept in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, kept), daemon=True,
                                 name="forwarder-pipe").start()

    def _pipe(self, source: socket.socket, sink: socket.socket, kept: bool = False) -> None:
        try:
            while data := source.recv(65536):
                if kept:
                    with self._lock:
                        self.received += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open -= {source, sink}


@contextlib.contextmanager
def forwarding(target: tuple[str, int]) -> Iterator[Forwarder]:
    forwarder = Forwarder(target)
    try:
        yield forwarder
    finally:
        forwarder.cut()
