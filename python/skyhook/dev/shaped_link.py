"""A network link that costs something: a network namespace for the storage
daemons, joined to this host by a veth pair whose two ends are shaped with tbf
(the kernel here has tbf, not netem). On one host every byte otherwise
crosses loopback for free, which hides what pushdown is for. Needs root.

    link = ShapedLink("skyhook-net")
    link.up(rate_mbit=1000)          # namespace + veth + tbf both ways
    LocalCluster(dir).up(address=link.storage_address, netns=link.namespace)
    link.set_rate(10_000)            # reshape without restarting anything
    link.down()                      # removes the namespace and the pair
"""

from __future__ import annotations

import os
import shutil
import subprocess

from skyhook.errors import SkyhookError

# A private /30 unlikely to be in use on a test machine (10.213.SUBNET.0/30).
_ADDRESS = "10.213.{subnet}.{host}"


class ShapedLinkError(SkyhookError):
    pass


class ShapedLink:
    def __init__(self, namespace: str = "skyhook-net", subnet: int = 77) -> None:
        """Two links on one host need their own namespace and subnet (0-255)."""
        self.namespace = namespace
        self.client_address = _ADDRESS.format(subnet=subnet, host=1)
        self.storage_address = _ADDRESS.format(subnet=subnet, host=2)
        # Interface names are at most 15 characters.
        self._host_end = f"{namespace[:10]}-h"
        self._storage_end = f"{namespace[:10]}-s"

    def up(self, rate_mbit: int) -> None:
        if os.geteuid() != 0:
            raise ShapedLinkError("a shaped link needs root (network namespaces, veth and tc)")
        if shutil.which("ip") is None or shutil.which("tc") is None:
            raise ShapedLinkError("a shaped link needs iproute2 (ip, tc)")
        self.down()
        self._ip("netns", "add", self.namespace)
        self._ip("link", "add", self._host_end, "type", "veth", "peer", "name", self._storage_end)
        self._ip("link", "set", self._storage_end, "netns", self.namespace)
        self._ip("addr", "add", f"{self.client_address}/30", "dev", self._host_end)
        self._ip("link", "set", self._host_end, "up")
        self._in_namespace("ip", "addr", "add", f"{self.storage_address}/30", "dev", self._storage_end)
        self._in_namespace("ip", "link", "set", self._storage_end, "up")
        self._in_namespace("ip", "link", "set", "lo", "up")  # the daemons talk to each other here
        self.set_rate(rate_mbit)

    def set_rate(self, rate_mbit: int) -> None:
        """Shapes both directions: requests host -> storage, replies storage -> host."""
        # Enough burst for one 64 KiB GSO segment and a 4 ms timer tick at this rate.
        burst = max(rate_mbit * 1_000_000 // 8 // 250, 128 * 1024)
        shape = ["qdisc", "replace", "dev"]
        tbf = ["root", "tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "50ms"]
        self._run("tc", *shape, self._host_end, *tbf)
        self._in_namespace("tc", *shape, self._storage_end, *tbf)

    def down(self) -> None:
        """Removes the namespace (and with it both ends of the pair); no error if absent."""
        subprocess.run(["ip", "netns", "delete", self.namespace], capture_output=True)
        subprocess.run(["ip", "link", "delete", self._host_end], capture_output=True)

    def command_prefix(self) -> list[str]:
        """Runs a command inside the storage namespace."""
        return ["ip", "netns", "exec", self.namespace]

    def _in_namespace(self, *command: str) -> None:
        self._run(*self.command_prefix(), *command)

    def _ip(self, *arguments: str) -> None:
        self._run("ip", *arguments)

    @staticmethod
    def _run(*command: str) -> None:
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise ShapedLinkError(f"{' '.join(command)} failed: {result.stderr.strip()}")
