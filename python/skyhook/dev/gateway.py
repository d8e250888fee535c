"""An S3 gateway for the dev cluster: Debian's radosgw (Ceph's RGW), the
baseline Ceph users run today (Parquet files in a bucket, read by DuckDB or
pyarrow). It runs as a daemon of the cluster (stopped with it), on the
gateway node when the cluster has emulated hosts, with one S3 user whose keys
and port are kept in the cluster directory (gateway.json).

    endpoint = Gateway(LocalCluster(dir)).up()   # S3Endpoint(url, access_key, secret_key)
    before = gateway.traffic(); ...; gateway.traffic() - before   # bytes RGW served
"""

from __future__ import annotations

import json
import secrets
import socket
import time
import urllib.error
import urllib.request
from dataclasses import asdict, astuple, dataclass
from pathlib import Path

from skyhook.dev.cluster import ClusterError, LocalCluster, port_free
from skyhook.dev.hosts import GATEWAY

NAME = "rgw.gw"
ENTITY = f"client.{NAME}"
USER = "skyhook"
DEFAULT_PORT = 7480
_PORTS_TRIED = 100


@dataclass(frozen=True)
class S3Endpoint:
    url: str  # http://ADDRESS:PORT
    access_key: str
    secret_key: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Traffic:
    """RGW's own counters (perf dump): what it served, whoever asked."""

    requests: int
    gets: int  # object reads, ranged or whole
    get_bytes: int  # the bodies of those reads
    puts: int
    put_bytes: int

    def __sub__(self, before: Traffic) -> Traffic:
        return Traffic(*(now - then for now, then in zip(astuple(self), astuple(before))))


class Gateway:
    def __init__(self, cluster: LocalCluster, port: int | None = None) -> None:
        """port None: the one it had, else 7480 or, on a loopback cluster, the next free one."""
        self.cluster = cluster
        self._keys = cluster.dir / "gateway.json"
        self.port = port or self._saved().get("port") or self._free_port(cluster.address(GATEWAY))

    def up(self, timeout: float = 120) -> S3Endpoint:
        """Starts the gateway (if not running) and returns its endpoint and user."""
        address = self.cluster.address(GATEWAY)
        running = self.cluster.pid(NAME) is not None
        if running and self._saved().get("port") not in (None, self.port):
            raise ClusterError(f"the gateway runs on port {self._saved()['port']}: stop it to move it")
        if not running and not port_free(self.port, address):
            # Another gateway there would answer for this one.
            raise ClusterError(f"port {self.port} of {address} is in use: give the gateway another")
        self._add_key()
        self._save(port=self.port)
        log = self.cluster.dir / "log"
        self.cluster.start_daemon(
            NAME,
            [
                "radosgw",
                "-n",
                ENTITY,
                f"--rgw_frontends=beast endpoint={address}:{self.port}",
                f"--rgw_data={self.cluster.dir / NAME}",
                f"--log_file={log / (NAME + '.log')}",
                f"--admin_socket={self._admin_socket}",
                # The baseline's readers ask for many ranges at once; a thread serves each.
                "--rgw_thread_pool_size=128",
            ],
            node=GATEWAY,
        )
        url = f"http://{address}:{self.port}"
        self._wait_answering(url, timeout)
        return S3Endpoint(url, *self._user())

    def down(self) -> None:
        self.cluster.stop_daemon(NAME)

    def traffic(self) -> Traffic:
        """What the running gateway has served since it started (its admin socket)."""
        rgw = self._admin_command("perf dump")["rgw"]
        return Traffic(rgw["req"], rgw["get"], rgw["get_b"], rgw["put"], rgw["put_b"])

    @property
    def _admin_socket(self) -> Path:
        return self.cluster.dir / "run" / (NAME + ".asok")

    def _admin_command(self, prefix: str, timeout: float = 10) -> dict:
        """Asks the admin socket (a JSON command, NUL-terminated; a 4-byte big-endian length, then JSON)."""
        try:
            with socket.socket(socket.AF_UNIX) as connection:
                connection.settimeout(timeout)
                connection.connect(str(self._admin_socket))
                connection.sendall(json.dumps({"prefix": prefix}).encode() + b"\0")
                reply = b""
                while chunk := connection.recv(1 << 16):
                    reply += chunk
        except OSError as error:
            raise ClusterError(f"the gateway's admin socket did not answer {prefix!r}: {error}") from None
        if len(reply) < 4 or len(reply) - 4 != int.from_bytes(reply[:4], "big"):
            raise ClusterError(f"the gateway's admin socket answered {prefix!r} with {len(reply)} bytes")
        return json.loads(reply[4:])

    def _add_key(self) -> None:
        """The gateway's cephx key, in the cluster's keyring (once)."""
        if f"[{ENTITY}]" in self.cluster.keyring.read_text():
            return
        self.cluster.ceph("auth", "get-or-create", ENTITY, "mon", "allow rw", "osd", "allow rwx")
        key = self.cluster.ceph("auth", "get", ENTITY)
        with self.cluster.keyring.open("a") as keyring:
            keyring.write("\n" + key)
        (self.cluster.dir / NAME).mkdir(exist_ok=True)

    def _user(self) -> tuple[str, str]:
        """The S3 user's keys, made once."""
        saved = self._saved()
        if "access_key" in saved:
            return saved["access_key"], saved["secret_key"]
        access, secret = secrets.token_hex(10).upper(), secrets.token_urlsafe(30)
        self.cluster.run_tool(
            "radosgw-admin",
            "user",
            "create",
            f"--uid={USER}",
            "--display-name=skyhook",
            f"--access-key={access}",
            f"--secret={secret}",
        )
        self._save(access_key=access, secret_key=secret)
        return access, secret

    def _saved(self) -> dict:
        return json.loads(self._keys.read_text()) if self._keys.exists() else {}

    def _save(self, **values: str | int) -> None:
        self._keys.write_text(json.dumps({**self._saved(), **values}))

    @staticmethod
    def _free_port(address: str) -> int:
        for port in range(DEFAULT_PORT, DEFAULT_PORT + _PORTS_TRIED):
            if port_free(port, address):
                return port
        raise ClusterError(f"no free port for the gateway on {address} in {DEFAULT_PORT}..{port}")

    def _wait_answering(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5):
                    return
            except urllib.error.HTTPError:
                return  # an S3 answer (anonymous requests may be refused)
            except (urllib.error.URLError, socket.timeout, ConnectionError) as error:
                if self.cluster.pid(NAME) is None:
                    raise ClusterError(f"radosgw exited; see {self.cluster.dir / 'log' / (NAME + '.log')}") from None
                if time.monotonic() > deadline:
                    raise ClusterError(f"radosgw did not answer at {url} within {timeout:.0f} s: {error}") from None
                time.sleep(0.5)
