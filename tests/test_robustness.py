"""posenc.robustness: verdicts on hand-made grids whose answer is known."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest

from posenc.results import RunResult
from posenc.robustness import (
    Conclusion,
    Side,
    and_list,
    bracketing,
    compare,
    evaluate,
    is_bimodal,
    tied_rates,
    map_cell,
    map_rows,
    side_values,
    verdict_phrase,
    where_it_holds,
)

RATES = (1e-3, 3e-3, 1e-2)
SEEDS = (0, 1, 2, 3, 4)


def grid(score: Callable[[str, bool, float, int], dict[str, float]], *, schemes: Sequence[str] = ("rope", "none"),
         tasks: Sequence[str] = ("copy_offset",), anchors: Sequence[bool] = (False, True),
         rates: Sequence[float] = RATES, seeds: Sequence[int] = SEEDS) -> list[RunResult]:
    """Runs of every scheme x task x anchor x rate x seed; ``score(scheme, anchor, lr, seed)`` gives the metrics."""
    runs = []
    for task in tasks:
        for scheme in schemes:
            for anchor in anchors:
                for lr in rates:
                    for seed in seeds:
                        config = {"task": task, "scheme": scheme, "position_options": {}, "lr": lr,
                                  "bos_token": anchor, "combine": "add"}
                        runs.append(RunResult(config=config, seed=seed, metrics=score(scheme, anchor, lr, seed),
                                              history=[], wall_time_s=0.0, extras={}))
    return runs


def noise(seed: int) -> float:
    return 0.004 * (seed - 2)  # small, symmetric, the same for every cell


def val_peak_at(best: float) -> Callable[[float], float]:
    """Validation accuracy that falls off with the distance (in decades) from ``best``."""
    return lambda lr: 0.95 - 0.1 * abs(math.log10(lr / best))


ROPE_BEATS_NONE = Conclusion("rope>none", "RoPE scores more new positions than no encoding",
                             Side("rope", "new@32"), Side("none", "new@32"), tasks=("copy_offset",))


def test_robust_when_it_holds_in_every_setting() -> None:
    peak = val_peak_at(3e-3)

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        return {"val_accuracy": peak(lr) + noise(seed), "new@32": (0.8 if scheme == "rope" else 0.4) + noise(seed)}

    verdict = evaluate(ROPE_BEATS_NONE, grid(score))
    assert verdict.kind == "robust" and verdict.holds_in == verdict.n == 2  # two anchors, one best rate each
    assert {r.setting["anchor"] for r in verdict.results} == {False, True}
    assert verdict_phrase(verdict) == "robust: holds in all 2 settings"
    assert all(not r.comparison.paired for r in verdict.results)  # two schemes: different models


def test_an_anchor_that_reverses_the_comparison_makes_it_conditional_and_says_so() -> None:
    """The reversal property: holds without the anchor, reversed with it -> 'fails with an anchor'."""
    peak = val_peak_at(3e-3)

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        rope, none = (0.8, 0.4) if not anchor else (0.5, 0.9)  # the anchor lets NoPE count from it
        return {"val_accuracy": peak(lr) + noise(seed), "new@32": (rope if scheme == "rope" else none) + noise(seed)}

    verdict = evaluate(ROPE_BEATS_NONE, grid(score))
    assert verdict.kind == "conditional" and verdict.holds_in == 1 and verdict.reversed_in == 1
    assert verdict.where_it_fails == "fails with an anchor"
    assert verdict_phrase(verdict) == "conditional: holds in 1 of 2 settings; fails with an anchor"
    # without the anchor dimension the same data give a robust verdict: the anchor is what changes it
    no_anchor = Conclusion("rope>none", "", Side("rope", "new@32"), Side("none", "new@32"), tasks=("copy_offset",),
                           over=("lr",))
    runs = [r for r in grid(score) if not r.config["bos_token"]]
    assert evaluate(no_anchor, runs).kind == "robust"


def test_contradicted_when_it_holds_nowhere() -> None:
    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        return {"val_accuracy": val_peak_at(1e-3)(lr) + noise(seed),
                "new@32": (0.3 if scheme == "rope" else 0.7) + noise(seed)}

    verdict = evaluate(ROPE_BEATS_NONE, grid(score))
    assert verdict.kind == "contradicted" and verdict.reversed_in == verdict.n == 2
    assert verdict_phrase(verdict) == "contradicted: holds in none of 2 settings (reversed in 2)"


def test_a_verdict_within_the_seeds_spread_says_so() -> None:
    """RoPE ahead at every setting, but by less than the seeds disagree: nothing holds, nothing is reversed."""
    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        spread = 0.3 * (1 if seed % 2 else -1)
        return {"val_accuracy": val_peak_at(1e-3)(lr) + noise(seed),
                "new@32": 0.5 + (0.02 if scheme == "rope" else 0.0) + (spread if scheme == "rope" else 0.0)}

    verdict = evaluate(ROPE_BEATS_NONE, grid(score))
    assert verdict.kind == "contradicted" and verdict.reversed_in == 0
    assert verdict_phrase(verdict) == ("contradicted: holds in none of 2 settings (unclear in every one: the difference "
                                       "is within the seeds' spread)")


def test_tied_rates_are_all_settings_and_a_failure_at_one_is_named() -> None:
    """Validation cannot choose between 1e-3 and 3e-3 for RoPE; at 1e-3 it loses: conditional, naming the rate."""

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        val = 1.0 if lr < 1e-2 else 0.9  # 1e-3 and 3e-3 tie at the top
        rope = 0.3 if lr == 1e-3 else 0.8
        return {"val_accuracy": val, "new@32": (rope if scheme == "rope" else 0.5) + noise(seed)}

    runs = grid(score, anchors=(True,))
    assert tied_rates({lr: [r for r in runs if r.config["lr"] == lr and r.config["scheme"] == "rope"]
                       for lr in RATES}) == (1e-3, 3e-3)
    verdict = evaluate(ROPE_BEATS_NONE, runs)
    # RoPE at each of its two tied rates x NoPE at each of its two tied rates
    assert verdict.n == 4 and verdict.holds_in == 2 and verdict.kind == "conditional"
    assert verdict.where_it_fails == "fails with rope at learning rate 1e-3"


def test_bracketing_rule() -> None:
    def cell(val: Callable[[float], float], rates: Sequence[float] = RATES) -> dict[float, list[RunResult]]:
        runs = grid(lambda s, a, lr, seed: {"val_accuracy": val(lr) + noise(seed)}, schemes=("rope",),
                    anchors=(False,), rates=rates)
        return {lr: [r for r in runs if r.config["lr"] == lr] for lr in rates}

    inside = bracketing(cell(val_peak_at(3e-3)))
    assert inside.bracketed and inside.edge is None and inside.tied == (3e-3,) and inside.separates
    edge = bracketing(cell(val_peak_at(1e-2)))  # the best rate is the largest tried: extend the sweep
    assert not edge.bracketed and edge.edge == "high" and edge.tied == (1e-2,)
    low = bracketing(cell(val_peak_at(1e-3)))
    assert not low.bracketed and low.edge == "low"
    flat = bracketing(cell(lambda lr: 1.0))  # every rate solves validation: it cannot separate them
    assert flat.tied == RATES and not flat.separates and flat.bracketed


def test_paired_reading_of_one_model_and_its_errors() -> None:
    """Two metrics of the same runs are compared seed by seed."""
    conclusion = Conclusion("clip>rescale", "", Side("learned (bert)", "new@32", "clip"),
                            Side("learned (bert)", "new@32", "interpolate"), tasks=("copy_offset",))

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        # large seed-to-seed spread, but clip beats rescale by 0.05 on every seed
        base = 0.2 + 0.1 * seed
        return {"val_accuracy": val_peak_at(3e-3)(lr), "new@32:clip": base + 0.05, "new@32:interpolate": base}

    verdict = evaluate(conclusion, grid(score, schemes=("learned",)))
    assert verdict.kind == "robust" and all(r.comparison.paired for r in verdict.results)
    assert all(r.setting.keys() == {"task", "anchor", "lr"} for r in verdict.results)
    # read independently, the same numbers would be unclear: the spread hides the gap
    independent = compare({s: 0.25 + 0.1 * s for s in SEEDS}, {s: 0.2 + 0.1 * s for s in SEEDS}, paired=False)
    assert independent.status == "unclear"
    with pytest.raises(ValueError, match="same seeds"):
        compare({0: 1.0, 1: 1.0}, {0: 0.5, 2: 0.5}, paired=True)


def test_bimodal_cells_are_compared_by_solved_seeds_and_unimodal_ones_are_not() -> None:
    assert is_bimodal([1.0, 1.0, 0.98, 0.2, 0.25])
    assert not is_bimodal([0.88, 0.91, 0.93])  # straddles the line: noise, not two outcomes
    assert not is_bimodal([1.0, 1.0, 0.99])
    result = compare({0: 1.0, 1: 1.0, 2: 0.2}, {0: 0.5, 1: 0.5, 2: 0.5}, paired=False)
    assert result.bimodal and result.status == "holds" and result.difference == pytest.approx(2 / 3)
    tie = compare({0: 1.0, 1: 0.2}, {0: 0.2, 1: 1.0}, paired=False)
    assert tie.bimodal and tie.status == "unclear"


def test_against_a_level() -> None:
    conclusion = Conclusion("alibi solves", "", Side("alibi", "accuracy"), 0.9, tasks=("copy_half",),
                            over=("anchor",))

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        return {"accuracy": (0.99 if anchor else 0.6) + noise(seed)}

    verdict = evaluate(conclusion, grid(score, schemes=("alibi",), tasks=("copy_half",), rates=(3e-3,)))
    assert verdict.kind == "conditional" and verdict.where_it_fails == "fails without an anchor"


def test_errors_name_what_is_missing() -> None:
    runs = grid(lambda s, a, lr, seed: {"val_accuracy": 1.0, "new@32": 0.5}, schemes=("rope",))
    with pytest.raises(ValueError, match="no runs of none on task 'copy_offset' without an anchor"):
        evaluate(ROPE_BEATS_NONE, runs)
    with pytest.raises(ValueError, match="has no metric 'new@64'"):
        evaluate(Conclusion("x", "", Side("rope", "new@64"), 0.5, tasks=("copy_offset",)), runs)
    with pytest.raises(ValueError, match="tasks must name at least one task"):
        Conclusion("x", "", Side("rope", "new@32"), 0.5, tasks=())
    with pytest.raises(ValueError, match="over entry must be one of"):
        Conclusion("x", "", Side("rope", "new@32"), 0.5, tasks=("copy_offset",), over=("seed",))


def test_a_level_on_either_side_and_the_close_relation() -> None:
    fails = Conclusion("alibi fails", "ALiBi does not solve copy-half", 0.9, Side("alibi", "accuracy"),
                       tasks=("copy_half",), over=("anchor",))

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        return {"accuracy": (0.99 if anchor else 0.6) + noise(seed)}

    runs = grid(score, schemes=("alibi",), tasks=("copy_half",), rates=(3e-3,))
    verdict = evaluate(fails, runs)
    assert verdict.kind == "conditional" and verdict.where_it_fails == "fails with an anchor"
    close = Conclusion("same", "", Side("alibi", "accuracy", where={"bos_token": True}),
                       Side("alibi", "accuracy", where={"bos_token": True}), tasks=("copy_half",), margin=0.02,
                       relation="close", over=())
    assert evaluate(close, runs).kind == "robust"  # a side against itself: difference 0
    assert compare({0: 0.5, 1: 0.52}, {0: 0.6, 1: 0.61}, paired=True, margin=0.02, relation="close").status == "reversed"
    with pytest.raises(ValueError, match="needs a margin"):
        Conclusion("x", "", Side("a", "m"), Side("b", "m"), tasks=("t",), relation="close")
    with pytest.raises(ValueError, match="cannot both be levels"):
        Conclusion("x", "", 0.5, 0.9, tasks=("t",))


def test_failures_at_several_rates_of_one_side_are_named_together_and_other_patterns_are_counted() -> None:
    """T5 beats RoPE only where RoPE is trained at a high rate: the phrase names RoPE's failing rates."""
    t5_beats_rope = Conclusion("t5>rope", "RoPE falls behind T5", Side("t5_bias", "new@32"), Side("rope", "new@32"),
                               tasks=("copy_offset",), over=("lr",))

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        rope = 0.95 if lr < 1e-2 else 0.6
        return {"val_accuracy": 1.0, "new@32": (rope if scheme == "rope" else 0.8) + noise(seed)}

    verdict = evaluate(t5_beats_rope, grid(score, schemes=("rope", "t5_bias"), anchors=(False,)))
    assert verdict.n == 9 and verdict.holds_in == 3
    assert verdict.where_it_fails == "fails with rope at learning rate 1e-3 or 3e-3"

    def tangled(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        # T5 loses exactly when the two rates differ: no single side's rate separates it.
        base = 0.6 if scheme == "rope" else 0.8
        return {"val_accuracy": 1.0, "new@32": base + noise(seed)}

    runs = grid(tangled, schemes=("rope", "t5_bias"), anchors=(False,))
    for run in runs:
        if run.config["scheme"] == "rope":
            run.metrics["new@32"] = 0.9 + noise(run.seed) if run.config["lr"] != 1e-3 else 0.6 + noise(run.seed)
        elif run.config["lr"] != 1e-3:
            run.metrics["new@32"] = 0.95 + noise(run.seed)
    verdict = evaluate(t5_beats_rope, runs)
    assert verdict.where_it_fails == ("fails with t5_bias at learning rate 1e-3, with rope at learning rate 3e-3 (reversed); "
                                      "with t5_bias at learning rate 1e-3, with rope at learning rate 1e-2 (reversed)")


def test_where_it_holds_names_each_task_and_anchor_once() -> None:
    """Two tasks x two anchors: robust on one task, reversed by the anchor on the other, mixed over rates."""

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        rope = 0.8 if (not anchor or lr != 1e-3) else 0.2
        return {"val_accuracy": 1.0, "new@32": (rope if scheme == "rope" else 0.5) + noise(seed)}

    def second_task(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        rope = 0.8 if not anchor else 0.2
        return {"val_accuracy": 1.0, "new@32": (rope if scheme == "rope" else 0.5) + noise(seed)}

    runs = grid(score, rates=(1e-3, 3e-3)) + grid(second_task, tasks=("marker_recall",), rates=(1e-3, 3e-3))
    both = Conclusion("rope>none", "", Side("rope", "new@32"), Side("none", "new@32"),
                      tasks=("copy_offset", "marker_recall"))
    verdict = evaluate(both, runs)
    assert verdict.kind == "conditional"
    assert where_it_holds(verdict) == (
        "in every setting on copy-offset without an anchor and on marker-recall without an anchor; "
        "in 2 of 4 on copy-offset with an anchor; in none on marker-recall with an anchor")
    robust = evaluate(ROPE_BEATS_NONE, [r for r in runs if not r.config["bos_token"]])
    assert robust.kind == "robust" and where_it_holds(robust) == "in every setting"
    with pytest.raises(TypeError, match="verdict"):
        where_it_holds("robust")  # type: ignore[arg-type]


def test_the_map_as_a_table_names_each_group_with_a_symbol() -> None:
    """Robust on one task; reversed by the anchor on another; mixed over rates: the table shows each."""

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        rope = 0.8 if (not anchor or lr != 1e-3) else 0.2
        return {"val_accuracy": 1.0, "new@32": (rope if scheme == "rope" else 0.5) + noise(seed)}

    def second_task(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        return {"val_accuracy": 1.0, "new@32": ((0.8 if not anchor else 0.2) if scheme == "rope" else 0.5) + noise(seed)}

    runs = grid(score, rates=(1e-3, 3e-3)) + grid(second_task, tasks=("marker_recall",), rates=(1e-3, 3e-3))
    content = Conclusion("rope>none mr", "RoPE beats no encoding on the content lookup", Side("rope", "new@32"),
                         Side("none", "new@32"), tasks=("marker_recall",), label="RoPE > NoPE, marker recall")
    headers, rows = map_rows([evaluate(ROPE_BEATS_NONE, runs), evaluate(content, runs)])
    assert headers == ["conclusion", "verdict", "copy-offset, no anchor", "copy-offset, anchor",
                       "marker-recall, no anchor", "marker-recall, anchor"]
    assert rows == [["RoPE scores more new positions than no encoding", "conditional", "\u2713", "2/4", "", ""],
                    ["RoPE > NoPE, marker recall", "conditional", "", "", "\u2713", "\u21ba"]]
    assert map_cell([]) == ""
    with pytest.raises(TypeError, match="verdicts must be a non-empty sequence"):
        map_rows([])
    with pytest.raises(TypeError, match=r"results\[0\] must be"):
        map_cell(["holds"])  # type: ignore[list-item]


def test_a_strategy_the_runs_were_not_read_with_is_an_error_not_the_plain_metric() -> None:
    def run(seed: int, **config: object) -> RunResult:
        return RunResult(config={"task": "copy_offset", "scheme": "rope", "position_options": {}, "lr": 1e-3,
                                 "seed": seed, **config}, seed=seed,
                         metrics={"accuracy": 0.9, "new@32": 0.5, "new@32:yarn": 0.7}, history=[], wall_time_s=1.0)

    read = [run(seed, rope_scalings=["yarn", "yarn_rotations"]) for seed in (0, 1)]
    assert side_values(read, Side("rope", "new@32", "yarn")) == {0: 0.7, 1: 0.7}
    # listed but not scored at this metric (here: the training length): the plain score is the strategy's
    assert side_values(read, Side("rope", "accuracy", "yarn")) == {0: 0.9, 1: 0.9}
    assert side_values(read, Side("rope", "new@32", "yarn_rotations")) == {0: 0.5, 1: 0.5}
    older = [run(seed, rope_scalings=["yarn"]) for seed in (0, 1)]  # a grid made before the paper's ramp
    with pytest.raises(ValueError, match=r"run rope \(seed 0\) was not read with strategy 'yarn_rotations' \(its "
                                         r"config lists \['yarn'\]\)"):
        side_values(older, Side("rope", "new@32", "yarn_rotations"))


def test_and_list_reads_as_prose() -> None:
    assert [and_list(items) for items in ((), ("a",), ("a", "b"), ("a", "b", "c"))] == ["none", "a", "a and b",
                                                                                         "a, b and c"]
    assert and_list([], empty="no scheme") == "no scheme"
    with pytest.raises(TypeError, match="items"):
        and_list("ab")
