"""The jax executor: a call's planned IR lowered to JAX and run under `jax.jit` on whatever
device JAX has (docs/jax-executor.md). `executor.py` prepares programs, `lowering.py` lowers
IR (loops, loops run backwards, branches, einsums along the plan's paths), `meanings.py` gives
every op of the op table its JAX meaning, `draws.py` the counter-based draws, `ledger.py` what
a jitted call hands back beside its value (the first runtime error, loop steps)."""
