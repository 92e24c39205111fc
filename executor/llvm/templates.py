"""The one place an Fmt's template (loops.py: a small Python expression with `{}` fields) is
read: parsed once by Python's `ast` into a tree whose fields are names, cached by its text.
When templates give way to structured nodes (issue 48, item 1), this function goes."""

from __future__ import annotations

import ast
from functools import lru_cache

from .unsupported import Unsupported

#: The name the k-th field of a template is parsed as: FIELD + str(k) (no generated name
#: starts so: the generator's own are letters and a counter).
FIELD = "_hb_field_"


@lru_cache(maxsize=4096)  # (templates repeat across the nests of a program and programs)
def parsed(template: str) -> ast.expr:
    """`template` as an expression tree, its k-th `{}` the name FIELD + str(k); Unsupported
    when it is no expression of its own (an op table's fragment) or holds other braces."""
    parts = template.split("{}")
    text = "".join(part + (f"{FIELD}{k}" if k < len(parts) - 1 else "")
                   for k, part in enumerate(parts))
    if "{" in text or "}" in text:
        raise Unsupported(f"a template with braces of its own: {template!r}")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise Unsupported(f"a template that is no expression: {template!r}") from err


def field(node: ast.expr) -> int | None:
    """The field number `node` stands for, None when it is no field."""
    if isinstance(node, ast.Name) and node.id.startswith(FIELD):
        return int(node.id[len(FIELD):])
    return None


def dotted(node: ast.expr) -> str | None:
    """A called function's name as the code writes it (`np.float64`, `K.exp`, `int`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None
