"""Logs every connection (and name lookup) to a host other than 127.x on stderr: what a
library reaches out to on its own. Put this folder on PYTHONPATH."""

import socket
import sys

_connect = socket.socket.connect
_getaddrinfo = socket.getaddrinfo


def _logged_connect(self, address):  # type: ignore[no-untyped-def]
    if not (isinstance(address, tuple) and str(address[0]).startswith("127.")):
        print(f"NET connect {address}", file=sys.stderr, flush=True)
    return _connect(self, address)


def _logged_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if host not in ("127.0.0.1", "localhost", None):
        print(f"NET resolve {host}", file=sys.stderr, flush=True)
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _logged_connect  # type: ignore[method-assign]
socket.getaddrinfo = _logged_getaddrinfo
