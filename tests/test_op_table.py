"""The op table (compiler/ops/primitives.py) is complete and closed: every row that reaches an
executor has every column an executor reads (shape and axes rules, derivative and tangent
rules, its NumPy, dask and JAX meanings, its role in compiled code and, for a reduction
compiled there, how it combines and starts, and the code generator's lowering of its form),
checked without the optional packages (JAX's meanings by name); and the sets passes use are
the traits', each derived here from what the rows say or do rather than listed."""

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hilbert.compiler import ir
from hilbert.compiler.ops import loop_code as lc
from hilbert.compiler.ops.primitives import BY_OP, FORMS, FROM_FUNCTION, ROLES, TRAITS, having
from hilbert.executor.codegen import control, forms, spelling
from hilbert.grammar.errors import CheckError
from hilbert.grammar.source import Source, Span

#: The families that never reach an executor: arg-extremes and bernoulli are written as other
#: ops by the resolver, seeded draws run in a model's initialiser.
NEVER_RUN_KINDS = {"argreduce", "rewritten", "draw"}
RUN = {op: row for op, row in BY_OP.items() if row.kind not in NEVER_RUN_KINDS}
JAX_MEANINGS = Path(__file__).parents[1] / "executor" / "jax" / "meanings.py"
SPAN = Span(Source("<op table>", "x"), 1, 1, 1, 2)


def _top_level_names(path: Path) -> set[str]:
    """The functions and values a module defines at its top level, read without importing it
    (so without its packages)."""
    names = set()
    for statement in ast.parse(path.read_text()).body:
        if isinstance(statement, ast.FunctionDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    return names


def test_the_rows_that_never_run_are_the_rows_without_a_meaning():
    assert {op for op, row in BY_OP.items() if row.meaning is None} == (
        set(BY_OP) - set(RUN))
    assert {"argmax", "argmin", "gaussian", "uniform", "bernoulli"} <= set(BY_OP) - set(RUN)


@pytest.mark.parametrize("op", sorted(RUN))
def test_every_row_an_executor_meets_has_every_column(op):
    row = BY_OP[op]
    assert row.traits <= TRAITS
    assert row.shape is not None and row.axes is not None
    assert row.derivative is not None and row.tangent is not None
    assert row.meaning is not None  # (the NumPy meaning: reference executor, host tier)
    assert row.dask is not None or "lazy" in row.traits
    assert row.jax is not None
    assert (row.form is not None) == ("compiled" in row.traits)
    assert row.form is None or (row.form in FORMS and row.role in ROLES)


@pytest.mark.parametrize("op", sorted(op for op, row in RUN.items() if row.jax))
def test_every_jax_meaning_is_named_where_it_is(op):
    """A `jnp.…`/`lax.…` name is the JAX twin of the row's NumPy function (its family makes
    the meaning); a bare name is a meaning executor/jax/meanings.py defines. Read without
    importing JAX; with JAX, tests/test_jax_executor.py resolves every name."""
    row = BY_OP[op]
    library, _, name = row.jax.rpartition(".")
    if library:
        assert library in ("jnp", "lax") and name.isidentifier()
        assert row.kind in FROM_FUNCTION and row.numpy is not None
    else:
        assert name in _top_level_names(JAX_MEANINGS)


def test_every_jax_name_resolves_where_jax_is_installed():
    jnp = pytest.importorskip("jax.numpy")
    from jax import lax

    for op, row in RUN.items():
        library, _, name = row.jax.rpartition(".")
        if library:
            assert callable(getattr({"jnp": jnp, "lax": lax}[library], name)), op


@pytest.mark.parametrize("op", sorted(op for op, row in BY_OP.items() if row.role == "tail"))
def test_every_compiled_reduction_says_how_it_combines_and_starts(op):
    """A tail folds each entry into its accumulator with an entrywise op that has code, from
    a start that op leaves every entry as it is (NumPy's reduction of one entry is itself)."""
    row = BY_OP[op]
    assert row.combine in having("entrywise") and BY_OP[row.combine].code is not None
    assert isinstance(row.start, float)
    entries = np.array([-2.5, 0.0, 3.0, np.inf, -np.inf])
    combined = BY_OP[row.combine].numpy(np.float64(row.start), entries)
    np.testing.assert_array_equal(combined, entries)
    np.testing.assert_array_equal(row.meaning(_node(op, 0), [entries[None, :]]), entries)


@pytest.mark.parametrize("op", sorted(op for op, row in BY_OP.items() if row.empty is not None))
def test_a_reduction_with_a_value_over_nothing_is_numpys_there(op):
    """Its NumPy meaning over an empty axis is that value, which compiled loops start from."""
    row = BY_OP[op]
    assert row.role == "tail" and row.start == row.empty
    np.testing.assert_array_equal(row.meaning(_node(op, 0), [np.zeros((0, 3))]),
                                  np.full(3, row.empty))
    assert row.shape(_node(op, 0), [(0, 3)], {}) == (3,)


def test_a_reduction_without_one_refuses_an_empty_axis():
    for op, row in RUN.items():
        if row.role == "tail" and row.empty is None:
            with pytest.raises(CheckError) as caught:
                row.shape(_node(op, 0), [(0, 3)], {})
            assert caught.value.code == "E317"


def test_only_compiled_reductions_say_how_they_combine():
    assert {op for op, row in BY_OP.items() if row.combine is not None} == {
        op for op, row in BY_OP.items() if row.role == "tail"}


@pytest.mark.parametrize("op", sorted(op for op, row in RUN.items() if row.role == "tail"
                                      or row.kind == "positions"))
def test_axes_rules_agree_with_shape_rules(op):
    """The axes rule code generation reads gives the shape the shape rule gives."""
    row = BY_OP[op]
    node = _node(op, 1)
    assert row.axes(((2, 3, 4),), (1,)) == row.shape(node, [(2, 3, 4)], {})


def test_every_op_with_code_is_compiled_as_a_member_and_entrywise():
    assert {op for op, row in BY_OP.items() if row.code is not None} == having("entrywise")
    assert all(BY_OP[op].role == "member" for op in having("entrywise"))


COMPILED = sorted(having("compiled"))


@pytest.mark.parametrize("op", COMPILED)
def test_every_compiled_row_has_a_lowering_of_its_form(op):
    """The code generator writes an op by its form's lowering (executor/codegen/forms.py),
    which has the part the form's role needs: a value at an index, a fold, or a unit's code."""
    row = BY_OP[op]
    lowering = forms.LOWERINGS.get(row.form)
    assert lowering is not None, f"{op}: no lowering registered for the form {row.form!r}"
    assert getattr(lowering, forms.part_for(row.role)) is not None, (op, row.form)


def test_every_registered_lowering_is_of_a_compiled_form():
    assert set(forms.LOWERINGS) == {BY_OP[op].form for op in COMPILED}


def test_the_kernel_functions_are_those_compiled_code_calls_as_kernels():
    """What a nest's work counts as calls (lc.KERNELS, read by the plan's thread rule)
    are exactly the functions compiled code spells as hilbert's kernels, in every compiled
    tier (executor/codegen/spelling.py)."""
    for tier in ("compiled", "fast"):
        called = {fn for fn in lc.FUNCTIONS
                  if spelling.spelled(fn, tier)[0] == spelling.CALL
                  and spelling.spelled(fn, tier)[1].startswith("K.")}
        assert called == lc.KERNELS, tier


def test_every_draw_has_a_kind_of_the_draw_kernel():
    assert set(control.DRAWS) == {op for op in COMPILED if BY_OP[op].form == "draw"}
    assert len(set(control.DRAWS.values())) == len(control.DRAWS)


def test_the_lowerings_load_without_the_optional_packages():
    """Importing the code generator registers every lowering with JAX, dask, torch and
    cotengra unimportable (a fresh process, so nothing else imported them first)."""
    script = ("import sys\n"
              "for name in ('jax', 'dask', 'torch', 'cotengra'):\n"
              "    sys.modules[name] = None\n"
              "from hilbert.compiler.ops.primitives import BY_OP, having\n"
              "from hilbert.executor.codegen import forms\n"
              "missing = [op for op in having('compiled') if getattr(forms.LOWERINGS.get("
              "BY_OP[op].form), forms.part_for(BY_OP[op].role), None) is None]\n"
              "assert not missing, missing\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


#: An example call of each form whose rows read some arguments for their shapes only: its
#: attributes and arguments.
_SHAPE_READERS = {
    "size": ((), [np.arange(6.0).reshape(2, 3)]),
    "position": ((0,), [np.arange(5.0)]),
    "draw": ((), [np.float64(7.0), np.float64(3.0), np.arange(5.0)]),
    "shifted": ((0, (1.0,), 0.0), [np.arange(5.0), np.arange(3.0)]),
}


@pytest.mark.parametrize("op", sorted(op for op, row in RUN.items() if row.values is not None))
def test_arguments_past_the_values_an_op_reads_give_only_their_shapes(op):
    """An op whose row reads the values of its first `values` arguments only (fusion and the
    scheduler read no others' values) means the same whatever the others hold."""
    row = BY_OP[op]
    attrs, base = _SHAPE_READERS[row.form]
    node = ir.Prim(op, (), attrs, SPAN)
    found = []
    for fill in (np.nan, 1.0, -math.inf):
        args = base[:row.values] + [np.full(np.shape(a), fill) for a in base[row.values:]]
        found.append(np.asarray(row.meaning(node, args)))
    assert all(np.array_equal(found[0], f) for f in found[1:]), op


def test_shapes_only_ops_read_no_argument_values():
    assert having("shapes_only") == {op for op, row in BY_OP.items() if row.values == 0}


def test_a_view_of_one_position_has_the_axes_its_shape_rule_gives():
    row = BY_OP["index"]
    node = ir.Prim("index", (ir.Param(0, "x", SPAN), ir.Const(1.0, SPAN)), (), SPAN)
    assert row.axes(((2, 3, 4), ()), ()) == row.shape(node, [(2, 3, 4), ()], {})


def _node(op: str, axis: int) -> ir.Prim:
    return ir.Prim(op, (ir.Param(0, "x", SPAN),), (axis,), SPAN)


# ---------------------------------------------------------------- the derived sets

def test_compiled_ops_are_the_ones_with_a_role():
    assert having("compiled") == {op for op, row in BY_OP.items() if row.role is not None}


def test_entrywise_ops_compute_each_entry_from_the_same_entries():
    """An entrywise op's meaning on arrays is its meaning on each entry; an op along an axis,
    or without a NumPy function, is not one."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, (2, 3))
    for op, row in RUN.items():
        if row.numpy is None or row.attrs:  # (an op along an axis reads the axis)
            assert op not in having("entrywise"), op
            continue
        node = ir.Prim(op, (), (), SPAN)
        args = [a, b][:row.arity]
        whole = np.asarray(row.meaning(node, args))
        each = np.array([[row.meaning(node, [x[i, j] for x in args]) for j in range(3)]
                         for i in range(2)])
        assert op in having("entrywise"), op
        np.testing.assert_array_equal(whole, each, err_msg=op)


def test_shapes_only_ops_read_no_values():
    """Their meaning is the same whatever x holds; an op whose result has x's values in it
    is not one."""
    for op in having("shapes_only"):
        row = BY_OP[op]
        node = _node(op, 1)
        same = [row.meaning(node, [np.full((2, 3), v)]) for v in (np.nan, 1.0, -math.inf)]
        assert all(np.array_equal(same[0], s) for s in same[1:]), op
    assert having("shapes_only") == {op for op, row in BY_OP.items()
                                     if row.role in ("size", "generator")}


def test_static_ops_are_arithmetic_on_numbers_or_sizes():
    assert having("static") <= having("entrywise") | {
        op for op, row in BY_OP.items() if row.role == "size"}
    assert having("static") >= {op for op, row in BY_OP.items() if row.role == "size"}
    assert not having("static") & {op for op, row in BY_OP.items() if row.kind == "compare"}


def test_entrywise_and_compiled_reductions_are_movable():
    assert having("movable") >= having("entrywise") | {
        op for op, row in BY_OP.items() if row.role == "tail"}
    assert not having("movable") & {op for op, row in BY_OP.items() if row.kind == "random"}


#: The functions of the op table's lowerings (compiler/ops/loop_code.py), as NumPy computes
#: them, written here independently of the rows' own NumPy functions.
_BY_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "mod": np.mod, "floordiv": np.floor_divide, "pow": np.power, "fmax": np.fmax,
             "fmin": np.fmin, "neg": np.negative, "real": np.real, "exp": np.exp, "log": np.log,
             "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
             "abs": np.abs, "floor": np.floor, "erf": np.vectorize(math.erf)}
_COMPARED = {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
             "<=": np.less_equal, ">=": np.greater_equal}


def _evaluate(form, args):
    """A lowering (loop_code's data) computed on NumPy arrays."""
    match form:
        case lc.Arg(position=k):
            return args[k]
        case lc.Const(value=value):
            return np.full_like(args[0], value)
        case lc.Apply(fn=fn, args=parts):
            return _BY_NUMPY[fn](*(_evaluate(p, args) for p in parts))
        case lc.Select(test=test, then=then, otherwise=otherwise):
            held = _COMPARED[test.op](_evaluate(test.left, args), _evaluate(test.right, args))
            return np.where(held, _evaluate(then, args), _evaluate(otherwise, args))
    raise AssertionError(form)


@pytest.mark.parametrize("op", sorted(op for op, row in BY_OP.items() if row.code is not None))
def test_every_ops_lowering_is_data_that_computes_its_numpy_meaning(op):
    """A row's code is a lowering as data (no text): well formed, reading only its arguments,
    and, computed by the interpreter above, its NumPy function's values, to the bit."""
    row = BY_OP[op]
    assert isinstance(row.code, lc.Apply | lc.Select | lc.Const | lc.Arg)
    assert lc.well_formed(row.code) and lc.read(row.code) <= set(range(row.arity))
    rng = np.random.default_rng(7)
    positive = op in ("ln", "sqrt")
    args = [rng.uniform(0.1 if positive else -3.0, 3.0, size=64).round(1) for _ in range(row.arity)]
    if op == "pow":
        args[0] = np.abs(args[0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_evaluate(row.code, args), row.numpy(*args))
