"""The HilbertError hierarchy and the table of error codes every user-caused error uses."""

from __future__ import annotations

from .source import Span

#: Every error code: its stage class name and a one-line title. docs/errors/ has a page each.
CODES: dict[str, str] = {
    "E100": "syntax error",
    "E101": "expression nested too deeply",
    "E102": "number too large",
    "E103": "digit other than 0–9",
    "E104": "construct that .hb does not have",
    "E120": "law that does not hold",
    "E121": "law that cannot be checked",
    "E200": "unknown name",
    "E201": "wrong number of arguments",
    "E202": "ambiguous name",
    "E203": "module not found",
    "E204": "module path outside the search path",
    "E205": "duplicate definition or parameter",
    "E206": "not callable",
    "E207": "primitive used outside a model's weights",
    "E208": "module cannot be read",
    "E209": "modules that open each other",
    "E300": "malformed einsum specification",
    "E301": "bad einsum ellipsis",
    "E302": "einsum without an explicit output",
    "E303": "einsum operand count differs from the specification",
    "E304": "einsum output letter not in any input",
    "E305": "einsum letter sizes differ",
    "E306": "einsum operand rank differs from its term",
    "E307": "einsum specification must be a string literal",
    "E310": "entrywise shapes differ",
    "E311": "primitive applied to the wrong rank",
    "E312": "condition is not a scalar",
    "E313": "branches have different shapes",
    "E314": "axis must be a whole-number literal in range",
    "E315": "loop state changes shape",
    "E316": "string used as a value",
    "E317": "reduction over an empty axis",
    "E318": "position outside a tensor",
    "E319": "size not known from shapes",
    "E320": "gradient of a value that is not a scalar",
    "E321": "tuple where one tensor is needed",
    "E322": "derivative with respect to something that is not a parameter",
    "E323": "derivative of a derivative",
    "E324": "concat of tensors that do not fit together",
    "E325": "complex value where a real number is needed",
    "E326": "Jacobian-vector product through an op with no forward rule",
    "E330": "two different named axes joined",
    "E331": "argument that does not fit its declared axes",
    "E332": "contraction by name that its operands' axes cannot resolve",
    "E400": "self-call not in tail position",
    "E401": "mutual recursion",
    "E402": "loop that never ends",
    "E500": "bad step count",
    "E510": "position out of range while running",
    "E511": "label out of range while running",
    "E512": "bad random key while running",
    "E600": "bad arguments in a call from Python",
    "E601": "bad argument value from Python",
    "E700": "plan exceeds the memory limit",
    "E701": "definition too large once inlined",
    "E800": "bad model declaration",
    "E801": "bad model use",
    "E802": "model weights exceed the memory limit",
    "E803": "bad use of a weight group",
    "E804": "bad Frame model declaration",
    "E805": "bad Frame file",
    "E900": "internal error",
}


#: Every warning code and a one-line title: things hilbert tolerates (and works around) but a
#: user should know. docs/errors/ has a page each, like the errors.
WARNING_CODES: dict[str, str] = {
    "W100": "names that look alike",
    "W900": "cache directory not private",
    "W901": "cache directory cannot be used",
    "W902": "bad cache entry replaced",
    "W903": "compiled code could not be built",
}


class HilbertWarning(RuntimeWarning):
    """A coded warning: `.code`, `.message` and, where the warning is about .hb text, `.span`."""

    def __init__(self, code: str, message: str | None = None, span: Span | None = None):
        if message is None:
            # rebuilt from its own text, as warnings.warn_explicit(text, HilbertWarning) does
            # (Numba re-issues that way the warnings raised while it compiles)
            code, message = code.partition("warning[")[2].split("]: ", 1)
        assert code in WARNING_CODES, code
        self.code = code
        self.message = message
        self.span = span
        where = f"{span}: " if span is not None and span.source.text else ""
        super().__init__(f"{where}warning[{code}]: {message}")


def warn(code: str, message: str, span: Span | None = None, stacklevel: int = 3) -> None:
    """Issue the HilbertWarning `code` (Python's warnings machinery filters and shows it)."""
    import warnings

    warnings.warn(HilbertWarning(code, message, span), stacklevel=stacklevel)


class HilbertError(Exception):
    """An error the user caused: a stable `code`, a plain-words `message`, and a `span`.

    `str(err)` renders `file:line:col: error[CODE]: message`, the source line with a caret,
    and any notes (for example the chain of definitions an error was raised inside).
    """

    def __init__(self, code: str, message: str, span: Span, notes: tuple[str, ...] = ()):
        assert code in CODES, code
        self.code = code
        self.message = message
        self.span = span
        self.notes = tuple(notes)
        super().__init__(self.render())

    def with_note(self, note: str) -> HilbertError:
        """The same error with one more note (used as errors climb out of inlined calls)."""
        return type(self)(self.code, self.message, self.span, self.notes + (note,))

    def render(self) -> str:
        head = f"{self.span}: error[{self.code}]: {self.message}"
        body = self.span.caret() if self.span.source.text else ""
        tail = "".join(f"\n  note: {n}" for n in self.notes)
        return head + ("\n" + body if body else "") + tail

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.span, self.notes))


class ParseError(HilbertError):
    """The text is not .hb: unexpected character or token."""


class NameResolutionError(HilbertError):
    """Unknown, ambiguous or duplicate names; modules that cannot be opened; arity."""


class MissingNameError(NameResolutionError, AttributeError):
    """A name asked of a module from Python that it does not have (E200). Also an
    AttributeError, so `hasattr` and `getattr(module, name, default)` work as for any object."""


class CheckError(HilbertError):
    """Einsum specifications, shapes, ranks, conditions and recursion that break the rules."""


class RuntimeHilbertError(HilbertError):
    """Errors only visible when a program runs: bad step counts, memory limits."""


class ArgumentError(HilbertError):
    """Values handed in from Python that the called function cannot take."""


class EinsumValueError(CheckError, ValueError):
    """An einsum's subscripts or shapes that break the rules (E3xx), met through the einsum API
    (hilbert.einsum, contract_path, contract_expression): also a ValueError, the exception
    NumPy and opt_einsum raise for the same mistakes, so code written for them catches it."""


class EinsumTypeError(CheckError, TypeError):
    """Subscripts of the wrong kind (not text, nor the interleaved form's lists) given to the
    einsum API (E300): also a TypeError, as NumPy and opt_einsum raise."""


class ArgumentValueError(ArgumentError, ValueError):
    """A bad value given to the einsum API from Python (E600/E601): also a ValueError, as NumPy
    and opt_einsum raise for the same mistakes."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong kind given to the einsum API (E600/E601: `out` that is not an
    array, a `dtype` that is no dtype, a cast `casting` forbids): also a TypeError, as NumPy
    raises."""


class PathError(ArgumentValueError, RuntimeError):
    """An explicit contraction path that does not fit its contraction (E600): a ValueError, as
    opt_einsum raises, and a RuntimeError, as numpy.einsum raises for the same path."""


def as_numpys(err: HilbertError) -> HilbertError:
    """`err`, met by the einsum API, as the class that is also the built-in exception NumPy
    raises for the same mistake: an E3xx CheckError as an EinsumValueError, an E600/E601
    ArgumentError as an ArgumentValueError; one that is such already, or of another kind
    (E700, E900), as it is. Code, message, span and notes are kept."""
    if isinstance(err, (ValueError, TypeError)):
        return err
    if isinstance(err, CheckError):
        return EinsumValueError(err.code, err.message, err.span, err.notes)
    if isinstance(err, ArgumentError):
        return ArgumentValueError(err.code, err.message, err.span, err.notes)
    return err


class ModelError(HilbertError):
    """Model declarations and their use."""


class InternalError(HilbertError):
    """A bug in hilbert, not in the .hb source (E900): an unexpected exception inside the
    compiler, the code generator or generated code, wrapped so that it names the definition
    being built or run, the hilbert version, and asks to be reported. The original exception
    is its `__cause__`."""


def internal_error(err: BaseException, span: Span, doing: str) -> InternalError | KeyboardInterrupt:
    """`err`, raised while `doing` (e.g. "compiling f"), as an InternalError at `span`; a
    Ctrl-C that reached it from inside a library (Numba loading compiled code from the disk
    cache turns one into a SystemError) stays a KeyboardInterrupt."""
    cause: BaseException | None = err
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return KeyboardInterrupt()
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return InternalError("E900", f"internal error while {doing}: {type(err).__name__}: "
                         f"{first_line(err)} (hilbert {version()}; this is a bug in hilbert, "
                         "not in your program: please report it with the .hb source and the "
                         "call)", span)


def first_line(err: BaseException) -> str:
    """The first line of `err`'s message (at most 300 characters), or "(no message)"."""
    lines = str(err).strip().splitlines()
    return lines[0][:300] if lines else "(no message)"


def version() -> str:
    """hilbert's version, as installed."""
    from importlib import metadata

    try:
        return metadata.version("hilbert")
    except metadata.PackageNotFoundError:
        return "unknown"
