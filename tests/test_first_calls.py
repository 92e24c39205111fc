"""First calls from several threads at once, in a fresh process: each thread's first call
imports Numba (or waits for another's import of it) and gives the right value, never an
ImportError from a module another thread is still importing (executor/numba/loading.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

#: Nine threads, each making its first call of hilbert.einsum on a spec of its own, sliced
#: on threads under a memory limit; what each gave, or the exception it raised, as JSON.
SCRIPT = """
import json, sys, threading, traceback
import numpy as np
import hilbert

cases = json.loads(sys.argv[1])
got = [None] * len(cases)
start = threading.Barrier(len(cases))

def first_call(k):
    spec, shapes, limit = cases[k]
    arrays = [np.arange(np.prod(s), dtype=float).reshape(s) % 7 / 7 for s in shapes]
    start.wait()
    try:
        got[k] = np.asarray(hilbert.einsum(spec, *arrays, memory_limit=limit)).tolist()
    except BaseException as err:
        got[k] = "".join(traceback.format_exception_only(err)).strip()

threads = [threading.Thread(target=first_call, args=(k,)) for k in range(len(cases))]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(got))
"""

SPECS = ["ij,jk,ki->", "ij,jk->ik", "ijk,jk->i", "ij,jk,kl->il", "ab,bc,cd,da->",
         "ij,ji->", "ijk,kj->ik", "ab,bc->a", "ij,jk,kl,li->"]


def cases() -> list:
    """Each spec with shapes of its own and a limit just above its operands and its result
    (so those with larger intermediates are sliced)."""
    made = []
    for k, spec in enumerate(SPECS):
        sizes = {ch: 6 + (k + i) % 7 for i, ch in enumerate("abcdijkl")}
        terms, output = spec.split("->")
        shapes = [[sizes[ch] for ch in term] for term in terms.split(",")]
        result = int(np.prod([sizes[ch] for ch in output]))
        limit = 8 * (sum(int(np.prod(s)) for s in shapes) + result) + 256
        made.append((spec, shapes, limit))
    return made


@pytest.mark.timeout(600)
@pytest.mark.parametrize("compile_when", ["eager", "1"])  # (1: built in the background from call 1)
def test_first_calls_from_many_threads_at_once(compile_when):
    env = dict(os.environ, HILBERT_COMPILE=compile_when)
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(cases())], env=env,
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    for (spec, shapes, _), value in zip(cases(), got, strict=True):
        arrays = [np.arange(np.prod(s), dtype=float).reshape(s) % 7 / 7 for s in shapes]
        assert not isinstance(value, str), f"{spec}: {value}"
        np.testing.assert_allclose(value, np.einsum(spec, *arrays), rtol=1e-12)
