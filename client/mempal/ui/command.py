"""``mempal ui [--open] [--host H] [--port P]``: serve the web viewer until Ctrl-C.

The server binds 127.0.0.1 unless another address is named explicitly, and then says plainly who can reach it.
A fresh random key is printed at every start as the first segment of the URL's path (no cookie: see
``mempal.ui.guard``), with a second secret for the forms' CSRF fields. ``--open`` hands the browser a one-time
link instead (its command line is visible to every local user in ``ps``). Starlette and uvicorn are imported
here, when the command runs, never by the rest of the client.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import socket
import sys
from typing import Any

LOOPBACK = "127.0.0.1"


def register(sub: Any) -> None:
    p = sub.add_parser("ui", help="browse the palace in a local web viewer (127.0.0.1, key-protected)")
    p.add_argument("--open", action="store_true",
                   help="also open it in the default browser (through a one-time link: the key stays out of ps)")
    p.add_argument("--host", default=LOOPBACK,
                   help="address to bind (default 127.0.0.1; anything else is reachable by others: a warning says so)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    p.set_defaults(func=cmd_ui)


def _bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    family, kind, proto, _, addr = infos[0]
    # proto must say TCP: asyncio turns Nagle off (TCP_NODELAY) only on sockets that do, and with Nagle on every
    # answer on a kept-open connection (as browsers keep them) waited ~40 ms for a delayed ACK.
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def exposed(address: str) -> bool:
    """Does binding ``address`` let other machines (or other users' containers) in?"""
    try:
        return not ipaddress.ip_address(address).is_loopback
    except ValueError:
        return True


def cmd_ui(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print(f"mempal: --port must be 0..65535, not {args.port}", file=sys.stderr)
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"mempal: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    address, port = sock.getsockname()[:2]
    if exposed(address):
        print(f"mempal: warning: the viewer listens on {address}:{port}, which other machines on your network "
              "can reach; the key in the URL is all that stands between them and your memories. Use the default "
              "(127.0.0.1) unless you mean it.", file=sys.stderr)
    return serve(sock, host=address, port=port, shown=LOOPBACK if _wildcard(address) else address,
                 open_browser=args.open)


def _wildcard(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False


def serve(sock: socket.socket, *, host: str, port: int, shown: str, open_browser: bool) -> int:
    import uvicorn

    from mempal.connection import DaemonUnavailable
    from mempal.ui.app import build
    from mempal.ui.daemon import DaemonLink
    from mempal.ui.guard import OPEN, Keys, host_literal

    keys = Keys(token=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32))
    link = DaemonLink()
    app = build(keys, host=host, port=port, cwd=os.getcwd(), daemon=link)
    origin = f"http://{host_literal(shown)}:{port}"
    url = f"{origin}/{keys.token}/"
    try:
        from mempal.connection import call

        call("ping", timeout=3)
    except DaemonUnavailable as exc:
        print(f"mempal: {exc} (the viewer starts anyway; its pages work once the daemon answers)", file=sys.stderr)
    print(f"mempal viewer: {url}\n(Ctrl-C stops it; the key in the address is new at every start: keep it to "
          "yourself)", flush=True)
    if open_browser:
        import webbrowser

        # the browser's command line is world-readable: it gets a link that works once, within seconds
        webbrowser.open(f"{origin}{OPEN}{keys.links.issue()}")
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, proxy_headers=False,
                            lifespan="off", ws="none", http="h11", timeout_graceful_shutdown=2)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it caught once it has shut down
        pass
    finally:
        sock.close()
        link.close()
    print("mempal viewer stopped", file=sys.stderr)
    return 0
