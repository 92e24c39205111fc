"""The dask executor: every Prelude definition equals the numba executor (1e-12) on a chunked
local run and on a two-process LocalCluster; dask arrays stay lazy; loops run step by step; a
batch four times the memory limit runs within the limit on every worker; the plan tells the
task graph and the blocks; options and errors are coded. Without dask these fail, unless
HILBERT_TEST_WITHOUT=dask says the run leaves them out (tests/conftest.py)."""

from __future__ import annotations

import resource
from pathlib import Path

import numpy as np
import pytest
from conftest import needs

dask = needs("dask")
da = needs("dask.array")
distributed = needs("distributed")

from hilbert.grammar.errors import HilbertError  # noqa: E402
from test_numba_executor import SIGNATURES as NUMBA_SIGNATURES  # noqa: E402
from test_numba_executor import argument, assert_agree  # noqa: E402

import hilbert  # noqa: E402
from hilbert.cli import main  # noqa: E402

PRELUDE = Path(hilbert.__file__).resolve().parent.parent / "prelude"
MODULES = tuple(f"Prelude.{p.stem}" for p in sorted(PRELUDE.glob("*.hb")))

SIZES = {"n": 6, "p": 3, "h": 4, "q": 2, "m": 5, "e": 3, "c": 2, "k": 3, "b": 4, "L": 7,
         "K": 2, "T": 4, "w": 3, "z": 2, "d": 3, "B": 5, "E": 3, "D": 2, "G": 4, "H": 3,
         "F": 3, "S": 4, "M": 3, "N": 2, "l": 2, "1": 1}

#: Parameters of the Prelude modules test_numba_executor.py has no table for, written as its
#: SIGNATURES are (letters from SIZES, or a kind of scalar); `:labels` are whole numbers
#: 0 … k−1 (class numbers, ids, counts); `:marks` are 0/1, one 1 in every row of a matrix
#: (one-hot) or anywhere in a vector (flags).
SIGNATURES = NUMBA_SIGNATURES | {
    # Losses
    "logSoftmax": "z:nk", "crossEntropy": "z:nk labels:n:labels",
    "softCrossEntropy": "z:nk y:nk:unit", "smoothedLabels": "labels:n:labels z:nk alpha:unit",
    "accuracy": "z:nk labels:n:labels", "binaryTerms": "z:nq y:nq:unit",
    "binaryCrossEntropy": "z:nq y:nq:unit", "mse": "p:nq y:nq", "huberTerms": "r:nq delta:unit",
    "huber": "p:nq y:nq delta:unit", "absoluteError": "p:nq y:nq",
    "logSoftmaxLast": "z:nLk", "crossEntropyLast": "z:nLk labels:nL:labels",
    "softCrossEntropyLast": "z:nLk y:nLk:unit",
    "maskedCrossEntropy": "z:nLk labels:nL:labels mask:nL:marks",
    "smoothedLabelsLast": "labels:nL:labels z:nLk alpha:unit",
    "accuracyLast": "z:nLk labels:nL:labels", "maskedAccuracy": "z:nLk labels:nL:labels mask:nL:marks",
    "lastMaximum": "z:nLk", "lastArgmax": "z:nLk", "classCount": "z:nLk", "spreadLast": "v:nL z:nLk",
    # Norms
    "batchNorm": "z:nd gain:d shift:d", "batchNormEval": "z:nd mean:d var:d:unit gain:d shift:d",
    "runningMean": "run:d z:nd m:unit", "runningVar": "run:d z:nd m:unit", "batchVar": "z:nd",
    "layerNormed": "a:nd gain:d shift:d", "rmsNorm": "a:nd gain:d", "rowCentred": "a:nd",
    "rowSpread": "a:nd", "gelu": "z:nd", "geluTanh": "z:nd", "silu": "z:nd",
    "dropout": "x:nd p:unit key:index step:index",
    # Optimisers
    "sgd": "w:np g:np r:rate", "momentum": "w:np v:np g:np r:rate mu:unit",
    "nesterov": "w:np v:np g:np r:rate mu:unit",
    "adam": "w:np m:np v:np:unit g:np t:index r:rate b1:unit b2:unit eps:tiny",
    "adamW": "w:np m:np v:np:unit g:np t:index r:rate b1:unit b2:unit eps:tiny decay:rate",
    "clipScale": "norm:positive c:unit", "squares": "w:np", "vectorSquares": "b:n",
    "cosineRate": "step:index total:steps peak:unit low:rate",
    "warmupCosine": "step:index total:steps warm:index peak:unit low:rate start:tiny",
    # Sequences (G = 4 gates for an LSTM, H = 3 for a GRU and for peepholes)
    "lstmCell": "x:BE h:BD c:BD wx:EDG wh:DDG b:DG",
    "lstm": "x:TBE h:BD c:BD wx:EDG wh:DDG b:DG",
    "peepholeCell": "x:BE h:BD c:BD wx:EDG wh:DDG b:DG p:DH",
    "peepholeLstm": "x:TBE h:BD c:BD wx:EDG wh:DDG b:DG p:DH",
    "affine": "x:BE h:BD wx:EDG wh:DDG b:DG", "biasOf": "h:BD b:DG", "gate": "z:BDG k:index",
    "peep": "c:BD p:DH k:index", "inputsOf": "x:TBE wx:EDG",
    "lstmSteps": "n:index a:TBGD h:BD c:BD wh:DGD b:GD",
    "lstmFrom": "a:BGD h:BD c:BD wh:DGD b:GD", "middle": "w:DDG", "slab": "z:BGD k:index",
    "biasAlong": "z:BGD b:GD",
    "peepholeSteps": "n:index x:TBE h:BD c:BD wx:EDG wh:DDG b:DG p:DH",
    "gruCell": "x:BE h:BD wx:EDH wh:DDH bx:DH bh:DH", "gru": "x:TBE h:BD wx:EDH wh:DDH bx:DH bh:DH",
    "choCell": "x:BE h:BD wx:EDH wh:DDH b:DH", "choGru": "x:TBE h:BD wx:EDH wh:DDH b:DH",
    "layer": "w:DDH k:index", "gruSteps": "n:index a:TBHD h:BD wh:DHD bx:HD bh:HD",
    "gruFrom": "a:BHD h:BD wh:DHD bx:HD bh:HD",
    "choSteps": "n:index x:TBE h:BD wx:EDH wh:DDH b:DH",
    "attend": "q:BTF k:BSF v:BSl", "causalAttend": "q:BTF k:BTF v:BTl",
    "attention": "x:BTM wq:MF wk:MF wv:Ml", "multiHead": "x:BTM wq:NMF wk:NMF wv:NMl wo:NlM",
    "causalMultiHead": "x:BTM wq:NMF wk:NMF wv:NMl wo:NlM", "layerNormSeq": "x:BTM gain:M shift:M",
    "project": "x:BTM w:MF", "scores": "q:BTF k:BSF", "masked": "s:BTT", "alongLast": "x:BTM v:BT",
    "softmaxLast": "s:BTS", "heads": "x:BTM wq:NMF wk:NMF wv:NMl causal:unit",
    "drawn": "u:np:unit n:positive", "hazardOf": "x:np b:p",
    # Multivariate (gram is LinearAlgebra's, above)
    "coefficients": "x:np y:n", "moment": "x:np y:n", "withIntercept": "x:np",
    "columnScales": "x:np", "scaledColumns": "x:np", "onesColumn": "x:np", "apply": "x:np b:p",
    "fitted": "x:np y:n", "residuals": "x:np y:n", "rSquared": "x:np y:n",
    # Kernels: m queries, n known points (softmaxRows is Arithmetic's, above)
    "sqDistances": "z:mp x:np", "distances": "z:mp x:np", "cityBlock": "z:mp x:np",
    "linearKernel": "z:mp x:np", "gaussianKernel": "z:mp x:np w:positive",
    "polynomialKernel": "z:mp x:np c:unit d:index",
    # Neighbours: k = 3 classes, one per known point; two neighbours
    "knnClassify": "z:mp x:np g:nk:marks k:index", "knnShares": "z:mp x:np g:nk:marks k:index",
    "knnRegress": "z:mp x:np y:n k:index", "knnVotes": "z:mp x:np g:nk:marks k:index",
    "nearestOf": "z:mp x:np k:index", "pickNearest": "t:index d:mn chosen:mn:marks",
    "centroidPredict": "z:mp x:np g:nk:marks", "centroids": "x:np g:nk:marks",
    "classSizes": "g:nk:marks",
    # Policies: S = 4 states, k = 3 actions, counts 0 … 2 (ones is Arithmetic's, above)
    "exploring": "v:Sk eps:unit", "confident": "v:Sk c:positive n:Sk:labels",
    "greedyShares": "v:Sk", "upperBounds": "v:Sk c:positive n:Sk:labels",
    "marked": "ids:k:ids a:n:labels", "actionIds": "v:Sk", "tally": "t:1k a:n:labels w:n",
    "safe": "c:Sk:labels",
    # Temporal: a table of S = 4 states and k = 3 actions, a batch of n steps
    "qTarget": "q:Sk s2:nS:marks rw:n gamma:unit done:n:marks",
    "sarsaTarget": "q:Sk s2:nS:marks a2:nk:marks rw:n gamma:unit done:n:marks",
    "expectedSarsaTarget": "q:Sk s2:nS:marks policy:Sk:unit rw:n gamma:unit done:n:marks",
    "nudged": "q:Sk s:nS:marks a:nk:marks target:n rate:unit", "stateIds": "q:Sk",
    "rowMost": "q:Sk", "greedyOf": "q:Sk", "taken": "q:Sk s:nS:marks a:nk:marks",
    # Fields: entrywise over vectors of positive rates and sizes
    "safetyLoading": "c:n:unit lam:n:unit m:n:unit", "adjustment": "c:n:unit lam:n:unit m:n:unit",
    "lundberg": "u:n:unit c:n:unit lam:n:unit m:n:unit",
    "ruinChance": "u:n:unit c:n:unit lam:n:unit m:n:unit", "surplusAfter": "u:n c:n t:n:unit s:n",
}
FAILS_BY_DESIGN = {"meanPool"}  # the seed's rank error, on every executor
RTOL = 1e-12


def arguments(name: str, seed: int = 11) -> list:
    """Arguments for `name` from its signature (whole numbers for `labels`, 0/1 for `marks`;
    three steps for a loop, each a round trip to the scheduler)."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in SIGNATURES[name].split():
        if spec.endswith((":labels", ":marks")):
            out.append(_whole(spec, rng))
        else:
            out.append(3.0 if spec.endswith(":steps") else argument(spec, rng, SIZES))
    return out


def _whole(spec: str, rng: np.random.Generator) -> np.ndarray:
    """Labels 0 … k−1, or marks: one-hot rows of a matrix, 0/1 entries of a vector."""
    _, letters, kind = spec.split(":")
    shape = tuple(SIZES[ch] for ch in letters)
    if kind == "labels":
        return rng.integers(0, SIZES["k"], shape).astype(float)
    if len(shape) == 2:
        return np.eye(shape[1])[rng.integers(0, shape[1], shape[0])]
    return rng.integers(0, 2, shape).astype(float)


def _every_definition():
    for module in MODULES:
        for name in hilbert.open(module).definitions:
            yield module, name


EVERY = list(_every_definition())


@pytest.fixture(scope="module")
def modules():
    """Every Prelude module, once per module of this file."""
    return {m: hilbert.open(m) for m in MODULES}


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of two worker processes (one thread each) and its client, for this file."""
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as local:
        with distributed.Client(local, set_as_default=False) as client:
            yield client


def _agree_or_fail_alike(fast, other, args) -> None:
    if fast.__name__ in FAILS_BY_DESIGN:
        with pytest.raises(HilbertError) as expected:
            fast(*args)
        with pytest.raises(HilbertError) as raised:
            other(*args)
        assert raised.value.code == expected.value.code
        return
    want, got = fast(*args), other(*args)
    for g, w in zip(got, want, strict=True) if isinstance(want, tuple) else [(got, want)]:
        assert_agree(g, w, RTOL)


def test_every_definition_has_a_signature_here():
    names = {n for _, n in EVERY}
    assert len(MODULES) >= 8 and len(names) > 150
    assert names - FAILS_BY_DESIGN <= set(SIGNATURES)
    for module, name in EVERY:  # an entry per parameter (a name two modules define: both alike)
        params = hilbert.open(module).function(name).entry.params
        assert len(SIGNATURES[name].split()) == len(params), f"{module}.{name}: {params}"


# ---------------------------------------------------------------- every Prelude definition

@pytest.mark.parametrize("module, name", EVERY)
def test_every_prelude_definition_on_chunked_local_dask(modules, module, name):
    """Every array argument in blocks of two rows (so blocks meet blocks cut otherwise), on
    dask's local threads."""
    fast = modules[module].function(name)
    args = arguments(name)
    chunks = {p: 2 for p, a in zip(fast.entry.params, args, strict=True) if np.ndim(a)}
    _agree_or_fail_alike(fast, fast.using("dask", chunks=chunks), args)


def test_every_prelude_definition_on_a_local_cluster(modules, cluster):
    """The first array argument in blocks of two rows (the default's axis), on two worker
    processes. Every call's graph is built first (loops and conditions run as they are built)
    and all are computed together: one round trip, not one per definition."""
    calls = []
    with cluster.as_current():
        for module, name in EVERY:
            fast, args = modules[module].function(name), arguments(name, seed=12)
            if name in FAILS_BY_DESIGN:
                _agree_or_fail_alike(fast, fast.using("dask", chunks=2), args)
                continue
            calls.append((name, fast(*args), fast.using("dask", chunks=2, compute=False)(*args)))
        answers = dask.compute(*[lazy for _, _, lazy in calls])
    assert len(answers) == len(EVERY) - len(FAILS_BY_DESIGN)
    for (name, want, _), got in zip(calls, answers, strict=True):
        for g, w in zip(got, want, strict=True) if isinstance(want, tuple) else [(got, want)]:
            try:
                assert_agree(g, w, RTOL)
            except AssertionError as err:
                raise AssertionError(f"{name} differs from the numba executor: {err}") from None


# ---------------------------------------------------------------- lazy values and options

def test_dask_arrays_stay_lazy_unless_compute(rng):
    dense = hilbert.open("Prelude.Networks").function("outputs")
    x, w1, w2 = rng.normal(size=(40, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    want = np.maximum(x @ w1, 0) @ w2
    lazy = dense.using("dask")(da.from_array(x, chunks=10), w1, w2)
    assert isinstance(lazy, da.Array) and lazy.numblocks == (4, 1)
    np.testing.assert_allclose(lazy.compute(), want, rtol=1e-12)
    eager = dense.using("dask", compute=True)(da.from_array(x, chunks=10), w1, w2)
    assert type(eager) is np.ndarray
    np.testing.assert_allclose(eager, want, rtol=1e-12)
    numpy_in = dense.using("dask", chunks=7)(x, w1, w2)  # NumPy arguments: NumPy answer
    assert type(numpy_in) is np.ndarray
    np.testing.assert_allclose(numpy_in, want, rtol=1e-12)


@pytest.mark.parametrize("refused", [False, True])
def test_an_entrywise_region_is_one_kernel_unless_the_llvm_back_end_refuses_it(
        refused, rng, monkeypatch, lowered_afresh):
    """sin(x)·2 + 1 on blocks is one blockwise kernel the LLVM back end compiles; with np.sin
    refused (for the test's sake) the region is not fused, its operations run as dask's own
    ufuncs, and the answer is NumPy's either way."""
    from hilbert.executor import llvm
    from hilbert.executor.dask import kernels
    from hilbert.executor.llvm import runtime

    lowered = runtime.call

    def refusing(lowering, fn, args, result):
        if fn == "np.sin":
            raise llvm.Unsupported("a call of np.sin (refused by the test)")
        return lowered(lowering, fn, args, result)

    if refused:
        monkeypatch.setattr(runtime, "call", refusing)
    monkeypatch.setattr(kernels, "_FUNCTIONS", {})
    name = f"dask_refused_{refused}.hb"
    f = hilbert.compile_source("fn f(x) ↦ sin(x) · 2 + 1", name=name, executor="dask").f
    x = rng.normal(size=(40, 3))
    got = f(da.from_array(x, chunks=10)).compute()
    np.testing.assert_allclose(got, np.sin(x) * 2 + 1, rtol=1e-12, atol=1e-14)
    assert [type(k).__name__ for k in kernels._FUNCTIONS.values()] == ([] if refused else
                                                                        ["Lowered"])


def test_a_scalar_answer_is_a_float_and_integer_arrays_are_read_as_float64():
    stats = hilbert.open("Prelude.Statistics")
    got = stats.mean.using("dask", chunks=3)(x=np.arange(10))
    assert type(got) is float and got == 4.5
    lazy = stats.mean.using("dask")(da.arange(10, chunks=4))
    assert isinstance(lazy, da.Array) and float(lazy.compute()) == 4.5


def test_the_answer_is_never_an_input():
    same = hilbert.compile_source("fn same(x) ↦ x").same.using("dask")
    x = np.ones((4, 2))
    got = same(x)
    got[0, 0] = 7.0
    assert x[0, 0] == 1.0


@pytest.mark.parametrize("options, words", [
    ({"chunk": 3}, "no option(s) chunk"),
    ({"chunks": 0}, "chunks=0"),
    ({"chunks": "rows"}, "chunks='rows'"),
    ({"chunks": {"x": None}}, "keys are parameter names"),
    ({"compute": "yes"}, "compute='yes'"),
])
def test_options_are_checked_where_they_are_given(options, words):
    dense = hilbert.open("Prelude.Networks").function("dense")
    with pytest.raises(HilbertError) as raised:
        dense.using("dask", **options)
    assert raised.value.code == "E600" and words in raised.value.message


def test_other_executors_take_no_options():
    dense = hilbert.open("Prelude.Networks").function("dense")
    with pytest.raises(HilbertError) as raised:
        dense.using("numba", chunks=3)
    assert raised.value.code == "E600" and "it takes none" in raised.value.message


def test_chunks_that_do_not_fit_the_call_are_coded_errors(rng):
    dense = hilbert.open("Prelude.Networks").function("dense")
    a, w = rng.normal(size=(6, 3)), rng.normal(size=(3, 2))
    for chunks, words in [({"b": 2}, "not parameter(s) of dense"),
                          ({"a": (4, 4, 4)}, "do not fit its shape 6×3")]:
        with pytest.raises(HilbertError) as raised:
            dense.using("dask", chunks=chunks)(a, w)
        assert raised.value.code == "E600" and words in raised.value.message
    with pytest.raises(HilbertError) as raised:
        hilbert.open("Prelude.Arithmetic").descend.using("dask", chunks={"r": 2})(a, a, 0.1)
    assert "it is a number" in raised.value.message


def test_using_keeps_the_options_of_the_same_executor():
    dense = hilbert.open("Prelude.Networks").function("dense").using("dask", chunks=2)
    assert dense.using(optimize="greedy").options == {"chunks": 2}
    assert dense.using("numba").options == {}


def test_a_bad_dask_argument_is_a_coded_error():
    dense = hilbert.open("Prelude.Networks").function("dense").using("dask")
    with pytest.raises(HilbertError) as raised:
        dense(da.from_array(np.array([["a", "b"]])), np.ones((2, 2)))
    assert raised.value.code == "E601"
    unknown = da.ones((4, 2), chunks=2)
    unknown = unknown[unknown[:, 0] > 0]  # rows not known until computed
    with pytest.raises(HilbertError) as raised:
        dense(unknown, np.ones((2, 2)))
    assert raised.value.code == "E601" and "compute_chunk_sizes" in raised.value.message


def test_without_dask_the_executor_is_a_coded_error(monkeypatch):
    import sys

    from hilbert import executor

    for module in [m for m in sys.modules if m.startswith("hilbert.executor.dask")]:
        monkeypatch.delitem(sys.modules, module)  # as if never imported
    monkeypatch.delattr(executor, "dask", raising=False)
    monkeypatch.setitem(sys.modules, "dask", None)  # `import dask` fails as if not installed
    with pytest.raises(HilbertError) as raised:
        executor.get_executor("dask")
    assert raised.value.code == "E600" and "pip install 'hilbert[dask]'" in raised.value.message


# ---------------------------------------------------------------- errors from inside tasks

def test_an_error_inside_a_task_is_the_same_coded_error(cluster):
    losses = hilbert.open("Prelude.Losses")
    z = np.zeros((6, 3))
    labels = np.array([0, 1, 2, 0, 1, 7.0])  # 7 is no class of 3
    with pytest.raises(HilbertError) as expected:
        losses.crossEntropy(z, labels)
    for client in (None, cluster):
        with pytest.raises(HilbertError) as raised:
            if client is None:
                losses.crossEntropy.using("dask", chunks=2)(z, labels)
            else:
                with client.as_current():
                    losses.crossEntropy.using("dask", chunks=2)(z, labels)
        assert raised.value.code == expected.value.code == "E511"
        assert "while running crossEntropy" in str(raised.value)


def test_blocks_over_the_memory_limit_are_refused(monkeypatch, rng):
    """With a limit of 1 MiB a block may hold 256 KiB: 500×100 (391 KiB) is refused (E700),
    100×100 (78 KiB) runs. (Dask itself cuts the blocks of an outer product or a broadcast to
    the size of its inputs' blocks, so inputs decide.)"""
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    total = hilbert.open("Prelude.Statistics").columnTotal
    a = rng.normal(size=(1000, 100))
    with pytest.raises(HilbertError) as raised:
        total.using("dask", chunks=500)(a)
    assert raised.value.code == "E700" and "blocks of 500×100" in raised.value.message
    np.testing.assert_allclose(total.using("dask", chunks=100)(a), a.sum(axis=0), rtol=1e-12)


# ---------------------------------------------------------------- argmax and argmin

def _first_marks(x: np.ndarray, axis: int, largest: bool) -> np.ndarray:
    """argmax (argmin) as .hb means it, by NumPy: along `axis`, 1 at the first entry equal to
    the line's largest (smallest), 0 elsewhere, and no mark on a line holding NaN."""
    moved = np.moveaxis(x, axis, -1)
    lines = moved.reshape(-1, moved.shape[-1])
    marks = np.zeros_like(lines)
    for row, line in zip(marks, lines, strict=True):
        if not np.isnan(line).any():
            row[np.flatnonzero(line == (line.max() if largest else line.min()))[0]] = 1.0
    return np.moveaxis(marks.reshape(moved.shape), -1, axis)


def _awkward(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Whole numbers 0 … 3 (ties within and across blocks), with lines holding NaN, ±inf,
    only −inf or only +inf, and ±0."""
    x = rng.integers(0, 4, size=shape).astype(float)
    flat = x.reshape(-1, shape[-1])
    flat[1, -1] = np.nan
    flat[2, 3] = np.inf
    flat[3, :] = -np.inf
    flat[4, :] = np.inf
    flat[5, ::2], flat[5, 1::2] = 0.0, -0.0
    flat[6, 7] = -np.inf
    flat[7, :] = np.nan
    x[(0,) * (len(shape) - 1)] = np.nan  # a NaN on a line of each other axis as well
    return x


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape, axis, chunks", [
    ((12, 10), 1, (3, 3)), ((12, 10), 0, (5, 2)), ((4, 6, 10), 2, (3, 2, 4)),
    ((4, 6, 10), 1, (2, 4, 10))])
def test_arg_extremes_on_dask_equal_the_reference_bit_for_bit(op, shape, axis, chunks):
    """Across blocks: ties (the first wins, within a block and across blocks), NaN lines (no
    mark), ±inf, ±0; equal to the reference executor and to NumPy, on NumPy and dask input."""
    module = hilbert.compile_source(f"fn f(x) ↦ {op}(x, {axis})\n"
                                    f"fn g(x) ↦ {op}(tanh(x) · 2, {axis}) + x")
    x = _awkward(np.random.default_rng(8), shape)
    want = module.f.using("reference")(x)
    np.testing.assert_array_equal(want, _first_marks(x, axis, op == "argmax"))
    on_dask = module.f.using("dask", chunks={"x": chunks})
    np.testing.assert_array_equal(on_dask(x), want)
    np.testing.assert_array_equal(module.f.using("dask")(da.from_array(x, chunks=chunks)).compute(),
                                  want)
    np.testing.assert_array_equal(module.g.using("dask", chunks={"x": chunks})(x),
                                  module.g.using("reference")(x))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_on_dask_read_each_block_once_in_a_graph_of_its_blocks(op):
    """1000×1000 in 20×20 blocks of 50×50: x's blocks are read by one layer of tasks (an
    arg-reduction, then marks made from positions alone), no layer has more tasks than x has
    blocks (no block is cut smaller), and the graph holds a few tasks a block. Before, dask's
    einsum cut every block 16 ways: 92 169 tasks, x read by three layers."""
    module = hilbert.compile_source(f"fn f(x) ↦ {op}(x, 1)")
    x = da.random.default_rng(2).standard_normal((1000, 1000), chunks=50)
    marks = module.f.using("dask")(x)
    graph = marks.__dask_graph__()
    readers = [name for name, needs in graph.dependencies.items() if x.name in needs]
    assert len(readers) == 1, readers
    assert max(len(layer) for layer in graph.layers.values()) <= x.npartitions == 400
    assert len(graph) <= 10 * x.npartitions, len(graph)
    sample = x[:100].compute()
    np.testing.assert_array_equal(marks[:100].compute(), _first_marks(sample, 1, op == "argmax"))


# ---------------------------------------------------------------- loops

def test_a_loop_runs_step_by_step_and_its_graph_does_not_grow(rng):
    nets = hilbert.open("Prelude.Networks")
    x, y = rng.normal(size=(8, 3)), rng.normal(size=(8, 2))
    w1, w2 = rng.normal(size=(3, 4)) * 0.5, rng.normal(size=(4, 2)) * 0.5
    fit = nets.function("mlpFit").using("dask")
    tasks = []
    for steps in (2, 20):
        lazy = fit(steps, 0.05, da.from_array(x, chunks=3), y, w1, w2)
        tasks.append(len(lazy.__dask_graph__()))
        assert_agree(lazy.compute(), nets.mlpFit(steps, 0.05, x, y, w1, w2), RTOL)
    assert tasks[0] == tasks[1]  # the trained weights are persisted, not a graph of all steps
    program = fit.program(((), (), (8, 3), (8, 2), (3, 4), (4, 2)))
    assert program.loop_steps == 22


def test_a_loop_that_stops_on_a_condition_computes_it_every_step(rng):
    """Conjugate gradient stops once the residual is small: the condition is computed on
    every step (here n + 1 conditions for an n×n system), and the answer solves the system."""
    a = rng.normal(size=(6, 6))
    a = a @ a.T + 6 * np.eye(6)
    b = rng.normal(size=6)
    solve = hilbert.open("Prelude.LinearAlgebra").solve.using("dask", chunks=2)
    np.testing.assert_allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-10)
    # Counting up until x ≥ 5 from 0 and from 1 ends at 5 both times: a condition checked only
    # every other step would pass 5 from one of them (0, 2, 4, 6 or 1, 3, 5).
    count = hilbert.compile_source("def up(x, v) ≔ if x ≥ 5 then v else up(x + 1, v + 1)\n"
                                   "fn f(x, v) ↦ up(x, v)").f.using("dask", chunks=2)
    for start in (0.0, 1.0, 4.0, 5.0):
        np.testing.assert_array_equal(count(start, np.zeros(3)), np.full(3, max(5.0 - start, 0)))


def test_derivatives_through_loops_run_backwards_on_dask():
    source = """
def loss(w, x, y) ≔ einsum("ij->", (einsum("np,pq->nq", x, w) − y)²) / rows(x)
def fit(t, r, w, x, y) ≔ if t = 0 then w else fit(t − 1, r, w − r · ∂ loss(w, x, y) / ∂ w, x, y)
def run(t, w, x) ≔ if t = 0 then w else run(t − 1, tanh(einsum("ij,jk->ik", w, x)), x)
fn train(t, r, w, x, y) ↦ fit(t, r, w, x, y)
fn slope(t, w, x) ↦ ∂ einsum("ij->", run(t, w, x) · run(t, w, x)) / ∂ x
"""
    module = hilbert.compile_source(source)
    x = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    y = np.array([[1.0], [3.0], [5.0], [7.0]])
    want = np.zeros((2, 1))
    for _ in range(30):
        want = want - 0.05 * 2 * x.T @ (x @ want - y) / 4
    got = module.train.using("dask", chunks=2)(30, 0.05, np.zeros((2, 1)), x, y)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    w = np.linspace(-0.5, 0.5, 6).reshape(2, 3)
    square = np.linspace(-0.4, 0.4, 9).reshape(3, 3)
    assert_agree(module.slope.using("dask", chunks=1)(4, w, square), module.slope(4, w, square),
                 RTOL)


def test_a_tape_over_the_limit_is_refused_before_any_step_runs_on_dask(monkeypatch, rng):
    """A step count known at the call (a number, or rows of an argument): a tape over
    HILBERT_MEMORY_LIMIT is E700 before any step (of the forward run the loss needs, or of
    the loop run backwards) is sent to the scheduler: none is counted, and 10⁹ steps are
    refused (at a round trip a step they would take weeks). An `if` branch not taken is not
    refused, and a tape within the limit runs as on the reference executor."""
    from hilbert.executor.dask.graph import DaskGraph

    steps: list[int] = []
    step = DaskGraph._step
    monkeypatch.setattr(DaskGraph, "_step", lambda self, *a: steps.append(1) or step(self, *a))
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "200K")
    module = hilbert.compile_source("""
def run(t, w, x) ≔ if t = 0 then w else run(t − 1, tanh(einsum("ij,jk->ik", w, x)), x)
fn slope(t, w, x) ↦ ∂ einsum("ij->", run(t, w, x) · run(t, w, x)) / ∂ x
fn byRows(t, w, x) ↦ ∂ einsum("ij->", run(t · rows(x), w, x)) / ∂ x
fn branch(t, w, x) ↦ if t > 1000 then x · 0 else ∂ einsum("ij->", run(t, w, x) · run(t, w, x)) / ∂ x
""")
    w, x = rng.normal(size=(10, 10)) * 0.3, rng.normal(size=(10, 10)) * 0.3
    for name, count, tape in (("slope", 300, 300), ("slope", 10**9, 10**9),
                              ("byRows", 30, 300), ("byRows", 10**8, 10**9)):
        with pytest.raises(HilbertError) as raised:
            getattr(module, name).using("dask", chunks=5)(count, w, da.from_array(x, chunks=5))
        assert raised.value.code == "E700"
        assert f"{tape:,} steps of 800 B" in raised.value.message
        assert steps == [], name
    assert_agree(module.slope.using("dask", chunks=5)(4, w, x),
                 module.slope.using("reference")(4, w, x), RTOL)
    assert len(steps) == 8  # forward for the loss, then forward again with the tape
    np.testing.assert_array_equal(module.branch.using("dask")(10**9, w, x), np.zeros((10, 10)))


# ---------------------------------------------------------------- the plan

def test_the_plan_tells_blocks_and_task_graph():
    nets = hilbert.open("Prelude.Networks")
    plan = nets.function("mlpPredict").using("dask", chunks={"z": 250}).plan(
        (), (), (16, 3), (16, 2), (3, 4), (4, 2), (1000, 3))
    text = str(plan)
    assert "executor dask" in text
    assert "z 1000×3 in 4 blocks of 250×3 (axis 0 cut)" in text
    assert "x 16×3 in one block" in text
    assert "dask: task graph of the call: " in text
    assert "dask: loop firstLoop: " in text and "a step" in text


def test_hilbert_plan_with_the_dask_executor(capsys):
    layers = Path(hilbert.__file__).resolve().parent.parent / "examples" / "Layers.hb"
    argv = ["plan", str(layers), "layerThrough", "--shape", "a=1000x32", "--shape", "w=32x128",
            "--executor", "dask", "--chunks", "250"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "a 1000×32 in 4 blocks of 250×32 (axis 0 cut); w 32×128 in one block" in out
    tasks = int(out.split("task graph of the call: ")[1].split()[0])
    assert tasks >= 4  # at least one task a block
    assert main(argv[:-2] + ["--chunks", "w=8"]) == 0
    assert "w 32×128 in 4 blocks of 8×128" in capsys.readouterr().out
    assert main(argv[:-4] + ["--chunks", "250"]) == 2  # --chunks without --executor dask
    assert "--chunks is for --executor dask" in capsys.readouterr().err


def test_a_model_runs_on_dask(rng):
    """A model's methods call their programs directly: NumPy in, NumPy out."""
    seq = hilbert.open("Prelude.Sequences")
    on_dask = hilbert.open("Prelude.Sequences", executor="dask")
    x, h = rng.normal(size=(4, 3, 2)), rng.normal(size=(3, 5))
    want = seq.GRU(2, 5, 7).run(x, h)
    assert_agree(on_dask.GRU(2, 5, 7).run(x, h), want, RTOL)


# ---------------------------------------------------------------- past one machine's memory

def _reset_peak() -> int:
    """This process's resident memory now, after resetting its high-water mark to it (Linux:
    writing 5 to clear_refs), or after noting the high-water mark so far elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return _status("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _peak() -> int:
    try:
        return _status("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def test_a_batch_four_times_the_memory_limit_runs_within_it_on_every_worker(cluster, monkeypatch):
    """mlpPredict on a batch of 256 MiB with HILBERT_MEMORY_LIMIT=64M: the numba executor
    refuses it (E700); on dask each worker's resident memory grows by less than the limit."""
    limit = 64 * 2**20
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "64M")
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(16, 32)), rng.normal(size=(16, 1))
    w1, w2 = rng.normal(size=(32, 16)) * 0.2, rng.normal(size=(16, 1)) * 0.2
    rows = 4 * limit // (32 * 8)
    predict = hilbert.open("Prelude.Networks").function("mlpPredict")
    with pytest.raises(HilbertError) as refused:
        predict.plan((), (), x.shape, y.shape, w1.shape, w2.shape, (rows, 32))
    assert refused.value.code == "E700"
    # the batch is made on the workers, block by block: the client never holds it
    block = limit // 16 // (32 * 8)  # the executor's default share of the limit for a block
    z = da.random.default_rng(5).standard_normal((rows, 32), chunks=(block, 32))
    assert z.nbytes == 4 * limit
    on_dask = predict.using("dask", compute=True)
    with cluster.as_current():
        on_dask(3, 0.05, x, y, w1, w2, z[:100])  # workers warm: kernels loaded
        before = cluster.run(_reset_peak)
        got = on_dask(3, 0.05, x, y, w1, w2, z)
        after = cluster.run(_peak)
        sample = z[::4096].compute()
    grown = {worker: after[worker] - before[worker] for worker in before}
    assert len(grown) == 2 and all(0 <= g < limit for g in grown.values()), grown
    trained1 = hilbert.open("Prelude.Networks").mlpFirst(3, 0.05, x, y, w1, w2)
    trained2 = hilbert.open("Prelude.Networks").mlpSecond(3, 0.05, x, y, w1, w2)
    assert got.shape == (rows, 1)
    np.testing.assert_allclose(got[::4096], np.maximum(sample @ trained1, 0) @ trained2,
                               rtol=1e-10)
