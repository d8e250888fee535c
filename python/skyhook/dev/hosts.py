"""Emulated hosts on one machine, for a dev cluster that spans several: each
host is a network namespace joined to the others through one bridge by a
veth pair shaped with tbf both ways (its own link rate), and a cgroup of its
own (a CPU quota, a memory budget, a freezer to stop it). The client gets a
namespace, link and cgroup of its own too, as do the monitor (control) and an
S3 gateway. Needs root; cgroup v1 (cpu, cpuacct, memory, freezer) and
iproute2.

What is emulated: link rates and each host's CPU and memory. What is not:
latency (this kernel has no netem), disks (every host's OSD writes to the same
file system), and the kernel's own network work, which no cgroup is charged
for and which shares the machine's cores with everything else.

    hosts = EmulatedHosts(HostsSpec(hosts=4, host_rate_mbit=1000, host_cpu=0.25))
    hosts.up()
    hosts.command_prefix("h2")        # run a command as host 2: its namespace and cgroups
    hosts.freeze("h2"); hosts.thaw("h2")
    hosts.cpu_seconds()               # {node: CPU seconds used so far}
    hosts.down()
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from skyhook.errors import SkyhookError

CGROUP_ROOT = Path("/sys/fs/cgroup")
_CONTROLLERS = ("cpu", "cpuacct", "memory", "freezer")
_PERIOD_US = 10_000
_MIN_QUOTA_US = 1_000
#: Nodes that are not storage hosts, and their host number on the bridge's subnet.
CLIENT, CONTROL, GATEWAY = "client", "control", "gateway"
_SPECIAL = {CLIENT: 2, CONTROL: 3, GATEWAY: 4}
_FIRST_HOST = 10  # host i is .(10 + i)
MAX_HOSTS = 64


class EmulatedHostsError(SkyhookError):
    """The emulated hosts could not be set up, changed or removed."""


@dataclass(frozen=True)
class HostsSpec:
    """The emulated machines: rates in Mbit/s, CPU in cores (0: no quota),
    memory in MiB (0: no budget). Saved with the cluster (cluster.json)."""

    hosts: int
    host_rate_mbit: int = 1000
    client_rate_mbit: int = 1000
    gateway_rate_mbit: int = 1000
    host_cpu: float = 0.0
    client_cpu: float = 0.0
    gateway_cpu: float = 0.0
    host_memory_mib: int = 1024
    prefix: str = "sky"  # names: PREFIX-br, PREFIX-h0 ..., PREFIX-client
    subnet: int = 214  # addresses 10.SUBNET.0.0/24; the bridge is .1

    def __post_init__(self) -> None:
        if not 1 <= self.hosts <= MAX_HOSTS:
            raise EmulatedHostsError(f"between 1 and {MAX_HOSTS} hosts, not {self.hosts}")
        if not 0 <= self.subnet <= 255:
            raise EmulatedHostsError(f"the subnet is a number 0-255, not {self.subnet}")
        if len(self.prefix) > 6 or not self.prefix.isalnum():
            raise EmulatedHostsError(f"the prefix is at most 6 letters or digits, not {self.prefix!r}")
        for name in ("host_rate_mbit", "client_rate_mbit", "gateway_rate_mbit"):
            if getattr(self, name) <= 0:
                raise EmulatedHostsError(f"{name} must be positive")
        for name in ("host_cpu", "client_cpu", "gateway_cpu", "host_memory_mib"):
            if getattr(self, name) < 0:
                raise EmulatedHostsError(f"{name} must not be negative")

    @property
    def host_names(self) -> list[str]:
        return [f"h{index}" for index in range(self.hosts)]

    @property
    def nodes(self) -> list[str]:
        return [CONTROL, GATEWAY, CLIENT, *self.host_names]

    def address(self, node: str) -> str:
        return f"10.{self.subnet}.0.{_host_number(node)}"

    @property
    def bridge_address(self) -> str:
        return f"10.{self.subnet}.0.1"

    def rate_mbit(self, node: str) -> int:
        return {CLIENT: self.client_rate_mbit, GATEWAY: self.gateway_rate_mbit}.get(node, self.host_rate_mbit)

    def cpu(self, node: str) -> float:
        return {CLIENT: self.client_cpu, GATEWAY: self.gateway_cpu, CONTROL: 0.0}.get(node, self.host_cpu)

    def memory_mib(self, node: str) -> int:
        return self.host_memory_mib if node.startswith("h") else 0

    def as_dict(self) -> dict:
        return asdict(self)


def _host_number(node: str) -> int:
    if node in _SPECIAL:
        return _SPECIAL[node]
    if node.startswith("h") and node[1:].isdigit():
        return _FIRST_HOST + int(node[1:])
    raise EmulatedHostsError(f"no emulated node {node!r}: h0, h1, ..., {', '.join(_SPECIAL)}")


class EmulatedHosts:
    def __init__(self, spec: HostsSpec) -> None:
        self.spec = spec
        self.bridge = f"{spec.prefix}-br"

    # -- the network and the cgroups -----------------------------------------

    def up(self) -> None:
        """Creates what is missing (idempotent): bridge, namespaces, shaped veths, cgroups."""
        _require_root_and_tools()
        if not _exists(["ip", "link", "show", self.bridge]):
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{self.spec.bridge_address}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for node in self.spec.nodes:
            self._node_up(node)

    def down(self) -> None:
        """Removes the namespaces, the bridge and the cgroups. A process still
        in a node's cgroups (a daemon that was starting when its cluster came
        down) is the node's own: it is thawed and killed first."""
        for node in self.spec.nodes:
            if self._cgroup("freezer", node).exists():
                self.thaw(node)  # a frozen process would never take its signal
            _kill_processes(self._cgroup("cpu", node))
            subprocess.run(["ip", "netns", "delete", self.namespace(node)], capture_output=True)
            subprocess.run(["ip", "link", "delete", self._outer_end(node)], capture_output=True)
            for directory in self._cgroups(node):
                _remove_cgroup(directory)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)
        for controller in _CONTROLLERS:
            _remove_cgroup(CGROUP_ROOT / controller / self._cgroup_parent)

    def namespace(self, node: str) -> str:
        _host_number(node)
        return f"{self.spec.prefix}-{node}"

    def command_prefix(self, node: str) -> list[str]:
        """Runs a command as node: inside its namespace, its process in its cgroups
        before the command starts (so every thread it makes is charged there)."""
        join = " && ".join(f'echo $$ > "{directory}/cgroup.procs"' for directory in self._cgroups(node))
        # nsenter, not `ip netns exec`: that mounts a /sys of its own, without the cgroups.
        network = f"--net=/run/netns/{self.namespace(node)}"
        return ["sh", "-c", f'{join} && exec nsenter {network} -- "$@"', "sh"]

    def set_rate(self, node: str, rate_mbit: int) -> None:
        """Reshapes node's link both ways without restarting anything."""
        if rate_mbit <= 0:
            raise EmulatedHostsError("a link rate must be positive")
        # Enough burst for one 64 KiB GSO segment and a 4 ms timer tick at this rate.
        burst = max(rate_mbit * 1_000_000 // 8 // 250, 128 * 1024)
        tbf = ["root", "tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "50ms"]
        _run("tc", "qdisc", "replace", "dev", self._outer_end(node), *tbf)  # toward the node
        _run("ip", "netns", "exec", self.namespace(node), "tc", "qdisc", "replace", "dev", "eth0", *tbf)

    def set_cpu(self, node: str, cores: float) -> None:
        """A CPU quota of cores (0: none)."""
        directory = self._cgroup("cpu", node)
        # A short period spreads a small quota evenly (a throttled host waits at most a
        # period); the kernel's least quota is 1 ms.
        period = max(_PERIOD_US, int(_MIN_QUOTA_US / cores) if cores > 0 else 0)
        (directory / "cpu.cfs_quota_us").write_text("-1")  # the period may not pass an old quota's bounds
        (directory / "cpu.cfs_period_us").write_text(str(period))
        (directory / "cpu.cfs_quota_us").write_text(str(int(cores * period) if cores > 0 else -1))

    # -- stopping a host ------------------------------------------------------

    def freeze(self, node: str) -> None:
        """Stops every process of node where it stands (they keep their state)."""
        self._set_freezer(node, "FROZEN")

    def thaw(self, node: str) -> None:
        self._set_freezer(node, "THAWED")

    def link_down(self, node: str) -> None:
        """Cuts node off the network (its processes go on)."""
        _run("ip", "link", "set", self._outer_end(node), "down")

    def link_up(self, node: str) -> None:
        _run("ip", "link", "set", self._outer_end(node), "up")

    # -- what the hosts used ------------------------------------------------

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds each node's processes have used since its cgroup was made."""
        return {
            node: int((self._cgroup("cpuacct", node) / "cpuacct.usage").read_text()) / 1e9 for node in self.spec.nodes
        }

    def link_bytes(self, node: str) -> tuple[int, int]:
        """(bytes node received, bytes it sent) over its link, as its outer end counted them."""
        statistics = Path(f"/sys/class/net/{self._outer_end(node)}/statistics")
        return int((statistics / "tx_bytes").read_text()), int((statistics / "rx_bytes").read_text())

    # -- helpers -----------------------------------------------------------

    def _node_up(self, node: str) -> None:
        namespace, outer = self.namespace(node), self._outer_end(node)
        if not Path(f"/run/netns/{namespace}").exists():
            subprocess.run(["ip", "link", "delete", outer], capture_output=True)  # a half-made pair
            _run("ip", "netns", "add", namespace)
            _run("ip", "link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            _run("ip", "link", "set", outer, "master", self.bridge)
            _run("ip", "link", "set", outer, "up")
            inside = ["ip", "netns", "exec", namespace]
            _run(*inside, "ip", "addr", "add", f"{self.spec.address(node)}/24", "dev", "eth0")
            _run(*inside, "ip", "link", "set", "eth0", "up")
            _run(*inside, "ip", "link", "set", "lo", "up")
        self.set_rate(node, self.spec.rate_mbit(node))
        for directory in self._cgroups(node):
            directory.mkdir(parents=True, exist_ok=True)
        self.set_cpu(node, self.spec.cpu(node))
        memory = self.spec.memory_mib(node)
        (self._cgroup("memory", node) / "memory.limit_in_bytes").write_text(str(memory << 20) if memory else "-1")

    def _set_freezer(self, node: str, state: str) -> None:
        directory = self._cgroup("freezer", node)
        (directory / "freezer.state").write_text(state)
        deadline = time.monotonic() + 10
        while (directory / "freezer.state").read_text().strip() != state:
            if time.monotonic() > deadline:
                raise EmulatedHostsError(f"{node} did not become {state.lower()} within 10 s")
            time.sleep(0.05)

    @property
    def _cgroup_parent(self) -> str:
        return f"skyhook-{self.spec.prefix}"

    def _cgroup(self, controller: str, node: str) -> Path:
        return CGROUP_ROOT / controller / self._cgroup_parent / node

    def _cgroups(self, node: str) -> list[Path]:
        return [self._cgroup(controller, node) for controller in _CONTROLLERS]

    def _outer_end(self, node: str) -> str:
        return f"{self.spec.prefix}-{node}"[:15]


def _require_root_and_tools() -> None:
    if os.geteuid() != 0:
        raise EmulatedHostsError("emulated hosts need root (network namespaces, veth, tc, cgroups)")
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        raise EmulatedHostsError(f"emulated hosts need iproute2 ({', '.join(missing)} missing)")
    absent = [controller for controller in _CONTROLLERS if not (CGROUP_ROOT / controller / "tasks").exists()]
    if absent:
        raise EmulatedHostsError(f"emulated hosts need cgroup v1 controllers mounted: {', '.join(absent)}")


def _kill_processes(directory: Path, timeout: float = 10) -> None:
    """Kills every process in a cgroup and waits until it holds none."""
    processes = directory / "cgroup.procs"
    deadline = time.monotonic() + timeout
    while processes.exists() and (pids := processes.read_text().split()):
        if time.monotonic() > deadline:
            raise EmulatedHostsError(f"processes {', '.join(pids)} in {directory} did not end within {timeout:g} s")
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _remove_cgroup(directory: Path) -> None:
    if directory.exists():
        try:
            directory.rmdir()  # a cgroup directory goes with rmdir, its files with it
        except OSError as error:
            raise EmulatedHostsError(f"cannot remove {directory} (processes left in it?): {error}") from None


def _exists(command: list[str]) -> bool:
    return subprocess.run(command, capture_output=True).returncode == 0


def _run(*command: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise EmulatedHostsError(f"{' '.join(command)} failed: {result.stderr.strip()}")
