"""Options are typed: one dataclass per concern, its keywords a TypedDict
field for field (``**options: Unpack[...]``), and no untyped keyword
pass-through anywhere in the library."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pyarrow as pa
import pytest

import skyhook

LIBRARY = Path(__file__).resolve().parents[1] / "python" / "skyhook"
#: pyarrow's own scanner keywords, which the reading methods take beside ScanOptions'.
ARROW_SCANNER = {"batch_size", "batch_readahead", "fragment_readahead", "cache_metadata", "memory_pool"}


def keys(typed: type) -> set[str]:
    return set(typed.__required_keys__ | typed.__optional_keys__)


def test_the_keywords_are_the_options_fields():
    scan_fields = {field.name for field in fields(skyhook.ScanOptions)}
    assert keys(skyhook.AggregateKeywords) == scan_fields
    assert keys(skyhook.ScanKeywords) == scan_fields | ARROW_SCANNER | {"fragment_scan_options"}
    assert keys(skyhook.WriteKeywords) == {field.name for field in fields(skyhook.WriteOptions)}


def untyped_keywords(source: str, name: str) -> list[str]:
    """Functions of a module's source whose ``**`` parameter is unannotated or Any."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.kwarg is not None:
            annotation = node.args.kwarg.annotation
            if annotation is None or ast.unparse(annotation) == "Any":
                found.append(f"{name}:{node.lineno} {node.name}(**{node.args.kwarg.arg})")
    return found


def test_no_function_of_the_library_takes_untyped_keywords():
    modules = sorted(LIBRARY.rglob("*.py"))
    assert len(modules) > 100
    found = [line for path in modules for line in untyped_keywords(path.read_text(), str(path.relative_to(LIBRARY)))]
    assert found == []


def test_the_check_finds_an_untyped_pass_through():
    source = "def f(**options: Any): ...\ndef g(**options: Unpack[ScanKeywords]): ...\ndef h(**rest): ...\n"
    assert untyped_keywords(source, "m.py") == ["m.py:1 f(**options)", "m.py:3 h(**rest)"]


@pytest.mark.parametrize("method", ["to_table", "to_batches", "head", "take", "count_rows"])
def test_every_reading_method_takes_the_scan_keywords(store, method):
    dataset = store.write_dataset("typed", pa.table({"a": list(range(10))}), rows_per_object=3)
    arguments = {"head": (4,), "take": ([1, 2],)}.get(method, ())
    keywords = dict(pushdown=True, batch_size=2, use_threads=False, reply_compression="none", max_result_bytes=1 << 20)
    result = getattr(dataset, method)(*arguments, **keywords)
    if method == "to_batches":
        result = pa.Table.from_batches(list(result))
    assert dataset.last_scan.execution.options == skyhook.ScanOptions(
        pushdown=True, use_threads=False, reply_compression="none", max_result_bytes=1 << 20
    )
    assert dataset.last_scan.execution.batch_size == 2
    expected = getattr(dataset, method)(*arguments)
    if method == "to_batches":
        expected = pa.Table.from_batches(list(expected))
    assert result == expected
