"""run_command: the allow-list, argument confinement, environment, truncation and timeout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_eval.tools import ToolContext, run_tool
from agent_eval.tools.base import MAX_RESULT_CHARS
from agent_eval.tools.run_command import minimal_environment, run_argv


def command(ctx: ToolContext, line: str | list[str]) -> tuple[bool, str]:
    seen = run_tool("run_command", ctx, {"command": line})
    return seen.error, seen.result


@pytest.fixture
def linked(workspace: Path, outside: Path) -> ToolContext:
    """A workspace holding a file link and a folder link that both point outside."""
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "door").symlink_to(outside, target_is_directory=True)
    return ToolContext(workspace=workspace)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ls", "notes.md\nsub\n"),
        ("ls -1 sub", "deep.txt\n"),
        ("cat sub/deep.txt", "alpha\nbeta\ngamma\n"),
        ("head -n 1 sub/deep.txt", "alpha\n"),
        ("head -2 sub/deep.txt", "alpha\nbeta\n"),
        ("tail -n1 sub/deep.txt", "gamma\n"),
        ("wc -l sub/deep.txt", "3 sub/deep.txt\n"),
        ("grep -n gateway notes.md", "5:The gateway listens on 4000.\n"),
        ("grep -rl beta", "sub/deep.txt\n"),
        ("grep -e beta -- sub/deep.txt", "beta\n"),
        ("grep /etc/passwd notes.md", "no matches"),
        ("find . -name '*.txt' -type f", "./sub/deep.txt\n"),
        (["grep", "-c", "a b", "notes.md"], "0\n"),
    ],
)
def test_allowed_commands_run_in_the_workspace(ctx: ToolContext, line: str, expected: str) -> None:
    assert command(ctx, line) == (False, expected)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("env", "not allowed"),
        ("sh -c ls", "not allowed"),
        ("/bin/cat notes.md", "not allowed"),
        ("python -c 1", "not allowed"),
        ("cat /proc/self/environ", "absolute"),
        ("cat ../../../../proc/self/environ", "'..'"),
        ("cat /etc/passwd", "absolute"),
        ("ls ..", "'..'"),
        ("ls /", "absolute"),
        ("head -n 3 ../outside/secret.txt", "'..'"),
        ("grep -r TOP ../outside", "'..'"),
        ("grep -f /etc/passwd notes.md", "absolute"),
        ("grep --file=../outside/secret.txt notes.md", "'..'"),
        ("grep -R TOP .", "follows symbolic links"),
        ("grep --dereference-recursive TOP .", "follows symbolic links"),
        ("grep -d recurse TOP .", "allow-list"),
        ("find / -name secret.txt", "absolute"),
        ("find . -exec cat {} ;", "runs other programs"),
        ("find . -execdir cat {} +", "runs other programs"),
        ("find . -ok cat {} ;", "runs other programs"),
        ("find . -delete", "deletes files"),
        ("find . -fprint out.txt", "writes files"),
        ("find -L .", "follows symbolic links"),
        ("find . -follow", "follows symbolic links"),
        ("find . -newer /etc/passwd", "absolute"),
        ("find . -files0-from list", "allow-list"),
        ("tail -f notes.md", "wait forever"),
        ("tail --follow=name notes.md", "wait forever"),
        ("ls -L door", "follows symbolic links"),
        ("wc --files0-from=list", "cannot check"),
        ("cat --verbose-abbrev notes.md", "allow-list"),
        ("grep x notes.md | cat /etc/passwd", "absolute"),
        ("cat 'unbalanced", "cannot split"),
        ("", "empty"),
    ],
)
def test_refusals_name_the_problem(ctx: ToolContext, line: str, reason: str) -> None:
    error, result = command(ctx, line)
    assert error
    assert reason in result


@pytest.mark.parametrize(
    "line",
    [
        "cat link.txt",
        "cat door/secret.txt",
        "head door/secret.txt",
        "ls door",
        "find door",
        "grep TOP link.txt",
        "wc -c link.txt",
        "tail door/secret.txt",
    ],
)
def test_symlinked_arguments_pointing_out_are_refused(
    linked: ToolContext, secret: str, line: str
) -> None:
    error, result = command(linked, line)
    assert error
    assert "symbolic link" in result
    assert secret not in result


@pytest.mark.parametrize(
    "line", ["grep -r TOP .", "grep -rl SECRET", "ls -R", "ls -lR .", "find .", "find . -ls"]
)
def test_recursion_never_follows_links_out(linked: ToolContext, secret: str, line: str) -> None:
    # A long listing may show a link's own target text; it must never show what is there.
    _, result = command(linked, line)
    assert secret not in result
    assert "unlisted.txt" not in result


def test_the_environment_carries_no_secret(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret-for-test")
    assert minimal_environment() == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    assert command(ctx, "cat /proc/self/environ")[0]
    assert command(ctx, "env")[0]
    (workspace / "environ").symlink_to("/proc/self/environ")
    error, result = command(ctx, "cat environ")
    assert error
    assert "sk-fake-secret-for-test" not in result


def test_the_parent_environment_does_not_reach_the_command(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inherited, this variable would make grep read the trailing '-c' as a file name.
    monkeypatch.setenv("POSIXLY_CORRECT", "1")
    assert command(ctx, "grep beta sub/deep.txt -c") == (False, "1\n")


def test_shell_syntax_is_plain_text(ctx: ToolContext, workspace: Path) -> None:
    error, result = command(ctx, "cat '$HOME' '*.md'")
    assert error
    assert "No such file" in result
    assert not (workspace / "out.txt").exists()
    command(ctx, "ls > out.txt")
    assert not (workspace / "out.txt").exists()


def test_nonzero_exit_is_an_error_observation(ctx: ToolContext) -> None:
    error, result = command(ctx, "cat missing.md")
    assert error
    assert result.endswith("[exit code 1]")


def test_output_is_truncated(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("line\n" * 50_000, encoding="utf-8")
    error, result = command(ctx, "cat big.txt")
    assert not error
    assert len(result) < MAX_RESULT_CHARS + 100
    assert result.endswith("[... truncated: the output was 250000 bytes]")


def test_a_hanging_command_is_stopped(ctx: ToolContext, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    seen = run_argv(ctx, ["cat", "pipe"], timeout_seconds=0.5)  # would block forever
    assert seen.error
    assert "did not finish within 0.5 seconds" in seen.result
