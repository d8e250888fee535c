"""Filters as users build them reach storage in bounded time: AND/OR chains
(functools.reduce over many terms) are balanced before pyarrow serialises them
(its work doubles per level of nesting), one serialization declares each
extension once, deeper expressions are refused with a clear error and ones
still too costly to serialise are evaluated by the client; every answer equals
pyarrow's."""

from __future__ import annotations

import functools
import operator
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skyhook
from skyhook.plan.expression_tree import MAX_EXPRESSION_DEPTH, NotSerializable, conjuncts, field_names, serializable
from skyhook.plan.substrait import serialize
from support.assertions import assert_same_table

TABLE = pa.table({"a": pa.array(range(400), pa.int64()), "s": pa.array([f"v{i % 37}" for i in range(400)])})


def _chain(combine, count: int) -> pc.Expression:
    return functools.reduce(combine, [pc.field("a") == value for value in range(0, 3 * count, 3)])


def _depth(expression: pc.Expression) -> int:
    """Parentheses nesting of pyarrow's text of an expression without string literals."""
    depth = deepest = 0
    for character in str(expression):
        depth += {"(": 1, ")": -1}.get(character, 0)
        deepest = max(deepest, depth)
    return deepest


@pytest.mark.parametrize("combine", [operator.or_, operator.and_])
def test_a_chain_is_balanced_and_means_the_same(combine):
    chain = _chain(combine, 40)
    balanced = serializable(chain)
    assert _depth(chain) == 40 and _depth(balanced) <= 8
    assert TABLE.filter(balanced).equals(TABLE.filter(chain))


def test_conjuncts_and_field_names_also_of_expressions_without_literals():
    valid = pc.field("a").is_valid()
    assert [str(part) for part in conjuncts((valid & valid) & pc.field("s").is_null())] == [
        "is_valid(a)",
        "is_valid(a)",
        "is_null(s, {nan_is_null=false})",
    ]
    assert [str(part) for part in conjuncts(valid | valid)] == ["(is_valid(a) or is_valid(a))"]
    assert field_names(valid & (pc.field("s") == "x")) == {"a", "s"}
    nested = pc.field("n", "flag")  # one leaf of three entries in Arrow's serialization
    assert field_names((nested > 1) & valid) == {"n", "a"}
    chain = functools.reduce(operator.and_, [nested, valid, pc.field("s") == "x", nested])
    assert [str(part) for part in conjuncts(chain)] == [str(nested), "is_valid(a)", '(s == "x")', str(nested)]
    assert str(serializable(chain)) == str((nested & valid) & ((pc.field("s") == "x") & nested))


def test_a_long_chain_serialises_in_milliseconds_with_each_extension_declared_once():
    started = time.perf_counter()
    message = serialize([_chain(operator.or_, 60)], ["filter"], TABLE.schema)
    assert time.perf_counter() - started < 2  # unbalanced, pyarrow takes hours
    uris = [declared.uri for declared in message.extension_uris]
    assert len(uris) == len(set(uris))


def test_nesting_deeper_than_storage_takes_is_refused_before_serialization():
    nested = pc.field("a") > 0
    for _ in range(MAX_EXPRESSION_DEPTH):
        nested = ~nested
    with pytest.raises(skyhook.InvalidRequestError, match=f"at most {MAX_EXPRESSION_DEPTH}"):
        serializable(nested)


def test_a_filter_too_costly_to_serialise_is_not_serializable():
    nested = pc.field("a") > 0
    for _ in range(30):
        nested = ~nested
    started = time.perf_counter()
    with pytest.raises(NotSerializable):
        serialize([nested], ["filter"], TABLE.schema)
    assert time.perf_counter() - started < 1


def test_deep_filters_answer_like_pyarrow(store, backend):
    dataset = store.write_dataset("t", TABLE, rows_per_object=100)
    nested = pc.field("a") > 10
    for _ in range(24):  # too costly to send: the client evaluates it
        nested = ~nested
    filters = [_chain(operator.or_, 120), _chain(operator.or_, 3) & _chain(operator.and_, 2) | nested]
    for filter in filters:
        for pushdown in (True, False):
            assert_same_table(dataset.to_table(filter=filter, pushdown=pushdown), TABLE.filter(filter))
    too_deep = pc.field("a") > 0
    for _ in range(MAX_EXPRESSION_DEPTH + 1):
        too_deep = ~too_deep
    with pytest.raises(skyhook.InvalidRequestError, match="nested"):
        dataset.to_table(filter=too_deep)


_TERMS = st.sampled_from(
    [
        pc.field("a") < 50,
        pc.field("a") >= 390,
        pc.field("s") == "v3",
        pc.field("s").isin(["v1", "v2"]),
        ~(pc.field("a") == 7),
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_TERMS, st.booleans()), min_size=1, max_size=30))
def test_any_chain_of_terms_keeps_its_meaning(terms):
    expression = terms[0][0]
    for term, use_and in terms[1:]:
        expression = (expression & term) if use_and else (expression | term)
    try:
        balanced = serializable(expression)
    except NotSerializable:  # alternating ANDs and ORs nest deep even balanced: the client evaluates them
        return
    assert TABLE.filter(balanced).equals(TABLE.filter(expression))
