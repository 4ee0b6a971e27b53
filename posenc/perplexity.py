"""Bits per byte of a byte-level language model on held-out text, against the length it reads.

Press et al. (2022, ALiBi) plot perplexity against evaluation length and evaluate in two ways,
which give different curves (their Appendix B):

* **non-overlapping** (``"chunks"``): cut the text into consecutive windows of ``L`` bytes and
  score every position of each window. Early positions of a window see little context (the
  "early token curse"), so a longer window lowers the loss partly because fewer positions
  are early, not because far context helps.
* **sliding window** (``"sliding"``): windows of ``L`` bytes advance by a stride ``S``; the
  first window scores all its positions, each later one only its last ``S``, so every byte is
  scored once and (after the first window) with at least ``L - S`` bytes of context.

Past the training length the right score is on **new positions** only (offsets ``>= train_len``
inside a window): :func:`length_scores` reports it beside the score over every position, and the
**profile**, the mean loss of each stretch of ``bucket`` offsets of the non-overlapping windows:
one evaluation at ``4 L`` shows the loss at every distance from the window's start.

Losses are cross-entropies in bits (natural-log loss / ln 2), averaged over the scored bytes.

``posenc.train`` stores the readings of text runs as ``"bpb@L"``, ``"bpb_slide@L"``,
``"bpb_new@L"`` and ``extras["bpb_profile@L"]``; :mod:`posenc.suite` reads them from a grid cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from posenc.checks import (
    check_bool,
    check_callable,
    check_choice,
    check_nonnegative_int,
    check_positive_int,
    check_real,
    check_tensor,
)

__all__ = ["MODES", "EVAL_BYTES", "PROFILE_BUCKET", "READINGS", "ScoredBytes", "LengthScores", "sliding_stride",
           "scored_bytes", "length_scores", "ngram_bits"]

#: How a text is cut into windows (see the module docstring).
MODES: tuple[str, ...] = ("chunks", "sliding")
#: Bytes of the test text that are scored (its first ones): every method and length reads the same text.
EVAL_BYTES = 32_768
#: Offsets per stretch of a window's loss profile (:meth:`ScoredBytes.profile`).
PROFILE_BUCKET = 64
#: The readings of :func:`length_scores`, by the metric name a run stores.
READINGS: dict[str, str] = {"bpb": "non-overlapping windows, every position", "bpb_slide": "sliding windows",
                            "bpb_new": "non-overlapping windows, new positions only"}


@dataclass(frozen=True)
class ScoredBytes:
    """The loss of every scored byte and where it sat in its window.

    Attributes:
        bits: ``(n,)`` float64 cross-entropy of each scored byte, in bits.
        offsets: ``(n,)`` long: its position inside its window (``0`` = the window's first byte).
    """

    bits: torch.Tensor
    offsets: torch.Tensor

    def mean(self, *, from_offset: int = 0) -> float:
        """Mean bits per byte over the bytes at offsets ``>= from_offset``."""
        from_offset = check_nonnegative_int("from_offset", from_offset)
        chosen = self.bits[self.offsets >= from_offset]
        if chosen.numel() == 0:
            raise ValueError(f"no scored byte sits at an offset >= {from_offset}")
        return float(chosen.mean())

    def profile(self, bucket: int) -> tuple[float, ...]:
        """Mean bits per byte of each stretch of ``bucket`` offsets: entry ``k`` averages the bytes at
        offsets ``k * bucket`` to ``(k + 1) * bucket - 1``; one entry per stretch up to the largest
        offset scored. ValueError if a stretch holds no scored byte (the sliding windows' early offsets)."""
        bucket = check_positive_int("bucket", bucket)
        stretch = self.offsets // bucket
        n = int(stretch.max()) + 1 if stretch.numel() else 0
        counts = torch.bincount(stretch, minlength=n)
        if n == 0 or bool((counts == 0).any()):
            empty = int(torch.nonzero(counts == 0)[0]) if n else 0
            raise ValueError(f"no scored byte sits at offsets {empty * bucket} to {(empty + 1) * bucket - 1} "
                             f"(bucket={bucket})")
        sums = torch.bincount(stretch, weights=self.bits, minlength=n)
        return tuple(float(v) for v in sums / counts)


@dataclass(frozen=True)
class LengthScores:
    """What :func:`length_scores` reads at one evaluation length.

    Attributes:
        scores: ``"bpb"``, ``"bpb_slide"`` (when sliding windows were read) and ``"bpb_new"`` (past the
            training length), in bits per byte.
        profile: the non-overlapping windows' mean bits per byte of each stretch of ``bucket``
            offsets (:meth:`ScoredBytes.profile`), ``length / bucket`` entries (rounded up).
        bucket: offsets per stretch.
    """

    scores: dict[str, float]
    profile: tuple[float, ...]
    bucket: int


def _check_data(data: object, name: str = "data") -> None:
    tensor = check_tensor(name, data, ndim=1, integer=True, shape="(n,) of bytes")
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) > 255):
        raise ValueError(f"{name} must hold bytes (0 .. 255), got values from {int(tensor.min())} to {int(tensor.max())}")


def sliding_stride(length: int) -> int:
    """The sliding windows' default step for windows of ``length`` bytes: a quarter of the window
    (at least 1), so every byte after the first window is read with at least ``length - stride``
    bytes before it (384 at 512)."""
    return max(1, check_positive_int("length", length) // 4)


def _windows(n_bytes: int, length: int, mode: str, stride: int) -> list[tuple[int, int]]:
    """``(start, first scored offset)`` of every window over ``n_bytes + 1`` bytes (targets need one more)."""
    if mode == "chunks":
        return [(start, 0) for start in range(0, n_bytes - length + 1, length)]
    windows = [(0, 0)]
    start = stride
    while start + length <= n_bytes:
        windows.append((start, length - stride))
        start += stride
    return windows


@torch.no_grad()
def scored_bytes(
    model: Callable[[torch.Tensor], torch.Tensor],
    data: torch.Tensor,
    length: int,
    *,
    mode: str = "chunks",
    stride: int | None = None,
    batch_size: int = 8,
) -> ScoredBytes:
    """Score ``data`` (a 1-D stream of bytes) with ``model`` reading windows of ``length`` bytes.

    Args:
        model: maps ``(batch, length)`` long tokens to ``(batch, length, 256)`` logits (causal).
        data: ``(n,)`` bytes (any integer dtype); targets are the next bytes, so ``n > length``.
        length: the window, in bytes.
        mode: ``"chunks"`` or ``"sliding"`` (:data:`MODES`).
        stride: the sliding window's step (default :func:`sliding_stride`); ignored for chunks.
        batch_size: windows per forward pass.

    Returns:
        A :class:`ScoredBytes` with every scored byte once.
    """
    check_callable("model", model)
    _check_data(data)
    length = check_positive_int("length", length)
    check_choice("mode", mode, MODES)
    stride = check_positive_int("stride", stride if stride is not None else sliding_stride(length))
    batch_size = check_positive_int("batch_size", batch_size)
    if stride > length:
        raise ValueError(f"stride must be <= length ({length}), got {stride}")
    if data.ndim != 1 or data.numel() <= length:
        raise ValueError(f"data must be a 1-D stream of more than length={length} bytes, got shape "
                         f"{tuple(data.shape)}")
    stream = data.long()
    windows = _windows(stream.numel() - 1, length, mode, stride)
    bits, offsets = [], []
    span = torch.arange(length)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        for first in range(0, len(windows), batch_size):
            batch = windows[first : first + batch_size]
            starts = torch.tensor([start for start, _ in batch])[:, None]
            tokens, targets = stream[starts + span], stream[starts + span + 1]
            logits = model(tokens)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), targets.reshape(-1),
                                   reduction="none").view(len(batch), length) / math.log(2.0)
            for row, (_, scored_from) in enumerate(batch):
                bits.append(loss[row, scored_from:])
                offsets.append(span[scored_from:])
    finally:
        if was_training and hasattr(model, "train"):
            model.train(True)
    return ScoredBytes(torch.cat(bits), torch.cat(offsets))


def length_scores(
    model: Callable[[torch.Tensor], torch.Tensor],
    data: torch.Tensor,
    length: int,
    *,
    train_len: int,
    n_bytes: int = EVAL_BYTES,
    sliding: bool = True,
    bucket: int = PROFILE_BUCKET,
) -> LengthScores:
    """The scores the book reports at one evaluation length, and the loss profile.

    Args:
        model: as for :func:`scored_bytes`.
        data: ``(n,)`` bytes; the first ``n_bytes + 1`` are read.
        length: the window, in bytes.
        train_len: the length the model was trained on (new positions start there).
        n_bytes: bytes scored.
        sliding: also read sliding windows (stride :func:`sliding_stride`: four times the cost of
            the non-overlapping ones).
        bucket: offsets per stretch of the profile.

    Returns:
        A :class:`LengthScores`: ``"bpb"``, bits per byte over every position of non-overlapping
        windows; ``"bpb_slide"`` (if ``sliding``) over the sliding windows' scored bytes; and, for
        ``length > train_len``, ``"bpb_new"`` over the non-overlapping windows' positions
        ``>= train_len`` only; with the profile of the non-overlapping windows.
    """
    check_callable("model", model)
    _check_data(data)
    length = check_positive_int("length", length)
    train_len = check_positive_int("train_len", train_len)
    text = data[: check_positive_int("n_bytes", n_bytes) + 1]
    sliding = check_bool("sliding", sliding)
    bucket = check_positive_int("bucket", bucket)
    chunks = scored_bytes(model, text, length, mode="chunks")
    scores = {"bpb": chunks.mean()}
    if sliding:
        scores["bpb_slide"] = scored_bytes(model, text, length, mode="sliding").mean()
    if length > train_len:
        scores["bpb_new"] = chunks.mean(from_offset=train_len)
    return LengthScores(scores, chunks.profile(bucket), bucket)


def ngram_bits(train: torch.Tensor, test: torch.Tensor, order: int = 1, *, smoothing: float = 1.0) -> float:
    """Bits per byte of a counting model on ``test``: the next byte's frequency after the last
    ``order`` bytes in ``train`` (``order=0``: byte frequencies alone, the unigram model; ``1``: after
    the previous byte, the bigram model), with ``smoothing`` added to every count (Laplace's rule),
    so a byte never seen in that context still has a probability.

    A reference level for the language models: a Transformer whose attention has not yet learned to
    look back reads about as well as the bigram model, since the byte it sits on is its input.

    Args:
        train, test: ``(n,)`` bytes (any integer dtype); ``test`` needs more than ``order`` bytes.
        order: bytes of context, 0 to 2 (a table of ``256 ** (order + 1)`` counts).
        smoothing: added to every count, > 0.

    Returns:
        The mean cross-entropy in bits over ``test``'s bytes from offset ``order`` on.
    """
    _check_data(train, "train")
    _check_data(test, "test")
    order = check_nonnegative_int("order", order)
    if order > 2:
        raise ValueError(f"order must be 0, 1 or 2 (a table of 256 ** (order + 1) counts), got {order}")
    smoothing = check_real("smoothing", smoothing, low=0.0, low_open=True)
    for name, data in (("train", train), ("test", test)):
        if data.numel() <= order:
            raise ValueError(f"{name} must hold more than order={order} bytes, got {data.numel()}")

    def contexts(data: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        data = data.long()
        context = torch.zeros(data.numel() - order, dtype=torch.long)
        for k in range(order):  # the previous `order` bytes as one base-256 number
            context = context * 256 + data[k : data.numel() - order + k]
        return context, data[order:]

    context, following = contexts(train)
    counts = torch.bincount(context * 256 + following, minlength=256 ** (order + 1)).double().view(-1, 256)
    counts += smoothing
    log_p = torch.log2(counts / counts.sum(dim=1, keepdim=True))
    test_context, test_following = contexts(test)
    return float(-log_p[test_context, test_following].mean())
