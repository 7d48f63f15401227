"""What ``run_command`` lets through: an allow-list of read-only commands and their flags.

Each command's arguments are parsed the way GNU getopt parses them (options may follow
operands, ``--`` ends options, short flags cluster), so the policy sees exactly what the
program will see. Only listed flags pass; anything unknown is refused rather than
guessed at, which also refuses GNU's abbreviated long options. Every argument the
program will open as a path goes through the workspace confinement rule. Patterns and
numbers are not paths and are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_eval.tools.base import ToolArgumentError
from agent_eval.tools.paths import resolve_inside

ALLOWED_COMMANDS: tuple[str, ...] = ("ls", "cat", "grep", "wc", "head", "tail", "find")
MAX_ARGS = 64


def _words(text: str) -> frozenset[str]:
    """A set of options written as one space-separated string, to keep the tables short."""
    return frozenset(text.split())


@dataclass(frozen=True)
class _Options:
    """The flags one command accepts, split by whether they take a value."""

    flags: str
    valued: str = ""
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    path_valued: frozenset[str] = frozenset()
    pattern_options: frozenset[str] = frozenset()
    digit_flags: bool = False
    pattern_first: bool = False


_HEAD_TAIL = _Options(
    flags="qvz",
    valued="nc",
    long_flags=_words("--quiet --silent --verbose"),
    long_valued=frozenset({"--lines", "--bytes"}),
    digit_flags=True,
)

_POLICIES: dict[str, _Options] = {
    "ls": _Options(
        flags="aAlhR1StrFdsipn",
        long_flags=_words(
            "--all --almost-all --human-readable --recursive --reverse --classify --directory"
        ),
    ),
    "cat": _Options(
        flags="AbeEnstTuv",
        long_flags=_words(
            "--number --number-nonblank --squeeze-blank --show-all --show-ends "
            "--show-tabs --show-nonprinting"
        ),
    ),
    "wc": _Options(
        flags="cmlLw",
        long_flags=_words("--bytes --chars --lines --words --max-line-length"),
    ),
    "head": _HEAD_TAIL,
    "tail": _HEAD_TAIL,
    "grep": _Options(
        flags="EFGivwxclLoqsnhHrIb",
        valued="emABCf",
        long_flags=_words(
            "--ignore-case --invert-match --word-regexp --line-regexp --count "
            "--files-with-matches --files-without-match --only-matching --quiet "
            "--silent --no-messages --line-number --no-filename --with-filename "
            "--recursive --extended-regexp --fixed-strings --basic-regexp"
        ),
        long_valued=_words(
            "--regexp --file --max-count --after-context --before-context "
            "--context --include --exclude --exclude-dir"
        ),
        path_valued=frozenset({"-f", "--file"}),
        pattern_options=_words("-e --regexp -f --file"),
        digit_flags=True,
        pattern_first=True,
    ),
}

# Reasons for the refusals an agent is most likely to hit, so it can pick another route.
_SYMLINKS = "follows symbolic links out of the workspace"
_WHY: dict[str, dict[str, str]] = {
    "ls": {"-L": _SYMLINKS, "-H": _SYMLINKS, "--dereference": _SYMLINKS},
    "grep": {"-R": f"{_SYMLINKS}; use -r", "--dereference-recursive": f"{_SYMLINKS}; use -r"},
    "tail": {opt: "would wait forever for new lines" for opt in ("-f", "-F", "--follow")},
    "wc": {"--files0-from": "reads file names from a file the policy cannot check"},
    "find": {
        "-L": _SYMLINKS,
        "-H": _SYMLINKS,
        "-follow": _SYMLINKS,
        **{opt: "runs other programs" for opt in ("-exec", "-execdir", "-ok", "-okdir")},
        "-delete": "deletes files",
        **{opt: "writes files" for opt in ("-fprint", "-fprint0", "-fprintf", "-fls")},
    },
}

_FIND_PLAIN = _words(
    "-print -print0 -ls -empty -depth -prune -quit -true -false -not -a "
    "-and -o -or ! ( ) , -readable -writable -executable -xdev -mount "
    "-daystart -nowarn"
)
_FIND_VALUED = _words(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex "
    "-regextype -type -xtype -maxdepth -mindepth -size -mtime -mmin "
    "-atime -amin -ctime -cmin -perm -links -printf -lname -ilname"
)
_FIND_PATH_VALUED = frozenset({"-newer"})


def _refused(command: str, option: str) -> ToolArgumentError:
    why = _WHY.get(command, {}).get(option, "is not on the allow-list")
    return ToolArgumentError(f"{command}: option {option!r} {why}")


def _confine(workspace: Path, command: str, path: str) -> None:
    if path == "-":
        return  # stdin, which run_command connects to nothing
    try:
        resolve_inside(workspace, path)
    except ToolArgumentError as exc:
        raise ToolArgumentError(f"{command}: {exc}") from exc


def _check_getopt(command: str, args: list[str], workspace: Path) -> None:
    """Check a GNU getopt-style argument list against ``command``'s options."""
    policy = _POLICIES[command]
    operands: list[str] = []
    pattern_given = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg == "-" or not arg.startswith("-"):
            operands.append(arg)
        elif arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in policy.long_flags and not eq:
                continue
            if name not in policy.long_valued:
                raise _refused(command, name)
            if not eq:
                if i >= len(args):
                    raise ToolArgumentError(f"{command}: option {name!r} needs a value")
                value = args[i]
                i += 1
            pattern_given = pattern_given or name in policy.pattern_options
            if name in policy.path_valued:
                _confine(workspace, command, value)
        elif policy.digit_flags and arg[1:].isdigit():
            continue
        else:
            for pos, letter in enumerate(arg[1:], start=1):
                option = f"-{letter}"
                if letter in policy.flags:
                    continue
                if letter not in policy.valued:
                    raise _refused(command, option)
                value = arg[pos + 1 :]
                if not value:
                    if i >= len(args):
                        raise ToolArgumentError(f"{command}: option {option!r} needs a value")
                    value = args[i]
                    i += 1
                pattern_given = pattern_given or option in policy.pattern_options
                if option in policy.path_valued:
                    _confine(workspace, command, value)
                break
    if policy.pattern_first and not pattern_given and operands:
        operands = operands[1:]
    for operand in operands:
        _confine(workspace, command, operand)


def _check_find(args: list[str], workspace: Path) -> None:
    """Check find's starting points and expression; find does not use getopt."""
    i = 0
    while i < len(args) and args[i] in ("-P", "-L", "-H"):
        if args[i] != "-P":
            raise _refused("find", args[i])
        i += 1
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!"):
        _confine(workspace, "find", args[i])
        i += 1
    while i < len(args):
        token = args[i]
        i += 1
        if token in _FIND_PLAIN:
            continue
        if token not in _FIND_VALUED and token not in _FIND_PATH_VALUED:
            if token.startswith("-"):
                raise _refused("find", token)
            raise ToolArgumentError(
                f"find: unexpected {token!r}; starting folders must come before the expression"
            )
        if i >= len(args):
            raise ToolArgumentError(f"find: {token!r} needs a value")
        if token in _FIND_PATH_VALUED:
            _confine(workspace, "find", args[i])
        i += 1


def check_command(argv: list[str], workspace: Path) -> None:
    """Raise ToolArgumentError unless ``argv`` is an allowed, confined, read-only command."""
    if not argv:
        raise ToolArgumentError("the command is empty")
    if len(argv) > MAX_ARGS:
        raise ToolArgumentError(f"the command has {len(argv)} arguments; the limit is {MAX_ARGS}")
    if any("\x00" in arg for arg in argv):
        raise ToolArgumentError("the command contains a NUL byte")
    command = argv[0]
    if command not in ALLOWED_COMMANDS:
        allowed = ", ".join(ALLOWED_COMMANDS)
        raise ToolArgumentError(f"command {command!r} is not allowed; use one of: {allowed}")
    if command == "find":
        _check_find(argv[1:], workspace)
    else:
        _check_getopt(command, argv[1:], workspace)
