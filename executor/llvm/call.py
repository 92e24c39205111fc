"""The Python side of lower.py's C ABI: a lowered function compiled at its first use and called
through its entry (cpython.py: machine code that reads the arguments and makes the values), or,
for arguments the entry does not take, through its address by ctypes, with its parameters
packed into one buffer and its results unpacked from another, as the entry would.

Arrays a call makes come back as malloc's memory, which the NumPy array returned owns: freed
(by the C library's free, the allocator's own) when the last array viewing it goes. The
alternative, arrays allocated here before the call, would need every returned array's shape
computed in Python before the call, from sizes that generated code may compute in its loops;
handing memory back works for any shape and costs one small object per array."""

from __future__ import annotations

import ctypes
import math
import struct
import threading
import weakref

import numpy as np

from ..numba import faults
from . import compile as machine
from . import cpython, heap, records, shared
from .lower import NAME, Result
from .types import COMPLEX, Array, Type

#: Each number's layout in one 8-byte slot (a float32 in the low half; a complex number's parts
#: in two, as its real parts': lower.py).
_NUMBER = {"float64": "d", "float32": "f4x", "int64": "q", "bool": "q", "complex128": "dd",
           "complex64": "f4xf4x"}
_ABI = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)  # (releases the GIL)
_LIBC = ctypes.CDLL(None)
_FREE = _LIBC.free
_FREE.argtypes = [ctypes.c_void_p]
_FREE.restype = None


def _kernels_made(symbols: tuple[str, ...]) -> None:
    """The shared kernels `symbols` made (shared.awaited), each begun first by the module
    that writes it where nothing in this process has (a function made from its record,
    records.py, was never lowered here): its symbol says which."""
    for name in symbols:
        if shared.begun(name):
            continue
        family, _, dtype = name.rpartition(".")
        if family == "hb_product":
            from . import products

            products.begin(dtype)
        elif family == "hb_complex_product":
            from . import complex_products

            complex_products.begin(dtype)
        else:
            raise LookupError(f"no shared kernel is called {name}")
    shared.awaited(symbols)


class Lowered:
    """A function lowered to LLVM IR (`text`), compiled at `level` (or its machine code loaded
    from the disk cache: compile.py) when first called or when `compile` is (under a lock:
    one thread compiles), and called as Numba's dispatcher is: with its parameters,
    answering what the function returns."""

    def __init__(self, text: str | None, params: list[Type], results: list[Result], level: int,
                 contiguous: bool = False, raises: list[tuple[str, tuple[str, ...]]] = (),
                 passes: int = 1, parts: list[tuple[str | None, tuple[str, ...]]] | None = None,
                 kernels: tuple[str, ...] = (), description: str | None = None,
                 kept_as: list[str] | None = None, fresh=None):
        self._text = text
        self._parts = parts or [(text, ())]  # (its module in parts: parts.py)
        self._kernels = kernels  # (the shared kernels it calls: shared.py)
        self._description = description  # (what its record is kept by: records.py)
        self._kept_as = kept_as  # (where its parts' object code is kept: its record's)
        self._fresh = fresh  # (a record's function lowered, where its code is gone)
        self._given = (list(results), list(raises))
        self._contiguous = contiguous  # (its arrays must be C-ordered: lower.py)
        self.level = level
        self.passes = passes  # (the rounds of LLVM's pipeline: compile.rounds)
        self._params = "=" + "".join("q" * (1 + 2 * t.rank) if isinstance(t, Array)
                                     else _NUMBER[t] for t in params)
        self._arrays = tuple(isinstance(t, Array) for t in params)
        self._results = tuple(results)
        self._out = "=" + "".join("q" * (1 + r.rank) if r.kind in ("fresh", "held")
                                  else _NUMBER[r.dtype] if r.kind == "number" else ""
                                  for r in results)
        self._raises = tuple(("=" + "".join(_NUMBER[t] for t in types), getattr(faults, name),
                              types) for name, types in raises)  # (layout, class, types)
        self._out_size = max([8, struct.calcsize(self._out),
                              *(struct.calcsize(layout) for layout, _, _ in self._raises)])
        self._layout = (  # (what the entry from Python depends on: cpython.py)
            tuple((t.dtype, t.rank) if isinstance(t, Array) else t for t in params),
            tuple((r.kind, r.dtype, r.rank, r.index) for r in results), self._out_size // 8,
            contiguous)
        self._lock = threading.Lock()
        self._call = None
        self._entry = None  # (the entry from Python, or `_called` where there is none)
        self._machine = None  # (keeps the code mapped while this object lives)

    def compile(self, *_signature, before_load=None) -> None:
        """Compile the machine code now (the signature Numba's dispatcher takes is ignored:
        the ABI fixes the parameters' types); `before_load()` runs before it is loaded."""
        with self._lock:
            if self._call is None:
                heap.settle()  # (before any compiled code makes arrays)
                entry = threading.Thread(target=cpython.prepare, args=(self._layout,),
                                         name="hilbert-entry", daemon=True)
                entry.start()  # (its module compiles beside the function's)
                self._machine = self._compiled(before_load)
                entry.join()
                address = self._machine.addresses[NAME]
                self._entry = cpython.entry(self._layout, address) or self._called
                self._call = _ABI(address)  # (last: a call that finds it finds the entry)

    @property
    def text(self) -> str:
        """Its module's LLVM IR (a function made from its record, records.py, is lowered now)."""
        if self._text is None:
            self._lowered_again()
        return self._text  # type: ignore[return-value]

    def _lowered_again(self) -> None:
        fresh = self._fresh()
        self._text, self._parts, self._kernels = fresh._text, fresh._parts, fresh._kernels
        self._kept_as = None

    def _compiled(self, before_load):
        """Its machine code (compile.compile_parts), from its record's object code where it was
        made from one (lowered, after all, where that code is gone); its record written when it
        was lowered here."""
        def linkable() -> None:  # (the shared kernels it calls made first: shared.py)
            _kernels_made(self._kernels)
            if before_load is not None:
                before_load()

        try:
            made = machine.compile_parts(self._parts, (NAME,), self.level, self.passes,
                                         linkable, self._kept_as)
        except LookupError:
            if self._kept_as is None:
                raise
            self._lowered_again()
            made = machine.compile_parts(self._parts, (NAME,), self.level, self.passes,
                                         linkable)
        if self._kept_as is None and self._description is not None:
            records.write(self._description, self.level, *self._given,
                          list(zip(made.kept, (s for _, s in self._parts), strict=True)),
                          self._kernels)
        return made

    def __call__(self, *args):
        """The function's values for `args`, through the entry of cpython.py (its machine
        code reads the objects), or `_called` for arguments the entry does not take."""
        if self._call is None:
            self.compile()
        answer = self._entry(*args)  # type: ignore[misc]
        if type(answer) is tuple:
            return answer
        if answer is NotImplemented:
            return self._called(*args)
        raise self._fault(answer, 8)  # (bytes: the raise's number, then the result words)

    def _called(self, *args) -> tuple:
        """`__call__` through ctypes: the parameters packed by `struct`, the results unpacked
        and wrapped here."""
        words: list = []
        for value, is_array in zip(args, self._arrays, strict=True):
            if is_array:
                if self._contiguous and not value.flags.c_contiguous:
                    raise AssertionError("a function lowered for C-ordered arrays was given "
                                         "another layout")
                words.append(value.ctypes.data)
                words.extend(value.shape)
                words.extend(value.strides)
            elif type(value) is not complex and not isinstance(value, np.complexfloating):
                words.append(value)
            else:
                words.extend((value.real, value.imag))
        packed = ctypes.create_string_buffer(struct.pack(self._params, *words), 
                                             max(struct.calcsize(self._params), 8))
        out = ctypes.create_string_buffer(self._out_size)
        code = self._call(packed, out)  # type: ignore[misc]
        if code:
            raise self._fault(struct.pack("=q", code) + out.raw, 8)
        return self._unpacked(struct.unpack_from(self._out, out), args)

    def _fault(self, words: bytes, at: int) -> Exception:
        """The coded runtime error whose number is `words`' first and whose arguments follow
        from byte `at`, as Numba-built code raises it (faults.py)."""
        layout, error, types = self._raises[struct.unpack_from("=q", words)[0] - 1]
        parts = iter(struct.unpack_from(layout, words, at))
        return error(*(complex(next(parts), next(parts)) if t in COMPLEX else next(parts)
                       for t in types))

    def _unpacked(self, words: tuple, args) -> tuple:
        values, at = [], 0
        # (a held local's array: a parameter's memory is that parameter, as Numba returns it;
        # the same memory returned twice is one array)
        known = {args[k].ctypes.data: args[k] for k, is_array in enumerate(self._arrays)
                 if is_array}
        for result in self._results:
            if result.kind == "tuple":  # (its items follow: grouped by _grouped)
                continue
            if result.kind == "param":
                values.append(args[result.index])
            elif result.kind in ("fresh", "held"):
                address = words[at]
                if address not in known:
                    known[address] = _adopted(address, words[at + 1:at + 1 + result.rank],
                                              result.dtype)
                values.append(known[address])
                at += 1 + result.rank
            elif result.dtype in COMPLEX:
                values.append(complex(words[at], words[at + 1]))
                at += 2
            else:
                word = words[at]
                values.append(bool(word) if result.dtype == "bool" else word)
                at += 1
        return _grouped(values, self._results)


def _grouped(values: list, results: tuple) -> tuple:
    """`values` (one for each result but the tuples) with each "tuple" result's items as one
    tuple."""
    grouped, at, k = [], 0, 0
    while k < len(results):
        count = results[k].rank if results[k].kind == "tuple" else 0
        grouped.append(tuple(values[at:at + count]) if count else values[at])
        at, k = at + max(count, 1), k + 1 + count
    return tuple(grouped)


def _adopted(address: int, shape: tuple, dtype: str) -> np.ndarray:
    """The C-ordered array of `shape` at `address` (malloc's), owning that memory."""
    kind = np.dtype(dtype)
    size = math.prod(shape) * kind.itemsize
    if size == 0:
        _FREE(address)
        return np.empty(shape, kind)
    memory = (ctypes.c_char * size).from_address(address)
    weakref.finalize(memory, _FREE, address)
    return np.frombuffer(memory, kind).reshape(shape)
