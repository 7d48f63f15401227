"""What a fresh copy of a process costs on this machine, whatever runs in it.

An attempt's copy is a fork of the built worker: the kernel copies the worker's page
tables, every page the copy writes is then copied (copy-on-write), and the copy's exit
unmaps it all. This prints each of those costs, measured from Python on anonymous
memory (no interpreter objects involved), so the floor under `--isolation attempt` can
be read off for any worker size and any number of pages an attempt writes:

- fork + exit of a process holding N MB of written anonymous memory, in CPU ms (parent
  and child together, from rusage), for a few N;
- one copy-on-write fault, in µs: the child writes one byte in each of K shared pages;
- one fault of a fresh page (first write after mmap), for comparison;
- what a bare fork's child writes before its first line runs, in pages, with and
  without the `threading` module's at-fork handler (which every worker has).

    .venv/bin/python benchmarks/fork_cost.py [--forks 200] [--pages 2000]
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import subprocess
import sys
import time

PAGE = mmap.PAGESIZE


def cpu_seconds() -> float:
    """CPU of this process and of its reaped children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def written(megabytes: int) -> mmap.mmap:
    """An anonymous private mapping of ``megabytes``, every page written once."""
    memory = mmap.mmap(-1, megabytes << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, len(memory), PAGE):
        memory[offset] = 1
    return memory


def fork_exit_ms(megabytes: int, forks: int) -> float:
    """CPU ms of one fork whose child exits at once, with ``megabytes`` mapped."""
    memory = written(megabytes)
    start = cpu_seconds()
    for _ in range(forks):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    memory.close()
    return (cpu_seconds() - start) / forks * 1000


def copy_on_write_us(pages: int, rounds: int = 5) -> float:
    """µs per page a child writes in memory it shares with its parent (median round)."""
    memory = written(max(1, pages * PAGE >> 20) + 1)
    times = []
    for _ in range(rounds):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            begin = time.perf_counter()
            for page in range(pages):
                memory[page * PAGE] = 2
            os.write(write, str(time.perf_counter() - begin).encode())
            os._exit(0)
        os.close(write)
        times.append(float(os.read(read, 64)))
        os.close(read)
        os.waitpid(pid, 0)
    memory.close()
    return sorted(times)[len(times) // 2] / pages * 1e6


def fresh_page_us(pages: int) -> float:
    """µs per page on its first write after mmap (a zero-filled page)."""
    memory = mmap.mmap(-1, pages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    begin = time.perf_counter()
    for page in range(pages):
        memory[page * PAGE] = 1
    elapsed = time.perf_counter() - begin
    memory.close()
    return elapsed / pages * 1e6


CHILD_FAULTS = """
import os, resource, sys
if sys.argv[1] == "threading":
    import threading
resource.getrusage(resource.RUSAGE_SELF)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, str(resource.getrusage(resource.RUSAGE_SELF).ru_minflt).encode())
    os._exit(0)
os.close(write)
print(os.read(read, 64).decode())
os.waitpid(pid, 0)
"""


def first_line_faults(module: str) -> int:
    """Page faults of a fresh interpreter's fork before its child's first line returns."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", CHILD_FAULTS, module], capture_output=True, text=True
    )
    return int(done.stdout.strip())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--forks", type=int, default=200, help="Forks per size (default 200).")
    parser.add_argument(
        "--pages", type=int, default=2000, help="Pages written per fault measure (default 2000)."
    )
    args = parser.parse_args(argv)
    if args.forks < 1 or args.pages < 1:
        parser.error("--forks and --pages take a number of at least 1")
    print(f"{os.cpu_count()} cpus, python {sys.version.split()[0]}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    for megabytes in (1, 10, 30):
        cost = fork_exit_ms(megabytes, args.forks)
        print(f"fork + exit with {megabytes:>2} MB written:  {cost:6.3f} ms CPU")
    print(f"copy-on-write fault:              {copy_on_write_us(args.pages):6.2f} µs a page")
    print(f"fresh page, first write:          {fresh_page_us(args.pages):6.2f} µs a page")
    bare, threaded = first_line_faults("none"), first_line_faults("threading")
    print(f"a fork's faults before its first line: {bare} bare, {threaded} with threading "
          f"imported (its at-fork handler)")  # fmt: skip


if __name__ == "__main__":
    main()
