"""hilbert in IPython and Jupyter (`%load_ext hilbert`): `%%hilbert` cells of .hb source, the
`%hilbert plan` line, HilbertErrors shown as their .hb excerpt without a Python traceback, and
plans and errors rendered as HTML (docs/notebooks.md).

>>> %load_ext hilbert                         # doctest: +SKIP
>>> %%hilbert                                 # doctest: +SKIP
... fn twice(x) ↦ 2 · x
"""

from __future__ import annotations

import shlex
from pathlib import Path

try:
    from IPython.core.magic import Magics, line_cell_magic, magics_class
    from IPython.display import display
except ImportError as missing:  # (only the extension needs IPython: hilbert itself does not)
    raise ImportError("hilbert's notebook support needs IPython: pip install "
                      "'hilbert[notebook]'") from missing

from hilbert.grammar.errors import ArgumentError, HilbertError
from hilbert.grammar.source import Source, Span

from .api import Function
from .display import error_html, register
from .module import compile_source

#: The options of a `%%hilbert` line, each taking one value (`--path` may be given again).
CELL_OPTIONS = ("--as", "--executor", "--dtype", "--math", "--optimize", "--path")
#: What the `%hilbert` line magic can do.
LINE_COMMANDS = ("plan", "draw")


def load_ipython_extension(shell) -> None:
    """`%load_ext hilbert`: the magics, HilbertErrors without Python tracebacks, rich plans."""
    shell.register_magics(HilbertMagics)
    shell.set_custom_exc((HilbertError,), show_error)
    register(shell)


def unload_ipython_extension(shell) -> None:
    """`%unload_ext hilbert`: errors are shown as IPython shows any exception again."""
    if HilbertError in getattr(shell, "custom_exceptions", ()):
        shell.set_custom_exc((), None)


def show_error(shell, etype, value: HilbertError, tb, tb_offset=None) -> list[str]:
    """IPython's handler for HilbertErrors: the error as HTML (its code linked to its page,
    the .hb span highlighted) where the front end shows HTML, and as hilbert's own text
    otherwise; the Python traceback from inside hilbert is left out."""
    if "text/html" in shell.display_formatter.active_types:
        display({"text/html": error_html(value), "text/plain": value.render()}, raw=True)
        stb = [f"{etype.__name__}: error[{value.code}] at {value.span}: {value.message}"]
    else:
        stb = [f"{etype.__name__}: {value.render()}"]
    shell._showtraceback(etype, value, stb)  # (what marks the cell failed, in a kernel too)
    return stb


# -- the magic line's words --------------------------------------------------------------------

class _Words:
    """The words of a magic's line, each with its column in the line as written (`label`, the
    magic, then a space and the words), so an error can point at one."""

    def __init__(self, line: str, label: str):
        text = f"{label} {line}"
        self.source = Source(label, text)
        try:
            words = shlex.split(line)
        except ValueError as err:
            raise ArgumentError("E600", f"cannot read the line: {err}",
                                Span(self.source, 1, 1, 1, len(text) + 1)) from None
        self.words: list[tuple[str, int]] = []
        at = len(label) + 1
        for word in words:
            found = text.find(word, at)
            if found < 0:  # (a quoted word reads otherwise than it is written)
                found = at + 1 if at < len(text) else len(label) + 1
            column, at = found + 1, found + len(word)
            self.words.append((word, column))

    def span(self, index: int) -> Span:
        """The span of word `index` (the line's end, past the last word)."""
        if index >= len(self.words):
            end = len(self.source.text) + 1
            return Span(self.source, 1, end, 1, end + 1)
        word, column = self.words[index]
        return Span(self.source, 1, column, 1, column + len(word))

    def error(self, index: int, message: str) -> ArgumentError:
        return ArgumentError("E600", message, self.span(index))


def cell_options(line: str) -> dict[str, list[str]]:
    """The options of a `%%hilbert` line by name (without `--`), each a list of its values."""
    words = _Words(line, "%%hilbert")
    options: dict[str, list[str]] = {}
    k = 0
    while k < len(words.words):
        word = words.words[k][0]
        if word not in CELL_OPTIONS:
            raise words.error(k, f"%%hilbert has no option {word!r} (its options: "
                              f"{', '.join(CELL_OPTIONS)})")
        if k + 1 == len(words.words):
            raise words.error(k + 1, f"{word} needs a value")
        options.setdefault(word[2:], []).append(words.words[k + 1][0])
        k += 2
    for name, values in options.items():
        if name != "path" and len(values) > 1:
            raise words.error(0, f"--{name} is given {len(values)} times")
    target = options.get("as", [None])[0]
    if target is not None and not target.isidentifier():
        raise words.error([w for w, _ in words.words].index("--as") + 1,
                          f"--as needs a Python name, not {target!r}")
    return options


def _shape(text: str) -> tuple[int, ...] | None:
    """`4x3`, `4×3` or `7` as a shape; `()` or `scalar` as a scalar's; None if not a shape."""
    if text in ("()", "scalar"):
        return ()
    parts = text.replace("×", "x").split("x")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


# -- the magics -------------------------------------------------------------------------------

@magics_class
class HilbertMagics(Magics):
    """`%%hilbert` (a cell of .hb source), `%hilbert plan` (a function's plan) and `%hilbert
    draw` (its contraction trees)."""

    @line_cell_magic
    def hilbert(self, line: str, cell: str | None = None):
        """`%%hilbert [--as NAME] [--executor E] [--dtype D] [--math M] [--optimize O]
        [--path DIR]`: compile the cell's .hb source (its `open`s found in the working folder,
        the --path folders and the Prelude) and bind its functions and models in the
        notebook, or the module as NAME. `%hilbert plan f x=4x3 w=3x2`: f's plan for those
        shapes (positional shapes work too; `--dtype float32` plans in float32); `%hilbert
        draw f …`: the contraction trees of that plan, as a matplotlib figure."""
        if cell is None:
            return self.line(line)
        return self.cell(line, cell)

    def cell(self, line: str, cell: str):
        """Compile a `%%hilbert` cell and bind what it defines."""
        options = cell_options(line)
        name = f"<cell {self._number()}>"
        # a blank first line stands for the %%hilbert line: errors give the cell's own lines
        module = compile_source(
            "\n" + cell, name, search_path=[Path.cwd(), *map(Path, options.get("path", []))],
            executor=options.get("executor", ["numba"])[0],
            optimize=options.get("optimize", ["auto"])[0], math=options.get("math", [None])[0],
            dtype=options.get("dtype", [None])[0])
        module.check()  # every definition's errors now, pointing into this cell
        target = options.get("as", [None])[0]
        if target is not None:
            self.shell.user_ns[target] = module
        else:
            self.shell.user_ns.update({n: getattr(module, n) for n in module.names})

    def _number(self) -> int:
        """The running cell's number (its In[N]): its execution result's, which IPython sets
        before running it (the shell's count is already the next cell's in IPython 9)."""
        running = getattr(self.shell.displayhook, "exec_result", None)
        number = getattr(running, "execution_count", None)
        return number if isinstance(number, int) else self.shell.execution_count

    def line(self, line: str):
        """`%hilbert plan …`: the plan of a function of the notebook for the shapes given;
        `%hilbert draw …`: its contraction trees, drawn (compiler/plan/drawing.py)."""
        words = _Words(line, "%hilbert")
        given = [w for w, _ in words.words]
        if not given or given[0] not in LINE_COMMANDS:
            raise words.error(0, f"%hilbert needs a command ({', '.join(LINE_COMMANDS)}); for "
                              f".hb source use a %%hilbert cell")
        if len(given) < 2:
            raise words.error(1, f"%hilbert {given[0]} needs a function: %hilbert {given[0]} "
                              "f x=4x3 w=3x2")
        function = self._function(words, 1)
        shapes, named, dtype = [], {}, None
        k = 2
        while k < len(given):
            word = given[k]
            if word == "--dtype":
                if k + 1 == len(given):
                    raise words.error(k + 1, "--dtype needs a value (float32, float64, …)")
                dtype, k = given[k + 1], k + 2
                continue
            key, _, value = word.rpartition("=")
            shape = _shape(value)
            if shape is None:
                raise words.error(k, f"{value!r} is not a shape (write 4x3, 4×3, 7 or scalar)")
            if key:
                named[key] = shape
            else:
                shapes.append(shape)
            k += 1
        if dtype is not None:
            function = function.using(dtype=dtype)
        plan = function.plan(*shapes, **named)
        if given[0] == "draw":
            from IPython.display import Image

            from hilbert.compiler.plan.drawing import draw, png

            return Image(png(draw(plan)), format="png")
        return plan

    def _function(self, words: _Words, index: int) -> Function:
        """The hilbert function word `index` names in the notebook (`f`, `layers.f`)."""
        text = words.words[index][0]
        first, *rest = text.split(".")
        value = self.shell.user_ns.get(first)
        for part in rest:
            value = getattr(value, part, None)
        if not isinstance(value, Function):
            raise words.error(index, f"{text} is not a hilbert function of the notebook "
                              "(define it in a %%hilbert cell first)")
        return value
