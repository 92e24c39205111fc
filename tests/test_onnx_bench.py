"""The onnx executor's benchmark cases (benchmarks/cases/onnx_executor.py) are registered, and
skip cleanly where what they need is missing: without onnx and onnxruntime ours is an error
entry saying what to install and torch's ONNX anchor is skipped; without PyTorch its anchors
are skipped. Nothing here is timed."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import anchors
from benchmarks.cases import BY_NAME, Config, Skip
from benchmarks.cases import onnx_executor as cases
from benchmarks.cases.networks import _chain, _operands

QUICK = Config(quick=True)


def test_the_four_cases_are_registered():
    assert {"onnx-mlp-predict", "onnx-attention", "onnx-lstm", "onnx-mps"} <= set(BY_NAME)
    assert all(BY_NAME[c.name] is c for c in cases.CASES)


def _anchor(setup, name):
    return next(a for a in setup.anchors if a.name == name)


def test_without_the_onnx_extra_ours_is_an_error_entry_and_torchs_graph_skipped(monkeypatch):
    monkeypatch.setattr(cases, "_missing", lambda: "onnx and onnxruntime are not installed "
                        "(pip install 'hilbert[onnx]')")
    setup = cases.mps_norm(QUICK)
    assert setup.ours is None and "hilbert[onnx]" in setup.ours_error
    with pytest.raises(Skip, match="hilbert\\[onnx\\]"):
        _anchor(setup, cases.TORCH_ONNX).make()


def test_without_torch_its_anchors_are_skipped(monkeypatch):
    pytest.importorskip("onnxruntime")

    def absent():
        raise Skip("PyTorch is not installed")
    monkeypatch.setattr(anchors, "torch_module", absent)
    setup = cases.mps_norm(QUICK)
    assert setup.ours is not None and "export_torch_s" not in setup.metrics
    for name in (cases.TORCH_ONNX, "torch"):
        with pytest.raises(Skip, match="PyTorch"):
            _anchor(setup, name).make()


def test_torchs_graph_on_onnxruntime_answers_as_ours_and_numpy():
    """The smallest case (a 12-site MPS norm): torch's exported graph, run by onnxruntime,
    equals the onnx executor's answer and NumPy's einsum; both export times are figures."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    setup = cases.mps_norm(QUICK)
    spec, shapes = _chain(12, 8)
    want = np.einsum(spec, *_operands(shapes, 5), optimize=True)
    np.testing.assert_allclose(setup.ours(), want, rtol=1e-10)
    np.testing.assert_allclose(_anchor(setup, cases.TORCH_ONNX).make()(), want, rtol=1e-10)
    assert setup.metrics["export_torch_s"] > 0 and setup.metrics["export_hilbert_s"] > 0
