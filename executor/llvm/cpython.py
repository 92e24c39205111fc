"""A lowered function's entry from Python, as machine code: one C function per call layout
that reads its arguments straight from the Python objects, calls the function through the ABI
with the GIL released, and makes the values it returns, so that a warm call costs what Numba's
dispatcher costs (call.py's ctypes path, which packs through `struct` and wraps memory in
Python, took ten times as long on a 4×4 layerNorm).

    entry(self: int, args: PyObject **, count) -> PyObject *    (CPython's METH_FASTCALL)

`self` is the address of the function (`hb_run`). An argument it does not take as it is (not
exactly an ndarray of the parameter's dtype object and rank, C-ordered when the function
needs it; a number other than a float, NumPy float64 or NumPy float32 for a float parameter,
other than a complex, NumPy complex128 or complex64 for a complex one, or a NumPy int64 for an
integer) makes it answer `NotImplemented` before anything runs: call.py
then takes its own path, which converts or refuses as before. After the call it answers the
function's values as call.py makes them (a tuple; a parameter's memory is that parameter, the
same memory twice is one array, an array the function made owns its malloc'd memory through a
capsule that frees it), or, when the function raised, `bytes`: the raise's number and the
result words, which call.py turns into the exception.

The module depends only on the layout (parameters' and results' types), never on an address:
its IR is the same in every process and its machine code goes to the disk cache as any
function's; the Python objects it compares with (the types, the dtype objects, True, False,
NotImplemented) are read from a table whose address, as the C API's functions', is given to
LLVM's symbol table (`llvm.add_symbol`) before anything is loaded. The offsets it reads are
CPython's and NumPy's published layouts (PyObject, PyFloatObject and NumPy's scalars, NumPy's
PyArrayObject_fields, the table of NumPy's C API); `available` checks them on this process's
objects first and answers False, so that call.py keeps its own path, where one differs."""

from __future__ import annotations

import ctypes
import functools
import sys
import threading

import numpy as np
from llvmlite import ir

from . import compile as machine
from .lower import SIGNATURE
from .runtime import DOUBLE, FLOAT, I8P, I64, release
from .types import COMPLEX

NAME = "hb_entry"
I32 = ir.IntType(32)
_OBJECTS = ("ndarray", "float", "float64", "float32", "int64", "NotImplemented", "True",
            "False", "d:float64", "d:float32", "d:int64", "d:bool", "d:complex128", "d:complex64",
            "complex", "complex128", "complex64")
#: What the table of objects holds, in order (a "d:" entry is that dtype's object).
_TABLE = (ctypes.c_void_p * len(_OBJECTS))(*(
    id(np.dtype(name[2:])) if name.startswith("d:") else
    id({"ndarray": np.ndarray, "float": float, "float64": np.float64, "float32": np.float32,
        "int64": np.int64, "NotImplemented": NotImplemented, "True": True,
        "False": False, "complex": complex, "complex128": np.complex128,
        "complex64": np.complex64}[name]) for name in _OBJECTS))
#: The C API's functions the entry calls, and their types.
_API = {
    "PyLong_AsVoidPtr": (I8P, [I8P]), "PyEval_SaveThread": (I8P, []),
    "PyEval_RestoreThread": (ir.VoidType(), [I8P]), "Py_IncRef": (ir.VoidType(), [I8P]),
    "PyFloat_FromDouble": (I8P, [DOUBLE]), "PyLong_FromLongLong": (I8P, [I64]),
    "PyComplex_FromDoubles": (I8P, [DOUBLE, DOUBLE]),
    "PyTuple_New": (I8P, [I64]), "PyTuple_SetItem": (I32, [I8P, I64, I8P]),
    "PyBytes_FromStringAndSize": (I8P, [I8P, I64]),
    "PyCapsule_New": (I8P, [I8P, I8P, I8P]), "PyCapsule_GetPointer": (I8P, [I8P, I8P]),
}
#: NumPy's C API functions, by their place in its table (numpy/__multiarray_api.h).
_NUMPY = {"PyArray_NewFromDescr": (94, I8P, [I8P, I8P, I32, I64.as_pointer(),
                                             I64.as_pointer(), I8P, I32, I8P]),
          "PyArray_SetBaseObject": (282, I32, [I8P, I8P])}
_C_ORDER_WRITEABLE = 0x0001 | 0x0400  # (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE)
_FASTCALL = 0x0080  # (METH_FASTCALL)
#: The optimisation level of an entry: 0, LLVM's optimiser and code generator at their
#: quickest. An entry is straight-line glue whose IR grows with its parameters and results
#: (the transformer block's train, 45 arrays in and out: 811 KiB of IR, 0.69 s of LLVM at
#: level 1, 0.26 s at 0), and its machine code at level 0 costs 2 ns a call more for two
#: arrays, 12 ns for five arrays in and four out, against 130 and 290 ns (the same layout
#: compiled at both levels in one process, 2-core machine under load, medians of 7).
ENTRY_LEVEL = 0
_LOCK = threading.Lock()


def _c_api(name: str, result, *args):
    """The C API's function `name`, called with the GIL held, as a ctypes function of its own
    (ctypes.pythonapi's are shared: their types are not ours to set)."""
    return ctypes.PYFUNCTYPE(result, *args)((name, ctypes.pythonapi))


def _numpy_api() -> ctypes.Array | None:
    """NumPy's table of C API functions (its `_ARRAY_API` capsule's pointer)."""
    core = sys.modules.get("numpy._core._multiarray_umath") or sys.modules.get(
        "numpy.core._multiarray_umath")
    capsule = getattr(core, "_ARRAY_API", None)
    if capsule is None:
        return None
    name = _c_api("PyCapsule_GetName", ctypes.c_char_p, ctypes.py_object)(capsule)
    address = _c_api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object,
                     ctypes.c_char_p)(capsule, name)
    return (ctypes.c_void_p * 300).from_address(address) if address else None


@functools.cache
def available() -> bool:
    """Whether this process's objects have the layouts the entry reads (64-bit CPython with
    NumPy's table in its documented order); the symbols it names registered with LLVM."""
    import llvmlite.binding as llvm

    table = _numpy_api()
    if sys.maxsize != 2**63 - 1 or table is None or table[2] != id(np.ndarray):
        return False
    probe = np.zeros((2, 3))  # (type, data, nd, descr and flags where the entry reads them)
    words = (ctypes.c_int64 * 9).from_address(id(probe))
    if (words[1] != id(np.ndarray) or words[2] != probe.ctypes.data
            or words[3] & 0xFFFFFFFF != 2
            or words[7] != id(probe.dtype) or not words[8] & 1
            or ctypes.c_double.from_address(id(np.float64(2.5)) + 16).value != 2.5
            or ctypes.c_float.from_address(id(np.float32(2.5)) + 16).value != 2.5
            or ctypes.c_int64.from_address(id(np.int64(7)) + 16).value != 7
            or not all((ctypes.c_double * 2).from_address(id(z) + 16)[:] == [2.5, -1.0]
                       for z in (2.5 - 1j, np.complex128(2.5 - 1j)))
            or (ctypes.c_float * 2).from_address(id(np.complex64(2.5 - 1j)) + 16)[:] != [
                2.5, -1.0]):
        return False
    for name in _API:
        llvm.add_symbol(f"hilbert_{name}",
                        ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
    for name, (at, _, _) in _NUMPY.items():
        llvm.add_symbol(f"hilbert_{name}", table[at])
    llvm.add_symbol("hilbert_py_objects", ctypes.addressof(_TABLE))
    return True


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("method", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_INCREF = _c_api("Py_IncRef", None, ctypes.py_object)
_NEW_FUNCTION = _c_api("PyCFunction_NewEx", ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                       ctypes.c_void_p)


@functools.cache
def _compiled(layout: tuple) -> tuple:
    """The entry of `layout` (params, results, out words, contiguous) compiled (or loaded from
    the disk cache), and its method record: once per layout in a process."""
    made = machine.compile_described(f"entry {layout!r}", lambda: str(_module(*layout)), (NAME,),
                                     ENTRY_LEVEL)
    record = _MethodDef(b"hb_entry", made.addresses[NAME], _FASTCALL, None)
    # Kept for the whole process, past the interpreter's exit: the arrays it made free their
    # memory through its capsules' destructor, and the last of them go after atexit has run
    # the finalisers (the Machine's would close the engine: a call into unmapped code). One
    # small module per layout, as Numba keeps its own code.
    _, close, _, _ = made._closed.detach()
    for kept in (close.__self__, record):
        _INCREF(kept)
    return made, record


def prepare(layout: tuple) -> None:
    """The entry of `layout` made now, where `available` (run on a thread of its own beside
    the function's compile: the entry needs only its layout; an error is left for `entry`)."""
    try:
        if available():
            with _LOCK:
                _compiled(layout)
    except Exception:  # noqa: BLE001 (`entry`, in the caller's thread, raises it again)
        pass


def entry(layout: tuple, run: int):
    """A Python callable (a builtin) entering the function at address `run` through the entry
    of `layout`; None where `available` says no."""
    if not available():
        return None
    with _LOCK:
        made, record = _compiled(layout)
    return _NEW_FUNCTION(ctypes.addressof(record), run, None)


def _module(params: tuple, results: tuple, words: int, contiguous: bool) -> ir.Module:
    """The entry's module: its arguments read and checked (`_Entry.read`), the call, its
    results made (`_Entry.made`)."""
    module = ir.Module(name="hilbert_entry")
    kind = ir.FunctionType(I8P, [I8P, I8P.as_pointer(), I64])
    function = ir.Function(module, kind, NAME)
    function.attributes.add("nounwind")
    entry = _Entry(module, function)
    entry.read(params, contiguous)
    b = entry.b
    out = b.alloca(I64, words + 1)
    saved = b.call(entry.api("PyEval_SaveThread"), [])
    run = b.bitcast(b.call(entry.api("PyLong_AsVoidPtr"), [function.args[0]]),
                    SIGNATURE.as_pointer())
    code = b.call(run, [entry.args, b.gep(out, [ir.Constant(I64, 1)])])
    b.call(entry.api("PyEval_RestoreThread"), [saved])
    raised, returned = (function.append_basic_block(n) for n in ("raised", "returned"))
    b.cbranch(b.icmp_signed("!=", code, ir.Constant(I64, 0)), raised, returned)
    b.position_at_end(raised)
    b.store(code, out)
    b.ret(b.call(entry.api("PyBytes_FromStringAndSize"),
                 [b.bitcast(out, I8P), ir.Constant(I64, 8 * (words + 1))]))
    b.position_at_end(returned)
    b.ret(entry.made(results, b.gep(out, [ir.Constant(I64, 1)])))
    return module


class _Entry:
    """The entry's function while it is written: `b` its builder, `args` the ABI's words."""

    def __init__(self, module: ir.Module, function: ir.Function):
        self.module, self.function = module, function
        self.b = ir.IRBuilder(function.append_basic_block("start"))
        self.table = ir.GlobalVariable(module, ir.ArrayType(I8P, len(_OBJECTS)),
                                       "hilbert_py_objects")
        self._params: list = []  # (each parameter's object and, for an array, its data word)
        self._declined: ir.Block | None = None

    def api(self, name: str) -> ir.Function:
        found = self.module.globals.get(f"hilbert_{name}")
        if found is None:
            result, args = _API[name] if name in _API else _NUMPY[name][1:]
            found = ir.Function(self.module, ir.FunctionType(result, args), f"hilbert_{name}")
        return found

    def object(self, name: str) -> ir.Value:
        """The table's entry `name`."""
        b = self.b
        return b.load(b.gep(self.table, [ir.Constant(I32, 0),
                                         ir.Constant(I32, _OBJECTS.index(name))]))

    def field(self, value: ir.Value, offset: int, kind: ir.Type) -> ir.Value:
        """The `kind` at `offset` bytes into the object `value`."""
        b = self.b
        at = b.gep(value, [ir.Constant(I64, offset)])
        return b.load(b.bitcast(at, kind.as_pointer()))

    def check(self, ok: ir.Value) -> None:
        """Go on where `ok`, else answer NotImplemented (nothing has been made yet)."""
        if self._declined is None:
            saved = self.b.block
            self._declined = self.function.append_basic_block("declined")
            self.b.position_at_end(self._declined)
            self.b.ret(self._incref(self.object("NotImplemented")))
            self.b.position_at_end(saved)
        going = self.function.append_basic_block("checked")
        self.b.cbranch(ok, going, self._declined)
        self.b.position_at_end(going)

    def _incref(self, value: ir.Value) -> ir.Value:
        self.b.call(self.api("Py_IncRef"), [value])
        return value

    def read(self, params: tuple, contiguous: bool) -> None:
        """Each argument checked and its words written into `args`, as call.py packs them."""
        b = self.b
        args, count = self.function.args[1:]
        self.check(b.icmp_signed("==", count, ir.Constant(I64, len(params))))
        size = sum(1 + 2 * p[1] if isinstance(p, tuple) else 2 if p in COMPLEX else 1
                   for p in params)
        self.args = b.alloca(I64, max(size, 1))
        at = 0
        for k, param in enumerate(params):
            value = b.load(b.gep(args, [ir.Constant(I64, k)]))
            kind = self.field(value, 8, I8P)
            if isinstance(param, tuple):
                words = self._array(value, kind, *param, contiguous)
                self._params.append((value, words[0]))
            elif param in COMPLEX:
                words = self._complex(value, kind, param)
                self._params.append((value, None))
            else:
                words = [self._number(value, kind, param)]
                self._params.append((value, None))
            for word in words:
                b.store(word, b.gep(self.args, [ir.Constant(I64, at)]))
                at += 1

    def _array(self, value, kind, dtype: str, rank: int, contiguous: bool) -> list:
        b = self.b
        ok = b.and_(b.icmp_unsigned("==", kind, self.object("ndarray")),
                    b.icmp_unsigned("==", self.field(value, 56, I8P), self.object(f"d:{dtype}")))
        ok = b.and_(ok, b.icmp_signed("==", self.field(value, 24, I32), ir.Constant(I32, rank)))
        if contiguous:
            flags = self.field(value, 64, I32)
            ok = b.and_(ok, b.icmp_signed("!=", b.and_(flags, ir.Constant(I32, 1)),
                                          ir.Constant(I32, 0)))
        self.check(ok)
        shape, strides = self.field(value, 32, I64.as_pointer()), self.field(value, 40,
                                                                            I64.as_pointer())
        return [self.field(value, 16, I64),
                *(b.load(b.gep(shape, [ir.Constant(I64, j)])) for j in range(rank)),
                *(b.load(b.gep(strides, [ir.Constant(I64, j)])) for j in range(rank))]

    def _number(self, value, kind, dtype: str) -> ir.Value:
        """The number's bits in one word (a float32's in the low half), from a float or NumPy
        float64 (a float: the same layout), a NumPy float32, or a NumPy int64."""
        b = self.b
        if dtype not in ("float64", "float32"):
            self.check(b.icmp_unsigned("==", kind, self.object("int64")))
            return self.field(value, 16, I64)
        wide = b.or_(b.icmp_unsigned("==", kind, self.object("float")),
                     b.icmp_unsigned("==", kind, self.object("float64")))
        narrow = b.icmp_unsigned("==", kind, self.object("float32"))
        self.check(b.or_(wide, narrow))
        double = b.select(wide, self.field(value, 16, DOUBLE),
                          b.fpext(self.field(value, 16, FLOAT), DOUBLE))
        if dtype == "float64":
            return b.bitcast(double, I64)
        return b.zext(b.bitcast(b.fptrunc(double, FLOAT), I32), I64)

    def _complex(self, value, kind, dtype: str) -> list:
        """A complex number's two words (its parts' bits, a complex64's in their low halves),
        from Python's complex or NumPy's complex128 (two doubles after the object's head) or
        NumPy's complex64 (two floats)."""
        b = self.b
        wide = b.or_(b.icmp_unsigned("==", kind, self.object("complex")),
                     b.icmp_unsigned("==", kind, self.object("complex128")))
        narrow = b.icmp_unsigned("==", kind, self.object("complex64"))
        self.check(b.or_(wide, narrow))
        words = []
        for part in (0, 1):
            double = b.select(wide, self.field(value, 16 + 8 * part, DOUBLE),
                              b.fpext(self.field(value, 16 + 4 * part, FLOAT), DOUBLE))
            words.append(b.bitcast(double, I64) if dtype == "complex128" else
                         b.zext(b.bitcast(b.fptrunc(double, FLOAT), I32), I64))
        return words

    def made(self, results: tuple, out: ir.Value) -> ir.Value:
        """The tuple call.py's `_unpacked` makes of the result words at `out`."""
        values, known, at = [], [(d, v) for v, d in reversed(self._params) if d is not None], 0
        for kind, dtype, rank, index in results:
            if kind == "tuple":
                continue
            if kind == "param":
                values.append(self._incref(self._params[index][0]))
                continue
            count = 2 if kind == "number" and dtype in COMPLEX else 1
            words = [self.b.load(self.b.gep(out, [ir.Constant(I64, at + j)]))
                     for j in range(1 + rank if kind in ("fresh", "held") else count)]
            at += len(words)
            if kind == "number" and dtype in COMPLEX:  # (Python's complex, as call.py's)
                real = [self._boxed_part(w, dtype == "complex64") for w in words]
                values.append(self.b.call(self.api("PyComplex_FromDoubles"), real))
                continue
            if kind == "number":
                values.append(self._boxed(words[0], dtype))
                continue
            array = self._adopted(words, dtype, known)
            known.append((words[0], array))
            values.append(array)
        return self._grouped(values, results)

    def _boxed_part(self, word: ir.Value, narrow: bool) -> ir.Value:
        """A double of a word's bits (a float's in its low half where `narrow`)."""
        b = self.b
        if narrow:
            return b.fpext(b.bitcast(b.trunc(word, I32), FLOAT), DOUBLE)
        return b.bitcast(word, DOUBLE)

    def _boxed(self, word: ir.Value, dtype: str) -> ir.Value:
        b = self.b
        if dtype == "float64":
            return b.call(self.api("PyFloat_FromDouble"), [b.bitcast(word, DOUBLE)])
        if dtype == "float32":
            return b.call(self.api("PyFloat_FromDouble"), [self._boxed_part(word, True)])
        if dtype == "bool":
            chosen = b.select(b.icmp_signed("!=", word, ir.Constant(I64, 0)),
                              self.object("True"), self.object("False"))
            return self._incref(chosen)
        return b.call(self.api("PyLong_FromLongLong"), [word])

    def _adopted(self, words: list, dtype: str, known: list) -> ir.Value:
        """The array at words[0] of shape words[1:]: an earlier one at that address, or a new
        one owning the memory (freed now, and NumPy's own made, when it holds no entries)."""
        b = self.b
        found = ir.Constant(I8P, None)
        for address, array in known:  # (the first match: a parameter, the last one first)
            empty = b.icmp_unsigned("==", found, ir.Constant(I8P, None))
            found = b.select(b.and_(empty, b.icmp_signed("==", words[0], address)), array,
                             found)
        result = b.alloca(I8P)
        b.store(found, result)
        with b.if_else(b.icmp_unsigned("==", found, ir.Constant(I8P, None))) as (new, old):
            with new:
                b.store(self._new_array(words, dtype), result)
            with old:
                self._incref(found)
        return b.load(result)

    def _new_array(self, words: list, dtype: str) -> ir.Value:
        b = self.b
        shape = b.alloca(I64, max(len(words) - 1, 1))
        entries = ir.Constant(I64, 1)
        for j, size in enumerate(words[1:]):
            b.store(size, b.gep(shape, [ir.Constant(I64, j)]))
            entries = b.mul(entries, size)
        data = b.inttoptr(words[0], I8P)
        empty = b.icmp_signed("==", entries, ir.Constant(I64, 0))
        descr = self._incref(self.object(f"d:{dtype}"))  # (NewFromDescr takes it over)
        array = b.call(self.api("PyArray_NewFromDescr"), [
            self.object("ndarray"), descr, ir.Constant(I32, len(words) - 1), shape,
            ir.Constant(I64.as_pointer(), None), b.select(empty, ir.Constant(I8P, None), data),
            ir.Constant(I32, _C_ORDER_WRITEABLE), ir.Constant(I8P, None)])
        with b.if_else(empty) as (none, some):
            with none:
                release(b, data)
            with some:
                capsule = b.call(self.api("PyCapsule_New"), [
                    data, ir.Constant(I8P, None), b.bitcast(self._freeing(), I8P)])
                b.call(self.api("PyArray_SetBaseObject"), [array, capsule])
        return array

    def _freeing(self) -> ir.Function:
        """A capsule's destructor that frees the memory it holds."""
        found = self.module.globals.get("hb_free_capsule")
        if found is not None:
            return found
        function = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I8P]),
                               "hb_free_capsule")
        b = ir.IRBuilder(function.append_basic_block("start"))
        release(b, b.call(self.api("PyCapsule_GetPointer"),
                          [function.args[0], ir.Constant(I8P, None)]))
        b.ret_void()
        return function

    def _grouped(self, values: list, results: tuple) -> ir.Value:
        """call.py's `_grouped`: the values as a tuple, each "tuple" result's items as one."""
        grouped, at, k = [], 0, 0
        while k < len(results):
            count = results[k][2] if results[k][0] == "tuple" else 0
            grouped.append(self._tuple(values[at:at + count]) if count else values[at])
            at, k = at + max(count, 1), k + 1 + count
        return self._tuple(grouped)

    def _tuple(self, items: list) -> ir.Value:
        made = self.b.call(self.api("PyTuple_New"), [ir.Constant(I64, len(items))])
        for k, item in enumerate(items):
            self.b.call(self.api("PyTuple_SetItem"), [made, ir.Constant(I64, k), item])
        return made
