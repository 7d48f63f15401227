"""Secrets redacted by value: a hostile agent echoes every secret it can find, everywhere
it can, and none of them reaches a file, a report, the viewer's export, a trace or the
console."""

from __future__ import annotations

import gzip
import json
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.run.conftest import write_in_pieces

from agent_eval.redaction import (
    REDACTED,
    Redactor,
    environment_secrets,
    is_secret_env_name,
    is_secret_name,
    public_options,
)

API_KEY = "sk-flag-apikey-7731"
ENV_KEY = "sk-env-openai-5519"
CLOUD = "cloud-secret-4242"
VAULT = "vault-option-9081"
NAMED = {
    "authorization": "Bearer authz-3391",
    "bearer": "bearer-value-2207",
    "credentials": "creds-value-6603",
    "hf_tokens": "hf-tokens-8812",
    "hftoken": "hftoken-value-4470",
}
SECRETS = [API_KEY, ENV_KEY, CLOUD, VAULT, *NAMED.values()]

PYTHON_AGENT = """
import os, pathlib, sys

SCAFFOLD_NAME = "leaky"

def run_task(task, options):
    leak = " ".join([options["api_key"], os.environ["OPENAI_API_KEY"],
                     os.environ["MY_CLOUD_SECRET"], options["vault"],
                     *(options[name] for name in options["names"].split(","))])
    pathlib.Path(options["workspace"], "leak.txt").write_text(leak + "\\n")
    print("stderr: " + leak, file=sys.stderr, flush=True)
    print("stdout: " + leak, flush=True)
    return {"answer": leak, "steps": 1, "tokens": 1, "trajectory": [
        {"type": "model", "content": leak},
        {"type": "tool", "tool": "write_file", "args": {"path": "leak.txt", "content": leak},
         "result": leak},
    ]}
"""

COMMAND_AGENT = """
import json, os, pathlib, sys

for line in sys.stdin:
    options = json.loads(line)["options"]
    leak = " ".join([options["api_key"], os.environ["OPENAI_API_KEY"],
                     os.environ["MY_CLOUD_SECRET"], options["vault"],
                     *(options[name] for name in options["names"].split(","))])
    pathlib.Path(options["workspace"], "leak.txt").write_text(leak + "\\n")
    # in pieces, so that a secret is split across two writes of the pipe
    for piece in (leak[: len(leak) // 3], leak[len(leak) // 3 :], "\\n"):
        sys.stderr.write(piece)
        sys.stderr.flush()
    print(json.dumps({"answer": leak, "steps": 1, "tokens": 1, "trajectory": [
        {"type": "model", "content": leak}]}), flush=True)
"""


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def otlp() -> Iterator[tuple[str, list[bytes]]]:
    """An OTLP/HTTP receiver on 127.0.0.1 that keeps every body it gets, as bytes."""
    bodies: list[bytes] = []
    handler = type("Collector", (_Collector,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    server.shutdown()
    server.server_close()


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@pytest.mark.parametrize("kind", ["python", "cmd"])
def test_no_secret_an_agent_echoes_leaves_the_run(
    kind: str,
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    agent_eval: Callable[..., Any],
    otlp: tuple[str, list[bytes]],
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    if kind == "python":
        agent = str(write_agent(PYTHON_AGENT))
    else:
        script = tmp_path / "leaky_cmd.py"
        script.write_text(COMMAND_AGENT, encoding="utf-8")
        agent = f"cmd:{sys.executable} {script}"
    suite = write_suite(
        [
            {
                "id": "t",
                "task": "q",
                "expect_in_answer": ["nothing like this"],
                "expect_state": [{"file": "leak.txt", "exists": True}],
            }
        ]
    )
    endpoint, bodies = otlp
    options = [arg for name, value in NAMED.items() for arg in ("--option", f"{name}={value}")]
    run = agent_eval(
        "run", "--agent", agent, "--tasks", str(suite), "--out", "out/r.json",
        "--trajectory-dir", "out/traj", "--labbook", "out/lb.jsonl", "--verbose",
        "--api-key", API_KEY, "--secret-option", f"vault={VAULT}",
        "--option", f"names={','.join(NAMED)}", *options,
        "--otlp-endpoint", endpoint, "--otlp-content",
        cwd=tmp_path,
        env={"OPENAI_API_KEY": ENV_KEY, "MY_CLOUD_SECRET": CLOUD},
    )  # fmt: skip
    assert run.returncode == 2, run.stderr  # the answer check fails: the run went through
    assert "answer: " in run.stdout and REDACTED in run.stdout  # --verbose shows the answer
    assert not _leaks(run.stdout + run.stderr)
    if kind == "python":  # the agent's own prints pass through the harness, redacted
        assert f"stderr: {REDACTED}" in run.stderr
    out = tmp_path / "out"
    assert (out / "r.json").exists() and list((out / "traj").glob("*.diff"))
    if kind == "cmd":
        log = next((out / "traj").glob("*.log")).read_text()
        assert REDACTED in log
    run_record = json.loads((out / "r.json").read_text())["run"]
    assert {name: run_record["options"][name] for name in [*NAMED, "vault"]} == dict.fromkeys(
        [*NAMED, "vault"], REDACTED
    )
    assert run_record["options"]["names"] == ",".join(NAMED)
    (tmp_path / "reports").mkdir()
    for fmt, suffix in (("text", "txt"), ("markdown", "md"), ("junit", "xml"),
                        ("html", "html"), ("json", "json")):  # fmt: skip
        made = agent_eval("report", "out/r.json", "--format", fmt, "--out", f"reports/r.{suffix}",
                          cwd=tmp_path)  # fmt: skip
        assert made.returncode == 0, made.stderr
    exported = agent_eval("view", "out", "--export", "site", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    files = [p for folder in ("out", "reports", "site") for p in (tmp_path / folder).rglob("*")]
    assert len([p for p in files if p.is_file()]) >= 10
    for path in files:
        if path.is_file():
            assert not _leaks(path.read_bytes().decode("utf-8", "replace")), path
    assert bodies, "no trace was sent"
    for body in bodies:
        assert not _leaks(body.decode("utf-8", "replace"))
        assert REDACTED.encode() in body  # the content went, redacted


def test_secret_names_old_and_new() -> None:
    for name in ["api_key", "apiKey", "auth-token", "client.secret", "db_password", "passwd",
                 "authorization", "bearer", "credential", "credentials", "cookie", "session",
                 "pass", "hf_tokens", "hftoken", "oauth", "AWS_SECRET_ACCESS_KEY"]:  # fmt: skip
        assert is_secret_name(name), name
    for name in ["max_tokens", "maxtokens", "token_limit", "num_keys", "tool_mode", "keyboard",
                 "passage", "author", "temperature", "model", "reply_tokens", "prompt_tokens",
                 "auth_mode", "api_key_file"]:  # fmt: skip
        assert not is_secret_name(name), name
    for name in ["OPENAI_API_KEY", "MY_CLOUD_SECRET", "HF_TOKEN", "GITHUB_TOKEN", "PGPASSWORD",
                 "DB_PASS", "AWS_SECRET_ACCESS_KEY", "NPM_AUTH_TOKEN", "MINIO_SECRET_KEY",
                 "AWS_SESSION_TOKEN"]:  # fmt: skip
        assert is_secret_env_name(name), name
    # ordinary desktop settings whose values are words: never scrubbed from text
    # and settings about a secret: RAY_AUTH_MODE=token must not scrub "token" from the rows
    for name in ["XDG_SESSION_CLASS", "DESKTOP_SESSION", "HOME", "PATH", "LANG", "RAY_AUTH_MODE"]:
        assert not is_secret_env_name(name), name
    assert environment_secrets({"XDG_SESSION_CLASS": "user", "HF_TOKEN": "hf_x1"}) == ["hf_x1"]


def test_short_values_are_kept_in_text_but_never_recorded() -> None:
    redact = Redactor.for_run("abc", {"vault": "xyz", "db_password": "p4ss-word"}, {})
    assert redact("abc xyz p4ss-word") == f"abc xyz {REDACTED}"
    recorded = public_options({"vault": "xyz", "db_password": "ab", "mode": "x"}, ["vault"])
    assert recorded == {"vault": REDACTED, "db_password": REDACTED, "mode": "x"}


@given(
    st.lists(st.sampled_from(["abcd", "abcdefgh", "zz-top-secret", "é-secret-é"]), max_size=4),
    st.text(alphabet="abcdefghz-é \n", max_size=40),
    st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_a_stream_cut_anywhere_is_redacted_as_a_whole(
    secrets: list[str], filler: str, cuts: list[int]
) -> None:
    """However the bytes arrive, the stream's output is the whole text, redacted."""
    redact = Redactor(["abcd", "abcdefgh", "zz-top-secret", "é-secret-é"])
    data = (filler.join(secrets) + filler).encode("utf-8")
    got: list[bytes] = []
    stream = redact.stream(got.append)
    write_in_pieces(stream, data, cuts)
    assert b"".join(got) == redact.data(data)


def test_environment_secrets_are_redacted_with_an_api_key_given() -> None:
    redact = Redactor.for_run("sk-given-1234", {}, {"OPENAI_API_KEY": "sk-env-5678"})
    assert redact("sk-given-1234 sk-env-5678") == f"{REDACTED} {REDACTED}"


DUEL_AGENT = """
def run_task(task, options):
    return {"answer": options["api_key"] + " " + options["vault"], "steps": 1, "tokens": 1}
"""


def test_a_duel_neither_prints_nor_keeps_a_side_s_secrets(
    tmp_path: Path,
    write_suite: Callable[..., Path],
    write_agent: Callable[..., Path],
    agent_eval: Callable[..., Any],
) -> None:
    write_suite([{"id": "t", "task": "q", "expect_in_answer": ["yes"]}])
    write_agent(DUEL_AGENT)
    sides = {
        "a": f"agent.py --api-key {API_KEY} --secret-option vault={VAULT}",
        "b": f"agent.py --api-key={API_KEY} --secret-option=vault={VAULT} --option bearer={CLOUD}",
    }
    duel = agent_eval("duel", "--tasks", "suite.json", "--a", sides["a"], "--b", sides["b"],
                      "--max-repeats", "1", cwd=tmp_path)  # fmt: skip
    assert duel.returncode == 2, duel.stderr  # undecided after one round
    assert "  A: agent.py --api-key '[redacted]' --secret-option 'vault=[redacted]'" in duel.stdout
    assert not _leaks(duel.stdout + duel.stderr)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    assert len(written) >= 3
    for side in "ab":  # each side's agent got both secrets
        rows = json.loads((tmp_path / f"duel-{side}.json").read_text())["results"]
        assert [row["answer"] for row in rows] == [f"{REDACTED} {REDACTED}"]
    for path in written:
        assert not _leaks(path.read_text()), path


def test_a_malformed_secret_option_is_not_echoed() -> None:
    from agent_eval.errors import ConfigError
    from agent_eval.run.settings import parse_options

    with pytest.raises(ConfigError) as caught:
        parse_options(["hunter2-without-a-key"], "--secret-option")
    assert str(caught.value) == "--secret-option (value not shown): write it as KEY=VALUE"


def test_an_error_that_quotes_a_secret_is_redacted(
    tmp_path: Path, write_suite: Callable[..., Path], write_agent: Callable[..., Path]
) -> None:
    from agent_eval.errors import AgentLoadError
    from agent_eval.run.runner import execute, prepare
    from agent_eval.run.settings import RunConfig

    agent = write_agent("""
        def build(options):
            raise RuntimeError("refused key " + options["api_key"] + " and " + options["vault"])
        def run_task(task, options):
            return {}
    """)
    config = RunConfig(agent=str(agent), tasks=str(write_suite([{"id": "t", "task": "q"}])),
                       trajectory_dir=tmp_path / "t", api_key=API_KEY,
                       secret_options={"vault": VAULT})  # fmt: skip
    with pytest.raises(AgentLoadError) as caught:
        execute(prepare(config))
    assert f"refused key {REDACTED} and {REDACTED}" in str(caught.value)


def test_a_failing_sink_never_blocks_the_process_writing() -> None:
    """When stderr's reader is gone, what the workers print is still drained."""
    import os

    from agent_eval.redaction import copy_redacted

    def broken(data: bytes) -> None:
        raise BrokenPipeError("the reader went away")

    read_end, write_end = os.pipe()
    copier = threading.Thread(
        target=copy_redacted,
        args=(os.fdopen(read_end, "rb"), Redactor([API_KEY]).stream(broken)),
        daemon=True,
    )
    copier.start()

    def write() -> None:
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(b"x" * (4 << 20))  # far past a pipe's buffer: blocks unless drained

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(30)
    assert not writer.is_alive()
    copier.join(30)
    assert not copier.is_alive()
