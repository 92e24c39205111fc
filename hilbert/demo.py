"""`hilbert demo`: every example of the Networks seed, run beside its verified output."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: The seed's examples: (label, file, function, arguments, verified output as printed there).
E = np.e
EXAMPLES = [
    ("dense", "Layers.hb", "layerThrough", ([[1, 2], [3, 4]], [[1, 0, 1], [0, 1, 1]]),
     [[1, 2, 3], [3, 4, 7]]),
    ("layerNorm", "Layers.hb", "normalisedRows", ([[1, 2, 3], [10, 10, 40]],),
     [[-1.224736, 0, 1.224736], [-0.707107, -0.707107, 1.414214]]),
    ("attention", "Layers.hb", "attend", (np.eye(3), np.eye(3), [[1], [2], [3]], 1.0),
     [[1.635825], [2], [2.364175]]),
    ("causal", "Layers.hb", "attendCausally", (np.eye(3), np.eye(3), [[1], [2], [3]], 1.0),
     [[1], [1.731059], [2.364175]]),
    ("dropped", "Layers.hb", "kept", ([[1, 2], [3, 4]], [[0.1, 0.7], [0.9, 0.3]], 0.5),
     [[0, 4], [6, 0]]),
    ("convolve", "Layers.hb", "filtered", ([[1, 2, 3, 4]], [1, -1]), [[-1, -1, -1, 4]]),
    ("maxPool", "Layers.hb", "pooledMax", ([[1, 5, 2, 4]], [1, 1]), [[5, 5, 4, 4]]),
    ("t = 0", "Fits.hb", "trainedOutputs",
     (0.0, 0.05, [[0, 1], [1, 1], [2, 1], [3, 1]], [[1], [3], [5], [7]], [[0.5, 0.3], [0.2, 0.4]],
      [[0.5], [0.5]]), [[0.3], [0.7], [1.1], [1.5]]),
    ("t = 500", "Fits.hb", "trainedOutputs",
     (500.0, 0.05, [[0, 1], [1, 1], [2, 1], [3, 1]], [[1], [3], [5], [7]], [[0.5, 0.3], [0.2, 0.4]],
      [[0.5], [0.5]]), [[1], [3], [5], [7]]),
    ("query x=4", "Fits.hb", "trainedQuery",
     (500.0, 0.05, [[0, 1], [1, 1], [2, 1], [3, 1]], [[1], [3], [5], [7]], [[0.5, 0.3], [0.2, 0.4]],
      [[0.5], [0.5]], [[4, 1]]), [[9]]),
    ("recurrent", "Fits.hb", "unrolled", ([[1, 0, 0]], [[0.5]], [1.0], [[0.0]]), [[0.179726]]),
    ("autoencoder t = 0", "Fits.hb", "squeezed",
     (0.0, 0.1, [[1, 1], [2, 2], [-1, -1]], [[0.5], [0.1]], [[0.3, 0.4]]),
     [[0.18, 0.24], [0.36, 0.48], [-0.18, -0.24]]),
    ("autoencoder t = 300", "Fits.hb", "squeezed",
     (300.0, 0.1, [[1, 1], [2, 2], [-1, -1]], [[0.5], [0.1]], [[0.3, 0.4]]),
     [[1, 1], [2, 2], [-1, -1]]),
    ("zero weights", "Fits.hb", "criticLossOf", ([[1, 2], [3, 4]], [[0, 1]], [0.0, 0.0]), 1.386294),
    ("[2, -2]", "Fits.hb", "criticLossOf", ([[1, 0]], [[0, 1]], [2.0, -2.0]), 0.253856),
]


def examples_directory() -> Path:
    """examples/ of the source checkout this package was installed from."""
    return Path(__file__).resolve().parent.parent / "examples"


def _format(value) -> str:
    """Six decimals, trailing zeros dropped, rows inline: the seed's own way of printing."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        text = f"{float(array):.6f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return "[" + ", ".join(_format(part) for part in array) + "]"


def run_demo(print_=print) -> bool:
    """Run every example; print ours beside the seed's; True when all agree to six decimals."""
    import hilbert

    modules = {name: hilbert.load(examples_directory() / name) for name in ("Layers.hb", "Fits.hb")}
    agree = True
    for label, file, function, args, verified in EXAMPLES:
        ours = getattr(modules[file], function)(*args)
        same = np.allclose(np.round(np.asarray(ours, dtype=float), 6), verified, rtol=0, atol=1.5e-6)
        agree &= same
        mark = "ok" if same else "DIFFERS"
        print_(f"{label:<20} {file[:-3]}.{function}")
        print_(f"  hilbert  {_format(ours)}")
        print_(f"  seed     {_format(verified)}   [{mark}]")
    print_("all examples agree with the seed to six decimals" if agree
           else "SOME EXAMPLES DIFFER FROM THE SEED")
    return agree
