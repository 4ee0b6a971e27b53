"""Tests for posenc.suite: choosing learning rates on validation, k-of-n outcomes, suite tables and explorers."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from posenc.interactive import Explorer
from posenc.results import RunResult
from posenc.suite import (
    SOLVED,
    bpb_mean,
    profile_mean,
    stored_key,
    tied_bpb_range,
    tied_effective_lengths,
    arm_ranges,
    arm_table,
    ranges_by,
    ranking_text,
    reversals,
    choose_learning_rates,
    learning_rate_rows,
    learning_rate_spread,
    new_position_series,
    renamed_cells,
    outcome,
    outcome_text,
    range_text,
    suite_variants,
    tied_range,
    stretch_rows,
    tied_rows,
    variant_values,
    workaround_label,
)
from posenc.suite_plots import learning_curve_explorer, seed_explorer


def _run(task: str, scheme: str, lr: float, seed: int, val: float, **metrics: float) -> RunResult:
    options = {"init": "bert"} if scheme == "learned" else {}
    extrapolations = ["clip", "interpolate"] if scheme == "learned" else []
    history = [{"step": 100, "loss": 1.0, "accuracy": val / 2}, {"step": 200, "loss": 0.5, "accuracy": val}]
    config = {"task": task, "scheme": scheme, "position_options": options, "lr": lr, "seed": seed,
              "combine": "add", "eval_extrapolations": extrapolations}
    return RunResult(config=config, seed=seed, metrics={"val_accuracy": val, "accuracy": val, **metrics},
                     history=history, wall_time_s=1.0)


def _grid() -> list[RunResult]:
    runs = []
    for task in ("copy_offset", "marker_recall"):
        for lr, val in ((1e-3, 0.5), (3e-3, 0.9), (1e-2, 0.7)):
            runs += [_run(task, "rope", lr, seed, val + 0.01 * seed, **{"new@32": 0.2 * seed}) for seed in range(3)]
            runs += [_run(task, "learned", lr, seed, 1.0 - val / 10, **{"new@32:clip": 0.1, "new@32:interpolate": 0.3})
                     for seed in range(3)]
    return runs


def test_the_learning_rate_is_chosen_on_validation_only() -> None:
    cells = choose_learning_rates(_grid())
    assert list(cells) == [("copy_offset", "rope"), ("copy_offset", "learned (bert)"),
                           ("marker_recall", "rope"), ("marker_recall", "learned (bert)")]
    rope = cells["copy_offset", "rope"]
    assert rope.lr == 3e-3 and [r.seed for r in rope.runs] == [0, 1, 2]
    assert rope.validation == pytest.approx({1e-3: 0.51, 3e-3: 0.91, 1e-2: 0.71})
    assert cells["copy_offset", "learned (bert)"].lr == 1e-3  # lowest val/10 penalty


def test_ties_go_to_the_lower_training_loss_then_the_smaller_learning_rate() -> None:
    runs = [_run("copy_offset", "rope", lr, 0, 1.0) for lr in (1e-2, 1e-3, 3e-3)]
    assert choose_learning_rates(runs)["copy_offset", "rope"].lr == 1e-3
    for run, loss in zip(runs, (0.01, 0.03, 0.02), strict=True):
        run.metrics["final_loss"] = loss
    cell = choose_learning_rates(runs)["copy_offset", "rope"]
    assert cell.lr == 1e-2 and list(cell.by_lr) == [1e-3, 3e-3, 1e-2]


def test_learning_rate_spread_reads_every_learning_rate() -> None:
    cell = choose_learning_rates(_grid())["copy_offset", "learned (bert)"]
    assert learning_rate_spread(cell, "new@32", "clip") == pytest.approx({1e-3: 0.1, 3e-3: 0.1, 1e-2: 0.1})
    rope = choose_learning_rates(_grid())["copy_offset", "rope"]
    assert learning_rate_spread(rope, "val_accuracy") == pytest.approx({1e-3: 0.51, 3e-3: 0.91, 1e-2: 0.71})


def test_tied_rates_and_their_range_and_no_pooling_of_anchored_runs() -> None:
    runs = [_run("copy_offset", "rope", lr, s, 1.0, **{"new@32": new}) for lr, new in ((1e-3, 0.9), (3e-3, 0.5))
            for s in range(3)]
    cell = choose_learning_rates(runs)["copy_offset", "rope"]
    assert cell.tied == (1e-3, 3e-3)  # both solve validation: it cannot choose
    assert tied_range(cell, "new@32") == pytest.approx((0.5, 0.9))
    anchored = [_run("copy_offset", "rope", 1e-3, s, 1.0) for s in range(3)]
    for run in anchored:
        run.config["bos_token"] = True
    with pytest.raises(ValueError, match="mix runs with and without an anchor token"):
        choose_learning_rates(runs + anchored)
    assert choose_learning_rates(runs + anchored, anchor=True)["copy_offset", "rope"].tied == (1e-3,)
    assert choose_learning_rates(runs + anchored, anchor=False)["copy_offset", "rope"].tied == (1e-3, 3e-3)


def test_unequal_seeds_and_missing_metrics_are_refused() -> None:
    runs = [_run("copy_offset", "rope", 1e-3, s, 0.5) for s in range(3)] + [_run("copy_offset", "rope", 3e-3, 0, 0.5)]
    with pytest.raises(ValueError, match=r"copy_offset/rope: learning rates have different numbers of seeds"):
        choose_learning_rates(runs)
    with pytest.raises(ValueError, match="lacks metric 'val_accuracy'"):
        choose_learning_rates([RunResult(config={"task": "t", "scheme": "rope", "lr": 1e-3}, seed=0,
                                         metrics={"accuracy": 1.0}, history=[], wall_time_s=0.0)])


def test_outcome_counts_solved_seeds_and_keeps_every_value() -> None:
    result = outcome([1.0, 0.95, 0.1, 1.0, 0.92])
    assert (result.solved, result.n, result.threshold) == (4, 5, SOLVED)
    assert result.values == (1.0, 0.95, 0.1, 1.0, 0.92)
    assert result.mean == pytest.approx(0.794) and result.std == pytest.approx(0.3894, abs=1e-4)
    assert outcome_text(result) == "0.794\u00a0±\u00a00.389 (4\u00a0of\u00a05\u00a0≥\u00a00.9)"
    # a unimodal cell straddling the line gets no count: it would split noise
    assert outcome_text(outcome([0.88, 0.91, 0.93, 0.97, 0.96])) == "0.930\u00a0±\u00a00.037"
    assert outcome([0.5]).std == 0.0
    with pytest.raises(ValueError, match="values is empty"):
        outcome([])
    with pytest.raises(ValueError, match=r"threshold must be an accuracy in \(0, 1\], got 1.5"):
        outcome([0.5], threshold=1.5)


def test_a_learned_table_is_read_once_per_workaround_under_its_own_name() -> None:
    cells = choose_learning_rates(_grid())
    learned = cells["copy_offset", "learned (bert)"]
    assert suite_variants(learned) == {"learned (bert) + clip": "clip",
                                       "learned (bert) + per-input rescale": "interpolate"}
    assert variant_values(learned, "new@32", "interpolate") == [0.3, 0.3, 0.3]
    assert suite_variants(cells["copy_offset", "rope"]) == {"rope": None}
    with pytest.raises(ValueError, match="has no metric 'new@64'"):
        variant_values(learned, "new@64", "clip")


def test_rows_and_tables() -> None:
    cells = choose_learning_rates(_grid())
    rows = tied_rows(cells, ["new@32"], task="copy_offset")
    assert [row[0] for row in rows] == ["rope", "learned (bert) + clip", "learned (bert) + per-input rescale"]
    with pytest.raises(ValueError, match="task must be one of"):
        tied_rows(cells, ["new@32"], task="reverse")
    lr_rows = learning_rate_rows(cells)
    assert lr_rows[0] == ["copy_offset", "rope", "0.510", "0.910\u00a0(kept)", "0.710"]
    tied_runs = [_run("copy_offset", "rope", lr, seed, 1.0, **{"new@32": new}) for lr, new in ((1e-3, 0.9), (3e-3, 0.6))
                 for seed in range(2)] + [_run("copy_offset", "rope", 1e-2, seed, 0.5, **{"new@32": 0.1}) for seed in range(2)]
    tied = learning_rate_rows(choose_learning_rates(tied_runs), mark="tied")
    assert tied == [["copy_offset", "rope", "1.000\u00a0(tied)", "1.000\u00a0(tied)", "0.500"]]
    with pytest.raises(ValueError, match="mark must be one of"):
        learning_rate_rows(cells, mark="best")


def test_tied_rows_give_the_range_over_the_tied_rates() -> None:
    # two rates tie on validation (1.000 each) and disagree past the length; the third is worse on validation
    runs = [_run("copy_offset", "rope", lr, seed, 1.0, **{"new@32": new}) for lr, new in ((1e-3, 0.9), (3e-3, 0.6))
            for seed in range(2)] + [_run("copy_offset", "rope", 1e-2, seed, 0.5, **{"new@32": 0.1}) for seed in range(2)]
    assert tied_rows(choose_learning_rates(runs), ["new@32"], task="copy_offset") == [
        ["rope", "1e-3, 3e-3", "0.600\u20130.900"]]
    cells = choose_learning_rates(_grid())
    rows = tied_rows(cells, ["new@32"], task="copy_offset")
    # one rate wins validation clearly: the range is one number
    assert rows[0] == ["rope", "3e-3", "0.200"] and rows[1] == ["learned (bert) + clip", "1e-3", "0.100"]
    assert range_text(0.7135, 0.9901) == "0.714\u20130.990" and range_text(0.99951, 1.0) == "1.000"
    with pytest.raises(ValueError, match="low must not exceed high"):
        range_text(0.9, 0.1)
    with pytest.raises(ValueError, match="which no run of cells holds"):
        tied_rows(cells, ["new@64"], task="copy_offset")


def test_explorers_show_every_seed_and_every_curve() -> None:
    cells = choose_learning_rates(_grid())
    explorer = seed_explorer(cells, {"new positions at 2×": "new@32"}, task="marker_recall")
    assert isinstance(explorer, Explorer)
    frame = explorer.frame(task="marker_recall", measure="new positions at 2×")
    assert frame.traces[1]["y"] == [0.0, 0.2, 0.4, 0.1, 0.1, 0.1, 0.3, 0.3, 0.3]
    assert frame.traces[0]["x"] == ["rope", "learned (bert) + clip", "learned (bert) + per-input rescale"]
    explorer = learning_curve_explorer(cells)
    assert explorer.caption.startswith("Choose a task. Mean over seeds of the accuracy on test sequences every 100 steps")
    curves = explorer.frame(task="copy_offset")
    assert curves.traces[0]["x"] == [100, 200] and curves.traces[0]["y"] == pytest.approx([0.455, 0.91])
    # a language model's curve: the training loss in bits (the history holds nats), its own axis
    both = learning_curve_explorer(cells, measures=("accuracy", "training loss"), measure="training loss")
    assert [c.name for c in both.controls] == ["task", "measure"] and "bits" in both.figure.layout.yaxis.title.text
    assert "; or the accuracy" not in both.caption and "training loss in bits per token" in both.caption
    losses = both.frame(task="copy_offset", measure="training loss")
    assert losses.traces[0]["y"] == pytest.approx([1 / math.log(2), 0.5 / math.log(2)])
    assert losses.layout["yaxis.autorange"] is True
    assert both.frame(task="copy_offset", measure="accuracy").layout["yaxis.range"] == [-0.02, 1.05]
    with pytest.raises(ValueError, match=r"measures must name curves of \['accuracy', 'training loss'\], got 'loss'"):
        learning_curve_explorer(cells, measures=("loss",))
    with pytest.raises(ValueError, match="measure must be one of 'accuracy'; got 'training loss'"):
        learning_curve_explorer(cells, measure="training loss")
    # one task and one curve: a control with one value would change nothing
    one_task = {key: cell for key, cell in cells.items() if key[0] == "copy_offset"}
    with pytest.raises(ValueError, match=r"nothing to choose: cells hold one task \('copy_offset'\)"):
        learning_curve_explorer(one_task)
    assert [c.name for c in learning_curve_explorer(one_task, measures=("training loss", "accuracy")).controls] == [
        "measure"]
    with pytest.raises(ValueError, match="measures must hold at least one metric"):
        seed_explorer(cells, {})


def test_new_position_series_splits_stored_curves_at_the_training_length() -> None:
    def run(scheme: str, seed: int, curve64: list) -> RunResult:
        config = {"task": "copy_offset", "scheme": scheme, "position_options": {}, "seq_len": 4, "seed": seed,
                  "combine": "add", "eval_extrapolations": []}
        return RunResult(config=config, seed=seed, metrics={}, history=[], wall_time_s=0.0,
                         extras={"position_accuracy@8": curve64})
    runs = [run("rope", 0, [None, None, 1.0, 1.0, 0.5, 0.5, 0.0, 0.0]),
            run("rope", 1, [None, None, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5])]
    lengths, means, stds = new_position_series(runs, [8])["rope"]
    assert lengths == [8] and means == pytest.approx([0.5]) and stds == pytest.approx([0.3535534])
    with pytest.raises(ValueError, match="lengths must be > the training length 4, got 4"):
        new_position_series(runs, [4])
    runs[0].config["task"] = "marker_recall"
    with pytest.raises(ValueError, match="marker_recall labels positions unequally"):
        new_position_series(runs, [8])


def test_workaround_labels_use_the_books_names() -> None:
    assert workaround_label("learned (bert) + interpolate") == "learned (bert) + per-input rescale"
    assert workaround_label("learned (bert) + clip") == "learned (bert) + clip"
    assert workaround_label("rope") == "rope"


def test_arm_ranges_read_both_arms_and_the_table_puts_the_anchor_first() -> None:
    runs = [replace_config(run, bos_token=anchor, accuracy=run.metrics["accuracy"] - (0 if anchor else 0.5))
            for run in _grid() for anchor in (True, False)]
    arms, ranges = arm_ranges(runs)
    assert list(arms) == ["anchor", "no anchor"]
    assert ranges["anchor", "copy_offset", "rope"] == pytest.approx((0.91, 0.91))  # one rate wins validation
    assert ranges["no anchor", "copy_offset", "rope"] == pytest.approx((0.41, 0.41))
    headers, rows = arm_table(ranges)
    assert headers == ["scheme", "copy_offset, anchor", "marker_recall, anchor", "copy_offset, no anchor",
                       "marker_recall, no anchor"]
    assert rows[0] == ["rope", "0.910", "0.910", "0.410", "0.410"]
    with pytest.raises(ValueError, match="no run without an anchor token"):
        arm_ranges([r for r in runs if r.config["bos_token"]])
    with pytest.raises(ValueError, match="ranges misses"):
        arm_table({k: v for k, v in ranges.items() if k != ("no anchor", "marker_recall", "rope")})
    partial = arm_table({k: v for k, v in ranges.items() if k != ("no anchor", "marker_recall", "rope")}, blank="not run")
    assert partial[1][0][-1] == "not run"


def replace_config(run: RunResult, *, bos_token: bool, accuracy: float) -> RunResult:
    """The same run, with or without an anchor token and another test accuracy."""
    return RunResult(config={**run.config, "bos_token": bos_token}, seed=run.seed,
                     metrics={**run.metrics, "accuracy": accuracy}, history=run.history, wall_time_s=1.0)


def test_ranges_by_choose_rates_within_each_value_of_the_field() -> None:
    runs = [RunResult(config={**run.config, "token_init_std": std}, seed=run.seed,
                      metrics={**run.metrics, "accuracy": run.metrics["accuracy"] * (1 if std == 1.0 else 0.5)},
                      history=run.history, wall_time_s=1.0)
            for run in _grid() for std in (1.0, 0.02)]
    ranges = ranges_by(runs, "token_init_std")
    assert ranges["token_init_std 1", "copy_offset", "rope"] == pytest.approx((0.91, 0.91))
    assert ranges["token_init_std 0.02", "copy_offset", "rope"] == pytest.approx((0.455, 0.455))
    assert arm_table(ranges)[0][1] == "copy_offset, token_init_std 1"
    with pytest.raises(ValueError, match="name 'n_layer' is not a field"):
        ranges_by(runs, "n_layer")


def test_ranking_text_joins_overlapping_ranges() -> None:
    ranges = {"rope": (0.2, 0.4), "alibi": (0.95, 1.0), "none": (0.5, 0.8), "t5_bias": (0.6, 0.7)}
    assert ranking_text(ranges) == "alibi > none \u2248 t5_bias > rope"
    assert ranking_text(ranges, names={"none": "NoPE"}) == "alibi > NoPE \u2248 t5_bias > rope"
    with pytest.raises(ValueError, match="low > high"):
        ranking_text({"rope": (0.5, 0.4)})


def test_reversals_count_only_clear_orders_that_flip() -> None:
    before = {"rope": (0.9, 0.95), "t5_bias": (0.5, 0.6), "none": (0.55, 0.7)}
    after = {"rope": (0.2, 0.3), "t5_bias": (0.8, 0.9), "none": (0.25, 0.85)}
    # rope over t5 flips; rope over none becomes a tie (not a reversal); t5 and none were tied
    assert reversals(before, after) == [("rope", "t5_bias")]
    assert reversals(before, before) == []
    with pytest.raises(ValueError, match="same labels"):
        reversals(before, {"rope": (0.1, 0.2)})


def test_stretch_rows_read_each_zero_shot_length_and_one_fine_tune() -> None:
    metrics = {"new@32": 0.5, "new@64": 0.25, "ft_new@32": 0.9, "new@32:ntk": 0.8, "new@64:ntk": 0.6,
               "ft_new@32:ntk": 1.0, "short@64:ntk": 0.95}
    runs = [RunResult(config={"task": "copy_offset", "scheme": "rope", "position_options": {}, "lr": 1e-3, "seed": seed,
                              "combine": "add", "rope_scalings": ["ntk"]}, seed=seed,
                      metrics={"val_accuracy": 1.0, "accuracy": 0.99, **metrics}, history=[], wall_time_s=1.0)
            for seed in range(3)]
    cells = choose_learning_rates(runs)
    headers, rows = stretch_rows(cells, task="copy_offset", lengths=(64, 32), finetune_len=32)
    assert headers == ["variant", "32 tokens, zero-shot", "64 tokens, zero-shot", "32 tokens, fine-tuned",
                       "training length, set for 64"]
    text = [[outcome_text(outcome([v] * 3), digits=2) for v in values] for values in
            ((0.5, 0.25, 0.9, 0.99), (0.8, 0.6, 1.0, 0.95))]
    assert rows == [["rope", *text[0]], ["rope + NTK-aware", *text[1]]]
    with pytest.raises(ValueError, match="lengths"):
        stretch_rows(cells, task="copy_offset", lengths=(), finetune_len=32)
    with pytest.raises(ValueError, match="task must be one of .*got 'marker_recall'"):
        stretch_rows(cells, task="marker_recall", lengths=(32,), finetune_len=32)


def test_renamed_cells_rename_labels_keep_runs_and_styles() -> None:
    def runs(scheme: str, options: dict, **config: object) -> list[RunResult]:
        return [RunResult(config={"task": "copy_offset", "scheme": scheme, "position_options": options, "lr": lr,
                                  "seed": seed, "combine": "add", **config}, seed=seed,
                          metrics={"val_accuracy": 1.0 - lr, "accuracy": 0.9, "new@32": 0.5}, history=[],
                          wall_time_s=1.0) for lr in (1e-3, 3e-3) for seed in range(2)]

    eight = choose_learning_rates(runs("alibi", {}, n_heads=8))
    renamed = renamed_cells(eight, {"alibi": "alibi [8 heads]"})
    assert list(renamed) == [("copy_offset", "alibi [8 heads]")]
    cell = renamed["copy_offset", "alibi [8 heads]"]
    assert cell.label == "alibi [8 heads]" and cell.runs == eight["copy_offset", "alibi"].runs and cell.lr == 1e-3
    assert tied_rows(renamed, ["new@32"], task="copy_offset")[0][0] == "alibi [8 heads]"
    assert renamed_cells(eight, {"rope": "RoPE"}) == eight  # labels not named are kept
    with pytest.raises(ValueError, match=r"names\['alibi'\]"):
        renamed_cells(eight, {"alibi": ""})
    two = {**choose_learning_rates(runs("rope", {})), **choose_learning_rates(runs("rope", {"partial": 0.25}))}
    with pytest.raises(ValueError, match="two cells of task 'copy_offset' the label 'rope'"):
        renamed_cells(two, {"rope [partial=0.25]": "rope"})
    # the figures style a renamed cell by its runs' scheme; a scheme's second cell gets another dash
    shown = renamed_cells(two, {"rope [partial=0.25]": "partial RoPE"})
    fig = learning_curve_explorer({k: replace(c, runs=tuple(replace(r, history=[{"step": 1, "accuracy": 0.5, "loss": 1.0}])
                                                            for r in c.runs)) for k, c in shown.items()},
                                  measures=("accuracy", "training loss")).figure
    first, second = fig.data
    assert first.line.color == second.line.color and first.line.dash != second.line.dash
    assert second.marker.symbol.endswith("-open")


def test_tied_effective_lengths_reads_each_tied_rate() -> None:
    """Two rates tie on validation; each gets its own effective length from its seed means, and a
    rate validation rules out gets none."""
    scores = {1e-3: [(1.0, 0.95, 0.5), (1.0, 0.9, 0.5)],  # means 1.0, 0.925, 0.5: holds to 32
              3e-3: [(1.0, 0.5, 0.5), (0.8, 0.5, 0.5)],  # means 0.9, 0.5: holds at 16 only
              1e-2: [(0.5, 0.5, 0.5), (0.5, 0.5, 0.5)]}  # validation rules it out
    runs = [RunResult(config={"task": "passkey", "scheme": "rope", "lr": lr}, seed=seed,
                      metrics={"val_accuracy": 0.5 if lr == 1e-2 else 1.0, "exact": a, "new@32": b, "new@64": c},
                      history=[], wall_time_s=0.0)
            for lr, seeds in scores.items() for seed, (a, b, c) in enumerate(seeds)]
    cell = choose_learning_rates(runs)["passkey", "rope"]
    assert cell.tied == (1e-3, 3e-3)
    assert tied_effective_lengths(cell, {16: "exact", 32: "new@32", 64: "new@64"}, 0.9) == {1e-3: 32, 3e-3: 16}
    assert tied_effective_lengths(cell, {16: "exact"}, 1.0) == {1e-3: 16, 3e-3: None}
    # a table's workaround: read metric:strategy where the runs have it, the plain metric elsewhere
    clipped = [RunResult(config={**run.config, "scheme": "learned"}, seed=run.seed, history=[], wall_time_s=0.0,
                         metrics={"val_accuracy": run.metrics["val_accuracy"], "exact": run.metrics["exact"],
                                  "new@32:clip": 1.0, "new@64:clip": run.metrics["new@64"]}) for run in runs]
    (table,) = choose_learning_rates(clipped).values()
    assert tied_effective_lengths(table, {16: "exact", 32: "new@32", 64: "new@64"}, 0.9, "clip") == {1e-3: 32, 3e-3: 32}
    with pytest.raises(TypeError, match="cell must be a SuiteCell"):
        tied_effective_lengths({"exact": 1.0}, {16: "exact"}, 0.9)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metrics must hold at least one"):
        tied_effective_lengths(cell, {}, 0.9)


def _text_runs() -> list[RunResult]:
    """Text runs of a table at 16 tokens, two tied rates and two seeds: plain at the training length,
    a workaround past it (non-overlapping windows only), as posenc.train stores them."""
    runs = []
    for lr, shift in ((1e-3, 0.0), (3e-3, 0.5)):
        for seed in (0, 1):
            base = 2.0 + shift + seed / 10  # seed means 2.05 (1e-3) and 2.55 (3e-3)
            runs.append(RunResult(
                config={"task": "text", "scheme": "learned", "position_options": {"init": "bert"}, "lr": lr,
                        "seq_len": 16, "eval_extrapolations": ["clip"]},
                seed=seed, history=[], wall_time_s=0.0,
                metrics={"val_accuracy": 0.5, "bpb@16": base, "bpb_slide@16": base - 0.1, "bpb@32:clip": base + 1,
                         "bpb_new@32:clip": base + 2},
                extras={"bpb_profile@32:clip": [base, base + 2], "bpb_profile@16": [base]}))
    return runs


def test_text_readings_are_read_exactly_as_scored() -> None:
    (cell,) = choose_learning_rates(_text_runs()).values()
    assert cell.tied == (1e-3, 3e-3) and cell.lr == 1e-3
    assert stored_key("bpb_new", 32, train_len=16, strategy="clip") == "bpb_new@32:clip"
    assert stored_key("bpb", 16, train_len=16, strategy="clip") == "bpb@16"  # within the length: as trained
    assert bpb_mean(cell, "bpb", 16, strategy="clip") == pytest.approx(2.05)
    assert bpb_mean(cell, "bpb_new", 32, strategy="clip") == pytest.approx(4.05)
    # readings that were not made are None, never the plain model's value
    assert bpb_mean(cell, "bpb_slide", 32, strategy="clip") is None
    assert bpb_mean(cell, "bpb", 32) is None
    assert tied_bpb_range(cell, "bpb_new", 32, strategy="clip") == pytest.approx((4.05, 4.55))
    assert tied_bpb_range(cell, "bpb_slide", 32, strategy="clip") is None
    assert profile_mean(cell, 32, strategy="clip") == pytest.approx((2.05, 4.05))
    assert profile_mean(cell, 16) == pytest.approx((2.05,)) and profile_mean(cell, 32) is None
    with pytest.raises(ValueError, match="name 'bpb_new' needs length > train_len"):
        bpb_mean(cell, "bpb_new", 16)
    with pytest.raises(ValueError, match="name must be one of"):
        bpb_mean(cell, "perplexity", 16)
    with pytest.raises(TypeError, match="cell must be a SuiteCell"):
        profile_mean({"bpb@16": 2.0}, 16)  # type: ignore[arg-type]
