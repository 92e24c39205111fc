"""hilbert: compile .hb tensor mathematics (one contraction: einsum) and run it fast.

>>> import hilbert
>>> hilbert.compile_source('fn dense(a, w) ↦ einsum("np,pq->nq", a, w)').dense([[1, 2]], [[1], [1]])
array([[3.]])
"""

from hilbert.compiler.plan.hyper import Hyper
from hilbert.grammar.errors import (
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

from .api import Function
from .contract import contract_expression, contract_path, einsum, einsum_path, load_path
from .derivations import Derivation, equivalent, simplify, solve, substitute
from .module import Module, compile_source, load, open

__all__ = [
    "ArgumentError", "CheckError", "Derivation", "Function", "HilbertError", "HilbertWarning", "Hyper",
    "MissingNameError", "Module", "ModelError",
    "NameResolutionError", "ParseError", "RuntimeHilbertError", "compile_source",
    "contract_expression", "contract_path", "einsum", "einsum_path", "equivalent", "load",
    "load_path", "open", "simplify", "solve", "substitute",
]
