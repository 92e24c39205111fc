"""opt_einsum's and NumPy's own einsum tests, run against hilbert's functions (a package, so its conftest is not taken for tests/conftest.py)."""
