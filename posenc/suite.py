"""Reading the task-suite grid: a fair learning rate per scheme, seeds as data, new positions only.

The suite grid (``book/data/suite_grid.json``, made by ``make grids``) trains every
scheme on three tasks (:mod:`posenc.tasks`: a local relative rule, a long-range content
task, an absolute-position task) with three learning rates and five seeds each, the same
budget for all. This module turns it into what the chapters report:

* :func:`choose_learning_rates`: per task and scheme, the learning rate with the best
  mean *validation* accuracy (a separate split at the training length, never the test
  numbers), as a :class:`SuiteCell` holding the chosen runs.
* :func:`outcome`: the seeds of one cell as data: mean, sample std, every value, and
  "k of n seeds solved" (``>= SOLVED``), because outcomes are often bimodal.
* :func:`suite_variants`: a learned table appears once per workaround (clip, modular,
  per-input rescale), every other scheme once.
* :func:`tied_rows`, :func:`learning_rate_rows`, :func:`arm_table`: HTML-table rows.
* :func:`tied_effective_lengths`: RULER's effective length of a cell at each tied rate.
* Text runs (language models, :mod:`posenc.perplexity`): :func:`bpb_mean`,
  :func:`tied_bpb_range` and :func:`profile_mean` read bits per byte exactly as a cell was
  scored: a variant (a workaround, a scaling) only past the training length, within which the
  model reads as trained, and a reading that was not made (the sliding windows of a variant, a
  table's plain read past its end) as ``None``, never as the plain model's value.

Its figures (the seed and learning-curve explorers) are :mod:`posenc.suite_plots`.

Metric keys (see ``posenc.train.TrainConfig``): ``"accuracy"`` (training length),
``"new@L"`` (positions ``>= seq_len`` of inputs of ``L`` tokens, never seen in
training), ``"accuracy@L"`` (all positions, the mixed score), ``"ft_new@L"`` (new
positions after a short fine-tune at ``L``), each with ``":strategy"`` for a learned
table's workaround.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from posenc.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int_sequence,
    check_mapping,
    check_nonnegative_int,
    check_positive_int,
    check_real,
    check_reals,
    check_text,
    check_text_sequence,
)
from posenc.long_context import effective_length
from posenc.perplexity import READINGS
from posenc.results import RunResult, Series, check_results, config_value, curve, extrapolation_variants, run_label
from posenc.robustness import is_bimodal, rate_text, tied_rates
from posenc.rope_scaling import SETUP_NAMES

__all__ = [
    "SOLVED",
    "ARMS",
    "WORKAROUND_NAMES",
    "SuiteCell",
    "Outcome",
    "choose_learning_rates",
    "outcome",
    "outcome_text",
    "workaround_label",
    "suite_variants",
    "variant_values",
    "learning_rate_spread",
    "tied_range",
    "new_position_series",
    "tied_rows",
    "arm_ranges",
    "ranges_by",
    "ranking_text",
    "reversals",
    "arm_table",
    "range_text",
    "scaling_rows",
    "stretch_rows",
    "kept_text",
    "learning_rate_rows",
    "renamed_cells",
    "tied_effective_lengths",
    "stored_key",
    "bpb_mean",
    "tied_bpb_range",
    "profile_mean",
]

#: Accuracy at which a seed counts as having solved a task (for "k of n seeds").
SOLVED = 0.9
#: How the book names a learned table's workarounds: posenc's ``"interpolate"`` rescales
#: each input by its own length (``p * (table_len - 1) / (L - 1)``), which is not Chen et
#: al.'s (2023) position interpolation with one fixed factor, so it gets its own name.
WORKAROUND_NAMES: dict[str, str] = {"clip": "clip", "modular": "modular", "interpolate": "per-input rescale"}


@dataclass(frozen=True)
class SuiteCell:
    """One task and scheme of the suite, at the learning rate chosen for it.

    Attributes:
        task: the task name (e.g. ``"marker_recall"``).
        label: the scheme's label (:func:`posenc.results.run_label`).
        lr: the chosen learning rate.
        runs: the runs (one per seed) at that learning rate.
        validation: learning rate -> mean validation accuracy over its seeds.
        by_lr: learning rate -> its runs (every learning rate tried, for sensitivity checks).
        tied: the learning rates validation cannot tell from the best one
            (:func:`posenc.robustness.tied_rates`), smallest first; ``lr`` is one of them.
    """

    task: str
    label: str
    lr: float
    runs: tuple[RunResult, ...]
    validation: Mapping[float, float]
    by_lr: Mapping[float, tuple[RunResult, ...]]
    tied: tuple[float, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """The seeds of one cell for one metric.

    Attributes:
        values: one number per seed, in seed order.
        mean, std: mean and sample standard deviation (0 for one seed).
        solved: how many values are ``>= threshold``; n: how many values.
        threshold: the "solved" level.
    """

    values: tuple[float, ...]
    mean: float
    std: float
    solved: int
    n: int
    threshold: float


def choose_learning_rates(
    results: Sequence[RunResult], *, metric: str = "val_accuracy", anchor: bool | None = None
) -> dict[tuple[str, str], SuiteCell]:
    """Per task and scheme, the learning rate with the highest mean ``metric`` over seeds.

    Ties (several learning rates solve the validation split perfectly, which is common)
    go to the lower mean final training loss, then to the smaller learning rate. Only
    in-distribution signals at the training length decide, so the test numbers reported
    later, and every score past the training length, played no part.

    Args:
        results: runs of the suite grid (every cell with several learning rates and seeds).
        metric: the selection metric; every run must have it.
        anchor: keep only the runs with (``True``) or without (``False``) an anchor token
            (config ``bos_token``); ``None`` if the runs have one kind only.

    Returns:
        ``(task, label) -> SuiteCell``, in the grid's order.

    Raises:
        ValueError: a run lacks ``metric``; the learning rates of a cell were run with
            different numbers of seeds (the comparison would not be fair); or the runs mix
            anchored and unanchored models and ``anchor`` does not say which to read.
    """
    results = check_results("results", results)
    check_text("metric", metric, empty=False)
    if anchor is not None:
        check_bool("anchor", anchor)
    kinds = {bool(r.config.get("bos_token", False)) for r in results}
    if anchor is None and len(kinds) > 1:
        raise ValueError("results mix runs with and without an anchor token: pass anchor=True or anchor=False "
                         "(pooling them would average two different models)")
    if anchor is not None:
        results = [r for r in results if bool(r.config.get("bos_token", False)) == anchor]
        if not results:
            raise ValueError(f"no run {'with' if anchor else 'without'} an anchor token")
    groups: dict[tuple[str, str], dict[float, list[RunResult]]] = {}
    for result in results:
        if metric not in result.metrics:
            raise ValueError(f"run {run_label(result)} (seed {result.seed}) lacks metric {metric!r}; "
                             f"it has {sorted(result.metrics)}")
        key = (str(result.config["task"]), run_label(result))
        groups.setdefault(key, {}).setdefault(float(result.config["lr"]), []).append(result)
    cells: dict[tuple[str, str], SuiteCell] = {}
    for (task, label), by_lr in groups.items():
        sizes = {lr: len(runs) for lr, runs in by_lr.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"{task}/{label}: learning rates have different numbers of seeds {sizes}")
        ordered = dict(sorted(by_lr.items()))
        validation = {lr: statistics.fmean(r.metrics[metric] for r in runs) for lr, runs in ordered.items()}
        loss = {lr: statistics.fmean(r.metrics.get("final_loss", 0.0) for r in runs) for lr, runs in ordered.items()}
        best = max(validation, key=lambda lr: (validation[lr], -loss[lr], -lr))
        cells[task, label] = SuiteCell(task, label, best, tuple(by_lr[best]), validation,
                                       {lr: tuple(runs) for lr, runs in ordered.items()},
                                       tied_rates(ordered, metric=metric))
    return cells


def outcome(values: Sequence[float], threshold: float = SOLVED) -> Outcome:
    """Mean, sample std and "k of n solved" of one number per seed.

    Raises:
        ValueError: no values, or ``threshold`` outside ``(0, 1]``.
    """
    if isinstance(values, str | bytes):
        raise TypeError(f"values must be a sequence of numbers (one per seed), got the string {values!r}")
    checked = check_reals("values", values)
    if checked.ndim != 1:
        raise ValueError(f"values must be 1-D (one number per seed), got shape {tuple(checked.shape)}")
    values = tuple(float(v) for v in checked)
    if not values:
        raise ValueError("values is empty: pass one number per seed")
    threshold = check_real("threshold", threshold, low=0.0, low_open=True, high=1.0, what="an accuracy")
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    solved = sum(v >= threshold for v in values)
    return Outcome(values, statistics.fmean(values), std, solved, len(values), threshold)


def outcome_text(result: Outcome, *, digits: int = 3) -> str:
    """``"0.931 ± 0.041"``: mean ± std over the seeds; where the seeds split into solved and far
    below (:func:`posenc.robustness.is_bimodal`), also how many solved it,
    ``"0.794 ± 0.389 (4 of 5 ≥ 0.9)"``. A cut through a unimodal cell would split noise, so it
    is not shown there."""
    check_instance("result", result, Outcome, what="an Outcome (outcome(...))")
    digits = check_nonnegative_int("digits", digits)
    text = f"{result.mean:.{digits}f}\u00a0±\u00a0{result.std:.{digits}f}"
    if is_bimodal(result.values, result.threshold):
        text += f" ({result.solved}\u00a0of\u00a0{result.n}\u00a0≥\u00a0{result.threshold:g})"
    return text


def workaround_label(label: str) -> str:
    """A variant label with its workaround under the book's name: ``"learned (bert) + interpolate"``
    becomes ``"learned (bert) + per-input rescale"``; other labels are returned unchanged."""
    scheme, separator, strategy = check_text("label", label).partition(" + ")
    return f"{scheme} + {WORKAROUND_NAMES.get(strategy, strategy)}" if separator else label


def suite_variants(cell: SuiteCell) -> dict[str, str | None]:
    """The ways a cell is read past the training length: ``display label -> workaround``.

    A learned table scored with workarounds gives ``"learned (bert) + clip"`` etc. (the
    workaround under its :data:`WORKAROUND_NAMES` name). RoPE scored with scaling methods
    (``TrainConfig.rope_scalings``) gives its plain label (``None``) and then
    ``"rope + YaRN"`` etc. (:data:`posenc.rope_scaling.SETUP_NAMES`). Any other scheme gives
    its label and ``None``.
    """
    _check_cell(cell)
    scalings = list(dict.fromkeys(m for r in cell.runs for m in r.config.get("rope_scalings", ())))
    if scalings:
        return {cell.label: None, **{f"{cell.label} + {SETUP_NAMES[m]}": m for m in scalings}}
    strategies = list(dict.fromkeys(s for r in cell.runs for s in r.config.get("eval_extrapolations", ())))
    if not strategies:
        return {cell.label: None}
    return {f"{cell.label} + {WORKAROUND_NAMES.get(s, s)}": s for s in strategies}


def variant_values(cell: SuiteCell, metric: str, strategy: str | None = None) -> list[float]:
    """``metric`` of every run of ``cell``, read with ``strategy`` where the runs hold ``metric:strategy``.

    Raises:
        ValueError: a run has neither key.
    """
    _check_metric_strategy(cell, metric, strategy)
    values = []
    for result in cell.runs:
        key = f"{metric}:{strategy}" if strategy is not None and f"{metric}:{strategy}" in result.metrics else metric
        if key not in result.metrics:
            raise ValueError(f"{cell.task}/{cell.label} seed {result.seed} has no metric {key!r}")
        values.append(result.metrics[key])
    return values


def tied_range(cell: SuiteCell, metric: str, strategy: str | None = None) -> tuple[float, float]:
    """The lowest and highest mean ``metric`` over the cell's tied learning rates: what the
    choice among rates that validation cannot separate leaves open."""
    _check_metric_strategy(cell, metric, strategy)
    means = [statistics.fmean(variant_values(replace(cell, runs=cell.by_lr[lr]), metric, strategy))
             for lr in cell.tied or (cell.lr,)]
    return min(means), max(means)


def learning_rate_spread(cell: SuiteCell, metric: str, strategy: str | None = None) -> dict[float, float]:
    """Mean ``metric`` over seeds at *every* learning rate tried: how much the choice matters.

    Returns:
        ``lr -> mean``, smallest learning rate first.
    """
    _check_metric_strategy(cell, metric, strategy)
    return {lr: statistics.fmean(variant_values(replace(cell, runs=runs), metric, strategy))
            for lr, runs in cell.by_lr.items()}


def new_position_series(
    results: Sequence[RunResult], lengths: Sequence[int], *, strategies: Sequence[str] | None = None
) -> dict[str, Series]:
    """New-position accuracy against test length, from stored per-position curves.

    For runs stored without ``"new@L"`` metrics but with ``per_position=True`` (chapter
    7's grid): each run's curve at length ``L`` is split at its training length
    (:func:`posenc.train.split_seen_new`, every labelled position weighing 1, exact for
    tasks that label every position equally often, such as ``copy_offset``).

    Returns:
        ``label -> (lengths, means, stds)`` over seeds, one entry per variant of
        :func:`posenc.results.extrapolation_variants` (``"learned (bert) + clip"``, ...).

    Raises:
        ValueError: a length is not longer than the training length, the runs' task labels
            positions unequally (``marker_recall``: use its ``"new@L"`` metrics), or a
            curve is missing.
    """
    from posenc.train import split_seen_new

    results = check_results("results", results, allow_empty=False)
    lengths = check_int_sequence("lengths", lengths, min_len=1)
    tasks = {r.config.get("task") for r in results}
    if "marker_recall" in tasks:
        raise ValueError("marker_recall labels positions unequally often: read its 'new@L' metrics instead")
    train_lengths = {int(r.config["seq_len"]) for r in results}
    if len(train_lengths) != 1:
        raise ValueError(f"results must share one training length, got {sorted(train_lengths)}")
    train_len = train_lengths.pop()
    for length in lengths:
        if length <= train_len:
            raise ValueError(f"lengths must be > the training length {train_len}, got {length}")
    series: dict[str, Series] = {}
    for label, (runs, strategy) in extrapolation_variants(results, strategies).items():
        means, stds = [], []
        for length in lengths:
            values = []
            for run in runs:
                key = f"position_accuracy@{length}"
                if strategy is not None and f"{key}:{strategy}" in run.extras:
                    key = f"{key}:{strategy}"
                if key not in run.extras:
                    raise ValueError(f"{label} seed {run.seed} has no extras[{key!r}] (train with per_position=True; "
                                     "past a learned table, name its workaround in strategies)")
                new = split_seen_new(run.extras[key], train_len).new
                if new is None:
                    raise ValueError(f"{label} at length {length}: no labelled position is new")
                values.append(new)
            means.append(statistics.fmean(values))
            stds.append(statistics.stdev(values) if len(values) > 1 else 0.0)
        series[label] = (list(lengths), means, stds)
    return series


def scaling_rows(
    cells_by_length: Mapping[int, Mapping[tuple[str, str], SuiteCell]], *, task: str, digits: int = 3
) -> tuple[list[str], list[list[str]]]:
    """Chapter 11's table for one task: RoPE read with each scaling method, zero-shot and fine-tuned.

    Args:
        cells_by_length: ``L -> cells`` (:func:`choose_learning_rates`) of the runs fine-tuned at
            ``L`` tokens; every run is also scored zero-shot at ``L``.
        task: the task.
        digits: decimals of each :func:`outcome_text`.

    Returns:
        ``(headers, rows)``: per variant (:func:`suite_variants`), for each
        ``L`` the new-position accuracy zero-shot (``new@L``) and after fine-tuning (``ft_new@L``),
        and last the accuracy at the training length with the method set up for the longest ``L``
        (``short@L``; for a run without a method, its plain accuracy). Each as :func:`outcome_text`.
    """
    check_mapping("cells_by_length", cells_by_length, min_len=1, what="a dict of length -> cells")
    for length, cells in cells_by_length.items():
        _check_cells(f"cells_by_length[{length!r}]", cells)
    digits = check_nonnegative_int("digits", digits)
    lengths = sorted(cells_by_length)
    first = cells_by_length[lengths[0]]
    check_choice("task", task, sorted({t for t, _ in first}))
    longest = lengths[-1]
    headers = ["variant"]
    for length in lengths:
        headers += [f"{length} tokens, zero-shot", f"{length} tokens, fine-tuned"]
    headers.append(f"training length, set for {longest}")
    rows = []
    for (cell_task, label) in first:
        if cell_task != task:
            continue
        for variant, strategy in suite_variants(first[task, label]).items():
            row = [variant]
            for length in lengths:
                cell = cells_by_length[length][task, label]
                row += [outcome_text(outcome(variant_values(cell, f"{metric}@{length}", strategy)), digits=digits)
                        for metric in ("new", "ft_new")]
            cell = cells_by_length[longest][task, label]
            short = variant_values(cell, f"short@{longest}", strategy) if strategy else variant_values(cell, "accuracy")
            rows.append(row + [outcome_text(outcome(short), digits=digits)])
    return headers, rows


def stretch_rows(
    cells: Mapping[tuple[str, str], SuiteCell], *, task: str, lengths: Sequence[int], finetune_len: int,
    digits: int = 2,
) -> tuple[list[str], list[list[str]]]:
    """Chapter 11's table for runs read zero-shot at several lengths and fine-tuned at one.

    Args:
        cells: :func:`choose_learning_rates` cells of runs scored at every ``L`` of ``lengths``
            (``new@L``, with each scaling ``new@L:method``) and fine-tuned at ``finetune_len``.
        task: the task; lengths: the zero-shot lengths; finetune_len: the fine-tune length.
        digits: decimals of each :func:`outcome_text`.

    Returns:
        ``(headers, rows)``: per variant (:func:`suite_variants`), the new-position accuracy at
        each length zero-shot, after fine-tuning at ``finetune_len``, and at the training length
        with the method set up for the longest length (``short@L``; plain accuracy without one).
    """
    _check_cells("cells", cells)
    check_choice("task", task, sorted({t for t, _ in cells}))
    lengths = sorted(check_int_sequence("lengths", lengths, min_len=1))
    finetune_len = check_positive_int("finetune_len", finetune_len)
    digits = check_nonnegative_int("digits", digits)
    longest = lengths[-1]
    headers = ["variant", *[f"{n:,} tokens, zero-shot" for n in lengths], f"{finetune_len:,} tokens, fine-tuned",
               f"training length, set for {longest:,}"]
    rows = []
    for (cell_task, label), cell in cells.items():
        if cell_task != task:
            continue
        for variant, strategy in suite_variants(cell).items():
            values = [variant_values(cell, f"new@{n}", strategy) for n in lengths]
            values.append(variant_values(cell, f"ft_new@{finetune_len}", strategy))
            values.append(variant_values(cell, f"short@{longest}", strategy) if strategy
                          else variant_values(cell, "accuracy"))
            rows.append([variant, *[outcome_text(outcome(v), digits=digits) for v in values]])
    return headers, rows


def range_text(low: float, high: float, *, digits: int = 3) -> str:
    """``"0.714–0.990"``, or one number when both round to the same (``"1.000"``)."""
    low, high = check_real("low", low), check_real("high", high)
    digits = check_nonnegative_int("digits", digits)
    if low > high:
        raise ValueError(f"low must not exceed high, got low={low!r}, high={high!r}")
    first, last = f"{low:.{digits}f}", f"{high:.{digits}f}"
    return first if first == last else f"{first}\u2013{last}"


def tied_rows(
    cells: Mapping[tuple[str, str], SuiteCell], metrics: Sequence[str], *, task: str
) -> list[list[str]]:
    """Rows ``[scheme, tied rates, metric 1, metric 2, ...]`` for one task: each metric as the
    range of its seed-mean over the learning rates validation cannot separate
    (:func:`tied_range`, written with :func:`range_text`), so no arbitrary pick among them is shown.

    Raises:
        ValueError: ``task`` is not in ``cells``, or a metric no run holds.
    """
    _check_cells("cells", cells)
    metrics = check_text_sequence("metrics", metrics, min_len=1)
    held = {key.partition(":")[0] for cell in cells.values() for run in cell.runs for key in run.metrics}
    missing = [metric for metric in metrics if metric not in held]
    if missing:
        raise ValueError(f"metrics has {missing}, which no run of cells holds; they hold {sorted(held)}")
    check_choice("task", task, sorted({t for t, _ in cells}))
    rows = []
    for (cell_task, _), cell in cells.items():
        if cell_task != task:
            continue
        rates = ", ".join(rate_text(lr) for lr in (cell.tied or (cell.lr,)))
        for label, strategy in suite_variants(cell).items():
            rows.append([label, rates] + [range_text(*tied_range(cell, m, strategy)) for m in metrics])
    return rows


#: The two arms of a suite, as the book names them: with and without an anchor token (``bos_token``).
ARMS: dict[str, bool] = {"anchor": True, "no anchor": False}


def arm_ranges(
    results: Sequence[RunResult], metric: str = "accuracy"
) -> tuple[dict[str, dict[tuple[str, str], SuiteCell]], dict[tuple[str, str, str], tuple[float, float]]]:
    """Both arms of a suite grid, each cell read at every learning rate validation cannot separate.

    Args:
        results: a suite grid with runs with and without an anchor token.
        metric: the metric whose range over the tied rates is returned (no workaround).

    Returns:
        ``(arms, ranges)``: ``arms`` is ``"anchor"``/``"no anchor"`` -> :func:`choose_learning_rates`
        of that arm; ``ranges`` is ``(arm, task, label) -> (low, high)`` (:func:`tied_range`).

    Raises:
        ValueError: an arm has no run, or a run lacks ``metric``.
    """
    results = check_results("results", results, allow_empty=False)
    check_text("metric", metric, empty=False)
    arms = {arm: choose_learning_rates(results, anchor=anchor) for arm, anchor in ARMS.items()}
    return arms, _tied_ranges(arms, metric)


def _tied_ranges(
    groups: Mapping[str, Mapping[tuple[str, str], SuiteCell]], metric: str
) -> dict[tuple[str, str, str], tuple[float, float]]:
    """``(group, task, label) -> (low, high)``: each cell's :func:`tied_range` of ``metric``."""
    return {(group, *key): tied_range(cell, metric) for group, cells in groups.items() for key, cell in cells.items()}


def ranges_by(
    results: Sequence[RunResult], field: str, metric: str = "accuracy"
) -> dict[tuple[str, str, str], tuple[float, float]]:
    """Like :func:`arm_ranges`, with the runs split by another config field (e.g. ``token_init_std``):
    learning rates are chosen within each value of ``field``, never across them.

    Returns:
        ``(f"{field} {value}", task, label) -> (low, high)``, values in the order the runs meet them.

    Raises:
        ValueError: ``field`` is not a config field (:func:`posenc.results.config_value`: a field
            left out of an older config reads as its default), or a run lacks ``metric``.
    """
    results = check_results("results", results, allow_empty=False)
    check_text("field", field, empty=False)
    check_text("metric", metric, empty=False)
    values = [config_value(r.config, field) for r in results]  # raises for a field no config knows
    groups = {f"{field} {value:g}" if isinstance(value, float) else f"{field} {value}":
              choose_learning_rates([r for r, v in zip(results, values, strict=True) if v == value])
              for value in dict.fromkeys(values)}
    return _tied_ranges(groups, metric)


def ranking_text(ranges: Mapping[str, tuple[float, float]], *, names: Mapping[str, str] | None = None) -> str:
    """An order of schemes by their range over the tied rates, ``"ALiBi > NoPE ≈ T5 > RoPE"``.

    Schemes are sorted by the midpoint of their range, highest first; two neighbours whose
    ranges overlap are joined by ``"≈"`` (the learning rate can swap them), others by ``">"``.

    Args:
        ranges: ``label -> (low, high)``.
        names: how to print each label (default: the label).

    Raises:
        ValueError: ``ranges`` is empty, or a range has ``low > high``.
    """
    check_mapping("ranges", ranges, min_len=1, what="a dict of label -> (low, high)")
    for label, (low, high) in ranges.items():
        if low > high:
            raise ValueError(f"ranges[{label!r}] has low > high: {(low, high)!r}")
    names = dict(check_mapping("names", names, what="a dict of label -> printed name") if names is not None else {})
    ordered = sorted(ranges, key=lambda label: -(ranges[label][0] + ranges[label][1]))
    text = names.get(ordered[0], ordered[0])
    for before, label in zip(ordered, ordered[1:], strict=False):
        overlap = ranges[label][1] >= ranges[before][0]
        text += (" \u2248 " if overlap else " > ") + names.get(label, label)
    return text


def reversals(
    before: Mapping[str, tuple[float, float]], after: Mapping[str, tuple[float, float]]
) -> list[tuple[str, str]]:
    """The pairs of schemes whose order flips between two readings, counting only clear orders.

    ``a`` is clearly above ``b`` when ``a``'s range lies entirely above ``b``'s (no learning
    rate can swap them). A pair reverses when it is clearly ``a`` over ``b`` in ``before`` and
    clearly ``b`` over ``a`` in ``after``; a pair that merely becomes or stops being a tie is
    not a reversal.

    Args:
        before, after: ``label -> (low, high)`` for the same labels.

    Returns:
        ``[(a, b), ...]``: ``a`` was above ``b`` before and is below it after, in ``before``'s order.

    Raises:
        ValueError: the two readings do not cover the same labels.
    """
    check_mapping("before", before, min_len=1, what="a dict of label -> (low, high)")
    check_mapping("after", after, min_len=1, what="a dict of label -> (low, high)")
    if set(before) != set(after):
        raise ValueError(f"before and after must cover the same labels, got {sorted(before)} and {sorted(after)}")

    def above(ranges: Mapping[str, tuple[float, float]], a: str, b: str) -> bool:
        return ranges[a][0] > ranges[b][1]

    labels = list(before)
    return [(a, b) for a in labels for b in labels if a != b and above(before, a, b) and above(after, b, a)]


def arm_table(
    ranges: Mapping[tuple[str, str, str], tuple[float, float]], *, blank: str | None = None
) -> tuple[list[str], list[list[str]]]:
    """``(headers, rows)`` of :func:`arm_ranges`'s (or :func:`ranges_by`'s) ranges: one row per
    scheme, one column per arm and task (every task of the first arm, then the next), each as
    :func:`range_text`.

    Args:
        ranges: ``(arm, task, label) -> (low, high)``.
        blank: the text of a combination that was not run; ``None`` (default): every arm must
            have every task and scheme.

    Raises:
        ValueError: ``ranges`` is empty, or misses a combination and ``blank`` is ``None``.
    """
    check_mapping("ranges", ranges, min_len=1, what="a dict of (arm, task, label) -> (low, high) (arm_ranges)")
    if blank is not None:
        blank = check_text("blank", blank)
    arms = list(dict.fromkeys(arm for arm, _, _ in ranges))
    tasks = list(dict.fromkeys(task for _, task, _ in ranges))
    labels = list(dict.fromkeys(label for _, _, label in ranges))
    missing = [(a, t, lab) for a in arms for t in tasks for lab in labels if (a, t, lab) not in ranges]
    if missing and blank is None:
        raise ValueError(f"ranges misses {missing[:3]}: every arm needs every task and scheme "
                         "(or pass blank='...' to show what was not run)")

    def text(key: tuple[str, str, str]) -> str:
        return range_text(*ranges[key]) if key in ranges else str(blank)

    headers = ["scheme"] + [f"{task}, {arm}" for arm in arms for task in tasks]
    rows = [[label] + [text((arm, task, label)) for arm in arms for task in tasks] for label in labels]
    return headers, rows


def kept_text(value: float, kept: bool, *, mark: str = "kept") -> str:
    """``"0.855 (kept)"`` for a marked learning rate's value, ``"0.855"`` otherwise.

    Plain text, because :func:`posenc.plots.html_table` escapes its cells.
    """
    value, kept = check_real("value", value), check_bool("kept", kept)
    mark = check_text("mark", mark, empty=False)
    return f"{value:.3f}\u00a0({mark})" if kept else f"{value:.3f}"


def learning_rate_rows(cells: Mapping[tuple[str, str], SuiteCell], *, mark: str = "kept") -> list[list[str]]:
    """Rows ``[task, scheme, validation accuracy at each lr...]``, marking the chosen rate
    (``mark="kept"``) or every rate validation cannot separate from it (``mark="tied"``)."""
    _check_cells("cells", cells)
    check_choice("mark", mark, ["kept", "tied"])
    rows = []
    for (task, label), cell in cells.items():
        marked = {cell.lr} if mark == "kept" else set(cell.tied or (cell.lr,))
        entries = [kept_text(v, lr in marked, mark=mark) for lr, v in cell.validation.items()]
        rows.append([task, label, *entries])
    return rows


# -- argument checks -----------------------------------------------------------------------------
def renamed_cells(cells: Mapping[tuple[str, str], SuiteCell], names: Mapping[str, str]
                  ) -> dict[tuple[str, str], SuiteCell]:
    """``cells`` with the labels in ``names`` renamed (``{"alibi": "alibi [8 heads]"}``), the others kept.

    For the tables and figures of a chapter: a shorter name (``"p-RoPE"`` for
    ``"rope [ladder=truncated, partial=0.25]"``), or one arm of a grid whose runs share their
    schemes' labels with the rest (the same scheme in another model, chosen apart with
    :func:`choose_learning_rates`), shown beside the others. The figures still style each cell
    by its runs' scheme.

    Raises:
        ValueError: ``names`` or a new name is empty, or two cells of one task would share a label.
    """
    _check_cells("cells", cells)
    names = check_mapping("names", names, min_len=1, what="a dict of label -> new label")
    for old, new in names.items():
        check_text(f"names[{old!r}]", new, empty=False)
    renamed = {}
    for (task, label), cell in cells.items():
        new = names.get(label, label)
        if (task, new) in renamed:
            raise ValueError(f"names gives two cells of task {task!r} the label {new!r}")
        renamed[task, new] = replace(cell, label=new) if new != label else cell
    return renamed


def _check_cell(cell: object) -> None:
    check_instance("cell", cell, SuiteCell, what="a SuiteCell (choose_learning_rates(...))")


def _check_cells(name: str, cells: object) -> None:
    """What :func:`choose_learning_rates` returns: a non-empty dict of ``(task, label) -> SuiteCell``."""
    check_mapping(name, cells, min_len=1, what="a dict of (task, label) -> SuiteCell (choose_learning_rates(...))")
    assert isinstance(cells, Mapping)
    for key, cell in cells.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"{name} keys must be (task, label) pairs, got {key!r}")
        check_instance(f"{name}[{key!r}]", cell, SuiteCell)


def _check_metric_strategy(cell: object, metric: object, strategy: object) -> None:
    _check_cell(cell)
    check_text("metric", metric, empty=False)
    if strategy is not None:
        check_text("strategy", strategy, empty=False)


# -- text runs: bits per byte as posenc.train stores them ------------------------------------------
def _train_len(cell: SuiteCell) -> int:
    lengths = {int(run.config["seq_len"]) for run in cell.runs}
    if len(lengths) != 1:
        raise ValueError(f"{cell.task}/{cell.label}: runs trained on different lengths {sorted(lengths)}")
    return lengths.pop()


def _check_cell_reading(cell: object, length: object, strategy: object) -> tuple[SuiteCell, int, str | None]:
    if not isinstance(cell, SuiteCell):
        raise TypeError(f"cell must be a SuiteCell (posenc.suite.choose_learning_rates), got {type(cell).__name__}")
    length = check_positive_int("length", length)
    if strategy is not None:
        strategy = check_text("strategy", strategy, empty=False)
    return cell, length, strategy


def stored_key(name: str, length: int, *, train_len: int, strategy: str | None = None) -> str:
    """The key a text run stores a reading under: ``"bpb_new@2048:yarn"``; a variant (``strategy``)
    only past ``train_len``, since within it the model reads as trained.

    Raises:
        ValueError: ``name`` is not one of :data:`READINGS`, or ``"bpb_new"`` at or below ``train_len``.
    """
    check_choice("name", name, tuple(READINGS))
    length, train_len = check_positive_int("length", length), check_positive_int("train_len", train_len)
    if strategy is not None:
        check_text("strategy", strategy, empty=False)
    if name == "bpb_new" and length <= train_len:
        raise ValueError(f"name 'bpb_new' needs length > train_len ({train_len}): no new position at {length}")
    return f"{name}@{length}" + (f":{strategy}" if strategy is not None and length > train_len else "")


def _runs_mean(runs: Sequence[RunResult], key: str) -> float | None:
    values = [run.metrics[key] for run in runs if key in run.metrics]
    return statistics.fmean(values) if values and len(values) == len(runs) else None


def bpb_mean(cell: SuiteCell, name: str, length: int, *, strategy: str | None = None) -> float | None:
    """Seed mean of reading ``name`` (:data:`READINGS`) at ``length`` over the cell's chosen runs.

    Returns:
        Bits per byte, or ``None`` where the runs were not read that way.
    """
    cell, length, strategy = _check_cell_reading(cell, length, strategy)
    return _runs_mean(cell.runs, stored_key(name, length, train_len=_train_len(cell), strategy=strategy))


def tied_bpb_range(cell: SuiteCell, name: str, length: int, *, strategy: str | None = None
                   ) -> tuple[float, float] | None:
    """Lowest and highest seed mean of the reading over the cell's tied learning rates
    (:func:`posenc.suite.tied_range` for bits per byte), ``None`` where it was not read."""
    cell, length, strategy = _check_cell_reading(cell, length, strategy)
    key = stored_key(name, length, train_len=_train_len(cell), strategy=strategy)
    means = [_runs_mean(cell.by_lr[lr], key) for lr in cell.tied or (cell.lr,)]
    read = [m for m in means if m is not None]
    return (min(read), max(read)) if len(read) == len(means) else None


def profile_mean(cell: SuiteCell, length: int, *, strategy: str | None = None) -> tuple[float, ...] | None:
    """Seed mean of the loss profile (bits per byte by stretch of offsets) read at ``length``,
    over the cell's chosen runs; ``None`` where the runs were not read that way."""
    cell, length, strategy = _check_cell_reading(cell, length, strategy)
    train_len = _train_len(cell)
    key = f"bpb_profile@{length}" + (f":{strategy}" if strategy is not None and length > train_len else "")
    profiles = [run.extras.get(key) for run in cell.runs]
    if any(p is None for p in profiles):
        return None
    return tuple(statistics.fmean(column) for column in zip(*profiles, strict=True))


def tied_effective_lengths(cell: SuiteCell, metrics: Mapping[int, str], threshold: float,
                           strategy: str | None = None) -> dict[float, int | None]:
    """RULER's effective length of a grid cell at each learning rate validation cannot separate.

    Args:
        cell: a cell of :func:`choose_learning_rates`.
        metrics: ``{length: metric}``, e.g. ``{512: "exact", 1024: "new_exact@1024"}``; each
            length is scored by the seed mean of its metric.
        threshold: the bar (:func:`posenc.long_context.effective_length`).
        strategy: a learned table's workaround, read where the runs hold ``metric:strategy``
            (past the table's end) and the plain metric elsewhere (:func:`variant_values`).

    Returns:
        ``{learning rate: effective length or None}``, smallest rate first.
    """
    _check_cell(cell)
    metrics = check_mapping("metrics", metrics, min_len=1, what="a dict {length: metric}", item="{length: metric}")
    lengths = {}
    for lr in sorted(cell.tied or (cell.lr,)):
        at_rate = replace(cell, runs=cell.by_lr[lr])
        scores = {check_positive_int(f"metrics' length {length!r}", length): statistics.fmean(variant_values(at_rate, metric, strategy))
                  for length, metric in metrics.items()}
        lengths[lr] = effective_length(scores, threshold)
    return lengths
