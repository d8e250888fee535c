"""A self-signed TLS certificate for localhost, made with openssl, for the servers tests start."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(certificate, key), PEM files in directory."""
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
