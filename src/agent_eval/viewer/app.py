"""The viewer's web app: one HTML page, its packaged script and style, and JSON endpoints.

Read-only: every route is GET. Files are named by run id and row index, never by path,
and the packaged assets are served from a fixed list, so no URL reaches another file.
Every response forbids scripts from anywhere but the app itself.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_eval.errors import AgentEvalError
from agent_eval.viewer.views import PAGE, STEPS_PAGE, Views

ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}
"""The packaged files the page loads, besides itself."""
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def asset(name: str) -> bytes:
    """A packaged front-end file."""
    return resources.files("agent_eval.viewer").joinpath("static", name).read_bytes()


def _int(request: Request, name: str, default: int, most: int = 10**9) -> int:
    """A query parameter as an integer within 0..most; the default when it is not one."""
    try:
        return min(most, max(0, int(request.query_params.get(name, default))))
    except ValueError:
        return default


def _json(call: Callable[[Request], Any]) -> Callable[[Request], Response]:
    """An endpoint whose errors reach the page as ``{"error": message}``."""

    def endpoint(request: Request) -> Response:
        try:
            return JSONResponse(call(request), headers=SECURITY_HEADERS)
        except AgentEvalError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404, headers=SECURITY_HEADERS)

    return endpoint


def build_app(views: Views) -> Starlette:
    """The Starlette app over ``views``."""

    def index(request: Request) -> Response:
        return Response(asset("index.html"), media_type="text/html", headers=SECURITY_HEADERS)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("not found", status_code=404, headers=SECURITY_HEADERS)
        return Response(asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)

    def grid(request: Request) -> dict[str, Any]:
        q = request.query_params
        return views.grid(
            request.path_params["run"],
            offset=_int(request, "offset", 0),
            limit=_int(request, "limit", PAGE, most=10 * PAGE) or 1,
            failed=q.get("failed") == "1",
            failure_class=q.get("class", ""),
            category=q.get("category", ""),
            text=q.get("q", ""),
        )

    def steps(request: Request) -> dict[str, Any]:
        p = request.path_params
        return views.steps(
            p["run"],
            p["index"],
            _int(request, "offset", 0),
            _int(request, "limit", STEPS_PAGE, most=5 * STEPS_PAGE) or 1,
        )

    routes = [
        Route("/", index),
        Route("/static/{name}", static),
        Route("/api/runs", _json(lambda r: views.runs())),
        Route("/api/run/{run}", _json(lambda r: views.run(r.path_params["run"]))),
        Route("/api/grid/{run}", _json(grid)),
        Route(
            "/api/attempt/{run}/{index:int}",
            _json(lambda r: views.attempt(r.path_params["run"], r.path_params["index"])),
        ),
        Route("/api/steps/{run}/{index:int}", _json(steps)),
        Route(
            "/api/calls/{run}/{index:int}",
            _json(lambda r: views.calls(r.path_params["run"], r.path_params["index"])),
        ),
        Route(
            "/api/compare/{a}/{b}",
            _json(
                lambda r: views.compare(
                    r.path_params["a"], r.path_params["b"], r.query_params.get("allow") == "1"
                )
            ),
        ),
        Route(
            "/api/pair/{a}/{b}/{task}",
            _json(
                lambda r: views.pair(r.path_params["a"], r.path_params["b"], r.path_params["task"])
            ),
        ),
    ]
    return Starlette(routes=routes)
