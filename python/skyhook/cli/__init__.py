"""The ``skyhook`` command line: one module per command group (datasets,
design, cluster, expression, remote), all commands of one application (app.py), where
every mistake a user can make ends as one line on stderr and a nonzero exit."""

from __future__ import annotations

from skyhook.cli import cluster, datasets, design, expression, remote  # noqa: F401 (each registers its commands)
from skyhook.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
