"""Synthetic sequence tasks whose answers depend on *where* tokens are.

Each task draws random sequences of symbols on the fly from a seeded
``torch.Generator`` and labels every position. The labels are a function of token
*positions*, so a model that sees the input only as a bag (multiset) of tokens cannot
get them right, whatever its size: :func:`bag_of_tokens_accuracy` measures the best
such a model can do (each task's :meth:`Task.bag_ceiling_guess`), and it is far below
what a model with positions reaches.

The suite covers three kinds of rule (each task's ``kind`` attribute names it, so tables
can be labelled; ``causal_ok`` says whether a causal model can solve it):

* :class:`CopyOffsetTask` (``"copy_offset"``, *local relative*): output at position ``i``
  is the token at position ``i - offset``. The rule is the same at every length and only
  needs the *relative* position, which makes it the length-generalization task of
  chapter 7.
* :class:`MarkerRecallTask` (``"marker_recall"``, *long-range content*): a reserved
  marker symbol occurs exactly once, at a random position ``p`` in the first part of the
  sequence; every position ``i > p + 1`` outputs ``token[p + 1]``, the token that followed
  the marker. The model must find the marker by its content, at any distance, then take
  one relative step: a bias towards nearby tokens hurts.
* :class:`CopyHalfTask` (``"copy_half"``, *absolute*): output at position ``i >= 1`` is
  ``token[i // 2]``. The offset ``i - i // 2`` grows with ``i``, so a rule that only knows
  relative offsets cannot express it without knowing ``i``.
* :class:`ReverseTask` (``"reverse"``, *absolute, length-tied*, encoder only): output at
  position ``i`` is the token at position ``seq_len - 1 - i``, a rule tied to absolute
  positions and the length.

Targets use ``-100`` (PyTorch's ``ignore_index``) where there is nothing to predict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from posenc.checks import (
    check_choice,
    check_generator,
    check_instance,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
    check_tensor,
)
from posenc.corpus import CORPORA, SPLITS, split_bytes

__all__ = [
    "IGNORE_INDEX",
    "Task",
    "CopyOffsetTask",
    "ReverseTask",
    "MarkerRecallTask",
    "CopyHalfTask",
    "LanguageModelTask",
    "make_task",
    "available_tasks",
    "make_generator",
    "fixed_dataset",
    "bag_of_tokens_accuracy",
    "token_accuracy",
]

#: Target value meaning "no label here" (matches ``torch.nn.functional.cross_entropy``'s default).
IGNORE_INDEX = -100


def make_generator(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed`` (a non-negative integer)."""
    generator = torch.Generator()
    generator.manual_seed(check_nonnegative_int("seed", seed))
    return generator


class Task:
    """Base class: a labelled random-sequence generator.

    Attributes:
        name: registry name.
        vocab_size: number of input token ids.
        n_outputs: number of output classes per position.
        min_len: the shortest sequence length the task accepts.
        kind: the kind of rule, for labelling tables (``"local relative"``,
            ``"long-range content"``, ``"absolute"``, ...).
        causal_ok: whether a causal model (position ``i`` sees positions ``<= i``) has
            all it needs: every target is a token at a position ``<= i``.
    """

    name: str = "task"
    vocab_size: int
    n_outputs: int
    min_len: int = 1
    kind: str = "unspecified"
    causal_ok: bool = True

    def options(self) -> dict[str, Any]:
        """Keyword arguments that recreate this task with :func:`make_task`."""
        raise NotImplementedError

    def for_split(self, split: str) -> Task:
        """The task drawing from ``split`` (``"train"``, ``"validation"``, ``"test"``).

        A synthetic task draws fresh sequences from any seed: the seed separates its splits,
        so it returns itself. A task over a fixed corpus (:class:`LanguageModelTask`) reads
        the named split of its documents.
        """
        check_choice("split", split, ("train", "validation", "test"))
        return self

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        """Targets ``(batch, seq_len)`` for ``tokens`` ``(batch, seq_len)``."""
        raise NotImplementedError

    def check_tokens(self, tokens: object) -> torch.Tensor:
        """``tokens`` if they are an integer ``(batch, seq_len)`` tensor of this task's ids
        (``0 .. vocab_size - 1``, at least :attr:`min_len` long), else an error naming them."""
        check_tensor("tokens", tokens, ndim=2, integer=True, shape="(batch, seq_len)")
        assert isinstance(tokens, torch.Tensor)
        if tokens.shape[1] < self.min_len:
            raise ValueError(f"tokens must have at least {self.min_len} positions for task {self.name!r}, "
                             f"got shape {tuple(tokens.shape)}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(f"tokens must be ids in [0, {self.vocab_size}) for task {self.name!r}, got values in "
                             f"[{int(tokens.min())}, {int(tokens.max())}]")
        return tokens

    def sample(
        self, batch_size: int, seq_len: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw ``batch_size`` random sequences of length ``seq_len``.

        Returns:
            ``(tokens, targets)``, both ``(batch_size, seq_len)`` long; targets are
            ``-100`` where nothing is predicted.
        """
        batch_size = check_positive_int("batch_size", batch_size)
        seq_len = check_positive_int("seq_len", seq_len)
        if seq_len < self.min_len:
            raise ValueError(f"seq_len must be >= {self.min_len} for task {self.name!r}, got {seq_len}")
        generator = check_generator("generator", generator)
        tokens = self._draw(batch_size, seq_len, generator)
        return tokens, self.labels(tokens)

    def _draw(self, batch_size: int, seq_len: int, generator: torch.Generator | None) -> torch.Tensor:
        """Random input tokens ``(batch_size, seq_len)``: i.i.d. uniform over the vocabulary.

        Tasks with structured inputs (a reserved marker) override this; arguments are
        already checked.
        """
        return torch.randint(0, self.vocab_size, (batch_size, seq_len), generator=generator)

    def bag_ceiling_guess(self, tokens: torch.Tensor) -> torch.Tensor:
        """The best position-blind prediction for ``tokens`` ``(batch, seq_len)``.

        A position-blind model sees each sequence only as a multiset ``M`` of tokens: it
        cannot tell its positions apart, so it gives one answer ``g`` at every position of
        a sequence. Its expected number of correct labels is
        ``sum_i P(target[i] = g | M)``. When the inputs are i.i.d. (so, given ``M``, every
        arrangement of ``M`` is equally likely) and each labelled target is the token at
        some fixed position, ``P(target[i] = g | M) = count_M(g) / seq_len`` for every
        ``i``: the best guess is the most frequent symbol of ``M`` (any of them on ties;
        the smallest id here). This holds for ``copy_offset``, ``reverse`` and
        ``copy_half``; :class:`MarkerRecallTask` overrides it.

        Returns:
            Predictions ``(batch, seq_len)`` long, the same value along each row.
        """
        tokens = self.check_tokens(tokens)
        counts = torch.zeros(tokens.shape[0], self.vocab_size, dtype=torch.long)
        counts.scatter_add_(1, tokens, torch.ones_like(tokens))
        # argmax returns the first maximum: the smallest id on ties
        return counts.argmax(dim=1, keepdim=True).expand_as(tokens)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({args})"


class CopyOffsetTask(Task):
    """Predict the token ``offset`` positions back: ``target[i] = token[i - offset]``.

    Positions ``i < offset`` have no label. Input and output vocabularies are the
    ``n_symbols`` symbols.

    Args:
        n_symbols: number of distinct symbols.
        offset: how far back to look (>= 1).
    """

    name = "copy_offset"
    kind = "local relative"

    def __init__(self, n_symbols: int = 16, offset: int = 2) -> None:
        self.n_symbols = check_positive_int("n_symbols", n_symbols)
        self.offset = check_positive_int("offset", offset)
        self.vocab_size = self.n_symbols
        self.n_outputs = self.n_symbols
        self.min_len = self.offset + 1

    def options(self) -> dict[str, Any]:
        return {"n_symbols": self.n_symbols, "offset": self.offset}

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = self.check_tokens(tokens)
        targets = torch.full_like(tokens, IGNORE_INDEX)
        targets[:, self.offset :] = tokens[:, : -self.offset]
        return targets


class _SymbolTask(Task):
    """A task over ``n_symbols`` symbols whose only option is ``n_symbols`` (inputs and outputs
    share the vocabulary)."""

    def __init__(self, n_symbols: int = 16) -> None:
        self.n_symbols = check_positive_int("n_symbols", n_symbols)
        self.vocab_size = self.n_symbols
        self.n_outputs = self.n_symbols

    def options(self) -> dict[str, Any]:
        return {"n_symbols": self.n_symbols}


class ReverseTask(_SymbolTask):
    """Output the sequence reversed: ``target[i] = token[seq_len - 1 - i]``.

    Args:
        n_symbols: number of distinct symbols.
    """

    name = "reverse"
    min_len = 2
    kind = "absolute, length-tied"
    # position i < seq_len / 2 needs a token that comes after it
    causal_ok = False

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.check_tokens(tokens).flip(-1).clone()


class MarkerRecallTask(Task):
    """Recall the token that followed a marker: ``target[i] = token[p + 1]`` for ``i > p + 1``.

    A reserved marker symbol (id ``n_symbols``) occurs exactly once, at position ``p``
    drawn uniformly from the first ``n_p = max(1, floor(marker_frac * (seq_len - 2)))``
    positions, so ``0 <= p <= seq_len - 3`` and at least one position is labelled. Every
    other token is uniform over the ``n_symbols`` ordinary symbols, so the answer
    ``token[p + 1]`` is never the marker. Positions ``i <= p + 1`` have no label.

    Solving it needs content-based lookup at any distance (find the marker) followed by a
    relative step of +1; a model that prefers nearby tokens is hurt, because the answer
    is ``i - p - 1`` tokens back. It is a one-key case of associative recall
    and of the induction-head pattern (Olsson et al., 2022, "In-context Learning and
    Induction Heads"), reduced to one key that is the same in every sequence.

    Args:
        n_symbols: number of ordinary symbols (outputs); the input vocabulary adds the marker.
        marker_frac: fraction of the first ``seq_len - 2`` positions the marker may occupy,
            in ``(0, 1]``.
    """

    name = "marker_recall"
    min_len = 3
    kind = "long-range content"

    def __init__(self, n_symbols: int = 16, marker_frac: float = 0.5) -> None:
        self.n_symbols = check_positive_int("n_symbols", n_symbols)
        self.marker_frac = check_positive_float("marker_frac", marker_frac)
        if self.marker_frac > 1.0:
            raise ValueError(f"marker_frac must be in (0, 1], got {marker_frac}")
        self.marker = self.n_symbols
        self.vocab_size = self.n_symbols + 1
        self.n_outputs = self.n_symbols

    def options(self) -> dict[str, Any]:
        return {"n_symbols": self.n_symbols, "marker_frac": self.marker_frac}

    def marker_choices(self, seq_len: int) -> int:
        """How many positions the marker may occupy: ``max(1, floor(marker_frac * (seq_len - 2)))``."""
        seq_len = check_positive_int("seq_len", seq_len)
        if seq_len < self.min_len:
            raise ValueError(f"seq_len must be >= {self.min_len} for task {self.name!r}, got {seq_len}")
        return max(1, math.floor(self.marker_frac * (seq_len - 2)))

    def _draw(self, batch_size: int, seq_len: int, generator: torch.Generator | None) -> torch.Tensor:
        # ordinary symbols only, then one marker per row: it cannot occur anywhere else
        tokens = torch.randint(0, self.n_symbols, (batch_size, seq_len), generator=generator)
        where = torch.randint(0, self.marker_choices(seq_len), (batch_size, 1), generator=generator)
        tokens.scatter_(1, where, self.marker)
        return tokens

    def marker_positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """Position ``p`` of the marker in each row of ``tokens`` ``(batch, seq_len)``: ``(batch,)`` long.

        Raises:
            ValueError: if a row holds the marker zero times or more than once.
        """
        tokens = self.check_tokens(tokens)
        is_marker = tokens == self.marker
        per_row = is_marker.sum(dim=1)
        bad = torch.nonzero(per_row != 1).flatten()
        if bad.numel():
            row = int(bad[0])
            raise ValueError(
                f"tokens must hold the marker (id {self.marker}) exactly once per row; "
                f"row {row} holds it {int(per_row[row])} times"
            )
        return is_marker.long().argmax(dim=1)

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        p = self.marker_positions(tokens)
        seq_len = tokens.shape[1]
        # a marker in the last place has no follower: clamp the index, the row has no label anyway
        answer = tokens.gather(1, (p + 1).clamp(max=seq_len - 1).unsqueeze(1))
        labelled = torch.arange(seq_len).unsqueeze(0) > (p + 1).unsqueeze(1)
        return torch.where(labelled, answer.expand_as(tokens), torch.full_like(tokens, IGNORE_INDEX))

    def bag_ceiling_guess(self, tokens: torch.Tensor) -> torch.Tensor:
        """The best position-blind prediction: the most frequent *ordinary* symbol.

        Given the multiset ``M`` (one marker and ``seq_len - 1`` ordinary tokens), the
        ordinary tokens are i.i.d. and independent of the marker position ``p``, so every
        arrangement of them is equally likely and the answer ``token[p + 1]`` is a
        uniformly random one of them: ``P(answer = g | M) = count_M(g) / (seq_len - 1)``
        for an ordinary ``g``, and 0 for the marker. All labelled positions of a row share
        the answer, so the expected number correct for a constant guess ``g`` is
        ``E[n_labelled(p)] * count_M(g) / (seq_len - 1)``: the best guess is the most
        frequent ordinary symbol (the smallest id on ties).
        """
        tokens = self.check_tokens(tokens)
        counts = torch.zeros(tokens.shape[0], self.vocab_size, dtype=torch.long)
        counts.scatter_add_(1, tokens, torch.ones_like(tokens))
        return counts[:, : self.n_symbols].argmax(dim=1, keepdim=True).expand_as(tokens)


class CopyHalfTask(_SymbolTask):
    """Copy from half-way back: ``target[i] = token[i // 2]`` for ``i >= 1``.

    Position 0 has no label (it would copy itself). The offset ``i - i // 2`` grows with
    ``i``, so a rule that only sees relative offsets cannot express it without knowing
    ``i``: it needs absolute positions. Every target comes from a position ``<= i``, so
    a causal model can solve it.

    Args:
        n_symbols: number of distinct symbols.
    """

    name = "copy_half"
    min_len = 2
    kind = "absolute"

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = self.check_tokens(tokens)
        source = torch.arange(tokens.shape[1]) // 2
        targets = tokens[:, source].clone()
        targets[:, 0] = IGNORE_INDEX
        return targets


class PasskeyTask(Task):
    """Passkey retrieval at a random depth (Mohtashami & Jaggi, 2023), as a token task.

    A sequence of random filler symbols hides a key marker followed by ``n_digits`` digits
    (the passkey) at a depth drawn uniformly over the whole input; the sequence ends with a
    query marker followed by the passkey's digits, and the model must produce each digit at
    the query's positions (the input there is the
    previous digit, as in teacher-forced generation). Nothing else is labelled.

    Every label sits at the end of the input, so on an input longer than the training length
    every labelled position is new, and the key can be anywhere before it: the task measures
    whether a model finds and copies content at any distance, the long-context test of real
    models (needle in a haystack) on a scale a CPU can train.

    Vocabulary: ``n_filler`` filler symbols, then the key marker, the query marker and ten
    digits (outputs are the digits).

    Args:
        n_digits: length of the passkey.
        n_filler: number of filler symbols.
    """

    name = "passkey"
    kind = "long-range retrieval"

    def __init__(self, n_digits: int = 3, n_filler: int = 16) -> None:
        self.n_digits = check_positive_int("n_digits", n_digits)
        self.n_filler = check_positive_int("n_filler", n_filler)
        self.key_marker = self.n_filler
        self.query_marker = self.n_filler + 1
        self.first_digit = self.n_filler + 2
        self.vocab_size = self.n_filler + 12
        self.n_outputs = 10
        # key marker + digits somewhere, query marker + digits at the end
        self.min_len = 2 * (self.n_digits + 1)

    def options(self) -> dict[str, Any]:
        return {"n_digits": self.n_digits, "n_filler": self.n_filler}

    def _draw(self, batch_size: int, seq_len: int, generator: torch.Generator | None) -> torch.Tensor:
        k = self.n_digits
        tokens = torch.randint(0, self.n_filler, (batch_size, seq_len), generator=generator)
        digits = torch.randint(0, 10, (batch_size, k), generator=generator) + self.first_digit
        # the key block [KEY, d1..dk] fits before the query block [QUERY, d1..d(k-1)] of k tokens
        depth = torch.randint(0, seq_len - 2 * k, (batch_size, 1), generator=generator)
        rows = torch.arange(batch_size)[:, None]
        tokens[rows, depth] = self.key_marker
        tokens[rows, depth + 1 + torch.arange(k)] = digits
        tokens[:, seq_len - k] = self.query_marker
        tokens[:, seq_len - k + 1 :] = digits[:, : k - 1]
        return tokens

    def key_positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """Position of the key marker in each row, ``(batch,)``; ValueError if a row lacks exactly one."""
        tokens = self.check_tokens(tokens)
        is_key = tokens == self.key_marker
        per_row = is_key.sum(dim=1)
        bad = torch.nonzero(per_row != 1).flatten()
        if bad.numel():
            raise ValueError(f"tokens must hold the key marker (id {self.key_marker}) exactly once per row; "
                             f"row {int(bad[0])} holds it {int(per_row[int(bad[0])])} times")
        return is_key.long().argmax(dim=1)

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        k, length = self.n_digits, tokens.shape[1]
        key = self.key_positions(tokens)
        digits = tokens.gather(1, key[:, None] + 1 + torch.arange(k)) - self.first_digit
        targets = torch.full_like(tokens, IGNORE_INDEX)
        targets[:, length - k :] = digits  # at the query and after each digit given so far
        return targets

    def bag_ceiling_guess(self, tokens: torch.Tensor) -> torch.Tensor:
        """The best position-blind guess: the most frequent digit of the sequence (the passkey's
        digits are the only digits, each appearing twice, except the last one)."""
        digits = (tokens - self.first_digit).clamp(min=0, max=9)
        is_digit = tokens >= self.first_digit
        counts = torch.zeros(tokens.shape[0], 10, dtype=torch.long)
        counts.scatter_add_(1, digits, is_digit.long())
        return counts.argmax(dim=1, keepdim=True).expand_as(tokens)


class LanguageModelTask(Task):
    """Predict the next byte of real text: ``target[i] = byte[i + 1]`` (a byte-level language model).

    Sequences are windows of a split of a corpus of :mod:`posenc.corpus` (English prose, split
    by document), starting at uniformly random bytes; every position is labelled. The
    vocabulary is the 256 byte values. Test and validation sequences come from the test and
    validation documents (:meth:`for_split`), never from training text.

    Args:
        split: which documents to read: ``"train"``, ``"validation"`` or ``"test"``.
        corpus: one of :data:`posenc.corpus.CORPORA`.
    """

    name = "text"
    vocab_size = 256
    n_outputs = 256
    min_len = 1
    kind = "language model"

    def __init__(self, split: str = "train", corpus: str = "python_docs") -> None:
        self.split = check_choice("split", split, SPLITS)
        self.corpus = check_choice("corpus", corpus, CORPORA)

    def options(self) -> dict[str, Any]:
        return {"split": self.split, "corpus": self.corpus}

    def for_split(self, split: str) -> Task:
        return LanguageModelTask(check_choice("split", split, SPLITS), self.corpus)

    def data(self) -> torch.Tensor:
        """The split as one stream of bytes, ``(n_bytes,)`` uint8."""
        return split_bytes(self.split, self.corpus)

    def sample(
        self, batch_size: int, seq_len: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        batch_size = check_positive_int("batch_size", batch_size)
        seq_len = check_positive_int("seq_len", seq_len)
        generator = check_generator("generator", generator)
        data = self.data()
        if seq_len + 1 > data.numel():
            raise ValueError(f"seq_len must be < the {self.split} split's {data.numel()} bytes, got {seq_len}")
        starts = torch.randint(0, data.numel() - seq_len, (batch_size, 1), generator=generator)
        window = data[starts + torch.arange(seq_len + 1)].long()
        return window[:, :-1], window[:, 1:]

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        raise TypeError("the text task's targets are the bytes that follow each window in the corpus: "
                        "draw them with sample(), they cannot be computed from the tokens")


_TASKS: dict[str, Callable[..., Task]] = {
    "copy_offset": CopyOffsetTask,
    "reverse": ReverseTask,
    "marker_recall": MarkerRecallTask,
    "copy_half": CopyHalfTask,
    "passkey": PasskeyTask,
    "text": LanguageModelTask,
}


def available_tasks() -> list[str]:
    """Names accepted by :func:`make_task`."""
    return list(_TASKS)


def make_task(name: str, **options: Any) -> Task:
    """Create a task by name, e.g. ``make_task("copy_offset", offset=3)``."""
    check_choice("name", name, list(_TASKS))
    try:
        return _TASKS[name](**options)
    except TypeError as error:
        raise ValueError(f"bad options {options!r} for task {name!r}: {error}") from error


def fixed_dataset(task: Task, n_examples: int, seq_len: int, *, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed set of ``n_examples`` sequences (for the low-data regime).

    Returns:
        ``(tokens, targets)``, both ``(n_examples, seq_len)`` long.
    """
    _check_task(task)
    return task.sample(check_positive_int("n_examples", n_examples), seq_len, make_generator(seed))


def token_accuracy(predictions: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of labelled positions (``targets != -100``) where ``predictions == targets``.

    Args:
        predictions, targets: long tensors of the same shape.
    """
    check_tensor("predictions", predictions, integer=True)
    check_tensor("targets", targets, integer=True)
    if predictions.shape != targets.shape:
        raise ValueError(f"predictions {tuple(predictions.shape)} and targets {tuple(targets.shape)} differ in shape")
    labelled = targets != IGNORE_INDEX
    n_labelled = int(labelled.sum())
    if n_labelled == 0:
        raise ValueError("targets contain no labelled positions (all are -100)")
    return float((predictions[labelled] == targets[labelled]).sum()) / n_labelled


def bag_of_tokens_accuracy(task: Task, seq_len: int, *, n_examples: int = 2048, seed: int = 0) -> float:
    """Accuracy of the best position-blind guess, :meth:`Task.bag_ceiling_guess`.

    A model that sees a sequence only as a multiset of tokens gives one answer at every
    position of it; the best such answer is the task's ``bag_ceiling_guess`` (the most
    frequent symbol for ``copy_offset``, ``reverse`` and ``copy_half``, where each target
    is a uniformly random element of the sequence given its multiset; the most frequent
    ordinary symbol for ``marker_recall``). Its accuracy is the ceiling for any such model,
    up to sampling fluctuations of ``n_examples`` sequences.

    Returns:
        Token accuracy in ``[0, 1]``.
    """
    _check_task(task)
    tokens, targets = fixed_dataset(task, n_examples, seq_len, seed=seed)
    return token_accuracy(task.bag_ceiling_guess(tokens), targets)


def _check_task(task: object) -> None:
    check_instance("task", task, Task, what="a posenc.tasks.Task (e.g. make_task('copy_offset'))")
