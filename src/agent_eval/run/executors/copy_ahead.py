"""The pages an attempt's copy will write, copied before its attempt, while a core idles.

A copy of the built worker copies each page the first time it writes it: about 1,200
pages for a reference agent's attempt, some 3 ms on a 2-core machine, all in the
attempt's time. One attempt writes mostly the pages the next will (reference counts of
the same objects, the same allocator pools), so the worker reads them off one copy,
stopped after its answer (`written_ranges`), and every later spare copies them while it
waits for its attempt (`copy_ahead`). That is the same work done earlier, plus the
pages an attempt did not need: worth it only where a core would otherwise be idle
(fewer slots than cores), never at full concurrency.

Linux only (/proc/PID/pagemap, MADV_POPULATE_WRITE since 5.14); elsewhere nothing is
learned and nothing is copied ahead.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from collections.abc import Sequence
from errno import EINVAL
from functools import cache
from typing import Any

PAGE = mmap.PAGESIZE
PRESENT, EXCLUSIVE = 1 << 63, 1 << 56
"""pagemap bits: the page is in memory; only this process maps it (it was written)."""
MADV_POPULATE_WRITE = 23
SPECIAL = ("[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]")

Ranges = Sequence[tuple[int, int]]
"""(start address, length in bytes) of runs of pages."""


def written_ranges(pid: int) -> list[tuple[int, int]]:
    """The runs of pages in process ``pid``'s private writable memory that it alone
    maps: what it wrote since its fork (and what its parent wrote since, a few pages);
    empty where /proc cannot tell."""
    found: list[tuple[int, int]] = []
    try:
        with (
            open(f"/proc/{pid}/maps", encoding="ascii") as maps,
            open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pagemap,
        ):
            for line in maps:
                fields = line.split()
                if fields[1][1] != "w" or fields[1][3] != "p" or fields[-1] in SPECIAL:
                    continue
                start, end = (int(address, 16) for address in fields[0].split("-"))
                pagemap.seek(start // PAGE * 8)
                entries = pagemap.read((end - start) // PAGE * 8)
                found += _runs(start, struct.unpack(f"{len(entries) // 8}Q", entries))
    except (OSError, ValueError):
        return []
    if found:
        _madvise()  # looked up here, in the worker, so that no copy pays for it
    return found


def _runs(start: int, entries: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    first = None
    for index, entry in enumerate((*entries, 0)):
        mine = entry & PRESENT and entry & EXCLUSIVE
        if mine and first is None:
            first = index
        elif not mine and first is not None:
            runs.append((start + first * PAGE, (index - first) * PAGE))
            first = None
    return runs


@cache
def _madvise() -> Any:
    """libc's madvise, looked up once."""
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return madvise


def copy_ahead(ranges: Ranges) -> None:
    """Copy now the pages of ``ranges`` this process shares with its parent, as a first
    write would; a range no longer mapped, or a kernel without the advice, is skipped."""
    if not ranges:
        return
    madvise = _madvise()
    for start, length in ranges:
        if madvise(start, length, MADV_POPULATE_WRITE) != 0 and ctypes.get_errno() == EINVAL:
            return  # a kernel older than 5.14
