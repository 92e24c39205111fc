"""executor="onnx" in the differential tests that compare executors: the tests of the Prelude's
and the examples' modules (each checks a definition against NumPy written in the test) run
again here with their module's executor fixture giving "onnx". Those that need what the onnx
executor refuses by design are left out, each with its reason (docs/onnx.md): counter-based
draws, and runtime checks an ONNX graph has no host to raise (a position or label out of
range read as it is). Skipped as a whole without onnx and onnxruntime."""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from _pytest.fixtures import FixtureFunctionDefinition  # noqa: E402

import hilbert  # noqa: E402


def _twin(module, made: dict, left_out: dict[str, str]) -> type:
    """A test class running `module`'s tests with its fixtures `made` (name: a function of
    no arguments) on the onnx executor, its other fixtures as they are, but the tests of
    `left_out` (name: why)."""
    space: dict = {}
    for name, value in vars(module).items():
        if name.startswith("test_") and callable(value) and name not in left_out:
            space[name] = staticmethod(value)
        elif isinstance(value, FixtureFunctionDefinition) and name not in made:
            space[name] = _method(value)
    for name, make in made.items():
        space[name] = pytest.fixture(scope="class", name=name)(
            classmethod(lambda cls, make=make: make()))
    space["test_its_fixtures_are_the_onnx_executors"] = _onnx_fixtures(tuple(made))
    return type(f"TestOnnx_{module.__name__}", (), space)


def _onnx_fixtures(names: tuple[str, ...]):
    def test(request):
        """The fixtures this class gives its module's tests are the onnx executor's (a check
        of the twinning): the executor's name, or a module whose functions run on it."""
        for name in names:
            value = request.getfixturevalue(name)
            assert value == "onnx" or {value.function(n).executor for n in value.names} == \
                {"onnx"}
    return staticmethod(test)


def _method(definition: FixtureFunctionDefinition):
    """A module's fixture as the same fixture of a class (its function given `self`)."""
    raw = definition._get_wrapped_function()
    if inspect.isgeneratorfunction(raw):
        def method(self, *args, **kwargs):
            yield from raw(*args, **kwargs)
    else:
        def method(self, *args, **kwargs):
            return raw(*args, **kwargs)
    signature = inspect.signature(raw)
    method.__signature__ = signature.replace(parameters=[  # type: ignore[attr-defined]
        inspect.Parameter("cls", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *signature.parameters.values()])
    return pytest.fixture(scope=definition._fixture_function_marker.scope,
                          name=definition.name)(classmethod(method))


import test_prelude_arithmetic as arithmetic  # noqa: E402
import test_prelude_linalg as linalg  # noqa: E402
import test_prelude_networks as networks  # noqa: E402
import test_prelude_samples as samples  # noqa: E402
import test_prelude_statistics as statistics  # noqa: E402
import test_sample_examples as examples  # noqa: E402
import test_seed_examples as seed  # noqa: E402


def _opened(name: str):
    return lambda: hilbert.open(name, executor="onnx")


def _loaded(name: str):
    return lambda: hilbert.load(str(seed.EXAMPLES / f"{name}.hb"), executor="onnx")


#: The tests left out, and why: each needs what an ONNX graph refuses by design.
_RUNTIME_CHECK = ("a runtime check (E500/E510/E511) that an ONNX graph has no host to raise: "
                  "the value is read as it is (docs/onnx.md)")

TestArithmetic = _twin(arithmetic, {"arith": _opened("Prelude.Arithmetic")}, {})
TestLinearAlgebra = _twin(linalg, {"linalg": _opened("Prelude.LinearAlgebra")}, {})
TestNetworks = _twin(networks, {"nets": _opened("Prelude.Networks")}, {})
TestStatistics = _twin(statistics, {"stats": _opened("Prelude.Statistics")}, {})
TestSamples = _twin(samples, {"executor": lambda: "onnx"}, {
    "test_k_must_be_a_whole_number_and_zero_leaves_nothing_to_average": _RUNTIME_CHECK,
    "test_an_id_outside_the_axis_is_an_error": _RUNTIME_CHECK})
TestExamples = _twin(examples, {"executor": lambda: "onnx"}, {})
TestSeed = _twin(seed, {"layers": _loaded("Layers"), "fits": _loaded("Fits")}, {})

