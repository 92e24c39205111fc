"""`f.vjp` and `f.jvp` against JAX's own autodiff, on every differentiable definition of the
Prelude: JAX differentiates (forward mode, jax.jvp) the definition's forward program as
executor="jax" lowers it (the values only: none of hilbert's derivative rules is in it), and
hilbert's jvp must give the same tangent, and hilbert's pullback the same ⟨ȳ, J ẋ⟩, to 1e-10.
(JAX's forward mode, not its reverse mode: a loop whose step count is an argument lowers to a
while loop, which JAX differentiates forwards only.) The table of how to call each definition
is tests/test_prelude_gradients.py's. Skipped without JAX.

Entries where JAX's tangent is NaN are left out of the comparison (and get no cotangent):
hilbert writes ones as x⁰ and masks as arithmetic with ±1e300, and JAX's rules give 0·∞ there
(the slope of x⁰ at x = 0 is 0·x⁻¹; the slope of exp at −1e300 is 0 times a huge tangent), where
hilbert's own rules say 0. That happens in four definitions: in two causal attentions at some
entries, and in accuracyLast and tally (piecewise constant: counts of argmax marks) at every
entry, which JAX_ALL_NAN names; all their entries are checked against finite differences in
test_products.py. Every other output must keep some finite entries: no comparison is empty.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_prelude_gradients import CHECKS, prelude

jax = pytest.importorskip("jax")

KEYS = sorted(CHECKS)
#: Definitions whose every tangent JAX's forward mode gives as NaN (see above).
JAX_ALL_NAN = {("Losses", "accuracyLast"), ("Policies", "tally")}


@pytest.mark.parametrize("module,key", KEYS, ids=[f"{m}.{k}" for m, k in KEYS])
def test_products_equal_jax_forward_mode_of_the_lowered_program(module, key):
    check = CHECKS[module, key]
    function = prelude(module).function(check.name)
    params = function.entry.params
    args = tuple(check.args[p] for p in params)
    g = np.random.default_rng(len(key) + 7)
    tangents = tuple(g.normal(size=np.shape(a)) if p in check.wrt else np.zeros(np.shape(a))
                     for p, a in zip(params, args, strict=True))
    program = function.using("jax").program(tuple(np.shape(a) for a in args), "float64")
    forward = program.traceable(args)
    with jax.enable_x64(True):
        _, theirs = jax.jvp(forward, args, tangents)
    theirs = tuple(map(np.asarray, theirs)) if isinstance(theirs, tuple) else (np.asarray(theirs),)
    outputs, ours = function.jvp(args, tangents)
    ours = ours if isinstance(ours, tuple) else (ours,)
    finite = tuple(np.isfinite(t) for t in theirs)
    if (module, key) in JAX_ALL_NAN:
        assert not any(f.any() for f in finite)  # (if JAX gives numbers, compare them)
        return
    assert all(f.any() for f in finite)
    for mine, jax_tangent, known in zip(ours, theirs, finite, strict=True):
        np.testing.assert_allclose(np.asarray(mine)[known], jax_tangent[known], rtol=1e-10,
                                   atol=1e-10, err_msg=f"jvp of {check.name}")
    cotangents = tuple(np.where(known, g.normal(size=np.shape(t)), 0.0)
                       for t, known in zip(theirs, finite, strict=True))
    theirs = tuple(np.where(known, t, 0.0) for t, known in zip(theirs, finite, strict=True))
    _, pullback = function.vjp(*args)
    grads = pullback(cotangents if isinstance(outputs, tuple) else cotangents[0])
    along = sum(np.sum(c * t) for c, t in zip(cotangents, theirs, strict=True))
    back = sum(np.sum(grads[i] * tangents[i]) for i, p in enumerate(params) if p in check.wrt)
    assert back == pytest.approx(along, rel=1e-10, abs=1e-10), f"vjp of {check.name}"
