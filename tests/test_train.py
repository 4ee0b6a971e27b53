"""Tests for posenc.train: determinism, evaluation, fine-tuning, grids, reproducing stored runs.

Reading results back (save/load, select, summaries) is tested in tests/test_results.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from posenc.book import data_path
from posenc.results import RunResult, load_results, save_results
from posenc.tasks import (
    IGNORE_INDEX,
    CopyOffsetTask,
    MarkerRecallTask,
    Task,
    bag_of_tokens_accuracy,
    make_generator,
    make_task,
)
from posenc.train import (
    EVAL_SEED,
    SeenNewSplit,
    TrainConfig,
    evaluate,
    fine_tune,
    new_position_accuracy,
    position_accuracy,
    position_counts,
    random_position_ids,
    reproduce,
    split_seen_new,
    train,
)

TINY = TrainConfig(seq_len=8, steps=12, batch_size=8, d_model=16, n_heads=2, n_layers=1, eval_examples=64, log_every=4)


def test_same_seed_same_metrics_and_weights() -> None:
    config = replace(TINY, scheme="learned")
    model_a, a = train(config)
    model_b, b = train(config)
    assert a.metrics == b.metrics and a.history == b.history
    for pa, pb in zip(model_a.parameters(), model_b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    _, c = train(replace(config, seed=1))
    assert c.metrics != a.metrics


def test_progress_bar_does_not_change_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    _, quiet = train(TINY)
    _, shown = train(TINY, progress=True)
    assert shown.metrics == quiet.metrics
    assert "sinusoidal" in capsys.readouterr().err  # tqdm wrote its bar (named after the scheme) to stderr


def test_deterministic_flag_is_restored() -> None:
    before = torch.are_deterministic_algorithms_enabled()
    train(TINY)
    assert torch.are_deterministic_algorithms_enabled() == before


def test_result_record() -> None:
    model, result = train(replace(TINY, eval_lengths=(8, 12), curve_examples=16))
    assert result.seed == 0 and result.config["scheme"] == "sinusoidal"
    assert set(result.metrics) >= {"accuracy", "accuracy@8", "accuracy@12", "final_loss", "n_parameters"}
    assert result.metrics["accuracy"] == result.metrics["accuracy@8"]
    assert result.metrics["n_parameters"] == sum(p.numel() for p in model.parameters())
    assert [h["step"] for h in result.history] == [4, 8, 12]
    assert all(0.0 <= h["accuracy"] <= 1.0 for h in result.history)
    assert result.wall_time_s > 0
    assert not model.training


def test_learned_table_past_its_end_is_scored_only_with_workarounds() -> None:
    config = replace(TINY, scheme="learned", eval_lengths=(8, 16), eval_extrapolations=("clip", "modular", "interpolate"))
    model, result = train(config)
    assert "accuracy@16" not in result.metrics
    assert {"accuracy@16:clip", "accuracy@16:modular", "accuracy@16:interpolate"} <= set(result.metrics)
    assert "accuracy@8:clip" not in result.metrics  # inside the table nothing needs a workaround
    assert model.position.extrapolation is None  # restored after evaluation
    with pytest.raises(ValueError, match="seq_len=16 exceeds max_len=8"):
        evaluate(model, CopyOffsetTask(), 16, n_examples=4)


def test_evaluate_counts_labelled_positions_only() -> None:
    task = CopyOffsetTask(n_symbols=5, offset=2)

    class Oracle(torch.nn.Module):
        """Predicts the token two places back exactly (position 0 and 1: anything)."""

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            shifted = torch.roll(tokens, 2, dims=1)
            return torch.nn.functional.one_hot(shifted, 5).float()

    assert evaluate(Oracle(), task, 10, n_examples=20, seed=3) == 1.0


def test_position_accuracy_matches_evaluate() -> None:
    model, result = train(replace(TINY, eval_lengths=(8, 10), per_position=True))
    per_position = result.extras["position_accuracy@10"]
    assert len(per_position) == 10 and per_position[:2] == [None, None]  # offset 2: nothing to predict
    labelled = [a for a in per_position if a is not None]
    # every position has the same number of labels, so the mean of the positions is the accuracy
    assert sum(labelled) / len(labelled) == pytest.approx(result.metrics["accuracy@10"])
    assert position_accuracy(model, CopyOffsetTask(), 10, n_examples=64) == per_position


def test_same_seed_same_test_set() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 16))
    task = CopyOffsetTask()
    assert evaluate(model, task, 9, n_examples=50, seed=4) == evaluate(model, task, 9, n_examples=50, seed=4)


def test_a_model_without_positions_cannot_learn_the_task() -> None:
    """Same budget: no positions stays near the bag-of-tokens ceiling; sinusoids learn it."""
    config = TrainConfig(seq_len=12, steps=150, batch_size=32, d_model=32, n_heads=2, n_layers=1, lr=5e-3)
    _, blind = train(replace(config, scheme="none"))
    _, sighted = train(replace(config, scheme="sinusoidal"))
    ceiling = bag_of_tokens_accuracy(CopyOffsetTask(), 12, n_examples=2000)
    assert blind.metrics["accuracy"] < ceiling + 0.05
    assert sighted.metrics["accuracy"] > 0.5


def test_low_data_regime_uses_a_fixed_set() -> None:
    _, small = train(replace(TINY, n_train_examples=4, steps=40))
    _, fresh = train(replace(TINY, steps=40))
    # a fixed set of four sequences is memorised: low training loss, poor test accuracy
    assert small.metrics["final_loss"] < fresh.metrics["final_loss"]


def test_a_trained_run_survives_a_json_round_trip(tmp_path: Path) -> None:
    _, result = train(TINY)
    path = save_results([result], tmp_path / "r.json", meta={"command": "test"})
    loaded, meta = load_results(path)
    assert meta == {"command": "test"}
    assert loaded[0].to_dict() == json.loads(json.dumps(result.to_dict()))
    assert TrainConfig.from_dict(loaded[0].config) == TINY


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match=r"eval_extrapolations\[0\] must be one of"):
        TrainConfig(eval_extrapolations=("wrap",))
    with pytest.raises(ValueError, match=r"unknown TrainConfig field\(s\) \['colour'\]"):
        TrainConfig.from_dict({"colour": 1})
    with pytest.raises(TypeError, match="TrainConfig"):
        train({"scheme": "none"})  # type: ignore[arg-type]


def test_fine_tune_is_deterministic_and_learns() -> None:
    config = replace(TINY, steps=30)
    task = CopyOffsetTask()
    model_a, _ = train(config)
    model_b, _ = train(config)
    losses_a = fine_tune(model_a, task, 10, steps=40, lr=3e-3, seed=5)
    losses_b = fine_tune(model_b, task, 10, steps=40, lr=3e-3, seed=5)
    assert losses_a == losses_b and len(losses_a) == 40
    assert sum(losses_a[-10:]) < sum(losses_a[:10])
    assert not model_a.training
    with pytest.raises(ValueError, match="seq_len"):
        fine_tune(model_a, task, 0, steps=1)


def test_evaluate_checks_its_arguments() -> None:
    model, _ = train(TINY)
    with pytest.raises(ValueError, match="seq_len"):
        evaluate(model, CopyOffsetTask(), 0)
    with pytest.raises(ValueError, match="n_examples"):
        position_accuracy(model, CopyOffsetTask(), 8, n_examples=0)
    with pytest.raises(TypeError, match="stored must be a RunResult"):
        reproduce(TINY)  # type: ignore[arg-type]


def test_stored_ch6_cell_reproduces() -> None:
    """Re-run one stored cell of chapter 6's grid (sinusoidal, seed 0): metrics must match the file.

    Training runs on one torch thread, seeded and deterministic, so the same torch version
    reproduces every metric exactly (a different thread count would change the summation order).
    """
    results, _ = load_results(data_path("ch6_grid.json"))  # a missing committed file fails here
    stored = next(r for r in results if r.config["scheme"] == "sinusoidal" and r.seed == 0)
    _, again, difference = reproduce(stored)
    assert difference == 0.0, again.metrics
    assert [h["step"] for h in again.history] == [h["step"] for h in stored.history]


# --- the new-position metric: score extrapolation on positions never seen in training ---


class _RightBefore(torch.nn.Module):
    """A fake model that reads the task's own labels: right at positions < ``cut``, wrong from ``cut`` on."""

    def __init__(self, task: Task, cut: int) -> None:
        super().__init__()
        self.task, self.cut = task, cut

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        answer = self.task.labels(tokens).clamp(min=0)
        wrong = (answer + 1) % self.task.n_outputs
        right = torch.arange(tokens.shape[1]) < self.cut
        return torch.nn.functional.one_hot(torch.where(right, answer, wrong), self.task.n_outputs).float()


def test_a_model_right_only_on_seen_positions_scores_zero_on_new_ones() -> None:
    """copy_offset, offset 2, trained at T = 8, tested at L = 12: positions 2..7 are the
    6 seen labelled positions of each sequence, 8..11 the 4 new ones, so the usual score
    over all positions is 6 / 10 = 0.6 while the new-position score is 0."""
    task = CopyOffsetTask(n_symbols=5, offset=2)
    model = _RightBefore(task, cut=8)
    assert new_position_accuracy(model, task, 12, train_len=8, n_examples=40) == 0.0
    assert evaluate(model, task, 12, n_examples=40) == 0.6
    split = split_seen_new(position_accuracy(model, task, 12, n_examples=40), 8)
    assert split == SeenNewSplit(seen=1.0, new=0.0, overall=0.6, n_seen=6, n_new=4)
    correct, labelled = position_counts(model, task, 12, n_examples=40)
    assert labelled == [0, 0] + [40] * 10 and correct == [0, 0] + [40] * 6 + [0] * 4
    # the metric looks at the right positions: move the cut and the score follows it
    assert new_position_accuracy(_RightBefore(task, cut=10), task, 12, train_len=8, n_examples=40) == 0.5


def test_a_model_right_everywhere_scores_one() -> None:
    for task in (CopyOffsetTask(n_symbols=5, offset=2), MarkerRecallTask(n_symbols=5)):
        oracle = _RightBefore(task, cut=10**6)
        assert new_position_accuracy(oracle, task, 12, train_len=8, n_examples=40) == 1.0
        split = split_seen_new(position_accuracy(oracle, task, 12, n_examples=40), 8)
        assert (split.seen, split.new, split.overall) == (1.0, 1.0, 1.0)


def test_split_weights_positions_by_their_number_of_labels() -> None:
    """marker_recall labels late positions more often than early ones. Pooled by labels,
    the mixed score of the right-before-T model is (labels before T) / (all labels), counted
    here by hand on the very test sequences; weighting positions equally overstates it."""
    task = MarkerRecallTask(n_symbols=5)
    model = _RightBefore(task, cut=8)
    n = 64
    # the test set: one batch from the evaluation generator
    _, targets = task.sample(n, 12, make_generator(EVAL_SEED))
    is_label = targets != IGNORE_INDEX
    seen_labels, all_labels = int(is_label[:, :8].sum()), int(is_label.sum())
    assert evaluate(model, task, 12, n_examples=n) == seen_labels / all_labels
    correct, labelled = position_counts(model, task, 12, n_examples=n)
    assert labelled == is_label.sum(dim=0).tolist()
    curve = position_accuracy(model, task, 12, n_examples=n)
    weighted = split_seen_new(curve, 8, labelled=labelled)
    assert (weighted.seen, weighted.new) == (1.0, 0.0)
    assert (weighted.n_seen, weighted.n_new) == (seen_labels, all_labels - seen_labels)
    assert weighted.overall == pytest.approx(seen_labels / all_labels, abs=1e-12)
    unweighted = split_seen_new(curve, 8)
    assert unweighted.overall == pytest.approx(6 / 10) and unweighted.overall > weighted.overall + 0.05


def test_split_by_hand() -> None:
    curve = [None, 0.5, 1.0, 0.25, 0.0]
    assert split_seen_new(curve, 3) == SeenNewSplit(seen=0.75, new=0.125, overall=0.4375, n_seen=2, n_new=2)
    # weights 0, 2, 6, 1, 3: seen (1 + 6) / 8, new 0.25 / 4, overall 7.25 / 12
    split = split_seen_new(curve, 3, labelled=[0, 2, 6, 1, 3])
    assert split == SeenNewSplit(seen=7 / 8, new=0.0625, overall=7.25 / 12, n_seen=8, n_new=4)
    # nothing labelled before T: seen is None, overall is the new part
    assert split_seen_new([None, None, 0.5, 1.0], 2) == SeenNewSplit(None, 0.75, 0.75, 0, 2)


def test_new_position_accuracy_is_deterministic_and_matches_the_counts() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 16))
    task = CopyOffsetTask()
    a = new_position_accuracy(model, task, 14, train_len=9, n_examples=50, seed=4)
    b = new_position_accuracy(model, task, 14, train_len=9, n_examples=50, seed=4)
    assert a == b
    correct, labelled = position_counts(model, task, 14, n_examples=50, seed=4)
    assert a == sum(correct[9:]) / sum(labelled[9:])
    assert new_position_accuracy(model, task, 14, train_len=9, n_examples=50, seed=5) != a


def test_new_position_metric_errors() -> None:
    task = CopyOffsetTask(n_symbols=5, offset=2)
    model = _RightBefore(task, cut=8)
    with pytest.raises(ValueError, match=r"length must be > train_len \(8\) so that some positions are new, got length=8"):
        new_position_accuracy(model, task, 8, train_len=8)
    with pytest.raises(ValueError, match="train_len must be a positive integer"):
        new_position_accuracy(model, task, 8, train_len=0)

    class FirstFourOnly(CopyOffsetTask):
        """copy_offset with labels only at positions < 4."""

        def labels(self, tokens: torch.Tensor) -> torch.Tensor:
            targets = super().labels(tokens)
            targets[:, 4:] = IGNORE_INDEX
            return targets

    with pytest.raises(ValueError, match=r"no labelled positions >= train_len \(8\) at length=12"):
        new_position_accuracy(model, FirstFourOnly(5, 2), 12, train_len=8, n_examples=4)
    with pytest.raises(ValueError, match=r"train_len must be < the curve's length \(3\)"):
        split_seen_new([None, 1.0, 1.0], 3)
    with pytest.raises(ValueError, match="labelled has 2 entries but curve has 3"):
        split_seen_new([None, 1.0, 1.0], 1, labelled=[0, 1])
    with pytest.raises(ValueError, match="position 1: curve is 1.0 but labelled is 0"):
        split_seen_new([None, 1.0, 1.0], 1, labelled=[0, 0, 1])
    with pytest.raises(ValueError, match="no labelled positions"):
        split_seen_new([None, None], 1)


# -- fields added for the task suite ----------------------------------------------------------------
def test_later_fields_are_left_out_of_the_dict_at_their_defaults() -> None:
    """Stored grids predate these fields: their configs (and cache keys) must not change."""
    plain = TINY.to_dict()
    for name in ("bos_token", "score_new_positions", "validation_examples", "finetune_steps", "finetune_len",
                 "finetune_lr"):
        assert name not in plain
    assert TrainConfig.from_dict(plain) == TINY
    changed = replace(TINY, bos_token=True, validation_examples=16, finetune_steps=2, finetune_len=12)
    data = changed.to_dict()
    assert (data["bos_token"], data["validation_examples"], data["finetune_len"]) == (True, 16, 12)
    assert "finetune_lr" not in data  # still at its default
    assert TrainConfig.from_dict(json.loads(json.dumps(data))) == changed


def test_suite_metrics_match_the_functions_that_define_them() -> None:
    config = replace(TINY, causal=True, eval_lengths=(12,), score_new_positions=True, validation_examples=32,
                     finetune_steps=3, finetune_len=12, per_position=True)
    model, result = train(config)
    task = CopyOffsetTask()
    m = result.metrics
    assert m["new@12"] == new_position_accuracy(model, task, 12, train_len=8, n_examples=64)
    assert m["accuracy@12"] == evaluate(model, task, 12, n_examples=64)
    assert result.extras["position_accuracy@12"] == position_accuracy(model, task, 12, n_examples=64)
    assert m["val_accuracy"] == evaluate(model, task, 8, n_examples=32, seed=2_024_777)
    assert m["val_accuracy"] != evaluate(model, task, 8, n_examples=32)  # another split than the test set
    assert {"ft_new@12", "ft@8"} <= set(m)
    # fine-tuning worked on a copy: the returned model still scores what the result says
    assert evaluate(model, task, 8, n_examples=64) == m["accuracy"]
    again = train(config)[1]
    assert again.metrics == m


def test_fine_tune_metrics_per_workaround_of_a_learned_table() -> None:
    config = replace(TINY, scheme="learned", causal=True, eval_lengths=(12,), eval_extrapolations=("clip", "modular"),
                     score_new_positions=True, finetune_steps=2, finetune_len=12)
    metrics = train(config)[1].metrics
    assert {"new@12:clip", "new@12:modular", "ft_new@12:clip", "ft_new@12:modular", "ft@8:clip"} <= set(metrics)
    assert "new@12" not in metrics  # the bare table has no row 8 and up


def test_bos_token_reaches_the_model() -> None:
    model, _ = train(replace(TINY, scheme="alibi", bos_token=True))
    assert model.bos_token and model.bos.shape == (16,)
    assert not train(TINY)[0].bos_token


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"finetune_steps": 3}, r"finetune_steps=3 needs finetune_len"),
        ({"finetune_steps": 3, "finetune_len": 8}, r"finetune_len must be > seq_len \(8\), got 8"),
        ({"validation_examples": -1}, "validation_examples must be a non-negative integer"),
        ({"bos_token": 1}, "bos_token must be True or False, got 1"),
        ({"finetune_lr": 0.0}, "finetune_lr must be a finite number > 0, got 0.0"),
    ],
)
def test_suite_field_errors_name_the_field(changes: dict, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        replace(TINY, **changes)


# -- whole-sequence scores, lengths that vary, randomized positions ------------------------------------
def test_exact_match_counts_whole_sequences() -> None:
    config = replace(TINY, causal=True, eval_lengths=(12,), score_new_positions=True, exact_match=True, steps=20)
    model, result = train(config)
    metrics = result.metrics
    assert {"exact", "exact@12", "new_exact@12"} <= set(metrics)
    # a sequence counts only if every labelled position is right: never more often than the token accuracy
    assert 0.0 <= metrics["exact@12"] <= metrics["accuracy@12"] <= 1.0
    # by hand: the same 64 test sequences, counted row by row
    task = make_task(config.task)
    tokens, targets = task.sample(config.eval_examples, 12, make_generator(EVAL_SEED))
    with torch.no_grad():
        predictions = model(tokens).argmax(-1)
    right = (predictions == targets) | (targets == -100)
    assert metrics["exact@12"] == right.all(dim=1).float().mean().item()
    has_new = (targets[:, 8:] != -100).any(dim=1)
    assert metrics["new_exact@12"] == (right[:, 8:].all(dim=1) & has_new).sum().item() / has_new.sum().item()


def test_training_lengths_that_vary_and_their_errors() -> None:
    _, varied = train(replace(TINY, min_seq_len=4, steps=20))
    _, fixed = train(replace(TINY, steps=20))
    assert varied.metrics != fixed.metrics  # other batches: lengths 4..8
    with pytest.raises(ValueError, match="min_seq_len must be <= seq_len"):
        replace(TINY, min_seq_len=9)
    with pytest.raises(ValueError, match="does not go with n_train_examples"):
        replace(TINY, min_seq_len=4, n_train_examples=16)


def test_a_length_curriculum_grows_the_longest_training_length_and_its_errors() -> None:
    from posenc.train import _curriculum_length

    config = replace(TINY, seq_len=64, min_seq_len=16, curriculum_steps=10, steps=20)
    assert [_curriculum_length(config, step) for step in (0, 5, 10, 15)] == [16, 40, 64, 64]
    assert _curriculum_length(replace(config, curriculum_steps=None), 0) == 64
    assert "curriculum_steps" not in replace(TINY, min_seq_len=4).to_dict()  # old cache keys unchanged
    _, grown = train(replace(TINY, min_seq_len=4, curriculum_steps=10, steps=20))
    _, varied = train(replace(TINY, min_seq_len=4, steps=20))
    assert grown.metrics != varied.metrics
    with pytest.raises(ValueError, match="curriculum_steps=5 needs min_seq_len"):
        replace(TINY, curriculum_steps=5)
    with pytest.raises(ValueError, match="curriculum_steps"):
        replace(TINY, min_seq_len=4, curriculum_steps=0)


def test_random_position_ids_are_sorted_distinct_and_in_range() -> None:
    ids = random_position_ids(5, 8, 20, make_generator(0))
    assert ids.shape == (5, 8) and int(ids.min()) >= 0 and int(ids.max()) < 20
    assert bool((ids[:, 1:] > ids[:, :-1]).all())
    assert torch.equal(ids, random_position_ids(5, 8, 20, make_generator(0)))
    with pytest.raises(ValueError, match="length must be <= n_positions"):
        random_position_ids(1, 9, 8, make_generator(0))


def test_randomized_positions_keep_the_tokens_and_reach_far_positions() -> None:
    """The arm reads the same token streams as the run without it, at positions up to random_positions."""
    config = replace(TINY, scheme="learned", causal=True, eval_lengths=(12,), random_positions=40, steps=20)
    model, result = train(config)
    assert model.position.table_len == 40  # the learned table covers every randomized position
    assert "accuracy@12" in result.metrics
    with pytest.raises(ValueError, match="random_positions must be >= the longest input"):
        replace(config, random_positions=10)
    with pytest.raises(ValueError, match="does not go with fine-tuning"):
        replace(config, finetune_steps=5, finetune_len=12)


def test_position_coverage_counts_the_batches_that_reach_each_position() -> None:
    from posenc.train import position_coverage

    # lengths uniform from 4 to the curriculum's longest: step 0 -> {4}, step 1 -> {4, 5, 6}
    config = TrainConfig(seq_len=8, steps=2, min_seq_len=4, curriculum_steps=2)
    assert position_coverage(config, [0, 3, 4, 5, 6, 7]) == pytest.approx([1.0, 1.0, 1 / 3, 1 / 6, 0.0, 0.0])
    fixed = TrainConfig(seq_len=8, steps=2)
    assert position_coverage(fixed, [0, 7, 8]) == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match=r"positions\[0\] must be a non-negative integer"):
        position_coverage(config, [-1])
    with pytest.raises(TypeError, match="config must be a TrainConfig"):
        position_coverage("config", [1])  # type: ignore[arg-type]
