"""The client's import graph: no cycle, and each layer imports only the layers
below it. Read from the source with ast, so an import under TYPE_CHECKING or
inside a function counts as much as one at the top of a module. The C++
core's folders include one another one way only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
SOURCE = ROOT / "python"
PACKAGE = "skyhook"

# A module's layer is the first part of its name below the package:
# "skyhook.ingest.write" is in ingest, "skyhook.store" in store, and the
# package itself ("skyhook", its __init__) in the layer of that name. The C++
# extension modules (CMakeLists.txt's nanobind modules) make the layer native.
FOUNDATION = {"errors", "names", "stored_json"}  # exceptions, the store's namespace, bounded JSON
# What the user-facing layers (dataset, store and up) build on.
CLIENT = {"distributed", "design", "execution", "plan", "ingest", "catalog", "backends", "rpc"}
LIBRARY: dict[str, set[str]] = {
    "errors": set(),
    "names": {"errors"},
    "stored_json": {"errors"},
    "native": set(),
    "rpc": {"errors"},
    "backends": {"native", "rpc"} | FOUNDATION,
    # The table format: manifests, their statistics and versions, and the commit that publishes them.
    "catalog": {"rpc", "backends"} | FOUNDATION,
    "plan": {"catalog"} | FOUNDATION,
    "ingest": {"catalog", "backends", "rpc"} | FOUNDATION,
    "execution": {"native", "plan", "catalog", "backends", "rpc"} | FOUNDATION,
    "design": {"native", "catalog", "backends", "rpc"} | FOUNDATION,
    "distributed": {"native", "design", "execution", "plan", "ingest", "catalog", "backends", "rpc"} | FOUNDATION,
    # Datasets as Dask DataFrames and back (skyhook.dask), below the dataset that offers to_dask.
    "dask": {"dask_pushdown"} | CLIENT | FOUNDATION,
    "dask_pushdown": FOUNDATION,
    "ray": {"dask"} | CLIENT | FOUNDATION,  # Ray Data read tasks over the same object-group readers
    "dataset": {"native", "dask", "ray"} | CLIENT | FOUNDATION,
    "sql": {"dataset"} | CLIENT | FOUNDATION,
    # The client of a served store (skyhook serve): Flight, nothing of the local client.
    "flight": FOUNDATION,
    "store": {"dataset", "sql", "flight", "dask"} | CLIENT | FOUNDATION,
    "skyhook": {"store", "dataset", "sql", "dask"} | CLIENT | FOUNDATION,
    # The gene-expression use case (issue 12), over the whole client; only the CLI uses it.
    "expression": {"skyhook", "store", "dataset", "dask"} | CLIENT | FOUNDATION,
    # Remote access (Flight SQL) over the whole client; only the CLI uses it.
    "remote": {"skyhook", "store", "dataset", "sql", "flight"} | CLIENT | FOUNDATION,
}
# The command line and the developer tooling (dev cluster, TPC-H, demo) may use
# anything; the library never imports either of them.
ALLOWED: dict[str, set[str]] = {**LIBRARY, "cli": {*LIBRARY, "dev"}, "dev": {*LIBRARY, "cli"}}


def native_modules() -> set[str]:
    """The extension modules the CMake files build (nanobind and Cython)."""
    names = set()
    for cmake in [ROOT / "CMakeLists.txt", *(ROOT / "cpp").rglob("CMakeLists.txt")]:
        names.update(re.findall(r"(?:nanobind_add_module|Python_add_library)\((\w+)", cmake.read_text()))
    return {f"{PACKAGE}.{name}" for name in names}


def source_modules() -> dict[str, Path]:
    modules = {}
    for path in sorted((SOURCE / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module imports, wherever in it the import stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from skyhook import _embedded" imports a module; "from skyhook.store import Store" a name.
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {name for name in found if name in known}


def import_graph() -> dict[str, set[str]]:
    modules = source_modules()
    known = set(modules) | native_modules()
    graph = {name: imported(name, path, known) - {name} for name, path in modules.items()}
    return graph | {name: set() for name in known - set(modules)}


def layer(module: str) -> str:
    if module in native_modules():
        return "native"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    assert {layer(module) for module in import_graph()} <= set(ALLOWED)


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "modules that import each other:\n" + "\n".join(", ".join(cycle) for cycle in found)


def test_layers_import_only_what_is_below_them():
    violations = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer(target) != layer(module) and layer(target) not in ALLOWED[layer(module)]
    )
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


CPP_CORE = ROOT / "cpp" / "skyhook"


def cpp_folder_includes() -> dict[tuple[str, str], list[str]]:
    """(folder, folder it includes from): the includes, of the core's sources
    (tests may use the testing helpers of any folder)."""
    edges: dict[tuple[str, str], list[str]] = {}
    for source in sorted([*CPP_CORE.rglob("*.h"), *CPP_CORE.rglob("*.cc")]):
        if source.name.endswith("_test.cc"):
            continue
        folder = str(source.parent.relative_to(CPP_CORE))
        for included in re.findall(r'#include "skyhook/([^"]+)"', source.read_text()):
            target = str(Path(included).parent)
            if target != folder:
                edges.setdefault((folder, target), []).append(f"{source.relative_to(CPP_CORE)} -> {included}")
    return edges


def test_cpp_folders_include_each_other_one_way():
    edges = cpp_folder_includes()
    both_ways = sorted(
        f"{a} <-> {b}: {edges[a, b][0]}; {edges[b, a][0]}" for a, b in edges if a < b and (b, a) in edges
    )
    assert not both_ways, "C++ folders that include each other:\n" + "\n".join(both_ways)
    assert ("storage/methods", "storage/runtime") in edges  # the scan reads the includes at all


#: Past this many lines a unit of the core has a unit test file of its own beside it.
MAX_UNTESTED_LINES = 300


def test_every_large_cpp_unit_has_its_own_unit_tests():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    untested = sorted(
        f"{source.relative_to(ROOT)} ({len(source.read_text().splitlines())} lines)"
        for source in CPP_CORE.rglob("*.cc")
        if not source.name.endswith("_test.cc")
        and len(source.read_text().splitlines()) > MAX_UNTESTED_LINES
        and str(source.with_name(f"{source.stem}_test.cc").relative_to(ROOT)) not in cmake
    )
    assert not untested, "units without a unit test file in the test binary:\n" + "\n".join(untested)
