"""Chapter 1: self-attention without positions, and what breaks its symmetry.

Single-head scaled dot-product self-attention on plain ``(seq_len, d_model)`` inputs,
small enough to read in full, plus helpers to measure permutation equivariance, what a
causal mask does and does not fix (:func:`prefix_shuffle_change`), and, for contrast, the
translation equivariance of a 1-D convolution (:func:`convolution_shift_gap`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from posenc.checks import (
    check_bool,
    check_choice,
    check_even_int,
    check_instance,
    check_int_sequence,
    check_nonnegative_int,
    check_positive_int,
    check_tensor,
    check_text,
)
from posenc.sinusoidal import EVEN_WIDTH, sinusoidal_table

__all__ = [
    "AttentionWeights",
    "MAX_EXPLORER_WORDS",
    "as_words",
    "random_attention",
    "self_attention",
    "causal_mask",
    "embed_words",
    "permute_rows",
    "equivariance_gap",
    "POSITION_MODES",
    "with_positions",
    "prefix_shuffle_change",
    "random_convolution",
    "convolve",
    "convolution_shift_gap",
]

#: How position information enters the chapter-1 demos.
POSITION_MODES = ("none", "causal mask", "sinusoidal added")


@dataclass(frozen=True)
class AttentionWeights:
    """Query, key and value projections, each ``(d_model, d_model)`` of one floating-point dtype."""

    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("w_q", "w_k", "w_v"):
            matrix = check_tensor(name, getattr(self, name), ndim=2, floating=True, shape="(d_model, d_model)")
            if matrix.shape[0] != matrix.shape[1] or matrix.shape != self.w_q.shape or matrix.dtype != self.w_q.dtype:
                raise ValueError(f"{name} must be square and like w_q ({tuple(self.w_q.shape)}, {self.w_q.dtype}), got "
                                 f"{tuple(matrix.shape)}, {matrix.dtype}")


#: The most words :func:`posenc.order_plots.order_explorer` takes: its static page holds every
#: reordering for every position mode, 5! x 3 = 360 frames (at most 400 are allowed).
MAX_EXPLORER_WORDS = 5


def as_words(words: Sequence[str] | str) -> list[str]:
    """``words`` as a list of words: a sentence string is split on whitespace (``"dog bites man"`` ->
    3 words), a sequence of strings is taken as it is; nothing else, and no empty result, is accepted."""
    if isinstance(words, str):
        found = words.split()
    else:
        if not isinstance(words, Sequence) or isinstance(words, bytes):
            raise TypeError(f"words must be a sentence (a str) or a sequence of words such as ['dog', 'bites'], "
                            f"got {words!r} of type {type(words).__name__}")
        found = [check_text(f"words[{index}]", word, empty=False) for index, word in enumerate(words)]
    if not found:
        raise ValueError(f"words must hold at least one word, got {words!r}")
    return found


def random_attention(d_model: int, *, seed: int = 0) -> AttentionWeights:
    """Random projections with variance ``1/d_model`` (a freshly initialised layer)."""
    d_model = check_positive_int("d_model", d_model)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    scale = 1.0 / math.sqrt(d_model)
    w_q, w_k, w_v = (torch.randn(d_model, d_model, generator=generator) * scale for _ in range(3))
    return AttentionWeights(w_q, w_k, w_v)


def causal_mask(seq_len: int) -> torch.Tensor:
    """Boolean ``(seq_len, seq_len)`` mask, True where query ``i`` may attend to key ``j <= i``."""
    seq_len = check_positive_int("seq_len", seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool).tril()


def self_attention(
    x: torch.Tensor, weights: AttentionWeights, *, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Single-head scaled dot-product self-attention.

    Args:
        x: inputs of shape ``(seq_len, d_model)``; no position information is added here.
        causal: if True, each position attends only to itself and earlier positions.

    Returns:
        ``(outputs, attention)`` with shapes ``(seq_len, d_model)`` and ``(seq_len, seq_len)``.
    """
    _check_inputs(x, weights)
    causal = check_bool("causal", causal)
    queries, keys, values = x @ weights.w_q, x @ weights.w_k, x @ weights.w_v
    scores = queries @ keys.T / math.sqrt(x.shape[1])
    if causal:
        scores = scores.masked_fill(~causal_mask(x.shape[0]), float("-inf"))
    attention = torch.softmax(scores, dim=-1)
    return attention @ values, attention


def _check_inputs(x: object, weights: object) -> None:
    check_instance("weights", weights, AttentionWeights, what="posenc.order.AttentionWeights (random_attention)")
    assert isinstance(weights, AttentionWeights)
    d_model = weights.w_q.shape[0]
    check_tensor("x", x, floating=True, shape=f"(seq_len, d_model={d_model})")
    assert isinstance(x, torch.Tensor)
    if x.ndim != 2 or x.shape[1] != d_model:
        raise ValueError(f"x must have shape (seq_len, d_model={d_model}), got {tuple(x.shape)}")
    if x.dtype != weights.w_q.dtype:
        raise ValueError(f"x must have the dtype of the weights ({weights.w_q.dtype}), got {x.dtype}: convert one "
                         f"of them (e.g. x.to({weights.w_q.dtype}))")


def embed_words(words: Sequence[str] | str, *, d_model: int, seed: int = 0) -> torch.Tensor:
    """Deterministic stand-in word embeddings: one random vector per distinct word.

    Args:
        words: a sequence of words, or a sentence (a str, split on whitespace:
            ``"the cat sat"`` is three words, never eleven characters).
        d_model: width of each vector.
        seed: seed of the random vectors.

    Returns:
        ``(len(words), d_model)``; equal words get equal vectors, whatever their position.
    """
    words = as_words(words)
    d_model = check_positive_int("d_model", d_model)
    vocabulary = sorted(set(words))
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    table = torch.randn(len(vocabulary), d_model, generator=generator)
    return table[[vocabulary.index(w) for w in words]]


def permute_rows(x: torch.Tensor, permutation: Sequence[int]) -> torch.Tensor:
    """Rows of ``x`` in the order ``permutation`` (row ``i`` of the result is ``x[permutation[i]]``)."""
    check_tensor("x", x, shape="(seq_len, ...)")
    if x.ndim < 1:
        raise ValueError(f"x must have at least one dimension (rows to permute), got shape {tuple(x.shape)}")
    permutation = check_int_sequence("permutation", permutation, nonnegative=True)
    if sorted(permutation) != list(range(x.shape[0])):
        raise ValueError(f"permutation must be an ordering of 0..{x.shape[0] - 1}, got {list(permutation)}")
    return x[list(permutation)]


def with_positions(x: torch.Tensor, mode: str) -> torch.Tensor:
    """``x`` plus sinusoidal position vectors when ``mode == "sinusoidal added"``, else ``x``."""
    check_tensor("x", x, ndim=2, floating=True, shape="(seq_len, d_model)")
    check_choice("mode", mode, POSITION_MODES)
    if mode == "sinusoidal added":
        check_even_int("d_model (the width of x)", x.shape[1], why=f"mode='sinusoidal added': {EVEN_WIDTH}")
        return x + sinusoidal_table(x.shape[0], x.shape[1])
    return x


def equivariance_gap(
    x: torch.Tensor, permutation: Sequence[int], weights: AttentionWeights, *, mode: str = "none"
) -> float:
    """Largest ``|f(P x) - P f(x)|`` over all entries, for the attention ``f`` of ``mode``.

    Zero (up to rounding) means permuting the tokens only permutes the outputs.
    Positions are attached *after* permuting, as in a real model: position 0 is whatever
    token comes first.
    """
    _check_inputs(x, weights)
    permutation = check_int_sequence("permutation", permutation, nonnegative=True)
    causal = check_choice("mode", mode, POSITION_MODES) == "causal mask"
    reference, _ = self_attention(with_positions(x, mode), weights, causal=causal)
    permuted, _ = self_attention(with_positions(permute_rows(x, permutation), mode), weights, causal=causal)
    return float((permuted - permute_rows(reference, permutation)).abs().max())




def prefix_shuffle_change(
    x: torch.Tensor, prefix_order: Sequence[int], weights: AttentionWeights
) -> torch.Tensor:
    """How much each output of ONE causal attention layer (no positions) changes when the
    first ``k = len(prefix_order)`` tokens are reordered among themselves.

    Row ``i`` of the reordered input is ``x[prefix_order[i]]`` for ``i < k`` and ``x[i]``
    after that. Outputs are compared *at the same position*.

    Args:
        x: inputs of shape ``(seq_len, d_model)``.
        prefix_order: an ordering of ``0 .. k-1`` with ``1 <= k <= seq_len``.
        weights: the attention projections.

    Returns:
        ``(seq_len,)``: the largest ``|out_reordered[i] - out[i]|`` at each position ``i``.
        Positions ``i >= k`` see the same *set* of earlier tokens and hold the same token,
        so their change is zero up to rounding: one causal layer sees the set of the prefix,
        not its order. Only positions inside the reordered block can change.
    """
    _check_inputs(x, weights)
    prefix_order = check_int_sequence("prefix_order", prefix_order, nonnegative=True)
    seq_len, k = x.shape[0], len(prefix_order)
    if not 1 <= k <= seq_len or sorted(prefix_order) != list(range(k)):
        raise ValueError(
            f"prefix_order must be an ordering of 0..k-1 with 1 <= k <= seq_len={seq_len}, "
            f"got {list(prefix_order)}"
        )
    order = list(prefix_order) + list(range(k, seq_len))
    reference, _ = self_attention(x, weights, causal=True)
    reordered, _ = self_attention(permute_rows(x, order), weights, causal=True)
    return (reordered - reference).abs().amax(dim=1)


def random_convolution(d_model: int, kernel_size: int = 3, *, seed: int = 0) -> torch.Tensor:
    """Random 1-D convolution kernel of shape ``(d_model, d_model, kernel_size)``.

    ``kernel_size`` must be odd, so that each output row is centred on its input row.
    """
    d_model = check_positive_int("d_model", d_model)
    kernel_size = check_positive_int("kernel_size", kernel_size)
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd (centred on each token), got {kernel_size}")
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    return torch.randn(d_model, d_model, kernel_size, generator=generator) / math.sqrt(d_model * kernel_size)


def _check_convolution(x: object, kernel: object) -> None:
    check_tensor("kernel", kernel, floating=True, shape="(d_out, d_model, odd kernel_size)")
    assert isinstance(kernel, torch.Tensor)
    if kernel.ndim != 3 or kernel.shape[2] % 2 == 0:
        raise ValueError(
            f"kernel must have shape (d_out, d_model, odd kernel_size), got shape {tuple(kernel.shape)}"
        )
    check_tensor("x", x, floating=True, shape=f"(seq_len, d_model={kernel.shape[1]})")
    assert isinstance(x, torch.Tensor)
    if x.ndim != 2 or x.shape[1] != kernel.shape[1]:
        raise ValueError(f"x must have shape (seq_len, d_model={kernel.shape[1]}), got {tuple(x.shape)}")
    if x.dtype != kernel.dtype:
        raise ValueError(f"x must have the dtype of kernel ({kernel.dtype}), got {x.dtype}")


def convolve(x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """1-D convolution along the sequence with zero padding (output as long as the input).

    Args:
        x: inputs of shape ``(seq_len, d_model)``.
        kernel: ``(d_out, d_model, kernel_size)`` with an odd ``kernel_size``.

    Returns:
        ``(seq_len, d_out)``: row ``i`` depends only on rows ``i - r .. i + r`` of ``x``
        (``r = kernel_size // 2``), never on ``i`` itself.
    """
    _check_convolution(x, kernel)
    out = torch.nn.functional.conv1d(x.T.unsqueeze(0), kernel, padding=kernel.shape[2] // 2)
    return out.squeeze(0).T


def convolution_shift_gap(x: torch.Tensor, shift: int, kernel: torch.Tensor) -> float:
    """Translation equivariance of :func:`convolve`: shift the input, the output shifts.

    The input is moved ``shift`` places to the right by putting ``shift`` zero rows (padding
    tokens) in front of it; the result is compared with the output for the unshifted input.

    Returns:
        ``max |conv(shifted)[shift:] - conv(x)|``: zero up to rounding, because each output
        row depends on its neighbourhood only, not on its absolute position.
    """
    shift = check_nonnegative_int("shift", shift)
    _check_convolution(x, kernel)
    shifted = torch.cat([torch.zeros(shift, x.shape[1], dtype=x.dtype), x])
    return float((convolve(shifted, kernel)[shift:] - convolve(x, kernel)).abs().max())
