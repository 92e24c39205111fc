"""The code-generation state of one IR scope while a function is emitted (emitter.py makes the
call's, control.py each loop body's)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...compiler.passes.shapes import Scope


@dataclass
class Frame:
    """Code-generation state of one IR scope (the call's, or a loop body's)."""

    shapes: dict
    scope: Scope = ()  # where in the IR's loops this frame is (ShapeTable's key)
    dims: dict = field(default_factory=dict)
    blocks: list[dict] = field(default_factory=lambda: [{}])
    hoist: list | None = None  # allocations of the enclosing loop, made once before it
    destinations: dict = field(default_factory=dict)  # loop steps written straight to state
    states: dict = field(default_factory=dict)  # loop -> names of its state variables
    owned: dict = field(default_factory=dict)  # node -> the buffer it alone holds
    recomputed: set = field(default_factory=set)  # members kernels compute again, not read back
    fixed: set = field(default_factory=set)  # loop state this loop never changes
    copied: dict = field(default_factory=dict)  # copies of fixed state, made before the loop
    gathered: dict = field(default_factory=dict)  # node -> axis its readers take slices along
    layouts: dict = field(default_factory=dict)  # node -> its buffer's axis order, if not its own
