"""The viewer's web application: its routes, each behind the guard (``mempal.ui.guard``).

Built on Starlette and served by uvicorn (``mempal.ui.command``): both are already installed as dependencies of
the MCP SDK that ``mempal mcp`` uses, so the viewer adds no dependency, and they give routing, form parsing and
a well-tested HTTP/1.1 parser (h11) that ``http.server`` would have us write and harden by hand. They are
imported only by ``mempal ui``: the CLI, hooks and MCP server never load them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.resources import files
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from mempal.connection import DaemonUnavailable
from mempal.protocol import FORBIDDEN, INVALID_PARAMS, NOT_FOUND, RpcError
from mempal.ui.daemon import DaemonLink
from mempal.ui.frame import Ctx, message, page
from mempal.ui.guard import Guard, Keys
from mempal.ui.html import el
from mempal.ui.pages import drawer, graph, inbox, overview, rules, search, timeline

Page = Callable[[Request, Ctx], Awaitable[Any]]
STATUS_OF = {NOT_FOUND: 404, INVALID_PARAMS: 400, FORBIDDEN: 403}


def _html(fn: Page, ctx: Ctx) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        out = await fn(request, ctx)
        return out if isinstance(out, Response) else HTMLResponse(out)

    return endpoint


def _style() -> bytes:
    return files("mempal.ui").joinpath("static/style.css").read_bytes()


def build(keys: Keys, *, host: str, port: int, cwd: str, daemon: DaemonLink | None = None) -> ASGIApp:
    ctx = Ctx(daemon or DaemonLink(), keys.csrf, cwd)
    rates = overview.Rates()
    names = search.Names()
    css = _style()

    async def home(request: Request, c: Ctx) -> str:
        return await overview.render(request, c, rates)

    async def find(request: Request, c: Ctx) -> str:
        return await search.render(request, c, names)

    async def style(_request: Request) -> Response:
        return Response(css, media_type="text/css")

    async def favicon(_request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", _html(home, ctx)),
        Route("/search", _html(find, ctx)),
        Route("/drawer/{drawer_id}", _html(drawer.render, ctx)),
        Route("/drawer/{drawer_id}/delete", _html(drawer.delete, ctx), methods=["POST"]),
        Route("/drawer/{drawer_id}/restore", _html(drawer.restore, ctx), methods=["POST"]),
        Route("/session", _html(drawer.session, ctx)),
        Route("/timeline", _html(timeline.render, ctx)),
        Route("/graph", _html(graph.render, ctx)),
        Route("/cowork", _html(inbox.cowork, ctx)),
        Route("/packs", _html(inbox.packs, ctx)),
        Route("/rules", _html(rules.render, ctx)),
        Route("/static/style.css", style),
        Route("/favicon.ico", favicon),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        DaemonUnavailable: _daemon_down, RpcError: _refused, HTTPException: _http_error,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    return Guard(app, keys=keys, host=host, port=port)


async def _daemon_down(_request: Request, exc: Exception) -> Response:
    return HTMLResponse(page("mempald is not running", message(str(exc), "bad"),
                             el("p", "This page works again as soon as the daemon answers: reload it.")),
                        status_code=503)


async def _refused(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RpcError)
    status = STATUS_OF.get(exc.code, 500)
    title = "Not found" if status == 404 else "The daemon refused"
    return HTMLResponse(page(title, message(exc.message, "bad")), status_code=status)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    text = {404: "No such page.", 405: "Not with this method: changes are POSTed by this viewer's own forms."}
    return HTMLResponse(page(str(exc.status_code), message(text.get(exc.status_code, str(exc.detail)), "bad")),
                        status_code=exc.status_code, headers=exc.headers)
