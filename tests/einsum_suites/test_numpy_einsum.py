"""numpy's own test_einsum.py, as installed, run against hilbert's functions (theirs.py)."""

from tests.einsum_suites.theirs import run_theirs

globals().update(run_theirs("numpy._core.tests.test_einsum"))
