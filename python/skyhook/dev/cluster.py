"""A real Ceph cluster on this machine, started by the project itself: one
monitor, one manager and N OSDs on 127.0.0.1 under one directory, cephx on,
no systemd or containers. The OSDs load the skyhook object class. Beside
them runs a transform worker (``skyhook worker`` on the pool's default
namespace): the storage tier's driver of distributed transforms, stopped
with the cluster, its log in ``log/worker.log``.

Everything lives in the cluster directory: ceph.conf, the keyring, daemon
data, logs, admin sockets and ``cluster.json`` (ports, OSD ids, PIDs). Only
the PIDs recorded there are ever signalled.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

from skyhook.dev.hosts import CONTROL, EmulatedHosts, HostsSpec
from skyhook.errors import SkyhookError

POOL = "skyhook"
DISTRO_CLASS_DIR = Path("/usr/lib/x86_64-linux-gnu/rados-classes")
# The object class is installed beside the package (CMake: DESTINATION skyhook).
SKYHOOK_CLASS = Path(__file__).parent.parent / "libcls_skyhook.so"
REQUIRED_COMMANDS = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "ceph-authtool", "monmaptool")
WORKER = "worker"
SERVER = "serve"  # skyhook serve, when started with the cluster
#: Seconds between the worker's polls for queued plans.
WORKER_INTERVAL = 2


ROLES = ("reader", "writer", "admin")
EMPTY_NAMESPACE = '""'  # how an OSD capability names the default namespace


class ClusterError(SkyhookError):
    """The local cluster could not be started, reached or stopped."""


#: The skyhook class's methods that only read (cpp/skyhook/storage/methods/method.h).
READ_METHODS = ("scan", "describe", "execute_plan", "secondary_design", "transform_check")


def role_capabilities(role: str, pool: str = POOL, namespace: str | None = None) -> dict[str, str]:
    """The least Ceph capabilities a skyhook user needs, per daemon type (README, "Ceph").
    A reader scans and aggregates; a writer also writes and deletes datasets; an
    administrator manages the cluster. namespace None: every namespace of the pool."""
    scope = f"pool={pool}" if namespace is None else f"pool={pool} namespace={namespace or EMPTY_NAMESPACE}"
    # The class grant carries the scope too: an unscoped `allow class skyhook` lets its
    # methods read objects of every pool and namespace (class calls need no `r`).
    skyhook_class = f"allow {scope} class skyhook"
    if role == "reader":
        # Granted method by method: a class grant lets its methods write (transform) without `w`.
        methods = ", ".join(f"{skyhook_class} {method}" for method in READ_METHODS)
        return {"mon": "allow r", "osd": f"allow r {scope}, {methods}"}
    if role == "writer":
        return {"mon": "allow r", "osd": f"allow rw {scope}, {skyhook_class}"}
    if role == "admin":
        return {"mon": "allow *", "osd": "allow *", "mgr": "allow *"}
    raise ClusterError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")


@dataclass
class ClusterState:
    fsid: str
    port: int
    store: str
    osds: dict[str, str] = field(default_factory=dict)  # id -> uuid
    pids: dict[str, int] = field(default_factory=dict)  # daemon name -> pid
    # The skyhook node limits in the OSDs' environment (SKYHOOK_MAX_CALL_MS=...).
    node_limits: dict[str, str] = field(default_factory=dict)
    # Where the daemons listen: loopback, or a shaped link's namespace (dev/shaped_link.py).
    address: str = "127.0.0.1"
    netns: str = ""
    # Emulated hosts (dev/hosts.py: a HostsSpec as a dict), and the node each daemon runs on.
    hosts: dict = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)  # daemon name -> node (h0, h1, ..., control)

    def emulated_hosts(self) -> EmulatedHosts | None:
        return EmulatedHosts(HostsSpec(**self.hosts)) if self.hosts else None

    def command_prefix(self, daemon: str = "") -> list[str]:
        """How daemon's command runs: as its emulated node, in the shaped link's namespace, or as is."""
        emulated = self.emulated_hosts()
        if emulated is not None:
            return emulated.command_prefix(self.nodes.get(daemon, CONTROL))
        return ["ip", "netns", "exec", self.netns] if self.netns else []


class LocalCluster:
    def __init__(self, directory: str | os.PathLike) -> None:
        self.dir = Path(directory).absolute()
        self.conf = self.dir / "ceph.conf"
        self.keyring = self.dir / "keyring"
        self._state_file = self.dir / "cluster.json"

    # -- public operations -------------------------------------------------

    @property
    def uri(self) -> str:
        return f"ceph://{POOL}?conf={self.conf}"

    def exists(self) -> bool:
        return self._state_file.exists()

    def up(
        self,
        osds: int = 3,
        store: str = "bluestore",
        port: int | None = None,
        timeout: float = 120,
        node_limits: dict[str, int] | None = None,
        address: str = "127.0.0.1",
        netns: str = "",
        worker: bool = True,
        hosts: HostsSpec | None = None,
        serve: int | None = None,
    ) -> str:
        """Create the cluster (first time) or start it again; returns the store URI.
        node_limits (a new cluster's) set the OSDs' skyhook limits, e.g.
        {"max_call_ms": 2000} for SKYHOOK_MAX_CALL_MS. A new cluster's daemons
        listen on address, run inside network namespace netns if one is given.
        hosts (a new cluster's): emulated hosts instead (dev/hosts.py), osds OSDs
        on each, host the failure domain; the monitor, manager and worker on a
        control node of their own. worker: start the transform worker beside
        the OSDs (if not running). serve: start skyhook serve (Flight SQL, no
        users: read-only) on this port of localhost (log: log/serve.log)."""
        _check_installed()
        if not SKYHOOK_CLASS.exists():
            raise ClusterError(
                f"{SKYHOOK_CLASS} is missing: build skyhook with Ceph's development "
                "packages installed (scripts/install-ceph.sh, then scripts/setup.sh)"
            )
        if self.exists():
            self._restart(timeout)
        else:
            self._create(osds, store, port, timeout, node_limits or {}, address, netns, hosts)
        if worker:
            self._start_worker()
        if serve is not None:
            self.start_server(serve)
        return self.uri

    def start_server(self, port: int, users: Path | None = None) -> str:
        """skyhook serve over the cluster's store on localhost:port (users: its
        users file; without one, read-only), beside the daemons; its address."""
        state, log = self._state(), self.dir / "log" / f"{SERVER}.log"
        address = f"grpc://localhost:{port}"
        if self._alive(state.pids.get(SERVER, 0)):
            return address
        earlier = log.stat().st_size if log.exists() else 0  # the log is appended to: only this start's lines
        command = [sys.executable, "-m", "skyhook.cli", "serve", "--store", self.uri, "--port", str(port)]
        self._start(state, SERVER, command + (["--users", str(users)] if users else []), ceph=False)
        self._save(state)
        deadline = time.monotonic() + 30
        while f"at {address}" not in log.read_bytes()[earlier:].decode(errors="replace"):
            if time.monotonic() > deadline or not self._alive(state.pids.get(SERVER, 0)):
                raise ClusterError(f"skyhook serve did not start; see {log}")
            time.sleep(0.1)
        return address

    def stop_server(self, timeout: float = 30) -> None:
        state = self._state()
        self._stop(state, SERVER, signal.SIGTERM, timeout)
        self._save(state)

    def down(self, timeout: float = 30) -> None:
        state = self._state()
        # The worker first (it needs the OSDs to stop cleanly), then the OSDs, then the rest.
        emulated = state.emulated_hosts()
        if emulated is not None:  # a frozen process would never see its signal
            for node in emulated.spec.nodes:
                emulated.thaw(node)
        for name in sorted(
            state.pids,
            key=lambda n: (n not in (WORKER, SERVER) and not n.startswith("rgw"), not n.startswith("osd"), n),
        ):
            self._stop(state, name, signal.SIGTERM, timeout)
        self._save(state)
        if emulated is not None:
            emulated.down()

    def hosts(self) -> EmulatedHosts:
        """The cluster's emulated hosts (a cluster made with hosts=...)."""
        emulated = self._state().emulated_hosts()
        if emulated is None:
            raise ClusterError(f"the cluster in {self.dir} has no emulated hosts (made without --hosts)")
        return emulated

    def stop_host(self, host: str, how: str = "freeze") -> None:
        """Stops an emulated host: its processes frozen where they stand, or its link down."""
        emulated = self.hosts()
        if host not in emulated.spec.host_names:
            raise ClusterError(f"there is no host {host!r}: {', '.join(emulated.spec.host_names)}")
        if how == "freeze":
            emulated.freeze(host)
        elif how == "link":
            emulated.link_down(host)
        else:
            raise ClusterError(f"a host stops by 'freeze' or 'link', not {how!r}")

    def start_host(self, host: str) -> None:
        """Brings a stopped host back (thawed, link up)."""
        emulated = self.hosts()
        if host not in emulated.spec.host_names:
            raise ClusterError(f"there is no host {host!r}: {', '.join(emulated.spec.host_names)}")
        emulated.link_up(host)
        emulated.thaw(host)

    def stop_osd(self, osd: int, kill: bool = False, timeout: float = 30) -> None:
        state = self._state()
        name = f"osd.{osd}"
        if str(osd) not in state.osds:
            raise ClusterError(f"there is no {name} in {self.dir}")
        self._stop(state, name, signal.SIGKILL if kill else signal.SIGTERM, timeout)
        self._save(state)

    def start_osd(self, osd: int, timeout: float = 60) -> None:
        state = self._state()
        if str(osd) not in state.osds:
            raise ClusterError(f"there is no osd.{osd} in {self.dir}")
        epoch = self._osdmap_epoch()
        self._install_classes()
        self._start(state, f"osd.{osd}", ["ceph-osd", "-i", str(osd)])
        self._save(state)
        self._wait_osds_up([osd], epoch, timeout)

    def start_daemon(self, name: str, command: list[str], node: str = CONTROL) -> int:
        """Starts a Ceph daemon of this cluster (its conf given, in the foreground),
        on an emulated node if the cluster has them; returns its PID (if already running, that)."""
        state = self._state()
        if self._alive(state.pids.get(name, 0)):
            return state.pids[name]
        state.nodes[name] = node
        self._start(state, name, command)
        self._save(state)
        return state.pids[name]

    def stop_daemon(self, name: str, timeout: float = 30) -> None:
        state = self._state()
        self._stop(state, name, signal.SIGTERM, timeout)
        self._save(state)

    def address(self, node: str = CONTROL) -> str:
        """Where a daemon on node listens: that emulated node's address, else the cluster's."""
        emulated = self._state().emulated_hosts()
        return emulated.spec.address(node) if emulated is not None else self._state().address

    def pid(self, name: str) -> int | None:
        pid = self._state().pids.get(name)
        return pid if pid and self._alive(pid) else None

    def osd_ids(self) -> list[int]:
        return sorted(int(osd) for osd in self._state().osds)

    def status(self) -> dict:
        state = self._state()
        names = sorted({"mon.a", "mgr.x", *(f"osd.{osd}" for osd in state.osds), *state.pids})
        daemons = {name: (state.pids[name] if self._alive(state.pids.get(name, 0)) else None) for name in names}
        report: dict = {
            "directory": str(self.dir),
            "uri": self.uri,
            "port": state.port,
            "store": state.store,
            "daemons": daemons,
        }
        if daemons.get("mon.a"):
            osd_map = self._ceph_json("osd", "dump", timeout=10)
            report["osds"] = {f"osd.{osd['osd']}": "up" if osd["up"] else "down" for osd in osd_map["osds"]}
            report["health"] = self._ceph_json("health", timeout=10).get("status")
        return report

    def primary_osd(self, object_name: str) -> int:
        mapping = self._ceph_json("osd", "map", POOL, object_name, timeout=20)
        return int(mapping["acting_primary"])

    def add_user(self, name: str, capabilities: dict[str, str]) -> Path:
        """Create client.NAME with exactly these capabilities (replacing those of an
        existing user) and return its keyring: connect with ``&user=NAME&keyring=PATH``."""
        keyring = self.dir / f"keyring.client.{name}"
        self.ceph("auth", "get-or-create", f"client.{name}")
        self.ceph("auth", "caps", f"client.{name}", *(item for pair in capabilities.items() for item in pair))
        self.ceph("auth", "get", f"client.{name}", "-o", str(keyring))
        return keyring

    def user_uri(self, name: str, keyring: Path, namespace: str | None = None) -> str:
        return (
            self.uri
            + (f"&namespace={quote(namespace)}" if namespace else "")
            + f"&user={quote(name)}&keyring={quote(str(keyring))}"
        )

    def ceph(self, *args: str, timeout: float = 30) -> str:
        """Run the ceph CLI against this cluster."""
        return self.run_tool("ceph", "--connect-timeout", str(int(timeout)), *args, timeout=timeout)

    def run_tool(self, tool: str, *args: str, timeout: float = 30) -> str:
        """Run a Ceph command-line tool (ceph, rados, radosgw-admin) against this cluster."""
        result = subprocess.run(
            [tool, "-c", str(self.conf), *args], capture_output=True, text=True, timeout=timeout + 10
        )
        if result.returncode != 0:
            raise ClusterError(f"{tool} {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    # -- creation ----------------------------------------------------------

    def _create(
        self,
        osds: int,
        store: str,
        port: int | None,
        timeout: float,
        node_limits: dict[str, int],
        address: str,
        netns: str,
        hosts: HostsSpec | None,
    ) -> None:
        if store not in ("bluestore", "memstore"):
            raise ClusterError(f"unknown object store {store!r}: use bluestore or memstore")
        if osds < 1:
            raise ClusterError("a cluster needs at least one OSD")
        if self.dir.exists() and any(self.dir.iterdir()):
            raise ClusterError(f"{self.dir} exists and is not a skyhook cluster directory")
        if hosts is not None:
            if netns:
                raise ClusterError("emulated hosts have namespaces of their own: give hosts or netns, not both")
            emulated = EmulatedHosts(hosts)
            emulated.up()
            address, osds = hosts.address(CONTROL), osds * hosts.hosts
        # A namespace of its own has every port free.
        port = (port or 3300) if netns or hosts else self._free_port(port)
        for sub in ("run", "log", "mon.a", "mgr.x", "classes"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        state = ClusterState(
            fsid=str(uuid.uuid4()),
            port=port,
            store=store,
            node_limits={f"SKYHOOK_{name.upper()}": str(int(value)) for name, value in node_limits.items()},
            address=address,
            netns=netns,
            hosts=hosts.as_dict() if hosts else {},
        )
        self._write_conf(state, min(3, hosts.hosts if hosts else osds))
        self._tool(
            "ceph-authtool", "--create-keyring", str(self.keyring), "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"
        )
        self._tool(
            "ceph-authtool",
            str(self.keyring),
            "--gen-key",
            "-n",
            "client.admin",
            "--cap",
            "mon",
            "allow *",
            "--cap",
            "osd",
            "allow *",
            "--cap",
            "mgr",
            "allow *",
            "--cap",
            "mds",
            "allow *",
        )
        self._tool(
            "ceph-authtool",
            str(self.keyring),
            "--gen-key",
            "-n",
            "mgr.x",
            "--cap",
            "mon",
            "allow profile mgr",
            "--cap",
            "osd",
            "allow *",
            "--cap",
            "mds",
            "allow *",
        )
        monmap = self.dir / "monmap"
        self._tool(
            "monmaptool",
            "--create",
            "--fsid",
            state.fsid,
            "--addv",
            "a",
            f"[v2:{address}:{port},v1:{address}:{port + 1}]",
            str(monmap),
        )
        self._tool(
            "ceph-mon",
            "-c",
            str(self.conf),
            "--mkfs",
            "-i",
            "a",
            "--monmap",
            str(monmap),
            "--keyring",
            str(self.keyring),
        )
        self._save(state)
        self._start(state, "mon.a", ["ceph-mon", "-i", "a"])
        self._save(state)
        self._wait_for_monitor(timeout)
        self._start(state, "mgr.x", ["ceph-mgr", "-i", "x"])
        self._install_classes()
        epoch = self._osdmap_epoch()
        mkfs = []
        for _ in range(osds):
            osd_uuid = str(uuid.uuid4())
            secret = self._tool("ceph-authtool", "--gen-print-key").strip()
            secret_file = self.dir / "run" / f"osd-secret-{osd_uuid}.json"
            secret_file.write_text(json.dumps({"cephx_secret": secret}))
            osd = int(self.ceph("osd", "new", osd_uuid, "-i", str(secret_file)).strip())
            secret_file.unlink()
            self._tool("ceph-authtool", str(self.keyring), "--name", f"osd.{osd}", "--add-key", secret)
            (self.dir / f"osd.{osd}").mkdir()
            state.osds[str(osd)] = osd_uuid
            if hosts is not None:  # OSDs fill host after host
                state.nodes[f"osd.{osd}"] = hosts.host_names[(len(state.osds) - 1) * hosts.hosts // osds]
                self._write_conf(state, min(3, hosts.hosts))
            mkfs.append(
                subprocess.Popen(
                    [
                        *state.command_prefix(f"osd.{osd}"),
                        *("ceph-osd", "-c", str(self.conf), "-i", str(osd), "--mkfs", "--osd-uuid", osd_uuid),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        for process in mkfs:  # wait on the mkfs processes only, never a bare wait
            output, _ = process.communicate(timeout=timeout)
            if process.returncode != 0:
                raise ClusterError(f"ceph-osd --mkfs failed: {output.strip()[-2000:]}")
        self._save(state)
        for osd in state.osds:
            self._start(state, f"osd.{osd}", ["ceph-osd", "-i", osd])
        self._save(state)
        self._wait_osds_up([int(osd) for osd in state.osds], epoch, timeout)
        # Emulated hosts: about 8 placement groups per OSD; with fewer PGs than OSDs some
        # hosts serve no object. A one-host cluster keeps 8 (quick to peer).
        placement_groups = str(max(8, 1 << (8 * osds - 1).bit_length()) if hosts else 8)
        self.ceph("osd", "pool", "create", POOL, placement_groups, placement_groups, "replicated")
        self.ceph("osd", "pool", "application", "enable", POOL, "rados")
        self._wait_writable(timeout)

    def _write_conf(self, state: ClusterState, size: int) -> None:
        d = self.dir
        emulated = state.emulated_hosts()
        # Each emulated host's OSDs listen on its address and place themselves under it in CRUSH.
        osd_sections = "".join(
            f"\n[{daemon}]\npublic addr = {emulated.spec.address(node)}\ncluster addr = {emulated.spec.address(node)}\n"
            f"crush location = root=default host={node}\n"
            for daemon, node in state.nodes.items()
            if emulated is not None and daemon.startswith("osd.")
        )
        self.conf.write_text(f"""[global]
fsid = {state.fsid}
mon host = [v2:{state.address}:{state.port},v1:{state.address}:{state.port + 1}]
public addr = {state.address}
cluster addr = {state.address}
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = {self.keyring}
run dir = {d}/run
admin socket = {d}/run/$name.asok
log file = {d}/log/$name.log
pid file = {d}/run/$name.pid
mon data = {d}/$name
mgr data = {d}/$name
osd data = {d}/$name
osd objectstore = {state.store}
osd crush chooseleaf type = {1 if state.hosts else 0}
osd pool default size = {size}
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool delete = true
mon warn on pool no redundancy = false
mon osd min down reporters = 1
osd heartbeat interval = 2
osd heartbeat grace = 8
bluestore block create = true
bluestore block size = 8589934592
bluestore cache autotune = false
bluestore cache size = 134217728
memstore device bytes = 4294967296
osd fast shutdown = {"false" if state.store == "memstore" else "true"}
osd op num shards = 2
osd max write op reply len = 65536
osd op num threads per shard = 1
osd class dir = {d}/classes
osd class load list = *
osd class default list = *
mgr initial modules = iostat
auth allow insecure global id reclaim = false

[client]
admin socket =
log file = {d}/log/client.log
{osd_sections}""")

    def _install_classes(self) -> bool:
        """The OSDs' class directory: the distro's classes plus a copy of ours.
        True if our class changed (running OSDs still have the old one loaded)."""
        classes = self.dir / "classes"
        classes.mkdir(exist_ok=True)
        for library in DISTRO_CLASS_DIR.glob("libcls_*.so"):
            link = classes / library.name
            if not link.exists():
                link.symlink_to(library)
        target = classes / "libcls_skyhook.so"
        if target.exists() and target.read_bytes() == SKYHOOK_CLASS.read_bytes():
            return False
        temporary = classes / ".libcls_skyhook.so.new"
        shutil.copyfile(SKYHOOK_CLASS, temporary)
        temporary.replace(target)
        return True

    # -- restart -----------------------------------------------------------

    def _restart(self, timeout: float) -> None:
        state = self._state()
        emulated = state.emulated_hosts()
        if emulated is not None:
            emulated.up()  # the network and cgroups go with `down`
        if not self._alive(state.pids.get("mon.a", 0)):
            if not (state.netns or emulated):  # a namespace of its own has its ports free
                self._check_port_free(state.port)
            self._start(state, "mon.a", ["ceph-mon", "-i", "a"])
            self._save(state)
        self._wait_for_monitor(timeout)
        if not self._alive(state.pids.get("mgr.x", 0)):
            self._start(state, "mgr.x", ["ceph-mgr", "-i", "x"])
        if self._install_classes():
            # OSDs load classes at start: restart running ones for the rebuilt class.
            for osd in state.osds:
                self._stop(state, f"osd.{osd}", signal.SIGTERM, timeout)
        epoch = self._osdmap_epoch()
        stopped = [int(osd) for osd in state.osds if not self._alive(state.pids.get(f"osd.{osd}", 0))]
        for osd in stopped:
            self._start(state, f"osd.{osd}", ["ceph-osd", "-i", str(osd)])
        self._save(state)
        self._wait_osds_up(stopped, epoch, timeout)
        self._wait_writable(timeout)

    # -- daemons -----------------------------------------------------------

    def _start_worker(self) -> None:
        state = self._state()
        if self._alive(state.pids.get(WORKER, 0)):
            return
        command = [sys.executable, "-m", "skyhook.cli", WORKER, "--store", self.uri]
        self._start(state, WORKER, [*command, "--interval", str(WORKER_INTERVAL)], ceph=False)
        self._save(state)

    def _start(self, state: ClusterState, name: str, command: list[str], ceph: bool = True) -> None:
        """ceph: a Ceph daemon (given the conf, in the foreground, its stdout to
        log/NAME.stdout beside its own log); else a process whose output is its log, log/NAME.log."""
        log = open(self.dir / "log" / f"{name}.{'stdout' if ceph else 'log'}", "ab")
        environment = {
            **os.environ,
            "CEPH_CONF": str(self.conf),
            # Arrow in the OSD: the pool that returns memory best (measured).
            "ARROW_DEFAULT_MEMORY_POOL": "jemalloc",
            "PYTHONUNBUFFERED": "1",
            **state.node_limits,
        }
        process = subprocess.Popen(
            [*state.command_prefix(name), *command, *(["-c", str(self.conf), "-f"] if ceph else [])],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
        log.close()
        time.sleep(0.3)
        if process.poll() is not None:
            raise ClusterError(
                f"{name} exited at start (code {process.returncode}); see "
                f"{self.dir / 'log' / (name + '.stdout')} and {self.dir / 'log' / (name + '.log')}"
            )
        state.pids[name] = process.pid

    def _stop(self, state: ClusterState, name: str, how: signal.Signals, timeout: float) -> None:
        pid = state.pids.pop(name, None)
        if not pid or not self._alive(pid):
            return
        os.kill(pid, how)
        deadline = time.monotonic() + timeout
        while self._alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.1)

    def _alive(self, pid: int) -> bool:
        """True if pid is a daemon of this cluster (a recycled PID is not)."""
        if not pid:
            return False
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        zombie = stat.rsplit(")", 1)[1].split()[0] == "Z"
        if zombie:
            try:
                os.waitpid(pid, os.WNOHANG)  # reap our own child
            except ChildProcessError:
                pass
            return False
        conf = str(self.conf).encode()
        return any(conf in argument for argument in command)  # the worker has it inside its store URI

    # -- waiting -----------------------------------------------------------

    def _wait_for_monitor(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self._alive(self._state_pid("mon.a")):
                raise ClusterError(f"the monitor died; see {self.dir / 'log' / 'mon.a.log'}")
            try:
                self.ceph("mon", "stat", timeout=5)
                return
            except (ClusterError, subprocess.TimeoutExpired):
                if time.monotonic() > deadline:
                    raise ClusterError(f"the monitor did not answer within {timeout:.0f} s") from None
                time.sleep(0.5)

    def _osdmap_epoch(self) -> int:
        return int(self._ceph_json("osd", "dump")["epoch"])

    def _wait_osds_up(self, osds: list[int], after_epoch: int, timeout: float) -> None:
        """Up in an osdmap newer than after_epoch: a killed OSD still looks up in old maps."""
        deadline = time.monotonic() + timeout
        waiting = set(osds)
        while waiting:
            for osd in list(waiting):
                if not self._alive(self._state_pid(f"osd.{osd}")):
                    raise ClusterError(f"osd.{osd} died at start; see {self.dir / 'log' / f'osd.{osd}.log'}")
            dump = self._ceph_json("osd", "dump")
            for info in dump["osds"]:
                if info["osd"] in waiting and info["up"] and info["up_from"] > after_epoch:
                    waiting.discard(info["osd"])
            if waiting and time.monotonic() > deadline:
                raise ClusterError(f"OSDs {sorted(waiting)} did not come up within {timeout:.0f} s")
            if waiting:
                time.sleep(0.5)

    def _wait_writable(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            result = subprocess.run(
                ["rados", "-c", str(self.conf), "-p", POOL, "put", "_skyhook.probe", str(self.conf)],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"pool {POOL} is not writable: {result.stderr.strip()}")
            time.sleep(0.5)

    # -- helpers -----------------------------------------------------------

    def _ceph_json(self, *args: str, timeout: float = 30) -> dict:
        return json.loads(self.ceph(*args, "-f", "json", timeout=timeout))

    def _tool(self, *command: str) -> str:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise ClusterError(f"{command[0]} failed: {(result.stderr or result.stdout).strip()}")
        return result.stdout

    def _free_port(self, port: int | None) -> int:
        if port is not None:
            self._check_port_free(port)
            return port
        for candidate in range(3300, 3400, 2):
            if port_free(candidate) and port_free(candidate + 1):
                return candidate
        raise ClusterError("no free pair of ports between 3300 and 3400 for the monitor")

    @staticmethod
    def _check_port_free(port: int) -> None:
        for taken in (port, port + 1):
            if not port_free(taken):
                raise ClusterError(
                    f"port {taken} on 127.0.0.1 is taken (another cluster?); stop it or choose another port with --port"
                )

    def _state(self) -> ClusterState:
        if not self._state_file.exists():
            raise ClusterError(f"no skyhook cluster in {self.dir} (run: skyhook cluster up {self.dir})")
        return ClusterState(**json.loads(self._state_file.read_text()))

    def _state_pid(self, name: str) -> int:
        return self._state().pids.get(name, 0)

    def _save(self, state: ClusterState) -> None:
        temporary = self._state_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(asdict(state), indent=2))
        temporary.replace(self._state_file)


def port_free(port: int, address: str = "127.0.0.1") -> bool:
    """Whether port is free at address; an address not on this namespace (an
    emulated node's, a shaped link's) has its ports to itself."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as daemons bind: TIME_WAIT is no owner
        try:
            probe.bind((address, port))
        except OSError as error:
            return error.errno == errno.EADDRNOTAVAIL
    return True


def _check_installed() -> None:
    missing = [command for command in REQUIRED_COMMANDS if shutil.which(command) is None]
    if missing:
        raise ClusterError(f"Ceph is not installed (missing {', '.join(missing)}): run scripts/install-ceph.sh")
