"""Scoring: pure checks on an attempt, failure classes, and statistics.

The package imports none of its modules itself: an agent's worker uses ``copied`` alone
and so never loads the checks' pydantic records.
"""
