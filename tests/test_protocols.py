"""The executor interface (executor/__init__.py): every executor keeps the Executor protocol,
and every program it prepares the Program protocol."""

import numpy as np
import pytest

import hilbert


@pytest.mark.parametrize("name", ["reference", "numba", "dask", "jax", "onnx"])
def test_every_executor_and_its_programs_keep_the_protocols(name):
    from hilbert.executor import Executor, Program, get_executor

    if name == "jax":
        pytest.importorskip("jax")  # (an optional extra; dask is installed by make test)
    if name == "onnx":
        pytest.importorskip("onnxruntime")  # (the onnx extra)

    executor = get_executor(name)
    assert isinstance(executor, Executor)
    module = hilbert.compile_source('fn f(a, w) ↦ tanh(einsum("np,pq->nq", a, w))',
                                    executor=name)
    program = executor.prepare(module.f.entry, ((2, 3), (3, 4)))
    assert isinstance(program, Program)
    value = program((np.ones((2, 3)), np.ones((3, 4))))
    np.testing.assert_allclose(np.asarray(value), np.tanh(np.full((2, 4), 3.0)))
    assert program.loop_steps == 0


def test_the_compiler_neither_imports_an_executor_nor_branches_on_one():
    """Executors depend on the compiler, never the other way (the numba executor's name is
    only a label in plans)."""
    import re

    from conftest import ROOT

    for path in sorted((ROOT / "compiler").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "hilbert.executor" not in text, path.name
        assert not re.search(r"""executor\s*[!=]=\s*["']""", text), path.name
