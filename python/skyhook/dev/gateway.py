"""An S3 gateway for the dev cluster: Debian's radosgw (Ceph's RGW), the
baseline Ceph users run today (Parquet files in a bucket, read by DuckDB or
pyarrow). It runs as a daemon of the cluster (stopped with it), on the
gateway node when the cluster has emulated hosts, with one S3 user whose keys
are kept in the cluster directory (gateway.json).

    endpoint = Gateway(LocalCluster(dir)).up()   # S3Endpoint(url, access_key, secret_key)
"""

from __future__ import annotations

import json
import secrets
import socket
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass

from skyhook.dev.cluster import ClusterError, LocalCluster
from skyhook.dev.hosts import GATEWAY

NAME = "rgw.gw"
ENTITY = f"client.{NAME}"
USER = "skyhook"
DEFAULT_PORT = 7480


@dataclass(frozen=True)
class S3Endpoint:
    url: str  # http://ADDRESS:PORT
    access_key: str
    secret_key: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


class Gateway:
    def __init__(self, cluster: LocalCluster, port: int = DEFAULT_PORT) -> None:
        self.cluster = cluster
        self.port = port
        self._keys = cluster.dir / "gateway.json"

    def up(self, timeout: float = 120) -> S3Endpoint:
        """Starts the gateway (if not running) and returns its endpoint and user."""
        address = self.cluster.address(GATEWAY)
        self._add_key()
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
                f"--admin_socket={self.cluster.dir / 'run' / (NAME + '.asok')}",
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
        if self._keys.exists():
            keys = json.loads(self._keys.read_text())
            return keys["access_key"], keys["secret_key"]
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
        self._keys.write_text(json.dumps({"access_key": access, "secret_key": secret}))
        return access, secret

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
