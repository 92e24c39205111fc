"""Long expressions: a chain of one operator is not nesting (E101 bounds nesting only), and
every pass walks such a chain without recursion."""

import numpy as np
import pytest
from hilbert.grammar.parser import MAX_NESTING

import hilbert


def test_a_flat_sum_one_longer_than_the_nesting_limit_runs(executor):
    terms = MAX_NESTING + 1
    f = hilbert.compile_source("fn f(x) ↦ " + " + ".join(["x"] * terms), executor=executor).f
    np.testing.assert_array_equal(f(np.arange(3.0)), terms * np.arange(3.0))


@pytest.mark.parametrize("op", ["+", "−", "·", "/"])
def test_chains_of_every_left_grouping_operator_are_flat(executor, op):
    text = "fn f(x, y) ↦ x " + "".join(f"{op} y " for _ in range(3 * MAX_NESTING))
    f = hilbert.compile_source(text, executor=executor).f
    expected = 5.0
    for _ in range(3 * MAX_NESTING):  # left to right, as the chain groups
        expected = {"+": expected + 1.25, "−": expected - 1.25, "·": expected * 1.25,
                    "/": expected / 1.25}[op]
    assert f(5.0, 1.25) == expected


def test_a_chain_of_powers_groups_to_the_right_and_is_flat(executor):
    terms = MAX_NESTING + 21  # odd: 0 ^ (0 ^ (…)) is 0, while ((0 ^ 0) ^ …) would be 1
    f = hilbert.compile_source("fn f(x) ↦ " + " ^ ".join(["x"] * terms), executor=executor).f
    expected = 0.0
    for _ in range(terms - 1):  # from the right
        expected = 0.0 ** expected
    assert f(0.0) == expected == 0.0 and f(1.0) == 1.0


def test_a_flat_sum_of_20000_terms_compiles_and_runs():
    # (The numba executor's own passes on a 20 000-deep IR chain are issue 11's item 10.)
    f = hilbert.compile_source("fn f(x) ↦ " + " + ".join(["x"] * 20_000),
                               executor="reference").f
    np.testing.assert_array_equal(f(np.arange(3.0)), 20_000 * np.arange(3.0))


@pytest.mark.parametrize("text", [
    "fn f(x) ↦ " + "x + (" * (MAX_NESTING + 1) + "x" + ")" * (MAX_NESTING + 1),
    "fn f(x) ↦ " + "(" * (MAX_NESTING + 1) + "x" + " + x) · x" * (MAX_NESTING + 1),
    "fn f(x) ↦ " + "(" * (MAX_NESTING + 1) + "x" + " ^ x) ^ x" * (MAX_NESTING + 1),
])
def test_nesting_is_still_bounded(text):
    with pytest.raises(hilbert.ParseError) as raised:
        hilbert.compile_source(text)
    assert raised.value.code == "E101"
