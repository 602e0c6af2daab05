"""The viewer's door: every request passes these checks before any page is built.

0. **Owner only.** On a loopback address, a connection from a process of another local user is refused (403)
   before anything else, whatever it holds (``mempal.ui.peer``: the kernel's socket table; Linux). A key or a
   one-time link that leaked (a screen, a history file, ``ps``) is no use to another account on the machine.
1. **Host** must be the address the server bound, with its port (``127.0.0.1:PORT``): a page on a rebinding
   DNS name (``evil.example`` resolving to 127.0.0.1) sends its own name and is refused. When the user binds a
   wildcard address explicitly, any IP literal with the port is accepted (rebinding needs a name).
2. **Key in the path.** Every page lives under ``/<key>/`` (the URL ``mempal ui`` printed); anything else is
   401 with nothing of the palace. The key is never put in a cookie: cookies ignore ports and ``SameSite``
   counts every ``127.0.0.1:*`` origin as the same site, so a cookie would be sent to every other server on the
   loopback address (another user's, a dev server running untrusted code). A path is sent only where a link
   points, and the pages link only inside the viewer; the referrer policy keeps it out of ``Referer`` on any
   other origin. Compared in constant time.
3. **One-time links.** ``/open/<nonce>`` (what ``mempal ui --open`` hands the browser, so the key never sits
   in the browser's command line, which every local user can read in ``ps``) is accepted once, within
   ``OneTimeLinks.TTL_S`` seconds of its making, and answers with a redirect to ``/<key>/``.
4. **Methods.** GET and HEAD read, POST changes; anything else (OPTIONS preflights included) is 405. A POST must
   be a small ``application/x-www-form-urlencoded`` form holding the page's CSRF token, must not come from
   another site (``Origin`` / ``Sec-Fetch-Site``), and is then replayed to the page unchanged.
5. **Headers** on every answer: a Content-Security-Policy that allows no script, no frames and no off-site
   anything; ``nosniff``, a same-origin referrer policy, ``no-store``; and never an ``Access-Control-*`` header
   (no CORS). The pages' own links and redirects (``/search``...) are written under the key
   (``mempal.ui.html.BASE``).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mempal.ui import peer
from mempal.ui.html import BASE

MAX_FORM = 64 * 1024  # bytes of a POSTed form
CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with its own forms' POSTs,
    # which cannot be told from a sandboxed attacker page; nothing leaves for another site either way.
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
READ_METHODS = ("GET", "HEAD")
OPEN = "/open/"  # one-time links


class OneTimeLinks:
    """Nonces for ``/open/<nonce>``: each accepted once, within ``TTL_S`` seconds of its making."""

    TTL_S = 30.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._open: dict[str, float] = {}  # nonce -> when it expires
        self._lock = threading.Lock()

    def issue(self) -> str:
        nonce = secrets.token_urlsafe(32)
        with self._lock:
            now = self._clock()
            self._open = {n: t for n, t in self._open.items() if t > now}
            self._open[nonce] = now + self.TTL_S
        return nonce

    def redeem(self, given: str) -> bool:
        """Is ``given`` a live nonce? It is spent either way."""
        with self._lock:
            match = next((n for n in list(self._open) if Keys.same(given, n)), None)
            expires = self._open.pop(match) if match is not None else None
            return expires is not None and self._clock() <= expires


@dataclass(frozen=True)
class Keys:
    """The secrets of one running viewer."""

    token: str  # the key: the first segment of every page's path
    csrf: str  # in every form the pages render
    links: OneTimeLinks = field(default_factory=OneTimeLinks, compare=False)

    @staticmethod
    def same(given: str | None, expected: str) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def host_literal(host: str) -> str:
    """How a browser writes ``host`` in a Host header: IPv6 in brackets."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


class Guard:
    """ASGI middleware: the checks of the module docstring, in that order."""

    def __init__(self, app: ASGIApp, *, keys: Keys, host: str, port: int,
                 uid_of: Callable[[tuple[str, int], tuple[str, int]], int | None] | None = None) -> None:
        self.app = app
        self.keys = keys
        self.port = port
        self.base = "/" + keys.token
        self.wildcard = is_wildcard(host)
        self.uid_of = uid_of or (peer.peer_uid if peer.TABLES_PRESENT and _loopback(host) else None)
        names = {host_literal(host).lower(), host.lower()}
        self.allowed = {f"{n}:{port}" for n in names} | (names if port == 80 else set())

    def host_ok(self, value: str | None) -> bool:
        if not value:
            return False
        value = value.lower()
        if value in self.allowed:
            return True
        if not self.wildcard:
            return False
        name, sep, port = value.rpartition(":")
        if not sep or port != str(self.port):
            return False
        try:
            ipaddress.ip_address(name.strip("[]"))
        except ValueError:
            return False
        return True

    def owner_ok(self, scope: Scope) -> bool:
        if self.uid_of is None:
            return True
        client, server = scope.get("client"), scope.get("server")
        if not client or not server:
            return False
        return self.uid_of((str(client[0]), int(client[1])), (str(server[0]), int(server[1]))) == os.getuid()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no websockets, no lifespan
            return
        send = _with_headers(send)
        if not self.owner_ok(scope):
            await _refuse(403, "This viewer serves only the user who started it.")(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self.host_ok(headers.get("host")):
            await _refuse(421, "This viewer answers only at the address it printed.")(scope, receive, send)
            return
        method = scope["method"]
        if method not in (*READ_METHODS, "POST"):
            await _refuse(405, "Only GET and POST.", allow="GET, HEAD, POST")(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/favicon.ico":  # asked for at the root by every browser; holds nothing
            await Response(status_code=204)(scope, receive, send)
            return
        if path.startswith(OPEN):
            await self._open(method, path[len(OPEN):])(scope, receive, send)
            return
        if not Keys.same(path[1:].partition("/")[0], self.keys.token):
            await _refuse(401, "This viewer answers only under its key: open the URL that `mempal ui` printed.")(
                scope, receive, send)
            return
        if path == self.base:
            await RedirectResponse(self.base + "/", status_code=303)(scope, receive, send)
            return
        if method == "POST":
            body, problem = await self._checked_form(headers, receive)
            if problem:
                await _refuse(403, problem)(scope, receive, send)
                return
            receive = _replay(body, receive)
        mark = BASE.set(self.base)
        try:
            await self.app({**scope, "root_path": scope.get("root_path", "") + self.base}, receive,
                           _located(send, self.base))
        finally:
            BASE.reset(mark)

    def _open(self, method: str, nonce: str) -> Response:
        if method != "GET" or not self.keys.links.redeem(nonce):
            return _refuse(401, f"This one-time link was used already or is more than {OneTimeLinks.TTL_S:.0f} s "
                                "old: open the URL that `mempal ui` printed.")
        return RedirectResponse(self.base + "/", status_code=303)

    async def _checked_form(self, headers: Headers, receive: Receive) -> tuple[bytes, str]:
        origin = headers.get("origin")
        if origin is not None and not (origin.startswith("http://") and self.host_ok(origin[len("http://"):])):
            return b"", "A form from another site was refused."
        if headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
            return b"", "A request from another site was refused."
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            return b"", "Changes are made with this viewer's own forms only."
        body = b""
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return b"", "The request ended early."
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > MAX_FORM:
                return b"", "That form is too large."
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        if not Keys.same(next(iter(form.get("csrf", [])), None), self.keys.csrf):
            return b"", "This form is stale or forged (no valid CSRF token): reload the page and try again."
        return body, ""


def _refuse(status: int, message: str, **headers: str) -> Response:
    page = ("<!doctype html><meta charset=utf-8><title>mempal viewer</title>"
            f"<p>{message.replace('<', '&lt;')}</p>")
    return HTMLResponse(page, status_code=status, headers=headers or None)


def _replay(body: bytes, rest: Receive) -> Receive:
    """The body already read, then whatever the connection says next (a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await rest()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _located(send: Send, base: str) -> Send:
    """A page's redirect to one of the viewer's paths (``/drawer/x``), under the key."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            raw = [(k, base.encode() + bytes(v) if bytes(k).lower() == b"location" and bytes(v).startswith(b"/")
                    and not bytes(v).startswith(b"//") else v) for k, v in message.get("headers", [])]
            message = {**message, "headers": raw}
        await send(message)

    return wrapped


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            raw: list[Any] = [(k, v) for k, v in message.get("headers", [])
                              if not bytes(k).lower().startswith(b"access-control-")]
            have = {bytes(k).lower() for k, _ in raw}
            raw += [h for h in HEADERS if h[0] not in have]
            message = {**message, "headers": raw}
        await send(message)

    return wrapped
