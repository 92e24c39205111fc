"""Control and views in generated code: `if` on a scalar, loops (state in locals, array state
double-buffered), x[t] and x[a:b] as checked views, and oneHot."""

from __future__ import annotations

from ...compiler import ir
from ...compiler.counting import EXACT
from ...compiler.dtypes import is_complex, real
from ...compiler.ops.primitives import spoken
from ...compiler.plan import fusion, scheduler
from . import forms
from .frame import Frame
from .loops import (
    Assign,
    Break,
    Do,
    Expr,
    Fmt,
    Pick,
    Raise,
    Store,
    Sub,
    Update,
    Var,
    View,
    call,
    fmt,
    number,
    other,
    product,
    sizes,
    whole,
)

#: The largest step count a counted loop accepts (what the reference executor accepts too):
#: past 2^53 a float64 count cannot go down by one exactly.
LARGEST_COUNT = EXACT



def _not_whole(em, x, bound, below: str = "<", dtype: str = ""):
    """A test that `x` is not a whole number in [0, bound) (`below` "<="`: [0, bound]), of
    `dtype` (the code's unless given)."""
    return fmt(f"not ({{}} >= {{}} and {{}} {below} {{}} and np.floor({{}}) == {{}})",
               x, number(0.0, dtype or em.dtype), x, bound, x, x)


def _count_checked(em, c: Var, number_: int) -> Expr:
    """The raise of a step count `c` that is no whole number in [0, LARGEST_COUNT], and the
    count as a whole number; a complex code's count is its real part, where its imaginary
    part is 0 (the host's test: compiler/loops.py's step_count)."""
    if not is_complex(em.dtype):
        with em.out.if_(_not_whole(em, c, number(LARGEST_COUNT, em.dtype), "<=")):
            em.out.add(Raise(call("K.StepCountError", whole(number_), c)))
        return call("int", c)
    part = real(em.dtype)
    re, im = call("np.real", c), call("np.imag", c)
    bad = fmt("{} or {} != {}", _not_whole(em, re, number(LARGEST_COUNT, part), "<=", part),
              im, number(0.0, part))
    with em.out.if_(bad):
        em.out.add(Raise(call("K.StepCountError", whole(number_), c)))
    return call("int", re)


def emit_cond(em, node: ir.Cond) -> None:
    """if/else on a scalar: each branch computes only what it alone needs."""
    name = em.fresh("v")
    em.record("branch", em.shape(node), "if on a scalar")
    then, orelse = em.block.plan.branches[node]
    with em.out.if_(fmt("{} != {}", em.value(node.cond), number(0.0, em.dtype))):
        _branch(em, then, node.then, name, node)
    with em.out.else_():
        _branch(em, orelse, node.orelse, name, node)
    em.bind(node, Var(name))


def _branch(em, plan, root: ir.Node, name: str, cond: ir.Cond) -> None:
    em.frame.blocks.append({})
    em.ensure(plan)
    value = em.value(root)
    if em.shape(root):  # (a tensor: a buffer of the dtype the `if`'s value is stored in)
        value = em.stored_as(root, value, em.widened(cond))
    elif not em.counts(cond):
        value = em.as_data(root, value)
    em.out.add(Assign((name,), (value,)))
    em.frame.blocks.pop()


def emit_loop(em, loop: ir.Loop) -> None:
    """The whole loop, inline: state in locals, array state double-buffered (each step
    writes the buffer the state does not hold), body buffers made once before it."""
    until, steps = em.block.plan.loops[loop]
    number_ = len(em.loops)
    em.loops.append(loop)
    em.record("loop", (), loop.name, f"{len(loop.init)} state value(s), compiled whole")
    outer = em.frame
    state = [f"s{number_}_{i}" for i in range(len(loop.init))]
    state_dims = [em.dims_of(a) for a in loop.init]
    body = outer.scope + (loop,)
    counted = em.counting.components.get(loop, frozenset())
    wide = {i for i in counted if state_dims[i] and em.narrow}  # (float64 state buffers)
    for i, (name, init) in enumerate(zip(state, loop.init, strict=True)):
        # (a number the loop does not count starts in the code's dtype, compiler/counting.py;
        # an array in a buffer of its state's dtype)
        value = em.value(init)
        if state_dims[i]:
            value = em.stored_as(init, value, i in wide)
        elif i not in counted:
            value = em.as_data(init, value)
        em.out.add(Assign((name,), (value,)))
        outer.owned.pop(init, None)  # the state may hold this buffer after the loop
    outer.states[loop] = state
    moving = scheduler.moving(loop)
    arrays = [i for i in moving if state_dims[i]]
    left, turns = f"left{number_}", f"turns{number_}"
    if loop.counter is not None:
        em.out.add(Assign((left,), (_count_checked(em, Var(state[loop.counter]), number_),)))
    mark = em.out.mark()
    hoist: list = []
    for i in arrays:
        made = call("K.counted_empty" if i in wide else "K.empty", sizes(state_dims[i]))
        hoist += [Assign((f"A{number_}_{i}",), (made,)), Assign((f"B{number_}_{i}",), (made,))]
    em.out.add(Assign((turns,), (whole(0),)))
    em.frame = Frame(em.table.scopes[body], body, hoist=hoist,
                     fixed={ir.State(i, None) for i in range(len(state))
                            if i not in moving and i != loop.counter})
    for i, name in enumerate(state):
        em.bind(ir.State(i, None), Var(name))
        em.frame.dims[ir.State(i, None)] = state_dims[i]
    with em.out.while_():
        _loop_body(em, loop, number_, state, moving, arrays, until, steps)
    em.frame = outer
    em.out.insert(mark, hoist)
    if loop.counter is not None:
        em.out.add(Assign((state[loop.counter],), (_steps_left(em, loop),)))
    em.out.add(Update("steps", "+=", Var(turns)))
    em.bind(loop, Fmt("(" + ", ".join("{}" for _ in state) + ",)",
                      tuple(Var(s) for s in state)))  # the loop's value: its final state


def _steps_left(em, loop: ir.Loop, left: Expr | None = None):
    """A counted loop's counter holding `left` steps (None: none, 0): counted (float64 in
    every call) when the loop counts it (compiler/counting.py), else of the code's dtype (a
    counted 0 is real: a complex call's, of its parts' dtype, made float64)."""
    if loop.counter in em.counting.components.get(loop, frozenset()):
        return em.counted_number(number(0.0, real(em.dtype)) if left is None else left)
    return call(f"np.{em.dtype}", number(0.0, em.dtype) if left is None else left)


def _loop_body(em, loop: ir.Loop, number_: int, state: list[str], moving: list[int],
               arrays: list[int], until, steps) -> None:
    left, turns = Var(f"left{number_}"), Var(f"turns{number_}")
    with em.out.if_(call("K.stop_requested", Var("stop"))):  # Ctrl-C: the result is discarded
        em.out.add(Break())
    if loop.counter is not None:
        with em.out.if_(fmt("{} == 0", left)):
            em.out.add(Break())
        em.out.add(Assign((state[loop.counter],), (_steps_left(em, loop, left),)))
    else:
        em.ensure(until)  # (not final: the steps below may read what it computes)
        with em.out.if_(fmt("{} != {}", em.value(loop.until), number(0.0, em.dtype))):
            em.out.add(Break())
    for i in arrays:
        target = Var(f"G{number_}_{i}")
        em.out.add(Assign((target.name,), (Pick(Var(f"A{number_}_{i}"), fmt("{} % 2 == 0", turns),
                                                Var(f"B{number_}_{i}")),)))
        step = loop.step[i]
        if (step not in em.frame.destinations and em.lookup(step) is None
                and fusion.role(step, em.frame.shapes) in ("member", "tail", "contraction",
                                                            "generator")):
            em.frame.destinations[step] = target
    em.ensure(steps)
    em.frame.destinations.clear()
    new = {}
    for i in moving:
        value = em.value(loop.step[i])
        if i in arrays:
            new[i] = Var(f"G{number_}_{i}")
            if value != new[i]:
                em.out.add(Do(call("K.copy_into", new[i], value)))
        else:
            new[i] = Var(em.fresh("n"))
            em.out.add(Assign((new[i].name,), (value,)))
    for i in moving:
        em.out.add(Assign((state[i],), (new[i],)))
    em.out.add(Update(turns.name, "+=", whole(1)))
    if loop.counter is not None:
        em.out.add(Update(left.name, "-=", whole(1)))


def _view(em, node: ir.Prim, rows: Expr) -> None:
    """`node` bound to a view of x at `rows` along its first axis; nothing may then write over
    x's buffer, which the view shares."""
    x = node.args[0]
    em.frame.owned.pop(x, None)
    name = em.fresh("v")
    em.out.add(Assign((name,), (Sub(em.value(x), (rows,)),)))
    em.bind(node, Var(name))


@forms.lowers("indexed", "alone")
def emit_index(em, node: ir.Prim) -> None:
    """x[t], checked before the read: a whole number in range."""
    t = em.value(node.args[1])
    size = em.dims_of(node.args[0])[0]
    number_ = len(em.reads)
    em.reads.append(node)
    with em.out.if_(_not_whole(em, t, size)):
        em.out.add(Raise(call("K.PositionError", whole(number_), t, size)))
    _view(em, node, call("int", t))


@forms.lowers("sliced", "alone")
def emit_slice(em, node: ir.Prim) -> None:
    """x[a:b], a view of x."""
    start, stop = (call("int", em.value(a)) for a in node.args[1:])
    _view(em, node, fmt("{}:{}", start, stop))


# (a class count and a slice's bounds are known from shapes alone: their numbers, not the
# values computed from them, which a buffer made before a loop would read before the loop
# computes them)
@forms.lowers("onehot", "alone")
def emit_one_hot(em, node: ir.Prim) -> None:
    """oneHot(labels, k): every label checked to be a whole number 0 … k − 1 (or the
    reference executor's E511 is raised), then a row of zeros with one 1 per label."""
    labels, classes = node.args
    em.record("one-hot", em.shape(node), "oneHot", "labels checked")
    number_ = len(em.reads)
    em.reads.append(node)
    k = Var(em.fresh("k"))
    em.out.add(Assign((k.name,), (call("int", em.value(classes)),)))
    dims = em.dims_of(node)
    out = em.alloc(node, dims)
    count = product(dims[:-1])
    flat_labels = Var(em.fresh("l"))
    em.out.add(Assign((flat_labels.name,), (_flat(em, labels),)))
    flat_out = View(out, "{0}.reshape(({1}, {2}))", (count, k))
    i, v = Var(em.fresh("i")), Var(em.fresh("v"))
    with em.out.for_(i.name, count):
        em.out.add(Assign((v.name,), (Sub(flat_labels, (i,)),)))
        with em.out.if_(_not_whole(em, v, k)):
            em.out.add(Raise(call("K.LabelError", whole(number_), v, k)))
        em.out.add(Store(Sub(flat_out, (i, other(":"))), number(0.0, em.dtype)),
                   Store(Sub(flat_out, (i, call("int", v))), number(1.0, em.dtype)))
    em.bind(node, out)


#: The kernel's kind of each counter-based draw (executor/numba/kernels.py, keyed_draws): a
#: registry keyed by the op table, checked by tests/test_op_table.py.
DRAWS = {"keyeduniform": 0, "keyedgaussian": 1, "permutation": 2}


@forms.lowers("draw", "alone")
def emit_draw(em, node: ir.Prim) -> None:
    """uniform(key, step, x), gaussian(…) or permutation(…): drawn by the kernel into a fresh
    buffer (the same Philox-4x32-10 bits as the host's); a key or step that is not a whole
    number raises the reference executor's E512."""
    key, step, _ = node.args
    em.record("draw", em.shape(node), spoken(node.op), "Philox-4x32-10")
    number_ = len(em.reads)
    em.reads.append(node)
    out = em.alloc(node, em.dims_of(node))
    status = Var(em.fresh("s"))
    k, s = em.value(key), em.value(step)
    em.out.add(Assign((status.name,), (call("K.keyed_draws", whole(DRAWS[node.op]), k, s,
                                            out),)))
    with em.out.if_(fmt("{} != 0", status)):
        em.out.add(Raise(call("K.DrawError", whole(number_), k, s)))
    em.bind(node, out)


def _flat(em, node: ir.Node):
    """`node`'s value as a vector of its entries (a scalar as a vector of one)."""
    if not em.shape(node):
        return call("np.full", whole(1), em.value(node))
    return View(em.value(node), "{0}.reshape(({1},))", (product(em.dims_of(node)),))
