"""erf on the host (the primitive table's NumPy meaning): C's erf entry by entry for numbers and
small arrays, as compiled code computes it, so that a first call does not import SciPy; SciPy's
ufunc for large arrays."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
from hilbert.compiler.ops import primitives
from scipy import special


def test_small_arrays_and_numbers_take_c_erf_entry_by_entry():
    x = np.concatenate([np.linspace(-6, 6, 2001), [np.inf, -np.inf, np.nan, -0.0, 1e-300]])
    got = primitives._erf(x.reshape(-1, 1))
    want = np.array([math.erf(v) for v in x])
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.ravel(), want)
    assert np.signbit(got.ravel()[-2])  # erf(−0) is −0
    assert primitives._erf(0.5) == math.erf(0.5)
    assert primitives._erf(np.array(-1.5)) == math.erf(-1.5)
    assert primitives._erf(np.ones((3, 0))).shape == (3, 0)


def test_large_arrays_take_scipys_erf():
    x = np.random.default_rng(0).normal(size=primitives.ERF_BY_LIBM + 1)
    np.testing.assert_array_equal(primitives._erf(x), special.erf(x))


_FIRST_CALL = textwrap.dedent("""
    import json, sys
    import numpy as np
    import hilbert
    gelu = hilbert.compile_source("fn gelu(x) ↦ x · (1 + erf(x / sqrt(2))) / 2").gelu
    x = np.linspace(-3, 3, 64)
    value = gelu(x)
    print(json.dumps({"scipy": "scipy" in sys.modules, "value": value.tolist()}))
""")


def test_a_first_call_with_erf_imports_no_scipy(tmp_path):
    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path))
    env.pop("HILBERT_COMPILE", None)  # the default: a first call runs on the host
    done = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert not answer["scipy"]
    x = np.linspace(-3, 3, 64)
    want = [v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in x]
    np.testing.assert_allclose(answer["value"], want, rtol=1e-15, atol=1e-16)
