"""Regenerate the extra stored results of chapters 8 (hybrids) and 10 (RoPE, ALiBi).

    python experiments/relative_hybrid_grid.py

Chapters 8 and 10 mostly read the chapter 6 and 7 grids (``experiments/run_grid.py``),
which already train every registered scheme, hybrids, RoPE and ALiBi included. This
script adds what those grids do not have, on exactly their budget (it starts from their
base configurations, so a change there carries over):

* the hybrids that chapter 6's low-data regime does not train (frozen sinusoid with
  scale and bias, factored, hierarchical), on the same fixed small training set;
* a hierarchical table with segment rows for 4x the training length, in chapter 7's
  extrapolation test (the default hierarchy covers the training length only);
* RoPE and ALiBi in chapter 7's test with a longer budget (does the verdict depend on it?);
* the trained position table of seed 0 of each chapter 6 hybrid, for chapter 8's
  chapter-5 analyses. Runs are deterministic, so these are the very tables of the stored
  chapter 6 runs (the script checks that the metrics agree).

Writes ``book/data/ch8_ch10_extra.json``. ``tests/test_hybrid.py`` re-trains one stored
run and compares.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from posenc.results import RunResult, load_results, save_results, select
from posenc.train import TrainConfig, run_grid, train

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "book" / "data"
OUTPUT = DATA / "ch8_ch10_extra.json"
#: Seeds of the chapter 7-style runs (chapter 7 uses five).
SEEDS = (0, 1, 2, 3, 4)
#: Fixed training-set size of the low-data runs (one of chapter 6's sizes).
LOW_DATA_EXAMPLES = 64
#: Steps of the longer RoPE/ALiBi budget in the chapter 7 test.
LONG_STEPS = 1500
#: Seeds of the low-data runs (chapter 6 uses three for its low-data cells).
LOW_DATA_SEEDS = (0, 1, 2)
#: Seeds of the longer runs (each costs LONG_STEPS / 600 ordinary runs).
LONG_SEEDS = (0, 1, 2)
#: Hybrids trained in chapter 6 (a) whose tables chapter 8 analyses.
TABLE_SCHEMES: tuple[tuple[str, dict], ...] = (
    ("learned", {"init": "bert"}),
    ("learned", {"init": "sinusoidal"}),
    ("hybrid-scaled-sinusoid", {}),
    ("hybrid-factored", {}),
    ("hybrid-hierarchical", {}),
)


def _grids_module():
    """``experiments/run_grid.py``, where the chapter 6 and 7 grids are defined."""
    spec = importlib.util.spec_from_file_location("run_grid", ROOT / "experiments" / "run_grid.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _config(cell: object) -> TrainConfig:
    """A grid cell of ``run_grid.py``: a config, or a ``(config, n_seeds)`` pair."""
    config = cell[0] if isinstance(cell, tuple) else cell
    if not isinstance(config, TrainConfig):
        raise TypeError(f"unexpected grid cell {cell!r} in experiments/run_grid.py")
    return config


def bases() -> tuple[TrainConfig, TrainConfig]:
    """The chapter 6 and chapter 7 base configurations (budget, task, model size, mask)."""
    grids = _grids_module()
    ch6 = replace(_config(grids.ch6_configs()[0]), scheme="none", position_options={}, curve_examples=0)
    ch7 = replace(_config(grids.ch7_configs()[0]), scheme="none", position_options={})
    return ch6, ch7


def extra_configs() -> list[tuple[TrainConfig, tuple[int, ...]]]:
    """Every cell of this script's grid with its seeds (as many as the matching chapter 6/7 cells)."""
    ch6, ch7 = bases()
    low_data = [
        replace(ch6, scheme=scheme, position_options=options, n_train_examples=LOW_DATA_EXAMPLES)
        for scheme, options in (("hybrid-scaled-sinusoid", {}), ("hybrid-factored", {}), ("hybrid-hierarchical", {}))
    ]
    longest = max(ch7.eval_lengths)
    hierarchy = replace(ch7, scheme="hybrid-hierarchical",
                        position_options={"segment_len": 4, "n_segments": longest // 4})
    longer = [replace(ch7, scheme=scheme, steps=LONG_STEPS) for scheme in ("rope", "alibi")]
    return ([(c, LOW_DATA_SEEDS) for c in low_data] + [(hierarchy, SEEDS)]
            + [(c, LONG_SEEDS) for c in longer])


def trained_tables(n_positions: int, reference: list[RunResult] | None) -> list[dict]:
    """Seed 0 of each chapter 6 hybrid, trained again, with its position table."""
    ch6, _ = bases()
    main_cells = select(reference or [], seed=0, n_train_examples=None, combine="add",
                        token_init_std=ch6.token_init_std)
    stored = {(r.config["scheme"], str(sorted(r.config["position_options"].items()))): r.metrics["accuracy"]
              for r in main_cells}
    tables = []
    for scheme, options in TABLE_SCHEMES:
        model, result = train(replace(ch6, scheme=scheme, position_options=options, seed=0))
        key = (scheme, str(sorted(options.items())))
        if key in stored and abs(stored[key] - result.metrics["accuracy"]) > 1e-9:
            print(f"warning: {key} accuracy {result.metrics['accuracy']} differs from the chapter 6 file's "
                  f"{stored[key]}", file=sys.stderr)
        tables.append(table_entry(model, result, n_positions))
    return tables


def table_entry(model: torch.nn.Module, result: RunResult, n_positions: int) -> dict:
    """The stored record of a trained position table: scheme, options, accuracy, rows (5 decimals).

    ``n_positions`` rows, or fewer when the table has fewer (``model.position.max_len``).
    """
    limit = model.position.max_len
    rows = n_positions if limit is None else min(n_positions, limit)
    with torch.no_grad():
        table = model.position.table(rows)
    return {
        "scheme": result.config["scheme"],
        "position_options": dict(result.config["position_options"]),
        "accuracy": result.metrics["accuracy"],
        "table": [[round(float(v), 5) for v in row] for row in table.tolist()],
    }


def _key(config: TrainConfig | dict) -> str:
    data = config.to_dict() if isinstance(config, TrainConfig) else config
    return json.dumps(data, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    torch.set_num_threads(1)
    started = time.perf_counter()
    partial = OUTPUT.with_suffix(".partial.json")
    # Resume an interrupted run: results are saved after every training run.
    done = {_key(r.config): r for r in load_results(partial)[0]} if partial.exists() else {}
    runs = [replace(config, seed=seed) for config, seeds in extra_configs() for seed in seeds]
    for index, config in enumerate(runs, 1):
        if _key(config) in done:
            continue
        result = run_grid([config], [config.seed])[0]
        done[_key(result.config)] = result
        save_results(list(done.values()), partial, meta={"partial": True})
        print(f"[{index}/{len(runs)}] {config.scheme} {config.position_options} seed={config.seed} "
              f"acc={result.metrics['accuracy']:.3f} ({result.wall_time_s:.0f} s)", file=sys.stderr, flush=True)
    results = [done[_key(config)] for config in runs]
    ch6_file = DATA / "ch6_grid.json"
    reference = load_results(ch6_file)[0] if ch6_file.exists() else None
    _, ch7 = bases()
    tables = trained_tables(max(ch7.eval_lengths), reference)
    meta = {
        "command": "python experiments/relative_hybrid_grid.py",
        "n_runs": len(results),
        "tables": tables,
        "total_wall_time_s": round(time.perf_counter() - started, 1),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "note": "wall times were measured on a shared 2-core machine and are inflated by other work",
    }
    save_results(results, OUTPUT, meta=meta)
    partial.unlink(missing_ok=True)
    print(f"wrote {OUTPUT} ({len(results)} runs, {meta['total_wall_time_s']:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
