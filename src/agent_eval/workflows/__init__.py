"""Workflows of several runs, between ``run`` and ``cli``: the duel, the sweep, the audit
and rescoring, one module each."""
