"""Regenerate the stored experiment grids of chapters 6 and 7.

    python experiments/run_grid.py            # both grids (writes book/data/ch6_grid.json, ch7_grid.json)
    python experiments/run_grid.py ch7 --jobs 2

Every run is seeded and deterministic on CPU (see posenc.train.train), so the files are
reproducible; ``tests/test_train.py::test_stored_ch6_cell_reproduces`` and
``tests/test_extrapolate.py::test_stored_ch7_cell_reproduces`` re-run one cell of each
and compare. The grids are defined here, in one place; the chapters read the
configurations back from the files (posenc.results.load_results).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "book" / "data"

#: The schemes of chapter 6's grid, in the order the book discusses them. A scheme registered
#: later joins the grid only when it is added here (the stored grid must not change silently).
SCHEME_ORDER = ("none", "sinusoidal", "learned", "hybrid-scaled-sinusoid", "hybrid-factored",
                "hybrid-hierarchical", "rope", "alibi")
LEARNED_INITS = ("bert", "gpt2", "uniform", "sinusoidal")


def _scheme_cells() -> list[tuple[str, dict]]:
    from posenc.registry import available_schemes

    names = available_schemes()
    missing = [n for n in SCHEME_ORDER if n not in names]
    if missing:
        raise ValueError(f"chapter 6's grid names schemes that are not registered: {missing}")
    ordered = list(SCHEME_ORDER)
    cells: list[tuple[str, dict]] = []
    for name in ordered:
        if name == "learned":
            cells.extend(("learned", {"init": init}) for init in LEARNED_INITS)
        else:
            cells.append((name, {}))
    return cells


def ch6_configs() -> list[tuple[object, int]]:
    """Chapter 6: copy-offset task, bidirectional encoder, length 16, 600 steps for everyone.

    Returns ``(config, n_seeds)`` pairs: five seeds for the main comparison, three for the rest.
    """
    from posenc.train import TrainConfig

    base = TrainConfig(task="copy_offset", seq_len=16, steps=600, batch_size=32, lr=3e-3, d_model=64, n_heads=4,
                       n_layers=2, log_every=25, curve_examples=128, eval_examples=512)
    available = {name for name, _ in _scheme_cells()}
    cells: list[tuple[object, int]] = []
    # (a) every scheme at the training length, fresh data every step
    cells += [(replace(base, scheme=s, position_options=o), 5) for s, o in _scheme_cells()]
    # (a') token embeddings at BERT's scale (std 0.02) instead of N(0, 1)
    cells += [(replace(base, scheme=s, position_options=o, token_init_std=0.02), 3)
              for s, o in [("sinusoidal", {})] + [("learned", {"init": i}) for i in ("bert", "gpt2", "uniform")]]
    # (b) low-data regime: a fixed training set of n sequences
    low = [("sinusoidal", {}), ("learned", {"init": "bert"}), ("learned", {"init": "sinusoidal"})]
    if "rope" in available:
        low.append(("rope", {}))
    cells += [(replace(base, scheme=s, position_options=o, n_train_examples=n), 3)
              for n in (16, 64, 256) for s, o in low]
    # (c) concatenate instead of add (half the width for positions)
    cells += [(replace(base, scheme=s, position_options=o, combine="concat"), 3)
              for s, o in [("sinusoidal", {}), ("learned", {"init": "bert"}), ("learned", {"init": "sinusoidal"})]]
    return cells


def ch7_configs() -> list[tuple[object, int]]:
    """Chapter 7: copy-offset, causal, trained at length 16, tested at 16, 24, 32, 64 (five seeds)."""
    from posenc.registry import available_schemes
    from posenc.train import TrainConfig

    base = TrainConfig(task="copy_offset", seq_len=16, steps=600, batch_size=32, lr=3e-3, d_model=64, n_heads=4,
                       n_layers=2, causal=True, eval_lengths=(16, 24, 32, 64),
                       eval_extrapolations=("clip", "modular", "interpolate"), eval_examples=512,
                       per_position=True, log_every=50)
    names = available_schemes()
    cells = [("none", {}), ("sinusoidal", {}), ("learned", {"init": "bert"}), ("learned", {"init": "sinusoidal"})]
    cells += [(n, {}) for n in ("hybrid-scaled-sinusoid", "rope", "alibi") if n in names]
    return [(replace(base, scheme=s, position_options=o), 5) for s, o in cells]


#: The schemes of the task-suite grid: no positions, two absolute schemes, three relative ones.
SUITE_SCHEMES = (("none", {}), ("sinusoidal", {}), ("learned", {"init": "bert"}), ("rope", {}), ("alibi", {}),
                 ("t5_bias", {}))
#: The tasks of the suite, one per kind of rule (``posenc.tasks``): local relative, long-range content, absolute.
SUITE_TASKS = ("copy_offset", "marker_recall", "copy_half")
#: The learning rates every scheme is tried with; the best is chosen on a validation split.
SUITE_LRS = (1e-3, 3e-3, 1e-2)


def suite_configs() -> list[tuple[object, int]]:
    """Chapters 6, 7, 9 and 10: three tasks x six schemes x three learning rates, causal, five seeds.

    Same budget for every scheme (1,000 steps of 32 sequences at length 16); each run
    records a learning curve, its validation accuracy (for choosing the learning rate),
    accuracy at 32 and 64 tokens overall and on the new positions only, and the result of
    60 fine-tuning steps at 32 tokens (for a learned table, after each workaround).
    """
    from posenc.train import TrainConfig

    base = TrainConfig(seq_len=16, steps=1000, batch_size=32, d_model=64, n_heads=4, n_layers=2, causal=True,
                       eval_lengths=(32, 64), eval_examples=256, per_position=True, score_new_positions=True,
                       validation_examples=256, log_every=100, curve_examples=128, finetune_steps=60, finetune_len=32)
    cells = []
    for task in SUITE_TASKS:
        for scheme, options in SUITE_SCHEMES:
            workarounds = ("clip", "modular", "interpolate") if scheme == "learned" else ()
            for lr in SUITE_LRS:
                cells.append((replace(base, task=task, scheme=scheme, position_options=options, lr=lr,
                                      eval_extrapolations=workarounds), 5))
    return cells


def encoder_configs() -> list[tuple[object, int]]:
    """Chapters 6 and 10: the encoder checks, on chapter 6's budget (copy-offset, length 16, 600 steps), five seeds.

    * ALiBi and no positions, each without and with a ``[CLS]``-like anchor token;
      T5's bucketed bias (which has a direction of its own).
    * Low data (64 training sequences), a 2 x 2: table init (random N(0, 0.02) or
      sinusoidal, std about 0.7) x token-embedding std (1 or 0.02), which separates the
      scale ratio of tokens to positions from the table's structure.
    """
    base = ch6_configs()[0][0]
    cells = [(replace(base, scheme=s, bos_token=bos), 5) for s in ("alibi", "none") for bos in (False, True)]
    cells.append((replace(base, scheme="t5_bias"), 5))
    cells += [(replace(base, scheme="learned", position_options={"init": init}, token_init_std=std,
                       n_train_examples=64), 5)
              for init in ("bert", "sinusoidal") for std in (1.0, 0.02)]
    return cells


def encoder_suite_configs() -> list[tuple[object, int]]:
    """Chapter 6: the other tasks in the encoder, on chapter 6's budget (length 16, 600 steps, lr 3e-3), five seeds.

    Tasks: marker_recall (long-range content), copy_half (absolute) and reverse (absolute,
    length-tied; an encoder-only task). Schemes: as the suite, with ALiBi given an anchor
    token (without one, its symmetric encoder bias cannot tell a sequence from its reverse).
    """
    base = ch6_configs()[0][0]
    schemes = [(s, o, False) for s, o in SUITE_SCHEMES if s != "alibi"] + [("alibi", {}, True)]
    return [(replace(base, task=task, scheme=s, position_options=o, bos_token=bos), 5)
            for task in ("marker_recall", "copy_half", "reverse") for s, o, bos in schemes]


#: Chapter 11's RoPE scaling methods, tested on RoPE models with the suite's budget.
SCALING_METHODS = ("pi", "ntk", "yarn", "llama3")
#: Chapter 11's tasks: the suite's local relative rule and its long-range content task.
SCALING_TASKS = ("copy_offset", "marker_recall")
#: The learning rate the suite chose for RoPE on both tasks (on validation, chapter 7).
SCALING_ROPE_LR = 1e-2
#: A training-time base change (Xiong et al., 2023; Llama 3 uses 500,000).
SCALING_LARGE_BASE = 500_000.0


def rope_scaling_configs() -> list[tuple[object, int]]:
    """Chapter 11: stretching RoPE models trained at length 16 to 32 and 64 tokens, five seeds.

    * The suite's RoPE runs (base 10,000, the learning rate the suite chose) scored at 2x
      and 4x with every method of ``SCALING_METHODS`` (zero-shot), then fine-tuned for the
      suite's 60 steps at 32 or at 64 tokens with each method (and without one).
    * RoPE trained with base 500,000 from the start, with the suite's learning-rate sweep
      (chosen on validation like every suite cell), plainly fine-tuned at 32 or 64.

    Dynamic NTK is left out: on a full-length input it is NTK-aware scaling with
    ``s = L / 16`` (chapter 11 shows this), so its scores would repeat NTK's.
    """
    base = next(c for c, _ in suite_configs() if c.scheme == "rope")
    cells = []
    for task in SCALING_TASKS:
        for finetune_len in (32, 64):
            cells.append((replace(base, task=task, lr=SCALING_ROPE_LR, finetune_len=finetune_len,
                                  rope_scalings=SCALING_METHODS), 5))
            for lr in SUITE_LRS:
                cells.append((replace(base, task=task, lr=lr, finetune_len=finetune_len,
                                      position_options={"base": SCALING_LARGE_BASE}), 5))
    return cells


GRIDS: dict[str, Callable[[], list[tuple[object, int]]]] = {
    "ch6": ch6_configs, "ch7": ch7_configs, "suite": suite_configs, "encoder": encoder_configs,
    "encoder_suite": encoder_suite_configs, "rope_scaling": rope_scaling_configs}


#: The file next to the rope_scaling grid that holds the model chapter 11 looks inside.
ROPE_SCALING_CHECKPOINT = "rope_scaling_model.safetensors"


def rope_scaling_checkpoints() -> dict[str, object]:
    """Chapter 11's model: the grid's copy-offset run with seed 0, as trained (before any fine-tune).

    Its weights are the same in the grid's runs fine-tuned at 32 and at 64 tokens (the
    fine-tunes work on copies), so this config leaves fine-tuning and the scalings out.
    """
    first = rope_scaling_configs()[0][0]
    assert first.task == "copy_offset" and first.scheme == "rope" and not first.position_options
    return {ROPE_SCALING_CHECKPOINT: replace(first, seed=0, finetune_steps=0, finetune_len=None, rope_scalings=())}


#: Trained models stored next to a grid (by grid name): file name -> config.
CHECKPOINTS: dict[str, Callable[[], dict[str, object]]] = {"rope_scaling": rope_scaling_checkpoints}


def _run_one(config):  # noqa: ANN001, ANN202 - runs in a worker process
    import torch

    torch.set_num_threads(1)
    from posenc.train import train

    return train(config)[1]


def run(name: str, max_seeds: int | None, jobs: int) -> Path:
    from posenc.results import save_results

    cells = GRIDS[name]()
    configs = [replace(c, seed=s) for c, n in cells for s in range(n if max_seeds is None else min(n, max_seeds))]
    start = time.perf_counter()
    partial = DATA / f"{name}_grid.partial.json"
    done: dict[str, object] = {}
    if partial.exists():  # resume an interrupted run: keep the cells already computed
        from posenc.results import load_results

        done = {json.dumps(r.config, sort_keys=True): r for r in load_results(partial)[0]}
    todo = [c for c in configs if json.dumps(c.to_dict(), sort_keys=True) not in done]
    print(f"{name}: {len(configs)} runs ({len(configs) - len(todo)} resumed) on {jobs} process(es)", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, result in enumerate(pool.map(_run_one, todo), 1):
            done[json.dumps(result.config, sort_keys=True)] = result
            print(f"  [{i}/{len(todo)}] {result.config['scheme']} {result.config['position_options']} "
                  f"seed={result.seed} acc={result.metrics['accuracy']:.3f} ({result.wall_time_s:.1f} s)", flush=True)
            save_results(list(done.values()), partial, meta={"partial": True})
    # grid order, whatever order the runs finished in
    results = [done[json.dumps(c.to_dict(), sort_keys=True)] for c in configs]
    partial.unlink(missing_ok=True)
    import torch

    meta = {
        "command": f"python experiments/run_grid.py {name}",
        "seeds_per_cell": sorted({n for _, n in cells}) if max_seeds is None else max_seeds,
        "n_runs": len(results),
        "total_wall_time_s": time.perf_counter() - start,
        "jobs": jobs,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "note": "wall times were measured on a shared 2-core machine and are inflated by other work",
    }
    path = save_results(results, DATA / f"{name}_grid.json", meta=meta)
    print(f"wrote {path} in {meta['total_wall_time_s']:.0f} s", flush=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grids", nargs="*", help=f"which grids, any of {list(GRIDS)} (default: all)")
    parser.add_argument("--max-seeds", type=int, default=None, help="cap the seeds per cell (default: the grid's own)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    args = parser.parse_args(argv)
    unknown = [g for g in args.grids if g not in GRIDS]
    if unknown:
        parser.error(f"unknown grid(s) {unknown}; choose from {list(GRIDS)}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for name in args.grids or list(GRIDS):
        run(name, args.max_seeds, args.jobs)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
