"""A seeded, deterministic CPU training loop for :class:`posenc.models.TinyTransformer`.

* :class:`TrainConfig` holds everything that defines a run (a plain, JSON-friendly record).
* :func:`train` trains one model and returns it with a :class:`RunResult`
  (config, seed, metrics, a short loss history, wall time).
* :func:`evaluate` measures token accuracy on fresh sequences of any length.
* :func:`run_grid` runs many configs over several seeds; :func:`summarize` turns the
  results into mean ± standard deviation rows (plain dicts, no pandas needed).
* :func:`save_results` / :func:`load_results` store results as JSON.

Every scheme in a grid gets the same budget: same task, steps, batch size, learning
rate, model width and depth. Training data is drawn from a generator seeded by the
run's seed; test data comes from a separate, fixed evaluation seed, so all schemes are
scored on the very same test sequences.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from posenc.checks import check_choice, check_nonnegative_int, check_positive_float, check_positive_int
from posenc.extrapolate import STRATEGIES
from posenc.models import TinyTransformer
from posenc.params import module_parameter_count
from posenc.tasks import IGNORE_INDEX, Task, fixed_dataset, make_generator, make_task, token_accuracy

__all__ = [
    "TrainConfig",
    "RunResult",
    "build_model",
    "train",
    "fine_tune",
    "evaluate",
    "position_accuracy",
    "reproduce",
    "run_grid",
    "summarize",
    "save_results",
    "load_results",
    "scheme_label",
    "select",
    "curve",
    "steps_to_reach",
    "reach_summary",
    "reach_text",
    "metric_stats",
    "accuracy_by_length",
    "position_curve",
    "bar_figure",
    "errorbar_figure",
    "EVAL_SEED",
]

#: Seed of the test sequences every run is scored on (independent of the training seed).
EVAL_SEED = 2_024_000
#: Offset between a run's seed and the seed of its training-data generator, so the
#: initial weights and the data come from unrelated random streams.
_DATA_SEED_OFFSET = 1_000_003


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines one training run.

    Attributes:
        task: a name from :func:`posenc.tasks.available_tasks`; task_options: its options.
        scheme: a name from :func:`posenc.models.available_schemes`;
            position_options: its options (e.g. ``{"init": "gpt2"}``).
        seed: seeds the weights and the training data.
        seq_len: training sequence length.
        steps, batch_size, lr: optimisation budget (AdamW, warm-up then cosine decay).
        d_model, n_heads, n_layers: model size.
        n_train_examples: ``None`` draws fresh sequences every step; a number trains on a
            fixed set of that many sequences (the low-data regime).
        max_len: rows of a learned table (default ``seq_len``).
        combine, d_pos: how token and position vectors meet (see ``TinyTransformer``).
        causal: causal attention mask.
        token_init_std: initial scale of the token embeddings (see ``TinyTransformer``).
        weight_decay: AdamW weight decay.
        eval_lengths: extra test lengths; ``metrics["accuracy@L"]`` for each.
        eval_extrapolations: for a learned table, also test every eval length past the
            table with these workarounds: ``metrics["accuracy@L:clip"]`` etc.
        eval_examples: test sequences per length.
        log_every: steps between history entries.
        curve_examples: if > 0, every history entry also records ``"accuracy"`` at the
            training length on this many test sequences (a learning curve).
        per_position: also store accuracy at every position for each eval length (and
            workaround) in ``RunResult.extras["position_accuracy@L"]`` (``...@L:strategy``).
    """

    task: str = "copy_offset"
    scheme: str = "sinusoidal"
    seed: int = 0
    seq_len: int = 16
    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    position_options: dict[str, Any] = field(default_factory=dict)
    n_train_examples: int | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    max_len: int | None = None
    combine: str = "add"
    d_pos: int | None = None
    causal: bool = False
    token_init_std: float = 1.0
    weight_decay: float = 0.0
    eval_lengths: tuple[int, ...] = ()
    eval_extrapolations: tuple[str, ...] = ()
    eval_examples: int = 512
    log_every: int = 25
    curve_examples: int = 0
    per_position: bool = False

    def __post_init__(self) -> None:
        check_nonnegative_int("seed", self.seed)
        check_positive_int("seq_len", self.seq_len)
        check_positive_int("steps", self.steps)
        check_positive_int("batch_size", self.batch_size)
        check_positive_float("lr", self.lr)
        check_positive_float("token_init_std", self.token_init_std)
        check_positive_int("eval_examples", self.eval_examples)
        check_positive_int("log_every", self.log_every)
        check_nonnegative_int("curve_examples", self.curve_examples)
        if self.n_train_examples is not None:
            check_positive_int("n_train_examples", self.n_train_examples)
        if self.max_len is not None:
            check_positive_int("max_len", self.max_len)
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        for length in self.eval_lengths:
            check_positive_int("eval_lengths entry", length)
        for strategy in self.eval_extrapolations:
            check_choice("eval_extrapolations entry", strategy, STRATEGIES)
        # Lists from JSON become tuples so configs compare equal after a round trip.
        object.__setattr__(self, "eval_lengths", tuple(int(n) for n in self.eval_lengths))
        object.__setattr__(self, "eval_extrapolations", tuple(self.eval_extrapolations))
        object.__setattr__(self, "position_options", dict(self.position_options))
        object.__setattr__(self, "task_options", dict(self.task_options))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (tuples become lists)."""
        data = asdict(self)
        data["eval_lengths"] = list(self.eval_lengths)
        data["eval_extrapolations"] = list(self.eval_extrapolations)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Inverse of :meth:`to_dict`; unknown keys raise a ValueError naming them."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s) {unknown}; allowed: {sorted(known)}")
        return cls(**data)


@dataclass
class RunResult:
    """The record of one run.

    Attributes:
        config: ``TrainConfig.to_dict()`` of the run.
        seed: the run's seed (also in ``config``).
        metrics: ``"accuracy"`` (at the training length), ``"accuracy@L"`` per eval
            length, ``"accuracy@L:strategy"`` per workaround, ``"final_loss"``,
            ``"n_parameters"``.
        history: ``[{"step": s, "loss": l}, ...]`` (mean training loss since the last entry;
            plus ``"accuracy"`` when ``curve_examples > 0``).
        wall_time_s: training plus evaluation time in seconds.
        extras: larger per-run data, e.g. per-position accuracies (lists; ``None`` where a
            position has no label).
    """

    config: dict[str, Any]
    seed: int
    metrics: dict[str, float]
    history: list[dict[str, float]]
    wall_time_s: float
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        return cls(
            config=dict(data["config"]),
            seed=int(data["seed"]),
            metrics={k: float(v) for k, v in data["metrics"].items()},
            history=list(data.get("history", [])),
            wall_time_s=float(data["wall_time_s"]),
            extras=dict(data.get("extras", {})),
        )

    @property
    def train_config(self) -> TrainConfig:
        return TrainConfig.from_dict(self.config)


def scheme_label(scheme: str, position_options: dict[str, Any] | None = None, combine: str = "add") -> str:
    """A short human-readable name, e.g. ``"learned (gpt2)"`` or ``"sinusoidal, concat"``."""
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


def build_model(config: TrainConfig, task: Task | None = None) -> TinyTransformer:
    """The untrained model a config describes (weights drawn from the global torch RNG)."""
    task = task or make_task(config.task, **config.task_options)
    return TinyTransformer(
        task.vocab_size,
        task.n_outputs,
        d_model=config.d_model,
        n_heads=config.n_heads,
        n_layers=config.n_layers,
        max_len=config.max_len or config.seq_len,
        position=config.scheme,
        position_options=config.position_options,
        causal=config.causal,
        combine=config.combine,
        d_pos=config.d_pos,
        token_init_std=config.token_init_std,
    )


def _lr_factor(step: int, total: int) -> float:
    """Linear warm-up over the first 10% of steps, then cosine decay to 10% of the peak."""
    warmup = max(1, total // 10)
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


@torch.no_grad()
def _count_correct(
    model: nn.Module, task: Task, seq_len: int, n_examples: int, seed: int, batch_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position counts ``(correct, labelled)``, each ``(seq_len,)`` long."""
    n_examples = check_positive_int("n_examples", n_examples)
    batch_size = check_positive_int("batch_size", batch_size)
    generator = make_generator(seed)
    was_training = model.training
    model.eval()
    correct = torch.zeros(seq_len, dtype=torch.long)
    labelled = torch.zeros(seq_len, dtype=torch.long)
    try:
        for start in range(0, n_examples, batch_size):
            tokens, targets = task.sample(min(batch_size, n_examples - start), seq_len, generator)
            predictions = model(tokens).argmax(dim=-1)
            mask = targets != IGNORE_INDEX
            correct += ((predictions == targets) & mask).sum(dim=0)
            labelled += mask.sum(dim=0)
    finally:
        model.train(was_training)
    return correct, labelled


def evaluate(
    model: nn.Module,
    task: Task,
    seq_len: int,
    *,
    n_examples: int = 512,
    seed: int = EVAL_SEED,
    batch_size: int = 256,
) -> float:
    """Token accuracy of ``model`` on ``n_examples`` fresh sequences of length ``seq_len``.

    Sequences come from a ``torch.Generator`` seeded with ``seed``: same seed, same test set.

    Args:
        model: maps ``(batch, seq_len)`` tokens to ``(batch, seq_len, n_outputs)`` logits.
        task: the task that draws and labels the sequences.

    Returns:
        Accuracy in ``[0, 1]`` over labelled positions.
    """
    correct, labelled = _count_correct(model, task, seq_len, n_examples, seed, batch_size)
    if int(labelled.sum()) == 0:
        raise ValueError(f"no labelled positions at seq_len={seq_len} for task {task!r}")
    return int(correct.sum()) / int(labelled.sum())


def position_accuracy(
    model: nn.Module,
    task: Task,
    seq_len: int,
    *,
    n_examples: int = 512,
    seed: int = EVAL_SEED,
    batch_size: int = 256,
) -> list[float | None]:
    """Accuracy at each position ``0 .. seq_len - 1`` (``None`` where nothing is labelled).

    Same test sequences as :func:`evaluate` with the same arguments.
    """
    correct, labelled = _count_correct(model, task, seq_len, n_examples, seed, batch_size)
    return [int(c) / int(n) if int(n) else None for c, n in zip(correct, labelled, strict=True)]


def _progress_bar(total: int, enabled: bool, desc: str) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False)


def train(config: TrainConfig, *, progress: bool = False) -> tuple[TinyTransformer, RunResult]:
    """Train one model as ``config`` says and evaluate it.

    Deterministic on CPU: the same config gives the same weights and metrics (the run
    enables ``torch.use_deterministic_algorithms`` and restores the previous setting).

    Args:
        config: the run.
        progress: show a tqdm progress bar over training steps.

    Returns:
        ``(model, result)``; the model is in eval mode.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    task = make_task(config.task, **config.task_options)
    start = time.perf_counter()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(config.seed)
        model = build_model(config, task)
        data_generator = make_generator(config.seed + _DATA_SEED_OFFSET)
        dataset = None
        if config.n_train_examples is not None:
            dataset = fixed_dataset(task, config.n_train_examples, config.seq_len, seed=config.seed + _DATA_SEED_OFFSET)
        # foreach: the multi-tensor update, ~10% faster per step on CPU for this small model.
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, foreach=True)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, config.steps))
        history: list[dict[str, float]] = []
        running, count = 0.0, 0
        bar = _progress_bar(config.steps, progress, scheme_label(config.scheme, config.position_options))
        model.train()
        for step in range(config.steps):
            if dataset is None:
                tokens, targets = task.sample(config.batch_size, config.seq_len, data_generator)
            else:
                index = torch.randint(0, dataset[0].shape[0], (config.batch_size,), generator=data_generator)
                tokens, targets = dataset[0][index], dataset[1][index]
            logits = model(tokens)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            running += float(loss.detach())
            count += 1
            if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
                entry = {"step": step + 1, "loss": running / count}
                if config.curve_examples:
                    entry["accuracy"] = evaluate(model, task, config.seq_len, n_examples=config.curve_examples)
                history.append(entry)
                if bar is not None:
                    bar.set_postfix(loss=f"{running / count:.3f}")
                running, count = 0.0, 0
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        model.eval()
        metrics, extras = _evaluate_all(model, task, config)
        metrics["final_loss"] = history[-1]["loss"]
        metrics["n_parameters"] = float(module_parameter_count(model, trainable_only=True))
    finally:
        torch.use_deterministic_algorithms(previous_deterministic)
    result = RunResult(
        config=config.to_dict(),
        seed=config.seed,
        metrics=metrics,
        history=history,
        wall_time_s=time.perf_counter() - start,
        extras=extras,
    )
    return model, result


def fine_tune(
    model: nn.Module,
    task: Task,
    seq_len: int,
    *,
    steps: int,
    lr: float = 1e-3,
    batch_size: int = 32,
    seed: int = 0,
) -> list[float]:
    """Continue training ``model`` on fresh sequences of length ``seq_len`` (in place).

    Constant learning rate (AdamW), deterministic for a given ``seed``. This is the short
    adaptation step position interpolation relies on (Chen et al., 2023).

    Returns:
        The training loss of every step.
    """
    steps = check_positive_int("steps", steps)
    lr = check_positive_float("lr", lr)
    batch_size = check_positive_int("batch_size", batch_size)
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    generator = make_generator(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=True)
    losses = []
    model.train()
    try:
        for _ in range(steps):
            tokens, targets = task.sample(batch_size, seq_len, generator)
            logits = model(tokens)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    finally:
        model.eval()
        torch.use_deterministic_algorithms(previous_deterministic)
    return losses


def _evaluate_all(model: TinyTransformer, task: Task, config: TrainConfig) -> tuple[dict[str, float], dict[str, Any]]:
    metrics: dict[str, float] = {}
    extras: dict[str, Any] = {}

    def score(key: str, length: int) -> None:
        if config.per_position:
            per_position = position_accuracy(model, task, length, n_examples=config.eval_examples)
            extras[f"position_accuracy@{key}"] = per_position
        metrics[f"accuracy@{key}"] = evaluate(model, task, length, n_examples=config.eval_examples)

    lengths = list(dict.fromkeys([config.seq_len, *config.eval_lengths]))
    table_len = getattr(model.position, "table_len", None)
    for length in lengths:
        if model.position.max_len is None or length <= model.position.max_len:
            score(str(length), length)
        if table_len is not None and length > table_len:
            saved = model.position.extrapolation
            try:
                for strategy in config.eval_extrapolations:
                    model.position.set_extrapolation(strategy)
                    score(f"{length}:{strategy}", length)
            finally:
                model.position.set_extrapolation(saved)
    metrics["accuracy"] = metrics[f"accuracy@{config.seq_len}"]
    if f"accuracy@{config.seq_len}" not in [f"accuracy@{n}" for n in config.eval_lengths]:
        del metrics[f"accuracy@{config.seq_len}"]
    return metrics, extras


def reproduce(stored: RunResult) -> tuple[TinyTransformer, RunResult, float]:
    """Re-run a stored run from its config and compare.

    Returns:
        ``(model, new_result, largest_difference)``, where the difference is the largest
        absolute difference between stored and new metrics (``inf`` if the metric names
        differ). Zero on the machine that made the file; CPU thread counts can change the
        rounding elsewhere.
    """
    model, again = train(stored.train_config)
    if again.metrics.keys() != stored.metrics.keys():
        return model, again, math.inf
    return model, again, max(abs(again.metrics[k] - v) for k, v in stored.metrics.items())


def run_grid(
    configs: Iterable[TrainConfig],
    seeds: Sequence[int],
    *,
    progress: bool = False,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Train every config with every seed (the config's own ``seed`` is replaced).

    Args:
        configs: the grid's cells.
        seeds: seeds to run each cell with (at least one).
        progress: a tqdm bar over runs.
        on_result: called with each result as soon as it exists (e.g. to save partial work).

    Returns:
        Results in order: for each config, for each seed.
    """
    configs = list(configs)
    seeds = [check_nonnegative_int("seeds entry", s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    runs = [replace(config, seed=seed) for config in configs for seed in seeds]
    bar = _progress_bar(len(runs), progress, "grid")
    results = []
    for config in runs:
        _, result = train(config)
        results.append(result)
        if on_result is not None:
            on_result(result)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return results


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
        Rows in first-seen order: the ``by`` fields (plus ``"label"``), ``"metric"``,
        ``"n"``, ``"mean"``, ``"std"`` (sample standard deviation over seeds, 0 for one
        run), ``"min"``, ``"max"``, ``"values"``.
    """
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
            label = scheme_label(
                result.config.get("scheme", "?"),
                result.config.get("position_options"),
                result.config.get("combine", "add"),
            )
            groups[token] = {**group, "label": label, "values": []}
        groups[token]["values"].append(result.metrics[metric])
    rows = []
    for row in groups.values():
        values = row["values"]
        rows.append(
            {
                **row,
                "metric": metric,
                "n": len(values),
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "min": min(values),
                "max": max(values),
            }
        )
    return rows


def save_results(results: Sequence[RunResult], path: str | Path, *, meta: dict[str, Any] | None = None) -> Path:
    """Write results (and optional metadata, e.g. the command that made them) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta or {}, "results": [r.to_dict() for r in results]}
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path


def load_results(path: str | Path) -> tuple[list[RunResult], dict[str, Any]]:
    """Read what :func:`save_results` wrote: ``(results, meta)``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no results file at {path}; regenerate it with experiments/run_grid.py")
    payload = json.loads(path.read_text())
    return [RunResult.from_dict(r) for r in payload["results"]], dict(payload.get("meta", {}))


# -- reading results back ---------------------------------------------------------------------
def select(results: Sequence[RunResult], **where: Any) -> list[RunResult]:
    """Results whose config has every ``field=value`` in ``where``.

    Example: ``select(results, scheme="learned", combine="concat")``.
    """
    chosen = []
    for result in results:
        for key, value in where.items():
            if key not in result.config:
                raise ValueError(f"{key!r} is not a config field; fields: {sorted(result.config)}")
        if all(result.config[key] == value for key, value in where.items()):
            chosen.append(result)
    return chosen


def curve(results: Sequence[RunResult], key: str = "accuracy") -> tuple[list[int], list[float], list[float]]:
    """Mean and sample standard deviation over runs of ``history[i][key]`` at each logged step.

    All runs must share the same logged steps (runs of one grid cell do).

    Returns:
        ``(steps, means, stds)``.
    """
    if not results:
        raise ValueError("results is empty")
    steps = [int(h["step"]) for h in results[0].history]
    for result in results:
        if [int(h["step"]) for h in result.history] != steps:
            raise ValueError("runs log different steps; pass runs of one grid cell")
        if any(key not in h for h in result.history):
            raise ValueError(f"history entries lack {key!r} (train with curve_examples > 0 for 'accuracy')")
    columns = list(zip(*[[float(h[key]) for h in r.history] for r in results], strict=True))
    means = [statistics.fmean(c) for c in columns]
    stds = [statistics.stdev(c) if len(c) > 1 else 0.0 for c in columns]
    return steps, means, stds


def steps_to_reach(result: RunResult, threshold: float = 0.9, key: str = "accuracy") -> int | None:
    """First logged step whose ``history[key]`` is at least ``threshold`` (``None`` if never)."""
    for entry in result.history:
        if key not in entry:
            raise ValueError(f"history entries lack {key!r} (train with curve_examples > 0)")
        if entry[key] >= threshold:
            return int(entry["step"])
    return None


# -- figures -----------------------------------------------------------------------------------
def bar_figure(
    rows: Sequence[dict[str, Any]],
    *,
    title: str,
    y_title: str,
    alt: str,
    caption: str | None = None,
    y_range: tuple[float, float] | None = (0.0, 1.05),
    reference: tuple[float, str] | None = None,
    height: int = 420,
) -> Any:
    """Bars of ``mean`` with ``std`` error bars, plus one dot per seed, for :func:`summarize` rows.

    Args:
        rows: rows with ``"label"``, ``"mean"``, ``"std"``, ``"values"``.
        reference: optional ``(y, text)`` drawn as a dashed horizontal line (e.g. chance).
    """
    import plotly.graph_objects as go

    from posenc.plots import OKABE_ITO, new_figure

    fig = new_figure(title=title, x_title="position scheme", y_title=y_title, alt=alt, caption=caption, height=height)
    labels = [row["label"] for row in rows]
    fig.add_trace(go.Bar(
        x=labels, y=[row["mean"] for row in rows], name="mean over seeds", marker_color=OKABE_ITO[0],
        error_y=dict(type="data", array=[row["std"] for row in rows], visible=True, color="#333"),
        hovertemplate="%{x}: mean %{y:.3f}<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[row["label"] for row in rows for _ in row["values"]], y=[v for row in rows for v in row["values"]],
        mode="markers", name="one seed", marker=dict(color=OKABE_ITO[1], size=7, line=dict(color="#333", width=1)),
        hovertemplate="%{x}: %{y:.3f}<extra>one seed</extra>",
    ))
    if reference is not None:
        fig.add_hline(y=reference[0], line_dash="dash", line_color="#555", annotation_text=reference[1],
                      annotation_position="top right")
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    fig.update_layout(legend=dict(orientation="h", y=-0.3), margin=dict(b=140))
    return fig


def errorbar_figure(
    series: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    alt: str,
    caption: str | None = None,
    band: bool = False,
    log_x: bool = False,
    y_range: tuple[float, float] | None = (0.0, 1.05),
    bounds: tuple[float, float] | None = (0.0, 1.0),
    styles: dict[str, dict[str, Any]] | None = None,
    legend_below: bool = False,
    height: int = 440,
) -> Any:
    """Lines of means with error bars (or shaded ±std bands), one per series.

    Args:
        series: label -> ``(xs, means, stds)``.
        band: draw ±std as a shaded band instead of error bars (for dense x, e.g. steps).
        bounds: the range the values can take (accuracy: 0 to 1); bands are clipped to it.
        styles: optional label -> line properties (e.g. ``{"color": ..., "dash": "dot"}``) to
            group related series; others get the palette in order.
        legend_below: put the legend under the plot (for many series).
    """
    import plotly.graph_objects as go

    from posenc.plots import OKABE_ITO, new_figure

    fig = new_figure(title=title, x_title=x_title, y_title=y_title, alt=alt, caption=caption, height=height)
    dashes = ("solid", "dash", "dot", "dashdot")
    # Yellow is too pale for thin lines on white; the other seven Okabe-Ito colours are not.
    colours = [c for c in OKABE_ITO if c != "#F0E442"]
    low, high = bounds if bounds is not None else (-math.inf, math.inf)
    for i, (label, (xs, means, stds)) in enumerate(series.items()):
        colour = colours[i % len(colours)]
        line = dict(color=colour, width=2, dash=dashes[(i // len(colours)) % len(dashes)])
        line.update((styles or {}).get(label, {}))
        colour = line["color"]
        if band:
            # a band past what the values can reach (accuracy above 1) would only mislead
            upper = [min(m + s, high) for m, s in zip(means, stds, strict=True)]
            lower = [max(m - s, low) for m, s in zip(means, stds, strict=True)]
            fig.add_trace(go.Scatter(x=list(xs) + list(xs)[::-1], y=upper + lower[::-1], fill="toself",
                                     fillcolor=_rgba(colour, 0.18), line=dict(width=0), hoverinfo="skip",
                                     showlegend=False, legendgroup=label))
            fig.add_trace(go.Scatter(x=list(xs), y=list(means), mode="lines", name=label, line=line,
                                     legendgroup=label))
        else:
            fig.add_trace(go.Scatter(
                x=list(xs), y=list(means), mode="lines+markers", name=label, line=line,
                error_y=dict(type="data", array=list(stds), visible=True, color=colour),
            ))
    if log_x:
        fig.update_xaxes(type="log")
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    if legend_below:
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0), margin=dict(b=170))
    return fig


def _rgba(hex_colour: str, alpha: float) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def metric_stats(results: Sequence[RunResult], key: str) -> tuple[float, float, int]:
    """``(mean, sample std, n)`` of ``metrics[key]`` over ``results`` (std 0 for one run)."""
    values = [r.metrics[key] for r in results if key in r.metrics]
    if not values:
        raise ValueError(f"no result has metric {key!r}")
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0), len(values)


def accuracy_by_length(
    results: Sequence[RunResult], lengths: Sequence[int], *, strategy: str | None = None
) -> tuple[list[int], list[float], list[float]]:
    """Mean and std over runs of the accuracy at each test length.

    For a learned table, lengths past the table are read from ``"accuracy@L:strategy"``;
    lengths inside it (and every length of other schemes) from ``"accuracy@L"``.

    Returns:
        ``(lengths, means, stds)``.
    """
    means, stds = [], []
    for length in lengths:
        key = f"accuracy@{length}"
        if strategy is not None and any(f"{key}:{strategy}" in r.metrics for r in results):
            key = f"{key}:{strategy}"
        mean, std, _ = metric_stats(results, key)
        means.append(mean)
        stds.append(std)
    return list(lengths), means, stds


def position_curve(results: Sequence[RunResult], key: str) -> tuple[list[int], list[float], list[float]]:
    """Mean and std over runs of ``extras["position_accuracy@" + key]`` at each labelled position.

    Args:
        key: e.g. ``"64"`` or ``"64:clip"``.

    Returns:
        ``(positions, means, stds)``, unlabelled positions left out.
    """
    name = f"position_accuracy@{key}"
    rows = [r.extras[name] for r in results if name in r.extras]
    if not rows:
        raise ValueError(f"no result has extras[{name!r}] (train with per_position=True)")
    positions, means, stds = [], [], []
    for position, column in enumerate(zip(*rows, strict=True)):
        if column[0] is None:
            continue
        positions.append(position)
        means.append(statistics.fmean(column))
        stds.append(statistics.stdev(column) if len(column) > 1 else 0.0)
    return positions, means, stds


def reach_summary(results: Sequence[RunResult], threshold: float = 0.9, *, label: str = "") -> dict[str, Any]:
    """How fast runs got to ``threshold`` accuracy (see :func:`steps_to_reach`).

    Returns:
        ``{"label", "n", "reached" (runs that got there), "values" (their steps), "mean", "std"}``;
        ``mean``/``std`` are over the runs that got there (``nan`` if none did).
    """
    steps = [steps_to_reach(r, threshold) for r in results]
    hits = [s for s in steps if s is not None]
    return {
        "label": label,
        "n": len(steps),
        "reached": len(hits),
        "values": hits,
        "mean": statistics.fmean(hits) if hits else math.nan,
        "std": statistics.stdev(hits) if len(hits) > 1 else 0.0,
    }


def reach_text(summary: dict[str, Any]) -> str:
    """``"415 ± 58 (5 of 5)"`` or ``"never (0 of 5)"`` for a :func:`reach_summary` dict."""
    got = f"({summary['reached']} of {summary['n']})"
    if not summary["reached"]:
        return f"never {got}"
    return f"{summary['mean']:.0f} ± {summary['std']:.0f} {got}"
