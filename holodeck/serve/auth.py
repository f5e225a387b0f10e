"""Who may ask ``serve --http``: the bearer token of ``HOLODECK_SERVE_TOKEN``, and the rule
for an address other machines can reach.

The MCP SDK checks Host and Origin (DNS-rebinding protection) on loopback only, and its own
bearer-token hook comes with an OAuth authorization server's metadata that a static token
does not have; so a small ASGI middleware checks the token on every request before the SDK
sees it (the SDK's Host/Origin checks still run after it).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from holodeck.envvars import SERVE_TOKEN
from holodeck.errors import ConfigError

log = logging.getLogger("holodeck.serve")

#: What a client must send, for the 401 that says so (never the token).
_ASKED = f"'Authorization: Bearer <token>' with the token of {SERVE_TOKEN.name}"


def is_loopback(address: str) -> bool:
    """Whether only this machine can reach ``address`` (the IP the server is bound to)."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def exposure(
    url: str,
    where: str,
    *,
    loopback: bool,
    token: str | None,
    no_auth: bool,
    names: str,
    flag: str = "--http",
) -> str | None:
    """The warning for a server other machines can reach (``None`` on loopback).

    Without a token and without ``--no-auth`` it is refused (``ConfigError``): an open port
    would let anyone on the network search the documents, and someone binding ``0.0.0.0``
    may not know it; ``--no-auth`` says a proxy or firewall in front guards it.
    """
    if loopback:
        return None
    if token:
        return (
            f"{url} can be reached from other machines: every request needs the token in "
            f"{SERVE_TOKEN.name}, but plain HTTP carries it and the results unencrypted; "
            "put a TLS proxy in front unless the network is trusted"
        )
    if no_auth:
        return (
            f"{url} can be reached from other machines with no authentication (--no-auth): "
            f"anyone who reaches the port can search {names}; keep it behind a proxy or "
            f"firewall that guards it, or set {SERVE_TOKEN.name}"
        )
    raise ConfigError(
        f"{flag} {where} can be reached from other machines and has no authentication: set "
        f"{SERVE_TOKEN.name} to a secret token (clients then send 'Authorization: Bearer "
        "<token>'), or pass --no-auth if a proxy or firewall in front guards the port"
    )


class BearerAuth:
    """ASGI middleware: a request without ``Authorization: Bearer <token>`` gets a 401.

    Every request, whatever its path; the comparison takes the same time however much of
    the token a guess gets right (digests compared with ``hmac.compare_digest``).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._digest = hashlib.sha256(token.encode()).digest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            return
        given = _bearer(scope)
        if given is not None and hmac.compare_digest(hashlib.sha256(given).digest(), self._digest):
            await self._app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        # not "bearer token": the redaction would take the word after "bearer" for a token
        reason = "no token" if given is None else "a wrong token"
        log.debug("Refused an HTTP request from %s: %s", client[0], reason)
        if scope["type"] != "http":  # a websocket: closed before it is accepted
            await send({"type": "websocket.close", "code": 1008})
            return
        await _unauthorized(send, wrong=given is not None)


def _bearer(scope: Scope) -> bytes | None:
    """The credentials of the first ``Authorization`` header if its scheme is Bearer."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, credentials = value.strip().partition(b" ")
            return credentials.strip() if scheme.lower() == b"bearer" else None
    return None


async def _unauthorized(send: Send, *, wrong: bool) -> None:
    """A 401 as RFC 6750 has it: ``error="invalid_token"`` only when a token was sent."""
    challenge = 'Bearer realm="holodeck"' + (', error="invalid_token"' if wrong else "")
    body = json.dumps(
        {
            "error": "invalid_token" if wrong else "unauthorized",
            "error_description": f"{'wrong' if wrong else 'no'} token: send {_ASKED}",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
