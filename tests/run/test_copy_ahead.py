"""A copy's written pages are found from outside it, and a later copy copies them ahead
without changing a byte (run/executors/copy_ahead.py)."""

from __future__ import annotations

import ctypes
import mmap
import os
import signal
from collections.abc import Callable

from agent_eval.run.executors.copy_ahead import PAGE, copy_ahead, written_ranges

PAGES = 64


def _stopped_child(memory: mmap.mmap, work: Callable[[], None]) -> int:
    """A fork that runs ``work``, then stops; its pid once it has stopped."""
    pid = os.fork()
    if pid == 0:
        try:
            work()
        finally:
            os.kill(os.getpid(), signal.SIGSTOP)
            os._exit(0)
    _, status = os.waitpid(pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    return pid


def _covered(ranges: list[tuple[int, int]], start: int) -> set[int]:
    """The page numbers of the mapping at ``start`` that ``ranges`` cover."""
    pages = {address + n * PAGE for address, length in ranges for n in range(length // PAGE)}
    return {page for page in range(PAGES) if start + page * PAGE in pages}


def _end(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_the_pages_a_copy_wrote_are_found_and_copied_ahead_unchanged() -> None:
    memory = mmap.mmap(-1, PAGES * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for page in range(PAGES):
        memory[page * PAGE] = page
    start = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    wrote = {3, 10, 11, 12, 40}

    def write() -> None:
        for page in wrote:
            memory[page * PAGE] = 200

    writer = _stopped_child(memory, write)
    try:
        learned = written_ranges(writer)
    finally:
        _end(writer)
    assert _covered(learned, start) == wrote  # what it wrote, and nothing it only read

    read, report = os.pipe()

    def ahead() -> None:
        copy_ahead(learned)
        unchanged = all(memory[page * PAGE] == page for page in range(PAGES))
        os.write(report, b"1" if unchanged else b"0")

    reader = _stopped_child(memory, ahead)
    try:
        copied = written_ranges(reader)
        assert os.read(read, 1) == b"1", "copying ahead changed what the copy holds"
    finally:
        _end(reader)
        os.close(read)
        os.close(report)
    assert _covered(copied, start) == wrote  # its own now, though it wrote none of them


def test_a_process_gone_or_unreadable_teaches_nothing() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert written_ranges(pid) == []
    copy_ahead([])  # nothing to do, and nothing fails
