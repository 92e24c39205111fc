"""Contraction trees drawn (compiler/plan/drawing.py): the tree a path builds, each step's FLOPs as
opt_einsum counts them on the picture, in the caller's letters; the layout; `%hilbert draw`."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import opt_einsum
import pytest
from conftest import needs
from hilbert.compiler.plan.drawing import Node, draw, layout, tree
from hilbert.compiler.plan.paths import ContractStep

import hilbert


def steps_by_opt_einsum(spec: str, shapes) -> list[tuple[str, int]]:
    """Each step of opt_einsum's own optimal path: its result's indices and its FLOPs."""
    _, info = opt_einsum.contract_path(spec, *[np.empty(s) for s in shapes], optimize="optimal")
    found = []
    for step in info.contraction_list:
        inputs, output = step[2].split("->")
        indices = set(inputs.replace(",", ""))
        found.append((output, opt_einsum.helpers.flop_count(
            indices, bool(indices - set(output)), 2, info.size_dict)))
    return found


def test_the_tree_of_a_chain_holds_each_step_and_its_flops():
    spec, shapes = "ij,jk,kl->il", ((2, 3), (3, 4), (4, 5))
    _, info = hilbert.contract_path(spec, *shapes, shapes=True, optimize="optimal")
    root = tree(info.plan.einsums[0], info._symbols)
    steps = [(n.label, n.flops) for n in _walk(root) if n.children]
    expected = steps_by_opt_einsum(spec, shapes)
    assert sorted(("".join(sorted(label)), flops) for label, flops in steps) == sorted(
        ("".join(sorted(label)), flops) for label, flops in expected)
    leaves = sorted(n.label for n in _walk(root) if not n.children)
    assert leaves == ["ij\n2×3", "jk\n3×4", "kl\n4×5"]
    assert set(root.label) == set("il")


def test_the_picture_labels_every_step_with_its_flops():
    needs("matplotlib")
    spec, shapes = "ij,jk,kl->il", ((2, 3), (3, 4), (4, 5))
    _, info = hilbert.contract_path(spec, *shapes, shapes=True, optimize="optimal")
    figure = info.draw()
    texts = [t.get_text() for t in figure.axes[0].texts]
    for _, flops in steps_by_opt_einsum(spec, shapes):
        assert sum(t.endswith(f"\n{flops} FLOPs") for t in texts) >= 1, (flops, texts)
    assert sorted(t for t in texts if "FLOPs" not in t) == ["ij\n2×3", "jk\n3×4", "kl\n4×5"]
    assert '"ij,jk,kl->il"' in figure.axes[0].get_title()


def test_a_plan_of_several_einsums_has_a_panel_each():
    needs("matplotlib")
    module = hilbert.compile_source('fn f(x, w) ↦ einsum("ij->i", einsum("np,pq->nq", x, w))')
    plan = module.f.plan((4, 3), (3, 2))
    figure = draw(plan)
    titled = [a.get_title() for a in figure.axes if a.get_title()]
    assert len(titled) == len(plan.einsums) >= 1
    drawn = plan.draw()  # (the plan's own method: the same picture)
    assert [a.get_title() for a in drawn.axes if a.get_title()] == titled
    assert [t.get_text() for t in drawn.axes[0].texts] == \
        [t.get_text() for t in figure.axes[0].texts]


def test_layout_puts_each_step_above_and_between_its_children():
    a, b, c = Node("a"), Node("b"), Node("c")
    ab = Node("ab", 10, (a, b))
    root = Node("abc", 20, (ab, c))
    places = layout(root)
    assert [places[id(n)] for n in (a, b, c)] == [(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)]
    assert places[id(ab)] == (0.5, 1.0)
    assert places[id(root)] == (1.25, 2.0)


def test_a_deep_tree_is_laid_out_without_recursion():
    count = 5000  # a chain far deeper than Python's recursion limit
    # each step joins the next operand to the result so far (the last in the list)
    path = [(0, 1)] + [(0, count - 1 - k) for k in range(1, count - 1)]
    steps = [ContractStep("a,a->a", 1, 1, "")] * (count - 1)
    einsum = SimpleNamespace(spec=",".join(["a"] * count) + "->a", shapes=[(2,)] * count,
                             path=path, steps=steps)
    places = layout(tree(einsum))
    assert len(places) == 2 * count - 1
    assert max(y for _, y in places.values()) == count - 1


def test_a_plan_without_einsums_cannot_be_drawn():
    plan = hilbert.compile_source("fn f(x) ↦ 2 · x").f.plan((3,))
    with pytest.raises(hilbert.ArgumentError, match="no einsum to draw") as caught:
        draw(plan)
    assert caught.value.code == "E600"


def test_draw_magic_shows_a_png(monkeypatch):
    needs("matplotlib")
    pytest.importorskip("IPython")
    import sys

    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])  # (the shell's own)
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("%load_ext hilbert")
        assert shell.run_cell('%%hilbert\nfn f(x, w) ↦ einsum("np,pq->nq", x, w)\n').success
        result = shell.run_cell("%hilbert draw f x=4x3 w=3x2")
        assert result.success, result.error_in_exec
        assert result.result.data.startswith(b"\x89PNG")
    finally:
        InteractiveShell.clear_instance()


def _walk(root: Node):
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)
