"""Chapter 1: self-attention without positions, and what breaks its symmetry.

Single-head scaled dot-product self-attention on plain ``(seq_len, d_model)`` inputs,
small enough to read in full, plus helpers to measure permutation equivariance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from posenc.checks import check_choice, check_positive_int
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


