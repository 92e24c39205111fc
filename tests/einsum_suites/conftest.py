"""opt_einsum's and NumPy's own einsum tests run against hilbert's functions (theirs.py): on the
host tier (HILBERT_COMPILE=never: thousands of contractions, each compiled would take a second;
the compiled steps are checked against numpy.einsum by test_properties.py), the differences
hilbert keeps on purpose expected to fail (strict: one that starts passing fails the run), and a
representative subset of their largest parametrised tests by default, all with `-m slow`."""

from __future__ import annotations

import pytest

from tests.einsum_suites.differences import EXPECTED, NOT_RUN

#: Of a test function with more parametrisations than this, one in STRIDE runs by default (the
#: rest under -m slow): opt_einsum's test_contract.py crosses 80 contractions with 13 optimisers.
LARGE = 100
STRIDE = 11


@pytest.fixture(autouse=True)
def _on_the_host(monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "never")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    here = [item for item in items if "einsum_suites" in item.nodeid]
    kept = [item for item in here if _base(item) not in NOT_RUN
            and item.get_closest_marker("skip") is None]  # (their skips: CuPy not installed)
    if len(kept) < len(here):
        config.hook.pytest_deselected(items=[i for i in here if i not in kept])
        items[:] = [i for i in items if i not in set(here) - set(kept)]
    groups: dict[str, list] = {}
    for item in kept:
        groups.setdefault(item.nodeid.split("[")[0], []).append(item)
        reason = EXPECTED.get(_short(item)) or EXPECTED.get(_base(item))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
    for group in groups.values():
        if len(group) > LARGE:
            for k, item in enumerate(group):
                if k % STRIDE:
                    item.add_marker(pytest.mark.slow)


def _short(item) -> str:
    """The test's id inside its file: `file.py::Class::test[params]`."""
    path, _, rest = item.nodeid.rpartition("einsum_suites/")
    return rest


def _base(item) -> str:
    """The test's id without its parameters."""
    return _short(item).split("[")[0]
