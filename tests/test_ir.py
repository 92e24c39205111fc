"""The IR's own behaviour: structural equality and hashing without recursion, on deep chains
and on DAGs whose paths multiply."""

import sys

import pytest
from hilbert.compiler import ir
from hilbert.grammar.source import nowhere

HERE = nowhere("test")


def chain(depth: int, leaf: ir.Node, op: str = "add") -> ir.Node:
    """`depth` operations in a row: op(… op(leaf, 1) …, 1)."""
    node = leaf
    for _ in range(depth):
        node = ir.Prim(op, (node, ir.Const(1.0, HERE)), (), HERE)
    return node


def doubled(depth: int) -> ir.Node:
    """x, x + x, (x + x) + (x + x), …: `depth` nodes, 2^depth paths from the top to x."""
    node: ir.Node = ir.Param(0, "x", HERE)
    for _ in range(depth):
        node = ir.Prim("add", (node, node), (), HERE)
    return node


class recursion_limit:
    """Python's recursion limit set low: a walk that recursed per IR level would fail."""

    def __init__(self, limit: int):
        self.limit = limit

    def __enter__(self):
        self.saved = sys.getrecursionlimit()
        sys.setrecursionlimit(self.limit)

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.saved)


@pytest.mark.parametrize("depth", [250, 2_000, 20_000])
def test_equal_chains_built_apart_compare_and_hash_without_recursion(depth):
    x = ir.Param(0, "x", HERE)
    a, b = chain(depth, x), chain(depth, x)
    c = chain(depth - 1, ir.Prim("tanh", (x,), (), HERE))  # differs only at the bottom
    with recursion_limit(200):
        assert a is not b and a == b and hash(a) == hash(b)
        assert a != c and not (a == c)
        assert len({a, b, c}) == 2


def test_equality_ignores_spans_and_state_names():
    elsewhere = nowhere("elsewhere")
    assert ir.State(1, HERE, "w") == ir.State(1, elsewhere, "x")
    assert ir.State(1, HERE, "w") != ir.State(2, HERE, "w")
    assert ir.Param(0, "x", HERE) != ir.Param(0, "y", HERE)  # a parameter's name is its identity
    assert ir.Const(1.0, HERE) != ir.Prim("neg", (ir.Const(-1.0, HERE),), (), HERE)
    assert (ir.Const(1.0, HERE) == 1.0) is False


def test_dags_with_many_paths_compare_in_linear_work():
    # 2,000 levels: 2^2000 paths from the top; each pair of nodes is compared once.
    a, b = doubled(2_000), doubled(2_000)
    with recursion_limit(200):
        assert a == b
        assert doubled(2_000) != ir.Prim("add", (a.args[0], ir.Param(1, "x", HERE)), (), HERE)


def test_repr_is_one_line_however_deep():
    with recursion_limit(200):
        text = repr(chain(20_000, ir.Param(0, "x", HERE)))
    assert text == "Prim(op='add', attrs=(), reads=(Prim, Const))"
