"""``skyhook cluster ...``: a local Ceph cluster for development and tests
(emulated hosts, users, the S3 gateway)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table
from rich.text import Text

from skyhook.cli.app import app, console
from skyhook.errors import InvalidRequestError

cluster_app = typer.Typer(
    help="A local Ceph cluster (1 mon, 1 mgr, N OSDs) with the skyhook object class.", no_args_is_help=True
)


app.add_typer(cluster_app, name="cluster")


ClusterDir = Annotated[Path, typer.Argument(help="Cluster directory.")]


DEFAULT_CLUSTER_DIR = Path("skyhook-cluster")


NODE_LIMITS = (
    "max_call_ms",
    "max_call_memory_mb",
    "max_node_memory_mb",
    "max_reply_mb",
    "min_batch_size",
    "max_in_flight",
    "max_slice_cpu_ms",
)


@cluster_app.command("up")
def cluster_up(
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    osds: Annotated[
        Optional[int], typer.Option(help="Number of OSDs (new clusters): 3, or with --hosts 1 on each host.")
    ] = None,
    store: Annotated[str, typer.Option(help="bluestore (survives restarts) or memstore.")] = "bluestore",
    hosts: Annotated[
        Optional[int],
        typer.Option(help="Emulated hosts (new clusters; root): each a network namespace, link and cgroup."),
    ] = None,
    host_rate: Annotated[int, typer.Option(help="Each host's link, Mbit/s (with --hosts).")] = 1000,
    client_rate: Annotated[int, typer.Option(help="The client node's link, Mbit/s (with --hosts).")] = 1000,
    host_cpu: Annotated[float, typer.Option(help="Each host's CPU quota in cores, 0: none (with --hosts).")] = 0.0,
    client_cpu: Annotated[float, typer.Option(help="The client's CPU quota in cores, 0: none (with --hosts).")] = 0.0,
    host_memory: Annotated[int, typer.Option(help="Each host's memory budget, MiB, 0: none (with --hosts).")] = 1024,
    port: Annotated[Optional[int], typer.Option(help="Monitor port (v2; v1 uses port + 1).")] = None,
    worker: Annotated[
        bool, typer.Option(help="Start the transform worker beside the OSDs (log: DIR/log/worker.log).")
    ] = True,
    serve: Annotated[
        Optional[int], typer.Option(help="Start skyhook serve (Flight SQL, read-only) on this port of localhost.")
    ] = None,
    limit: Annotated[
        Optional[list[str]],
        typer.Option(
            help="A node limit of the OSDs (new clusters), NAME=VALUE: max_call_ms, "
            "max_call_memory_mb, max_node_memory_mb, max_reply_mb, min_batch_size, max_in_flight, "
            "max_slice_cpu_ms."
        ),
    ] = None,
) -> None:
    """Create and start a cluster, or start an existing one again; prints the store URI."""
    from skyhook.dev.cluster import LocalCluster

    limits = {}
    for item in limit or []:
        name, _, value = item.partition("=")
        if name not in NODE_LIMITS or not value.isdigit():
            raise InvalidRequestError(f"--limit {item!r}: expected NAME=INTEGER, NAME one of {', '.join(NODE_LIMITS)}")
        limits[name] = int(value)
    spec = None
    if hosts is not None:
        from skyhook.dev.hosts import HostsSpec

        spec = HostsSpec(
            hosts,
            host_rate_mbit=host_rate,
            client_rate_mbit=client_rate,
            host_cpu=host_cpu,
            client_cpu=client_cpu,
            host_memory_mib=host_memory,
        )
    started = time.perf_counter()
    uri = LocalCluster(directory).up(
        osds=osds or (1 if hosts else 3),
        store=store,
        port=port,
        node_limits=limits,
        worker=worker,
        hosts=spec,
        serve=serve,
    )
    console.print(f"cluster ready in {time.perf_counter() - started:.1f} s", style="dim")
    if serve is not None:
        console.print(f"Flight SQL at grpc://localhost:{serve}", style="dim", markup=False)
    print(uri)


@cluster_app.command("down")
def cluster_down(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Stop every daemon of the cluster (data stays; `up` starts it again)."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).down()
    console.print(f"stopped the cluster in {directory}", markup=False)


@cluster_app.command("status")
def cluster_status(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Daemons, their PIDs, OSD states and health."""
    from skyhook.dev.cluster import LocalCluster

    report = LocalCluster(directory).status()
    daemons = Table("daemon", "pid", "state", title=f"{report['directory']} ({report['store']}, port {report['port']})")
    for name, pid in report["daemons"].items():
        state = report.get("osds", {}).get(name, "running") if pid else "stopped"
        daemons.add_row(name, str(pid or "-"), Text(state))
    console.print(daemons)
    console.print(f"health: {report.get('health', 'unknown (monitor stopped)')}", markup=False)
    print(report["uri"])


@cluster_app.command("stop-osd")
def cluster_stop_osd(
    osd: int,
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    kill: Annotated[bool, typer.Option(help="SIGKILL instead of a clean stop.")] = False,
) -> None:
    """Stop one OSD."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).stop_osd(osd, kill=kill)
    console.print(f"osd.{osd} stopped")


@cluster_app.command("start-osd")
def cluster_start_osd(osd: int, directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Start one OSD again and wait until it is up."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).start_osd(osd)
    console.print(f"osd.{osd} up")


@cluster_app.command("stop-host")
def cluster_stop_host(
    host: Annotated[str, typer.Argument(help="An emulated host: h0, h1, ...")],
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    how: Annotated[
        str, typer.Option(help="freeze (its processes stop where they stand) or link (cut off).")
    ] = "freeze",
) -> None:
    """Stop an emulated host."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).stop_host(host, how)
    console.print(f"{host} stopped ({how})")


@cluster_app.command("start-host")
def cluster_start_host(
    host: Annotated[str, typer.Argument(help="An emulated host: h0, h1, ...")],
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
) -> None:
    """Bring a stopped emulated host back."""
    from skyhook.dev.cluster import LocalCluster

    LocalCluster(directory).start_host(host)
    console.print(f"{host} back")


@cluster_app.command("as", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def cluster_as(
    context: typer.Context,
    node: Annotated[str, typer.Argument(help="client, h0, h1, ..., gateway or control.")],
    directory: Annotated[Path, typer.Option("--cluster", help="Cluster directory.")] = DEFAULT_CLUSTER_DIR,
) -> None:
    """Run a command as an emulated node (its namespace, link and CPU quota): skyhook cluster as client -- CMD."""
    from skyhook.dev.cluster import LocalCluster

    if not context.args:
        raise InvalidRequestError("give the command to run after --, e.g. skyhook cluster as client -- skyhook ls URI")
    prefix = LocalCluster(directory).hosts().command_prefix(node)
    raise SystemExit(subprocess.run([*prefix, *context.args]).returncode)


@cluster_app.command("user")
def cluster_user(
    name: str,
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    role: Annotated[str, typer.Option(help="reader, writer or admin.")] = "reader",
    namespace: Annotated[
        Optional[str], typer.Option(help="Restrict the user to this RADOS namespace (default: the whole pool).")
    ] = None,
) -> None:
    """Create a Ceph user with the least capabilities of a role; prints its store URI."""
    from skyhook.dev.cluster import LocalCluster, role_capabilities

    cluster = LocalCluster(directory)
    capabilities = role_capabilities(role, namespace=namespace)
    keyring = cluster.add_user(name, capabilities)
    for daemon, capability in capabilities.items():
        console.print(f"{daemon} '{capability}'", style="dim", markup=False)
    print(cluster.user_uri(name, keyring, namespace))


gateway_app = typer.Typer(help="The cluster's S3 gateway (RGW), for the baseline readers.", no_args_is_help=True)


cluster_app.add_typer(gateway_app, name="gateway")


@gateway_app.command("up")
def gateway_up(
    directory: ClusterDir = DEFAULT_CLUSTER_DIR,
    port: Annotated[
        Optional[int], typer.Option(help="Its port (default: the one it had, else 7480 or next free).")
    ] = None,
) -> None:
    """Start the cluster's RGW (and its S3 user); prints the endpoint and keys as JSON."""
    import json

    from skyhook.dev.cluster import LocalCluster
    from skyhook.dev.gateway import Gateway

    print(json.dumps(Gateway(LocalCluster(directory), port).up().as_dict()))


@gateway_app.command("down")
def gateway_down(directory: ClusterDir = DEFAULT_CLUSTER_DIR) -> None:
    """Stop the cluster's RGW (its buckets stay)."""
    from skyhook.dev.cluster import LocalCluster
    from skyhook.dev.gateway import Gateway

    Gateway(LocalCluster(directory)).down()
    console.print("gateway stopped")
