"""Tensor networks over any number of indices (issue 24, item 2): lattices and chains of tens
to a thousand tensors and up to thousands of indices, written with opt_einsum's symbols
through hilbert.einsum and as .hb source, planned and run on every executor, in float64,
float32 and complex128, each checked against opt_einsum's own contraction. And slicing
(item 4): a contraction over its memory limit is sliced, equals the unsliced one, keeps an
explicit path, and stays under its limit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import opt_einsum
import pytest
from hilbert.compiler.ops.einsum_spec import lettered, letters

import hilbert


def lattice(rows: int, cols: int, bond: int = 2, open_corner: bool = True):
    """A rows×cols grid network: a tensor per site, an index per edge between neighbours (and
    one open index at the first site): (subscripts in opt_einsum's symbols, shapes)."""
    edges: dict = {}

    def edge(a, b) -> str:
        key = (min(a, b), max(a, b))
        if key not in edges:
            edges[key] = opt_einsum.get_symbol(len(edges))
        return edges[key]

    terms, shapes = [], []
    for r in range(rows):
        for c in range(cols):
            term = "".join(edge((r, c), (r + dr, c + dc))
                           for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                           if 0 <= r + dr < rows and 0 <= c + dc < cols)
            terms.append(term)
    output = ""
    if open_corner:
        output = opt_einsum.get_symbol(len(edges))
        terms[0] += output
    shapes = [(bond,) * len(t) for t in terms]
    return ",".join(terms) + "->" + output, shapes


def chain(sites: int, bond: int = 3, physical: int = 2):
    """⟨ψ|ψ⟩ of a matrix product state of `sites` sites: 2·sites tensors, 3·sites − 2 indices."""
    symbol = iter(opt_einsum.get_symbol(k) for k in range(10 ** 6))
    up = [next(symbol) for _ in range(sites - 1)]
    down = [next(symbol) for _ in range(sites - 1)]
    phys = [next(symbol) for _ in range(sites)]
    terms, shapes = [], []
    for layer in (up, down):
        for k in range(sites):
            left = layer[k - 1] if k > 0 else ""
            right = layer[k] if k < sites - 1 else ""
            terms.append(left + phys[k] + right)
            shapes.append(tuple(bond if s in layer else physical for s in terms[-1]))
    return ",".join(terms) + "->", shapes


def _arrays(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = rng.uniform(0.5, 1.0, size=s)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.uniform(-0.5, 0.5, size=s)
        out.append(a.astype(dtype))
    return out


def _indices(spec: str) -> int:
    return len(set(spec) - set(",->"))


def _tolerance(dtype) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def test_letters_go_past_52_as_distinct_letters_python_reads_apart():
    import unicodedata

    first = [ch for _, ch in zip(range(5000), letters(), strict=False)]
    assert first[:52] == list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert len(set(first)) == 5000
    assert all(ch.isalpha() and ch.isidentifier() for ch in first)
    assert len({unicodedata.normalize("NFKC", ch) for ch in first}) == 5000
    spec = ",".join(opt_einsum.get_symbol(k) * 2 for k in range(60)) + "->"
    renamed = lettered(spec)
    assert _indices(renamed) == 60 and renamed.startswith("aa,bb,")


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("executor", ["numba", "reference", "dask"])
def test_a_6x6_lattice_over_60_indices(executor, dtype, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    spec, shapes = lattice(6, 6)
    assert _indices(spec) == 61
    arrays = _arrays(shapes, dtype)
    got = hilbert.einsum(spec, *arrays, executor=executor)
    want = opt_einsum.contract(spec, *[a.astype(np.complex128 if a.dtype.kind == "c"
                                                 else np.float64) for a in arrays])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=_tolerance(dtype))


@pytest.mark.parametrize("executor", ["numba", "reference", "dask"])
def test_a_matrix_product_state_of_40_sites_as_hb_source(executor, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    spec, shapes = chain(40)
    named = lettered(spec)
    assert _indices(named) == 118
    names = ", ".join(f"x{k}" for k in range(len(shapes)))
    module = hilbert.compile_source(f'fn norm({names}) ↦ einsum("{named}", {names})\n',
                                    executor=executor)
    arrays = _arrays(shapes, "float64", seed=1)
    np.testing.assert_allclose(module.norm(*arrays), opt_einsum.contract(spec, *arrays),
                               rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
@pytest.mark.parametrize("executor", ["numba", "reference", "dask"])
def test_networks_up_to_500_indices_agree_with_opt_einsum(executor, dtype, monkeypatch):
    """Lattices of 120 and 288 tensors (241 and 501 indices) in each dtype on each executor,
    against opt_einsum's contraction of the same operands in float64 (complex128): each
    tensor scaled so the value is near 1 (the value itself would leave float32's range)."""
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    for rows, cols in ((3, 40), (4, 72)):
        spec, shapes = lattice(rows, cols)
        wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
        arrays = [a.astype(wide) for a in _arrays(shapes, dtype, seed=rows)]
        scale = np.abs(opt_einsum.contract(spec, *arrays)).max() ** (-1 / len(arrays))
        arrays = [(a * scale).astype(dtype) for a in arrays]
        got = hilbert.einsum(spec, *arrays, executor=executor)
        assert got.dtype == np.dtype(dtype)
        want = opt_einsum.contract(spec, *[a.astype(wide) for a in arrays])
        single = dtype in ("float32", "complex64")  # (288 rounded products: ~300 ε)
        np.testing.assert_allclose(got, want, rtol=1e-3 if single else 1e-9)
    assert _indices(spec) == 4 * 71 + 3 * 72 + 1


def test_a_network_of_1000_tensors_plans_and_runs():
    spec, shapes = lattice(4, 250)
    assert len(shapes) == 1000
    arrays = [a / np.sqrt(np.sum(a * a)) * 2 for a in _arrays(shapes, "float64", seed=9)]
    path, info = hilbert.contract_path(spec, *arrays)
    assert len(path) == 999 and info.flops > 0
    np.testing.assert_allclose(hilbert.einsum(spec, *arrays),
                               opt_einsum.contract(spec, *arrays), rtol=1e-9)


# ---------------------------------------------------------------- slicing (item 4)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_a_sliced_contraction_equals_the_unsliced_one(dtype, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    spec, shapes = lattice(5, 5, bond=3)
    arrays = _arrays(shapes, dtype, seed=3)
    whole = hilbert.contract_path(spec, *arrays, memory_limit="1G")[1]
    assert whole.sliced_indices == () and whole.slices == 1
    limit = whole.peak_bytes // 2
    path, info = hilbert.contract_path(spec, *arrays, memory_limit=limit)
    assert info.sliced_indices and info.slices == 3 ** len(info.sliced_indices)
    assert set(info.sliced_indices) <= set(spec) - set(",->")  # (the caller's symbols)
    assert info.peak_bytes <= limit and info.flops >= whole.flops
    assert info.flops_overhead == info.flops / whole.flops
    assert f"sliced over {info.sliced_indices[0]} (3)" in str(info)
    got = hilbert.einsum(spec, *arrays, memory_limit=limit)
    want = opt_einsum.contract(spec, *[a.astype(np.complex128 if a.dtype.kind == "c"
                                                 else np.float64) for a in arrays])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=_tolerance(dtype))


def test_an_explicit_path_with_a_memory_limit_is_sliced_not_replanned():
    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=(30, 20)), rng.normal(size=(40, 25)), rng.normal(size=(20, 25))
    path = [(0, 1), (0, 1)]  # an outer product first: a 30×20×40×25 intermediate
    want = np.einsum("ai,bj,ij->ab", a, b, c)
    got_path, info = hilbert.contract_path("ai,bj,ij->ab", a, b, c, optimize=path,
                                           memory_limit="500K")
    assert got_path == [(0, 1), (0, 1)] and info.sliced_indices
    np.testing.assert_allclose(hilbert.einsum("ai,bj,ij->ab", a, b, c, optimize=path,
                                              memory_limit="500K"), want, rtol=1e-10)
    expression = hilbert.contract_expression("ai,bj,ij->ab", a.shape, b.shape, c.shape,
                                             optimize=path, memory_limit="500K")
    assert expression.sliced is not None
    np.testing.assert_allclose(expression(a, b, c), want, rtol=1e-10)


def test_a_sliced_contraction_s_peak_memory_stays_under_its_limit():
    """In a fresh process: the outer product first would hold 60⁴ float64s (104 MB); sliced
    to 8 MB, the process grows by far less."""
    code = textwrap.dedent("""
        import resource, numpy as np, hilbert
        rng = np.random.default_rng(0)
        a, b, c = (rng.normal(size=(60, 60)) for _ in range(3))
        path = [(0, 1), (0, 1)]
        small = hilbert.einsum("ai,bj,ij->ab", a[:2], b[:2], c, optimize=path)  # (warm)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        got = hilbert.einsum("ai,bj,ij->ab", a, b, c, optimize=path, memory_limit="8M")
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert np.allclose(got, np.einsum("ai,bj,ij->ab", a, b, c)), "wrong result"
        print(grown * 1024)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HILBERT_COMPILE": "never"})
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) < 40 * 2 ** 20  # (unsliced: 104 MB more)


def test_a_contraction_that_slicing_cannot_bring_under_the_limit_is_e700():
    a = np.ones((300, 300))
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.einsum("ij,jk->ik", a, a, memory_limit="100K")
    assert caught.value.code == "E700" and "cannot be brought under" in str(caught.value)


def test_slicing_that_would_repeat_the_work_a_hundredfold_is_e700():
    """An 8×8 lattice of bond 3 along its greedy path (swept row by row: every intermediate
    holds other bonds): a sixteenth of its peak would take thousands of slices."""
    spec, shapes = lattice(8, 8, bond=3)
    _, whole = hilbert.contract_path(spec, *shapes, shapes=True, memory_limit="1G")
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.contract_path(spec, *shapes, shapes=True, memory_limit=whole.peak_bytes // 16)
    assert caught.value.code == "E700" and "times the FLOPs" in str(caught.value)


def test_a_limit_below_the_operands_themselves_is_e700():
    """⟨ψ|ψ⟩ of a matrix product state: its operands are most of its peak, and slices are
    views of them."""
    spec, shapes = chain(40, bond=16)
    _, whole = hilbert.contract_path(spec, *shapes, shapes=True, memory_limit="1G")
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.contract_path(spec, *shapes, shapes=True, memory_limit=whole.peak_bytes // 4)
    assert caught.value.code == "E700" and "operands alone take" in str(caught.value)


# ---------------------------------------------------------------- saved paths (item 3, in part)


def test_a_saved_path_reloads_and_gives_the_same_plan(tmp_path):
    spec, shapes = lattice(4, 4, bond=3)
    path, info = hilbert.contract_path(spec, *shapes, shapes=True, optimize="random-greedy")
    info.save(tmp_path / "path.json")
    loaded = hilbert.load_path(tmp_path / "path.json")
    assert loaded == path
    again, second = hilbert.contract_path(spec, *shapes, shapes=True, optimize=loaded)
    assert again == path and second.flops == info.flops
    assert str(second.plan).count("explicit path") >= 1
    arrays = _arrays(shapes, "float64", seed=6)
    np.testing.assert_allclose(hilbert.einsum(spec, *arrays, optimize=loaded),
                               opt_einsum.contract(spec, *arrays), rtol=1e-10)


@pytest.mark.parametrize("text", ["not json", '{"steps": []}', '{"path": [[0, "a"]]}',
                                  '{"path": 3}'])
def test_a_file_without_a_path_is_e600(tmp_path, text):
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.load_path(tmp_path / "bad.json")
    assert caught.value.code == "E600"
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.load_path(tmp_path / "missing.json")
    assert caught.value.code == "E600"
