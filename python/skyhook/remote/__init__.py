"""Remote access: an Arrow Flight SQL server over a store (skyhook serve), for
any Flight SQL client (ADBC drivers for Python, R, Go and C/C++, the Flight
SQL JDBC driver, DuckDB and Polars through ADBC)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skyhook.remote.auth import BasicTokenAuth, HeadersAuthenticate, password_hash, read_users, users_of
from skyhook.remote.server import FlightSqlServer, Limits
from skyhook.store import Store


def start_server(
    store: Store,
    host: str = "localhost",
    port: int = 0,
    users: dict[str, Any] | str | Path | None = None,
    tls_certificate: str | Path | None = None,
    tls_key: str | Path | None = None,
    limits: Limits = Limits(),
    compression: str | None = None,
) -> FlightSqlServer:
    """A running Flight SQL server over store (port 0: a free one; server.port
    tells). users: user -> password_hash(...) or {"password": ..., "role":
    "reader" | "writer"}, or a JSON file of them (None: no authentication, and
    no writes). With a certificate and key (PEM files), TLS. limits:
    each query's time, each user's queries at once. compression: the codec
    of the batches streamed ("zstd" or "lz4": fewer bytes on a slow link, more
    CPU at both ends; None: none)."""
    auth = None
    if users is not None:
        auth = (
            HeadersAuthenticate(),
            BasicTokenAuth(users_of(users) if isinstance(users, dict) else read_users(users)),
        )
    certificates = None
    scheme = "grpc"
    if tls_certificate is not None or tls_key is not None:
        if tls_certificate is None or tls_key is None:
            from skyhook.errors import InvalidRequestError

            raise InvalidRequestError("TLS needs both a certificate and its key")
        certificates = [(Path(tls_certificate).read_bytes(), Path(tls_key).read_bytes())]
        scheme = "grpc+tls"
    address = f"[{host}]" if ":" in host else host  # an IPv6 literal
    return FlightSqlServer(store, f"{scheme}://{address}:{port}", certificates, auth, limits, compression)


__all__ = ["FlightSqlServer", "Limits", "password_hash", "start_server"]
