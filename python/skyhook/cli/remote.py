"""skyhook serve: the store over Arrow Flight SQL, and the password hashes its
users file holds."""

from __future__ import annotations

import getpass
import logging
import signal
from pathlib import Path
from typing import Annotated, Optional

import typer

from skyhook.cli.app import DEFAULT_STORE, StoreOption, app, console, open_store
from skyhook.remote import Limits, password_hash, start_server


def _settings(context: typer.Context, path: Optional[Path]) -> Optional[Path]:
    """--config: a TOML file of serve's settings, named as its options are
    (query_timeout = 60); options given on the command line or in the
    environment (SKYHOOK_SERVE_<NAME>, SKYHOOK_STORE) win over the file."""
    if path is None:
        return None
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    try:
        settings = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise typer.BadParameter(f"cannot read {path}: {error}") from None
    known = sorted(parameter.name for parameter in context.command.params if parameter.name != "config")
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise typer.BadParameter(f"{path} names no setting {unknown[0]!r}; settings: {', '.join(known)}")
    context.default_map = {**(context.default_map or {}), **settings}
    return path


def _env(name: str) -> str:
    return f"SKYHOOK_SERVE_{name.upper()}"


@app.command()
def serve(
    store: StoreOption = DEFAULT_STORE,
    host: Annotated[
        str, typer.Option(envvar=_env("host"), help="The address to listen on (0.0.0.0: every interface).")
    ] = "localhost",
    port: Annotated[int, typer.Option(min=0, max=65535, envvar=_env("port"), help="The port (0: a free one).")] = 31337,
    users: Annotated[
        Optional[Path],
        typer.Option(envvar=_env("users"), help="A JSON file of user -> password hash (skyhook password-hash)."),
    ] = None,
    tls_certificate: Annotated[
        Optional[Path], typer.Option(envvar=_env("tls_certificate"), help="TLS: the server's certificate (PEM).")
    ] = None,
    tls_key: Annotated[
        Optional[Path], typer.Option(envvar=_env("tls_key"), help="TLS: the certificate's private key (PEM).")
    ] = None,
    query_timeout: Annotated[
        float, typer.Option(min=0.001, envvar=_env("query_timeout"), help="Seconds a query may run.")
    ] = 600.0,
    queries_per_user: Annotated[
        int, typer.Option(min=1, envvar=_env("queries_per_user"), help="Queries one user may run at once.")
    ] = 8,
    query_memory: Annotated[
        str, typer.Option(envvar=_env("query_memory"), help="DuckDB's memory for all queries together.")
    ] = "4GB",
    result_bytes: Annotated[
        Optional[int],
        typer.Option(min=1, envvar=_env("result_bytes"), help="Bytes one query may stream (default: unbounded)."),
    ] = None,
    queue_timeout: Annotated[
        float,
        typer.Option(
            min=0, envvar=_env("queue_timeout"), help="Seconds a query waits for a user's free slot before refusal."
        ),
    ] = 10.0,
    compression: Annotated[
        str, typer.Option(envvar=_env("compression"), help="Codec of the batches streamed: zstd, lz4 or none.")
    ] = "none",
    config: Annotated[
        Optional[Path],
        typer.Option(
            is_eager=True,
            callback=_settings,
            envvar=_env("config"),
            help="A TOML file of these settings (query_timeout = 60); options and the environment win over it.",
        ),
    ] = None,
) -> None:
    """Serve the store over Arrow Flight SQL (read-only SQL, the datasets as tables) until interrupted."""
    with open_store(store) as source:
        limits = Limits(
            query_seconds=query_timeout,
            queries_per_user=queries_per_user,
            query_memory=query_memory,
            queue_seconds=queue_timeout,
            result_bytes=result_bytes,
        )
        codec = None if compression == "none" else compression
        server = start_server(source, host, port, users, tls_certificate, tls_key, limits, codec)
        scheme = "grpc+tls" if tls_certificate else "grpc"
        console.print(f"serving {source.uri} at {scheme}://{host}:{server.port}", markup=False, soft_wrap=True)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

        def stop(signal_number: int, frame: object) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)  # as Ctrl-C: running calls finish, then the server stops
        try:
            server.serve()
        except KeyboardInterrupt:
            server.shutdown()


@app.command("password-hash")
def password_hash_command() -> None:
    """Read a password (not echoed) and print its hash for serve's users file."""
    console.print(password_hash(getpass.getpass("password: ")), markup=False)
