"""The onnx executor: a call's planned IR written as an ONNX model (executor/onnx/tracing.py)
and run by an onnxruntime InferenceSession, one per signature, on the best execution provider
onnxruntime has here (a GPU's where there is one, else the CPU's) unless `provider=` names one
(docs/onnx.md). The plan names the provider.

An ONNX program has no host to raise on: what the other executors check from values (a
position x[t], oneHot's labels) is read as it is. A call onnxruntime refuses (a position
outside its axis) is run again on the host, which raises hilbert's own error (E510); where the
host raises none, E600 in onnxruntime's words. An op onnxruntime has no kernel for is E600
naming it."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import onnx  # noqa: F401 (the executor needs both packages of the onnx extra: imported here,
import onnxruntime  # a machine without them is told so when the executor is asked for)

from ...compiler.counting import counting_in
from ...compiler.driver import Entry, Specialised, plan_entry
from ...compiler.evaluate import Host
from ...compiler.plan import Plan
from ...grammar.errors import ArgumentError, HilbertError
from ...grammar.source import Span
from ..numerics import quietly
from .graph import ELEMENTS
from .tracing import input_dtypes, onnx_model

#: The options `Function.using(executor="onnx", …)` takes.
OPTIONS = ("provider",)
#: The execution providers chosen first, best first, among those onnxruntime has here.
PREFERRED = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "ROCMExecutionProvider",
             "DmlExecutionProvider", "CoreMLExecutionProvider", "CPUExecutionProvider")


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None, math: str = "exact",
            dtype: str = "float64", provider: str | None = None) -> OnnxProgram:
    """Specialise and plan `entry` for `shapes` and `dtype`, and write its ONNX model (E600
    where it needs what ONNX cannot carry yet); the program that runs it on `provider` (an
    onnxruntime execution provider; None: the best this machine has). `math` changes nothing:
    onnxruntime's functions are its own."""
    ready = plan_entry(entry, shapes, optimize, "onnx", values, dtype=dtype)
    chosen = resolve_provider(provider, entry.definition.span)
    model = onnx_model(ready, entry.name, tuple(entry.params), optimize)
    return OnnxProgram(ready, model, chosen, optimize)


def session_options():
    """The options of every session the executor opens (onnxruntime's defaults: all graph
    optimisations, its own thread pools); the benchmarks open torch's models with them too."""
    return onnxruntime.SessionOptions()


def check_options(options: dict, span: Span) -> None:
    """An ArgumentError unless `provider` names one onnxruntime has here (or is None)."""
    resolve_provider(options.get("provider"), span)


def resolve_provider(name, span: Span) -> str:
    """The execution provider `name` names, or the best onnxruntime has here (None), or E600."""
    have = onnxruntime.get_available_providers()
    if name is None:
        return next(p for p in PREFERRED + tuple(have) if p in have)
    if name not in have:
        raise ArgumentError("E600", f"provider={name!r:.60} is not an execution provider "
                            f"onnxruntime has here (it has {', '.join(have)})", span)
    return name


class OnnxProgram:
    """A callable for one signature: `model` (an onnx.ModelProto) run by one onnxruntime
    session on `provider`, made at the first call; `plan` says how (its notes name the
    provider), `loop_steps` is 0 (onnxruntime's Loop does not say how many steps it ran)."""

    def __init__(self, ready: Specialised, model, provider: str, optimize="auto"):
        self.ready, self.optimize = ready, optimize
        self.model = model
        self.provider = provider
        self.name = model.graph.name
        self.span = ready.body.span
        self.inputs = [i.name for i in model.graph.input]
        self.dtypes = input_dtypes(ready)
        self._plan = _noted(ready.plan, provider)
        self._session = None
        self._lock = threading.Lock()

    @property
    def plan(self) -> Plan:
        return self._plan

    def written(self, fixed: tuple):
        """The model with the first parameters' values `fixed` written in as initializers
        (a model's weights), the other parameters its inputs."""
        params = tuple(i.name for i in self.model.graph.input)
        return onnx_model(self.ready, self.name, params, self.optimize, fixed)

    @property
    def loop_steps(self) -> int:
        return 0

    def session(self):
        """The onnxruntime session running the model (made once; E600 naming the op where
        onnxruntime has no kernel for one)."""
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = self._opened()
        return self._session

    def _opened(self):
        try:
            return onnxruntime.InferenceSession(self.model.SerializeToString(),
                                                sess_options=session_options(),
                                                providers=[self.provider])
        except Exception as err:  # (onnxruntime's own exception types: a message, no op)
            raise ArgumentError("E600", f"onnxruntime cannot run {self.name}'s ONNX graph on "
                                f"{self.provider}: {_first_line(err)}", self.span) from None

    def __call__(self, values):
        arrays = self.arrays(values)
        session = self.session()
        try:
            binding, outputs = self.bound(session, arrays)
            session.run_with_iobinding(binding)
        except Exception as err:  # (onnxruntime's own exception types: a message)
            self._raise_as_the_host(arrays)
            raise ArgumentError("E600", f"onnxruntime could not run {self.name}: "
                                f"{_first_line(err)}", self.span) from None
        out = [made if made is not None else got
               for made, got in zip(outputs, _read_back(binding, outputs), strict=True)]
        return out[0] if len(out) == 1 else tuple(out)

    def arrays(self, values) -> tuple:
        """The arguments as the session reads them: each its input's dtype, C-contiguous (an
        array already so is itself, not a copy; np.require keeps a scalar's 0 axes, where
        np.ascontiguousarray would make it 1)."""
        return tuple(np.require(v, d, "C") for v, d in zip(values, self.dtypes, strict=True))

    def bound(self, session, arrays: tuple):
        """An onnxruntime IOBinding of one call: each input an OrtValue over its array's own
        buffer (no copy), each output of a shape known here written straight into an array
        made for it (those arrays, None where onnxruntime allocates the output)."""
        binding = session.io_binding()
        for name, array in zip(self.inputs, arrays, strict=True):
            binding.bind_ortvalue_input(name, onnxruntime.OrtValue.ortvalue_from_numpy(array))
        outputs = []
        for info in self.model.graph.output:
            shape = _static_shape(info)
            if shape is None:
                binding.bind_output(info.name, "cpu")
                outputs.append(None)
                continue
            made = np.empty(shape, _ELEMENT_DTYPES[info.type.tensor_type.elem_type])
            binding.bind_output(info.name, "cpu", 0, made.dtype, list(made.shape),
                                made.ctypes.data)
            outputs.append(made)
        return binding, outputs

    def _raise_as_the_host(self, values: tuple) -> None:
        """The error the host runtime raises on these arguments (E510 for a position out of
        range, …, in hilbert's words), where it raises one: a call onnxruntime refused is run
        again by the planned program's NumPy meanings to find it."""
        host = Host(dtype=self._plan.dtype, counting=counting_in(self.ready.body,
                                                                  self._plan.dtype))
        try:
            quietly(host.eval, self.ready.body, {}, values)
        except HilbertError:
            raise
        except Exception:  # (NumPy's own failure: onnxruntime's words say more)
            return


#: NumPy's dtype of each ONNX element type a graph's output may have.
_ELEMENT_DTYPES = {number: kind for kind, number in ELEMENTS.items()}


def _static_shape(info) -> tuple[int, ...] | None:
    """An output's shape where every size is a number (None where one is named: a dynamic
    axis)."""
    dims = info.type.tensor_type.shape.dim
    if any(not d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def _read_back(binding, outputs: list) -> list:
    """The outputs onnxruntime allocated, copied out (an empty list's worth where none)."""
    if all(made is not None for made in outputs):
        return [None] * len(outputs)
    return binding.copy_outputs_to_cpu()


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__


def _noted(plan: Plan, provider: str) -> Plan:
    """`plan` with this executor's notes: onnxruntime, its provider, what is not checked."""
    lines = [f"run by onnxruntime {onnxruntime.__version__} on {provider} (one session per "
             "signature, the ONNX graph of the planned program: docs/onnx.md)",
             "positions and labels not checked in the graph: a position onnxruntime refuses is "
             "raised as the host raises it (E510)"]
    return replace(plan, notes=plan.notes + tuple(f"onnx: {line}" for line in lines))
