"""The op table (compiler/ops/primitives.py) is complete: every op that reaches an executor has
its shape rule, NumPy meaning and a way onto dask arrays; every entrywise op has its code in
generated loops; the sets passes use are the traits' (and what they always were)."""

from hilbert.compiler.ops.primitives import BY_OP, TRAITS, having

#: Ops that never reach an executor: draws are run by a model's initialiser, arg-extremes are
#: written as other ops by the resolver.
NEVER_RUN = {"gaussian", "uniform", "argmax", "argmin", "bernoulli"}


def test_every_op_an_executor_meets_has_a_shape_rule_and_both_meanings():
    for op, row in BY_OP.items():
        if op in NEVER_RUN:
            continue
        assert row.shape is not None, op
        assert row.meaning is not None, op
        assert row.dask is not None or "lazy" in row.traits, op
        assert row.traits <= TRAITS, op


def test_every_entrywise_op_has_code_and_every_op_with_code_is_entrywise():
    assert {op for op, row in BY_OP.items() if row.code is not None} == having("entrywise")


def test_the_derived_sets_are_the_ones_the_passes_were_written_with():
    entrywise = {"exp", "ln", "sqrt", "tanh", "sin", "cos", "tan", "abs", "conj", "re", "im",
                 "floor", "erf", "max",
                 "min", "add", "sub", "mul", "div", "pow", "neg", "eq", "ne", "lt", "gt", "le",
                 "ge", "mod", "floordiv"}
    assert having("entrywise") == entrywise
    assert having("shapes_only") == {"rows", "columns", "positions"}
    assert having("static") == {"rows", "columns", "floor", "max", "min", "add", "sub", "mul",
                                "div", "pow", "neg", "mod", "floordiv"}
    assert having("compiled") == entrywise | {"maximum", "minimum", "sumalong", "rows",
                                              "columns", "positions", "oneHot", "shift",
                                              "take", "index", "slice", "keyeduniform",
                                              "keyedgaussian", "permutation"}
    assert having("movable") >= entrywise | {"maximum", "minimum", "concat", "shift", "take"}
