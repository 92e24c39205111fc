"""The members of a model class: a Function per train block and method, made at its first use,
and the Python methods that bind a call's arguments and run it on the model's weights."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from hilbert.compiler.driver import CompiledModule
from hilbert.compiler.models import STEPS, CompiledModel, Member
from hilbert.compiler.results import scalar
from hilbert.grammar.errors import (
    ArgumentError,
    HilbertError,
    RuntimeHilbertError,
    internal_error,
)
from hilbert.grammar.signature import print_signature
from hilbert.grammar.source import nowhere

from .api import Function, maths_options
from .history import History, every_count, whole
from .progress import run_in_chunks
from .weights import _private

if TYPE_CHECKING:
    from .models import Learner


class _Functions(dict):
    """A model class's Function per member, made when the member is first used (its entry is
    inlined and optimised then: compiler/models.py, Member)."""

    def __init__(self, members: dict[str, Member], module: CompiledModule, executor: str,
                 optimize: str, math: str = "exact"):
        super().__init__()
        self._members = members
        self._made = (module, executor, optimize)
        self._options = maths_options(math)
        self._lock = threading.Lock()

    def __missing__(self, name: str) -> Function:
        member = self._members[name]  # (a KeyError for a name that is no member)
        try:
            entry = member.entry
        except (HilbertError, MemoryError):
            raise
        except Exception as err:  # a bug of hilbert's: E900, never a bare traceback
            raise internal_error(err, member.span, f"compiling {member.name}") from err
        with self._lock:
            return self.setdefault(name, Function(entry, *self._made, options=self._options))


def _class_doc(model: CompiledModel) -> str:
    head = f"model {model.name}({', '.join(model.params)}) : Learner  [at {model.span}]"
    return f"{head}\n\n{model.doc}" if model.doc else head


def _method(model: CompiledModel, member: Member):
    def method(self: Learner, *args, **kwargs):
        own = self._bind(member, args, kwargs)
        with self._lock:  # a snapshot: every weight as one train call left it
            state = self._state()
        return _answer(self._execute(member, state + own), self.dtype)

    return _Described(_dressed(method, model, member, []), member)


def _train_method(model: CompiledModel, member: Member):
    def train(self: Learner, *args, steps=1, **kwargs) -> None:
        _train(self, member, args, kwargs, steps)

    steps = inspect.Parameter(STEPS, inspect.Parameter.KEYWORD_ONLY, default=1)
    return _Described(_dressed(train, model, member, [steps]), member)


def _train(net: Learner, member: Member, args: tuple, kwargs: dict, steps,
           watched: Callable[[int], None] | None = None, every: int = 1) -> None:
    """Run train block `member` `steps` times on `net`'s weights, as one compiled loop (a few
    in a row while a progress bar shows); `watched`: called with the steps run so far before
    the first step and after every `every` steps, the weights then as the steps left them."""
    model = net._model
    own = net._bind(member, args, kwargs)
    count = _step_count(model, member, steps)
    with net._lock:  # read, step and write as one: calls from two threads both count
        state, weights = net._state(), len(model.weights)

        def run(chunk: int) -> None:  # `chunk` steps from `state`; its weights move on
            nonlocal state
            count = np.array(chunk, dtype=np.float64)  # (counted exactly in every dtype)
            final = net._execute(member, state + own + (count,))
            state = tuple(_private(w, net.dtype) for w in final[1:1 + weights]) + \
                state[weights:]

        def keep() -> None:  # the weights as the steps so far left them
            new = {w.name: state[position]
                   for position, w in enumerate(model.weights) if w.name in member.assigned}
            net._weights = net._weights | new  # replaced whole, never changed in place

        if watched is None:
            run_in_chunks(count, run, f"{model.name}.{member.name}")  # progress between chunks
            keep()
            return
        watched(0)
        for done in range(0, count, every):
            run(min(every, count - done))
            keep()
            watched(min(done + every, count))


class Watched:
    """`net.train.watched(watch, every=…)`: the train block, which, called as it is (its
    arguments, `steps=`), also calls `watch()` before the first step and after every `every`
    steps (by default about a hundredth of the run), and returns a History of what it gave:

        net.train.watched(lambda: net.loss(x, y))(x, y, 0.5, steps=500).plot()
    """

    def __init__(self, bound: BoundMember, watch: Callable[[], object], every):
        if not callable(watch):
            raise ArgumentError("E600", f"{bound.__func__.__qualname__}.watched takes a "
                                f"function of no arguments (lambda: net.loss(x, y)), not "
                                f"{type(watch).__name__}", nowhere("hilbert.watched"))
        self._bound, self._watch, self._every = bound, watch, every

    def __call__(self, *args, steps=1, **kwargs) -> History:
        net, member = self._bound.__self__, self._bound._member
        label = self._bound.__func__.__qualname__
        history = History(label)
        every = every_count(self._every, _step_count(net._model, member, steps), label)
        _train(net, member, args, kwargs, steps,
               lambda done: history.add(done, self._watch()), every)
        return history


class _Described:
    """A member on its class: the plain function there (`Model.train`, with its signature and
    doc), a BoundMember on an instance (`net.train`)."""

    def __init__(self, function, member: Member):
        self.function, self.member = function, member
        self.__doc__ = function.__doc__

    def __get__(self, net, owner=None):
        return self.function if net is None else BoundMember(net, self.function, self.member)


class BoundMember:
    """`net.train`, `net.loss`: called, it is the member run on `net`'s weights; its `plan`
    and `build` say what a call with these arguments runs (the plan of a train block is
    that of its loop of `steps` steps, by default one). Like a bound method it has
    `__self__` and `__func__`, compares equal for one model and member, and pickles as
    `getattr(net, name)`."""

    __slots__ = ("__self__", "__func__", "_member")

    def __init__(self, net: Learner, function, member: Member):
        self.__self__, self.__func__, self._member = net, function, member

    def __call__(self, *args, **kwargs):
        return self.__func__(self.__self__, *args, **kwargs)

    def plan(self, /, *args, **kwargs):
        """The Plan of a call with these arguments (values, as the member takes them, and a
        train block's `steps=`), on the model's weights as they are now: its paths, its
        schedule and the size of its generated code (hilbert.Function.plan)."""
        return self._function().plan(*self._values(args, kwargs))

    def build(self, /, *args, **kwargs):
        """Compile the program a call with these arguments runs, now, and return its Plan
        (hilbert.Function.build): the next call runs compiled code at once."""
        return self._function().build(*self._values(args, kwargs))

    def onnx(self, /, *args, dtype: str = "float64", dynamic: dict | None = None, **kwargs):
        """The ONNX model (docs/onnx.md) of a call with these arguments (values, as the
        member takes them): the model's weights and parameters, as they are now, are its
        initializers; its inputs are the member's own parameters (and a train block's step
        count), shaped as these arguments are, `dynamic`'s axes ({parameter: {axis: name}})
        written as named sizes where the graph allows."""
        from .export import onnx

        values = self._values(args, kwargs)
        with self.__self__._lock:
            fixed = len(self.__self__._state())
        return onnx(self._function(), *[np.shape(v) for v in values], dtype=dtype,
                    fixed=values[:fixed], dynamic=dynamic)

    def _function(self) -> Function:
        return self.__self__._functions[self._member.name]

    def watched(self, watch: Callable[[], object], every: int | None = None) -> Watched:
        """This train block, recording `watch()` (a function of no arguments: `lambda:
        net.loss(x, y)`) before its first step and after every `every` steps: called with the
        block's arguments and `steps=`, it returns the History, which `.plot()` draws."""
        if self._member.kind != "train":
            raise ArgumentError("E600", f"{self.__func__.__qualname__} is a method, not a train "
                                "block: only a train block's steps can be watched",
                                nowhere("hilbert.watched"))
        return Watched(self, watch, every)

    def _values(self, args: tuple, kwargs: dict) -> tuple:
        """The entry's arguments: the weights and model parameters, the member's own, and a
        train block's step count (`steps=` in kwargs, by default 1)."""
        net, member = self.__self__, self._member
        steps = kwargs.pop(STEPS, 1) if member.kind == "train" else None
        own = net._bind(member, args, kwargs)
        with net._lock:
            state = net._state()
        if steps is None:
            return state + own
        count = _step_count(net._model, member, steps)
        return state + own + (np.array(count, dtype=np.float64),)  # (counted: as train's)

    @property
    def __doc__(self):  # type: ignore[override]
        return self.__func__.__doc__

    @property
    def __name__(self) -> str:
        return self.__func__.__name__

    @property
    def __signature__(self) -> inspect.Signature:
        signature = inspect.signature(self.__func__)
        return signature.replace(parameters=list(signature.parameters.values())[1:])

    def __eq__(self, other) -> bool:
        return (isinstance(other, BoundMember) and other.__self__ is self.__self__
                and other.__func__ is self.__func__)

    def __hash__(self) -> int:
        return hash((id(self.__self__), self.__func__))

    def __reduce__(self):
        return getattr, (self.__self__, self.__func__.__name__)

    def __repr__(self) -> str:
        return f"<bound {self._member.kind} {self.__func__.__qualname__} of {self.__self__!r}>"


def _dressed(function, model: CompiledModel, member: Member, extra: list[inspect.Parameter]):
    """`function` with the member's name, signature and `--` doc comment."""
    function.__name__ = member.name
    function.__qualname__ = f"{model.name}.{member.name}"
    kind = "train block" if member.kind == "train" else "method"
    shown = print_signature(member.params, member.axes, bare=False)  # (x : B×T×M) : B×T×L
    head = f"{model.name}.{member.name}{shown}  [{kind} at {member.span}]"
    if member.kind == "train":
        head += (f"\n\nUpdates {', '.join(member.assigned) or 'no weights'}; "
                 f"{STEPS}=N runs N steps as one compiled loop.")
    function.__doc__ = f"{head}\n\n{member.doc}" if member.doc else head
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    function.__signature__ = inspect.Signature(
        [inspect.Parameter("self", positional)]
        + [inspect.Parameter(p, positional) for p in member.params] + extra)
    return function


def _answer(result, dtype: str = "float64"):
    """A method's result as the API gives it: a number for a scalar (as a call's:
    compiler/results.py), else a fresh array; a tuple of those for a tuple."""
    if isinstance(result, tuple):
        return tuple(_answer(r, dtype) for r in result)
    array = np.array(result)
    return scalar(array, dtype) if array.ndim == 0 else array


def _step_count(model: CompiledModel, member: Member, steps) -> int:
    """`steps` as a whole number ≥ 0, or E500 naming the train block and the value."""
    count = whole(steps, 0)
    if count is not None:
        return count
    raise RuntimeHilbertError(
        "E500", f"{model.name}.{member.name}'s {STEPS} must be a whole number, at least 0, but "
        f"it was given {steps!r}", member.span)
