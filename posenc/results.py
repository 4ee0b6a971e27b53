"""The records of training runs, and how to read them back.

* :class:`RunResult` is the record of one run: its config (a plain dict), seed, metrics,
  loss history, wall time and larger extras (e.g. per-position accuracies).
* :func:`save_results` / :func:`load_results` store a list of runs as JSON.
* Choosing runs: :func:`select` (by config fields, values or predicates such as
  :func:`one_of`), :func:`select_labels` and :func:`group_by_label` (by the scheme's
  readable label, see :func:`scheme_label`), :func:`field_values`, :func:`differing_fields`.
* Numbers over seeds: :func:`summarize` and :func:`summary_by_label` (rows of mean ± std),
  :func:`metric_values`, :func:`metric_stats`.
* Series for figures: :func:`curve` (learning curves), :func:`accuracy_by_length` and
  :func:`length_curves` (accuracy against test length), :func:`position_curve` and
  :func:`position_curves` (accuracy at each position).
* Speed of learning: :func:`steps_to_reach`, :func:`reach_summary`, :func:`reach_text`.

:mod:`posenc.train` writes these records and imports this module (never the reverse,
so reading results back needs no training code); :mod:`posenc.results_plots` draws them.

A learned table tested past its last row is scored with a workaround (clip, modular,
interpolate): its metrics are ``"accuracy@L:strategy"``. Functions that take ``strategies``
report such a scheme once per workaround, labelled ``"<label> + <strategy>"``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from posenc.checks import (
    check_bool,
    check_file,
    check_instance,
    check_int_sequence,
    check_mapping,
    check_path,
    check_real,
    check_text,
    check_text_sequence,
)

__all__ = [
    "LATER_FIELD_DEFAULTS",
    "drop_onsets",
    "RunResult",
    "config_value",
    "save_results",
    "load_results",
    "scheme_label",
    "run_label",
    "select",
    "one_of",
    "select_labels",
    "group_by_label",
    "field_values",
    "differing_fields",
    "summarize",
    "summary_by_label",
    "metric_values",
    "metric_stats",
    "curve",
    "accuracy_by_length",
    "extrapolation_variants",
    "length_curves",
    "position_curve",
    "position_curves",
    "steps_to_reach",
    "reach_summary",
    "reach_text",
    "curve_mean",
    "with_curve_mean",
    "check_results",
]

#: ``(xs, means, stds)``: one series of means with their sample standard deviations.
Series = tuple[list[int], list[float], list[float]]


@dataclass
class RunResult:
    """The record of one run.

    Attributes:
        config: ``TrainConfig.to_dict()`` of the run (rebuild the config with
            ``posenc.train.TrainConfig.from_dict(result.config)``).
        seed: the run's seed (also in ``config``).
        metrics: ``"accuracy"`` (at the training length), ``"accuracy@L"`` per eval
            length, ``"accuracy@L:strategy"`` per workaround, ``"final_loss"``,
            ``"n_parameters"``.
        history: ``[{"step": s, "loss": l}, ...]`` (mean training loss since the last entry;
            plus ``"accuracy"`` when the run logged a learning curve).
        wall_time_s: training plus evaluation time in seconds.
        extras: larger per-run data, e.g. ``"position_accuracy@L"``: a list of
            ``seq_len`` accuracies (``None`` where a position has no label).
    """

    config: dict[str, Any]
    seed: int
    metrics: dict[str, float]
    history: list[dict[str, float]]
    wall_time_s: float
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (the inverse of :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """Rebuild a record from :meth:`to_dict`; a missing key or a value of the wrong kind raises a
        ValueError naming it (``data['metrics']``, ...)."""
        check_mapping("data", data, what="a dict of a stored run (RunResult.to_dict())")
        missing = [key for key in ("config", "seed", "metrics", "wall_time_s") if key not in data]
        if missing:
            raise ValueError(f"data (a stored run) lacks the key(s) {missing}; it has {sorted(map(str, data))}")

        def entry(key: str, kinds: type | tuple[type, ...], what: str) -> Any:
            value = data[key]
            if not isinstance(value, kinds) or isinstance(value, bool):
                raise ValueError(f"data['{key}'] must be {what}, got {value!r} of type {type(value).__name__}")
            return value

        metrics = entry("metrics", Mapping, "a dict of metric name -> number")
        for name, value in metrics.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"data['metrics'][{name!r}] must be a number, got {value!r}")
        history = data.get("history", [])
        if not isinstance(history, list) or not all(isinstance(h, Mapping) for h in history):
            raise ValueError(f"data['history'] must be a list of dicts (one per logged step), got {history!r}")
        extras = data.get("extras", {})
        if not isinstance(extras, Mapping):
            raise ValueError(f"data['extras'] must be a dict, got {extras!r}")
        return cls(
            config=dict(entry("config", Mapping, "a dict (TrainConfig.to_dict())")),
            seed=int(entry("seed", int, "an integer")),
            metrics={k: float(v) for k, v in metrics.items()},
            history=list(history),
            wall_time_s=float(entry("wall_time_s", (int, float), "a number of seconds")),
            extras=dict(extras),
        )


# -- files ---------------------------------------------------------------------------------------
def save_results(results: Sequence[RunResult], path: str | Path, *, meta: dict[str, Any] | None = None) -> Path:
    """Write runs (and optional metadata, e.g. the command that made them) as JSON.

    Returns:
        The path written (parent folders are created).
    """
    results = _check_results(results, allow_empty=True)
    path = check_path("path", path)
    if meta is not None:
        check_mapping("meta", meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": dict(meta or {}), "results": [r.to_dict() for r in results]}
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path


def load_results(path: str | Path) -> tuple[list[RunResult], dict[str, Any]]:
    """Read what :func:`save_results` wrote: ``(results, meta)``.

    The book's stored grids are read with ``load_results(data_path("ch6_grid.json"))``
    (``data_path`` from :mod:`posenc.book`).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a results file: not JSON (a truncated file, say), or not an
            object with a ``'results'`` list of runs; the message names the file and the bad entry.
    """
    if isinstance(path, str | Path) and not Path(path).is_file():
        raise FileNotFoundError(
            f"no results file at path={str(path)!r}; save_results writes one (the book's grids: `make grids`)"
        )
    path = check_file("path", path, what="results file")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"path={str(path)!r} is not a results file: it is not valid JSON ({error}); "
                         "a file cut short by an interrupted write reads like this") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
        raise ValueError(f"path={str(path)!r} is not a results file: expected a JSON object with a 'results' list")
    meta = payload.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError(f"path={str(path)!r}: its 'meta' must be a JSON object, got {meta!r}")
    results = []
    for index, entry in enumerate(payload["results"]):
        if not isinstance(entry, dict):
            raise ValueError(f"path={str(path)!r}: results[{index}] must be a JSON object (one run), got {entry!r}")
        try:
            results.append(RunResult.from_dict(entry))
        except ValueError as error:
            raise ValueError(f"path={str(path)!r}: results[{index}] is not a stored run: {error}") from None
    return results, dict(meta)


# -- labels and choosing runs -----------------------------------------------------------------------
#: Config fields added after the first stored grids, with their defaults: a stored config
#: leaves a field out when it has its default, so its hash (the grid cache key) stays the same.
LATER_FIELD_DEFAULTS: dict[str, Any] = {"bos_token": False, "score_new_positions": False, "validation_examples": 0,
                                        "finetune_steps": 0, "finetune_len": None, "finetune_lr": 1e-3,
                                        "rope_scalings": (), "exact_match": False, "min_seq_len": None,
                                        "random_positions": None, "curriculum_steps": None}


def config_value(config: Mapping[str, Any], name: str) -> Any:
    """A stored config's value of field ``name``, with a later field's default where it was left out.

    Example: ``config_value(run.config, "bos_token")`` is ``False`` for a run stored before anchors existed.

    Raises:
        ValueError: ``name`` is neither in ``config`` nor a later field (a misspelled field would
            otherwise read as missing and match nothing, or everything).
    """
    check_mapping("config", config, min_len=1, what="a stored config (a dict of its fields)")
    check_text("name", name, empty=False)
    if name in config:
        return config[name]
    if name in LATER_FIELD_DEFAULTS:
        return LATER_FIELD_DEFAULTS[name]
    raise ValueError(f"name {name!r} is not a field of this config; it has {sorted(config)} "
                     f"(and, at their defaults when left out, {sorted(LATER_FIELD_DEFAULTS)})")


def scheme_label(scheme: str, position_options: Mapping[str, Any] | None = None, combine: str = "add") -> str:
    """A short human-readable name, e.g. ``"learned (gpt2)"`` or ``"sinusoidal, concat"``."""
    check_text("scheme", scheme, empty=False)
    check_text("combine", combine, empty=False)
    if position_options is not None:
        check_mapping("position_options", position_options)
    options = dict(position_options or {})
    label = scheme
    if scheme == "learned":
        label = f"learned ({options.pop('init', 'bert')})"
    extra = ", ".join(f"{k}={v}" for k, v in sorted(options.items()) if v is not None)
    if extra:
        label += f" [{extra}]"
    if combine != "add":
        label += f", {combine}"
    return label


def run_label(result: RunResult) -> str:
    """The :func:`scheme_label` of a run's scheme, position options and way of combining."""
    check_instance("result", result, RunResult)
    config = result.config
    return scheme_label(config.get("scheme", "?"), config.get("position_options"), config.get("combine", "add"))


def one_of(*values: Any) -> Callable[[Any], bool]:
    """A predicate for :func:`select`: the field's value is one of ``values``.

    Example: ``select(results, scheme=one_of("rope", "alibi"))``.
    """
    if not values:
        raise ValueError("one_of needs at least one value")
    allowed = list(values)  # a list, not a set: config values may be dicts

    def is_one_of(value: Any) -> bool:
        return value in allowed

    is_one_of.__qualname__ = f"one_of{tuple(allowed)!r}"
    return is_one_of


def select(results: Sequence[RunResult], **where: Any) -> list[RunResult]:
    """Runs whose config matches every ``field=condition`` in ``where``, in their original order.

    A condition is a value (the field must equal it) or a callable that takes the field's
    value and returns ``True`` to keep the run.

    Examples:
        ``select(results, scheme="learned", combine="concat")``;
        ``select(results, scheme=one_of("rope", "alibi"), n_train_examples=lambda n: n is not None)``.

    Raises:
        ValueError: a key of ``where`` is not a config field.
    """
    results = _check_results(results, allow_empty=True)
    for result in results:
        for key in where:
            if key not in result.config:
                raise ValueError(f"{key!r} is not a config field; fields: {sorted(result.config)}")
    return [r for r in results if all(_matches(r.config[key], condition) for key, condition in where.items())]


def _matches(value: Any, condition: Any) -> bool:
    return bool(condition(value)) if callable(condition) else value == condition


def group_by_label(results: Sequence[RunResult]) -> dict[str, list[RunResult]]:
    """Runs grouped by :func:`run_label`, labels in first-seen order (the seeds of one scheme together)."""
    groups: dict[str, list[RunResult]] = {}
    for result in _check_results(results, allow_empty=True):
        groups.setdefault(run_label(result), []).append(result)
    return groups


def select_labels(results: Sequence[RunResult], labels: Iterable[str]) -> list[RunResult]:
    """Runs whose :func:`run_label` is one of ``labels``, in their original order.

    Raises:
        ValueError: a label matches no run (naming it and the labels present).
    """
    results = _check_results(results, allow_empty=True)
    groups = group_by_label(results)
    wanted = [labels] if isinstance(labels, str) else list(check_text_sequence("labels", labels, min_len=1))
    missing = [label for label in wanted if label not in groups]
    if missing:
        raise ValueError(f"no run has the label(s) {missing}; labels present: {list(groups)}")
    return [r for r in results if run_label(r) in wanted]


def field_values(results: Sequence[RunResult], name: str) -> list[Any]:
    """The distinct values of config field ``name`` over ``results``, in first-seen order."""
    check_text("name", name, empty=False)
    seen: dict[str, Any] = {}
    for result in _check_results(results, allow_empty=True):
        if name not in result.config:
            raise ValueError(f"name={name!r} is not a config field; fields: {sorted(result.config)}")
        value = result.config[name]
        # dicts and lists are not hashable: compare their JSON text
        seen.setdefault(json.dumps(value, sort_keys=True, default=str), value)
    return list(seen.values())


def differing_fields(
    results: Sequence[RunResult],
    reference: Mapping[str, Any],
    *,
    fields: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
) -> list[str]:
    """Config fields in which some run differs from ``reference`` (empty: the same budget).

    Args:
        results: runs to compare.
        reference: a config dict, e.g. ``results_of_another_grid[0].config``.
        fields: fields to compare; default: every field of ``reference``.
        ignore: fields left out (e.g. ``("seed", "scheme")``).

    Returns:
        The differing fields, in the order of ``fields``.
    """
    check_mapping("reference", reference, min_len=1, what="a config dict (a run's config)")
    skipped = set(check_text_sequence("ignore", ignore))
    unknown = sorted(skipped - set(reference))
    if unknown:
        raise ValueError(f"ignore names {unknown}, which are not fields of reference; its fields: {sorted(reference)}")
    wanted = list(reference) if fields is None else list(check_text_sequence("fields", fields, min_len=1))
    names = [name for name in wanted if name not in skipped]
    for name in names:
        if name not in reference:
            raise ValueError(f"fields entry {name!r} is not in reference; its fields: {sorted(reference)}")
    different = []
    for name in names:
        for result in _check_results(results, allow_empty=True):
            if name not in result.config:
                raise ValueError(f"{name!r} is not a config field of a run; fields: {sorted(result.config)}")
            if result.config[name] != reference[name]:
                different.append(name)
                break
    return different


# -- numbers over seeds ---------------------------------------------------------------------------
def summarize(
    results: Sequence[RunResult],
    *,
    metric: str = "accuracy",
    by: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Mean and spread of ``metric`` over seeds, one row per group of runs.

    Args:
        results: runs to summarise.
        metric: a key of ``RunResult.metrics``; runs without it are skipped.
        by: config fields that define a group; default: every config field except
            ``seed`` (so the seeds of one grid cell form a group).

    Returns:
        Rows in first-seen order: the ``by`` fields (plus ``"label"``, see :func:`run_label`),
        ``"metric"``, ``"n"``, ``"mean"``, ``"std"`` (sample standard deviation over seeds,
        0 for one run), ``"min"``, ``"max"``, ``"values"``.

    Raises:
        ValueError: no run has ``metric`` (a misspelled name is an error, not an empty table;
            no runs at all give no rows), or a ``by`` entry is not a config field.
    """
    results = _check_results(results, allow_empty=True)
    check_text("metric", metric, empty=False)
    if by is not None:
        by = check_text_sequence("by", by)
    if results and not any(metric in r.metrics for r in results):
        present = sorted({key for r in results for key in r.metrics})
        raise ValueError(f"no run has metric={metric!r}; the runs' metrics are {present}")
    groups: dict[str, dict[str, Any]] = {}
    for result in results:
        if metric not in result.metrics:
            continue
        keys = [k for k in result.config if k != "seed"] if by is None else list(by)
        for key in keys:
            if key not in result.config:
                raise ValueError(f"by entry {key!r} is not a config field; fields: {sorted(result.config)}")
        group = {key: result.config[key] for key in keys}
        token = json.dumps(group, sort_keys=True, default=str)
        if token not in groups:
            groups[token] = {**group, "label": run_label(result), "values": []}
        groups[token]["values"].append(result.metrics[metric])
    return [{**row, "metric": metric, **_stats_row(row["values"])} for row in groups.values()]


def _stats_row(values: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "std": _sample_std(values),
        "min": min(values),
        "max": max(values),
    }


def _sample_std(values: Sequence[float]) -> float:
    # one run has no spread to estimate: report 0 rather than raise
    return statistics.stdev(values) if len(values) > 1 else 0.0


def summary_by_label(
    results: Sequence[RunResult],
    *,
    metric: str = "accuracy",
    by: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """:func:`summarize` rows keyed by their label: ``{"sinusoidal": {"mean": ..., "std": ...}, ...}``.

    Args:
        by: as in :func:`summarize`; the default (every config field but the seed) keeps
            runs that differ in anything else apart, so they cannot be pooled by accident.

    Raises:
        ValueError: no run has ``metric`` (as :func:`summarize`), or two groups share a label (the
            runs differ in a field the label does not show, e.g. the training-set size: select one
            value of it first).
    """
    table: dict[str, dict[str, Any]] = {}
    for row in summarize(results, metric=metric, by=by):
        if row["label"] in table:
            raise ValueError(
                f"two groups of runs share the label {row['label']!r}: they differ in a config field the label "
                "does not show (e.g. n_train_examples); select one value of that field first"
            )
        table[row["label"]] = row
    return table


def metric_values(results: Sequence[RunResult], key: str) -> list[float]:
    """``metrics[key]`` of every run that has it, in order.

    Raises:
        ValueError: no run has the metric.
    """
    results = _check_results(results, allow_empty=True)
    check_text("key", key, empty=False)
    values = [r.metrics[key] for r in results if key in r.metrics]
    if not values:
        raise ValueError(f"no result has metric key={key!r}")
    return values


def metric_stats(results: Sequence[RunResult], key: str) -> tuple[float, float, int]:
    """``(mean, sample std, n)`` of ``metrics[key]`` over ``results`` (std 0 for one run)."""
    values = metric_values(results, key)
    return statistics.fmean(values), _sample_std(values), len(values)


# -- series for figures ---------------------------------------------------------------------------
def curve(results: Sequence[RunResult], key: str = "accuracy") -> Series:
    """Mean and sample standard deviation over runs of ``history[i][key]`` at each logged step.

    All runs must share the same logged steps (runs of one grid cell do).

    Returns:
        ``(steps, means, stds)``, each as long as the history.
    """
    results = _check_results(results)
    check_text("key", key, empty=False)
    steps = [int(h["step"]) for h in results[0].history]
    for result in results:
        if [int(h["step"]) for h in result.history] != steps:
            raise ValueError("runs log different steps; pass runs of one grid cell")
        if any(key not in h for h in result.history):
            raise ValueError(f"history entries lack key={key!r} (train with curve_examples > 0 for 'accuracy')")
    columns = list(zip(*[[float(h[key]) for h in r.history] for r in results], strict=True))
    return steps, [statistics.fmean(c) for c in columns], [_sample_std(c) for c in columns]


def _with_strategy(available: Iterable[str], key: str, strategy: str | None) -> str:
    """``key + ":" + strategy`` where the runs were scored with that workaround, else ``key``.

    Inside a learned table (and for every scheme without a table) no workaround is needed,
    so the plain key holds the measurement there.

    Args:
        available: the metric (or extras) keys the runs hold.
    """
    if strategy is not None and f"{key}:{strategy}" in set(available):
        return f"{key}:{strategy}"
    return key


def accuracy_by_length(
    results: Sequence[RunResult], lengths: Sequence[int], *, strategy: str | None = None
) -> Series:
    """Mean and std over runs of the accuracy at each test length.

    For a learned table, lengths past the table are read from ``"accuracy@L:strategy"``;
    lengths inside it (and every length of other schemes) from ``"accuracy@L"``.

    Returns:
        ``(lengths, means, stds)``, one entry per length.
    """
    results = _check_results(results)
    lengths = _check_lengths(lengths)
    if strategy is not None:
        check_text("strategy", strategy, empty=False)
    metric_keys = {key for r in results for key in r.metrics}
    means, stds = [], []
    for length in lengths:
        key = _with_strategy(metric_keys, f"accuracy@{length}", strategy)
        mean, std, _ = metric_stats(results, key)
        means.append(mean)
        stds.append(std)
    return lengths, means, stds


def extrapolation_variants(
    results: Sequence[RunResult], strategies: Sequence[str] | None = None
) -> dict[str, tuple[list[RunResult], str | None]]:
    """The schemes of ``results`` as they can be read past the training length.

    A scheme whose runs were scored with workarounds (a learned table) appears once per
    workaround, labelled ``"<label> + <strategy>"``; every other scheme once, as its label.

    Args:
        results: runs of several schemes (seeds pooled by :func:`run_label`).
        strategies: workarounds to report; default: every ``eval_extrapolations`` entry of
            the runs' configs, in first-seen order.

    Returns:
        ``label -> (runs, strategy or None)`` in first-seen order of the schemes.
    """
    results = _check_results(results)
    if strategies is None:
        strategies = list(dict.fromkeys(s for r in results for s in r.config.get("eval_extrapolations", ())))
    else:
        strategies = list(check_text_sequence("strategies", strategies))
    variants: dict[str, tuple[list[RunResult], str | None]] = {}
    for label, runs in group_by_label(results).items():
        scored = [s for s in strategies if any(k.endswith(f":{s}") for r in runs for k in r.metrics)]
        if not scored:
            variants[label] = (runs, None)
        for strategy in scored:
            variants[f"{label} + {strategy}"] = (runs, strategy)
    return variants


def length_curves(
    results: Sequence[RunResult], lengths: Sequence[int], *, strategies: Sequence[str] | None = None
) -> dict[str, Series]:
    """Accuracy against test length for every variant of :func:`extrapolation_variants`.

    Returns:
        ``label -> (lengths, means, stds)`` (see :func:`accuracy_by_length`).
    """
    return {
        label: accuracy_by_length(runs, lengths, strategy=strategy)
        for label, (runs, strategy) in extrapolation_variants(results, strategies).items()
    }


def position_curve(results: Sequence[RunResult], key: str) -> Series:
    """Mean and std over runs of ``extras["position_accuracy@" + key]`` at each labelled position.

    Args:
        key: e.g. ``"64"`` or ``"64:clip"``.

    Returns:
        ``(positions, means, stds)``, unlabelled positions left out.
    """
    results = _check_results(results)
    check_text("key", key, empty=False)
    name = f"position_accuracy@{key}"
    rows = [r.extras[name] for r in results if name in r.extras]
    if not rows:
        raise ValueError(f"no result has extras[{name!r}] for key={key!r} (train with per_position=True)")
    positions, means, stds = [], [], []
    for position, column in enumerate(zip(*rows, strict=True)):
        if column[0] is None:
            continue
        positions.append(position)
        means.append(statistics.fmean(column))
        stds.append(_sample_std(column))
    return positions, means, stds


def drop_onsets(positions: Sequence[int], accuracy: Sequence[float], *, drop: float = 0.05) -> list[int]:
    """Where a per-position accuracy curve starts to fall: the first position of each run of
    steps that each lose more than ``drop`` from the position before.

    Args:
        positions, accuracy: the curve (e.g. from :func:`position_curves`), same length,
            positions increasing.
        drop: the smallest fall per position that counts.

    Returns:
        The positions where a fall starts, in order.
    """
    xs = check_int_sequence("positions", positions, min_len=2)
    if isinstance(accuracy, str | bytes) or not isinstance(accuracy, Sequence):
        raise TypeError(f"accuracy must be a sequence of accuracies in [0, 1], got {accuracy!r} "
                        f"of type {type(accuracy).__name__}")
    ys = [check_real(f"accuracy[{i}]", a, low=0.0, high=1.0) for i, a in enumerate(accuracy)]
    if len(ys) != len(xs):
        raise ValueError(f"positions and accuracy must have the same length, got {len(xs)} and {len(ys)}")
    if any(b <= a for a, b in zip(xs, xs[1:], strict=False)):
        raise ValueError(f"positions must increase, got {xs}")
    drop = check_real("drop", drop, low=0.0, low_open=True, high=1.0)
    falls = [ys[i - 1] - ys[i] > drop for i in range(1, len(ys))]
    return [xs[i] for i in range(1, len(ys)) if falls[i - 1] and (i == 1 or not falls[i - 2])]


def position_curves(
    results: Sequence[RunResult], lengths: Sequence[int], *, strategies: Sequence[str] | None = None
) -> dict[tuple[str, int], Series]:
    """Accuracy at each position, for every variant of :func:`extrapolation_variants` and test length.

    Returns:
        ``(label, length) -> (positions, means, stds)`` (see :func:`position_curve`).
    """
    lengths = _check_lengths(lengths)
    curves: dict[tuple[str, int], Series] = {}
    prefix = "position_accuracy@"
    for label, (runs, strategy) in extrapolation_variants(results, strategies).items():
        stored = {name.removeprefix(prefix) for r in runs for name in r.extras if name.startswith(prefix)}
        for length in lengths:
            key = _with_strategy(stored, str(length), strategy)
            curves[label, length] = position_curve(runs, key)
    return curves


# -- speed of learning ------------------------------------------------------------------------------
def steps_to_reach(result: RunResult, threshold: float = 0.9, key: str = "accuracy") -> int | None:
    """First logged step whose ``history[key]`` is at least ``threshold`` (``None`` if never)."""
    check_instance("result", result, RunResult)
    threshold = _check_threshold(threshold)
    check_text("key", key, empty=False)
    for entry in result.history:
        if key not in entry:
            raise ValueError(f"history entries lack key={key!r} (train with curve_examples > 0)")
        if entry[key] >= threshold:
            return int(entry["step"])
    return None


def reach_summary(results: Sequence[RunResult], threshold: float = 0.9, *, label: str = "") -> dict[str, Any]:
    """How fast runs got to ``threshold`` accuracy (see :func:`steps_to_reach`).

    Returns:
        ``{"label", "n", "reached" (runs that got there), "values" (their steps), "mean", "std"}``;
        ``mean``/``std`` are over the runs that got there (``nan`` if none did).
    """
    check_text("label", label)
    steps = [steps_to_reach(r, threshold) for r in _check_results(results)]
    hits = [s for s in steps if s is not None]
    return {
        "label": label,
        "n": len(steps),
        "reached": len(hits),
        "values": hits,
        "mean": statistics.fmean(hits) if hits else math.nan,
        "std": _sample_std(hits),
    }


def reach_text(summary: Mapping[str, Any]) -> str:
    """``"415 ± 58 (5 of 5)"`` or ``"never (0 of 5)"`` for a :func:`reach_summary` dict."""
    check_mapping("summary", summary, what="a reach_summary dict")
    missing = [key for key in ("reached", "n", "mean", "std") if key not in summary]
    if missing:
        raise ValueError(f"summary lacks {missing}: pass what reach_summary returns")
    got = f"({summary['reached']} of {summary['n']})"
    if not summary["reached"]:
        return f"never {got}"
    return f"{summary['mean']:.0f} ± {summary['std']:.0f} {got}"


def curve_mean(result: RunResult, key: str = "accuracy") -> float:
    """The mean of ``history[key]`` over every logged step: how fast a run learned, in one number.

    The area under the learning curve divided by its length, in ``[0, 1]`` for an accuracy: a
    run that is right from the first logged step scores its final accuracy, one that learns
    late scores little. Unlike :func:`steps_to_reach` it is defined for runs that never reach a
    threshold, so runs can be compared seed by seed.
    """
    check_instance("result", result, RunResult)
    check_text("key", key, empty=False)
    if not result.history:
        raise ValueError("result has no history: train with log_every > 0 and curve_examples > 0")
    if any(key not in entry for entry in result.history):
        raise ValueError(f"history entries lack key={key!r} (train with curve_examples > 0)")
    return statistics.fmean(float(entry[key]) for entry in result.history)


def with_curve_mean(results: Sequence[RunResult]) -> list[RunResult]:
    """Copies of ``results`` with :func:`curve_mean` as the metric ``"curve_mean"`` where a run
    logged a learning curve (the others are returned unchanged)."""
    out = []
    for result in _check_results(results):
        if result.history and all("accuracy" in entry for entry in result.history):
            result = replace(result, metrics={**result.metrics, "curve_mean": curve_mean(result)})
        out.append(result)
    return out


# -- argument checks ----------------------------------------------------------------------------------
def check_results(name: str, results: Sequence[RunResult], *, allow_empty: bool = True) -> list[RunResult]:
    """``results`` (a sequence of :class:`RunResult`) as a list; a TypeError or ValueError naming ``name`` otherwise."""
    return _check_results(results, allow_empty=check_bool("allow_empty", allow_empty),
                          name=check_text("name", name, empty=False))


def _check_results(results: Sequence[RunResult], *, allow_empty: bool = False, name: str = "results") -> list[RunResult]:
    """``results`` as a list of RunResult records (a clear error for anything else, or for none)."""
    if isinstance(results, RunResult):
        raise TypeError(f"{name} must be a sequence of RunResult records; got a single RunResult (wrap it in [])")
    if isinstance(results, str | bytes | Mapping) or not isinstance(results, Iterable):
        raise TypeError(f"{name} must be a sequence of RunResult records (load_results(...)[0]), got {results!r} "
                        f"of type {type(results).__name__}")
    results = list(results)
    for index, result in enumerate(results):
        if not isinstance(result, RunResult):
            raise TypeError(f"{name}[{index}] must be a RunResult, got {type(result).__name__}")
    if not results and not allow_empty:
        raise ValueError(f"{name} is empty: select matched no run")
    return results


def _check_lengths(lengths: Sequence[int]) -> list[int]:
    return list(check_int_sequence("lengths", lengths, min_len=1))


def _check_threshold(threshold: float) -> float:
    return check_real("threshold", threshold, low=0.0, low_open=True, high=1.0, what="an accuracy")
