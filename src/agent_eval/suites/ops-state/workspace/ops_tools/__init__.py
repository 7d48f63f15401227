"""Small helpers used by the ledger-api ops scripts."""
