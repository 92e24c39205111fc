"""math="fast" (issue 23, item 4): compiled exp within 2 ulp and tanh within 4 ulp of NumPy on
every finite input of test_vector_math's grids, NumPy's values on special inputs, division by a
value a loop does not change as a multiplication by its reciprocal (no check, no second run);
whole programs within a few ulp of NumPy on every executor; the plan saying so; the mode chosen
by load/compile_source, Function.using, HILBERT_MATH, carried by pickles and model classes; an
E600 for any other mode. The default stays what it was: the golden guard (tests/golden) holds
every default program's code byte for byte, and test_vector_math its exact functions."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hilbert.grammar.errors import HilbertError
from test_vector_math import SPECIALS, applied, requires_jit, same_values, within

import hilbert

#: The most each fast function may differ from NumPy, in units in the last place.
FAST_ULPS = {"exp": 2, "tanh": 4}
NUMPY = {"exp": np.exp, "tanh": np.tanh}

SOURCE = """open Prelude.Networks
open Prelude.Arithmetic
fn normed(a) ↦ layerNorm(a)
fn soft(s) ↦ softmaxRows(s)
fn curve(a) ↦ tanh(a) · exp(a / 7)
fn scaled(a, s) ↦ a / s
"""


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")


@requires_jit
@pytest.mark.parametrize("name", list(FAST_ULPS))
def test_fast_kernels_are_within_their_ulps_of_numpy(name, rng):
    within(name, f"{name}_fast", FAST_ULPS[name], rng)


@requires_jit
@pytest.mark.parametrize("name", list(FAST_ULPS))
def test_fast_kernels_give_numpys_special_values(name):
    x = np.array(SPECIALS[name])
    with np.errstate(all="ignore"):
        assert same_values(applied(f"{name}_fast", x), NUMPY[name](x))


def _relative(got, want):
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), np.finfo(float).tiny))


def _numpy_layer_norm(a):
    centred = a - a.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("executor", ["numba", "dask", "reference"])
def test_fast_programs_agree_with_numpy(eager, executor, rng):
    module = hilbert.compile_source(SOURCE, math="fast", executor=executor)
    a = rng.normal(size=(48, 40)) * 3
    eps = np.finfo(np.float64).eps
    assert _relative(module.curve(a), np.tanh(a) * np.exp(a / 7)) < 16 * eps
    assert _relative(module.scaled(a, 3.0), a / 3.0) < 4 * eps
    shifted = np.exp(a - a.max(axis=1, keepdims=True))
    assert _relative(module.soft(a), shifted / shifted.sum(axis=1, keepdims=True)) < 64 * eps
    assert np.max(np.abs(module.function("normed")(a) - _numpy_layer_norm(a))) < 1e-12


def _source(f, *args) -> str:
    return f.program(tuple(np.shape(a) for a in args)).region.source


def test_fast_code_calls_the_fast_kernels_and_divides_by_reciprocals(rng):
    fast = hilbert.compile_source(SOURCE, math="fast")
    exact = hilbert.compile_source(SOURCE)
    a = rng.normal(size=(16, 12))
    assert "K.tanh_fast(" in _source(fast.curve, a) and "K.exp_fast(" in _source(fast.curve, a)
    assert "K.tanh(" in _source(exact.curve, a) and "_fast" not in _source(exact.curve, a)
    for name in ("soft", "normed"):
        assert "K.quotient" not in _source(fast.function(name), a)
        assert "K.quotient" in _source(exact.function(name), a)
    assert "* rec" in _source(fast.scaled, a, 2.0)


def test_the_plan_says_which_maths_runs(rng):
    a = rng.normal(size=(16, 12))
    fast = hilbert.compile_source(SOURCE, math="fast").curve.plan(a)
    exact = hilbert.compile_source(SOURCE).curve.plan(a)
    assert 'maths: fast (math="fast")' in str(fast)
    assert "maths: fast" not in str(exact)


def test_a_mode_is_chosen_by_argument_setting_or_using(monkeypatch, eager, rng):
    a = rng.normal(size=(16, 12))
    monkeypatch.setenv("HILBERT_MATH", "fast")
    assert "K.tanh_fast(" in _source(hilbert.compile_source(SOURCE).curve, a)
    assert "K.tanh_fast(" not in _source(hilbert.compile_source(SOURCE, math="exact").curve, a)
    monkeypatch.delenv("HILBERT_MATH")
    exact = hilbert.compile_source(SOURCE).curve
    made_fast = exact.using(math="fast")
    assert "K.tanh_fast(" in _source(made_fast, a)
    assert made_fast.using("reference").options == {"math": "fast"}  # kept across executors
    assert "K.tanh_fast(" not in _source(exact, a)  # (programs kept apart)


def test_pickles_keep_the_mode(rng):
    module = hilbert.compile_source(SOURCE, math="fast")
    a = rng.normal(size=(16, 12))
    again = pickle.loads(pickle.dumps(module))
    assert "K.tanh_fast(" in _source(again.curve, a)
    function = pickle.loads(pickle.dumps(module.curve))
    assert "K.tanh_fast(" in _source(function, a)


MODEL = """open Prelude.Networks
model Squash(d, seed) : Learner {
  weight w : Tensor[d, d] from gaussian(seed)
  def out(x) ≔ tanh(einsum("nd,de->ne", x, w))
}
"""


def test_model_classes_take_the_mode(eager, rng):
    fast = hilbert.compile_source(MODEL, math="fast").model("Squash")
    exact = hilbert.compile_source(MODEL).model("Squash")
    x = rng.normal(size=(8, 4)) * 2
    assert fast._functions["out"].options == {"math": "fast"}
    assert exact._functions["out"].options == {}
    learner = fast(4, 7)
    got, want = learner.out(x), np.tanh(x @ learner.w)
    # tanh's 4 ulp, and what the product's own rounding (its order of additions, not NumPy's)
    # can move tanh's argument by, which tanh (slope ≤ 1) passes on at most
    eps = np.finfo(np.float64).eps
    bound = FAST_ULPS["tanh"] * np.spacing(np.abs(want)) + 4 * eps * (np.abs(x) @ np.abs(learner.w))
    assert np.all(np.abs(got - want) <= bound)
    assert pickle.loads(pickle.dumps(learner)).__class__._math == "fast"


@pytest.mark.parametrize("where", ["argument", "using", "setting"])
def test_an_unknown_mode_is_e600(monkeypatch, where):
    with pytest.raises(HilbertError) as caught:
        if where == "argument":
            hilbert.compile_source(SOURCE, math="quick")
        elif where == "using":
            hilbert.compile_source(SOURCE).curve.using(math="quick")
        else:
            monkeypatch.setenv("HILBERT_MATH", "quick")
            hilbert.compile_source(SOURCE)
    assert caught.value.code == "E600" and "quick" in str(caught.value)
