"""Ingest: user data written as a dataset (sources, partitioning, encoding,
statistics, publishing)."""
