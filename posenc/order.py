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

from posenc.checks import check_choice, check_nonnegative_int, check_positive_int
from posenc.sinusoidal import sinusoidal_table

__all__ = [
    "AttentionWeights",
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
    """Query, key and value projections, each ``(d_model, d_model)``."""

    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor


def random_attention(d_model: int, *, seed: int = 0) -> AttentionWeights:
    """Random projections with variance ``1/d_model`` (a freshly initialised layer)."""
    d_model = check_positive_int("d_model", d_model)
    generator = torch.Generator().manual_seed(seed)
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
    if x.ndim != 2 or x.shape[1] != weights.w_q.shape[0]:
        raise ValueError(
            f"x must have shape (seq_len, d_model={weights.w_q.shape[0]}), got {tuple(x.shape)}"
        )
    queries, keys, values = x @ weights.w_q, x @ weights.w_k, x @ weights.w_v
    scores = queries @ keys.T / math.sqrt(x.shape[1])
    if causal:
        scores = scores.masked_fill(~causal_mask(x.shape[0]), float("-inf"))
    attention = torch.softmax(scores, dim=-1)
    return attention @ values, attention


def embed_words(words: Sequence[str], *, d_model: int, seed: int = 0) -> torch.Tensor:
    """Deterministic stand-in word embeddings: one random vector per distinct word.

    Returns:
        ``(len(words), d_model)``; equal words get equal vectors, whatever their position.
    """
    d_model = check_positive_int("d_model", d_model)
    vocabulary = sorted(set(words))
    generator = torch.Generator().manual_seed(seed)
    table = torch.randn(len(vocabulary), d_model, generator=generator)
    return table[[vocabulary.index(w) for w in words]]


def permute_rows(x: torch.Tensor, permutation: Sequence[int]) -> torch.Tensor:
    """Rows of ``x`` in the order ``permutation`` (row ``i`` of the result is ``x[permutation[i]]``)."""
    if sorted(permutation) != list(range(x.shape[0])):
        raise ValueError(f"permutation must be an ordering of 0..{x.shape[0] - 1}, got {list(permutation)}")
    return x[list(permutation)]


def with_positions(x: torch.Tensor, mode: str) -> torch.Tensor:
    """``x`` plus sinusoidal position vectors when ``mode == "sinusoidal added"``, else ``x``."""
    check_choice("mode", mode, POSITION_MODES)
    if mode == "sinusoidal added":
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
    causal = mode == "causal mask"
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
    if x.ndim != 2:
        raise ValueError(f"x must have shape (seq_len, d_model), got shape {tuple(x.shape)}")
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
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(d_model, d_model, kernel_size, generator=generator) / math.sqrt(d_model * kernel_size)


def convolve(x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """1-D convolution along the sequence with zero padding (output as long as the input).

    Args:
        x: inputs of shape ``(seq_len, d_model)``.
        kernel: ``(d_out, d_model, kernel_size)`` with an odd ``kernel_size``.

    Returns:
        ``(seq_len, d_out)``: row ``i`` depends only on rows ``i - r .. i + r`` of ``x``
        (``r = kernel_size // 2``), never on ``i`` itself.
    """
    if kernel.ndim != 3 or kernel.shape[2] % 2 == 0:
        raise ValueError(
            f"kernel must have shape (d_out, d_model, odd kernel_size), got shape {tuple(kernel.shape)}"
        )
    if x.ndim != 2 or x.shape[1] != kernel.shape[1]:
        raise ValueError(f"x must have shape (seq_len, d_model={kernel.shape[1]}), got {tuple(x.shape)}")
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
    shifted = torch.cat([torch.zeros(shift, x.shape[1], dtype=x.dtype), x])
    return float((convolve(shifted, kernel)[shift:] - convolve(x, kernel)).abs().max())
