"""Tiered execution on the numba executor (docs/architecture.md, "Tiers"): a loop-free call runs
at once on the host (each einsum along its planned path as NumPy/BLAS steps, entrywise work in
NumPy) while its code is generated and compiled in a background thread, then swapped in; a
call with loops steps its loops on the host while its code compiles, and moves to the compiled
code at a step boundary when its loop starts from the call's parameters. Both tiers agree with
the reference executor and NumPy, inf and NaN included; plans are kept per entry and
signature.

Every call's code is built at its first call by default (HILBERT_COMPILE=eager, which
conftest.py sets too); these tests set the tier setting themselves (`background`, or N, for
the tiers). Structure is checked by the programs' state and the LLVM back end's count of
machine code compiled or loaded (executor/llvm/compile.py's COUNTS), never by timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import opt_einsum
import pytest
from conftest import assert_agree
from hilbert.compiler import driver
from hilbert.compiler.plan import contraction
from hilbert.executor import codegen, planned
from hilbert.executor.llvm import compile as machine
from hilbert.executor.numba import executor as numba_exec
from hilbert.executor.numba import tiers
from opt_einsum.testing import rand_equation

import hilbert

#: One einsum that is no plain product (a scalar out of four operands), one with a diagonal,
#: and entrywise work around a product: each needs compiling.
SOURCE = """
fn ring(a, b, c, d) ↦ einsum("ij,jk,kl,li->", a, b, c, d)
fn diagonal(a, b) ↦ einsum("ii,ij->j", a, b)
fn squashed(x, w) ↦ tanh(einsum("np,pq->nq", x, w)) · 0.5 + 1
"""
LOOP = ('fn f(t, a, b) ↦ g(t, a, b)\n'
        'def g(t, a, b) ≔ if t = 0 then a else g(t − 1, tanh(einsum("ij,jk->ik", a, b)), b)')


@pytest.fixture
def setting(monkeypatch):
    """Set HILBERT_COMPILE for the programs made afterwards."""
    def use(value: str) -> None:
        monkeypatch.setenv(numba_exec.COMPILE_ENVIRONMENT, value)
    return use


def ring_arguments(rng, n: int = 5) -> list[np.ndarray]:
    return [rng.standard_normal((n, n)) for _ in range(4)]


def compiles_during(call) -> tuple[object, int]:
    """`call()`'s result and how many functions' machine code the LLVM back end compiled (or
    loaded from the disk cache) meanwhile, in any thread of this process."""
    before = sum(machine.COUNTS.values())
    result = call()
    return result, sum(machine.COUNTS.values()) - before


# ---------------------------------------------------------------- the first call never waits


def test_the_first_call_runs_on_the_host_and_generates_nothing(setting, rng):
    setting("2")
    mod = hilbert.compile_source(SOURCE)
    args = ring_arguments(rng)
    assert mod.ring.tier is None
    value, compiled = compiles_during(lambda: mod.ring(*args))
    assert compiled == 0 and mod.ring.tier == "host"
    program = mod.ring.program(tuple(a.shape for a in args))
    assert program._second is None and not program.queued  # no code, no build queued
    assert not program.built
    notes = "\n".join(program.plan.notes)
    assert "runs the first calls on the host while it is built)" in notes
    np.testing.assert_allclose(value, np.einsum("ij,jk,kl,li->", *args), rtol=1e-12)


def test_the_second_call_compiles_in_the_background_then_calls_run_compiled(setting, rng):
    setting("2")
    mod = hilbert.compile_source(SOURCE)
    ref = hilbert.compile_source(SOURCE, executor="reference")
    args = ring_arguments(rng)
    program = mod.ring.program(tuple(a.shape for a in args))
    first = mod.ring(*args)
    second = mod.ring(*args)  # starts the build, runs on the host
    assert program.queued and program.host_calls == 2
    assert program.wait(600) and program.built
    third = mod.ring(*args)
    assert mod.ring.tier == "compiled" and program.host_calls == 2
    assert program.region.generated.compiled  # what runs now is compiled code
    for value in (first, second, third):
        np.testing.assert_allclose(value, ref.ring(*args), rtol=1e-12)
    # (the plan reads the same before and after the build: `built` and `tier` say which ran)
    assert "one compiled function" in "\n".join(mod.ring.plan(*(a.shape for a in args)).all_notes)
    # a new program of the same signature (another Function) finds the code compiled
    fresh = hilbert.api.Function(mod.ring.entry, mod._compiled, "numba")
    fresh(*args)
    again = fresh.program(tuple(a.shape for a in args))
    assert again.wait(0) is False  # its own build not started: one call so far
    fresh(*args)
    assert again.wait(600)
    _, compiled = compiles_during(lambda: fresh(*args))
    assert compiled == 0 and fresh.tier == "compiled"


def test_eager_compiles_before_the_first_call_and_never_leaves_compiled_code(setting, rng):
    setting("eager")
    mod = hilbert.compile_source(SOURCE)
    args = ring_arguments(rng)
    mod.ring(*args)
    program = mod.ring.program(tuple(a.shape for a in args))
    assert mod.ring.tier == "compiled" and program.host_calls == 0 and program.built


def test_never_keeps_every_call_on_the_host(setting, rng):
    setting("never")
    mod = hilbert.compile_source(SOURCE)
    args = ring_arguments(rng)
    _, compiled = compiles_during(lambda: [mod.ring(*args) for _ in range(5)])
    program = mod.ring.program(tuple(a.shape for a in args))
    assert compiled == 0 and not program.queued and program.host_calls == 5
    assert mod.ring.tier == "host"


def test_from_the_first_call(setting, rng):
    setting("1")
    mod = hilbert.compile_source(SOURCE)
    args = ring_arguments(rng)
    mod.ring(*args)
    program = mod.ring.program(tuple(a.shape for a in args))
    assert program.queued
    assert program.wait(600) and program.built


@pytest.mark.parametrize("text", ["sometimes", "0", "-3", "1.5"])
def test_a_bad_setting_is_a_coded_error(setting, text):
    setting(text)
    mod = hilbert.compile_source(SOURCE)
    with pytest.raises(hilbert.HilbertError) as raised:
        mod.ring(*ring_arguments(np.random.default_rng(0)))
    assert raised.value.code == "E600" and "HILBERT_COMPILE" in raised.value.message


def _looped(a, b, steps):
    """LOOP's f in NumPy."""
    for _ in range(steps):
        a = np.tanh(a @ b)
    return a


@pytest.fixture
def slow_compiler(monkeypatch):
    """The build's compiling made to wait until the test says go (`release`): what a build that
    takes minutes looks like to the calls, without the minutes."""
    go = threading.Event()
    original = numba_exec.CompiledRegion.compile

    def compile_when_released(self):
        assert go.wait(600), "the test never released the compiler"
        original(self)

    monkeypatch.setattr(numba_exec.CompiledRegion, "compile", compile_when_released)
    yield go
    go.set()  # (a build still waiting ends)


def test_a_call_with_loops_starts_on_the_host_without_waiting(monkeypatch, slow_compiler, rng):
    monkeypatch.setenv(numba_exec.COMPILE_ENVIRONMENT, "background")
    mod = hilbert.compile_source(LOOP)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) / 4
    plan = mod.f.plan((), a.shape, b.shape)
    assert any("loops step by step in Python" in n and "next step boundary" in n
               for n in plan.notes)
    first = mod.f(5, a, b)  # the build is queued and waits: the call does not
    program = mod.f.program(((), a.shape, b.shape))
    assert mod.f.tier == "host" and program.queued and not program.built
    assert program.loop_steps == 5 and program.moved == 0
    np.testing.assert_allclose(first, _looped(a, b, 5), rtol=1e-12)
    assert_agree(first, mod.f.using("reference")(5, a, b))
    slow_compiler.set()
    assert program.wait(600) and program.built
    second = mod.f(5, a, b)
    assert mod.f.tier == "compiled" and program.host_calls == 1
    assert_agree(second, first)


def test_a_running_loop_moves_to_compiled_code_at_a_step_boundary(monkeypatch, slow_compiler, rng):
    """The build is released at the third step boundary and waited for there: the call's
    remaining steps run compiled, from the state the host reached, with the same answer."""
    monkeypatch.setenv(numba_exec.COMPILE_ENVIRONMENT, "background")
    monkeypatch.setattr(tiers, "SHORT_LOOP_S", 0.0)  # (however fast the host's steps)
    original = numba_exec.TieredProgram._boundary
    seen = []

    def at_boundary(self, values, began, state, steps):
        seen.append(steps)
        if steps == 3:
            slow_compiler.set()
            assert self.wait(600) and self.built
        return original(self, values, began, state, steps)

    monkeypatch.setattr(numba_exec.TieredProgram, "_boundary", at_boundary)
    mod = hilbert.compile_source(LOOP)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) / 4
    value = mod.f(9, a, b)
    program = mod.f.program(((), a.shape, b.shape))
    assert seen == [1, 2, 3] and program.moved == 1 and program.host_calls == 1
    assert program.loop_steps == 9  # three on the host, six compiled
    np.testing.assert_allclose(value, _looped(a, b, 9), rtol=1e-12)
    assert_agree(value, mod.f.using("reference")(9, a, b))
    assert np.shares_memory(value, a) is False


def test_a_loop_that_starts_from_computed_values_moves_at_the_next_call(monkeypatch, rng):
    """g starts from tanh(a), which the compiled code would compute again from a: such a
    call cannot move, so it runs to its end on the host and queues the build only then (a
    build beside its steps would only slow them down); the next call runs compiled."""
    monkeypatch.setenv(numba_exec.COMPILE_ENVIRONMENT, "background")
    source = LOOP.replace("↦ g(t, a, b)", "↦ g(t, tanh(a), b)")
    original = numba_exec.TieredProgram._boundary
    queued = []

    def at_boundary(self, values, began, state, steps):
        original(self, values, began, state, steps)
        queued.append(self.queued)

    monkeypatch.setattr(numba_exec.TieredProgram, "_boundary", at_boundary)
    mod = hilbert.compile_source(source)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) / 4
    assert any("calls that start once it is built run on it" in n
               for n in mod.f.plan((), a.shape, b.shape).notes)
    first = mod.f(4, a, b)  # on the host to its end; the build queued as it ends
    program = mod.f.program(((), a.shape, b.shape))
    assert queued == [False, False, False] and program.queued
    assert program.wait(600) and program.built and program.moved == 0
    assert program.host_calls == 1
    second = mod.f(4, a, b)
    assert mod.f.tier == "compiled" and program.host_calls == 1
    for value in (first, second):
        np.testing.assert_allclose(value, _looped(np.tanh(a), b, 4), rtol=1e-12)


@pytest.mark.parametrize(("short", "during"), [(1e9, False), (0.0, True)])
def test_a_short_loop_builds_after_its_call(short, during, monkeypatch, rng):
    """A loop the host would finish within SHORT_LOOP_S at the pace of its first step queues
    its build when the call ends (so the build does not slow its steps down); a longer one at its
    first step boundary, so that the call can move to it. The pace is the machine's, so the
    limit is set to the two extremes here."""
    monkeypatch.setenv(numba_exec.COMPILE_ENVIRONMENT, "background")
    monkeypatch.setattr(tiers, "SHORT_LOOP_S", short)
    original = numba_exec.TieredProgram._boundary
    queued = []

    def at_boundary(self, values, began, state, steps):
        try:
            original(self, values, began, state, steps)
        finally:
            queued.append(self.queued)

    monkeypatch.setattr(numba_exec.TieredProgram, "_boundary", at_boundary)
    mod = hilbert.compile_source(LOOP)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) / 4
    value = mod.f(5, a, b)
    program = mod.f.program(((), a.shape, b.shape))
    assert queued[0] is during and program.queued  # queued by the call's end either way
    np.testing.assert_allclose(value, _looped(a, b, 5), rtol=1e-12)
    assert program.wait(600)


@pytest.mark.parametrize(("body", "moves"), [
    ("g(t, a, b)", True),  # counter and state from parameters, b read as is
    ("g(t, tanh(a), b)", False),  # a start computed from a parameter
    ("g(t, a, b) + a", False),  # a start read again after the loop
    ("g(t, a, a)", False),  # one parameter starts two components
])
def test_where_a_running_loop_can_move(body, moves):
    mod = hilbert.compile_source(LOOP.replace("↦ g(t, a, b)", f"↦ {body}"))
    ready = driver.plan_entry(mod.f.entry, ((), (3, 3), (3, 3)), "auto", "numba")
    assert (numba_exec.resume_points(ready.body) is not None) == moves


def test_other_executors_have_no_tier():
    mod = hilbert.compile_source(SOURCE, executor="reference")
    mod.diagonal(np.eye(3), np.ones((3, 2)))
    assert mod.diagonal.tier is None


# ---------------------------------------------------------------- both tiers agree


def _operands(spec: str, shapes, seed: int, special: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    operands = [rng.uniform(-1.0, 1.0, size=s) for s in shapes]
    if special:  # an inf and a NaN in the first operand, a zero in the second
        flat = operands[0].reshape(-1)
        flat[0] = np.inf
        if flat.size > 1:
            flat[-1] = np.nan
        if len(operands) > 1:
            operands[1].reshape(-1)[0] = 0.0
    return operands


#: Random specs (opt_einsum's generator) whose paths mix BLAS steps (GEMM, TDOT, with the
#: operands' axes in every order) with steps that are not products (Hadamard, batched,
#: diagonal-free outer products) and scalar results.
RANDOM = [(n, seed, n_out) for n in (2, 3, 5, 8) for seed in range(3) for n_out in (0, 2)]


@pytest.mark.parametrize("special", [False, True], ids=["finite", "inf-nan"])
@pytest.mark.parametrize(("n", "seed", "n_out"), RANDOM)
def test_both_tiers_agree_with_the_reference_and_numpy(setting, n, seed, n_out, special):
    spec, shapes = rand_equation(n, 3, n_out=n_out, d_min=2, d_max=5, seed=seed)
    shapes = [tuple(s) for s in shapes]
    setting("1")
    params = ", ".join(f"t{i}" for i in range(n))
    text = f'fn f({params}) ↦ einsum("{spec}", {params})'
    mod = hilbert.compile_source(text)
    ref = hilbert.compile_source(text, executor="reference")
    operands = _operands(spec, shapes, seed, special)
    host = mod.f(*operands)
    program = mod.f.program(tuple(shapes))
    assert program.wait(600) and program.built
    compiled = mod.f(*operands)
    expected = ref.f(*operands)
    with np.errstate(all="ignore"):
        numpy = np.einsum(spec, *operands, optimize=True)
    # Both tiers contract along the plan's path, so they meet infinities and zeros alike
    np.testing.assert_array_equal(np.isnan(host), np.isnan(compiled))
    np.testing.assert_array_equal(np.isinf(host), np.isinf(compiled))
    np.testing.assert_allclose(host, compiled, rtol=1e-10, atol=1e-12, equal_nan=True)
    # The reference forms every product of the literal einsum: where a path sums before it
    # meets 0 · ∞ its result may be ±∞ where the literal one is NaN, so on such data the
    # executors are compared for one pairwise step only.
    if not special or n == 2:
        for value in (host, compiled):
            np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, equal_nan=True)
            if not special:
                np.testing.assert_allclose(value, numpy, rtol=1e-10, atol=1e-12)


def test_the_host_tier_runs_each_planned_step(monkeypatch):
    """The host tier follows the plan: one BLAS product (np.tensordot's np.dot, its reshapes
    worked out when the kernel is made) per BLAS step large enough to pay, one numpy.einsum
    per other step, in the plan's order."""
    spec = "ab,bc,cd,de->ae"
    shapes = ((40, 30), (30, 50), (50, 20), (20, 10))
    path, steps = contraction(spec, shapes, "auto")
    calls: list[str] = []
    dot, einsum = np.dot, np.einsum
    monkeypatch.setattr(planned.np, "dot", lambda *a, **k: calls.append("dot") or dot(*a, **k))
    monkeypatch.setattr(planned.np, "einsum",
                        lambda *a, **k: calls.append(a[0]) or einsum(*a, **k))
    kernel = planned.einsum_kernel(spec, shapes, "auto")
    operands = [np.random.default_rng(1).standard_normal(s) for s in shapes]
    np.testing.assert_allclose(kernel(*operands), np.linalg.multi_dot(operands), rtol=1e-12)
    assert len(calls) == len(steps) == len(path) == 3
    assert calls == ["dot" if s.blas and s.flops >= planned.BLAS_FLOPS else s.spec
                     for s in steps]


def test_only_the_branch_taken_runs_on_the_host(setting):
    setting("never")
    mod = hilbert.compile_source("fn f(t, x) ↦ if t < 3 then x[t] · 2 else 0")
    x = np.arange(3.0)
    assert mod.f(5, x) == 0.0  # x[5] would be out of range: it is not read
    assert mod.f(1, x) == 2.0
    with pytest.raises(hilbert.HilbertError) as raised:
        mod.f(-1, x)  # read, and refused as compiled code refuses it
    assert raised.value.code == "E510"


def test_the_host_tier_holds_what_the_plan_counts(setting, monkeypatch):
    # Ten tanh on an 8 MB vector: the host lets each value go after its last reader, so the
    # call holds the argument and two vectors, within the plan's peak (a 64 MiB limit).
    setting("never")
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "64M")
    f = hilbert.compile_source("fn f(x) ↦ " + "tanh(" * 10 + "x" + ")" * 10).f
    x = np.linspace(-3.0, 3.0, 1_000_000)
    plan = f.plan(x.shape)
    tracemalloc.start()
    try:
        value = f(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = x
    for _ in range(10):
        expected = np.tanh(expected)
    np.testing.assert_allclose(value, expected, rtol=1e-14)
    assert peak <= plan.peak_bytes <= 3 * x.nbytes


def test_generated_code_that_would_hold_too_much_stays_on_the_host(setting, monkeypatch):
    # tanh forced to the host: the second tier would walk the call, holding all eleven
    # vectors (88 MB) over a 64 MiB limit, so calls stay on the host tier, which holds three.
    setting("eager")
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "64M")
    monkeypatch.setenv("HILBERT_NUMBA_HOST", "tanh")
    f = hilbert.compile_source("fn f(x) ↦ " + "tanh(" * 10 + "x" + ")" * 10).f
    x = np.linspace(-3.0, 3.0, 1_000_000)
    f(x)
    program = f.program((x.shape,))
    assert f.tier == "host" and not program.built and program.wait(0)
    assert any("calls stay on the host" in n and "E700" not in n for n in program.plan.all_notes)


def test_a_failed_build_leaves_the_calls_on_the_host(setting, monkeypatch):
    """A background build that fails for a reason of hilbert's own (here an exception injected
    into the code generator) is reported once (W903); every call goes on on the host, with the
    reference's results (docs/architecture.md, "Tiers"). Under eager it is E900:
    test_defects.py."""
    setting("1")

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in code generation")

    monkeypatch.setattr(codegen, "generate", broken)
    mod = hilbert.compile_source(SOURCE)
    args = ring_arguments(np.random.default_rng(2))
    want = hilbert.compile_source(SOURCE, executor="reference").ring(*args)
    assert_agree(mod.ring(*args), want)  # on the host; the build fails in the background
    assert mod.ring.program(tuple(a.shape for a in args)).wait(600)
    with pytest.warns(hilbert.HilbertWarning) as warned:
        for _ in range(3):
            assert_agree(mod.ring(*args), want)
    assert [w.message.code for w in warned] == ["W903"]
    assert "ZeroDivisionError: a bug in code generation" in str(warned[0].message)
    assert mod.ring.tier == "host"


# ---------------------------------------------------------------- threads and processes


def test_threads_making_first_calls_while_the_code_compiles(setting):
    setting("1")
    mod = hilbert.compile_source(SOURCE)
    ref = hilbert.compile_source(SOURCE, executor="reference")
    rng = np.random.default_rng(5)
    jobs = [(rng.standard_normal((3 + t % 3, 4)), rng.standard_normal((4, 2))) for t in range(8)]
    results: list = [None] * len(jobs) * 6
    start = threading.Barrier(len(jobs))

    def work(thread: int) -> None:
        start.wait()
        for turn in range(6):
            try:
                results[thread * 6 + turn] = mod.squashed(*jobs[thread])
            except Exception as err:  # noqa: BLE001 (reported below, in the test's thread)
                results[thread * 6 + turn] = err

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index, value in enumerate(results):
        assert not isinstance(value, Exception), value
        np.testing.assert_allclose(value, ref.squashed(*jobs[index // 6]), rtol=1e-12)
    for shapes in {tuple(a.shape for a in job) for job in jobs}:
        assert mod.squashed.program(shapes).wait(600)


SECOND_PROCESS = """
import json
import numpy as np
import hilbert
from hilbert.executor.llvm import compile as machine
mod = hilbert.compile_source(SOURCE)
args = [np.full((5, 5), 0.1 * (i + 1)) for i in range(4)]
mod.ring(*args)
tiers = [mod.ring.tier]
mod.ring(*args)
built = mod.ring.program(((5, 5),) * 4).wait(600)
mod.ring(*args)
tiers.append(mod.ring.tier)
print(json.dumps({"tiers": tiers, "built": built, **machine.COUNTS}))
"""


def _second_process(directory) -> dict:
    env = dict(os.environ, HILBERT_CACHE_DIR=str(directory), HILBERT_COMPILE="2")
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", SECOND_PROCESS.replace("SOURCE", repr(SOURCE))],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_background_build_uses_the_disk_cache(tmp_path):
    """HILBERT_COMPILE=2: the second call queues the build, in a thread of the process, and a
    later call runs compiled. The cold process compiles the machine code; the warm one loads
    it from the disk cache, compiling nothing."""
    cold = _second_process(tmp_path / "cache")
    assert cold["tiers"] == ["host", "compiled"] and cold["built"]
    assert cold["compiled"] > 0
    warm = _second_process(tmp_path / "cache")
    assert warm["tiers"] == ["host", "compiled"] and warm["built"]
    assert warm["compiled"] == 0 and warm["loaded"] > 0


# ---------------------------------------------------------------- planning is kept


def test_a_plan_is_made_once_per_entry_and_signature(monkeypatch, tmp_path):
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))  # (none kept on disk yet)
    made: list[str] = []
    make_plan = driver.make_plan
    monkeypatch.setattr(driver, "make_plan", lambda *a, **k: made.append(a[0]) or make_plan(*a, **k))
    mod = hilbert.compile_source(SOURCE)
    shapes = ((3, 3), (3, 4))
    first = mod.diagonal.plan(*shapes)
    again = hilbert.api.Function(mod.diagonal.entry, mod._compiled, "numba").plan(*shapes)
    assert made == ["diagonal"]  # a new function of the same definition plans nothing
    assert first.einsums == again.einsums and first.peak_bytes == again.peak_bytes
    ready = driver.plan_entry(mod.diagonal.entry, shapes)
    assert driver.plan_entry(mod.diagonal.entry, shapes) is ready
    mod.diagonal.plan((4, 4), (4, 4))  # a new signature is planned
    assert made == ["diagonal", "diagonal"]


def test_a_kept_plan_meets_the_memory_limit_of_the_time(monkeypatch):
    mod = hilbert.compile_source(SOURCE)
    shapes = ((1000, 1000), (1000, 1000))
    driver.plan_entry(mod.diagonal.entry, shapes)
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    with pytest.raises(hilbert.RuntimeHilbertError) as raised:
        driver.plan_entry(mod.diagonal.entry, shapes)
    assert raised.value.code == "E700"


def test_forget_plans_makes_planning_search_again():
    spec, shapes = rand_equation(5, 3, n_out=1, seed=11)
    shapes = tuple(tuple(s) for s in shapes)
    mod = hilbert.compile_source(f'fn f(a, b, c, d, e) ↦ einsum("{spec}", a, b, c, d, e)')
    driver.plan_entry(mod.f.entry, shapes)
    assert contraction.cache_info().currsize > 0
    driver.forget_plans()
    assert contraction.cache_info().currsize == 0 and not driver._plans
    plan = driver.plan_entry(mod.f.entry, shapes).plan
    path, info = opt_einsum.contract_path(spec, *shapes, shapes=True)
    assert plan.flops == int(info.opt_cost)


# ---------------------------------------------------------------- building ahead of the first call


@pytest.mark.parametrize("source, shapes", [
    (SOURCE, ((6, 4), (4, 3))),  # squashed: loop-free, two tiers
    (LOOP, ((), (3, 3), (3, 3))),  # a loop: it would start on the host
])
@pytest.mark.parametrize("given", ["shapes", "values"])
def test_build_compiles_before_the_first_call(setting, source, shapes, given):
    setting("never")  # (a loop-free call would otherwise never leave the host)
    f = hilbert.compile_source(source).function("squashed" if "squashed" in source else "f")
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) if s else 2.0 for s in shapes]
    plan = f.build(*(shapes if given == "shapes" else args))  # values: the calls' program too
    assert any("compiled" in note or "built" in note for note in plan.notes)
    result, compiled = compiles_during(lambda: f(*args))
    assert compiled == 0 and f.tier == "compiled"
    assert_agree(result, f.using("reference")(*args))


def test_a_build_that_fails_fails_at_build(setting, monkeypatch):
    setting("never")

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug in code generation")

    monkeypatch.setattr(codegen, "generate", broken)
    f = hilbert.compile_source(SOURCE).squashed
    with pytest.raises(hilbert.HilbertError) as err:
        f.build((6, 4), (4, 3))
    assert err.value.code == "E900" and "building squashed" in err.value.message
    assert isinstance(err.value.__cause__, ZeroDivisionError)


def test_a_model_says_which_tier_its_latest_call_ran_on(setting):
    setting("never")
    counter = hilbert.compile_source(
        "model Counter(n) : Learner {\n  weight w : Tensor[n] from 0\n"
        "  def train(rate) { w ≔ w + rate }\n  def eval(x) ≔ einsum(\"i,i->\", w, x)\n}").Counter(3)
    assert counter.tier is None
    counter.eval(np.ones(3))
    assert counter.tier == "host"  # HILBERT_COMPILE=never: a loop-free call stays there
    counter.train(1.0, steps=4)
    assert counter.tier == "host"  # and so does a loop of steps
    assert counter.eval(np.ones(3)) == 12.0
    plain = hilbert.compile_source(
        "model Counter(n) : Learner {\n  weight w : Tensor[n] from 0\n"
        "  def train(rate) { w ≔ w + rate }\n}").Counter(3)
    setting("eager")
    plain.train(1.0, steps=4)
    assert plain.tier == "compiled"  # eager: built before the first call, as before


def test_a_train_call_never_waits_for_a_slow_compiler(monkeypatch, slow_compiler, rng):
    """A model's train call whose code is still compiling runs its steps on the host, with the
    reference executor's answer; once the build ends the next call runs compiled."""
    monkeypatch.setenv(numba_exec.COMPILE_ENVIRONMENT, "background")
    source = ("model Fit(n) : Learner {\n  weight w : Tensor[n] from 0\n"
              "  def train(x, y, rate) {\n"
              "    w ≔ w − rate · einsum(\"ni,n->i\", x, einsum(\"ni,i->n\", x, w) − y)\n  }\n}")
    x, y = rng.standard_normal((20, 3)), rng.standard_normal(20)
    fit = hilbert.compile_source(source).Fit(3)
    ref = hilbert.compile_source(source, executor="reference").Fit(3)
    fit.train(x, y, 0.01, steps=30)
    ref.train(x, y, 0.01, steps=30)
    assert fit.tier == "host"
    np.testing.assert_allclose(fit.weights["w"], ref.weights["w"], rtol=1e-12)
    expected = np.zeros(3)
    for _ in range(30):
        expected = expected - 0.01 * x.T @ (x @ expected - y)
    np.testing.assert_allclose(fit.weights["w"], expected, rtol=1e-12)
    slow_compiler.set()
    train = fit._functions["train"]
    (program,) = train._by_shapes.values()
    assert program.wait(600)
    fit.train(x, y, 0.01, steps=30)
    ref.train(x, y, 0.01, steps=30)
    assert fit.tier == "compiled"
    np.testing.assert_allclose(fit.weights["w"], ref.weights["w"], rtol=1e-12)


@pytest.mark.parametrize("shown", ["1", "0"])
def test_a_build_the_first_call_waits_for_says_so(shown, capsys, monkeypatch):
    """docs/architecture.md, "Tiers": a call that waits for the compiler shows a line on the
    terminal (HILBERT_PROGRESS=1 forces it here, and the delay before it is set to 0); the
    next call of the signature, which waits for nothing, shows none."""
    from hilbert.compiler import terminal

    from hilbert import progress

    monkeypatch.setattr(terminal, "BUILD_LINE_DELAY_S", 0)
    monkeypatch.setenv(progress.ENVIRONMENT, shown)
    f = hilbert.compile_source(LOOP).f
    a, b = np.eye(3) * 0.5, np.ones((3, 3))
    f(2.0, a, b)
    first = capsys.readouterr().err
    f(3.0, a, b)
    second = capsys.readouterr().err
    assert ("compiling f for scalar, 3×3, 3×3" in first) == (shown == "1")
    assert second == ""


#: A process under NUMBA_DISABLE_JIT=1 (Numba's debugging mode): SOURCE's ring, called.
_NOT_JITTED = """
import json
import numpy as np
import hilbert
mod = hilbert.compile_source(SOURCE)
args = [np.full((5, 5), 0.1 * (i + 1)) for i in range(4)]
value = mod.ring(*args)
print(json.dumps({"value": float(value), "tier": mod.ring.tier,
                  "notes": mod.ring.plan(*(a.shape for a in args)).all_notes}))
"""


def test_numba_disable_jit_keeps_every_call_on_the_host(tmp_path):
    """NUMBA_DISABLE_JIT=1 runs the shared kernels compiled code calls as Python: nothing is
    compiled, every call runs on the host tier (even under HILBERT_COMPILE=eager), with NumPy's
    answer, and the plan says why."""
    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_DISABLE_JIT="1",
               HILBERT_COMPILE="eager")
    done = subprocess.run([sys.executable, "-c", _NOT_JITTED.replace("SOURCE", repr(SOURCE))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["tier"] == "host"
    assert any("NUMBA_DISABLE_JIT=1" in n and "nothing is compiled" in n
               for n in report["notes"]), report["notes"]
    args = [np.full((5, 5), 0.1 * (i + 1)) for i in range(4)]
    np.testing.assert_allclose(report["value"], np.einsum("ij,jk,kl,li->", *args), rtol=1e-12)
