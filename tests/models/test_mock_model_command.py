"""`agent-eval mock-model` black-box: it serves the script on loopback and stops on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mock-replies.json"
CODE = "import sys; from agent_eval.cli import main; sys.argv[0] = 'agent-eval'; main()"


def test_mock_model_serves_until_interrupted() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE, "mock-model", "--script", str(EXAMPLE), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("scripted model server on http://127.0.0.1:")
        base_url = first.split(" on ")[1].split()[0]
        models = httpx.get(f"{base_url}/models", timeout=5).json()
        assert [m["id"] for m in models["data"]] == ["mock"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "served 0 request(s) in 0s\n"


def test_mock_model_rejects_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"replies": [{"text": "hi"}]}', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", CODE, "mock-model", "--script", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"Error: mock script {bad}: replies.0.text: unknown field\n"
