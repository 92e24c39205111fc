"""What hilbert does differently from opt_einsum and NumPy on purpose, by the id of each of their
tests that shows it, with why (docs/networks.md, "opt_einsum's and NumPy's own tests")."""

#: A test (its id in the file here, or its name for every parametrisation) → why it fails.
EXPECTED: dict[str, str] = {
    # numpy/_core/tests/test_einsum.py
    "test_numpy_einsum.py::TestEinsum::test_einsum_views":
        "a result never shares memory with an operand (docs/semantics.md): NumPy answers a "
        "transpose or diagonal with a view",
    "test_numpy_einsum.py::TestEinsum::test_einsum_sums_object":
        "object arrays: hilbert computes numbers, an array of Python objects is E601",
    "test_numpy_einsum.py::TestEinsum::test_einsum_object_errors":
        "object arrays: hilbert computes numbers, an array of Python objects is E601",
    "test_numpy_einsum.py::TestEinsum::test_object_loop":
        "object arrays: hilbert computes numbers, an array of Python objects is E601",
    "test_numpy_einsum.py::TestEinsum::test_einsum_0d_out":
        "out= is written under casting='safe', as numpy.einsum checks it: a float result into "
        "an integer out is refused (NumPy's optimised path skips its check)",
    "test_numpy_einsum.py::TestEinsum::test_subscript_range":
        "hilbert takes any number of indices: a 53rd index is read, not refused",
    "test_numpy_einsum.py::TestEinsum::test_output_order":
        "order='K' is the layout hilbert computes (C), not one following the operands' strides",
    "test_numpy_einsum.py::TestEinsum::test_einsum_sorting_behavior":
        "einsum_path's text is hilbert's plan, not NumPy's table (the test reads index names "
        "out of NumPy's)",
    "test_numpy_einsum.py::TestEinsumPath::test_long_paths":
        "optimize='optimal' is opt_einsum's search, whose cost model differs from NumPy's own: "
        "another path",
    # opt_einsum/tests/test_contract.py
    "test_opt_einsum_contract.py::test_printing":
        "print(info) is hilbert's plan, not opt_einsum's table (the test counts its characters)",
    # opt_einsum/tests/test_edge_cases.py
    "test_opt_einsum_edge_cases.py::test_contract_expression_checks":
        "hilbert's E600 messages are its own (the test reads opt_einsum's words), and "
        "optimize=False makes an expression of one step where opt_einsum refuses it",
    # opt_einsum/tests/test_paths.py
    "test_opt_einsum_paths.py::test_bad_path_option":
        "an unknown optimiser is E600, a ValueError (opt_einsum raises KeyError)",
    "test_opt_einsum_paths.py::test_memory_paths":
        "memory_limit= is bytes that slicing holds the contraction to, not opt_einsum's bound "
        "on the entries of a path's intermediates ('max_input' and -1 keep opt_einsum's meaning)",
    "test_opt_einsum_paths.py::test_dp_errors_when_no_contractions_found":
        "memory_limit= is bytes that slicing holds the contraction to, not opt_einsum's bound "
        "on the entries of a path's intermediates",
    "test_opt_einsum_paths.py::test_optimizer_registration":
        "optimize= takes hilbert's optimiser names (and optimiser objects), not names "
        "registered with opt_einsum.paths.register_path_fn",
    "test_opt_einsum_paths.py::test_custom_random_greedy":
        "a contraction is planned once per optimiser object and shapes: a second call with the "
        "same object reuses the path, so the object does not search (or count) again",
    "test_opt_einsum_paths.py::test_custom_branchbound":
        "a contraction is planned once per optimiser object and shapes: a second call with the "
        "same object reuses the path, so the object does not search (or count) again",
    "test_opt_einsum_paths.py::test_parallel_random_greedy":
        "a contraction is planned once per optimiser object and shapes: a second call with the "
        "same object reuses the path, so the object does not search (or count) again",
    # opt_einsum/tests/test_backends.py
    "test_opt_einsum_backends.py::test_jax[ijk,ikj]":
        "a scalar result is a NumPy scalar, as numpy.einsum gives it (opt_einsum converting back "
        "from JAX gives a 0-d array)",
    "test_opt_einsum_backends.py::test_jax_with_constants":
        "the test reads opt_einsum's private _evaluated_constants",
    "test_opt_einsum_backends.py::test_torch_with_constants":
        "the test reads opt_einsum's private _evaluated_constants",
    "test_opt_einsum_backends.py::test_jax_jit_gradient":
        "fails with opt_einsum itself here: pytest.approx cannot read a JAX array (no .flat)",
    "test_opt_einsum_backends.py::test_object_arrays_backend":
        "object arrays: hilbert computes numbers, backend='object' is E600",
    # opt_einsum/tests/test_sharing.py
    "test_opt_einsum_sharing.py::test_chain_sharing":
        "opt_einsum's shared_intermediates cache: hilbert's contractions do not fill it",
    "test_opt_einsum_sharing.py::test_sharing_nesting":
        "opt_einsum's shared_intermediates cache: hilbert's contractions do not fill it",
    "test_opt_einsum_sharing.py::test_partial_sharing":
        "opt_einsum's shared_intermediates cache: hilbert's contractions do not fill it",
}

#: Their tests not run here, and why: libraries that are not installed (each test would skip).
NOT_RUN: dict[str, str] = {
    **{f"test_opt_einsum_backends.py::test_{name}{suffix}": f"{name} is not installed"
       for name in ("tensorflow", "theano", "cupy") for suffix in ("", "_with_constants",
                                                                  "_with_sharing")},
    "test_opt_einsum_backends.py::test_sparse": "sparse is not installed",
    "test_opt_einsum_backends.py::test_autograd_gradient": "autograd is not installed",
}
