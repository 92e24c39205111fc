"""Export to StableHLO (hilbert/export.py, `hilbert export`): a small MLP's text holds its
GEMMs as stablehlo.dot_general and runs, through JAX, to the reference executor's answer; the
text is the same in another process; the command writes it; shapes that do not fit, unknown
functions and what cannot be exported are errors with codes (or usage errors, for the command).
Skipped as a whole without jax (the `jax` extra)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from conftest import ROOT  # noqa: E402
from hilbert.grammar.errors import HilbertError  # noqa: E402

import hilbert  # noqa: E402
from hilbert.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE, main  # noqa: E402
from hilbert.export import export, stablehlo  # noqa: E402

MLP = """open Prelude.Networks
open Prelude.Arithmetic
fn mlp(x, w1, w2) ↦ dense(relu(dense(x, w1)), w2)
def fit(t, w) ≔ if t = 0 then w else fit(t − 1, w − 0.1 · tanh(w))
fn slopeFixed(w) ↦ ∂ einsum("ij->", fit(3, w)) / ∂ w
fn slopeGiven(t, w) ↦ ∂ einsum("ij->", fit(t, w)) / ∂ w
fn noise(k, x) ↦ gaussian(k, 1, x) + x
"""
SHAPES = ((8, 4), (4, 16), (16, 2))


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(MLP)


def test_an_mlp_exports_its_gemms_as_dot_general(module):
    text = stablehlo(module.mlp, *SHAPES)
    assert text.startswith("module @jit_mlp")
    assert text.count("stablehlo.dot_general") == 2
    assert "tensor<8x4xf64>, %arg1: tensor<4x16xf64>, %arg2: tensor<16x2xf64>" in text
    assert "stablehlo.maximum" in text  # relu
    assert export(module.mlp, *SHAPES, to="stablehlo") == text
    in32 = stablehlo(module.mlp, *SHAPES, dtype="float32")
    assert "tensor<8x4xf32>" in in32 and "f64" not in in32


def test_the_exported_text_runs_to_the_references_answer(module):
    """The text itself compiled by XLA (the MLIR module as written, through jaxlib's CPU
    client: a private API of jax, `jax._src.compiler`, which may move between versions) and
    run, against the reference executor."""
    from jax._src.compiler import get_compile_options
    from jax.extend.backend import get_backend

    rng = np.random.default_rng(0)
    args = [rng.normal(size=s) for s in SHAPES]
    backend = get_backend("cpu")
    executable = backend.compile_and_load(stablehlo(module.mlp, *SHAPES), backend.devices()[:1],
                                          get_compile_options(1, 1))
    with jax.enable_x64(True):  # (float64 buffers)
        got = np.asarray(executable.execute([jax.device_put(a) for a in args])[0])
    np.testing.assert_allclose(got, module.mlp.using("reference")(*args), rtol=1e-12)


def test_the_text_is_the_same_in_another_process(module, tmp_path):
    """Two other interpreters (other hash seeds, each with an empty cache of its own) write
    the same text, byte for byte, as this one."""
    script = ("import hilbert, sys\n"
              "from hilbert.export import stablehlo\n"
              f"m = hilbert.compile_source({MLP!r})\n"
              f"sys.stdout.write(stablehlo(m.mlp, *{SHAPES!r}))\n"
              "sys.stdout.write(stablehlo(m.slopeFixed, (3, 2)))\n")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           cwd=ROOT, timeout=300, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed,
                                "HILBERT_CACHE_DIR": str(tmp_path / seed)}).stdout
            for seed in ("1", "2")]
    here = stablehlo(module.mlp, *SHAPES) + stablehlo(module.slopeFixed, (3, 2))
    assert runs[0] == runs[1] == here


def test_a_loop_run_backwards_exports_when_its_steps_are_written_in_it(module):
    """∂ through fit(3, w): a tape of three states, in the text as a while loop; with the
    step count a parameter the tape's length is unknown: E600."""
    text = stablehlo(module.slopeFixed, (3, 2))
    assert "stablehlo.while" in text and "tensor<3x3x2xf64>" in text  # (the tape: 3 states)
    with pytest.raises(HilbertError) as raised:
        stablehlo(module.slopeGiven, (), (3, 2))
    assert raised.value.code == "E600"
    assert "fit runs backwards" in raised.value.message


def test_gaussian_draws_are_computed_in_the_exported_program(module):
    text = stablehlo(module.noise, (), (5,))
    assert "custom_call" not in text and "callback" not in text
    assert "stablehlo.log_plus_one" in text and "stablehlo.cosine" in text


def test_shapes_that_do_not_fit_are_coded_errors(module):
    with pytest.raises(HilbertError) as raised:
        stablehlo(module.mlp, (8, 4), (5, 16), (16, 2))
    assert raised.value.code == "E305"
    with pytest.raises(HilbertError) as raised:
        stablehlo(module.mlp, (8, 4), (4, 16))
    assert raised.value.code == "E600"
    with pytest.raises(HilbertError) as raised:
        stablehlo(module.mlp, "8x4", (4, 16), (16, 2))
    assert raised.value.code == "E600"
    with pytest.raises(HilbertError) as raised:
        stablehlo(module.mlp, *SHAPES, dtype="int8")
    assert raised.value.code == "E600"
    with pytest.raises(HilbertError) as raised:
        export(module.mlp, *SHAPES, to="tflite")
    assert raised.value.code == "E600"


# ---------------------------------------------------------------- the command

@pytest.fixture
def mlp_file(write_hb):
    return write_hb("Mlp.hb", MLP)


def test_the_command_writes_the_text(mlp_file, tmp_path, capsys, module):
    shapes = ["--shape", "x=8x4", "--shape", "w1=4x16", "--shape", "w2=16x2"]
    out = tmp_path / "mlp.mlir"
    assert main(["export", str(mlp_file), "mlp", *shapes, "--to", "stablehlo",
                 "-o", str(out)]) == EXIT_OK
    assert out.read_text(encoding="utf-8") == stablehlo(module.mlp, *SHAPES).rstrip("\n") + "\n"
    assert main(["export", str(mlp_file), "mlp", *shapes]) == EXIT_OK
    assert capsys.readouterr().out == out.read_text(encoding="utf-8")
    assert main(["export", str(mlp_file), "mlp", *shapes, "--dtype", "float32"]) == EXIT_OK
    assert "tensor<8x4xf32>" in capsys.readouterr().out


def test_the_command_refuses_a_bad_function_or_shape(mlp_file, capsys):
    assert main(["export", str(mlp_file), "nothing", "--shape", "x=2x2"]) == EXIT_USAGE
    assert "has no definition 'nothing'" in capsys.readouterr().err
    assert main(["export", str(mlp_file), "mlp", "--shape", "x=8x4", "--shape", "w1=5x16",
                 "--shape", "w2=16x2"]) == EXIT_ERROR
    assert "error[E305]" in capsys.readouterr().err
    assert main(["export", str(mlp_file), "mlp", "--shape", "q=8x4"]) == EXIT_USAGE
    assert "no parameter(s) q" in capsys.readouterr().err
    assert main(["export", str(mlp_file), "slopeGiven", "--shape", "w=3x2"]) == EXIT_ERROR
    assert "error[E600]" in capsys.readouterr().err
