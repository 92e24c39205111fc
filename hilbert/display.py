"""HTML for notebooks: plans, functions, modules, models, contract_path's PathInfo and errors
as Jupyter shows them (`_repr_html_`), the .hb source highlighted with hilbert's own lexer.

Everything a user wrote (source, names, messages) is escaped; styles are inline, so the HTML
needs no style sheet. Plain `repr` and `str` are untouched.

>>> "<table" in plan_html(hilbert.compile_source(SOURCE).f.plan((4, 3), (3, 2)))  # doctest: +SKIP
True
"""

from __future__ import annotations

from html import escape

from pygments.styles import get_style_by_name

from hilbert.compiler.plan.text import human_bytes, human_count, shape_text
from hilbert.grammar.errors import CODES, WARNING_CODES, HilbertError
from hilbert.grammar.source import Span

from .lexer import HilbertLexer

#: Where an error's page is linked: its file in the repository's docs (docs/errors/README.md).
ERROR_DOCS = "docs/errors/{code}.md"
#: An error shows at most this many lines of its span.
MOST_LINES = 8
_STYLE = get_style_by_name("default")
_CELL = 'style="padding:0.1em 0.6em;text-align:left;vertical-align:top"'
_MARK = "background:#fde2e1;border-bottom:2px solid #c0392b"
_PRE = 'style="margin:0;padding:0.3em 0.5em;background:#f7f7f7;white-space:pre"'


# -- the source, highlighted ---------------------------------------------------------------

def _token_style(kind) -> str:
    """The inline CSS of the default Pygments style for a token kind (colour, weight)."""
    found = _STYLE.style_for_token(kind)
    parts = [f"color:#{found['color']}"] if found["color"] else []
    return ";".join(parts + ["font-weight:bold"] * bool(found["bold"])
                    + ["font-style:italic"] * bool(found["italic"]))


def highlighted(text: str, marked: tuple[int, int] | None = None) -> str:
    """`text` (.hb source) as HTML: each token coloured as hilbert's lexer reads it, and the
    characters from offset `marked[0]` up to `marked[1]`, if given, marked (an error's span).

    >>> highlighted("fn f(x) ↦ x")[:40]          # doctest: +SKIP
    '<span style="color:#008000;font-weight:b'
    """
    pieces: list[str] = []
    for start, kind, value in HilbertLexer().get_tokens_unprocessed(text):
        cuts = {0, len(value)} | {m - start for m in marked or () if 0 < m - start < len(value)}
        style = "" if value.isspace() else _token_style(kind)
        ends = sorted(cuts)
        for a, b in zip(ends, ends[1:], strict=False):
            piece = escape(value[a:b])
            if style:
                piece = f'<span style="{style}">{piece}</span>'
            if marked and marked[0] <= start + a < marked[1]:
                piece = f'<mark style="{_MARK}">{piece}</mark>'
            pieces.append(piece)
    return "".join(pieces)


def source_html(text: str, first_line: int = 1, marked: tuple[int, int] | None = None) -> str:
    """Highlighted .hb source with its line numbers (from `first_line`) beside it."""
    numbers = "\n".join(str(n) for n in range(first_line, first_line + text.count("\n") + 1))
    return (f'<table style="border-collapse:collapse;margin:0.3em 0"><tr>'
            f'<td style="padding:0"><pre {_PRE} title="line">'
            f'<span style="color:#999">{numbers}</span></pre></td>'
            f'<td style="padding:0"><pre {_PRE}>{highlighted(text, marked)}</pre></td>'
            f"</tr></table>")


def span_html(span: Span) -> str:
    """The lines of `span` highlighted, the span itself marked ('' where it has no text)."""
    source = span.source
    if not source.text:
        return ""
    last = min(max(span.end_line, span.line), span.line + MOST_LINES - 1)
    lines = [source.line(n) for n in range(span.line, last + 1)]
    start = span.column - 1
    if span.end_line == span.line:
        end = span.end_column - 1
    elif span.end_line <= last:
        end = sum(len(line) + 1 for line in lines[:-1]) + span.end_column - 1
    else:
        end = sum(len(line) + 1 for line in lines)
    return source_html("\n".join(lines), span.line, (start, max(end, start + 1)))


# -- tables ----------------------------------------------------------------------------------

def table(head: list[str], rows: list[list[str]]) -> str:
    """An HTML table of text cells (escaped here)."""
    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag} {_CELL}>{escape(c)}</{tag}>" for c in cells) + "</tr>"

    return (f'<table style="border-collapse:collapse;margin:0.2em 0">'
            f"<thead>{row(head, 'th')}</thead>"
            f"<tbody>{''.join(row(r, 'td') for r in rows)}</tbody></table>")


def _box(title: str, body: str, colour: str = "#4a6fa5") -> str:
    return (f'<div class="hilbert" style="font-family:monospace;line-height:1.35;'
            f'border-left:3px solid {colour};padding-left:0.6em">'
            f'<div style="font-weight:bold">{title}</div>{body}</div>')


def _lines(notes) -> str:
    return "".join(f'<div style="color:#555">{escape(n)}</div>' for n in notes)


# -- plans -----------------------------------------------------------------------------------

def _einsum_html(number: int, e, item_bytes: int) -> str:
    """One einsum of a plan: where it is, its path as a table with each step's FLOPs."""
    shapes = ", ".join(shape_text(s) for s in e.shapes)
    head = (f"<div>einsum {number} <code>{escape(repr(e.spec))}</code> on {escape(shapes)} "
            f"[{escape(e.scope)}] <span style=\"color:#777\">{escape(e.where)}</span></div>")
    rows = [[str(i), s.spec, human_count(s.flops), f"{human_count(s.intermediate)} el",
             s.blas or "-"] for i, s in enumerate(e.steps, 1)]
    foot = (f"<div>total {escape(human_count(e.flops))} FLOPs · largest intermediate "
            f"{escape(human_count(e.largest))} elements "
            f"({escape(human_bytes(e.largest * item_bytes))})</div>")
    note = f"<div>note: {escape(e.note)}</div>" if e.note else ""
    return head + table(["step", "contraction", "FLOPs", "result", "BLAS"], rows) + foot + note


def _loops_html(loops) -> str:
    if not loops:
        return ""
    rows = [[lp.name, str(lp.trips) if lp.trips is not None else
             ("from the arguments" if lp.counted else "until its condition"),
             human_count(lp.flops_per_step), ", ".join(shape_text(s) for s in lp.state)]
            for lp in loops]
    return "<div>loops</div>" + table(["loop", "trips", "FLOPs/step", "state"], rows)


def schedule_html(regions) -> str:
    """The fused nests and steps the generated code runs, a table per generated function."""
    parts = []
    for region in regions:
        how = "compiled" if region.compiled else "NumPy calls, nothing compiled"
        how += f", {region.lines} lines" if region.lines else ""
        rows = [[str(k), u.kind, shape_text(u.shape), u.scope, u.what, u.how,
                 ", ".join(m for m in (f"row loop {u.rows}" if u.rows else "",
                                       "threads" if u.parallel else "") if m)]
                for k, u in enumerate(region.units, 1)]
        parts.append(f"<div>generated code for {escape(region.what)} ({escape(how)})</div>"
                     + table(["unit", "kind", "shape", "scope", "computes", "how", "runs"], rows))
    return "".join(parts)


def plan_html(plan) -> str:
    """A Plan (`f.plan(…)`) as HTML: each einsum's path, the loops, the schedule, the totals."""
    args = ", ".join(f"{p}: {shape_text(s)}" for p, s in zip(plan.params, plan.signature,
                                                             strict=True))
    body = (f'<div style="color:#555">executor {escape(plan.executor)} · {escape(plan.dtype)} · '
            f"path optimiser {escape(str(plan.optimize))}</div>")
    body += "".join(_einsum_html(k, e, plan.item_bytes) for k, e in enumerate(plan.einsums, 1))
    body += _loops_html(plan.loops) + schedule_html(plan.schedule.regions)
    body += (f"<div>total FLOPs {escape(human_count(plan.flops))} · largest value "
             f"{escape(human_bytes(plan.largest_bytes))} · peak memory about "
             f"{escape(human_bytes(plan.peak_bytes))}</div>")
    return _box(f"plan of {escape(plan.function)}({escape(args)})", body + _lines(plan.all_notes))


def path_info_html(info) -> str:
    """contract_path's PathInfo: its plan, then the slicing (when sliced) and the costs."""
    costs = (f"<div>FLOPs {escape(human_count(info.flops))} · peak memory about "
             f"{escape(human_bytes(info.peak_bytes))}")
    if info.sliced is not None:
        costs += (f" · {info.slices} slices over {escape(', '.join(info.sliced_indices))} "
                  f"(FLOPs ×{info.flops_overhead:.3g})")
    return plan_html(info.plan) + costs + "</div>"


# -- functions, modules, models --------------------------------------------------------------

def function_html(function) -> str:
    """A Function: its definition highlighted, where it is, its executor and latest tier."""
    d = function.entry.definition
    span = d.span
    lines = [span.source.line(n) for n in range(span.line, max(span.end_line, span.line) + 1)]
    code = source_html("\n".join(lines), span.line) if span.source.text else ""
    about = (f"{escape(d.kind)} at {escape(str(span))} · executor {escape(function.executor)}"
             f" · tier {escape(str(function.tier or 'not called yet'))}")
    doc = f"<div>{escape(d.doc)}</div>" if d.doc else ""
    return _box(f"{escape(d.name)}({escape(', '.join(d.params))})",
                f'<div style="color:#555">{about}</div>{doc}{code}')


def module_html(module) -> str:
    """A Module: its functions (with their parameters) and models."""
    compiled = module._compiled
    rows = [[name, "fn", ", ".join(compiled.entries[name].params)]
            for name in compiled.exported if name in compiled.entries]
    rows += [[name, "model", ", ".join(compiled.models[name].params)]
             for name in compiled.models]
    return _box(f"module {escape(compiled.key)}", table(["name", "kind", "parameters"], rows))


def model_html(model) -> str:
    """A model (a Learner): its arguments, then each weight's name, shape and dtype, its tier."""
    from .weights import _show  # (as the model's repr writes its arguments)

    arguments = ", ".join(f"{p}={escape(_short(_show(v)))}" for p, v in model._arguments.items())
    rows = [[name, shape_text(value.shape), str(value.dtype)]
            for name, value in model._weights.items()]
    about = (f'<div style="color:#555">{model.parameters()} parameters · {escape(model.dtype)}'
             f" · tier {escape(str(model.tier or 'not called yet'))}</div>")
    return _box(f"{escape(model._model.name)}({arguments})",
                about + table(["weight", "shape", "dtype"], rows))


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "…"


# -- errors ----------------------------------------------------------------------------------

def error_html(error: HilbertError) -> str:
    """A HilbertError: its code (linked to its page), message, where, the span highlighted in
    its source, and its notes."""
    title = CODES.get(error.code) or WARNING_CODES.get(error.code, "")
    link = escape(ERROR_DOCS.format(code=error.code))
    head = (f'error[<a href="{link}" title="{escape(title)}">{escape(error.code)}</a>]: '
            f"{escape(error.message)}")
    where = f'<div style="color:#555">at {escape(str(error.span))}</div>'
    notes = "".join(f'<div style="color:#555">note: {escape(n)}</div>' for n in error.notes)
    more = f'<div>see <a href="{link}">{link}</a> ({escape(title)})</div>'
    return _box(head, where + span_html(error.span) + notes + more, colour="#c0392b")


# -- IPython's formatters ----------------------------------------------------------------------

def register(shell) -> None:
    """Show plans and HilbertErrors as HTML in `shell` (an IPython shell), and a plan as its
    text where only text is shown (its repr is the dataclass's). Needs no IPython import:
    the formatters are registered by the classes' module and name."""
    formatters = shell.display_formatter.formatters
    html, plain = formatters["text/html"], formatters["text/plain"]
    html.for_type_by_name("hilbert.compiler.plan", "Plan", plan_html)
    html.for_type_by_name("hilbert.grammar.errors", "HilbertError", error_html)
    plain.for_type_by_name("hilbert.compiler.plan", "Plan",
                           lambda plan, printer, cycle: printer.text(str(plan)))
