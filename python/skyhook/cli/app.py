"""The command line's application: its commands' common options, the store
they open, and the one place where a mistake becomes one line on stderr and
an exit code (2 for wrong usage, 130 for Ctrl-C, 1 for the rest), never a traceback."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Annotated, Any

import pyarrow as pa
import typer
from rich.console import Console
from typer.core import TyperGroup

import skyhook
from skyhook.errors import SkyhookError, SkyhookWarning, StoreNotFoundError, first_line
from skyhook.ingest.garbage_collection import DEFAULT_RETENTION_SECONDS


class _Interrupted(Exception):
    """Ctrl-C, carried past typer (which would turn it into a silent exit)."""


class _Commands(TyperGroup):
    """Runs a command and turns whatever a user's mistake raises into one line."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: object) -> Any:
        extra["standalone_mode"] = False
        warnings.showwarning = _warn
        try:
            code = super().main(args, prog_name, **extra)
        except _Interrupted:
            _fail("interrupted", 130)
        except typer.Abort:
            _fail("aborted", 1)
        except typer.TyperException as error:  # wrong usage, as click words it
            context = getattr(error, "ctx", None)
            hint = f" (see {context.command_path} --help)" if context is not None else ""
            message = error.format_message().strip() or "missing command"  # the help was just printed
            _fail(message + hint, getattr(error, "exit_code", 2))
        except (SkyhookError, OSError, pa.ArrowException) as error:
            _fail(first_line(error), 1)
        except Exception as error:  # a bug, not the user's mistake: say so, on one line
            if os.environ.get("SKYHOOK_DEBUG"):
                raise
            _fail(f"internal error: {type(error).__name__}: {first_line(error)} (SKYHOOK_DEBUG=1 shows where)", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _warn(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
    """skyhook's warnings as one line on stderr, as errors are; the libraries'
    own (not the user's to act on) only with SKYHOOK_DEBUG."""
    if issubclass(category, SkyhookWarning) or os.environ.get("SKYHOOK_DEBUG"):
        print(f"warning: {' '.join(str(message).split())}", file=sys.stderr)


def _fail(message: str, code: int) -> None:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(code)


app = typer.Typer(
    cls=_Commands,
    help="Skyhook: Arrow-native programmable storage.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


console = Console(highlight=False)


StoreOption = Annotated[
    str, typer.Option("--store", "-s", envvar="SKYHOOK_STORE", help="Store URI (file:///path or a directory).")
]


DEFAULT_STORE = "skyhook-store"


def open_store(
    store: str,
    create: bool = False,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
    link_bytes_per_second: float | None = None,
) -> skyhook.Store:
    try:
        return skyhook.connect(
            store, create=create, retention_seconds=retention_seconds, link_bytes_per_second=link_bytes_per_second
        )
    except StoreNotFoundError as error:
        raise StoreNotFoundError(
            f"{error} (a mistyped --store? `skyhook import DATASET FILE --store {store}` creates a store)"
        ) from None
