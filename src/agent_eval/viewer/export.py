"""``agent-eval view --export DIR``: the same pages as a static site for CI artifacts.

Browsers refuse ``fetch`` from a page opened from disk, so each JSON answer the server
would give is written as a small script, ``data/KEY.js``, that hands it to the page.
The page loads it by adding a script element, which works from disk and from any
static host alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_eval.errors import AgentEvalError, ConfigError
from agent_eval.viewer.app import ASSETS, asset
from agent_eval.viewer.views import Views

MAX_PAIRS = 45
"""Run pairs compared in an export (ten runs of one suite); more would be quadratic."""


def _script(key: str, body: Any) -> str:
    text = json.dumps(body, ensure_ascii=True, allow_nan=False, default=str)
    # ensure_ascii leaves no U+2028/2029; "<" is escaped so no "</script>" can appear.
    text = text.replace("<", "\\u003c")
    return f"AgentEvalData({json.dumps(key)}, {text});\n"


def export_site(views: Views, out: Path) -> int:
    """Write the site into ``out``; return how many data files it holds."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--export {out}: exists and is not a folder; give a folder")
    try:
        (out / "static").mkdir(parents=True, exist_ok=True)
        (out / "data").mkdir(exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--export {out}: cannot create it ({exc.strerror})") from None
    page = asset("index.html").replace(b'content="live"', b'content="static"')
    (out / "index.html").write_bytes(page)
    for name in ASSETS:
        (out / "static" / name).write_bytes(asset(name))
    written = 0

    def put(key: str, make: Callable[[], Any]) -> Any:
        nonlocal written
        try:
            body = make()
        except AgentEvalError as exc:
            body = {"error": str(exc)}
        name = key.replace("/", "-")
        (out / "data" / f"{name}.js").write_text(_script(name, body), encoding="ascii")
        written += 1
        return body

    runs = put("runs", views.runs)["runs"]
    readable = [r for r in runs if r["kind"] != "labbook" and not r["problem"]]
    for card in readable:
        rid = card["id"]
        if "error" in put(f"run/{rid}", partial(views.run, rid)):
            continue
        grid = put(f"grid/{rid}", partial(views.grid, rid, limit=10**9, answers=True))
        for task in grid.get("tasks", []):
            for cell in task["cells"]:
                index = cell["index"]
                shown = put(f"attempt/{rid}/{index}", partial(views.attempt, rid, index))
                put(f"steps/{rid}/{index}", partial(views.steps, rid, index, limit=10**9))
                if shown.get("recording"):
                    put(f"calls/{rid}/{index}", partial(views.calls, rid, index))
    pairs = [(a["id"], b["id"]) for n, a in enumerate(readable) for b in readable[n + 1 :]
             if a["suite_hash"] == b["suite_hash"]][:MAX_PAIRS]  # fmt: skip
    for a, b in pairs:
        compared = put(f"compare/{a}/{b}", partial(views.compare, a, b))
        for task in compared.get("per_task", []):
            if task["flip"] != "same":
                tid = task["task_id"]
                put(f"pair/{a}/{b}/{tid}", partial(views.pair, a, b, tid))
    return written
