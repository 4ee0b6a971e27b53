"""Tests for posenc.results: the run record, JSON files, choosing runs, and numbers over seeds.

The runs here are written by hand (no training), so every expected number is known exactly;
the last tests read the book's stored grids.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from posenc.book import data_path
from posenc.results import (
    RunResult,
    accuracy_by_length,
    curve,
    curve_mean,
    differing_fields,
    extrapolation_variants,
    field_values,
    group_by_label,
    length_curves,
    load_results,
    metric_stats,
    metric_values,
    one_of,
    position_curve,
    position_curves,
    reach_summary,
    reach_text,
    run_label,
    save_results,
    scheme_label,
    select,
    select_labels,
    steps_to_reach,
    summarize,
    summary_by_label,
    with_curve_mean,
)


def run(
    scheme: str,
    seed: int,
    metrics: dict[str, float],
    *,
    options: dict[str, Any] | None = None,
    history: list[dict[str, float]] | None = None,
    extras: dict[str, Any] | None = None,
    **config: Any,
) -> RunResult:
    """A hand-made record with the config fields the functions read."""
    full = {"scheme": scheme, "position_options": dict(options or {}), "seed": seed, "combine": "add",
            "n_train_examples": None, "seq_len": 4, "eval_lengths": [4, 8], "eval_extrapolations": ["clip"], **config}
    return RunResult(config=full, seed=seed, metrics=metrics, history=history or [], wall_time_s=1.0,
                     extras=extras or {})


@pytest.fixture
def grid() -> list[RunResult]:
    """Two seeds of a sinusoid and of a learned table (scored with 'clip' past its 4 rows), and one small-data run."""
    return [
        run("sinusoidal", 0, {"accuracy": 1.0, "accuracy@4": 1.0, "accuracy@8": 0.6},
            extras={"position_accuracy@4": [None, 1.0, 1.0, 1.0], "position_accuracy@8": [None, 1.0, 0.8, 0.2]}),
        run("sinusoidal", 1, {"accuracy": 0.8, "accuracy@4": 0.8, "accuracy@8": 0.4},
            extras={"position_accuracy@4": [None, 0.8, 0.8, 0.8], "position_accuracy@8": [None, 0.6, 0.4, 0.2]}),
        run("learned", 0, {"accuracy": 0.9, "accuracy@4": 0.9, "accuracy@8:clip": 0.3}, options={"init": "bert"},
            extras={"position_accuracy@4": [None, 0.9, 0.9, 0.9], "position_accuracy@8:clip": [None, 0.5, 0.3, 0.1]}),
        run("learned", 1, {"accuracy": 0.7, "accuracy@4": 0.7, "accuracy@8:clip": 0.1}, options={"init": "bert"},
            extras={"position_accuracy@4": [None, 0.7, 0.7, 0.7], "position_accuracy@8:clip": [None, 0.3, 0.1, 0.1]}),
        run("sinusoidal", 0, {"accuracy": 0.5}, n_train_examples=16),
    ]


# -- the record and its file -------------------------------------------------------------------
def test_save_and_load_round_trip(tmp_path: Path, grid: list[RunResult]) -> None:
    path = save_results(grid, tmp_path / "sub" / "r.json", meta={"command": "test"})
    loaded, meta = load_results(path)
    assert meta == {"command": "test"}
    assert [r.to_dict() for r in loaded] == json.loads(json.dumps([r.to_dict() for r in grid]))


def test_load_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make grids"):
        load_results(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"runs": []}')
    with pytest.raises(ValueError, match="not a results file"):
        load_results(tmp_path / "bad.json")
    (tmp_path / "short.json").write_text('{"results": [{"config": {}, "seed": 0}]}')
    with pytest.raises(ValueError, match=r"lacks the key\(s\) \['metrics', 'wall_time_s'\]"):
        load_results(tmp_path / "short.json")


def test_functions_reject_what_is_not_a_list_of_runs(grid: list[RunResult]) -> None:
    with pytest.raises(TypeError, match="single RunResult"):
        select(grid[0], scheme="sinusoidal")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"results\[1\] must be a RunResult, got dict"):
        summarize([grid[0], grid[1].to_dict()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="results is empty"):
        curve([])


# -- labels and choosing runs ------------------------------------------------------------------
def test_scheme_label() -> None:
    assert scheme_label("learned", {"init": "gpt2"}) == "learned (gpt2)"
    assert scheme_label("learned", {}) == "learned (bert)"
    assert scheme_label("sinusoidal", None, "concat") == "sinusoidal, concat"
    assert scheme_label("learned", {"init": "bert", "extrapolation": "clip"}) == "learned (bert) [extrapolation=clip]"
    assert run_label(run("learned", 0, {}, options={"init": "gpt2"}, combine="concat")) == "learned (gpt2), concat"


def test_select_by_value_and_by_predicate(grid: list[RunResult]) -> None:
    assert select(grid, scheme="learned") == grid[2:4]
    assert select(grid, scheme="sinusoidal", n_train_examples=None, seed=1) == [grid[1]]
    assert select(grid, position_options={"init": "bert"}) == grid[2:4]
    assert select(grid, n_train_examples=lambda n: n is not None) == [grid[4]]
    assert select(grid, scheme=one_of("learned", "rope"), seed=one_of(0)) == [grid[2]]
    assert select(grid) == grid
    with pytest.raises(ValueError, match="'colour' is not a config field"):
        select(grid, colour="red")
    with pytest.raises(ValueError, match="at least one value"):
        one_of()


def test_labels_group_and_select(grid: list[RunResult]) -> None:
    groups = group_by_label(grid[:4])
    assert list(groups) == ["sinusoidal", "learned (bert)"]
    assert groups["learned (bert)"] == grid[2:4]
    assert select_labels(grid, ["learned (bert)"]) == grid[2:4]
    assert select_labels(grid[:4], "sinusoidal") == grid[:2]
    with pytest.raises(ValueError, match=r"no run has the label\(s\) \['rope'\]; labels present"):
        select_labels(grid, ["sinusoidal", "rope"])


def test_field_values_and_differing_fields(grid: list[RunResult]) -> None:
    assert field_values(grid, "n_train_examples") == [None, 16]
    assert field_values(grid, "position_options") == [{}, {"init": "bert"}]
    with pytest.raises(ValueError, match="not a config field"):
        field_values(grid, "colour")
    reference = grid[0].config
    assert differing_fields(grid[:2], reference, ignore=("seed",)) == []
    assert differing_fields(grid, reference, ignore=("seed",)) == ["scheme", "position_options", "n_train_examples"]
    assert differing_fields(grid, reference, fields=("seq_len", "combine")) == []
    with pytest.raises(ValueError, match="fields entry 'colour' is not in reference"):
        differing_fields(grid, reference, fields=("colour",))


# -- numbers over seeds -------------------------------------------------------------------------
def test_summarize_groups_seeds(grid: list[RunResult]) -> None:
    rows = summarize(grid)
    assert [row["label"] for row in rows] == ["sinusoidal", "learned (bert)", "sinusoidal"]
    first = rows[0]
    assert first["n"] == 2 and first["values"] == [1.0, 0.8] and first["metric"] == "accuracy"
    assert first["mean"] == pytest.approx(0.9) and first["std"] == pytest.approx(0.2 / math.sqrt(2))
    assert (first["min"], first["max"]) == (0.8, 1.0)
    by_scheme = summarize(grid, by=["scheme"], metric="accuracy@8")  # runs without the metric are skipped
    assert [(row["scheme"], row["n"]) for row in by_scheme] == [("sinusoidal", 2)]
    assert summarize(grid[4:])[0]["std"] == 0.0  # one run: no spread
    with pytest.raises(ValueError, match="not a config field"):
        summarize(grid, by=["colour"])


def test_summary_by_label(grid: list[RunResult]) -> None:
    table = summary_by_label(grid[:4])
    assert list(table) == ["sinusoidal", "learned (bert)"]
    assert table["learned (bert)"]["mean"] == pytest.approx(0.8)
    # the small-data run has the same label as the fresh-data sinusoid: refuse to merge them silently
    with pytest.raises(ValueError, match="share the label 'sinusoidal'"):
        summary_by_label(grid)
    assert summary_by_label(grid, by=("scheme",))["sinusoidal"]["n"] == 3  # pooled only when asked


def test_metric_values_and_stats(grid: list[RunResult]) -> None:
    assert metric_values(grid, "accuracy@8") == [0.6, 0.4]
    mean, std, n = metric_stats(grid[:2], "accuracy")
    assert (mean, n) == (pytest.approx(0.9), 2) and std == pytest.approx(0.2 / math.sqrt(2))
    with pytest.raises(ValueError, match="no result has metric key='loss'"):
        metric_stats(grid, "loss")


# -- series -------------------------------------------------------------------------------------
def test_curve_and_steps_to_reach() -> None:
    histories = [[{"step": 10, "accuracy": 0.2}, {"step": 20, "accuracy": 0.95}],
                 [{"step": 10, "accuracy": 0.4}, {"step": 20, "accuracy": 0.85}]]
    runs = [run("sinusoidal", seed, {}, history=h) for seed, h in enumerate(histories)]
    steps, means, stds = curve(runs)
    assert steps == [10, 20] and means == pytest.approx([0.3, 0.9])
    assert stds == pytest.approx([0.2 / math.sqrt(2), 0.1 / math.sqrt(2)])
    assert [steps_to_reach(r, 0.9) for r in runs] == [20, None]
    summary = reach_summary(runs, 0.9, label="sin")
    assert summary | {"mean": 0} == {"label": "sin", "n": 2, "reached": 1, "values": [20], "mean": 0, "std": 0.0}
    assert reach_text(summary) == "20 ± 0 (1 of 2)"
    assert reach_text(reach_summary(runs, 0.99)) == "never (0 of 2)"
    with pytest.raises(ValueError, match="threshold must be an accuracy"):
        steps_to_reach(runs[0], 90)
    with pytest.raises(ValueError, match="runs log different steps"):
        curve([runs[0], run("sinusoidal", 2, {}, history=[{"step": 5, "accuracy": 0.1}])])
    with pytest.raises(ValueError, match="history entries lack key='accuracy'"):
        curve([run("sinusoidal", 0, {}, history=[{"step": 5, "loss": 1.0}])])


def test_curve_mean_is_the_learning_curves_average_and_joins_the_metrics() -> None:
    early = run("rope", 0, {"accuracy": 1.0}, history=[{"step": 10, "accuracy": 0.9}, {"step": 20, "accuracy": 1.0}])
    late = run("rope", 1, {"accuracy": 1.0}, history=[{"step": 10, "accuracy": 0.1}, {"step": 20, "accuracy": 1.0}])
    no_curve = run("rope", 2, {"accuracy": 0.5}, history=[{"step": 10, "loss": 2.0}])
    assert curve_mean(early) == pytest.approx(0.95) and curve_mean(late) == pytest.approx(0.55)
    enriched = with_curve_mean([early, late, no_curve])
    assert [r.metrics.get("curve_mean") for r in enriched] == [pytest.approx(0.95), pytest.approx(0.55), None]
    assert "curve_mean" not in early.metrics  # copies: the stored records are left as they were
    with pytest.raises(ValueError, match="lack key='accuracy'"):
        curve_mean(no_curve)
    with pytest.raises(ValueError, match="no history"):
        curve_mean(run("rope", 3, {}, history=[]))


def test_accuracy_by_length_reads_workarounds_past_the_table(grid: list[RunResult]) -> None:
    lengths, means, _ = accuracy_by_length(grid[2:4], [4, 8], strategy="clip")
    assert lengths == [4, 8] and means == pytest.approx([0.8, 0.2])  # inside the table: the plain metric
    assert accuracy_by_length(grid[:2], [4, 8], strategy="clip")[1] == pytest.approx([0.9, 0.5])  # no table
    with pytest.raises(ValueError, match="no result has metric key='accuracy@8'"):
        accuracy_by_length(grid[2:4], [8])  # a learned table is undefined past its end without a workaround
    with pytest.raises(ValueError, match=r"lengths\[0\] must be a positive integer"):
        accuracy_by_length(grid, [0])


def test_variants_and_length_curves(grid: list[RunResult]) -> None:
    variants = extrapolation_variants(grid[:4])
    assert {label: strategy for label, (_, strategy) in variants.items()} == {
        "sinusoidal": None, "learned (bert) + clip": "clip"}
    assert variants["learned (bert) + clip"][0] == grid[2:4]
    assert extrapolation_variants(grid[:4], strategies=["modular"]).keys() == {"sinusoidal", "learned (bert)"}
    curves = length_curves(grid[:4], [4, 8])
    assert curves["learned (bert) + clip"][1] == pytest.approx([0.8, 0.2])
    assert curves["sinusoidal"][1] == pytest.approx([0.9, 0.5])


def test_position_curves(grid: list[RunResult]) -> None:
    positions, means, stds = position_curve(grid[:2], "8")
    assert positions == [1, 2, 3]  # position 0 has no label
    assert means == pytest.approx([0.8, 0.6, 0.2]) and stds[2] == 0.0
    curves = position_curves(grid[:4], [4, 8])
    assert set(curves) == {("sinusoidal", 4), ("sinusoidal", 8), ("learned (bert) + clip", 4),
                           ("learned (bert) + clip", 8)}
    assert curves["learned (bert) + clip", 8][1] == pytest.approx([0.4, 0.2, 0.1])
    assert curves["learned (bert) + clip", 4][1] == pytest.approx([0.8, 0.8, 0.8])
    with pytest.raises(ValueError, match=r"no result has extras\['position_accuracy@16'\]"):
        position_curve(grid, "16")


# -- the book's stored grids ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ch6_grid.json", "ch7_grid.json", "ch8_ch10_extra.json"])
def test_stored_grids_load_and_summarise(name: str) -> None:
    results, meta = load_results(data_path(name))
    assert results and meta["command"].startswith("make grids")
    groups = group_by_label(results)
    assert all(len({r.seed for r in runs}) >= 1 for runs in groups.values())
    assert all(0.0 <= row["mean"] <= 1.0 for row in summarize(results))


def test_stored_ch7_grid_has_every_length_and_workaround() -> None:
    results, _ = load_results(data_path("ch7_grid.json"))
    lengths = field_values(results, "eval_lengths")
    assert len(lengths) == 1
    curves = length_curves(results, lengths[0])
    assert {"sinusoidal", "rope", "learned (bert) + clip", "learned (bert) + interpolate"} <= set(curves)
    assert all(len(means) == len(lengths[0]) for _, means, _ in curves.values())


def test_drop_onsets_mark_where_each_fall_starts() -> None:
    from posenc.results import drop_onsets

    positions = list(range(2, 12))
    accuracy = [1.0, 1.0, 0.9, 0.85, 0.84, 0.84, 0.6, 0.5, 0.5, 0.49]
    assert drop_onsets(positions, accuracy) == [4, 8]  # 8: 0.84 -> 0.6, and 0.6 -> 0.5 continues that fall
    assert drop_onsets(positions, accuracy, drop=0.2) == [8]
    assert drop_onsets(positions, [1.0] * 10) == []
    with pytest.raises(ValueError, match="same length"):
        drop_onsets(positions, accuracy[:-1])
    with pytest.raises(ValueError, match="positions must increase"):
        drop_onsets([3, 2], [1.0, 0.5])
