"""Trajectory files: one JSON-lines file per attempt."""
