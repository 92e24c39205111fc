"""The Python API: load, open, compile_source, calling conventions, docstrings, errors."""

import inspect
import pickle

import numpy as np
import pytest

import hilbert

SOURCE = """
-- unrelated comment, separated by a blank line

-- layer(a, w) · a inputs n×p · w weights p×q → n×q
-- One dense layer.
fn layer(a, w) ↦ einsum("np,pq->nq", a, w)

-- The sum of every entry.
fn total(a) ↦ einsum("ij->", a)
fn difference(a, b) ↦ a − b
def helper(x) ≔ 2 · x
fn viaHelper(x) ↦ helper(x) + 1
"""


@pytest.fixture(scope="module")
def mod():
    return hilbert.compile_source(SOURCE, name="api.hb")


def test_compile_source_exports_fns_only(mod):
    assert mod.names == ("layer", "total", "difference", "viaHelper")
    assert "helper" in mod.definitions
    with pytest.raises(AttributeError):
        _ = mod.helper
    assert mod.function("helper")(3) == 6.0
    assert "layer" in dir(mod)
    assert "layer" in repr(mod)


def test_export_all_exposes_every_definition():
    mod = hilbert.compile_source(SOURCE, export_all=True)
    assert mod.helper(2) == 4.0


def test_load_a_file_and_its_relative_open(write_hb, rng):
    write_hb("pkg/Util.hb", "def scale(x) ≔ 3 · x\n")
    main = write_hb("Main.hb", "open pkg.Util\nfn tripled(x) ↦ scale(x)\n")
    mod = hilbert.load(main)
    np.testing.assert_array_equal(mod.tripled([1, 2]), [3.0, 6.0])
    assert hilbert.load(str(main)).tripled(1) == 3.0


def test_load_with_a_search_path(write_hb, tmp_path):
    write_hb("library/Helpers.hb", "def inc(x) ≔ x + 1\n")
    main = write_hb("project/Main.hb", "open Helpers\nfn f(x) ↦ inc(x)\n")
    with pytest.raises(hilbert.NameResolutionError) as err:
        hilbert.load(main)
    assert err.value.code == "E203"
    assert hilbert.load(main, search_path=[tmp_path / "library"]).f(1) == 2.0
    assert hilbert.compile_source("open Helpers\nfn f(x) ↦ inc(x)",
                                  search_path=[str(tmp_path / "library")]).f(1) == 2.0


def test_open_a_prelude_module_reaches_every_definition(rng):
    nets = hilbert.open("Prelude.Networks")
    a, w = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(nets.dense(a, w), a @ w, rtol=1e-14)
    assert "dense" in nets.names


@pytest.mark.parametrize("name, code", [("Prelude.Nothing", "E203"), ("Nowhere", "E203"),
                                        ("../etc/passwd", "E204"), ("Prelude..X", "E204"),
                                        ("", "E204")])
def test_open_of_a_bad_name(name, code):
    with pytest.raises(hilbert.HilbertError) as err:
        hilbert.open(name)
    assert err.value.code == code


def test_load_of_a_missing_file(tmp_path):
    with pytest.raises(hilbert.ArgumentError) as err:
        hilbert.load(tmp_path / "missing.hb")
    assert err.value.code == "E600" and "missing.hb" in err.value.message


@pytest.mark.parametrize("text", [None, b"fn f(x) |-> x", 42])
def test_compile_source_needs_text(text):
    with pytest.raises(hilbert.ArgumentError) as err:
        hilbert.compile_source(text)
    assert err.value.code == "E600"


def test_unknown_executor():
    with pytest.raises(hilbert.ArgumentError) as err:
        hilbert.compile_source("fn f(x) ↦ x", executor="abacus")
    assert "abacus" in err.value.message


def test_arrays_lists_and_numbers_are_accepted(mod, rng):
    a, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    expected = a @ w
    np.testing.assert_allclose(mod.layer(a, w), expected, rtol=1e-14)
    np.testing.assert_allclose(mod.layer(a.tolist(), w.tolist()), expected, rtol=1e-14)
    np.testing.assert_allclose(mod.layer(a.astype(np.float32), w), a.astype(np.float32) @ w,
                               rtol=1e-6)
    np.testing.assert_array_equal(mod.layer(np.eye(2, dtype=int), [[1, 2], [3, 4]]),
                                  [[1, 2], [3, 4]])
    np.testing.assert_allclose(mod.layer(np.asfortranarray(a), w[:, ::1]), expected, rtol=1e-14)
    np.testing.assert_allclose(mod.layer(a.T.T, w), expected, rtol=1e-14)
    assert mod.difference(3, 1) == 2.0
    assert mod.difference(True, 0.5) == 0.5


def test_keyword_arguments(mod, rng):
    a, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(mod.layer(w=w, a=a), a @ w, rtol=1e-14)
    np.testing.assert_allclose(mod.layer(a, w=w), a @ w, rtol=1e-14)
    assert mod.difference(b=1.0, a=5.0) == 4.0


def test_scalar_results_are_python_floats(mod):
    result = mod.total(np.ones((2, 3)))
    assert type(result) is float and result == 6.0
    assert type(mod.difference(2, 1)) is float
    assert isinstance(mod.layer([[1.0]], [[2.0]]), np.ndarray)


def test_results_are_fresh_arrays(mod):
    a = np.ones((2, 2))
    out = hilbert.compile_source("fn same(a) ↦ a").same(a)
    out[0, 0] = 5.0
    assert a[0, 0] == 1.0
    assert out.dtype == np.float64


def test_docstrings_come_from_the_comment_block(mod):
    assert mod.layer.__doc__.endswith("layer(a, w) · a inputs n×p · w weights p×q → n×q\n"
                                      "One dense layer.")
    assert "unrelated" not in mod.layer.__doc__
    assert mod.total.__doc__.endswith("The sum of every entry.")
    assert mod.difference.__doc__ == "difference(a, b)  [fn at api.hb:10:1]"


def test_signature_repr_and_help(mod):
    assert str(inspect.signature(mod.layer)) == "(a, w)"
    assert repr(mod.layer) == "<hilbert fn layer(a, w) at api.hb:6:1>"
    assert mod.layer.__name__ == "layer"
    assert "One dense layer." in pydoc_text(mod.layer)


def pydoc_text(obj) -> str:
    import pydoc

    return pydoc.render_doc(obj, renderer=pydoc.plaintext)


def test_error_attributes_and_rendering():
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.compile_source("fn f(x) ↦\n  x + y", name="where.hb")
    err = raised.value
    assert err.code == "E200"
    assert (err.span.line, err.span.column) == (2, 7)
    assert err.message == "unknown name y"
    assert str(err) == "where.hb:2:7: error[E200]: unknown name y\n    x + y\n        ^"
    assert isinstance(err, hilbert.NameResolutionError)


def test_errors_pickle_with_their_code_and_span():
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.compile_source("fn f(x) ↦ g(x)")
    again = pickle.loads(pickle.dumps(raised.value))
    assert (again.code, str(again.span), str(again)) == ("E200", "<string>:1:11", str(raised.value))


# Bad arguments from Python name the function and the parameter


@pytest.mark.parametrize("args, words", [
    (([1.0, 2.0], [[1.0]]), ["layer", "argument a", "a vector of 2", "2 letter(s)"]),
    ((np.ones((2, 3)), np.ones((4, 2))), ["layer", "argument w", "letter p is 3", "4"]),
    (("abc", [[1.0]]), ["layer", "argument a", "a number", "a string ('abc')"]),
    ((None, [[1.0]]), ["layer", "argument a", "a number", "None"]),
    (([[1.0]], None), ["layer", "argument w", "None"]),
])
def test_bad_arguments_name_function_and_parameter(mod, args, words):
    with pytest.raises(hilbert.HilbertError) as raised:
        mod.layer(*args)
    text = str(raised.value)
    for word in words:
        assert word in text, (word, text)


def test_wrong_number_of_arguments(mod):
    for call, words in [(lambda: mod.layer([[1]]), "missing argument(s) w"),
                        (lambda: mod.layer([[1]], [[1]], [[1]]), "takes 2 argument(s)"),
                        (lambda: mod.layer([[1]], b=[[1]]), "no parameter 'b'"),
                        (lambda: mod.layer([[1]], [[1]], a=[[1]]), "parameter a twice")]:
        with pytest.raises(hilbert.ArgumentError) as raised:
            call()
        assert raised.value.code == "E600" and words in raised.value.message


@pytest.mark.parametrize("shapes", [(2, 3), ((2, 3),), ((2, 3), (3, -2)), "a", ((2, 3), (3, 2), (1,))])
def test_program_refuses_what_is_not_one_shape_per_parameter(mod, shapes):
    """`program` takes a tuple of shapes; anything else is E600, not a TypeError from the
    shape checker."""
    with pytest.raises(hilbert.ArgumentError) as raised:
        mod.layer.program(shapes)
    assert raised.value.code == "E600" and "shape" in raised.value.message


def test_a_second_call_with_the_same_shapes_does_not_replan(mod):
    layer = hilbert.compile_source(SOURCE).layer
    layer(np.ones((2, 3)), np.ones((3, 2)))
    before = layer.plans_made
    layer(np.zeros((2, 3)), np.zeros((3, 2)))
    assert layer.plans_made == before
    layer(np.zeros((5, 3)), np.zeros((3, 2)))
    assert layer.plans_made == before + 1


def test_plan_reads_tuples_of_numpy_integers_as_shapes():
    f = hilbert.compile_source('fn f(a, b) ↦ einsum("ij,jk->ik", a, b)').f
    shapes = ((np.int64(2), np.int64(3)), (np.int32(3), np.uint8(4)))
    plan = f.plan(*shapes)
    assert str(plan) == str(f.plan((2, 3), (3, 4)))
    assert str(plan).startswith("plan of f(a: 2×3, b: 3×4)")
    assert str(f.plan(*(np.zeros((2, 3)).shape, np.zeros((3, 4)).shape))) == str(plan)
