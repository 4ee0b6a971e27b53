"""Precision and speed of ``posenc.sinusoidal_table`` against the common float32 recipe.

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.sinusoidal_bench [--runs 15] [--d-model 1024]

Prints, for both methods,
* the max abs error against a float64 evaluation of the formula over every position below
  8,192 and below 65,536 (d_model = 1024 by default), and
* the time to build an 8,192 x d_model float32 table: the two methods are timed alternately
  in the same process, and the script reports the median of each and the median ratio;
and the update latency of the chapter 2 explorers (median of 50 calls of ``Explorer.frame``
plus ``Explorer.apply`` on a ``go.Figure``; the table explorer at d_model = 512, length 512).

Exit status 1 if a target of issue #3 is missed (error > 1e-6, posenc slower than the recipe,
or an explorer update slower than 50 ms).
Timings on a shared machine are noisy; the alternating runs and medians keep the ratio fair.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import torch

from posenc.sinusoidal import float32_recipe_table, row_errors, sinusoidal_table

ERROR_TARGET = 1e-6
LATENCY_TARGET_MS = 50.0


def max_error(table: torch.Tensor) -> float:
    """Max abs difference between ``table`` (paper layout, rows 0..n-1) and the float64 formula."""
    return float(row_errors(table).max())


def time_once(build: Callable[[], torch.Tensor]) -> float:
    start = time.perf_counter()
    build()
    return time.perf_counter() - start


def explorer_latency_ms(calls: int = 50) -> dict[str, float]:
    """Median milliseconds of one update (compute the frame, apply it to a figure) per explorer."""
    import plotly.graph_objects as go

    from posenc.interactive import Explorer
    from posenc.sinusoidal_plots import position_explorer, rotation_explorer, table_explorer

    cases = {
        "table (d_model=512, length=512)": (table_explorer(), {"d_model": 512, "seq_len": 512}),
        "position (d_model=128, pos=300)": (position_explorer(), {"position": 300}),
        "rotation (d_model=32, k=37, pos=1234)": (rotation_explorer(), {"k": 37, "position": 1234}),
    }
    medians = {}
    for name, (explorer, values) in cases.items():
        figure = go.Figure(explorer.figure)
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            Explorer.apply(explorer.frame(**values), figure)
            samples.append(time.perf_counter() - start)
        medians[name] = 1e3 * statistics.median(samples)
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="timed runs per method (default 15)")
    parser.add_argument("--d-model", type=int, default=1024, help="table width (default 1024)")
    parser.add_argument("--seq-len", type=int, default=8192, help="rows of the timed table (default 8192)")
    args = parser.parse_args(argv)
    d_model, seq_len = args.d_model, args.seq_len

    methods: dict[str, Callable[[int], torch.Tensor]] = {
        "float32 recipe": lambda n: float32_recipe_table(n, d_model),
        "posenc": lambda n: sinusoidal_table(n, d_model),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), d_model={d_model}")
    print("\nmax abs error vs float64 formula (every position below the limit)")
    print(f"{'method':<16}{'< 8,192':>12}{'< 65,536':>12}")
    errors: dict[str, dict[int, float]] = {}
    for name, build in methods.items():
        big = build(65536)
        errors[name] = {8192: max_error(build(8192)), 65536: max_error(big)}
        del big
        print(f"{name:<16}{errors[name][8192]:>12.2e}{errors[name][65536]:>12.2e}")

    print(f"\nbuild time of a {seq_len} x {d_model} float32 table ({args.runs} alternating runs)")
    for build in methods.values():  # warm-up: first-call allocations and kernel dispatch
        build(seq_len)
    times: dict[str, list[float]] = {name: [] for name in methods}
    ratios = []
    for _ in range(args.runs):
        pair = {name: time_once(lambda b=build: b(seq_len)) for name, build in methods.items()}
        for name, seconds in pair.items():
            times[name].append(seconds)
        ratios.append(pair["posenc"] / pair["float32 recipe"])
    for name, samples in times.items():
        print(f"{name:<16} median {1e3 * statistics.median(samples):8.2f} ms   "
              f"(min {1e3 * min(samples):.2f}, max {1e3 * max(samples):.2f})")
    ratio = statistics.median(ratios)
    print(f"time ratio posenc / float32 recipe: median {ratio:.3f} "
          f"({'posenc slower' if ratio > 1 else 'posenc not slower'} at this size; small tables favour the recipe)")

    print("\nexplorer update latency (median of 50 frame + apply calls)")
    latency = explorer_latency_ms()
    for name, ms in latency.items():
        print(f"{name:<40}{ms:8.2f} ms")

    ok = (max(errors["posenc"].values()) <= ERROR_TARGET and ratio <= 1.0
          and max(latency.values()) <= LATENCY_TARGET_MS)
    print(f"\ntargets (error <= {ERROR_TARGET:g} up to 65,536; not slower than the recipe; "
          f"explorer updates <= {LATENCY_TARGET_MS:g} ms): "
          f"{'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
