"""Limits: a million-step loop in constant memory and stack, the memory guard, threads, and
the bounds that keep deep or exploding programs from crashing or hanging the compiler."""

import inspect
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from conftest import EXECUTORS
from hilbert.compiler.passes.inline import MAX_NODES
from hilbert.grammar.parser import MAX_NESTING

import hilbert

COUNT = """
def count(t, x, v) ≔ if t = 0 then v else count(t − 1, x, v + x)
fn counted(t, x, v) ↦ count(t, x, v)
"""


class lowered_recursion_limit:
    """Python's recursion limit a little above the current depth: code that recursed once
    per loop step (or per IR level) would raise RecursionError."""

    def __init__(self, headroom: int = 200):
        self.headroom = headroom

    def __enter__(self):
        self.saved = sys.getrecursionlimit()
        sys.setrecursionlimit(len(inspect.stack(0)) + self.headroom)

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.saved)


def traced_peak(call) -> tuple[object, int]:
    """`call()`'s result and the peak memory Python and NumPy allocated while it ran."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_million_step_loop_runs_in_constant_memory_and_stack(executor):
    counted = hilbert.compile_source(COUNT, executor=executor).counted
    x = np.full(3, 0.5)
    counted(2, x, np.zeros(3))  # compile and specialise outside the measurements
    with lowered_recursion_limit():
        result = counted(1_000_000, x, np.zeros(3))
    np.testing.assert_array_equal(result, np.full(3, 500_000.0))
    # Memory: the peak does not grow with the step count (tracing slows Python tenfold, so
    # the interpreted executor is traced at 10^4 and 10^5 steps, the compiled one at 10^6).
    steps = (10_000, 100_000) if executor == "reference" else (10_000, 1_000_000)
    _, few = traced_peak(lambda: counted(steps[0], x, np.zeros(3)))
    _, many = traced_peak(lambda: counted(steps[1], x, np.zeros(3)))
    assert many < few + 10_000, f"peak {few:,} bytes at {steps[0]:,} steps, {many:,} at {steps[1]:,}"
    assert many < 1_000_000


def test_loops_run_a_known_number_of_steps():
    counted = hilbert.compile_source(COUNT, executor="reference").counted
    counted(1000, 1.0, 0.0)
    program = counted.program(((), (), ()))
    assert program.loop_steps == 1000
    counted(7, 1.0, 0.0)
    assert program.loop_steps == 1007


# The memory guard


def test_an_oversized_plan_is_refused_before_anything_is_allocated():
    outer = hilbert.compile_source('fn outer(x, y) ↦ einsum("i,j->ij", x, y)').outer
    x = np.ones(200_000)  # the result would be 4·10¹⁰ entries, 320 GB
    tracemalloc.start()
    try:
        with pytest.raises(hilbert.RuntimeHilbertError) as raised:
            outer(x, x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raised.value.code == "E700"
    assert "outer" in str(raised.value) and "HILBERT_MEMORY_LIMIT" in raised.value.message
    assert peak < 50_000_000


def test_the_memory_limit_is_configurable(monkeypatch):
    outer = hilbert.compile_source('fn outer(x, y) ↦ einsum("i,j->ij", x, y)').outer
    x = np.ones(1000)  # an 8 MB result
    assert outer(x, x).shape == (1000, 1000)
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    fresh = hilbert.compile_source('fn outer(x, y) ↦ einsum("i,j->ij", x, y)').outer
    with pytest.raises(hilbert.RuntimeHilbertError) as raised:
        fresh(x, x)
    assert raised.value.code == "E700"


#: ∂ through a counted loop: its tape is t states of 10×10 (800 B each). `slope` needs the
#: loop's value too (a forward run before the backward one), `onlySlope` only its derivative,
#: `branch` runs it backwards only when t ≤ 1000.
TAPED = """
def run(t, w, x) ≔ if t = 0 then w else run(t − 1, tanh(einsum("ij,jk->ik", w, x)), x)
fn slope(t, w, x) ↦ ∂ einsum("ij->", run(t, w, x) · run(t, w, x)) / ∂ x
fn onlySlope(t, w, x) ↦ ∂ einsum("ij->", run(t, w, x)) / ∂ x
fn branch(t, w, x) ↦ if t > 1000 then x · 0 else ∂ einsum("ij->", run(t, w, x) · run(t, w, x)) / ∂ x
"""


def taped_slope(t: int, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∂ Σ run(t, w, x)² / ∂ x by hand, in NumPy: forward keeping every state, then back."""
    states = [w]
    for _ in range(t):
        states.append(np.tanh(states[-1] @ x))
    back, grad = 2 * states[-1], np.zeros_like(x)
    for before, after in zip(reversed(states[:-1]), reversed(states[1:]), strict=True):
        dz = back * (1 - after ** 2)
        grad += before.T @ dz
        back = dz @ x.T
    return grad


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_a_tape_over_the_limit_is_refused_before_any_step_runs(executor, monkeypatch):
    """docs/semantics.md: when the step count is known at the call, a tape over
    HILBERT_MEMORY_LIMIT is E700 before the loop (and the forward run before it) runs a step:
    no step is counted, and 10⁹ steps (which could not run) are refused as fast as 2000;
    an `if` branch not taken is not refused."""
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "200K")
    module = hilbert.compile_source(TAPED, executor=executor)
    rng = np.random.default_rng(4)
    w, x = rng.normal(size=(10, 10)) * 0.3, rng.normal(size=(10, 10)) * 0.3
    for name in ("slope", "onlySlope"):
        function = getattr(module, name)
        program = function.program(((), (10, 10), (10, 10)))
        for steps in (2000, 10**9):
            with pytest.raises(hilbert.RuntimeHilbertError) as raised:
                function(steps, w, x)
            assert raised.value.code == "E700", name
            assert f"running run backwards keeps its state of every step: {steps:,} steps" in \
                raised.value.message
            assert program.loop_steps == 0, name
    np.testing.assert_allclose(module.slope(5, w, x), taped_slope(5, w, x), rtol=1e-12)
    np.testing.assert_array_equal(module.branch(10**9, w, x), np.zeros((10, 10)))  # not run
    with pytest.raises(hilbert.RuntimeHilbertError) as raised:
        module.branch(1000, w, x)
    assert raised.value.code == "E700"


# Threads


THREADED = """
open Prelude.Networks
open Prelude.Arithmetic
fn layer(a, w) ↦ relu(dense(a, w))
def descend(t, a, x) ≔ if t = 0 then x else descend(t − 1, a, x − 0.01 · einsum("ij,jk->ik", a, x))
fn fit(t, a, x) ↦ descend(t, a, x)
"""


def _arguments(index: int):
    rng = np.random.default_rng(index)
    n, p = 2 + index % 4, 1 + index % 3  # several threads share a shape, several do not
    return {"layer": (rng.standard_normal((n, p)), rng.standard_normal((p, 3))),
            "fit": (50, rng.standard_normal((n, n)) * 0.1, rng.standard_normal((n, p)))}


@pytest.mark.parametrize("executor", EXECUTORS)
def test_eight_threads_get_the_serial_results(executor):
    module = hilbert.compile_source(THREADED, executor=executor)
    serial_module = hilbert.compile_source(THREADED, executor=executor)
    cases = [_arguments(i) for i in range(8)]
    expected = [{name: serial_module.function(name)(*args) for name, args in case.items()}
                for case in cases]
    results: list = [None] * 8
    errors: list = []
    start = threading.Barrier(8)

    def work(index: int):
        try:
            start.wait()  # all at once, so the first calls race to specialise
            for _ in range(5):
                results[index] = {name: module.function(name)(*args)
                                  for name, args in cases[index].items()}
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for got, want in zip(results, expected, strict=True):
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])


# Bounds on the compiler itself


def test_nesting_is_bounded_with_a_clear_error():
    ok = "fn f(x) ↦ " + "exp(" * (MAX_NESTING - 1) + "x" + ")" * (MAX_NESTING - 1)
    assert hilbert.compile_source(ok, executor="reference").f(-np.inf) >= 0
    too_deep = "fn f(x) ↦ " + "exp(" * MAX_NESTING + "x" + ")" * MAX_NESTING
    with pytest.raises(hilbert.ParseError) as raised:
        hilbert.compile_source(too_deep)
    assert raised.value.code == "E101"


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
@pytest.mark.parametrize("text", [
    "fn f(x) ↦ " + "−" * 5_000 + "x",
    "fn f(x) ↦ " + "if x then " * 3_000 + "x" + " else x" * 3_000,
])  # (a chain of one operator, x ^ x ^ … included, is not nesting: tests/test_long_expressions.py)
def test_deeply_nested_expressions_are_refused_quickly(text):
    with pytest.raises(hilbert.ParseError) as raised:
        hilbert.compile_source(text)
    assert raised.value.code == "E101"


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
def test_redundant_parentheses_do_not_nest():
    text = "fn f(x) ↦ " + "(" * 5_000 + "x" + ")" * 5_000
    assert hilbert.compile_source(text, executor="reference").f(2.5) == 2.5


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
def test_a_flat_sum_of_twenty_thousand_terms():
    # A chain of one operator is not nesting (issue 11, item 21), so this compiles and runs.
    text = "fn f(x) ↦ " + " + ".join(["x"] * 20_000)
    assert hilbert.compile_source(text, executor="reference").f(2.5) == 20_000 * 2.5


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
def test_exponential_inlining_is_refused():
    levels = "\n".join(f"def a{i}(x) ≔ a{i - 1}(a{i - 1}(x))" for i in range(1, 41))
    with pytest.raises(hilbert.CheckError) as raised:
        hilbert.compile_source(f"def a0(x) ≔ x + 1\n{levels}\nfn f(x) ↦ a40(x)").f(1.0)
    assert raised.value.code == "E701" and f"more than {MAX_NODES}" in raised.value.message


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_chain_thousands_deep_runs_without_recursion(executor):
    # a12 is 4096 additions in a row; with a twin of itself it is shared, not repeated.
    levels = "\n".join(f"def a{i}(x) ≔ a{i - 1}(a{i - 1}(x))" for i in range(1, 13))
    mod = hilbert.compile_source(f"def a0(x) ≔ x + 1\n{levels}\nfn f(x) ↦ a12(x) − a12(x) / 2",
                                 executor=executor)
    assert mod.f(0.0) == 2048.0  # compiles (Numba may recurse while it compiles)
    with lowered_recursion_limit(400):
        assert mod.f(1.0) == 2048.5


def tanh_chain(units: int) -> str:
    """`f(x)`: `tanh(x) + 0.5` applied `units` times (2·units operations in a row on x's
    shape), written with doubling definitions so inlining it costs linear time."""
    bits = [i for i in range(units.bit_length()) if units >> i & 1]
    levels = "\n".join(f"def a{i}(x) ≔ a{i - 1}(a{i - 1}(x))" for i in range(1, max(bits) + 1))
    call = "x"
    for i in bits:
        call = f"a{i}({call})"
    return f"def a0(x) ≔ tanh(x) + 0.5\n{levels}\nfn f(x) ↦ {call}"


def numpy_tanh_chain(units: int, x: np.ndarray) -> np.ndarray:
    for _ in range(units):
        x = np.tanh(x) + 0.5
    return x


@pytest.mark.parametrize("operations, executor, shape", [
    (250, "reference", (7,)), (250, "reference", (3, 4)), (250, "numba", (7,)),
    (250, "numba", (3, 4)), (2_000, "reference", (7,)), (2_000, "reference", (3, 4)),
    (2_000, "numba", (7,)), (20_000, "reference", (7,)), (20_000, "reference", (3, 4)),
])
def test_long_chains_on_vectors_and_matrices_compile_and_run(operations, executor, shape,
                                                             monkeypatch):
    # 20,000 operations is past the E701 bound of one definition: raised here, to show every
    # pass walks the chain without recursing. (Numba's own compilation of 20,000 operations
    # takes many minutes, so the compiled executor is run to 2,000.)
    monkeypatch.setattr("hilbert.compiler.passes.inline.MAX_NODES", 2 * operations + 100)
    x = np.linspace(-1.5, 1.5, int(np.prod(shape))).reshape(shape)
    expected = numpy_tanh_chain(operations // 2, x)
    if executor == "reference":  # every pass is hilbert's own: none may recurse per operation
        with lowered_recursion_limit(400):
            got = hilbert.compile_source(tanh_chain(operations // 2), executor=executor).f(x)
    else:  # Numba may recurse while it compiles; hilbert's passes and the run may not
        got = hilbert.compile_source(tanh_chain(operations // 2), executor=executor).f(x)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
@pytest.mark.parametrize("executor", EXECUTORS)
def test_nested_calls_compile_in_linear_time(executor):
    n = 60
    text = "def sq(x) ≔ x · x\nfn f(x) ↦ " + "sq(" * n + "x" + ")" * n
    assert hilbert.compile_source(text, executor=executor).f(1.0) == 1.0


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
def test_many_definitions_compile_quickly():
    text = "\n".join(f"def d{i}(x) ≔ d{i - 1}(x) + 1" for i in range(1, 300))
    mod = hilbert.compile_source(f"def d0(x) ≔ x\n{text}\nfn f(x) ↦ d299(x)",
                                 executor="reference")
    assert mod.f(0.0) == 299.0
