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


def load_ipython_extension(shell) -> None:
    """`%load_ext hilbert` in IPython or Jupyter: `%%hilbert` cells and the rest of
    hilbert/notebook.py (imported only now: `import hilbert` never imports IPython)."""
    from .notebook import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell) -> None:
    """`%unload_ext hilbert`: HilbertErrors are shown as any exception again."""
    from .notebook import unload_ipython_extension as unload

    unload(shell)


def _show_in_notebooks() -> None:
    """Plans and errors render as HTML where hilbert is imported inside a running IPython
    (a notebook): IPython is not imported here, only used if it already runs."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        from .display import register

        register(shell)


_show_in_notebooks()
