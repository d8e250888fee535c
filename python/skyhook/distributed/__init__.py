"""Distributed transforms: rewriting a dataset across its objects (compact,
split, cluster by a key, filter-then-copy) as persisted, resumable plans of
steps that stream data from storage-side scans into new objects and commit
each group by compare-and-swap on the manifest."""
