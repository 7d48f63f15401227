"""The kernel sandbox that keeps what is measured away from the measurement.

Attempts (run/) and state checks (score/) run their processes in bubblewrap: the system
read-only, only the given folders writable, the user's files and the run's own files
hidden, an allow-listed environment, a PID namespace that dies with its first process,
and a network namespace in which only the model endpoint answers, through our relay.
This package knows nothing of agents or runs: it builds sandboxes and relays bytes.

Its modules: ``bwrap`` builds and probes sandboxes, ``relay`` carries the model endpoint
into them, ``inside`` is a sandbox's first program when it does, ``pids`` bounds a
sandbox's processes for root too, and ``reaper`` ends every process below one (used
with and without a sandbox). The package itself imports nothing, so a worker that
needs only the reaper loads only the reaper.
"""
