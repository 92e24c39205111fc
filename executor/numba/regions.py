"""One generated function of the numba executor and how to call it: its code generated when
first asked for, compiled (or loaded from the disk cache) when built, its arguments converted
to the one layout compiled code takes, and its refusals turned into coded errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...compiler.counting import COUNTED, NOTHING, Counting
from ...compiler.loops import step_count
from ...compiler.ops import draws
from ...compiler.ops.meanings import one_hot, position
from ...compiler.passes.shapes import ShapeTable
from .. import blas_threads, llvm, threads
from . import interrupt
from .faults import DrawError, LabelError, PositionError, StepCountError
from .loading import load

if TYPE_CHECKING:
    from .. import codegen

class OnHost(Exception):  # noqa: N818 (not an error: how a call is handed to the host tier)
    """Raised by `convert` for values its compiled code cannot take as the host does: a complex
    number with an imaginary part given where a complex call counts (its counted values are
    float64 there, compiler/counting.py), which the host refuses as a count, or reads as it
    would where it is no count after all. The call runs on the host tier (tiers.py)."""


class CompiledRegion:
    """One generated function and how to call it: `inputs` are the IR nodes whose values it is
    given (scalars are passed as NumPy floats, arrays as C-ordered writable arrays, both of
    the call's dtype, float64 or float32, but counted values, compiler/counting.py: float64)."""

    def __init__(self, region: codegen.Region, table: ShapeTable, optimize: str,
                 paths: dict | None = None, fast: bool = False, dtype: str = "float64",
                 counted: Counting = NOTHING):
        self.region = region
        self._table = table
        self._optimize = optimize
        self._paths = paths  # the plan's contraction paths, which the code follows
        self._fast = fast  # math="fast"
        self.dtype = np.dtype(dtype)
        self._counted = counted
        within = counted.at(region.scope[-1] if region.scope else None)
        # each input's dtype: float64 for a counted one (a position, a step count)
        self.dtypes = tuple(np.dtype(COUNTED) if n in within else self.dtype
                            for n in region.inputs)
        self._counts = tuple(i for i, d in enumerate(self.dtypes)  # (a complex call's)
                             if d != self.dtype) if self.dtype.kind == "c" else ()
        self._generated: codegen.Generated | None = None
        self._function = None
        self._parallel = False  # (its code has prange loops)
        self.backend = "llvm"  # what builds it, or why nothing does (`_lowered`)
        self._made: tuple | None = None  # (its LLVM lowering, once made: `lowering`)
        self.scalars = tuple(i for i, n in enumerate(region.inputs)
                             if not table.scopes[region.scope][n])
        self.arrays = tuple(i for i in range(len(region.inputs)) if i not in self.scalars)

    @property
    def generated(self) -> codegen.Generated:
        """The region's code, generated when first asked for (a call on the host needs none)."""
        if self._generated is None:
            from .. import codegen

            self._generated = codegen.generate(self.region, self._table, self._optimize,
                                              exact=True, paths=self._paths, fast=self._fast,
                                              dtype=self.dtype.name, counted=self._counted)
        return self._generated

    @property
    def source(self) -> str:
        return self.generated.source

    @property
    def function(self):
        """The generated function, made once: compiled code the LLVM back end lowered (compiled
        at its first call, or when `compile` says), or, for code that needs no compiling (plain
        NumPy calls), the generated source run as Python. In a process forked from one that
        ran parallel code, parallel code is its serial twin (threads.usable). A function the
        back end does not lower has no compiled form: its calls stay on the host tier, as the
        plan says (schedules.decide), and never reach here."""
        if self._function is None or self._parallel and not threads.usable():
            # (the twin, once made, is kept: not remade, nor relowered, at every call; the
            # lowering made with the schedule has threads, so the twin is lowered afresh)
            generated = self.generated
            if not generated.compiled:
                self._function = load("hilbert.executor.numba.cache").function(
                    generated.source)
                return self._function
            self._parallel = generated.parallel and threads.usable()
            twin = self._parallel != generated.parallel
            made = self._lowered() if twin else self.lowering
            assert made is not None, f"a function left to the host was called ({self.backend})"
            self._function = made
        return self._function

    @property
    def lowering(self):
        """The function as executor/llvm lowers it, or None (`_lowered`), made once: when the
        plan's schedule is decided, which then says what builds it (schedules.py), or else at
        the build."""
        if self._made is None:
            self._made = (self._lowered(),)
        return self._made[0]

    def _lowered(self):
        """The function lowered to LLVM IR by executor/llvm (compiled at its first use), or
        None where it needs no compiling or the back end does not lower it (`backend` says
        why: the call's plan then keeps it on the host tier)."""
        generated = self.generated
        if not generated.compiled:
            return None
        from ..llvm.types import Array

        shapes = self._table.scopes[self.region.scope]
        params = [Array(d.name, len(shapes[n])) if shapes[n] else d.name
                  for n, d in zip(self.region.inputs, self.dtypes, strict=True)]
        try:
            made = llvm.lowered(generated.body, list(generated.args), params, self.dtype.name,
                                contiguous=True)  # (`convert` makes every array C-ordered)
        except llvm.Unsupported as why:
            self.backend = f"the llvm back end does not lower {why}"
            return None
        self.backend = f"llvm (optimisation level {made.level})"
        return made

    @function.setter
    def function(self, value) -> None:
        self._function = value

    def compile(self) -> None:
        """Compile the function now (loaded from the disk cache when it holds it), so that its
        first call runs compiled code at once."""
        function = self.function
        if self.generated.split:  # (its products' blocks run as own products: made now)
            load("hilbert.executor.numba.own_products").prepare(self.dtype)
        if self.generated.compiled:  # (plain NumPy calls: nothing to compile)
            function.compile()

    def __call__(self, args):
        """(value, loop steps run) for these input values (as `convert` makes them). Anything
        compiled code raises but a bad step count is a bug and propagates: a bad disk cache
        entry never reaches here (disk.HilbertCache replaces it while loading)."""
        try:
            if self.generated.split:  # (its threads share out its products: BLAS on one)
                own = load("hilbert.executor.numba.own_products")
                with blas_threads.single(), own.used(self.dtype):
                    return self.function(*args)
            return self.function(*args)
        except StepCountError as err:
            number, value = err.args
            step_count(self.generated.loops[number], value)  # raises the HilbertError
            raise AssertionError("a step count compiled code refused was accepted") from err
        except PositionError as err:
            number, value, size = err.args
            position(self.generated.reads[number], value, size)  # raises the HilbertError
            raise AssertionError("a position compiled code refused was accepted") from err
        except LabelError as err:
            number, value, classes = err.args
            one_hot(self.generated.reads[number], np.array([value]), classes)  # raises E511
            raise AssertionError("a label compiled code refused was accepted") from err
        except DrawError as err:
            number, key, step = err.args
            span = self.generated.reads[number].span
            draws.whole(key, "key", span), draws.whole(step, "step", span)  # raises E512
            raise AssertionError("a key compiled code refused was accepted") from err

    def run(self, args: list):
        """(value, loop steps run): the function called on `args`, stopped by Ctrl-C within
        one loop step when it has loops (executor/numba/interrupt.py)."""
        if self.generated.loops:
            return interrupt.call(self, args)
        return self(args)

    def convert(self, values) -> list:
        """Host values as this function's arguments: compiled code is compiled for one layout
        only, so any other array (another order or dtype, a strided or read-only view, a
        subclass) is copied into it here, at the boundary, instead of reaching compiled code."""
        args = list(values)
        dtypes = self.dtypes
        for i in self._counts:  # (counted in a complex call: float64, a real number's)
            if np.iscomplexobj(args[i]):
                if np.any(np.imag(args[i])):
                    raise OnHost
                args[i] = np.real(args[i])
        for i in self.scalars:
            args[i] = dtypes[i].type(args[i])
        for i in self.arrays:
            v, dtype = args[i], dtypes[i]
            if type(v) is not np.ndarray or v.dtype is not dtype:
                args[i] = np.array(v, dtype=dtype, order="C")
            else:
                flags = v.flags
                if not (flags.c_contiguous and flags.writeable):
                    args[i] = np.array(v, dtype=dtype, order="C")
        return args
