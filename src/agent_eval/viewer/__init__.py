"""``agent-eval view``: a local, read-only web app over results, journals and labbooks.

Pages: the runs; one run's summary and task x attempt grid; one attempt's timeline,
checks and diff; two runs compared, with a passing and a failing attempt aligned step
by step. ``export_site`` writes the same pages as static files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_eval.viewer.app import build_app
from agent_eval.viewer.export import export_site
from agent_eval.viewer.source import Library
from agent_eval.viewer.views import Views
from agent_eval.web import AppServer

__all__ = ["Library", "Views", "build_app", "export", "open_viewer", "serve"]


def open_viewer(
    paths: Sequence[str | Path], host: str = "127.0.0.1", port: int = 0, allow_remote: bool = False
) -> AppServer:
    """The viewer's server, bound but not yet serving; its runs start loading at once."""
    views = Views(Library(paths))
    server = AppServer(build_app(views), host, port, allow_remote=allow_remote)
    # Read every results file in the background, so that a run opens at once.
    threading.Thread(target=views.preload, daemon=True, name="viewer-preload").start()
    return server


def serve(
    paths: Sequence[str | Path],
    host: str,
    port: int,
    allow_remote: bool,
    echo: Callable[[str], None],
) -> None:
    """Serve the viewer until Ctrl-C."""
    server = open_viewer(paths, host, port, allow_remote)
    echo(f"agent-eval view on {server.root_url}/ (Ctrl-C stops it)")
    server.serve_forever()
    echo("stopped")


def export(paths: Sequence[str | Path], out: Path) -> int:
    """Write the static site for ``paths`` into ``out``; return the data files written."""
    return export_site(Views(Library(paths)), out)
