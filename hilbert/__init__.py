"""hilbert: compile .hb tensor mathematics (one contraction: einsum) and run it fast.

>>> import hilbert
>>> hilbert.compile_source('fn dense(a, w) ↦ einsum("np,pq->nq", a, w)').dense([[1, 2]], [[1], [1]])
array([[3.]])
"""

from hilbert.executor.numba import threads as _threads

_threads.prepare_openmp()  # with threads asked for: OpenMP, loaded later, sleeps when idle

from hilbert.api import Function, Module, compile_source, load, open  # noqa: E402
from hilbert.contract import contract_expression, contract_path, einsum  # noqa: E402
from hilbert.grammar.errors import (  # noqa: E402
    ArgumentError,
    CheckError,
    HilbertError,
    HilbertWarning,
    MissingNameError,
    ModelError,
    NameResolutionError,
    ParseError,
    RuntimeHilbertError,
)

__all__ = [
    "ArgumentError", "CheckError", "Function", "HilbertError", "HilbertWarning",
    "MissingNameError", "Module", "ModelError",
    "NameResolutionError", "ParseError", "RuntimeHilbertError", "compile_source",
    "contract_expression", "contract_path", "einsum", "load", "open",
]
