"""The viewer's server against a real socket on port 0: read-only, confined to the
folders given, clear about damaged files, and a clean Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_eval.errors import ConfigError
from agent_eval.viewer import open_viewer


def _ids(base: str) -> dict[str, str]:
    runs = httpx.get(f"{base}/api/runs").json()["runs"]
    return {Path(r["file"]).name: r["id"] for r in runs}


def test_pages_come_from_the_package_with_a_strict_policy(served: Any) -> None:
    base = served.server.root_url
    page = httpx.get(base + "/")
    assert page.status_code == 200 and 'src="static/app.js"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    script = httpx.get(base + "/static/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
    outside = ["/static/../results-a.json", "/static/..%2Fresults-a.json", "/static/index.html",
               "/static/%2Fetc%2Fpasswd", "/results-a.json", "/api/../results-a.json"]  # fmt: skip
    for path in outside:
        reply = httpx.get(base + path)
        assert reply.status_code == 404, path
        assert "run_id" not in reply.text


def test_the_server_is_read_only(served: Any) -> None:
    base = served.server.root_url
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert httpx.request(method, base + "/api/runs").status_code == 405


def test_endpoints_page_their_data(served: Any) -> None:
    base = served.server.root_url
    run = _ids(base)["results-a.json"]
    grid = httpx.get(f"{base}/api/grid/{run}", params={"offset": 1, "limit": 1}).json()
    assert (grid["total"], grid["matched"], len(grid["tasks"])) == (3, 3, 1)
    assert grid["tasks"][0]["task_id"] == "t-two"
    steps = httpx.get(f"{base}/api/steps/{run}/0", params={"offset": 1, "limit": 2}).json()
    assert steps["total"] == 6 and [r["type"] for r in steps["records"]] == ["model", "tool"]
    assert httpx.get(f"{base}/api/grid/{run}", params={"limit": "x"}).status_code == 200


def test_unknown_runs_and_attempts_are_clear_errors(served: Any) -> None:
    base = served.server.root_url
    run = _ids(base)["results-a.json"]
    reply = httpx.get(f"{base}/api/attempt/{run}/99")
    assert reply.status_code == 404 and reply.json() == {
        "error": "attempt 99: the run has 9 attempt(s)"
    }
    reply = httpx.get(f"{base}/api/run/nope")
    assert reply.json()["error"] == "run nope: not found under the folders given"
    broken = _ids(base)["broken-results.json"]
    assert "not valid JSON" in httpx.get(f"{base}/api/run/{broken}").json()["error"]


@pytest.mark.parametrize("where", ["absolute", "traversal", "symlink"])
def test_trajectories_outside_the_folders_given_are_refused(
    where: str, make_run: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "runs"
    results = make_run(folder, "a", repeats=1)
    outside = tmp_path / "secret.jsonl"
    outside.write_text('{"meta": {}}\n{"type": "tool", "result": "SECRET"}\n')
    document = json.loads(results.read_text())
    row = document["results"][0]
    if where == "absolute":
        row["trajectory_file"] = str(outside)
    elif where == "traversal":
        row["trajectory_file"] = "../secret.jsonl"
    else:
        link = folder / "trajectories-a" / "link-r1.jsonl"
        link.symlink_to(outside)
        row["trajectory_file"] = "trajectories-a/link-r1.jsonl"
    results.write_text(json.dumps(document, indent=2))
    server = open_viewer([folder]).start()
    try:
        run = _ids(server.root_url)["results-a.json"]
        attempt = httpx.get(f"{server.root_url}/api/attempt/{run}/0").json()
        steps = httpx.get(f"{server.root_url}/api/steps/{run}/0").json()
        assert "outside the folders given to view; not shown" in attempt["trajectory_problem"]
        assert steps["records"] == [] and "SECRET" not in json.dumps(attempt) + json.dumps(steps)
    finally:
        server.stop()


def test_a_non_loopback_host_is_refused_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--host 0\.0\.0\.0 is reachable from other machines"):
        open_viewer([tmp_path], host="0.0.0.0")
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "view", str(tmp_path), "--host", "10.1.2.3"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("Error: --host 10.1.2.3 is reachable from other machines")


def test_a_missing_path_is_one_error_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "view", str(tmp_path / "nope")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert (
        done.stderr
        == f"Error: view {tmp_path / 'nope'}: not found; give results files or folders\n"
    )


def test_the_command_serves_until_ctrl_c_and_stops_cleanly(served: Any) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_eval", "view", str(served.folder), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert (
            line.startswith("agent-eval view on http://127.0.0.1:") and "(Ctrl-C stops it)" in line
        )
        url = line.split()[3]
        assert httpx.get(url + "api/runs").status_code == 200
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out == "stopped\n" and "Traceback" not in err
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "api/runs", timeout=2)


def test_the_port_is_7575_by_default() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "view", "--help"], capture_output=True, text=True
    )
    assert "[default: 7575;" in done.stdout and "--allow-remote" in done.stdout


def test_run_ends_by_printing_the_view_command_for_what_it_wrote(
    make_run: Any, tmp_path: Path
) -> None:
    make_run(tmp_path, "a", repeats=1)  # writes the agent and the suite
    out = tmp_path / "again.json"
    done = subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", "--agent", str(tmp_path / "agent.py"),
         "--tasks", str(tmp_path / "suite.json"), "--model", "m", "--no-preflight",
         "--out", str(out),
         "--allow-empty-workspace"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # mode a passes every first attempt
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"to see each attempt: agent-eval view {out}"
    server = open_viewer([out]).start()
    try:
        runs = httpx.get(server.root_url + "/api/runs").json()["runs"]
        assert [(r["file"], r["attempts"]) for r in runs] == [("again.json", 3)]
    finally:
        server.stop()


def test_labbook_lines_without_results_are_listed_and_a_bad_line_is_named(
    served: Any, tmp_path: Path
) -> None:
    lines = (served.folder / "labbook.jsonl").read_text().splitlines()
    lost = json.loads(lines[0]) | {"run_id": "lost-run"}
    (tmp_path / "labbook.jsonl").write_text(
        "\n".join([*lines, json.dumps(lost), '{"run_id": "torn'])
    )
    for name in ("results-a.json", "results-b.json"):
        (tmp_path / name).write_text((served.folder / name).read_text())
    server = open_viewer([tmp_path]).start()
    try:
        runs = httpx.get(server.root_url + "/api/runs").json()["runs"]
        # The two lines of runs whose results are here are not listed twice.
        assert sorted(r["kind"] for r in runs) == ["labbook", "labbook", "results", "results"]
        listed = [(r["run_id"], r["problem"]) for r in runs if r["kind"] == "labbook"]
        assert listed[0] == ("lost-run", None)
        assert listed[1][0] is None and "line 4: not valid JSON" in listed[1][1]
        lost_id = next(r["id"] for r in runs if r["run_id"] == "lost-run")
        reply = httpx.get(f"{server.root_url}/api/run/{lost_id}").json()
        assert "only its labbook line was found" in reply["error"]
    finally:
        server.stop()


def test_a_run_with_a_damaged_row_lists_its_numbers_and_its_page_names_the_row(
    served: Any, tmp_path: Path
) -> None:
    lines = (served.folder / "results-a.json").read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.startswith('    {"id"'))
    lines[last] = '    {"id": "t-flip", "attempt": "three"}\n'
    (tmp_path / "results-a.json").write_text("".join(lines))
    server = open_viewer([tmp_path]).start()
    try:
        (card,) = httpx.get(server.root_url + "/api/runs").json()["runs"]
        assert (card["problem"], card["attempts"], card["passed"]) == (None, 9, 7)
        reply = httpx.get(f"{server.root_url}/api/run/{card['id']}").json()
        assert "results[8]" in reply["error"] and "fix or remove that row" in reply["error"]
    finally:
        server.stop()
