"""Synthetic sequence tasks whose answers depend on *where* tokens are.

Each task draws random sequences of symbols on the fly from a seeded
``torch.Generator`` and labels every position. The labels are a function of token
*positions*, so a model that sees the input only as a bag (multiset) of tokens cannot
get them right, whatever its size: :func:`bag_of_tokens_accuracy` measures the best
such a model can do, and it is far below what a model with positions reaches.

* :class:`CopyOffsetTask` (``"copy_offset"``): output at position ``i`` is the token at
  position ``i - offset``. The rule is the same at every length and only needs the
  *relative* position, which makes it the length-generalization task of chapter 7.
* :class:`ReverseTask` (``"reverse"``): output at position ``i`` is the token at
  position ``seq_len - 1 - i``, a rule tied to absolute positions and the length.

Targets use ``-100`` (PyTorch's ``ignore_index``) where there is nothing to predict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from posenc.checks import check_choice, check_nonnegative_int, check_positive_int

__all__ = [
    "IGNORE_INDEX",
    "Task",
    "CopyOffsetTask",
    "ReverseTask",
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
    """

    name: str = "task"
    vocab_size: int
    n_outputs: int
    min_len: int = 1

    def options(self) -> dict[str, Any]:
        """Keyword arguments that recreate this task with :func:`make_task`."""
        raise NotImplementedError

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        """Targets ``(batch, seq_len)`` for ``tokens`` ``(batch, seq_len)``."""
        raise NotImplementedError

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
        tokens = torch.randint(0, self.vocab_size, (batch_size, seq_len), generator=generator)
        return tokens, self.labels(tokens)

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

    def __init__(self, n_symbols: int = 16, offset: int = 2) -> None:
        self.n_symbols = check_positive_int("n_symbols", n_symbols)
        self.offset = check_positive_int("offset", offset)
        self.vocab_size = self.n_symbols
        self.n_outputs = self.n_symbols
        self.min_len = self.offset + 1

    def options(self) -> dict[str, Any]:
        return {"n_symbols": self.n_symbols, "offset": self.offset}

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        targets = torch.full_like(tokens, IGNORE_INDEX)
        targets[:, self.offset :] = tokens[:, : -self.offset]
        return targets


class ReverseTask(Task):
    """Output the sequence reversed: ``target[i] = token[seq_len - 1 - i]``.

    Args:
        n_symbols: number of distinct symbols.
    """

    name = "reverse"
    min_len = 2

    def __init__(self, n_symbols: int = 16) -> None:
        self.n_symbols = check_positive_int("n_symbols", n_symbols)
        self.vocab_size = self.n_symbols
        self.n_outputs = self.n_symbols

    def options(self) -> dict[str, Any]:
        return {"n_symbols": self.n_symbols}

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        return tokens.flip(-1).clone()


_TASKS: dict[str, Callable[..., Task]] = {"copy_offset": CopyOffsetTask, "reverse": ReverseTask}


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
    return task.sample(check_positive_int("n_examples", n_examples), seq_len, make_generator(seed))


def token_accuracy(predictions: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of labelled positions (``targets != -100``) where ``predictions == targets``.

    Args:
        predictions, targets: long tensors of the same shape.
    """
    if predictions.shape != targets.shape:
        raise ValueError(f"predictions {tuple(predictions.shape)} and targets {tuple(targets.shape)} differ in shape")
    labelled = targets != IGNORE_INDEX
    n_labelled = int(labelled.sum())
    if n_labelled == 0:
        raise ValueError("targets contain no labelled positions (all are -100)")
    return float((predictions[labelled] == targets[labelled]).sum()) / n_labelled


def bag_of_tokens_accuracy(task: Task, seq_len: int, *, n_examples: int = 2048, seed: int = 0) -> float:
    """Accuracy of the best position-blind guess: the most frequent symbol of each sequence.

    A model that sees a sequence only as a multiset of tokens can at best guess, for every
    labelled position, a symbol that occurs often in the sequence; predicting the sequence's
    most frequent symbol (smallest id on ties) is that guess. For both tasks here the target
    is a uniformly random element of the sequence, so this is the ceiling for any such model
    up to small fluctuations.

    Returns:
        Token accuracy in ``[0, 1]``.
    """
    tokens, targets = fixed_dataset(task, n_examples, seq_len, seed=seed)
    counts = torch.zeros(tokens.shape[0], task.vocab_size, dtype=torch.long)
    counts.scatter_add_(1, tokens, torch.ones_like(tokens))
    guess = counts.argmax(dim=1, keepdim=True).expand_as(tokens)
    return token_accuracy(guess, targets)
