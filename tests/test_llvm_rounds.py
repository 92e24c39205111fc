"""The LLVM back end's second round of optimisation for functions with a parallel nest
(executor/llvm/compile.py: `rounds`): the convolve's nest, whose 16-tap sum is a short inner
loop under a long one, gets two rounds, and in the second the vectoriser's trip-count tests
leave the output loop and the sum's vector remainder is unrolled, as in the machine code
Numba keeps on disk for the same nest (the first round alone left it a loop, ×1.2 slower).

The structure is read from the optimised IR for one named x86-64 CPU with 512-bit vectors,
whatever this machine is, so the counts are the same on every machine (on this 2-core Zen 5
and that CPU: 11 masked loads in one round, 47 in two); the values are checked against
NumPy's correlate computed here."""

from __future__ import annotations

import llvmlite.binding as binding
import numpy as np
import pytest
from hilbert.executor.llvm import compile
from hilbert.executor.numba.executor import regions_of

import hilbert

SOURCE = """
open Prelude.Networks
fn filtered(x, k) ↦ convolve(x, k)
fn doubled(x) ↦ 2 · x
fn normed(x) ↦ layerNorm(x)
fn squashed(x) ↦ tanh(x) · 2
"""
#: A CPU LLVM's x86 target knows, whose vectors are 512 bits (8 float64: LLVM keeps an Intel
#: AVX-512 CPU's to 256) and whose loads can be masked: the IR is optimised for it here, not
#: for this machine.
CPU = "znver4"
TRIPLE = "x86_64-unknown-linux-gnu"


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE, name="llvm_rounds.hb")


def _lowering(function, *shapes):
    """The generated function of `function`'s program for `shapes`, as the LLVM back end
    lowered it (one region)."""
    prepared = function._prepare(shapes, "float64")
    prepared.build()
    (made,) = [r.lowering for r in regions_of(prepared.runner) if r.lowering is not None]
    return made


def _masked_loads(text: str, passes: int) -> int:
    """How many masked vector loads the optimised IR of `text` makes (level 3, `passes`
    rounds) for `CPU`: each is one vector of the signal read where the window may pass its end,
    so unrolling the sum's remainder multiplies them."""
    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()
    machine = binding.Target.from_triple(TRIPLE).create_target_machine(cpu=CPU, opt=3)
    parsed = binding.parse_assembly(text, context=binding.create_context())
    parsed.triple = TRIPLE
    parsed.data_layout = str(machine.target_data)
    compile._optimise(parsed, machine, 3, passes)
    return str(parsed).count("@llvm.masked.load")


def test_a_parallel_nest_is_optimised_in_two_rounds(module):
    made = _lowering(module.function("filtered"), (4, 100_000), (16,))
    assert (made.level, made.passes) == (3, compile.PARALLEL_ROUNDS) and made.passes == 2
    once, twice = _masked_loads(made.text, 1), _masked_loads(made.text, made.passes)
    assert once > 0 and twice >= 3 * once, (once, twice)


def test_a_function_without_a_parallel_nest_is_optimised_once(module):
    made = _lowering(module.function("doubled"), (4, 8))
    assert (made.level, made.passes) == (3, 1)
    assert [compile.rounds(level, parallel) for level in (1, 2, 3) for parallel in (0, 1)] == [
        1, 1, 1, 1, 1, 2]


@pytest.mark.parametrize("name", ["normed", "squashed"])
def test_a_parallel_nest_of_rows_with_one_loop_inside_is_optimised_once(module, name):
    """Rows whose work is one loop deep (a layer norm's, an entrywise nest's) gain nothing
    from a second round, which would only lengthen their cold compile."""
    made = _lowering(module.function(name), (4096, 512))
    assert made.level == 3 and made.passes == 1
    assert "hb_rows" in made.text  # (its nest does run on threads)


def test_two_rounds_give_the_correlation(module):
    rng = np.random.default_rng(3)
    x, k = rng.normal(size=(4, 100_000)), rng.normal(size=16)
    got = np.asarray(module.function("filtered")(x, k))
    padded = np.concatenate([x, np.zeros((4, 15))], axis=1)
    want = np.array([np.correlate(row, k, "valid") for row in padded])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
