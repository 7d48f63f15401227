"""One slot of a shared sandbox: the world a worker and its attempts live in.

The slots of a run share one bubblewrap sandbox, so that their workers fork from one
warmed-up interpreter instead of each starting its own. A slot's process, forked inside,
confines itself (`confine`) before any agent code runs:

- a user and mount namespace of its own, in which /dev/shm is a tmpfs of its own, the
  slot's folder a tmpfs of at most ``workspace_mb`` (its workspaces, /tmp and HOME), and
  the other slots' folders and logs are out of sight;
- a network namespace of its own, unless the network is the host's: a loopback that no
  other slot shares, on which the slot listens for the model endpoint's relay when there
  is one (the listening sockets go out to the relay, agent_eval.sandbox.relay);
- a second user namespace, in which those mounts are locked: nothing the slot runs can
  unmount or remount them to reach what they cover;
- a Landlock domain of its own: the slots share a PID namespace and a uid, and the
  domain keeps one from signalling, tracing or reading through /proc another's
  processes, and from reaching its abstract unix sockets;
- an IPC namespace of its own (System V objects), and no POSIX message queue at all;
- no capability left, before any agent code runs: build() and the attempts can mount
  nothing, so the only places an attempt can write are the ones emptied before the
  next (the slot's folder, by the parent; with isolation ``attempt``, its /dev/shm and
  System V objects, by the copy that runs the next attempt: `forget_shared`), and a
  copy cannot reach its worker's memory (`seal_attempt`).

The slot then sends the parent, outside, a descriptor of its folder, those listening
sockets and its own pid as the parent sees it (SCM_CREDENTIALS translates it), so the
parent makes and scores the workspaces there, relays the model endpoint and can bound
the slot's processes.
"""

from __future__ import annotations

import array
import ctypes
import fcntl
import functools
import os
import resource
import socket
import stat
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from agent_eval.sandbox.relay import listen

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
CLONE_NEWIPC = 0x08000000
IPC_RMID, LINUX_CAPABILITY_VERSION_3 = 0, 0x20080522
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
LANDLOCK_CREATE_RULESET, LANDLOCK_RESTRICT_SELF = 444, 446
"""The same syscall numbers on every architecture (they postdate the split tables)."""
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, LANDLOCK_SCOPE_SIGNAL = 1, 2
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11
PR_SET_DUMPABLE = 4
LANDLOCK_SCOPES_ABI = 6
"""The first Landlock ABI that scopes signals and abstract unix sockets (Linux 6.12)."""
LOGS_INSIDE = "/run/agent-eval/logs"
"""Where the sandbox shows every slot's log folder; each slot keeps only its own."""

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Slot:
    """How one slot is confined: everything `confine` needs, sent to the zygote inside."""

    folder: str
    """The slot's folder: the same path inside and out (outside, a link to its descriptor)."""
    workspace_mb: int
    shm_mb: int
    logs: str
    """The slot's log folder's name in LOGS_INSIDE, bound at ``folder/logs``."""
    own_network: bool
    """A network namespace of its own (every network but the host's)."""
    relay_port: int | None = None
    """The loopback port to listen on for the model endpoint's relay, if any."""
    in_tmp: tuple[str, ...] = ()
    """Read-only mounts in /tmp (a module agent's folder), relative to it, kept visible."""
    cwd: str | None = None
    """The working folder, when the sandbox shows the parent's; else the slot's folder."""
    shared: bool = True
    """Other slots share the sandbox, so a Landlock domain must keep them apart."""


def scopes_slots() -> bool:
    """Whether Landlock can keep slots that share a sandbox apart on this kernel."""
    return _landlock_version() >= LANDLOCK_SCOPES_ABI


@functools.cache  # asked by confine, so every copy forked after it knows without a syscall
def _landlock_version() -> int:
    """The Landlock ABI this kernel offers; below 1 when it offers none."""
    version: int = _libc.syscall(LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return version


def confine(slot: Slot, channel: int) -> None:
    """Confine this process to ``slot``, then send the parent, on the socket ``channel``,
    the folder's descriptor, the relay's listening sockets and this process's
    credentials. OSError names the step that failed."""
    uid, gid = os.getuid(), os.getgid()
    _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | (CLONE_NEWNET if slot.own_network else 0))
    _map_ids(uid, gid)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={slot.shm_mb}m,mode=1777")
    os.makedirs(slot.folder, exist_ok=True)  # in that /dev/shm, when the slots are there
    _mount("tmpfs", slot.folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={slot.workspace_mb}m")
    for name in ("tmp", "home", "logs"):
        os.mkdir(os.path.join(slot.folder, name))
    _bind(os.path.join(LOGS_INSIDE, slot.logs), os.path.join(slot.folder, "logs"))
    _mount("tmpfs", LOGS_INSIDE, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k")
    _private_tmp(os.path.join(slot.folder, "tmp"), slot.in_tmp)
    listeners: list[socket.socket] = []
    if slot.own_network:
        _loopback_up()
        if slot.relay_port is not None:  # before any agent code: the first call finds it open
            listeners = listen(slot.relay_port)
    _unshare(CLONE_NEWUSER | CLONE_NEWNS)  # locks every mount above in place
    _map_ids(uid, gid)
    if slot.shared:
        _landlock_domain()
    os.environ["HOME"] = os.path.join(slot.folder, "home")
    os.chdir(slot.cwd or slot.folder)
    _send_folder(channel, slot.folder, listeners)
    # a queue's name is all it takes to reach it, and no folder lists them to empty
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
    _drop_capabilities()
    if _landlock_version() < 1:  # no domain for a copy (seal_attempt): keep the worker
        _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # out of its copies' reach another way


def seal_attempt() -> None:
    """In a copy, before its attempt: a Landlock domain nested in the slot's, from which
    the attempt can neither trace nor write the memory of its worker (the state every
    later attempt starts from) or of the copy made ahead for the next attempt, nor,
    where Landlock scopes signals, signal them; the worker can still read and signal
    this copy. The domain must deny something: making block devices, which no agent
    needs. Without Landlock, `confine` made the worker, and so its copies, undumpable."""
    version = _landlock_version()
    if version >= LANDLOCK_SCOPES_ABI:
        _restrict_self(struct.pack("QQQ", LANDLOCK_ACCESS_FS_MAKE_BLOCK, 0, LANDLOCK_SCOPE_SIGNAL))
    elif version >= 1:
        _restrict_self(struct.pack("Q", LANDLOCK_ACCESS_FS_MAKE_BLOCK))


def forget_shared(folder: str) -> None:
    """In a copy about to run its attempt: remove what earlier attempts left in the
    slot's /dev/shm (all but the way to the slot's ``folder``, which may lie there) and
    its System V objects. Their processes are all gone by now."""
    way: list[str | None] = [None]  # the slot's folder lies elsewhere: empty it all
    if folder.startswith("/dev/shm/"):
        way = [*os.path.relpath(folder, "/dev/shm").split(os.sep)]
    here = "/dev/shm"
    for kept in way:
        with os.scandir(here) as entries:
            for entry in entries:
                if entry.name != kept:
                    _remove(entry.path)
        if kept is not None:
            here = os.path.join(here, kept)
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}", encoding="ascii") as table:
            next(table, None)  # the header
            for row in table:
                number = int(row.split()[1])
                if kind == "sem":
                    _libc.semctl(number, 0, IPC_RMID)
                else:
                    getattr(_libc, f"{kind}ctl")(number, IPC_RMID, None)


def _remove(path: str) -> None:
    """Remove ``path``, whatever its mode: its owner may change that, capability or not."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            return
        os.chmod(path, 0o700)
        with os.scandir(path) as entries:
            for entry in entries:
                _remove(entry.path)
        os.rmdir(path)
    except FileNotFoundError:
        pass


def _drop_capabilities() -> None:
    """Empty this process's capability sets. No program it runs regains any: bubblewrap
    set no_new_privs, under which even root's execve grants none."""
    header = struct.pack("Ii", LINUX_CAPABILITY_VERSION_3, 0)  # 0: this process
    if _libc.capset(header, bytes(24)) != 0:  # effective, permitted, inheritable: 0, twice
        _fail("capset")


def receive_folder(channel: socket.socket) -> tuple[int, int, list[socket.socket]]:
    """The parent's side of `confine`'s last step: the folder's descriptor, the slot
    process's pid here and the relay's listening sockets (none without a relay).
    ``channel`` must have SO_PASSCRED set before the slot sends."""
    fds = array.array("i")
    _, ancillary, _, _ = channel.recvmsg(
        1, socket.CMSG_SPACE(3 * fds.itemsize) + socket.CMSG_SPACE(struct.calcsize("3i"))
    )
    pid = None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        elif level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("3i", data[: struct.calcsize("3i")])[0]
    if pid is None or not fds:
        for fd in fds:
            os.close(fd)
        raise EOFError("the slot ended before it was confined")
    return fds[0], pid, [socket.socket(fileno=fd) for fd in fds[1:]]


def _send_folder(channel: int, folder: str, listeners: list[socket.socket]) -> None:
    """Send the folder and the listeners out, and keep neither: nothing the slot runs
    can accept the relay's connections."""
    handle = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    credentials = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
    fds = array.array("i", [handle, *(listener.fileno() for listener in listeners)])
    with socket.socket(fileno=os.dup(channel)) as sock:
        sock.sendmsg(
            [b"F"],
            [
                (socket.SOL_SOCKET, socket.SCM_RIGHTS, fds),
                (socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials),
            ],
        )
    os.close(handle)
    for listener in listeners:
        listener.close()


def _private_tmp(tmp: str, in_tmp: Sequence[str]) -> None:
    """/tmp becomes the slot's ``tmp``, with the mounts that were in /tmp bound at the
    same places in it (read-only still: a bind keeps its source's flags)."""
    for relative in in_tmp:
        place = os.path.join(tmp, relative)
        os.makedirs(place, exist_ok=True)
        _bind(os.path.join("/tmp", relative), place)
    _bind(tmp, "/tmp")


def _loopback_up() -> None:
    request = struct.pack("16sh22x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, request)


def _landlock_domain() -> None:
    """A Landlock domain that scopes signals and abstract unix sockets, and so, as every
    domain does, tracing and /proc access, to this slot."""
    scoped = LANDLOCK_SCOPE_SIGNAL | LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
    _restrict_self(struct.pack("QQQ", 0, 0, scoped))


def _restrict_self(attributes: bytes) -> None:
    """Enter a new Landlock domain, nested in this process's, of a ruleset with these
    attributes (struct landlock_ruleset_attr, as long as the fields given) and no rule."""
    ruleset = _libc.syscall(LANDLOCK_CREATE_RULESET, attributes, len(attributes), 0)
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    try:
        if _libc.syscall(LANDLOCK_RESTRICT_SELF, ruleset, 0) < 0:
            _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _unshare(flags: int) -> None:
    if _libc.unshare(flags) != 0:
        _fail("unshare")


def _map_ids(uid: int, gid: int) -> None:
    """The same uid and gid in the namespace just made as outside it."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
            handle.write(text)


def _bind(source: str, target: str) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    encoded = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    if _libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]) != 0:
        _fail(f"mount {target}")


def _fail(what: str) -> None:
    number = ctypes.get_errno()
    raise OSError(number, f"{what}: {os.strerror(number)}")
