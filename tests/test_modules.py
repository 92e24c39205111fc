"""Modules: one module per file (keyed by its real path), cycles, opening twice, the search
path, and the Prelude module an unknown name lives in."""

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

import hilbert

#: Two modules both called Util: the top one adds 1, the one in Sub/ adds 100.
UTILS = {"Util.hb": "def u(x) ≔ x + 1\n", "Sub/Util.hb": "def u(x) ≔ x + 100\n",
         "Sub/X.hb": "open Util\nfn x(a) ↦ u(a)\ndef viaQualified(a) ≔ Util.u(a)\n"}


@pytest.fixture
def two_utils(write_hb):
    for relative, text in UTILS.items():
        write_hb(relative, text)
    return write_hb


@pytest.mark.parametrize("opens", [("Util", "Sub.X"), ("Sub.X", "Util")],
                         ids=["Util first", "Sub.X first"])
def test_each_open_finds_the_file_beside_its_own_module(two_utils, executor, opens):
    # Main opens ./Util.hb; Sub/X.hb's own `open Util` is Sub/Util.hb, in either order.
    text = "".join(f"open {m}\n" for m in opens)
    main = two_utils("Main.hb", text + "fn mine(a) ↦ u(a)\nfn theirs(a) ↦ X.x(a)\n"
                     "fn qualified(a) ↦ X.viaQualified(a)\n")
    mod = hilbert.load(main, executor=executor, export_all=True)
    x = np.array([0.0, 1.0])
    np.testing.assert_array_equal(mod.mine(x), x + 1)
    np.testing.assert_array_equal(mod.theirs(x), x + 100)
    np.testing.assert_array_equal(mod.qualified(x), x + 100)


def test_one_file_opened_by_two_names_is_one_module(two_utils):
    # Sub/X.hb opens Util (= Sub/Util.hb); Main opens the same file as Sub.Util.
    main = two_utils("Main.hb", "open Sub.Util\nopen Sub.X\nfn f(a) ↦ u(a) + x(a)\n")
    assert hilbert.load(main, executor="reference").f(0.0) == 200.0


def test_opening_a_module_twice_is_opening_it_once(two_utils):
    main = two_utils("Main.hb", "open Util\nopen Util\nfn f(a) ↦ u(a)\n")
    assert hilbert.load(main, executor="reference").f(1.0) == 2.0


def test_ambiguity_between_two_modules_of_one_name_shows_their_files(two_utils):
    main = two_utils("Main.hb", "open Util\nopen Sub.Util\nfn f(a) ↦ u(a)\n")
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(main)
    assert raised.value.code == "E202"
    assert "Util.hb" in raised.value.message and "Sub/Util.hb" in raised.value.message


def test_modules_that_open_each_other_are_named_in_a_cycle(write_hb):
    write_hb("A.hb", "open B\ndef a(x) ≔ b(x) + 1\n")
    write_hb("B.hb", "open C\ndef b(x) ≔ c(x)\n")
    write_hb("C.hb", "open A\ndef c(x) ≔ 2 · x\n")
    main = write_hb("Main.hb", "open A\nfn f(x) ↦ a(x)\n")
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(main)
    err = raised.value
    assert err.code == "E209"
    assert "A opens B, which opens C, which opens A again" in err.message
    assert (Path(err.span.source.name).name, err.span.line) == ("C.hb", 1)


def test_a_module_that_opens_itself(write_hb):
    main = write_hb("Main.hb", "open Main\nfn f(x) ↦ x\n")
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(main)
    assert raised.value.code == "E209" and "Main opens itself" in raised.value.message


@pytest.mark.parametrize("as_text", [True, False], ids=["str", "Path"])
def test_search_path_may_be_a_single_folder(write_hb, tmp_path, as_text):
    write_hb("lib/Helpers.hb", "def inc(x) ≔ x + 1\n")
    main = write_hb("project/Main.hb", "open Helpers\nfn f(x) ↦ inc(x)\n")
    folder = tmp_path / "lib"
    assert hilbert.load(main, search_path=str(folder) if as_text else folder).f(1) == 2.0
    source = "open Helpers\nfn g(x) ↦ inc(x) · 2\n"
    assert hilbert.compile_source(source, search_path=str(folder)).g(1) == 4.0


def _prelude_modules_defining(name: str) -> list[str]:
    """Read the Prelude's files directly: the modules with a `def name` or `fn name`."""
    found = []
    for path in sorted((ROOT / "prelude").glob("*.hb")):
        if re.search(rf"^(def|fn)\s+{name}\b", path.read_text(encoding="utf-8"), re.M):
            found.append(f"Prelude.{path.stem}")
    return found


@pytest.mark.parametrize("name", ["softmaxRows", "mean", "dense"])
def test_an_unknown_name_says_which_prelude_module_defines_it(name):
    modules = _prelude_modules_defining(name)  # softmaxRows: Arithmetic, and Kernels re-exports it
    assert modules
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.compile_source(f"fn f(x) ↦ {name}(x)")
    assert raised.value.code == "E200"
    where = " and ".join(modules)
    assert f"{name} is defined in {where}: add `open {modules[0]}`" in raised.value.message


def test_an_unknown_name_in_no_prelude_module_still_gets_suggestions():
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.compile_source("open Prelude.Statistics\nfn f(x) ↦ totl(x)")
    assert raised.value.message == "unknown name totl; did you mean total?"
