"""executor="jax" keeps its compiled programs across processes (executor/jax/kept.py): JAX's
persistent compilation cache, in the folder `jax/` of hilbert's cache directory, checked as
Numba's folder is (docs/security.md). A hit is seen through JAX's own monitoring events, never
through time. Skipped as a whole without jax (the `jax` extra)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("jax")

#: A program run with executor="jax" in a fresh process: its value, JAX's persistent cache hits,
#: the warnings' codes, and JAX's own cache settings after the call.
SCRIPT = textwrap.dedent('''
    import json, warnings
    import numpy as np
    import jax, jax.monitoring
    hits = []
    jax.monitoring.register_event_listener(
        lambda name, **_: hits.append(name) if name == "/jax/compilation_cache/cache_hits" else None)
    import hilbert
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = hilbert.compile_source(
            'fn f(a, b) ↦ tanh(einsum("ij,jk->ik", a, b)) · 0.5', executor="jax")
        value = mod.f(np.arange(12.0).reshape(3, 4) / 10, np.ones((4, 2)))
    print(json.dumps({
        "value": value.tolist(), "hits": len(hits),
        "warnings": sorted({getattr(w.message, "code", "") for w in caught} - {""}),
        "cache_dir": jax.config.jax_compilation_cache_dir,
        "min_compile_time": jax.config.jax_persistent_cache_min_compile_time_secs}))
''')


def run(directory) -> dict:
    env = {**os.environ, "HILBERT_CACHE_DIR": str(directory)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=600, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def agrees(report: dict) -> None:
    """The value is SCRIPT's f computed in NumPy."""
    a = np.arange(12.0).reshape(3, 4) / 10
    np.testing.assert_allclose(report["value"], np.tanh(a @ np.ones((4, 2))) * 0.5, rtol=1e-12)


@pytest.mark.timeout(1200)
def test_a_second_process_loads_the_program_from_the_cache(tmp_path):
    """The first process compiles and keeps the executable in <cache>/jax; the second reads it
    back (a hit), with the same value; the user's JAX settings read as they were."""
    first = run(tmp_path)
    kept = os.listdir(tmp_path / "jax")
    assert first["hits"] == 0 and kept
    second = run(tmp_path)
    assert second["hits"] >= 1 and sorted(os.listdir(tmp_path / "jax")) == sorted(kept)
    for report in (first, second):
        assert report["warnings"] == []
        assert report["cache_dir"] is None and report["min_compile_time"] == 1.0
        agrees(report)


@pytest.mark.skipif(os.name != "posix", reason="owners and modes are POSIX's")
@pytest.mark.timeout(600)
def test_a_jax_folder_others_can_write_is_not_used(tmp_path):
    folder = tmp_path / "jax"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    report = run(tmp_path)
    assert report["warnings"] == ["W900"] and report["hits"] == 0
    assert os.listdir(folder) == []  # nothing kept in it
    agrees(report)


@pytest.mark.skipif(os.name != "posix", reason="owners and modes are POSIX's")
@pytest.mark.timeout(600)
def test_a_file_others_could_have_written_is_removed_unread(tmp_path):
    """A file planted in the folder while it was open to others (group- and world-writable) is
    removed before JAX could read it (W902); the program is compiled and kept afresh."""
    folder = tmp_path / "jax"
    folder.mkdir(mode=0o700)
    run(tmp_path)
    (kept,) = os.listdir(folder)
    (folder / kept).chmod(0o666)
    report = run(tmp_path)
    assert report["warnings"] == ["W902"] and report["hits"] == 0
    assert os.listdir(folder) == [kept] and (folder / kept).stat().st_mode & 0o022 == 0
    agrees(report)
