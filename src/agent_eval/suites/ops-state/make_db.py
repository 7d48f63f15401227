"""Write the ops-state suite's `workspace/ops.db`, the SQLite file its tasks change.

The database is committed as a binary file; this script is how it was made. Run it from
anywhere (`python make_db.py`) after changing the rows below, then bump the suite's
version, because the starting state of the database tasks has changed.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

SCHEMA = """
CREATE TABLE hosts (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    disk_gb INTEGER NOT NULL
);
CREATE TABLE backups (
    id INTEGER PRIMARY KEY,
    host TEXT NOT NULL REFERENCES hosts(name),
    day TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE incidents (
    id INTEGER PRIMARY KEY,
    opened TEXT NOT NULL,
    severity TEXT NOT NULL,
    summary TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'resolved'))
);
"""

HOSTS = [
    ("app-1", "app", 200),
    ("app-2", "app", 200),
    ("db-1", "database", 500),
    ("db-2", "database", 500),
    ("gw-1", "gateway", 100),
]
BACKUPS = [
    (1, "db-1", "Sunday", "02:00"),
    (2, "app-1", "Sunday", "03:30"),
    (3, "app-2", "Wednesday", "03:30"),
    (4, "gw-1", "Saturday", "04:00"),
]
INCIDENTS = [
    (5, "2025-02-11", "sev2", "gateway 502s after deploy", "resolved"),
    (6, "2025-02-20", "sev3", "slow ledger exports", "resolved"),
    (7, "2025-03-02", "sev2", "db-2 replication lag", "open"),
    (8, "2025-03-04", "sev3", "disk 85% full on app-2", "open"),
]


def build(path: Path) -> None:
    """Write a fresh database at ``path``, replacing any file there."""
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    connection = sqlite3.connect(partial)
    try:
        connection.executescript(SCHEMA)
        connection.executemany("INSERT INTO hosts VALUES (?, ?, ?)", HOSTS)
        connection.executemany("INSERT INTO backups VALUES (?, ?, ?, ?)", BACKUPS)
        connection.executemany("INSERT INTO incidents VALUES (?, ?, ?, ?, ?)", INCIDENTS)
        connection.commit()
        # Compact, so the committed file carries no free pages from the build.
        connection.execute("VACUUM")
    finally:
        connection.close()
    partial.replace(path)


def main() -> int:
    target = Path(__file__).resolve().parent / "workspace" / "ops.db"
    build(target)
    print(f"wrote {target.name} ({target.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
