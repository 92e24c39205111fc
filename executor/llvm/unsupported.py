"""The signal that a function lies outside what the LLVM back end lowers (yet)."""


class Unsupported(Exception):  # noqa: N818 (a signal, not an error: the caller falls back)
    """What the LLVM back end does not lower: the function is not compiled, and its call's
    calls stay on the host tier (the message says what, for the plan's notes)."""
