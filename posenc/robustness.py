"""Conclusions as computed results: how firmly does a comparison hold across the set-up choices that could change it?

A finding such as "RoPE scores more new positions than no encoding" is only as firm as the
settings it survives. This module states a finding as a small object, a :class:`Conclusion`
(which runs, which metric, which direction, what margin), and evaluates it on every
setting of its sensitivity set: each task it claims, with and without an anchor token, and
every learning rate that ties on validation. The answer is a :class:`Verdict`:

* **robust**: it holds in every setting;
* **conditional**: it holds in ``k`` of ``n`` settings, and the verdict names where it fails
  (``"only without an anchor"``, ``"except at learning rate 0.01"``, ...);
* **contradicted**: it holds in no setting.

How one setting is decided (:func:`compare`):

* **Paired** (both sides read the *same* trained models, e.g. one model scored with and
  without a workaround): the per-seed differences ``d_s = a_s - b_s``; the comparison holds
  if their mean exceeds the margin by two standard errors, is reversed if it falls below
  ``-margin`` by two standard errors, and is unclear otherwise.
* **Independent** (different models): the difference of the means, with the standard error
  of a difference of two means (Welch), and the same rule.
* **Bimodal cells** (some seeds solve the task, the others stay far below, and both happen):
  a mean describes no seed, so the comparison counts solved seeds instead (``k of n``): it
  holds if a larger share of the first side's seeds reach the "solved" level than of the
  other side's (:func:`is_bimodal` decides which cells are bimodal; a unimodal cell is never
  split by a threshold).
* **Against a level** (``Conclusion.worse`` is a number, e.g. chance or the "solved"
  line): the same two-standard-error rule on ``a_s - level``.

Learning rates (:func:`tied_rates`): per task, scheme and anchor, the rate with the best
mean validation accuracy and every rate whose mean is within :data:`TIE_TOLERANCE` of it
(or within two standard errors of the difference, if that is larger) are "tied":
validation at the training length cannot choose between them, so a conclusion must hold at
each of them. :func:`bracketing` says whether the best rate lies inside the swept range.

Nothing here reads the book's files: the inputs are :class:`posenc.results.RunResult`
lists; the chapters declare their conclusions and show the verdicts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from posenc.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_mapping,
    check_real,
    check_reals,
    check_text,
    check_text_sequence,
)
from posenc.results import RunResult, check_results, config_value, run_label

__all__ = [
    "SOLVED",
    "TIE_TOLERANCE",
    "Side",
    "Conclusion",
    "Comparison",
    "SettingResult",
    "Verdict",
    "Bracket",
    "tied_rates",
    "bracketing",
    "is_bimodal",
    "compare",
    "evaluate",
    "side_values",
    "verdict_phrase",
    "where_it_holds",
    "map_cell",
    "map_rows",
    "rate_text",
    "and_list",
]

#: Accuracy at which a seed counts as having solved a task (for bimodal cells).
SOLVED = 0.9
#: Validation accuracies this close to the best one tie (half a percentage point): at
#: 256 validation sequences a difference that small is within the sampling noise of one seed.
TIE_TOLERANCE = 0.005
#: How many standard errors a difference must clear its margin by.
STANDARD_ERRORS = 2.0

Status = Literal["holds", "reversed", "unclear"]
Kind = Literal["robust", "conditional", "contradicted"]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: the runs of a scheme read with one metric.

    Attributes:
        label: the scheme's label (:func:`posenc.results.run_label`, e.g. ``"rope"``,
            ``"learned (bert)"``).
        metric: the metric key, e.g. ``"new@32"``.
        strategy: read ``metric:strategy`` where the runs have it (a learned table's
            workaround, a RoPE scaling), else ``metric``.
        where: extra config values the runs must have, e.g. ``{"random_positions": 128}``;
            a field missing from a stored config has its default
            (:func:`posenc.results.config_value`; ``None`` for an unknown field).
    """

    label: str
    metric: str
    strategy: str | None = None
    where: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_text("label", self.label, empty=False)
        check_text("metric", self.metric, empty=False)
        if self.strategy is not None:
            check_text("strategy", self.strategy, empty=False)
        check_mapping("where", self.where, what="a dict of config field -> value")

    def describe(self) -> str:
        text = self.label + (f" + {self.strategy}" if self.strategy else "")
        return text + "".join(f", {k}={v}" for k, v in self.where.items())


Relation = Literal["greater", "close"]


@dataclass(frozen=True)
class Conclusion:
    """A stated experimental finding about two sides, each a set of runs read one way or a fixed level.

    ``relation="greater"``: ``better`` scores higher than ``worse`` by more than ``margin``
    ("RoPE keeps more new positions than no encoding", "ALiBi solves it": ``worse=0.9``,
    "ALiBi fails it": ``better=0.9``). ``relation="close"``: the two differ by less than
    ``margin`` either way ("the scaled sinusoid does as badly as the sinusoid").

    Attributes:
        key: a short identifier, e.g. ``"rope>none new@32"``.
        claim: the finding in words, as the book states it.
        better, worse: a :class:`Side` each, or one of them a fixed level (a number).
        tasks: the tasks the finding claims (one setting group per task).
        margin: how much higher (or, for ``"close"``, how close), in accuracy.
        over: the set-up choices it must survive: any of ``"anchor"`` (with and without an
            anchor token, config field ``bos_token``) and ``"lr"`` (every tied learning rate).
        relation: ``"greater"`` or ``"close"``.
        label: a short name for figures (default: ``key``).
        solved: the level a seed must reach to count as solved (bimodal cells, levels).
    """

    key: str
    claim: str
    better: Side | float
    worse: Side | float
    tasks: tuple[str, ...]
    margin: float = 0.0
    over: tuple[str, ...] = ("anchor", "lr")
    relation: Relation = "greater"
    label: str = ""
    solved: float = SOLVED

    def __post_init__(self) -> None:
        check_text("key", self.key, empty=False)
        check_text("claim", self.claim)
        for name in ("better", "worse"):  # a Side, or a fixed level (a number)
            if not isinstance(getattr(self, name), Side):
                check_real(name, getattr(self, name))
        if isinstance(self.tasks, str) or not self.tasks:
            raise ValueError(f"conclusion {self.key!r}: tasks must name at least one task (a tuple of names), "
                             f"got {self.tasks!r}")
        check_text_sequence("tasks", self.tasks, min_len=1)
        if isinstance(self.over, str) or not isinstance(self.over, tuple | list):
            raise TypeError(f"over must be a tuple of set-up choices from ('anchor', 'lr'), got {self.over!r}")
        for dimension in self.over:
            check_choice("over entry", dimension, ("anchor", "lr"))
        check_real("margin", self.margin, low=0.0, high=1.0, high_open=True)
        _check_solved(self.solved)
        check_choice("relation", self.relation, ("greater", "close"))
        check_text("label", self.label)
        if self.relation == "close" and self.margin == 0.0:
            raise ValueError(f"conclusion {self.key!r}: relation 'close' needs a margin > 0 (how close)")
        if not isinstance(self.better, Side) and not isinstance(self.worse, Side):
            raise ValueError(f"conclusion {self.key!r}: better and worse cannot both be levels")

    @property
    def short(self) -> str:
        """The label figures show."""
        return self.label or self.key


@dataclass(frozen=True)
class Comparison:
    """The numbers behind one setting's decision.

    Attributes:
        difference: mean difference (better - worse), or of solved shares for bimodal cells.
        standard_error: its standard error (0 for counts).
        paired: the two sides read the same trained models (seed by seed).
        bimodal: decided by counting solved seeds.
        better_values, worse_values: one number per seed (``worse_values`` empty for a level).
        status: ``"holds"``, ``"reversed"`` or ``"unclear"``.
    """

    difference: float
    standard_error: float
    paired: bool
    bimodal: bool
    better_values: tuple[float, ...]
    worse_values: tuple[float, ...]
    status: Status


@dataclass(frozen=True)
class SettingResult:
    """One setting of a conclusion's sensitivity set and how the comparison came out there.

    ``setting`` maps dimension names to values: ``"task"``, ``"anchor"`` (bool), and
    ``"lr"`` (the better side's rate) and ``"lr_worse"`` (the other side's) when ``"lr"`` is varied.
    """

    setting: Mapping[str, Any]
    comparison: Comparison

    @property
    def holds(self) -> bool:
        return self.comparison.status == "holds"


@dataclass(frozen=True)
class Verdict:
    """The outcome of a conclusion over its whole sensitivity set.

    Attributes:
        conclusion: what was evaluated.
        kind: ``"robust"``, ``"conditional"`` or ``"contradicted"``.
        results: one :class:`SettingResult` per setting, in a fixed order.
        where_it_fails: a phrase naming the settings where it does not hold (``""`` if robust).
    """

    conclusion: Conclusion
    kind: Kind
    results: tuple[SettingResult, ...]
    where_it_fails: str

    @property
    def holds_in(self) -> int:
        return sum(r.holds for r in self.results)

    @property
    def reversed_in(self) -> int:
        return sum(r.comparison.status == "reversed" for r in self.results)

    @property
    def n(self) -> int:
        return len(self.results)

    def phrase(self) -> str:
        """The verdict in words, for the prose (:func:`verdict_phrase`)."""
        return verdict_phrase(self)


# -- learning rates ------------------------------------------------------------------------------
def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def tied_rates(by_lr: Mapping[float, Sequence[RunResult]], *, metric: str = "val_accuracy",
               tolerance: float = TIE_TOLERANCE) -> tuple[float, ...]:
    """The learning rates that validation cannot tell from the best one, smallest first.

    The best rate has the highest mean ``metric`` over its seeds; another rate ties with it
    when its mean is within ``max(tolerance, 2 standard errors of the difference)`` of the best.

    Raises:
        ValueError: no rates, or a run without ``metric``.
    """
    _check_by_lr(by_lr)
    check_text("metric", metric, empty=False)
    tolerance = check_real("tolerance", tolerance, low=0.0)
    stats = {}
    for lr, runs in by_lr.items():
        values = [_metric(run, metric) for run in runs]
        if not values:
            raise ValueError(f"learning rate {lr}: no runs")
        stats[float(lr)] = _mean_se(values)
    best = max(stats, key=lambda lr: stats[lr][0])
    best_mean, best_se = stats[best]
    tied = [lr for lr, (mean, se) in stats.items()
            if best_mean - mean <= max(tolerance, STANDARD_ERRORS * math.hypot(se, best_se))]
    return tuple(sorted(tied))


@dataclass(frozen=True)
class Bracket:
    """Does a learning-rate sweep bracket its best validation score?

    Attributes:
        rates: the rates swept, smallest first.
        tied: the rates tied with the best (:func:`tied_rates`).
        bracketed: some tied rate lies strictly inside the sweep (not its smallest or largest).
        edge: ``"low"`` / ``"high"`` if every tied rate sits at that end of the sweep, else ``None``.
        separates: validation tells some rates apart (not every rate is tied).
    """

    rates: tuple[float, ...]
    tied: tuple[float, ...]
    bracketed: bool
    edge: str | None
    separates: bool


def bracketing(by_lr: Mapping[float, Sequence[RunResult]], *, metric: str = "val_accuracy") -> Bracket:
    """Whether the sweep ``by_lr`` brackets its best rate (the rule chapter 6 applies to every cell)."""
    _check_by_lr(by_lr)
    rates = tuple(sorted(float(lr) for lr in by_lr))
    tied = tied_rates(by_lr, metric=metric)
    interior = [lr for lr in tied if rates[0] < lr < rates[-1]]
    edge = None
    if not interior:
        if all(lr == rates[0] for lr in tied):
            edge = "low"
        elif all(lr == rates[-1] for lr in tied):
            edge = "high"
    return Bracket(rates, tied, bool(interior), edge, len(tied) < len(rates))


# -- one comparison ------------------------------------------------------------------------------
def _metric(run: RunResult, key: str) -> float:
    if key not in run.metrics:
        raise ValueError(f"run {run_label(run)} (seed {run.seed}) has no metric {key!r}; it has {sorted(run.metrics)}")
    return float(run.metrics[key])


def side_values(runs: Sequence[RunResult], side: Side) -> dict[int, float]:
    """``seed -> value`` of ``side``'s metric (read with its strategy where the runs have it).

    A run that was read with the strategy (its config lists it in ``rope_scalings`` or
    ``eval_extrapolations``) but has no ``metric:strategy`` score gives the plain metric: the
    strategy does not apply there (a learned table read within its rows). A run whose config
    does not list the strategy at all is an error, so that a grid made before a strategy
    existed is never read as if plain values were the strategy's.
    """
    runs = check_results("runs", runs)
    check_instance("side", side, Side, what="a Side")
    values = {}
    for run in runs:
        key = side.metric
        if side.strategy is not None:
            if f"{side.metric}:{side.strategy}" in run.metrics:
                key = f"{side.metric}:{side.strategy}"
            else:
                listed = [*(run.config.get("rope_scalings") or ()), *(run.config.get("eval_extrapolations") or ())]
                if side.strategy not in listed:
                    raise ValueError(f"run {run_label(run)} (seed {run.seed}) was not read with strategy "
                                     f"{side.strategy!r} (its config lists {listed or 'none'}), so {side.metric!r} "
                                     "cannot stand in for it; re-make its grid with the strategy")
        values[run.seed] = _metric(run, key)
    return values


def is_bimodal(values: Sequence[float], solved: float = SOLVED) -> bool:
    """Seeds split into ones that solve (``>= solved``) and ones far below (``< solved - 0.2``), both present.

    A cell of such seeds has no typical value: its mean describes no seed, so comparisons
    count solved seeds instead. A unimodal cell straddling the line (0.88, 0.91, 0.93) is not
    bimodal: counting would split noise.
    """
    values = _check_values("values", values)
    solved = _check_solved(solved)
    high = [v for v in values if v >= solved]
    low = [v for v in values if v < solved - 0.2]
    return bool(high) and bool(low) and len(high) + len(low) == len(values)


def _status(difference: float, standard_error: float, margin: float, relation: Relation = "greater") -> Status:
    spread = STANDARD_ERRORS * standard_error
    if relation == "close":  # "holds": within the margin for sure; "reversed": outside it for sure
        if abs(difference) + spread < margin:
            return "holds"
        return "reversed" if abs(difference) - spread > margin else "unclear"
    if difference - spread > margin:
        return "holds"
    if difference + spread < -margin:
        return "reversed"
    return "unclear"


def _values(side: Mapping[int, float]) -> tuple[float, ...]:
    if not side:
        raise ValueError("a side has no values")
    return tuple(side[s] for s in sorted(side))


def compare(better: Mapping[int, float] | float, worse: Mapping[int, float] | float, *, paired: bool,
            margin: float = 0.0, solved: float = SOLVED, relation: Relation = "greater") -> Comparison:
    """Decide one setting: does ``better`` beat ``worse`` by more than ``margin`` (or, for
    ``relation="close"``, are they within ``margin`` of each other)?

    Args:
        better, worse: ``seed -> value``; one of them may be a fixed level instead.
        paired: both sides are the same trained models read two ways (seeds must match).

    Returns:
        A :class:`Comparison` (see the module docstring for the rules).
    """
    for name, side in (("better", better), ("worse", worse)):
        if isinstance(side, int | float) and not isinstance(side, bool):
            check_real(name, side)  # a fixed level
        else:
            check_mapping(name, side, min_len=1, what="a dict of seed -> value, or a fixed level (a number)")
    paired = check_bool("paired", paired)
    margin = check_real("margin", margin, low=0.0)
    solved = _check_solved(solved)
    check_choice("relation", relation, ("greater", "close"))
    if isinstance(better, int | float) or isinstance(worse, int | float):
        return _against_level(better, worse, margin=margin, solved=solved, relation=relation)
    b, w = _values(better), _values(worse)
    if paired:
        if sorted(better) != sorted(worse):
            raise ValueError(f"a paired comparison needs the same seeds on both sides, got {sorted(better)} "
                             f"and {sorted(worse)}")
        differences = [better[s] - worse[s] for s in sorted(better)]
        mean, se = _mean_se(differences)
        return Comparison(mean, se, True, False, b, w, _status(mean, se, margin, relation))
    if relation == "greater" and (is_bimodal(b, solved) or is_bimodal(w, solved)):
        solved_b = sum(v >= solved for v in b) / len(b)
        solved_w = sum(v >= solved for v in w) / len(w)
        difference = solved_b - solved_w
        status: Status = "holds" if difference > 0 else "reversed" if difference < 0 else "unclear"
        return Comparison(difference, 0.0, False, True, b, w, status)
    (mean_b, se_b), (mean_w, se_w) = _mean_se(b), _mean_se(w)
    difference, se = mean_b - mean_w, math.hypot(se_b, se_w)
    return Comparison(difference, se, False, False, b, w, _status(difference, se, margin, relation))


def _against_level(better: Mapping[int, float] | float, worse: Mapping[int, float] | float, *, margin: float,
                   solved: float, relation: Relation) -> Comparison:
    """One side against a fixed level: ``values - level`` (the side is ``better``) or ``level - values``."""
    if isinstance(better, int | float) and isinstance(worse, int | float):
        raise ValueError("better and worse cannot both be levels")
    side_is_better = not isinstance(better, int | float)
    values = _values(better if side_is_better else worse)  # type: ignore[arg-type]
    level = float(worse if side_is_better else better)  # type: ignore[arg-type]
    sign = 1.0 if side_is_better else -1.0
    b, w = (values, ()) if side_is_better else ((), values)
    if relation == "greater" and is_bimodal(values, solved):
        # count seeds on the claimed side of the level: all -> holds, none -> reversed
        share = sum((v > level) == side_is_better for v in values) / len(values)
        status: Status = "holds" if share == 1.0 else "reversed" if share == 0.0 else "unclear"
        return Comparison(2 * share - 1, 0.0, False, True, b, w, status)
    mean, se = _mean_se([sign * (v - level) for v in values])
    return Comparison(mean, se, False, False, b, w, _status(mean, se, margin, relation))


# -- a conclusion over its settings ----------------------------------------------------------------
def _matches(run: RunResult, task: str, side: Side, anchor: bool | None) -> bool:
    config = run.config
    if config.get("task") != task or run_label(run) != side.label:
        return False
    if anchor is not None and bool(config_value(config, "bos_token")) != anchor:
        return False
    return all(config_value(config, name) == value for name, value in side.where.items())


def _cells(results: Sequence[RunResult], task: str, side: Side, anchors: Sequence[bool | None]
           ) -> dict[bool | None, dict[float, list[RunResult]]]:
    cells: dict[bool | None, dict[float, list[RunResult]]] = {}
    for anchor in anchors:
        by_lr: dict[float, list[RunResult]] = {}
        for run in results:
            if _matches(run, task, side, anchor):
                by_lr.setdefault(float(run.config["lr"]), []).append(run)
        if not by_lr:
            raise ValueError(f"no runs of {side.describe()} on task {task!r}"
                             + ("" if anchor is None else f" {'with' if anchor else 'without'} an anchor"))
        cells[anchor] = by_lr
    return cells


def _rates(by_lr: Mapping[float, Sequence[RunResult]], vary: bool) -> tuple[float, ...]:
    """The rates a side is read at: every tied rate when ``lr`` is varied, else the single best one."""
    has_validation = all("val_accuracy" in run.metrics for runs in by_lr.values() for run in runs)
    if len(by_lr) == 1 or not has_validation:
        if len(by_lr) > 1:
            raise ValueError(f"runs at learning rates {sorted(by_lr)} lack val_accuracy: cannot choose between them")
        return tuple(by_lr)
    tied = tied_rates(by_lr)
    if vary:
        return tied
    best = max(tied, key=lambda lr: statistics.fmean(r.metrics["val_accuracy"] for r in by_lr[lr]))
    return (best,)


def evaluate(conclusion: Conclusion, results: Sequence[RunResult]) -> Verdict:
    """Evaluate ``conclusion`` on every setting of its sensitivity set in ``results``.

    Settings: each task of the conclusion; with and without an anchor (``bos_token``) if
    ``"anchor"`` is in ``over`` and both exist in the runs; and every pair of tied learning
    rates of the two sides (:func:`tied_rates`) if ``"lr"`` is in ``over`` (else each side at
    its best validation rate). Two sides of the same scheme, anchor and learning rate are the
    same trained models read two ways: they are compared seed by seed.

    Raises:
        ValueError: a side has no runs in some setting, or runs lack a metric.
    """
    check_instance("conclusion", conclusion, Conclusion, what="a Conclusion")
    results = check_results("results", results)
    settings: list[SettingResult] = []
    sides = [side for side in (conclusion.better, conclusion.worse) if isinstance(side, Side)]
    vary = "lr" in conclusion.over
    same_models = len(sides) == 2 and _same_models(sides[0], sides[1])
    for task in conclusion.tasks:
        present = {bool(r.config.get("bos_token", False)) for r in results if r.config.get("task") == task}
        both = "anchor" in conclusion.over and len(present) > 1
        anchors: list[bool | None] = [anchor for anchor in sorted(present)] if both else [None]
        cells = [_cells(results, task, side, anchors) for side in sides]
        for anchor in anchors:
            base: dict[str, Any] = {"task": task}
            if anchor is not None:
                base["anchor"] = anchor
            first = cells[0][anchor]
            for lr_first in _rates(first, vary):
                values = [side_values(first[lr_first], sides[0])]
                if len(sides) == 1:
                    level = conclusion.worse if isinstance(conclusion.better, Side) else conclusion.better
                    pair = (values[0], level) if isinstance(conclusion.better, Side) else (level, values[0])
                    comparison = compare(pair[0], pair[1], paired=False, margin=conclusion.margin,  # type: ignore[arg-type]
                                         solved=conclusion.solved, relation=conclusion.relation)
                    settings.append(SettingResult({**base, "lr": lr_first}, comparison))
                    continue
                second = cells[1][anchor]
                for lr_second in ((lr_first,) if same_models else _rates(second, vary)):
                    other = side_values(second[lr_second], sides[1])
                    comparison = compare(values[0], other, paired=same_models, margin=conclusion.margin,
                                         solved=conclusion.solved, relation=conclusion.relation)
                    setting = ({**base, "lr": lr_first} if same_models
                               else {**base, "lr": lr_first, "lr_worse": lr_second})
                    settings.append(SettingResult(setting, comparison))
    return _verdict(conclusion, settings)


def _same_models(a: Side, b: Side) -> bool:
    return a.label == b.label and dict(a.where) == dict(b.where)


def _verdict(conclusion: Conclusion, settings: list[SettingResult]) -> Verdict:
    holds = sum(r.holds for r in settings)
    kind: Kind = "robust" if holds == len(settings) else "contradicted" if holds == 0 else "conditional"
    return Verdict(conclusion, kind, tuple(settings), "" if kind == "robust" else _where_it_fails(conclusion, settings))


# -- words ---------------------------------------------------------------------------------------
def rate_text(lr: float) -> str:
    """A learning rate as the book writes it: ``3e-4``, ``1e-2``."""
    lr = check_real("lr", lr, low=0.0, low_open=True, what="a learning rate")
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _or_list(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _values_text(conclusion: Conclusion, name: str, values: Sequence[Any]) -> str:
    """Words for one setting dimension at one or more values, e.g. ``"with rope at learning rate 3e-4 or 1e-3"``."""
    if name == "anchor":
        return "with an anchor" if values[0] else "without an anchor"
    if name == "task":
        return "on " + _or_list([str(v).replace("_", "-") for v in values])
    if name in ("lr", "lr_worse"):
        rates = _or_list([rate_text(v) for v in sorted(values)])
        sides = [side for side in (conclusion.better, conclusion.worse) if isinstance(side, Side)]
        paired = len(sides) == 1 or _same_models(sides[0], sides[-1])
        if paired:
            return f"at learning rate {rates}"
        side = sides[0] if name == "lr" else sides[1]
        return f"with {side.label} at learning rate {rates}"
    return f"{name} = " + _or_list([str(v) for v in values])


def _where_it_fails(conclusion: Conclusion, settings: Sequence[SettingResult]) -> str:
    """Name the failing settings as briefly as the data allow.

    If one dimension's values separate the settings exactly (no value occurs among both the
    failures and the successes), the phrase names the failing values of that dimension, e.g.
    ``"fails with an anchor"`` or ``"fails with rope at learning rate 3e-4, 1e-3 or 3e-3"``;
    otherwise it lists up to three failing settings and counts the rest.
    """
    failing = [r for r in settings if not r.holds]
    passing = [r for r in settings if r.holds]
    names = list(dict.fromkeys(name for r in settings for name in r.setting))
    for name in names:
        failed = list(dict.fromkeys(r.setting.get(name) for r in failing))
        passed = {r.setting.get(name) for r in passing}
        if passing and not passed & set(failed):
            return "fails " + _values_text(conclusion, name, failed)
    varied = [n for n in names if len({r.setting.get(n) for r in settings}) > 1]
    parts = [", ".join(_values_text(conclusion, n, [r.setting.get(n)]) for n in varied) + f" ({r.comparison.status})"
             for r in failing[:3]]
    more = f"; and {len(failing) - 3} more" if len(failing) > 3 else ""
    return "fails " + "; ".join(parts) + more


def verdict_phrase(verdict: Verdict) -> str:
    """How the book words a verdict: ``"robust: holds in all 6 settings"``,
    ``"conditional: holds in 3 of 6 settings; fails with an anchor"``,
    ``"contradicted: holds in none of 6 settings (reversed in 4)"``; where no setting is reversed
    either, it says so: ``"contradicted: holds in none of 2 settings (unclear in every one: the
    difference is within the seeds' spread)"``, a verdict that more seeds could change."""
    check_instance("verdict", verdict, Verdict, what="a Verdict (evaluate(...))")
    n = verdict.n
    if verdict.kind == "robust":
        return f"robust: holds in all {n} settings" if n > 1 else "robust: holds in its one setting"
    if verdict.kind == "contradicted":
        if verdict.reversed_in:
            reversed_part = f" (reversed in {verdict.reversed_in})"
        elif all(r.comparison.status == "unclear" for r in verdict.results):
            reversed_part = " (unclear in every one: the difference is within the seeds' spread)"
        else:
            reversed_part = ""
        where = "does not hold in its one setting" if n == 1 else f"holds in none of {n} settings"
        return f"contradicted: {where}{reversed_part}"
    return f"conditional: holds in {verdict.holds_in} of {n} settings; {verdict.where_it_fails}"


def _group_text(conclusion: Conclusion, setting: Mapping[str, Any]) -> str:
    """A setting's task and anchor in words: ``"on copy-offset with an anchor"``."""
    return " ".join(_values_text(conclusion, name, [setting[name]]) for name in ("task", "anchor") if name in setting)


def where_it_holds(verdict: Verdict) -> str:
    """Where a verdict holds, by task and anchor (the columns of the robustness map), in words.

    Each group of settings (one task, with or without an anchor; its settings are the tied
    learning rates) is named once: where the conclusion holds at every rate, at some (``k of
    n``), and at none, e.g. ``"in every setting on marker-recall with an anchor; in 3 of 16 on
    copy-offset with an anchor; in none on copy-offset without an anchor"`` (a setting there
    is a learning rate, or a pair of rates when two schemes are compared). A robust verdict
    gives ``"in every setting"``.
    """
    check_instance("verdict", verdict, Verdict, what="a Verdict (evaluate(...))")
    if verdict.kind == "robust":
        return "in every setting"
    groups: dict[str, list[SettingResult]] = {}
    for result in verdict.results:
        groups.setdefault(_group_text(verdict.conclusion, result.setting), []).append(result)
    every = [g for g, rs in groups.items() if all(r.holds for r in rs)]
    some = [(g, rs) for g, rs in groups.items() if 0 < sum(r.holds for r in rs) < len(rs)]
    none_ = [g for g, rs in groups.items() if not any(r.holds for r in rs)]
    parts = []
    if every:
        parts.append("in every setting " + and_list(every))
    parts += [f"in {sum(r.holds for r in rs)} of {len(rs)} {g}" for g, rs in some]
    if none_:
        parts.append("in none " + and_list(none_))
    return "; ".join(parts)


#: How a cell of the robustness map reads: every setting holds, none (reversed in some), none, or k of n.
HOLDS_EVERYWHERE, REVERSED, HOLDS_NOWHERE = "\u2713", "\u21ba", "\u2717"


def map_cell(results: Sequence[SettingResult]) -> str:
    """One cell of the robustness map for the settings of one group: ``"✓"`` where the conclusion
    holds in all of them, ``"↺"`` where it holds in none and is reversed in some, ``"✗"`` where
    it holds in none, ``"k/n"`` where in some; ``""`` for a group it claims nothing about.
    Symbols, not colours, so the map reads the same in print, in grey and in dark mode."""
    if isinstance(results, str | bytes) or not isinstance(results, Sequence):
        raise TypeError(f"results must be a sequence of SettingResults, got {results!r}")
    for i, result in enumerate(results):
        check_instance(f"results[{i}]", result, SettingResult, what="a SettingResult (Verdict.results)")
    if not results:
        return ""
    holds = sum(r.holds for r in results)
    if holds == len(results):
        return HOLDS_EVERYWHERE
    if holds == 0:
        return REVERSED if any(r.comparison.status == "reversed" for r in results) else HOLDS_NOWHERE
    return f"{holds}/{len(results)}"


def _group(setting: Mapping[str, Any]) -> str:
    """A setting's column in the map: its task, and its anchor if it has one (``"copy-offset, anchor"``)."""
    label = str(setting.get("task", "")).replace("_", "-")
    if "anchor" in setting:
        label += ", anchor" if setting["anchor"] else ", no anchor"
    return label


def map_rows(verdicts: Sequence[Verdict]) -> tuple[list[str], list[list[str]]]:
    """The robustness map as a table: one row per conclusion (its label, its verdict, then one
    :func:`map_cell` per group of settings: a task, with or without an anchor), so one glance
    says what holds where.

    Returns:
        ``(headers, rows)``: headers ``["conclusion", "verdict", group, ...]``, groups in the
        order the verdicts meet them.
    """
    if isinstance(verdicts, str | bytes) or not isinstance(verdicts, Sequence) or not verdicts:
        raise TypeError(f"verdicts must be a non-empty sequence of Verdicts (evaluate(...)), got {verdicts!r}")
    for i, verdict in enumerate(verdicts):
        check_instance(f"verdicts[{i}]", verdict, Verdict, what="a Verdict (evaluate(...))")
    groups = list(dict.fromkeys(_group(r.setting) for v in verdicts for r in v.results))
    rows = [[v.conclusion.label or v.conclusion.claim, v.kind,
             *(map_cell([r for r in v.results if _group(r.setting) == group]) for group in groups)]
            for v in verdicts]
    return ["conclusion", "verdict", *groups], rows


def and_list(items: Sequence[str], *, empty: str = "none") -> str:
    """``items`` as prose: ``"a"``, ``"a and b"``, ``"a, b and c"``; ``empty`` if there are none."""
    items = check_text_sequence("items", items)
    check_text("empty", empty)
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- argument checks -----------------------------------------------------------------------------
def _check_solved(solved: Any) -> float:
    return check_real("solved", solved, low=0.0, low_open=True, high=1.0)


def _check_values(name: str, values: Any) -> list[float]:
    """One finite number per seed, at least one."""
    if isinstance(values, str | bytes):
        raise TypeError(f"{name} must be a sequence of numbers (one per seed), got the string {values!r}")
    checked = check_reals(name, values)
    if checked.ndim != 1 or checked.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of numbers (one per seed), got {values!r}")
    return [float(v) for v in checked]


def _check_by_lr(by_lr: Any) -> None:
    check_mapping("by_lr", by_lr, min_len=1, what="a dict of learning rate -> runs")
    for lr, runs in by_lr.items():
        check_real("by_lr key", lr, low=0.0, low_open=True)
        check_results(f"by_lr[{lr!r}]", runs)
