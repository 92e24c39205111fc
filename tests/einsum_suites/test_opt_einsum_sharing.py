"""opt_einsum's own test_sharing.py, as installed, run against hilbert's functions (theirs.py)."""

from tests.einsum_suites.theirs import run_theirs

globals().update(run_theirs("opt_einsum.tests.test_sharing"))
