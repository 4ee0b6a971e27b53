"""posenc.book.findings: every declared finding can be evaluated on the runs its grids train.

The stored grids are large; these tests do not read them. They build each grid's runs from
``experiments.configs`` (the configs ``make grids`` trains), give every run the metric names a
real (two-step) training of that config reports, and evaluate every finding on them: a side
that names a scheme, task, field or metric the grid never produces fails here, not in a chapter.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import replace
from functools import cache
from unittest import mock

import pytest

from experiments import configs
from posenc.book.findings import (
    FINDINGS,
    Finding,
    evaluate_finding,
    evaluate_findings,
    finding,
    findings_in,
    prose_name,
    regime_rows,
    verdict_prose,
    verdict_rows,
)
from posenc.perplexity import length_scores
from posenc.results import RunResult
from posenc.robustness import Side
from posenc.train import TrainConfig, train


def _grid_name(file_name: str) -> str:
    assert file_name.endswith("_grid.json"), file_name
    return file_name.removesuffix("_grid.json")


_NAMES: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _metric_names(config: TrainConfig) -> tuple[frozenset[str], frozenset[str]]:
    """The metric names a run of ``config`` reports, and the keys of its history entries, from a
    two-step run on a few sequences."""
    key = json.dumps(config.to_dict(), sort_keys=True)
    if key not in _NAMES:
        _NAMES[key] = _train_names(config)
    return _NAMES[key]


def _train_names(config: TrainConfig) -> tuple[frozenset[str], frozenset[str]]:
    tiny = replace(config, steps=2, eval_examples=8, curve_examples=min(config.curve_examples, 8), log_every=1,
                   validation_examples=min(config.validation_examples, 8), finetune_steps=min(config.finetune_steps, 1),
                   seed=0)
    # bits per byte are named the same whatever the amount of text read: read only a few windows
    short_read = functools.partial(length_scores, n_bytes=2 * max((config.seq_len, *config.eval_lengths)))
    with mock.patch("posenc.train.length_scores", short_read):
        result = train(tiny)[1]
    return frozenset(result.metrics), frozenset(key for entry in result.history for key in entry)


def _signature(config: TrainConfig) -> TrainConfig:
    """A config with the same metric names (seed, rate, a table's initialisation and sizes do not change
    them; other options can: a hierarchy's rows decide the lengths it can be read at)."""
    # (a language model names its own metrics, bits per byte, so the text task stays)
    task = "text" if config.task == "text" else "copy_offset"
    signature = replace(config, seed=0, lr=1e-3, task=task, token_init_std=1.0, n_train_examples=None,
                        position_options=config.position_options if config.scheme != "learned" else {"init": "bert"},
                        bos_token=False)
    if config.seq_len >= 256:  # the realistic regime: a narrow, shallow model on two sequences names the same metrics
        signature = replace(signature, d_model=16, n_heads=1, n_layers=1, batch_size=2)
    return signature


@cache
def _runs(file_name: str) -> tuple[RunResult, ...]:
    """Every run of the grid, with the real metric names and history keys, and made-up values."""
    rng = random.Random(file_name)
    runs = []
    for config, seeds in configs.GRIDS[_grid_name(file_name)]():
        names, logged = _metric_names(_signature(config))
        for seed in range(seeds):
            run_config = replace(config, seed=seed)
            metrics = {name: rng.random() for name in names}
            history = [{key: float(step) if key == "step" else rng.random() for key in sorted(logged)}
                       for step in (config.log_every, 2 * config.log_every)] if logged else []
            runs.append(RunResult(config=run_config.to_dict(), seed=seed, metrics=metrics, history=history,
                                  wall_time_s=0.0))
    return tuple(runs)


@pytest.mark.parametrize("item", FINDINGS, ids=lambda f: f.key)
def test_every_finding_evaluates_on_the_runs_its_grids_train(item: Finding) -> None:
    verdict = evaluate_finding(item, load=_runs)
    assert verdict.n >= len(item.conclusion.tasks)
    sides = [s for s in (item.conclusion.better, item.conclusion.worse) if isinstance(s, Side)]
    assert sides, item.key
    if "anchor" in item.conclusion.over and item.grids == ("suite_grid.json",):
        # The causal suite has both arms: the verdict must have read both.
        assert {r.setting.get("anchor") for r in verdict.results} == {False, True}, item.key


def test_findings_are_filed_by_chapter_and_key() -> None:
    seven = findings_in("07_beyond_trained_length")
    assert seven and all("07_beyond_trained_length" in f.chapters for f in seven)
    assert finding("t5>rope new@32").conclusion.tasks == ("copy_offset", "marker_recall")
    verdicts = evaluate_findings("08_hybrids", load=_runs)
    assert list(verdicts) == [f.key for f in findings_in("08_hybrids")]


def test_unknown_keys_and_chapters_are_named() -> None:
    with pytest.raises(ValueError, match="key.*'no such finding'"):
        finding("no such finding")
    with pytest.raises(ValueError, match="chapter.*'01_why_order_matters'"):
        findings_in("01_why_order_matters")
    with pytest.raises(TypeError, match="item must be a Finding"):
        evaluate_finding(3)  # type: ignore[arg-type]


def test_a_side_the_grid_never_trains_is_an_error() -> None:
    missing = Finding(replace(finding("t5>rope new@32").conclusion, key="x", worse=Side("rope", "new@48")),
                      ("suite_grid.json",), ("07_beyond_trained_length",))
    with pytest.raises(ValueError, match="new@48"):
        evaluate_finding(missing, load=_runs)


def test_prose_names_are_python_names_and_unique() -> None:
    names = [prose_name(f.key) for f in FINDINGS]
    assert all(name.isidentifier() for name in names) and len(set(names)) == len(names)
    assert prose_name("t5>rope new@32") == "t5_over_rope_new_at_32"


def test_verdicts_become_text_values_and_table_rows() -> None:
    verdicts = evaluate_findings("08_hybrids", load=_runs)
    values = verdict_prose(verdicts)
    assert set(values) == {f"{kind}_{prose_name(k)}" for k in verdicts for kind in ("verdict", "kind")}
    assert all(values[f"kind_{prose_name(k)}"] == v.kind for k, v in verdicts.items())
    rows = verdict_rows(verdicts)
    assert [row["claim"] for row in rows] == [v.conclusion.claim for v in verdicts.values()]
    assert all(row["verdict"] in ("robust", "conditional", "contradicted") for row in rows)


def test_labels_are_unique_and_past_the_length_reads_new_positions() -> None:
    from posenc.book.findings import past_the_length

    labels = [item.conclusion.label for item in FINDINGS]
    assert all(labels) and len(set(labels)) == len(labels)  # the explorers offer findings by label
    assert past_the_length(finding("t5>rope new@32")) and past_the_length(finding("modular ft best copy_offset"))
    assert not past_the_length(finding("alibi fails copy_half"))  # accuracy at the training length
    with pytest.raises(TypeError, match="item must be a Finding"):
        past_the_length("t5>rope new@32")  # type: ignore[arg-type]


def test_regime_rows_put_each_claim_beside_itself() -> None:
    verdicts = evaluate_findings("11_rope_scaling", load=_runs)
    headers, rows = regime_rows(verdicts)
    assert headers == ["comparison", "toy", "realistic", "same?"]
    assert len(rows) == len(verdicts) // 2
    toy, real = verdicts["toy ntk>plain 2x"], verdicts["realistic ntk>plain 2x"]
    assert rows[0] == ["NTK-aware > plain, 2x", f"{toy.kind} ({toy.holds_in}/{toy.n})",
                       f"{real.kind} ({real.holds_in}/{real.n})", "yes" if toy.kind == real.kind else "no"]
    with pytest.raises(ValueError, match="claim 'ntk>plain 2x' has no verdict in regime.*realistic"):
        regime_rows({key: v for key, v in verdicts.items() if key.startswith("toy ")})
    with pytest.raises(ValueError, match="the regime of verdict 'other x' must be one of"):
        regime_rows({"other x": toy, **verdicts})
    with pytest.raises(ValueError, match="regimes must hold at least 2"):
        regime_rows(verdicts, regimes=("toy",))


def test_the_partial_rotations_are_named_by_the_labels_of_the_grid_runs() -> None:
    from posenc.book.findings import PARTIAL_LABELS
    from posenc.results import scheme_label

    assert {scheme_label("rope", options) for options in configs.PARTIAL_ROPE} == set(PARTIAL_LABELS)


def test_the_realistic_matrix_reads_alibi_from_its_eight_head_runs() -> None:
    """The realistic side of every ALiBi claim reads the runs with ALiBi's full set of slopes."""
    from posenc.book.findings import MATRIX_RUNS_BY_LABEL

    assert MATRIX_RUNS_BY_LABEL["realistic"]["alibi"] == {"n_heads": configs.REALISTIC_ALIBI_HEADS}
    alibi_claims = [f for f in FINDINGS if f.key.startswith("realistic ") and "alibi" in f.key]
    assert len(alibi_claims) == 5  # learns, holds at 2x and 4x, beats the sinusoid, beats RoPE
    for item in alibi_claims:
        sides = [s for s in (item.conclusion.better, item.conclusion.worse) if isinstance(s, Side) and s.label == "alibi"]
        assert sides and all(s.where["n_heads"] == configs.REALISTIC_ALIBI_HEADS for s in sides), item.key
        verdict = evaluate_finding(item, load=_runs)
        assert verdict.n >= len(item.conclusion.tasks), item.key
