"""Contraction trees as pictures (matplotlib): each einsum of a plan drawn as the tree its path
builds, every step a node with its result's indices and FLOPs, coloured by cost, as cotengra
draws its trees. `draw(plan)`, `contract_path(…)[1].draw()` and `%hilbert draw` give one.

>>> figure = draw(f.plan((4, 3), (3, 2)))          # doctest: +SKIP
>>> figure.savefig("tree.png")                      # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...grammar.errors import ArgumentError
from ...grammar.source import nowhere
from .text import human_count, shape_text

#: What drawing without matplotlib says.
DRAW_NEEDS = ("drawing a contraction tree needs matplotlib, which is not installed: pip install "
              "matplotlib (or pip install 'hilbert[plot]')")

#: Panels side by side, at most (a plan of many einsums takes several rows of them).
PANELS_ACROSS = 3


@dataclass(frozen=True)
class Node:
    """A node of a contraction tree: an operand (a leaf: its term and shape, no FLOPs) or a
    step (its result's term, its FLOPs, and the nodes it contracts)."""

    label: str
    flops: int = 0
    children: tuple[Node, ...] = ()


def tree(einsum, symbols: dict[str, str] | None = None) -> Node:
    """The tree an EinsumPlan's path builds: operands popped and their step's result pushed,
    as opt_einsum walks a path; operands still apart at the end join under the output.
    `symbols`: the plan's letters → the caller's (contract_path's), where they differ."""
    spec = einsum.spec if not symbols else "".join(symbols.get(c, c) for c in einsum.spec)
    inputs, output = spec.split("->")
    nodes = [Node(f"{term or 'scalar'}\n{shape_text(shape)}")
             for term, shape in zip(inputs.split(","), einsum.shapes, strict=True)]
    # (strict=False: a path the planner gives empty, for a lone operand, reads as no step)
    for positions, step in zip(einsum.path, einsum.steps, strict=False):
        taken = [nodes.pop(k) for k in sorted(positions, reverse=True)]
        result = step.spec.split("->")[1]
        result = "".join((symbols or {}).get(c, c) for c in result)
        nodes.append(Node(result or "scalar", step.flops,
                          tuple(reversed(taken))))
    return nodes[0] if len(nodes) == 1 else Node(output or "scalar", 0, tuple(nodes))


def layout(root: Node) -> dict[int, tuple[float, float]]:
    """Each node's place (by id): leaves along the bottom in the order a walk meets them, a
    step above its highest child and centred over its children (iterative: no recursion
    limit on deep trees)."""
    places: dict[int, tuple[float, float]] = {}
    leaves = 0
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if not node.children:
            places[id(node)] = (float(leaves), 0.0)
            leaves += 1
        elif done:
            xs, ys = zip(*(places[id(c)] for c in node.children), strict=True)
            places[id(node)] = (sum(xs) / len(xs), max(ys) + 1.0)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))
    return places


def png(figure) -> bytes:
    """The figure as PNG bytes (what `%hilbert draw` shows: a Figure made without pyplot has
    no image display of its own in a notebook)."""
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def draw(plan, figure=None):
    """A matplotlib Figure with the contraction tree of each einsum of `plan` (a Plan or
    contract_path's PathInfo), one panel each: leaves the operands (indices and shape), every
    other node a step (its result's indices and FLOPs; colour and size by FLOPs). Drawn into
    `figure` when given; no pyplot, so a caller's backend is left alone."""
    symbols = getattr(plan, "_symbols", None)  # (a PathInfo: its plan, in the caller's letters)
    plan = getattr(plan, "plan", plan)
    if not plan.einsums:
        raise ArgumentError("E600", f"the plan of {plan.function} has no einsum to draw",
                            nowhere("Plan.draw"))
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(DRAW_NEEDS) from None
    roots = [tree(e, symbols) for e in plan.einsums]
    widest = max(sum(1 for _ in _leaves(r)) for r in roots)
    columns = min(PANELS_ACROSS, len(roots))
    rows = -(-len(roots) // columns)
    figure = figure or Figure(figsize=(columns * max(3.5, 1.3 * widest), 3.2 * rows))
    panels = list(figure.subplots(rows, columns, squeeze=False).flat)
    for unused in panels[len(roots):]:
        unused.set_axis_off()
    for number, (axes, einsum, root) in enumerate(zip(panels, plan.einsums, roots,
                                                      strict=False), 1):
        _panel(axes, root)
        spec = "".join((symbols or {}).get(c, c) for c in einsum.spec)
        axes.set_title(f"einsum {number} \"{spec}\": {human_count(einsum.flops)} FLOPs",
                       fontsize=9)
    figure.tight_layout()
    return figure


def _leaves(root: Node):
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.children:
            yield node
        stack.extend(node.children)


def _panel(axes, root: Node) -> None:
    """One tree: edges, then nodes coloured and sized by log FLOPs, then their labels."""
    from matplotlib import colormaps

    places = layout(root)
    nodes = _all(root)
    most = max((n.flops for n in nodes), default=0)
    colours = colormaps["viridis"]
    for node in nodes:
        x, y = places[id(node)]
        for child in node.children:
            cx, cy = places[id(child)]
            axes.plot([x, cx], [y, cy], color="#999", linewidth=1, zorder=1)
    for node in nodes:
        x, y = places[id(node)]
        share = math.log1p(node.flops) / math.log1p(most) if most else 0.0
        colour = "#ddd" if not node.children else colours(share)
        axes.scatter([x], [y], s=120 + 380 * share, color=colour, zorder=2,
                     edgecolors="#555")
        text = node.label if not node.children else \
            f"{node.label}\n{human_count(node.flops)} FLOPs"
        axes.annotate(text, (x, y), textcoords="offset points", xytext=(0, -16 if
                      not node.children else 12), ha="center", va="top" if not node.children
                      else "bottom", fontsize=8, fontfamily="monospace")
    axes.set_axis_off()
    axes.margins(0.15, 0.3)


def _all(root: Node) -> list[Node]:
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found
