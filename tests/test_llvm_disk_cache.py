"""The LLVM back end's machine code on disk (executor/llvm/kept.py): a new process loads what
an earlier one compiled, running neither LLVM's optimiser nor its code generator (counted by
compile.COUNTS, and Numba's compilations by its event API: never by timing), under keys that
are the same in every process; an object file that is planted, damaged, kept under another
one's name, or that someone else could have written, is never loaded (docs/security.md).

A cache is about what the *next* process loads, so these tests run fresh Python processes, each
with its own cache directory (test_cache.py's way), and check every value against NumPy."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from conftest import ROOT
from test_cache import copy_of, files
from test_security import sealed

SOURCE = """
open Prelude.Arithmetic
open Prelude.Networks
fn softmax(x) ↦ softmaxRows(x)
fn shaped(x) ↦ ln(1 + x²) + tanh(x) · abs(x) − floor(x) + sqrt(abs(x)) + max(x, 0.5)
def fit(t, w, x, y, r) ≔ if t = 0 then w else fit(t − 1, w − r · einsum("ni,n->i", x, einsum("ni,i->n", x, w) − y), x, y, r)
fn fitted(x) ↦ fit(50, 0 · einsum("ni->i", x), x, einsum("ni->n", x), 0.001)
"""

#: One process: call each function of SOURCE, report as JSON.
SCRIPT = """
import json, warnings
import numpy as np
from numba.core import event
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import hilbert
    from hilbert.executor.llvm import compile, lower
    lowered = []
    made = lower.Lowering.__init__
    def counted(self, *args, **kwargs):
        lowered.append(1)
        made(self, *args, **kwargs)
    lower.Lowering.__init__ = counted
    with event.install_recorder("numba:compile") as recorder:
        module = hilbert.compile_source(SOURCE, name="llvm_disk.hb")
        x = np.linspace(-2.0, 2.0, 35).reshape(5, 7)
        values = {n: np.asarray(module.function(n)(x)).tolist() for n in NAMES}
        notes = [note for n in NAMES for note in module.function(n).plan(x.shape).all_notes
                 if "built by" in note]
from hilbert.executor.llvm import shared
shared.awaited(("hb_product.float64",))  # (begun at load, never waited for: it multiplies not)
print(json.dumps({"values": values, "notes": notes, "counts": compile.COUNTS,
                  "lowered": len(lowered),
                  "numba": sum(1 for _, e in recorder.buffer if e.is_start),
                  "warnings": [getattr(w.message, "code", str(w.message)) for w in caught]}))
"""
NAMES = ("softmax", "shaped", "fitted")
#: The modules a process compiles or loads: each function's, the entry from Python of each
#: call layout (executor/llvm/cpython.py): a matrix to a matrix (softmax, shaped) and a matrix
#: with the loop's stop flag to a vector (fitted), and the float64 product kernel, which
#: compile_source begins before the front half runs (executor/llvm.begin_kernels).
MODULES = len(NAMES) + 3


def expected() -> dict[str, np.ndarray]:
    """SCRIPT's values, computed by NumPy."""
    x = np.linspace(-2.0, 2.0, 35).reshape(5, 7)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    w, y = np.zeros(7), x.sum(axis=1)
    for _ in range(50):
        w = w - 0.001 * (x.T @ (x @ w - y))
    return {"softmax": e / e.sum(axis=1, keepdims=True),
            "shaped": (np.log(1 + x * x) + np.tanh(x) * np.abs(x) - np.floor(x)
                       + np.sqrt(np.abs(x)) + np.maximum(x, 0.5)),
            "fitted": w}


def run(directory: Path, seed: int = 0) -> dict:
    """SCRIPT in a fresh process (hash seed `seed`) with HILBERT_CACHE_DIR=directory; its
    report, its values checked against NumPy's (each operation rounds once; 64 ε covers the
    chains of them, as tests/test_llvm_backend.py's)."""
    env = dict(os.environ, HILBERT_CACHE_DIR=str(directory), 
               HILBERT_COMPILE="eager", PYTHONHASHSEED=str(seed))
    env.pop("NUMBA_DISABLE_JIT", None)
    script = SCRIPT.replace("SOURCE", repr(SOURCE)).replace("NAMES", repr(NAMES))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, cwd=directory.parent)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    for name, want in expected().items():
        tolerance = 64 * np.finfo(float).eps
        np.testing.assert_allclose(report["values"][name], want, rtol=tolerance,
                                   atol=tolerance * np.abs(want).max())
    assert report["notes"] == ["numba: generated function 1 built by llvm (optimisation "
                               "level 3)"] * len(NAMES)
    return report


@pytest.fixture(scope="module")
def primed(tmp_path_factory) -> Path:
    """A cache directory after one cold process (copy it to use it)."""
    directory = tmp_path_factory.mktemp("primed") / "cache"
    report = run(directory, seed=1)
    assert report["counts"] == {"compiled": MODULES, "loaded": 0}
    assert report["warnings"] == [] and report["lowered"] == len(NAMES)
    return directory


def objects(directory: Path, suffix: str = ".o") -> list[Path]:
    return sorted(p for p in (directory / "llvm").iterdir() if p.suffix == suffix)


def test_a_new_process_loads_the_machine_code_and_compiles_nothing(primed, tmp_path):
    """A second process loads every module's machine code, and lowers none of its functions:
    each one's record (executor/llvm/records.py) says where its code is kept."""
    report = run(copy_of(primed, tmp_path), seed=2)  # (another hash seed: the same keys)
    assert report["counts"] == {"compiled": 0, "loaded": MODULES}
    assert report["numba"] == 0 and report["warnings"] == [] and report["lowered"] == 0


def test_a_function_whose_code_is_gone_is_lowered_and_compiled_again(primed, tmp_path):
    """A record whose object code is gone from the cache (removed by hand): its function is
    lowered and compiled again, with the same answers (`run` checks them against NumPy)."""
    directory = copy_of(primed, tmp_path)
    for path in objects(directory):
        path.unlink()
    report = run(directory, seed=3)
    assert report["counts"] == {"compiled": MODULES, "loaded": 0}
    assert report["lowered"] == len(NAMES) and report["warnings"] == []


def test_machine_code_is_kept_sealed_and_private_under_its_key(primed, tmp_path, monkeypatch):
    from hilbert.compiler import directory as private

    directory = copy_of(primed, tmp_path)
    kept = objects(directory)
    assert len(kept) == MODULES
    assert len(objects(directory, ".record")) == len(NAMES)
    for path in objects(directory, ".record"):
        assert re.fullmatch(r"[0-9a-f]{32}\.record", path.name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for path in kept:
        assert re.fullmatch(r"[0-9a-f]{32}\.o", path.name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))
    for path in kept:  # (sealed under the directory's key, for its own name)
        code = private.read_kept(path)
        assert code is not None and path.read_bytes().endswith(b"\n" + code)


def test_the_key_holds_everything_the_code_depends_on(monkeypatch):
    import llvmlite
    from hilbert.executor.llvm import kept

    host = ("x86_64-unknown-linux-gnu", "znver5", "+avx2,+avx512f")
    text = "define i64 @f() {\n  ret i64 1\n}\n"
    first = kept.key(text, 3, host)
    assert first == kept.key(text, 3, host) and re.fullmatch(r"[0-9a-f]{32}", first)
    others = [kept.key(text.replace("1", "2"), 3, host), kept.key(text, 1, host),
              kept.key(text, 3, ("aarch64-unknown-linux-gnu", *host[1:])),
              kept.key(text, 3, (host[0], "skylake-avx512", host[2])),
              kept.key(text, 3, (*host[:2], "+avx2,-avx512f"))]
    assert len({first, *others}) == 6
    stamp = kept._stamp()
    monkeypatch.setattr(llvmlite, "__version__", "0.0.1")
    assert kept._stamp.__wrapped__() != stamp  # (llvmlite's version is in it)


def hostile_object(marker: Path) -> bytes:
    """An object file for this CPU whose function hb_run creates `marker`: what an attacker
    would plant in the cache."""
    from hilbert.executor.llvm import compile

    name = bytes(str(marker), "utf-8") + b"\0"
    escaped = "".join(f"\\{b:02x}" for b in name)
    text = f"""
@path = private constant [{len(name)} x i8] c"{escaped}"
@mode = private constant [2 x i8] c"w\\00"
declare ptr @fopen(ptr, ptr)
define i64 @hb_run(ptr %args, ptr %results) {{
  %file = call ptr @fopen(ptr @path, ptr @mode)
  ret i64 0
}}
"""
    machine = compile._target_machine(1)
    module = llvm.parse_assembly(text, context=llvm.create_context())
    module.triple = machine.triple
    return machine.emit_object(module)


def plant(directory: Path, marker: Path, how: str) -> None:
    """Replace every kept object file of `directory` as `how` says."""
    kept = objects(directory)
    hostile = hostile_object(marker)
    for at, path in enumerate(kept):
        if how == "planted, unsealed":
            path.write_bytes(hostile)
        elif how == "a seal not the key's":
            path.write_bytes(b"0" * 64 + b"\n" + hostile)
        elif how == "sealed for another name":  # (real machine code: another function's)
            os.replace(kept[at - 1] if at else kept[-1], path.with_suffix(".moved"))
        elif how == "one byte changed":
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 0x10
            path.write_bytes(bytes(data))
        elif how == "cut short":
            path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
        elif how == "others can write it":  # (sealed right: only the check of its mode stops it)
            path.write_bytes(sealed(directory, path, hostile))
            os.chmod(path, 0o666)
        elif how == "a symbolic link":
            elsewhere = directory.parent / f"elsewhere-{at}.o"
            elsewhere.write_bytes(sealed(directory, path, hostile))
            os.chmod(elsewhere, 0o600)
            path.unlink()
            path.symlink_to(elsewhere)
    for moved in (directory / "llvm").glob("*.moved"):  # (each now under its neighbour's name)
        moved.rename(moved.with_suffix(".o"))


@pytest.mark.parametrize("how", ["planted, unsealed", "a seal not the key's",
                                 "sealed for another name", "one byte changed", "cut short",
                                 "others can write it", "a symbolic link"])
def test_an_object_file_not_kept_by_the_user_is_never_loaded(primed, tmp_path, how):
    directory, marker = copy_of(primed, tmp_path), tmp_path / "PWNED"
    plant(directory, marker, how)
    report = run(directory)  # (the right values: run checks them)
    assert not marker.exists() and set(report["warnings"]) == {"W902"}
    assert report["counts"] == {"compiled": MODULES, "loaded": 0}
    for path in objects(directory):  # made again, privately
        assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600
    again = run(directory)
    assert again["counts"] == {"compiled": 0, "loaded": MODULES} and again["warnings"] == []


def test_a_folder_others_can_write_is_never_read_nor_written(primed, tmp_path):
    directory, marker = copy_of(primed, tmp_path), tmp_path / "PWNED"
    for path in objects(directory):  # (sealed right: only the folder's check stops them)
        path.write_bytes(sealed(directory, path, hostile_object(marker)))
    os.chmod(directory / "llvm", 0o777)
    before = files(directory / "llvm")
    report = run(directory)
    assert not marker.exists() and set(report["warnings"]) == {"W900"}
    assert report["counts"] == {"compiled": MODULES, "loaded": 0}  # in memory
    assert files(directory / "llvm") == before


def test_the_planted_code_would_run_if_it_were_loaded(tmp_path):
    """The attack above is real: loaded, the planted object file's code runs."""
    import ctypes

    from hilbert.executor.llvm import compile

    marker = tmp_path / "PWNED"
    machine = compile._loaded(hostile_object(marker), ("hb_run",), 1)
    ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
        machine.addresses["hb_run"])(None, None)
    assert marker.exists()


#: One process: the hash of the LLVM IR of every function the back end lowers in the golden
#: guard's programs whose names start with PREFIXES (nothing compiled), as JSON.
LOWERINGS = """
import hashlib, json, sys
sys.path.insert(0, GOLDEN)
import record
from hilbert.executor import llvm
from hilbert.executor.numba.executor import regions_of
texts = []
with record.in_root():
    for program in record.read_programs():
        if not program["name"].startswith(PREFIXES):
            continue
        with record.pinned_environment(program.get("threads", 1)):
            try:
                prepared = record.function_of(program)._prepare(
                    record.shapes_of(program), program.get("dtype", "float64"))
            except Exception:  # (a program recorded as refused)
                continue
            for region in regions_of(prepared.runner):
                try:
                    made = region._lowered() if region.generated.compiled else None
                except llvm.Unsupported:
                    continue
                if made is not None:
                    texts.append(hashlib.sha256(made.text.encode()).hexdigest())
print(json.dumps(texts))
"""


def lowered_texts(prefixes: tuple[str, ...], seed: int, cache: Path) -> list[str]:
    script = (LOWERINGS.replace("GOLDEN", repr(str(ROOT / "tests" / "golden")))
              .replace("PREFIXES", repr(prefixes)))
    env = dict(os.environ, PYTHONHASHSEED=str(seed),
               HILBERT_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("prefixes", [
    ("prelude__Arithmetic", "prelude__Networks"),
    pytest.param(("",), marks=pytest.mark.slow)])
def test_the_ir_a_key_hashes_is_the_same_in_every_process(prefixes, tmp_path):
    """The golden guard's programs lowered in two processes of different hash seeds (and
    cache directories: the second plans afresh too) give the same LLVM IR, byte for byte."""
    first = lowered_texts(prefixes, 1, tmp_path / "one")
    assert len(first) >= 40  # (46 functions by default; 220 under -m slow)
    assert lowered_texts(prefixes, 2, tmp_path / "two") == first
