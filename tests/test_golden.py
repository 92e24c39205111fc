"""The golden guard (docs/testing.md): every program of tests/golden/programs.json (the
benchmark cases' and the Prelude's, at their shapes) renders, plan and generated code, exactly
as recorded under tests/golden/recorded. A deliberate change is accepted with `make golden`."""

from __future__ import annotations

import pytest
from conftest import golden_recorder

#: How many lines of a mismatch's diff a failure shows.
SHOWN = 80


record = golden_recorder()
PROGRAMS = record.read_programs()


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
@pytest.mark.parametrize("program", PROGRAMS, ids=[p["name"] for p in PROGRAMS])
def test_the_generated_code_is_as_recorded(program):
    lines = record.diff(program["name"], record.read_record(program["name"]),
                        record.render(program))
    if lines:
        more = f"\n… {len(lines) - SHOWN} more lines" if len(lines) > SHOWN else ""
        pytest.fail("\n".join(lines[:SHOWN]) + more + "\nrun `make golden` to see and accept "
                    "the change", pytrace=False)


def test_every_program_has_a_record_and_every_record_a_program():
    names = [p["name"] for p in PROGRAMS]
    assert len(set(names)) == len(names)
    assert record.recorded_names() == set(names), "run `make golden` to see and accept the change"


def test_every_group_is_recorded():
    groups = {p["group"] for p in PROGRAMS}
    assert groups == {"bench", "prelude", "bench-threads"}
    threaded = [p for p in PROGRAMS if p["group"] == "bench-threads"]
    # parallel nests are among them (Numba's prange: HILBERT_THREADS's code)
    assert any("prange" in record.read_record(p["name"])
               for p in threaded)
