"""opt_einsum's and NumPy's own einsum test files, read from the installed packages and run with
their `contract`, `contract_path`, `contract_expression`, `numpy.einsum` and `numpy.einsum_path`
swapped for hilbert's (docs/networks.md, "opt_einsum's and NumPy's own tests")."""

from __future__ import annotations

import importlib.util
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import hilbert

#: What each of their names becomes: the function of hilbert's that answers for it.
SWAPS = {"contract": hilbert.einsum, "contract_path": hilbert.contract_path,
         "contract_expression": hilbert.contract_expression, "einsum": hilbert.einsum,
         "einsum_path": getattr(hilbert, "einsum_path", None)}


class _Swapped(types.ModuleType):
    """A module that answers as `module` does, except for the names in `swaps`."""

    def __init__(self, module: types.ModuleType, swaps: dict[str, object]):
        super().__init__(module.__name__, module.__doc__)
        self._module, self._swaps = module, swaps

    def __getattr__(self, name: str):
        if name in self._swaps:
            if self._swaps[name] is None:
                raise AttributeError(f"hilbert has no {name}")
            return self._swaps[name]
        return getattr(self._module, name)


def run_theirs(module_name: str) -> dict[str, object]:
    """The tests of the installed test file `module_name` (e.g. "opt_einsum.tests.test_contract"),
    run in a namespace of their own whose swapped names (`SWAPS`, bound by name or reached as an
    attribute of `numpy` or `opt_einsum`) are hilbert's; only the tests that reach one of them."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None, f"{module_name} is not installed"
    source = Path(spec.origin).read_text(encoding="utf-8")
    namespace: dict[str, object] = {"__name__": f"theirs.{module_name}", "__file__": spec.origin}
    exec(compile(source, spec.origin, "exec"), namespace)  # (their file, as installed)
    for name, value in list(namespace.items()):
        if name in SWAPS and callable(value):
            namespace[name] = SWAPS[name] or _missing(name)
        elif isinstance(value, types.ModuleType) and value.__name__ in ("numpy", "opt_einsum"):
            namespace[name] = _Swapped(value, SWAPS)
    return {name: value for name, value in namespace.items()
            if name.startswith(("test", "Test")) and _reaches_hilbert(value, namespace)}


def _missing(name: str) -> Callable:
    def missing(*args, **kwargs):
        raise AttributeError(f"hilbert has no {name}")
    return missing


def _reaches_hilbert(test: object, namespace: dict) -> bool:
    """Whether `test` (a function, or a class of them) names a swapped function, directly or
    through the file's own helpers it calls by name."""
    seen: set[str] = set()
    pending = [test]
    while pending:
        item = pending.pop()
        for code in _codes(item):
            for name in code.co_names:
                if name in SWAPS:
                    return True
                helper = namespace.get(name) or _method(test, name)
                if name not in seen and callable(helper) and hasattr(helper, "__code__"):
                    seen.add(name)
                    pending.append(helper)
    return False


def _method(test: object, name: str):
    return getattr(test, name, None) if isinstance(test, type) else None


def _codes(item: object) -> Iterator[types.CodeType]:
    """Every code object of a function (its nested ones too) or of a class's functions."""
    functions = ([v for v in vars(item).values() if callable(v)] if isinstance(item, type)
                 else [item])
    for function in functions:
        code = getattr(function, "__code__", None)
        stack = [code] if code is not None else []
        while stack:
            code = stack.pop()
            yield code
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
