"""The machine's peak multiply-add rate per dtype, measured with a micro-kernel of our own: the
yardstick GEMM-bound cases are reported as a share of.

The kernel is LLVM IR written here: `CHAINS` independent fused multiply-add chains on vectors
of the CPU's widest kind (512 bits with AVX-512, 256 with AVX2 or AVX, 128 otherwise), kept in
registers for the whole loop, so nothing but the FMA units limits it. Enough chains hide the
FMA's latency (4 cycles on current x86 cores, two FMA units: 8 in flight; AVX-512 has 32
vector registers, AVX2 16). It is compiled for the host CPU and called through ctypes, which
lets go of the GIL, so one Python thread per usable core runs it at once for the all-cores
rate. Each rate is the best of several repeats: on a shared machine the best is the one least
disturbed, and a peak is what the machine can do.

>>> rates = peak_rates(repeats=3)                        # doctest: +SKIP
>>> rates["float64"]["all_cores_gflops"], rates["bits"]   # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from functools import cache

import llvmlite.binding as llvm

#: The dtypes measured, with their LLVM type and bytes.
DTYPES = {"float64": ("double", 8), "float32": ("float", 4)}
#: Seconds one timed run of the kernel lasts, about.
RUN_S = 0.1


def vector_bits() -> int:
    """The widest vectors the host CPU multiplies and adds in (as LLVM sees its features)."""
    features = llvm.get_host_cpu_features()
    if features.get("avx512f"):
        return 512
    if features.get("avx") or features.get("avx2"):
        return 256
    return 128


def chains(bits: int) -> int:
    """Independent FMA chains: twice the 8 two FMA units of latency 4 keep busy where there
    are 32 vector registers (AVX-512), 12 where there are 16."""
    return 16 if bits == 512 else 12


def kernel_ir(dtype: str, bits: int) -> str:
    """The kernel `peak(n, x, y)`: n rounds of acc ← acc·x + y on every chain, and the sum of
    every lane of every chain (so nothing is optimised away). 2·n·chains·lanes FLOPs."""
    scalar, size = DTYPES[dtype]
    lanes = bits // (8 * size)
    vec = f"<{lanes} x {scalar}>"
    count = chains(bits)
    fma = f"@llvm.fma.v{lanes}f{8 * size}"
    zeros = f"<{lanes} x i32> zeroinitializer"
    lines = [
        f"declare {vec} {fma}({vec}, {vec}, {vec})",
        f"define {scalar} @peak(i64 %n, {scalar} %x, {scalar} %y) #0 {{",
        "entry:",
        f"  %x0 = insertelement {vec} undef, {scalar} %x, i32 0",
        f"  %vx = shufflevector {vec} %x0, {vec} undef, {zeros}",
        f"  %y0 = insertelement {vec} undef, {scalar} %y, i32 0",
        f"  %vy = shufflevector {vec} %y0, {vec} undef, {zeros}",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [ 0, %entry ], [ %next, %loop ]",
    ]
    for c in range(count):
        start = "<" + ", ".join(f"{scalar} {1.0 + c / 64:e}" for _ in range(lanes)) + ">"
        lines.append(f"  %a{c} = phi {vec} [ {start}, %entry ], [ %b{c}, %loop ]")
    lines += [f"  %b{c} = call {vec} {fma}({vec} %a{c}, {vec} %vx, {vec} %vy)"
              for c in range(count)]
    lines += ["  %next = add i64 %i, 1", "  %more = icmp slt i64 %next, %n",
              "  br i1 %more, label %loop, label %done", "done:"]
    total = "%b0"
    for c in range(1, count):
        lines.append(f"  %s{c} = fadd {vec} {total}, %b{c}")
        total = f"%s{c}"
    lines += [f"  %e{k} = extractelement {vec} {total}, i32 {k}" for k in range(lanes)]
    lines.append(f"  %t0 = fadd {scalar} %e0, 0.0")
    lines += [f"  %t{k} = fadd {scalar} %t{k - 1}, %e{k}" for k in range(1, lanes)]
    lines += [f"  ret {scalar} %t{lanes - 1}", "}",
              # (a CPU that prefers 256-bit vectors would otherwise split 512-bit ones in two)
              f'attributes #0 = {{ "min-legal-vector-width"="{bits}" '
              f'"prefer-vector-width"="{bits}" }}']
    return "\n".join(lines) + "\n"


@cache
def _engine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                           features=llvm.get_host_cpu_features().flatten(),
                                           opt=3)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    return engine, machine


@cache
def kernel(dtype: str, bits: int):
    """The compiled kernel as a ctypes function (n, x, y) → sum."""
    engine, machine = _engine()
    module = llvm.parse_assembly(kernel_ir(dtype, bits))
    module.triple = machine.triple
    module.verify()
    engine.add_module(module)
    engine.finalize_object()
    c_type = ctypes.c_double if dtype == "float64" else ctypes.c_float
    address = engine.get_function_address("peak")
    return ctypes.CFUNCTYPE(c_type, ctypes.c_int64, c_type, c_type)(address)


def _flops_per_round(dtype: str, bits: int) -> int:
    return 2 * chains(bits) * (bits // (8 * DTYPES[dtype][1]))


def _rate(dtype: str, bits: int, rounds: int, threads: int) -> tuple[float, float]:
    """(GFLOP/s by the threads' own CPU time, GFLOP/s by the wall clock) of `threads` threads
    each running `rounds` rounds at once. The first sums each thread's FLOPs over the CPU time
    it was given: the rate of the cores while they ran it, whatever else shared them; the
    second is what this run got (lower when other work takes turns on the cores)."""
    run = kernel(dtype, bits)
    start = threading.Barrier(threads + 1)
    cpu: list[float] = []

    def work():
        start.wait()
        begun = time.thread_time()
        run(rounds, 0.999999, 1e-6)
        cpu.append(time.thread_time() - begun)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    begun = time.perf_counter()
    for w in workers:
        w.join()
    wall = time.perf_counter() - begun
    flops = rounds * _flops_per_round(dtype, bits)
    return sum(flops / max(c, 1e-9) for c in cpu) / 1e9, threads * flops / wall / 1e9


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def peak_rates(repeats: int = 7, bits: int | None = None) -> dict:
    """Per dtype, the best GFLOP/s of `repeats` runs on one core and on every usable core at
    once, by the threads' CPU time (the yardstick: `*_gflops`) and by the wall clock
    (`*_wall_gflops`), with the vector width and chains the kernel used and the cores."""
    bits = bits or vector_bits()
    cores = usable_cores()
    rates: dict = {"bits": bits, "chains": chains(bits), "cores": cores,
                   "method": f"{chains(bits)} independent FMA chains on {bits}-bit vectors "
                             f"(benchmarks/peak.py), best of {repeats} runs of ~{RUN_S:g} s per "
                             "thread, FLOPs over each thread's CPU time"}
    for dtype in DTYPES:
        kernel(dtype, bits)(1000, 0.999999, 1e-6)  # compiled and warm
        rounds = _calibrate(dtype, bits)
        one = [_rate(dtype, bits, rounds, 1) for _ in range(repeats)]
        every = [_rate(dtype, bits, rounds, cores) for _ in range(repeats)]
        rates[dtype] = {"core_gflops": max(r[0] for r in one),
                        "all_cores_gflops": max(r[0] for r in every),
                        "core_wall_gflops": max(r[1] for r in one),
                        "all_cores_wall_gflops": max(r[1] for r in every)}
    return rates


def _calibrate(dtype: str, bits: int) -> int:
    """Rounds that take about RUN_S seconds on one core."""
    rounds = 100_000
    gflops = max(_rate(dtype, bits, rounds, 1)[0] for _ in range(3))
    return max(rounds, int(RUN_S * gflops * 1e9 / _flops_per_round(dtype, bits)))


if __name__ == "__main__":
    import json

    print(json.dumps(peak_rates(), indent=1))
