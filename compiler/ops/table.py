"""The op table as the rules it holds read it back: primitives.py fills `BY_OP` and `SPOKEN`
once its rows are made, so that a rule module (shape_rules.py: a reduction's value over an
empty axis, a size's axis, an op's name in a message) reads rows without importing the module
that imports it. Nothing reads them before primitives.py has been imported: every rule is
called through a row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Every IR op name to its row (primitives.BY_OP, the same dict).
BY_OP: dict[str, Any] = {}
#: An op as messages name it (primitives.spoken), once primitives.py has set it.
SPOKEN: list[Callable[[str], str]] = []
