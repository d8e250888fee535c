"""Who may call the server: HTTP Basic authentication against a users file of
salted PBKDF2 hashes, answered with a bearer token that later calls carry
(what Flight SQL clients do: ADBC, JDBC, pyarrow's basic-token auth).

The users file is JSON: {"alice": "<password_hash(...)>", "bob": {"password":
"<hash>", "role": "writer", "store": "<URI>"}}; a user is a reader unless made
a writer (writers may also load data into datasets), and works in the
server's store unless given one: a Ceph URI with a RADOS namespace and a Ceph
user of its own (ceph://POOL?conf=...&namespace=NS&user=NAME&keyring=...)
isolates the user's datasets and gives storage the user's own capabilities."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.flight as flight

from skyhook.errors import InvalidRequestError

_SCHEME = "pbkdf2_sha256"
_ITERATIONS = 200_000


def password_hash(password: str, iterations: int = _ITERATIONS) -> str:
    """A salted hash of password, as the users file keeps it."""
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"{_SCHEME}${iterations}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    try:
        scheme, iterations, salt, digest = stored.split("$")
        expected = bytes.fromhex(digest)
        computed = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(iterations))
    except ValueError:
        return False
    return scheme == _SCHEME and hmac.compare_digest(computed, expected)


ROLES = ("reader", "writer")


@dataclass(frozen=True)
class User:
    password_hash: str
    role: str = "reader"
    #: The store the user works in (a URI: a RADOS namespace and a Ceph user of its own); None: the server's.
    store: str | None = None


def read_users(path: str | Path) -> dict[str, User]:
    try:
        given = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise InvalidRequestError(f"cannot read the users file {path}: {error}") from None
    return users_of(given, str(path))


def users_of(given: object, where: str = "users") -> dict[str, User]:
    """Users from the file's form: name -> hash, or name -> {"password": hash,
    "role": reader|writer, "store": URI}."""
    if not isinstance(given, dict):
        raise InvalidRequestError(f"{where} must map user names to password hashes")
    users = {}
    for name, entry in given.items():
        if isinstance(entry, User):
            users[name] = entry
        elif isinstance(entry, str):
            users[name] = User(entry)
        elif (
            isinstance(entry, dict)
            and isinstance(entry.get("password"), str)
            and entry.get("role", "reader") in ROLES
            and isinstance(entry.get("store", ""), str)
        ):
            users[name] = User(entry["password"], entry.get("role", "reader"), entry.get("store"))
        else:
            raise InvalidRequestError(
                f"{where}: user {name!r} needs a password hash, a role of {', '.join(ROLES)} and at most a store URI"
            )
    return users


class BasicTokenAuth(flight.ServerMiddlewareFactory):
    """Basic credentials checked once, a bearer token for the calls after."""

    #: How long a token serves (a client logs in again after).
    TOKEN_SECONDS = 12 * 3600.0
    #: A hash to check unknown users' passwords against: they cost what known users' do.
    _DUMMY = password_hash("")

    def __init__(self, users: dict[str, User]) -> None:
        self.users = users
        self.tokens: dict[str, tuple[str, float]] = {}  # token -> (user, expiry)
        self.lock = threading.Lock()

    def start_call(self, info: flight.CallInfo, headers: dict[str, list[str]]) -> flight.ServerMiddleware:
        given = next(iter(headers.get("authorization", [])), "")
        scheme, _, value = given.partition(" ")
        now = time.monotonic()
        if scheme.lower() == "bearer":
            with self.lock:
                user, expiry = self.tokens.get(value, (None, 0.0))
            if user is not None and expiry > now:
                return Caller(user, self.users[user], None)
        elif scheme.lower() == "basic":
            user, password = _credentials(value)
            known = self.users.get(user)
            matches = password_matches(password, known.password_hash if known else self._DUMMY)
            if known is not None and matches:
                token = secrets.token_urlsafe(32)
                with self.lock:
                    self.tokens = {key: held for key, held in self.tokens.items() if held[1] > now}
                    self.tokens[token] = (user, now + self.TOKEN_SECONDS)
                return Caller(user, known, token)
        raise flight.FlightUnauthenticatedError("authentication required: a user name and password, or a valid token")


class HeadersAuthenticate(flight.ServerAuthHandler):
    """Lets the Handshake call through: the Authorization header authenticates
    it, and every call (BasicTokenAuth); the handshake's messages carry nothing."""

    def authenticate(self, outgoing: flight.ServerAuthSender, incoming: flight.ServerAuthReader) -> None:
        return None

    def is_valid(self, token: bytes) -> str:
        return ""


class Caller(flight.ServerMiddleware):
    """The authenticated user of a call, their role and store (and the token to send back after a Basic login)."""

    def __init__(self, user: str, entry: User, token: str | None) -> None:
        self.user = user
        self.role = entry.role
        self.store = entry.store
        self.token = token

    def sending_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}


def _credentials(value: str) -> tuple[str, str]:
    try:
        padded = value + "=" * (-len(value) % 4)  # some clients (Go's) leave the padding out
        user, _, password = base64.b64decode(padded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return "", ""
    return user, password
