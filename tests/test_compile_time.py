"""Compile time grows linearly with the text: chains of definitions, many definitions, long
operator chains; and each function keeps a bounded number of per-shape programs."""

import tempfile

import numpy as np
import pytest
from hilbert.compiler import ir

import hilbert

#: Chains of N definitions, each calling the one before: with its argument as it is, with a
#: new argument, and with its arguments swapped. `g` answers N − 1 (the first), and so on.
CHAINS = {
    "same argument": ("def f0(x) ≔ x", "def f{i}(x) ≔ f{j}(x) + 1", "fn g(x) ↦ f{last}(x)"),
    "new argument": ("def f0(x) ≔ x", "def f{i}(x) ≔ f{j}(x + 1)", "fn g(x) ↦ f{last}(x)"),
    "swapped arguments": ("def f0(x, y) ≔ x − y", "def f{i}(x, y) ≔ f{j}(y, x) + 1",
                          "fn g(x) ↦ f{last}(x, 2 · x)"),
}


def chain(kind: str, n: int) -> str:
    first, step, entry = CHAINS[kind]
    lines = [first] + [step.format(i=i, j=i - 1) for i in range(1, n)]
    return "\n".join(lines + [entry.format(last=n - 1)]) + "\n"


def expected(kind: str, n: int, x: float) -> float:
    """What `g(x)` is, worked out by hand: N − 1 additions, or x and 2x swapped N − 1 times."""
    if kind == "swapped arguments":
        return (n - 1) + (x - 2 * x if (n - 1) % 2 == 0 else 2 * x - x)
    return x + (n - 1)


def work(text: str, monkeypatch) -> int:
    """How many IR nodes the compiler looks at to compile `text` and build its entry `g`
    (every pass reads a node's children through ir.children), with an empty cache directory
    (a built entry kept there would be read back, not built: compiler/kept.py)."""
    calls = 0
    original = ir.children

    def counted(node):
        nonlocal calls
        calls += 1
        return original(node)

    with monkeypatch.context() as patch, tempfile.TemporaryDirectory() as empty:
        patch.setenv("HILBERT_CACHE_DIR", empty)
        patch.setattr(ir, "children", counted)
        hilbert.compile_source(text, executor="reference").g.entry  # noqa: B018 - builds it
    return calls


@pytest.mark.parametrize("kind", CHAINS)
def test_a_chain_of_definitions_costs_linear_work(kind, monkeypatch):
    small, large = work(chain(kind, 200), monkeypatch), work(chain(kind, 800), monkeypatch)
    # Four times the definitions: four times the work (quadratic would be sixteen).
    assert large < 5 * small, f"{small:,} node visits for 200 definitions, {large:,} for 800"


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
@pytest.mark.parametrize("kind", CHAINS)
def test_a_chain_of_4000_definitions_compiles_and_runs(kind, executor):
    mod = hilbert.compile_source(chain(kind, 4000), executor=executor)
    assert mod.g(0.5) == expected(kind, 4000, 0.5)


def test_equal_calls_are_written_out_once():
    # a40 doubles a39 forty times: 2⁴⁰ terms if each call were written out again.
    levels = "\n".join(f"def a{i}(x) ≔ a{i - 1}(x) + a{i - 1}(x)" for i in range(1, 41))
    mod = hilbert.compile_source(f"def a0(x) ≔ x + 1\n{levels}\nfn f(x) ↦ a40(x)",
                                 executor="reference")
    assert mod.f(0.0) == 2.0 ** 40



# The per-shape program cache


def test_each_function_keeps_the_most_recently_used_programs(monkeypatch):
    monkeypatch.setenv("HILBERT_MAX_PROGRAMS", "3")
    f = hilbert.compile_source("fn f(x) ↦ 2 · x", executor="reference").f
    for n in (1, 2, 3):
        f(np.ones(n))
    assert f.plans_made == 3
    f(np.ones(1))                     # 1 is now the most recently used; 2 the least
    f(np.ones(4))                     # a fourth signature: 2 is dropped
    assert f.plans_made == 4
    f(np.ones(1)), f(np.ones(3)), f(np.ones(4))
    assert f.plans_made == 4          # all three kept
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))
    assert f.plans_made == 5          # 2 was made again


def test_the_default_bound_is_documented_and_holds():
    f = hilbert.compile_source("fn f(x) ↦ 2 · x", executor="reference").f
    for n in range(hilbert.api.MAX_PROGRAMS + 10):
        f(np.ones(n))
    assert len(f._by_shapes) == hilbert.api.MAX_PROGRAMS == 64
    assert f.plans_made == hilbert.api.MAX_PROGRAMS + 10
