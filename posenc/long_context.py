"""Serving and evaluating long contexts: what engines compute, and how a length is judged.

Small, exact versions of what inference code does with positions, each a rule that a
published implementation or paper states:

* :func:`batch_seq_len` and :func:`dynamic_ntk_batch_frequencies`: Hugging Face's dynamic
  scaling reads one length for the whole batch, ``max(position_ids) + 1``, so a short row
  is scaled for its longest neighbour (``dynamic_rope_update`` in transformers).
* :func:`static_dynamic_ntk_factor`: the NTK factor of vLLM's former "dynamic" scaling,
  computed once for the longest length it serves, ``s**2 - (s - 1)``, whatever the input
  (vLLM issues 3488, 5093 and 41236).
* :func:`softmax_with_sink`: attention with a learned sink logit per head (gpt-oss): the
  weights on the real keys sum to less than one.
* :func:`streaming_cache`: StreamingLLM's cache (Xiao et al., 2024): a few first tokens plus
  a rolling window, numbered by their place in the cache.
* :func:`llama4_query_scale`: Llama 4's query temperature on its layers without positions.
* :func:`effective_length`: the longest length at which a score stays above a threshold
  at that length and every shorter one (RULER's "effective length", Hsieh et al., 2024);
  :func:`posenc.suite.tied_effective_lengths` reads it off a grid cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from posenc.checks import (
    check_array,
    check_mapping,
    check_nonnegative_int,
    check_positions,
    check_positive_float,
    check_positive_int,
    check_real,
    check_real_positions,
)
from posenc.rope_scaling import dynamic_ntk_inverse_frequencies

__all__ = [
    "batch_seq_len",
    "dynamic_ntk_batch_frequencies",
    "static_dynamic_ntk_factor",
    "softmax_with_sink",
    "streaming_cache",
    "llama4_query_scale",
    "effective_length",
]


def batch_seq_len(position_ids: Any) -> int:
    """The length Hugging Face's dynamic scaling reads: ``max(position_ids) + 1`` over the whole batch."""
    ids = check_positions("position_ids", position_ids)
    if ids.numel() == 0:
        raise ValueError(f"position_ids must be a non-empty tensor of integer positions >= 0, got {position_ids!r}")
    return int(ids.max()) + 1


def dynamic_ntk_batch_frequencies(
    position_ids: Any, d_head: int, *, train_len: int, factor: float = 1.0, base: float = 10000.0
) -> torch.Tensor:
    """The speeds every row of a batch gets under Hugging Face's dynamic NTK scaling.

    One set for the whole batch, chosen by :func:`batch_seq_len`: a row whose own length is
    within ``train_len`` is still rotated with the speeds of the batch's longest row.
    Returns float64 ``(d_head // 2,)``.
    """
    return dynamic_ntk_inverse_frequencies(d_head, seq_len=batch_seq_len(position_ids), train_len=train_len,
                                           factor=factor, base=base)


def static_dynamic_ntk_factor(factor: float) -> float:
    """The NTK factor vLLM's former "dynamic" scaling applied to every input: ``s**2 - (s - 1)``.

    It computed one base, at start-up, for the longest length ``max_len = M * s``:
    ``s * max_len / M - (s - 1)``. Hugging Face's rule gives 1 up to ``M`` and grows with the input.
    """
    factor = check_positive_float("factor", factor)
    if factor < 1.0:
        raise ValueError(f"factor must be >= 1, got {factor}")
    return factor * factor - (factor - 1.0)


def softmax_with_sink(scores: Any, sink: float) -> torch.Tensor:
    """Softmax over ``scores`` with one extra logit ``sink`` that is dropped afterwards (gpt-oss's sinks).

    ``exp(s_j) / (exp(sink) + sum_k exp(s_k))``: the weights on the keys sum to less than 1, so
    a head can attend to "nothing". Works on the last dimension; float64.
    """
    checked = check_array("scores", scores)
    if checked.dtype == torch.bool or checked.is_complex():
        raise TypeError(f"scores must hold real numbers (logits), got dtype {checked.dtype}")
    s = torch.as_tensor(scores, dtype=torch.float64)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"scores must have at least one key on the last dimension, got shape {tuple(s.shape)}")
    sink = check_real("sink", sink, what="a logit")
    column = torch.full((*s.shape[:-1], 1), float(sink), dtype=torch.float64)
    return torch.softmax(torch.cat([s, column], dim=-1), dim=-1)[..., :-1]


def streaming_cache(n_tokens: int, *, n_sink: int, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """StreamingLLM's cache after ``n_tokens`` tokens: the first ``n_sink`` tokens plus the last ``window``.

    Returns:
        ``(kept, in_cache)``: the kept tokens' positions in the text, and the positions RoPE
        gives them, their places in the cache ``0 .. len(kept) - 1`` (keys are cached before
        rotation and rotated at their cache place; the newest query gets the last place).
    """
    n_tokens = check_positive_int("n_tokens", n_tokens)
    n_sink = check_nonnegative_int("n_sink", n_sink)
    window = check_positive_int("window", window)
    if n_tokens <= n_sink + window:
        kept = torch.arange(n_tokens)
    else:
        kept = torch.cat([torch.arange(n_sink), torch.arange(n_tokens - window, n_tokens)])
    return kept, torch.arange(len(kept))


def llama4_query_scale(positions: Any, *, floor_scale: float = 8192.0, attn_scale: float = 0.1) -> torch.Tensor:
    """Llama 4's factor on the queries of its layers without positions: ``ln(floor((p + 1) / floor_scale) + 1) * attn_scale + 1``.

    1 for the first ``floor_scale - 1`` positions, then growing with the logarithm of the position
    (``attn_temperature_tuning`` in Meta's reference code and in transformers' Llama 4). float64,
    the shape of ``positions``.
    """
    p = check_real_positions("positions", positions)
    floor_scale = check_positive_float("floor_scale", floor_scale)
    attn_scale = check_positive_float("attn_scale", attn_scale)
    return torch.log(torch.floor((p + 1.0) / floor_scale) + 1.0) * attn_scale + 1.0


def effective_length(scores: Mapping[int, float], threshold: float) -> int | None:
    """The longest length whose score, and every shorter length's, is at least ``threshold``.

    RULER (Hsieh et al., 2024) calls a model's *effective* length the longest it handles at a
    fixed bar (theirs: Llama-2-7B's score at 4K). ``None`` if even the shortest length misses it.

    Args:
        scores: ``{length: score}``.
    """
    scores = check_mapping("scores", scores, min_len=1, what="a dict {length: score}", item="{length: score}")
    for length, score in scores.items():
        check_positive_int(f"scores' length {length!r}", length)
        check_real(f"scores[{length}]", score, what="a score")
    threshold = check_real("threshold", threshold)
    best = None
    for length in sorted(scores):
        if scores[length] < threshold:
            break
        best = length
    return best

