"""What a benchmark records of the machine's arithmetic: the CPU's vector extensions, NumPy's
BLAS (library, version and the kernel it runs), and an OpenBLAS kernel pinned older than the
CPU by `OPENBLAS_CORETYPE`. Shared by `hilbert bench FILE FN` and the suite (benchmarks/).

Some machines set `OPENBLAS_CORETYPE=Haswell` (and `OPENBLAS_L2_SIZE`) for every process,
because older OpenBLAS builds fail on their processors. The variable pins NumPy's current
OpenBLAS, which hilbert calls for its products, to that kernel: on a CPU with AVX-512 the
AVX2 kernels do a large float64 product at about half the speed. A reader of a benchmark must
know which kernel ran, so every record names it (threadpoolctl's `architecture`).

>>> blas_record()["kernel"]               # doctest: +SKIP
'SkylakeX'
>>> openblas_pin({"OPENBLAS_CORETYPE": "Haswell"}, ["AVX", "AVX2", "AVX-512F"])
{'variables': {'OPENBLAS_CORETYPE': 'Haswell'}, 'kernel_level': 'AVX2', 'cpu_level': 'AVX-512'}
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: The variables that choose OpenBLAS's kernel and its blocking; lifted together.
PIN_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
#: Set by the suite in a process it started with a pin lifted: the variables, as JSON.
LIFTED = "HILBERT_BENCH_LIFTED"

#: Vector levels from oldest to newest, as the CPU's extensions and OpenBLAS's kernels use them.
LEVELS = ("SSE2", "SSE3", "AVX", "AVX2", "AVX-512")
#: OpenBLAS's x86-64 core types (OPENBLAS_CORETYPE, any case) and the vectors their kernels use.
CORE_TYPES = {
    **dict.fromkeys(("katmai", "coppermine", "northwood", "prescott", "banias", "athlon",
                     "opteron"), "SSE2"),
    **dict.fromkeys(("atom", "core2", "penryn", "dunnington", "nehalem", "opteron_sse3",
                     "barcelona", "nano"), "SSE3"),
    **dict.fromkeys(("sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"),
                    "AVX"),
    **dict.fromkeys(("haswell", "zen"), "AVX2"),
    **dict.fromkeys(("skylakex", "cooperlake", "sapphirerapids"), "AVX-512"),
}
#: NumPy's names of the CPU features that are vector extensions, and how a record writes them.
VECTOR_FEATURES = {
    "SSE2": "SSE2", "SSE3": "SSE3", "SSSE3": "SSSE3", "SSE41": "SSE4.1", "SSE42": "SSE4.2",
    "AVX": "AVX", "FMA3": "FMA3", "AVX2": "AVX2", "AVX512F": "AVX-512F",
    "AVX512DQ": "AVX-512DQ", "AVX512BW": "AVX-512BW", "AVX512VL": "AVX-512VL",
    "AVX512VNNI": "AVX-512VNNI", "AVX512BF16": "AVX-512BF16", "AVX512FP16": "AVX-512FP16",
    "AVX512_SPR": "AVX-512 (Sapphire Rapids)", "NEON": "NEON", "ASIMD": "ASIMD",
    "ASIMDHP": "ASIMDHP", "SVE": "SVE", "VSX": "VSX", "VX": "VX",
}
#: The same extensions as Linux's /proc/cpuinfo flags name them (when NumPy cannot say).
LINUX_FLAGS = {"sse2": "SSE2", "pni": "SSE3", "ssse3": "SSSE3", "sse4_1": "SSE4.1",
               "sse4_2": "SSE4.2", "avx": "AVX", "fma": "FMA3", "avx2": "AVX2",
               "avx512f": "AVX-512F", "avx512dq": "AVX-512DQ", "avx512bw": "AVX-512BW",
               "avx512vl": "AVX-512VL", "avx512_vnni": "AVX-512VNNI",
               "avx512_bf16": "AVX-512BF16", "avx512_fp16": "AVX-512FP16", "asimd": "ASIMD",
               "sve": "SVE"}


def cpu_vectors() -> list[str]:
    """The CPU's vector extensions, oldest first, as NumPy detected them at run time (which
    also asks whether the operating system saves the registers), else from /proc/cpuinfo."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        try:
            from numpy.core._multiarray_umath import (  # type: ignore[no-redef]
                __cpu_features__ as features,
            )
        except ImportError:
            features = None
    if features:
        return [shown for name, shown in VECTOR_FEATURES.items() if features.get(name)]
    flags = _linux_flags()
    return [shown for name, shown in LINUX_FLAGS.items() if name in flags]


def _linux_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def widest_level(vectors: list[str]) -> str | None:
    """The newest of LEVELS the extensions reach (None off x86: NEON, SVE … are not ranked)."""
    have = set(vectors)
    ladder = (("AVX-512", "AVX-512F"), ("AVX2", "AVX2"), ("AVX", "AVX"), ("SSE3", "SSE3"),
              ("SSE2", "SSE2"))
    return next((level for level, feature in ladder if feature in have), None)


def openblas_pin(environ, vectors: list[str]) -> dict | None:
    """The pin `environ` sets, when OPENBLAS_CORETYPE names a kernel whose vectors are older
    than the CPU's widest: the variables (both of PIN_VARIABLES where set), the kernel's
    level and the CPU's. None when nothing is pinned, or the core type is not one known here
    (another architecture's names are left alone)."""
    core = environ.get("OPENBLAS_CORETYPE", "").strip().lower()
    kernel, cpu = CORE_TYPES.get(core), widest_level(vectors)
    if kernel is None or cpu is None or LEVELS.index(kernel) >= LEVELS.index(cpu):
        return None
    return {"variables": {k: environ[k] for k in PIN_VARIABLES if k in environ},
            "kernel_level": kernel, "cpu_level": cpu}


def unpinned_environment(environ, vectors: list[str] | None = None
                         ) -> tuple[dict[str, str], dict | None]:
    """(the environment a process should start with, the pin lifted or None): `environ`
    without PIN_VARIABLES when they pin a kernel older than a CPU with `vectors` (default:
    this one's), with LIFTED saying what was taken out; `environ` as it is otherwise."""
    pin = openblas_pin(environ, cpu_vectors() if vectors is None else vectors)
    env = dict(environ)
    if pin is None:
        return env, None
    for name in PIN_VARIABLES:
        env.pop(name, None)
    env[LIFTED] = json.dumps(pin, sort_keys=True)
    return env, pin


def blas_record() -> dict[str, Any]:
    """NumPy's BLAS as built (name, version, configuration) and as loaded: threadpoolctl's
    pools, and `kernel`, the architecture the BLAS runs (OpenBLAS's core type: 'SkylakeX',
    'Haswell' …; None where threadpoolctl cannot say)."""
    import numpy as np

    blas: dict[str, Any] = {"name": None, "version": None, "config": None, "kernel": None,
                            "threadpools": []}
    try:
        built = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas.update(name=built.get("name"), version=built.get("version"),
                    config=built.get("openblas configuration"))
    except Exception:  # noqa: BLE001 - an older NumPy has no dict form
        pass
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return blas
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    blas["threadpools"] = [{k: p.get(k) for k in ("internal_api", "version", "architecture",
                                                  "num_threads", "filepath")} for p in pools]
    # NumPy's own BLAS first (the one hilbert's products call: executor/numba/kernels.py), not
    # another library's loaded beside it (torch's MKL, SciPy's OpenBLAS)
    home = str(Path(np.__file__).parent)  # (a prefix of numpy.libs/ and numpy/.dylibs/ alike)
    pools.sort(key=lambda p: not str(p.get("filepath", "")).startswith(home))
    blas["kernel"] = next((p.get("architecture") for p in pools if p.get("architecture")), None)
    return blas


def pin_record(environ=None) -> dict | None:
    """What a record says of a pin: the one `environ` (default os.environ) sets, not lifted;
    or, in a process the suite started without it (LIFTED set), that one, lifted. In both,
    `kernel` is what threadpoolctl reports now."""
    environ = os.environ if environ is None else environ
    if LIFTED in environ:
        pin, lifted = json.loads(environ[LIFTED]), True
    else:
        pin, lifted = openblas_pin(environ, cpu_vectors()), False
    if pin is None:
        return None
    return {**pin, "lifted": lifted, "kernel": blas_record()["kernel"]}


def pin_note(pin: dict | None) -> str | None:
    """One sentence telling the user about a pin not lifted (None when there is none)."""
    if pin is None or pin["lifted"]:
        return None
    settings = " and ".join(f"{k}={v}" for k, v in pin["variables"].items())
    return (f"{settings} pin{'s' if len(pin['variables']) == 1 else ''} NumPy's OpenBLAS, "
            f"which hilbert's products call, to its {pin['kernel_level']} kernels "
            f"(threadpoolctl reports {pin['kernel']!r}) on a CPU with {pin['cpu_level']}: "
            "large products may run at half the speed the CPU allows; unset "
            f"{' and '.join(PIN_VARIABLES)} before starting Python to let OpenBLAS choose "
            "(where an old OpenBLAS elsewhere needs them, set them only for that program)")
