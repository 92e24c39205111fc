"""Settings (compiler/settings.py): one table of every HILBERT_* variable, read in one place,
documented for users, and part of the key plans are kept under."""

import re

from conftest import ROOT
from hilbert.compiler import settings
from hilbert.compiler.driver import plan_entry

import hilbert


def test_every_setting_read_anywhere_is_in_the_table_and_documented():
    used = set()
    for folder in ("compiler", "executor", "hilbert", "grammar"):
        for path in (ROOT / folder).glob("*.py"):
            used |= set(re.findall(r'"(HILBERT_[A-Z_]+)"', path.read_text(encoding="utf-8")))
    assert used <= set(settings.SETTINGS)
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    for variable in settings.SETTINGS:
        assert f"`{variable}" in page, variable


def test_the_environment_is_read_in_one_module_only():
    readers = []
    for folder in ("compiler", "executor", "hilbert", "grammar"):
        for path in (ROOT / folder).glob("*.py"):
            text = path.read_text(encoding="utf-8")
            if re.search(r"environ(\.get)?\(?\[?[\"']HILBERT_|environ\.get\(\w*ENVIRONMENT", text):
                readers.append(path.name)
    assert readers == ["settings.py"]


def test_a_plan_made_under_one_thread_setting_is_not_served_under_another(monkeypatch):
    entry = hilbert.compile_source('fn f(a) ↦ tanh(a) · 2').f.entry
    monkeypatch.setenv("HILBERT_THREADS", "1")
    first = plan_entry(entry, ((3, 4),))
    assert plan_entry(entry, ((3, 4),)) is first  # kept
    monkeypatch.setenv("HILBERT_THREADS", "4")
    second = plan_entry(entry, ((3, 4),))
    assert second is not first
    monkeypatch.setenv("HILBERT_THREADS", "1")
    assert plan_entry(entry, ((3, 4),)) is first


def test_a_setting_that_is_not_understood_is_E600(monkeypatch):
    monkeypatch.setenv("HILBERT_MAX_PROGRAMS", "eight")
    try:
        settings.whole_number("HILBERT_MAX_PROGRAMS", "a count")
    except hilbert.HilbertError as err:
        assert err.code == "E600" and "HILBERT_MAX_PROGRAMS='eight'" in str(err)
    else:
        raise AssertionError("no E600")
