"""A seeded, deterministic CPU training loop for :class:`posenc.models.TinyTransformer`.

* :class:`TrainConfig` holds everything that defines a run (a plain, JSON-friendly record).
* :func:`train` trains one model and returns it with a :class:`posenc.results.RunResult`
  (config, seed, metrics, a short loss history, wall time).
* :func:`evaluate` and :func:`position_accuracy` measure token accuracy on fresh sequences
  of any length; :func:`fine_tune` continues training a model at a new length.
* :func:`new_position_accuracy` scores only the positions a model never saw in training
  (``i >= train_len``); :func:`split_seen_new` splits a per-position curve into its seen
  and new parts; :func:`position_counts` gives the per-position counts behind both.
* :func:`reproduce` re-runs a stored run and reports how far its metrics moved;
  :func:`run_metrics` scores an already trained model (e.g. one loaded with
  :mod:`posenc.checkpoint`) as :func:`train` would. The book's grids of runs are trained
  by ``make grids`` (``experiments/``), which calls :func:`train` for every run.

Reading results back (saving, loading, selecting, mean ± std over seeds) is
:mod:`posenc.results`; their figures are :mod:`posenc.results_plots`.

Every scheme in a grid gets the same budget: same task, steps, batch size, learning
rate, model width and depth. Training data is drawn from a generator seeded by the
run's seed; test data comes from a separate, fixed evaluation seed, so all schemes are
scored on the very same test sequences.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from posenc.checks import (
    check_bool,
    check_choice,
    check_choice_sequence,
    check_generator,
    check_instance,
    check_int_sequence,
    check_mapping,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
    check_real,
)
from posenc.extrapolate import STRATEGIES
from posenc.models import COMBINE_MODES, TinyTransformer
from posenc.params import module_parameter_count
from posenc.registry import available_schemes, builtin_specs, scheme_spec
from posenc.results import LATER_FIELD_DEFAULTS, RunResult, scheme_label
from posenc.rope_scaling import SETUPS, RopeScaling
from posenc.runtime import single_thread
from posenc.perplexity import length_scores
from posenc.tasks import IGNORE_INDEX, LanguageModelTask, Task, available_tasks, fixed_dataset, make_generator, make_task

__all__ = [
    "TrainConfig",
    "build_model",
    "train",
    "fine_tune",
    "evaluate",
    "position_accuracy",
    "position_counts",
    "new_position_accuracy",
    "SeenNewSplit",
    "split_seen_new",
    "reproduce",
    "run_metrics",
    "EVAL_SEED",
    "VALIDATION_SEED",
    "random_position_ids",
    "position_coverage",
]

#: Seed of the test sequences every run is scored on (independent of the training seed).
EVAL_SEED = 2_024_000
#: Offset between a run's seed and the seed of its training-data generator, so the
#: initial weights and the data come from unrelated random streams.
_DATA_SEED_OFFSET = 1_000_003


#: Seed of the validation sequences (``TrainConfig.validation_examples``), disjoint from the test seed.
VALIDATION_SEED = 2_024_777
#: Offset between a token stream's seed and the seed of its randomized positions
#: (``TrainConfig.random_positions``): the tokens are those of the run without them.
_POSITION_SEED_OFFSET = 7_000_003


def random_position_ids(batch_size: int, length: int, n_positions: int, generator: torch.Generator) -> torch.Tensor:
    """Randomized positions (Ruoss et al., 2023): for each row, ``length`` distinct positions from
    ``0 .. n_positions - 1``, sorted, drawn uniformly.

    Returns:
        ``(batch_size, length)`` long position ids, increasing along each row.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    length = check_positive_int("length", length)
    n_positions = check_positive_int("n_positions", n_positions)
    check_instance("generator", generator, torch.Generator, what="a torch.Generator (posenc.tasks.make_generator)")
    if length > n_positions:
        raise ValueError(f"length must be <= n_positions ({n_positions}) for distinct positions, got {length}")
    keys = torch.rand(batch_size, n_positions, generator=generator)
    return keys.argsort(dim=1)[:, :length].sort(dim=1).values


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
        eval_lengths: extra test lengths; ``metrics["accuracy@L"]`` for each. A length past the
            end of a learned table (more positions than its rows) has no plain ``accuracy@L``: it is
            scored with each workaround of ``eval_extrapolations`` instead, and needs at least one;
            past the end of another scheme of fixed length (the factored and hierarchical hybrids)
            it is an error. :func:`train` checks this before it trains. On the text task every
            length (the training length too) is also read in bits per byte on the test documents
            (:func:`posenc.perplexity.length_scores`): ``"bpb@L"``, ``"bpb_slide@L"`` (the model as
            trained only, not its workarounds or scalings) and, past the training length,
            ``"bpb_new@L"``, with the loss profile in ``extras["bpb_profile@L"]``.
        eval_extrapolations: for a learned table, also test every eval length past the
            table with these workarounds: ``metrics["accuracy@L:clip"]`` etc. (Ignored by
            schemes without a table, so one list serves a whole grid.)
        eval_examples: test sequences per length.
        log_every: steps between history entries.
        curve_examples: if > 0, every history entry also records ``"accuracy"`` at the
            training length on this many test sequences (a learning curve).
        per_position: also store accuracy at every position for each eval length (and
            workaround) in ``RunResult.extras["position_accuracy@L"]`` (``...@L:strategy``).
        bos_token: put one learned anchor token (like BERT's ``[CLS]``) in front of every
            input (see ``TinyTransformer``).
        score_new_positions: for every eval length ``L > seq_len`` also store
            ``metrics["new@L"]`` (and ``"new@L:strategy"``), the accuracy over the positions
            ``>= seq_len`` only, which the model never saw in training
            (:func:`new_position_accuracy`).
        validation_examples: if > 0, ``metrics["val_accuracy"]``: accuracy at the training
            length on this many sequences from a validation seed (:data:`VALIDATION_SEED`),
            disjoint from the test sequences, for choosing hyper-parameters.
        finetune_steps, finetune_len, finetune_lr: if ``finetune_steps > 0``, after the test,
            copies of the model are fine-tuned (:func:`fine_tune`, seed = the run's seed) at
            ``finetune_len`` tokens in batches of ``batch_size``: one copy per workaround in ``eval_extrapolations`` for a
            learned table, else one copy. Stored as ``metrics["ft_new@N"]`` (new positions
            at ``N = finetune_len``) and ``metrics["ft@T"]`` (the training length ``T``
            afterwards), with ``":strategy"`` for a table's workarounds.
        rope_scalings: for ``scheme="rope"``, set-ups of :data:`posenc.rope_scaling.SETUPS`
            (every method but ``"none"``, and ``"yarn_rotations"``) to test at every eval length ``L > seq_len``, each set up to stretch
            ``seq_len`` to ``L`` (:meth:`posenc.rope_scaling.RopeScaling.for_length`):
            ``metrics["accuracy@L:method"]``, ``"new@L:method"`` and ``"short@L:method"``
            (accuracy at ``seq_len`` with the method set up for ``L``: what it costs short
            inputs; on the text task also ``"short_bpb@L:method"``, in bits per byte). With fine-tuning, one more copy per method: ``"ft_new@N:method"``,
            ``"ft@T:method"``.
        exact_match: also score whole sequences, as Kazemnejad et al. (2023) do: for every
            test length ``L``, ``metrics["exact@L"]`` is the share of test sequences whose
            every labelled position is right, and (past the training length, with
            ``score_new_positions``) ``metrics["new_exact@L"]`` the share whose every labelled
            new position is right; ``"exact"`` at the training length.
        min_seq_len: if set, each training batch has its own length, drawn uniformly from
            ``min_seq_len .. seq_len`` (training lengths that vary, as in Kazemnejad et al.,
            2023); validation and test sequences keep their lengths. Not with
            ``n_train_examples``.
        curriculum_steps: with ``min_seq_len``, a length curriculum: the longest length a
            batch may have grows linearly from ``min_seq_len`` at step 0 to ``seq_len`` at step
            ``curriculum_steps`` (and stays there); each batch's length is drawn uniformly below
            it. Long-range lookups that never start to learn at long lengths learn first on
            short ones, as real models are pre-trained on short contexts first.
        random_positions: if set, randomized positions (Ruoss et al., 2023): every sequence,
            in training and at test, is read at a sorted random subset of the positions
            ``0 .. random_positions - 1`` instead of ``0 .. L - 1``, so positions far past the
            training length are seen in training. Learned tables get ``random_positions``
            rows; every test length must be ``<= random_positions``. The tokens drawn are
            those of the same run without it (the positions come from their own random
            stream), so the two arms pair seed by seed. Not with fine-tuning.

    The fields from ``bos_token`` on were added after the first grids were stored:
    :meth:`to_dict` leaves them out while they hold their defaults, so those grids'
    configurations (and the cache keys made from them) are unchanged.
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
    bos_token: bool = False
    score_new_positions: bool = False
    validation_examples: int = 0
    finetune_steps: int = 0
    finetune_len: int | None = None
    finetune_lr: float = 1e-3
    rope_scalings: tuple[str, ...] = ()
    exact_match: bool = False
    min_seq_len: int | None = None
    random_positions: int | None = None
    curriculum_steps: int | None = None

    def __post_init__(self) -> None:
        check_choice("task", self.task, available_tasks())
        check_choice("scheme", self.scheme, available_schemes())
        check_nonnegative_int("seed", self.seed)
        check_positive_int("seq_len", self.seq_len)
        check_positive_int("steps", self.steps)
        check_positive_int("batch_size", self.batch_size)
        check_positive_float("lr", self.lr)
        for name in ("d_model", "n_heads", "n_layers"):
            check_positive_int(name, getattr(self, name))
        check_mapping("position_options", self.position_options, what="a dict of the scheme's options ({} for none)")
        check_mapping("task_options", self.task_options, what="a dict of the task's options ({} for none)")
        check_choice("combine", self.combine, COMBINE_MODES)
        if self.d_pos is not None:
            check_positive_int("d_pos", self.d_pos)
        check_bool("causal", self.causal)
        check_real("weight_decay", self.weight_decay, low=0.0)
        check_positive_float("token_init_std", self.token_init_std)
        check_positive_int("eval_examples", self.eval_examples)
        check_positive_int("log_every", self.log_every)
        check_nonnegative_int("curve_examples", self.curve_examples)
        check_nonnegative_int("validation_examples", self.validation_examples)
        check_nonnegative_int("finetune_steps", self.finetune_steps)
        check_positive_float("finetune_lr", self.finetune_lr)
        for name in ("bos_token", "score_new_positions", "per_position", "exact_match"):
            check_bool(name, getattr(self, name))
        if self.finetune_steps and self.finetune_len is None:
            raise ValueError(f"finetune_steps={self.finetune_steps} needs finetune_len (the length to fine-tune at)")
        if self.finetune_len is not None:
            check_positive_int("finetune_len", self.finetune_len)
            if self.finetune_len <= self.seq_len:
                raise ValueError(f"finetune_len must be > seq_len ({self.seq_len}), got {self.finetune_len}")
        if self.n_train_examples is not None:
            check_positive_int("n_train_examples", self.n_train_examples)
        if self.max_len is not None:
            check_positive_int("max_len", self.max_len)
        # sequences of lengths and names: ``(32)`` is the int 32 and ``("clip")`` the string "clip", never iterated
        eval_lengths = check_int_sequence("eval_lengths", self.eval_lengths)
        eval_extrapolations = check_choice_sequence("eval_extrapolations", self.eval_extrapolations, STRATEGIES)
        rope_scalings = check_choice_sequence("rope_scalings", self.rope_scalings, tuple(SETUPS))
        if self.min_seq_len is not None:
            check_positive_int("min_seq_len", self.min_seq_len)
            if self.min_seq_len > self.seq_len:
                raise ValueError(f"min_seq_len must be <= seq_len ({self.seq_len}), got {self.min_seq_len}")
            if self.n_train_examples is not None:
                raise ValueError("min_seq_len (lengths drawn every step) does not go with n_train_examples "
                                 f"(a fixed set of sequences of length {self.seq_len}); use one of them")
        if self.curriculum_steps is not None:
            check_positive_int("curriculum_steps", self.curriculum_steps)
            if self.min_seq_len is None:
                raise ValueError(f"curriculum_steps={self.curriculum_steps} needs min_seq_len (the length it starts at)")
        if self.random_positions is not None:
            check_positive_int("random_positions", self.random_positions)
            longest = max([self.seq_len, *eval_lengths, self.finetune_len or 0])
            if self.random_positions < longest:
                raise ValueError(f"random_positions must be >= the longest input ({longest}): every input is read "
                                 f"at distinct positions below it, got {self.random_positions}")
            if self.finetune_steps:
                raise ValueError("random_positions does not go with fine-tuning (finetune_steps); set one of them")
        if rope_scalings and not scheme_spec(self.scheme).scheme_type.supports_scaling:
            accepting = [s.name for s in builtin_specs() if s.scheme_type.supports_scaling]
            raise ValueError(f"rope_scalings={rope_scalings!r} needs a scheme that rotates queries and "
                             f"keys ({', '.join(accepting)}), got scheme={self.scheme!r}")
        # Lists from JSON become tuples so configs compare equal after a round trip.
        object.__setattr__(self, "eval_lengths", eval_lengths)
        object.__setattr__(self, "eval_extrapolations", eval_extrapolations)
        object.__setattr__(self, "rope_scalings", rope_scalings)
        object.__setattr__(self, "position_options", dict(self.position_options))
        object.__setattr__(self, "task_options", dict(self.task_options))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (tuples become lists)."""
        data = asdict(self)
        for name, default in _LATER_FIELDS.items():
            if data[name] == default:
                del data[name]
        data["eval_lengths"] = list(self.eval_lengths)
        data["eval_extrapolations"] = list(self.eval_extrapolations)
        if "rope_scalings" in data:
            data["rope_scalings"] = list(self.rope_scalings)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Inverse of :meth:`to_dict`; unknown keys raise a ValueError naming them."""
        check_mapping("data", data, what="a dict of TrainConfig fields (TrainConfig.to_dict())")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s) {unknown}; allowed: {sorted(known)}")
        return cls(**data)


#: Fields added after the first stored grids, with their defaults (left out of ``to_dict`` at the default).
_LATER_FIELDS: dict[str, Any] = LATER_FIELD_DEFAULTS


def build_model(config: TrainConfig, task: Task | None = None) -> TinyTransformer:
    """The untrained model a config describes (weights drawn from the global torch RNG)."""
    _check_config(config)
    if task is not None:
        check_instance("task", task, Task, what="a posenc.tasks.Task or None (None: the config's task)")
    task = task or make_task(config.task, **config.task_options)
    return TinyTransformer(
        task.vocab_size,
        task.n_outputs,
        d_model=config.d_model,
        n_heads=config.n_heads,
        n_layers=config.n_layers,
        max_len=config.random_positions or config.max_len or config.seq_len,
        position=config.scheme,
        position_options=config.position_options,
        causal=config.causal,
        combine=config.combine,
        d_pos=config.d_pos,
        token_init_std=config.token_init_std,
        bos_token=config.bos_token,
    )


def _lr_factor(step: int, total: int) -> float:
    """Linear warm-up over the first 10% of steps, then cosine decay to 10% of the peak."""
    warmup = max(1, total // 10)
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass(frozen=True)
class _Counts:
    """What one pass over test sequences counts.

    Attributes:
        correct, labelled: per position, ``(seq_len,)`` long.
        exact, sequences: sequences whose every labelled position is right; sequences with a label.
        new_exact, new_sequences: the same over the positions ``>= new_from`` only.
    """

    correct: torch.Tensor
    labelled: torch.Tensor
    exact: int
    sequences: int
    new_exact: int
    new_sequences: int


def _position_ids(batch_size: int, length: int, random_positions: int | None,
                  generator: torch.Generator | None) -> torch.Tensor | None:
    if random_positions is None or generator is None:
        return None
    return random_position_ids(batch_size, length, random_positions, generator)


@torch.no_grad()
def _count_correct(
    model: nn.Module, task: Task, seq_len: int, n_examples: int, seed: int, batch_size: int, *,
    new_from: int | None = None, random_positions: int | None = None,
) -> _Counts:
    """Count right answers on ``n_examples`` test sequences of ``seq_len`` tokens drawn from ``seed``.

    With ``random_positions``, every sequence is read at sorted random positions below it
    (:func:`random_position_ids`, from a stream of their own, so the tokens do not change).
    """
    _check_model_and_task(model, task)
    seq_len = check_positive_int("seq_len", seq_len)
    seed = check_nonnegative_int("seed", seed)
    n_examples = check_positive_int("n_examples", n_examples)
    batch_size = check_positive_int("batch_size", batch_size)
    if random_positions is not None:
        random_positions = check_positive_int("random_positions", random_positions)
    generator = make_generator(seed)
    positions = make_generator(seed + _POSITION_SEED_OFFSET) if random_positions is not None else None
    new_from = seq_len if new_from is None else new_from
    was_training = model.training
    model.eval()
    correct = torch.zeros(seq_len, dtype=torch.long)
    labelled = torch.zeros(seq_len, dtype=torch.long)
    exact = sequences = new_exact = new_sequences = 0
    try:
        for start in range(0, n_examples, batch_size):
            tokens, targets = task.sample(min(batch_size, n_examples - start), seq_len, generator)
            position_ids = _position_ids(tokens.shape[0], seq_len, random_positions, positions)
            # a plain model maps tokens to logits; only randomized positions need the second argument
            logits = model(tokens) if position_ids is None else model(tokens, position_ids)
            predictions = logits.argmax(dim=-1)
            mask = targets != IGNORE_INDEX
            right = (predictions == targets) | ~mask
            correct += ((predictions == targets) & mask).sum(dim=0)
            labelled += mask.sum(dim=0)
            has_label, has_new = mask.any(dim=1), mask[:, new_from:].any(dim=1)
            exact += int((right.all(dim=1) & has_label).sum())
            sequences += int(has_label.sum())
            new_exact += int((right[:, new_from:].all(dim=1) & has_new).sum())
            new_sequences += int(has_new.sum())
    finally:
        model.train(was_training)
    return _Counts(correct, labelled, exact, sequences, new_exact, new_sequences)


def evaluate(
    model: nn.Module,
    task: Task,
    seq_len: int,
    *,
    n_examples: int = 512,
    seed: int = EVAL_SEED,
    batch_size: int = 256,
    random_positions: int | None = None,
) -> float:
    """Token accuracy of ``model`` on ``n_examples`` fresh sequences of length ``seq_len``.

    Sequences come from a ``torch.Generator`` seeded with ``seed``: same seed, same test set.

    Args:
        model: maps ``(batch, seq_len)`` tokens to ``(batch, seq_len, n_outputs)`` logits.
        task: the task that draws and labels the sequences.
        random_positions: read the sequences at randomized positions below this number
            (a model trained with ``TrainConfig.random_positions``).

    Returns:
        Accuracy in ``[0, 1]`` over labelled positions.
    """
    counts = _count_correct(model, task, seq_len, n_examples, seed, batch_size, random_positions=random_positions)
    correct, labelled = counts.correct, counts.labelled
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
    correct, labelled = position_counts(model, task, seq_len, n_examples=n_examples, seed=seed, batch_size=batch_size)
    return [c / n if n else None for c, n in zip(correct, labelled, strict=True)]


def position_counts(
    model: nn.Module,
    task: Task,
    seq_len: int,
    *,
    n_examples: int = 512,
    seed: int = EVAL_SEED,
    batch_size: int = 256,
) -> tuple[list[int], list[int]]:
    """Per-position counts ``(correct, labelled)``, each a list of ``seq_len`` integers.

    Same test sequences as :func:`evaluate` and :func:`position_accuracy` with the same
    arguments; ``correct[i] / labelled[i]`` is ``position_accuracy(...)[i]``. The counts
    are the weights to pool positions with: for a task whose labels start at a random
    place (``marker_recall``) positions are labelled unequally often.
    """
    counts = _count_correct(model, task, seq_len, n_examples, seed, batch_size)
    return [int(c) for c in counts.correct], [int(n) for n in counts.labelled]


def new_position_accuracy(
    model: nn.Module,
    task: Task,
    length: int,
    *,
    train_len: int,
    n_examples: int = 512,
    seed: int = EVAL_SEED,
    batch_size: int = 256,
) -> float:
    """Token accuracy over the labelled positions ``i >= train_len`` of inputs of ``length`` tokens.

    ``sum_{i >= train_len} correct_i / sum_{i >= train_len} labelled_i`` on the test
    sequences of :func:`evaluate` (same ``seed``, same sequences). This is the score of
    extrapolation: with a causal mask, a position ``i < train_len`` of a longer input
    computes exactly what it computed in training, so accuracy over all positions mixes
    those seen positions into the score and hides how the model does on new ones.

    Args:
        model: maps ``(batch, length)`` tokens to ``(batch, length, n_outputs)`` logits.
        task: the task that draws and labels the sequences.
        length: test length, ``> train_len``.
        train_len: the training length; positions ``0 .. train_len - 1`` are "seen".

    Returns:
        Accuracy in ``[0, 1]``.

    Raises:
        ValueError: if ``length <= train_len`` or no position ``>= train_len`` is labelled.
    """
    train_len = check_positive_int("train_len", train_len)
    length = check_positive_int("length", length)
    if length <= train_len:
        raise ValueError(
            f"length must be > train_len ({train_len}) so that some positions are new, got length={length}"
        )
    counts = _count_correct(model, task, length, n_examples, seed, batch_size)
    correct, labelled = counts.correct, counts.labelled
    n_new = int(labelled[train_len:].sum())
    if n_new == 0:
        raise ValueError(
            f"no labelled positions >= train_len ({train_len}) at length={length} for task {task!r}"
        )
    return int(correct[train_len:].sum()) / n_new


@dataclass(frozen=True)
class SeenNewSplit:
    """A per-position accuracy curve split at the training length.

    Attributes:
        seen: pooled accuracy over labelled positions ``< train_len`` (``None`` if none).
        new: pooled accuracy over labelled positions ``>= train_len`` (``None`` if none).
        overall: pooled accuracy over all labelled positions,
            ``(n_seen * seen + n_new * new) / (n_seen + n_new)``.
        n_seen, n_new: total weight (number of labels) of each part.
    """

    seen: float | None
    new: float | None
    overall: float
    n_seen: int
    n_new: int


def split_seen_new(
    curve: Sequence[float | None],
    train_len: int,
    *,
    labelled: Sequence[int] | None = None,
) -> SeenNewSplit:
    """Split a per-position accuracy curve into "seen" (``i < train_len``) and "new" (``i >= train_len``).

    Each part is the mean of its positions weighted by their number of labels ``w_i``:
    ``seen = sum_{i < T} w_i a_i / sum_{i < T} w_i`` (likewise ``new``), so the parts and
    ``overall`` are exactly what pooling the labels would give (``overall`` equals
    :func:`evaluate` on the same sequences).

    Args:
        curve: accuracy at each position, ``None`` where nothing is labelled (the output of
            :func:`position_accuracy`, or a stored ``extras["position_accuracy@L"]``).
        train_len: the training length ``T``; must be ``< len(curve)``.
        labelled: number of labels at each position (from :func:`position_counts`). If
            omitted every labelled position weighs 1, which is exact when every labelled
            position has the same number of labels (``copy_offset``, ``copy_half``,
            ``reverse``) but not for ``marker_recall``.

    Returns:
        A :class:`SeenNewSplit`.
    """
    train_len = check_positive_int("train_len", train_len)
    if isinstance(curve, str | bytes) or not isinstance(curve, Sequence):
        raise TypeError(f"curve must be a sequence of accuracies (None where nothing is labelled), got {curve!r} "
                        f"of type {type(curve).__name__}")
    values = [None if a is None else check_real(f"curve[{i}]", a, low=0.0, high=1.0) for i, a in enumerate(curve)]
    if train_len >= len(values):
        raise ValueError(
            f"train_len must be < the curve's length ({len(values)}) so that some positions are new, got {train_len}"
        )
    if labelled is None:
        weights = [0 if a is None else 1 for a in values]
    else:
        if isinstance(labelled, str | bytes) or not isinstance(labelled, Sequence):
            raise TypeError(f"labelled must be a sequence of label counts, got {labelled!r} of type "
                            f"{type(labelled).__name__}")
        weights = [check_nonnegative_int(f"labelled[{i}]", n) for i, n in enumerate(labelled)]
        if len(weights) != len(values):
            raise ValueError(f"labelled has {len(weights)} entries but curve has {len(values)}; they must match")
    for i, (a, w) in enumerate(zip(values, weights, strict=True)):
        if (a is None) != (w == 0):
            raise ValueError(f"position {i}: curve is {a!r} but labelled is {w}; None goes with 0 labels, only None")
    if sum(weights) == 0:
        raise ValueError("curve has no labelled positions (every entry is None)")

    def pooled(part: range) -> tuple[float | None, int]:
        weight = sum(weights[i] for i in part)
        if weight == 0:
            return None, 0
        return sum(weights[i] * float(values[i] or 0.0) for i in part) / weight, weight

    seen, n_seen = pooled(range(train_len))
    new, n_new = pooled(range(train_len, len(values)))
    overall = ((seen or 0.0) * n_seen + (new or 0.0) * n_new) / (n_seen + n_new)
    return SeenNewSplit(seen=seen, new=new, overall=overall, n_seen=n_seen, n_new=n_new)


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

    Raises:
        ValueError: a length the run would score is past the end of the model's scheme
            (see ``TrainConfig.eval_lengths``), checked before training; or the training loss
            stops being finite (the run diverged, e.g. ``lr`` far too large): the error names
            the step and the learning rate instead of returning ``final_loss = nan``.
    """
    _check_config(config)
    progress = check_bool("progress", progress)
    with single_thread():  # tiny models: one thread is faster and the results match the stored grids
        return _train(config, progress)


def _curriculum_length(config: TrainConfig, step: int) -> int:
    """The longest training length at ``step``: ``seq_len``, or the curriculum's current length."""
    if config.curriculum_steps is None or config.min_seq_len is None:
        return config.seq_len
    share = min(1.0, step / config.curriculum_steps)
    return config.min_seq_len + round(share * (config.seq_len - config.min_seq_len))


def position_coverage(config: TrainConfig, positions: Sequence[int]) -> list[float]:
    """The expected share of a run's training batches whose inputs reach each position.

    A position (0-based, the anchor not counted) is in a batch when the batch is longer than it.
    Training at one length reaches every position below ``seq_len`` in every batch; with lengths
    that vary (``min_seq_len``), each batch's length is uniform from ``min_seq_len`` to the longest
    length of its step (the curriculum's, ``curriculum_steps``), so the last positions are reached
    least. A learned table's row gets a gradient only from the batches that reach it.

    Returns:
        One share in ``[0, 1]`` per position, in order.
    """
    _check_config(config)
    positions = check_int_sequence("positions", positions, nonnegative=True, min_len=1)
    shares = []
    for position in positions:
        if config.min_seq_len is None or config.n_train_examples is not None:
            shares.append(1.0 if position < config.seq_len else 0.0)
            continue
        reached = 0.0
        for step in range(config.steps):
            longest = _curriculum_length(config, step)
            lengths = longest - config.min_seq_len + 1
            reached += (lengths if position < config.min_seq_len else max(0, longest - position)) / lengths
        shares.append(reached / config.steps)
    return shares


def _train(config: TrainConfig, progress: bool) -> tuple[TinyTransformer, RunResult]:
    task = make_task(config.task, **config.task_options)
    # a length the run cannot score is an error before any work (a throwaway model: the global RNG is restored,
    # and torch.manual_seed below reseeds it anyway)
    with torch.random.fork_rng(devices=[]):
        _check_lengths_fit(config, build_model(config, task))
    start = time.perf_counter()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(config.seed)
        model = build_model(config, task)
        data_generator = make_generator(config.seed + _DATA_SEED_OFFSET)
        position_generator = (make_generator(config.seed + _DATA_SEED_OFFSET + _POSITION_SEED_OFFSET)
                              if config.random_positions is not None else None)
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
                length = config.seq_len
                if config.min_seq_len is not None:  # training lengths that vary
                    longest = _curriculum_length(config, step)
                    length = int(torch.randint(config.min_seq_len, longest + 1, (1,), generator=data_generator))
                tokens, targets = task.sample(config.batch_size, length, data_generator)
            else:
                index = torch.randint(0, dataset[0].shape[0], (config.batch_size,), generator=data_generator)
                tokens, targets = dataset[0][index], dataset[1][index]
            position_ids = _position_ids(tokens.shape[0], tokens.shape[1], config.random_positions,
                                         position_generator)
            logits = model(tokens) if position_ids is None else model(tokens, position_ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            running += _finite_loss(float(loss.detach()), step, config.steps, config.lr)
            count += 1
            if (step + 1) % config.log_every == 0 or step + 1 == config.steps:
                entry = {"step": step + 1, "loss": running / count}
                if config.curve_examples:
                    entry["accuracy"] = evaluate(model, task, config.seq_len, n_examples=config.curve_examples,
                                                 random_positions=config.random_positions)
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

    Raises:
        ValueError: the loss stops being finite (naming the step and ``lr``).
    """
    _check_model_and_task(model, task)
    seq_len = check_positive_int("seq_len", seq_len)
    steps = check_positive_int("steps", steps)
    seed = check_nonnegative_int("seed", seed)
    lr = check_positive_float("lr", lr)
    batch_size = check_positive_int("batch_size", batch_size)
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    generator = make_generator(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=True)
    model.train()
    try:
        with single_thread():
            return [_finite_loss(_fine_tune_step(model, task, seq_len, batch_size, generator, optimizer), step, steps,
                                 lr) for step in range(steps)]
    finally:
        model.eval()
        torch.use_deterministic_algorithms(previous_deterministic)


def _fine_tune_step(
    model: nn.Module,
    task: Task,
    seq_len: int,
    batch_size: int,
    generator: torch.Generator,
    optimizer: torch.optim.Optimizer,
) -> float:
    """One AdamW step on a fresh batch; returns its loss."""
    tokens, targets = task.sample(batch_size, seq_len, generator)
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def run_metrics(model: TinyTransformer, config: TrainConfig) -> dict[str, float]:
    """The test metrics :func:`train` stores for ``config``, computed for an already trained ``model``.

    Every entry of ``RunResult.metrics`` except the two that come from training itself
    (``final_loss``, ``n_parameters``): accuracy at each eval length, new-position scores,
    validation accuracy and, if ``config`` asks for them, the scalings, workarounds and
    fine-tuned copies. For a model loaded from a checkpoint (:mod:`posenc.checkpoint`) they
    equal the stored run's exactly. The model's weights are not changed.
    """
    _check_config(config)
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a posenc.models.TinyTransformer, got {type(model).__name__}")
    _check_lengths_fit(config, model)
    task = make_task(config.task, **config.task_options)
    was_training = model.training
    model.eval()
    try:
        with single_thread():
            return _evaluate_all(model, task, config)[0]
    finally:
        model.train(was_training)


def _evaluate_all(model: TinyTransformer, task: Task, config: TrainConfig) -> tuple[dict[str, float], dict[str, Any]]:
    """Accuracy at every eval length (and, past a learned table, with every workaround).

    Returns:
        ``(metrics, extras)`` as stored in :class:`posenc.results.RunResult`.
    """
    metrics: dict[str, float] = {}
    extras: dict[str, Any] = {}
    # a synthetic task draws test and validation sequences from their own seeds; a corpus task
    # (language modelling) reads its test and validation documents
    test_task, validation_task = task.for_split("test"), task.for_split("validation")

    def score(key: str, length: int) -> None:
        # one pass over the test sequences gives the per-position, overall and new-position scores
        counts = _count_correct(model, test_task, length, config.eval_examples, EVAL_SEED, 256,
                                new_from=config.seq_len, random_positions=config.random_positions)
        correct, labelled = [int(c) for c in counts.correct], [int(n) for n in counts.labelled]
        if sum(labelled) == 0:
            raise ValueError(f"no labelled positions at seq_len={length} for task {task!r}")
        if config.per_position:
            extras[f"position_accuracy@{key}"] = [c / n if n else None for c, n in zip(correct, labelled, strict=True)]
        metrics[f"accuracy@{key}"] = sum(correct) / sum(labelled)
        if config.exact_match:
            metrics[f"exact@{key}"] = counts.exact / counts.sequences
        if config.score_new_positions and length > config.seq_len:
            n_new = sum(labelled[config.seq_len :])
            if n_new:
                metrics[f"new@{key}"] = sum(correct[config.seq_len :]) / n_new
                if config.exact_match:
                    metrics[f"new_exact@{key}"] = counts.new_exact / counts.new_sequences
        if isinstance(test_task, LanguageModelTask):  # bits per byte on the test documents
            # a variant (a workaround, a scaling: key "N:name") is read on non-overlapping windows only;
            # the sliding ones, four times the cost, are read for the model as trained
            read = length_scores(model, test_task.data(), length, train_len=config.seq_len, sliding=":" not in key)
            metrics.update({f"{name}@{key}": value for name, value in read.scores.items()})
            extras[f"bpb_profile@{key}"] = list(read.profile)

    lengths = list(dict.fromkeys([config.seq_len, *config.eval_lengths]))
    scheme = model.position
    anchor = 1 if model.bos is not None else 0  # an anchor token takes position 0: length + 1 positions
    for length in lengths:
        if scheme.max_len is None or length + anchor <= scheme.max_len:
            score(str(length), length)
        # only a learned table has an end that the workarounds can read past
        if scheme.has_table and scheme.table_len is not None and length + anchor > scheme.table_len:
            saved = getattr(scheme, "extrapolation", None)
            try:
                for strategy in config.eval_extrapolations:
                    scheme.set_extrapolation(strategy)
                    score(f"{length}:{strategy}", length)
            finally:
                scheme.set_extrapolation(saved)
        if scheme.supports_scaling and length > config.seq_len:
            for method in config.rope_scalings:
                scheme.set_scaling(RopeScaling.for_length(method, train_len=config.seq_len, target_len=length))
                try:
                    score(f"{length}:{method}", length)
                    metrics[f"short@{length}:{method}"] = evaluate(model, test_task, config.seq_len,
                                                                    n_examples=config.eval_examples,
                                                                    random_positions=config.random_positions)
                    if isinstance(test_task, LanguageModelTask):  # the short-input price in bits per byte
                        metrics[f"short_bpb@{length}:{method}"] = length_scores(
                            model, test_task.data(), config.seq_len, train_len=config.seq_len, sliding=False).scores["bpb"]
                finally:
                    scheme.set_scaling(None)
    metrics["accuracy"] = metrics[f"accuracy@{config.seq_len}"]
    if config.exact_match:
        metrics["exact"] = metrics[f"exact@{config.seq_len}"]
    if f"accuracy@{config.seq_len}" not in [f"accuracy@{n}" for n in config.eval_lengths]:
        del metrics[f"accuracy@{config.seq_len}"]
        metrics.pop(f"exact@{config.seq_len}", None)
    if config.validation_examples:
        metrics["val_accuracy"] = evaluate(model, validation_task, config.seq_len,
                                           n_examples=config.validation_examples, seed=VALIDATION_SEED,
                                           random_positions=config.random_positions)
    if config.finetune_steps:
        metrics.update(_fine_tune_metrics(model, task, config))
    return metrics, extras


def _fine_tune_metrics(model: TinyTransformer, task: Task, config: TrainConfig) -> dict[str, float]:
    """Fine-tune copies of a trained model at ``config.finetune_len`` and score them (see ``TrainConfig``).

    Returns:
        ``{"ft_new@N[:strategy]": new-position accuracy at N, "ft@T[:strategy]": accuracy at T}``.
    """
    assert config.finetune_len is not None  # checked by TrainConfig
    long_len, train_len = config.finetune_len, config.seq_len
    position = model.position
    anchor = 1 if model.bos is not None else 0
    is_table = position.has_table and position.table_len is not None and long_len + anchor > position.table_len
    strategies: tuple[str | None, ...] = tuple(config.eval_extrapolations) if is_table else (None,)
    if position.supports_scaling:
        strategies = (None, *config.rope_scalings)
    metrics: dict[str, float] = {}
    for strategy in strategies:
        candidate = copy.deepcopy(model)
        if strategy is not None and candidate.position.has_table:
            candidate.position.set_extrapolation(strategy)
        if strategy is not None and candidate.position.supports_scaling:
            candidate.position.set_scaling(RopeScaling.for_length(strategy, train_len=train_len, target_len=long_len))
        fine_tune(candidate, task, long_len, steps=config.finetune_steps, lr=config.finetune_lr, seed=config.seed,
                  batch_size=config.batch_size)
        suffix = "" if strategy is None else f":{strategy}"
        test_task = task.for_split("test")  # fine-tuned on training text, scored on test text
        metrics[f"ft_new@{long_len}{suffix}"] = new_position_accuracy(
            candidate, test_task, long_len, train_len=train_len, n_examples=config.eval_examples)
        metrics[f"ft@{train_len}{suffix}"] = evaluate(candidate, test_task, train_len, n_examples=config.eval_examples)
        if isinstance(test_task, LanguageModelTask):
            read = length_scores(candidate, test_task.data(), long_len, train_len=train_len)
            metrics.update({f"ft_{name}@{long_len}{suffix}": value for name, value in read.scores.items()})
    return metrics


def reproduce(stored: RunResult) -> tuple[TinyTransformer, RunResult, float]:
    """Re-run a stored run from its config and compare.

    Returns:
        ``(model, new_result, largest_difference)``, where the difference is the largest
        absolute difference between stored and new metrics (``inf`` if the metric names
        differ). Zero on the machine that made the file; CPU thread counts can change the
        rounding elsewhere.
    """
    if not isinstance(stored, RunResult):
        raise TypeError(f"stored must be a RunResult (see posenc.results.load_results), got {type(stored).__name__}")
    model, again = train(TrainConfig.from_dict(stored.config))
    if again.metrics.keys() != stored.metrics.keys():
        return model, again, math.inf
    return model, again, max(abs(again.metrics[k] - v) for k, v in stored.metrics.items())


def _check_config(config: Any) -> None:
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")


def _check_model_and_task(model: Any, task: Any) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module mapping (batch, seq_len) tokens to logits (e.g. a "
                        f"posenc.models.TinyTransformer), got {model!r} of type {type(model).__name__}")
    check_instance("task", task, Task, what="a posenc.tasks.Task (e.g. make_task('copy_offset'))")


def _finite_loss(value: float, step: int, steps: int, lr: float) -> float:
    """``value`` if it is finite; a diverged run (nan or inf) is an error naming the step and the learning rate."""
    if not math.isfinite(value):
        raise ValueError(f"training diverged at step {step + 1} of {steps}: the loss is {value} with lr={lr:g}; "
                         "a smaller lr keeps it finite (the default is 3e-3)")
    return value


def _check_lengths_fit(config: TrainConfig, model: TinyTransformer) -> None:
    """Every length the run scores fits the model's scheme, or is read with a named workaround.

    Past a learned table (``has_table``) a length is scored with each workaround of
    ``eval_extrapolations`` (``accuracy@L:strategy``) and needs at least one; past the end of
    any other scheme of fixed length it cannot be scored at all. Either way the error comes
    before any training step.
    """
    scheme = model.position
    anchor = 1 if model.bos is not None else 0
    end = scheme.table_len if scheme.has_table else scheme.max_len
    if end is None:
        return
    lengths = [("eval_lengths", n) for n in config.eval_lengths]
    if config.finetune_steps and config.finetune_len is not None:
        lengths.append(("finetune_len", config.finetune_len))
    for field_name, length in lengths:
        if length + anchor <= end:
            continue
        holds = f"{end} positions (0 .. {end - 1}{', position 0 is the anchor token' if anchor else ''})"
        if scheme.has_table and not config.eval_extrapolations:
            raise ValueError(
                f"{field_name} has {length}, past the end of the learned table of scheme {config.scheme!r}, which holds "
                f"{holds}: give eval_extrapolations (one or more of {', '.join(map(repr, STRATEGIES))}) to score it "
                "with a workaround, a larger max_len, or a shorter length")
        if not scheme.has_table:
            raise ValueError(
                f"{field_name} has {length}, past the end of scheme {config.scheme!r}, which holds {holds} and has no "
                "workaround to read past it: use a larger max_len or a shorter length")
