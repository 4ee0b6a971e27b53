"""RoPE in production code: five pitfalls, each as a small function with a check that fails on the bug.

RoPE's scores depend only on the offset between a query and a key, which makes several
plumbing mistakes invisible in the simplest test and harmful elsewhere. Each section gives
the correct construction and says precisely what it protects:

* **Left padding** (:func:`left_padding_position_ids`): positions counted from each row's
  first real token. Plain RoPE does not need it for the scores *between real tokens* (a
  constant shift of a row leaves every offset alone); what breaks without it is anything
  that reads positions themselves: an absolute table, a length-dependent scaling such as
  dynamic NTK, a position limit (PI's ``target_len``, a table's size).
* **KV cache** (:func:`generation_position_ids`, :func:`incremental_attention`): a token
  generated after ``past_length`` cached tokens sits at position ``past_length``, not 0.
* **Packing** (:func:`packed_position_ids`, :func:`packed_attention_mask`): the block mask
  keeps documents apart; restarting positions keeps each document inside the trained range.
* **Layouts** (:func:`interleaved_to_half_permutation`, :func:`permute_rotary_weight`):
  weights trained with interleaved pairs need their q/k rows permuted for half-split code.
* **Precision** (:func:`rope_cos_sin`, :func:`angle_error`): ``position * theta`` in
  bfloat16 is garbage at a few thousand positions.

All attention helpers here are single-head and unbatched: ``q`` is ``(n_q, d_head)``,
``k`` is ``(n_k, d_head)``, ``v`` is ``(n_k, d_v)``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from posenc.checks import (
    check_array,
    check_bool,
    check_choice,
    check_dtype,
    check_even_int,
    check_int_sequence,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
    check_real_positions,
    check_tensor,
)
from posenc.relative import ROPE_LAYOUTS, FrequencyScaling, apply_rope, check_scaling, rope_inverse_frequencies

__all__ = [
    "ANGLE_DTYPES",
    "angle_error",
    "exact_integer_limit",
    "generation_position_ids",
    "incremental_attention",
    "interleaved_to_half_permutation",
    "left_padding_position_ids",
    "packed_attention_mask",
    "packed_position_ids",
    "permute_rotary_weight",
    "rope_attention",
    "rope_attention_scores",
    "rope_cos_sin",
]

#: Floating-point types :func:`rope_cos_sin` may compute angles in.
ANGLE_DTYPES: tuple[torch.dtype, ...] = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
_PAIRS = "RoPE rotates pairs of coordinates"


# -- 1. left padding ---------------------------------------------------------------------------
def left_padding_position_ids(attention_mask: Any, *, fill_value: int = 1) -> torch.Tensor:
    """Positions counted from each row's first real token, as Hugging Face's ``generate`` builds them.

    ``position = cumsum(mask) - 1`` on real tokens (``mask == 1``), so every row's first real
    token is at position 0 whatever its padding; padding slots get ``fill_value``. The fill
    only has to be a valid position: padding is masked out as a key, and ``cumsum - 1`` would
    give ``-1`` on left padding, which no table or check accepts. The default 1 is what
    Hugging Face writes (``masked_fill_(mask == 0, 1)``); it never exceeds a row's largest real
    position unless the row has a single real token.

    What this protects, precisely: with plain RoPE, naive ``arange`` positions shift every real
    token of a row by the same amount, so the scores between real tokens are unchanged (up to
    float rounding). The positions matter where they are read directly: a length-dependent
    scaling (dynamic NTK takes the current length from ``max(position) + 1``, which naive
    positions inflate by the padding), a position limit (PI's ``target_len``, a learned
    table's size), an absolute component. With these ids, each row's largest position + 1 is
    its real length. (A batch-wide length, e.g. one dynamic-NTK factor for all rows, still
    differs from a row's own; these ids do not change that.)

    Args:
        attention_mask: ``(batch, seq_len)`` of 0/1 (1 = real token), bool or integer dtype.
            Any padding side works; every row needs at least one real token.
        fill_value: position written into padding slots (a non-negative integer).

    Returns:
        ``torch.long`` tensor ``(batch, seq_len)``.
    """
    mask = check_array("attention_mask", attention_mask)
    if mask.is_floating_point() or mask.is_complex():
        raise TypeError(f"attention_mask must hold 0/1 as bool or integers, got dtype {mask.dtype}")
    if mask.ndim != 2:
        raise ValueError(f"attention_mask must have shape (batch, seq_len), got {tuple(mask.shape)}")
    mask = mask.long()
    if mask.numel() and not bool(((mask == 0) | (mask == 1)).all()):
        bad = mask[(mask != 0) & (mask != 1)][0].item()
        raise ValueError(f"attention_mask must hold only 0 and 1 (1 = real token), got {bad}")
    empty_rows = (mask.sum(-1) == 0).nonzero().flatten().tolist()
    if empty_rows or mask.shape[1] == 0:
        raise ValueError(f"every row of attention_mask needs at least one real token (1); rows {empty_rows} "
                         f"of shape {tuple(mask.shape)} have none")
    fill_value = check_nonnegative_int("fill_value", fill_value)
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, fill_value)


# -- attention with RoPE (the common tool of the demonstrations) ------------------------------------
def _check_qk(q: Any, k: Any) -> None:
    for name, t in (("q", q), ("k", k)):
        check_tensor(name, t, shape="(n, d_head)")
        if t.ndim != 2:
            raise ValueError(f"{name} must be a tensor of shape (n, d_head), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"q and k must have the same d_head, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if q.dtype != k.dtype:
        raise ValueError(f"q and k must have the same dtype, got q {q.dtype} and k {k.dtype}: convert one of them "
                         f"(e.g. k.to({q.dtype}))")
    check_even_int("d_head (the last dimension of q and k)", q.shape[1], why=_PAIRS)


def _check_vector_positions(name: str, positions: Any, length: int) -> torch.Tensor:
    pos = check_real_positions(name, positions)
    if pos.shape != (length,):
        raise ValueError(f"{name} must have shape ({length},), got {tuple(pos.shape)}")
    return pos


def rope_attention_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    q_positions: Any,
    k_positions: Any = None,
    *,
    scaling: FrequencyScaling | None = None,
    layout: str = "interleaved",
    base: float = 10000.0,
) -> torch.Tensor:
    """Single-head attention logits ``rot(q_i, p_i) . rot(k_j, p_j) / sqrt(d_head)``.

    Args:
        q: ``(n_q, d_head)``; k: ``(n_k, d_head)`` (``d_head`` even).
        q_positions: ``(n_q,)``; k_positions: ``(n_k,)``, default ``q_positions`` (then ``n_k == n_q``).
        scaling: a :class:`posenc.rope_scaling.RopeScaling` or :class:`~posenc.rope_scaling.LongRopeScaling`
            (:func:`posenc.relative.check_scaling`), or ``None`` for plain RoPE. As in
            :meth:`posenc.relative.RopeScheme.rotate`, dynamic NTK reads the current length as
            the largest position + 1, and YaRN's temperature multiplies the logits.
        layout: one of :data:`posenc.relative.ROPE_LAYOUTS`; base: RoPE's base.

    Returns:
        ``(n_q, n_k)`` in the dtype of ``q``.
    """
    _check_qk(q, k)
    q_pos = _check_vector_positions("q_positions", q_positions, q.shape[0])
    k_pos = q_pos if k_positions is None else _check_vector_positions("k_positions", k_positions, k.shape[0])
    if k_positions is None and k.shape[0] != q.shape[0]:
        raise ValueError(f"k_positions is needed when k has another length than q: {k.shape[0]} != {q.shape[0]}")
    layout = check_choice("layout", layout, ROPE_LAYOUTS)
    if scaling is not None:
        check_scaling("scaling", scaling)
    d_head = q.shape[1]
    speeds, scale = None, 1.0
    if scaling is not None:
        both = torch.cat([q_pos, k_pos])
        seq_len = int(both.max().item()) + 1 if both.numel() else 1
        speeds = scaling.inverse_frequencies(d_head, base=base, seq_len=seq_len)
        scale = scaling.query_key_scale**2
    q_rot = apply_rope(q, q_pos, base=base, layout=layout, inverse_frequencies=speeds)
    k_rot = apply_rope(k, k_pos, base=base, layout=layout, inverse_frequencies=speeds)
    return scale * (q_rot @ k_rot.T) / math.sqrt(d_head)


def _causal_mask(n_q: int, n_k: int) -> torch.Tensor:
    # The queries are the last n_q of the n_k tokens: query i may see keys 0 .. n_k - n_q + i.
    return torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=n_k - n_q)


def _attend(scores: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if not bool(mask.any(dim=-1).all()):
        raise ValueError("mask must let every query attend to at least one key (a row of False has no softmax)")
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return weights @ v


def rope_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    q_positions: Any,
    k_positions: Any = None,
    *,
    mask: Any = None,
    scaling: FrequencyScaling | None = None,
    layout: str = "interleaved",
    base: float = 10000.0,
) -> torch.Tensor:
    """Single-head attention ``softmax(rope_attention_scores + mask) @ v``.

    Args:
        q, k, q_positions, k_positions, scaling, layout, base: as in :func:`rope_attention_scores`.
        v: ``(n_k, d_v)`` values.
        mask: ``(n_q, n_k)`` bool, True = may attend; ``None`` = causal by index (the queries
            are the last ``n_q`` of the ``n_k`` tokens), whatever the positions say.

    Returns:
        ``(n_q, d_v)``.
    """
    scores = rope_attention_scores(q, k, q_positions, k_positions, scaling=scaling, layout=layout, base=base)
    if not isinstance(v, torch.Tensor) or v.ndim != 2 or v.shape[0] != k.shape[0]:
        raise ValueError(f"v must be a tensor of shape ({k.shape[0]}, d_v) (one row per key), "
                         f"got {getattr(v, 'shape', v)!r}")
    n_q, n_k = scores.shape
    if mask is None:
        mask = _causal_mask(n_q, n_k)
    mask = check_array("mask", mask)
    if mask.dtype != torch.bool or mask.shape != (n_q, n_k):
        raise ValueError(f"mask must be a bool tensor of shape ({n_q}, {n_k}), got {mask.dtype} {tuple(mask.shape)}")
    return _attend(scores, v.to(scores.dtype), mask)


# -- 2. KV cache ------------------------------------------------------------------------------------
def generation_position_ids(past_length: int, n_new: int) -> torch.Tensor:
    """Positions of ``n_new`` tokens after ``past_length`` cached ones: ``past_length .. past_length + n_new - 1``.

    The bug this replaces: calling a model on the new tokens alone, which numbers them
    ``0 .. n_new - 1`` as if they started a sequence, while the cached keys keep the positions
    they were rotated at.

    Returns:
        ``torch.long`` tensor ``(n_new,)``.
    """
    past_length = check_nonnegative_int("past_length", past_length)
    n_new = check_positive_int("n_new", n_new)
    return torch.arange(past_length, past_length + n_new)


def incremental_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, prompt_len: int, offset: bool = True,
    layout: str = "interleaved", base: float = 10000.0,
) -> torch.Tensor:
    """Causal RoPE attention computed as a generator does: a prompt in one pass, then one token at a time.

    Keys are rotated once, at their own position, and cached with their values; each new
    token's query and key are rotated at :func:`generation_position_ids` ``(t, 1)``. With
    ``offset=True`` the result equals :func:`rope_attention` over the whole sequence with
    positions ``0 .. n - 1`` (to float rounding); ``offset=False`` reproduces the bug of
    rotating every new token at position 0.

    Args:
        q, k: ``(n, d_head)``; v: ``(n, d_v)``: the whole sequence's projections.
        prompt_len: tokens processed in the first pass, ``1 <= prompt_len <= n``.
        offset: True (correct) or False (the bug).
        layout, base: as in :func:`posenc.relative.apply_rope`.

    Returns:
        ``(n, d_v)``: row ``t`` is token ``t``'s output.
    """
    _check_qk(q, k)
    n = q.shape[0]
    if k.shape[0] != n or not isinstance(v, torch.Tensor) or v.ndim != 2 or v.shape[0] != n:
        raise ValueError(f"q, k and v must have the same number of rows, got q {tuple(q.shape)}, k {tuple(k.shape)}, "
                         f"v {tuple(getattr(v, 'shape', ()))}")
    prompt_len = check_positive_int("prompt_len", prompt_len)
    if prompt_len > n:
        raise ValueError(f"prompt_len must be <= the sequence length {n}, got {prompt_len}")
    offset = check_bool("offset", offset)
    prompt = generation_position_ids(0, prompt_len)
    outputs = [rope_attention(q[:prompt_len], k[:prompt_len], v[:prompt_len], prompt, layout=layout, base=base)]
    k_cache = apply_rope(k[:prompt_len], prompt, layout=layout, base=base)
    v_cache = v[:prompt_len]
    for t in range(prompt_len, n):
        position = generation_position_ids(t if offset else 0, 1)
        k_cache = torch.cat([k_cache, apply_rope(k[t:t + 1], position, layout=layout, base=base)])
        v_cache = torch.cat([v_cache, v[t:t + 1]])
        q_t = apply_rope(q[t:t + 1], position, layout=layout, base=base)
        scores = q_t @ k_cache.T / math.sqrt(q.shape[1])
        outputs.append(_attend(scores, v_cache, torch.ones_like(scores, dtype=torch.bool)))
    return torch.cat(outputs)


# -- 3. packed sequences ----------------------------------------------------------------------------
def _check_lengths(document_lengths: Any) -> list[int]:
    return list(check_int_sequence("document_lengths", document_lengths, min_len=1))


def packed_position_ids(document_lengths: Any) -> torch.Tensor:
    """Positions restarting at 0 for each document packed into one row, e.g. ``[3, 2] -> [0, 1, 2, 0, 1]``.

    What this protects: every document sees the positions it would see alone, so its largest
    position is its own length - 1, not the row's (a row of 4 documents of 16 tokens otherwise
    reaches position 63 with a 16-token training length), and a length-dependent scaling
    reads a document's length, not the row's. Plain RoPE's scores inside a document do not
    need it (the offsets are the same either way); they need :func:`packed_attention_mask`.

    Args:
        document_lengths: positive integers, one per document, in packing order.

    Returns:
        ``torch.long`` tensor ``(sum(document_lengths),)``.
    """
    lengths = _check_lengths(document_lengths)
    return torch.cat([torch.arange(n) for n in lengths])


def packed_attention_mask(document_lengths: Any, *, causal: bool = True) -> torch.Tensor:
    """Block-diagonal mask for documents packed into one row (True = may attend).

    What this protects: without it, a token attends to the documents packed before it (or,
    non-causally, to all of them), whatever its positions. It is what keeps each document's
    output equal to its output alone, for RoPE as for any position scheme.

    Args:
        document_lengths: positive integers, one per document.
        causal: also forbid keys after the query (a decoder's mask), within each document.

    Returns:
        bool tensor ``(n, n)``, ``n = sum(document_lengths)``.
    """
    lengths = _check_lengths(document_lengths)
    causal = check_bool("causal", causal)
    document = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    mask = document[:, None] == document[None, :]
    return mask.tril() if causal else mask


# -- 4. interleaved vs half-split ---------------------------------------------------------------------
def interleaved_to_half_permutation(d_head: int) -> torch.Tensor:
    """The channel order that turns interleaved pairs into the half-split layout.

    ``x[..., perm]`` maps ``(x0, x1, x2, x3, ...)``, paired ``(x0, x1), (x2, x3), ...``, to
    ``(x0, x2, x4, ..., x1, x3, x5, ...)``, paired ``(y_i, y_{i + d/2})``:
    ``perm = [0, 2, ..., d - 2, 1, 3, ..., d - 1]``. Its inverse is ``perm.argsort()``.

    Returns:
        ``torch.long`` tensor ``(d_head,)``.
    """
    d_head = check_even_int("d_head", d_head, why=_PAIRS)
    return torch.cat([torch.arange(0, d_head, 2), torch.arange(1, d_head, 2)])


def permute_rotary_weight(weight: torch.Tensor, n_heads: int, *, to: str = "half") -> torch.Tensor:
    """Reorder the rows of a query or key projection, head by head, for the other RoPE layout.

    ``to="half"``: weights trained with interleaved RoPE (Meta's LLaMA code) give, with
    half-split RoPE (Hugging Face's), the same scores; this is ``permute`` in Hugging Face's
    ``convert_llama_weights_to_hf.py``. ``to="interleaved"`` undoes it. The permutation
    applies to the queries and keys alike, so their dot products are unchanged; values and
    the output projection are not touched.

    Args:
        weight: ``(n_heads * d_head, d_in)``, as in ``nn.Linear(d_in, n_heads * d_head).weight``.
        n_heads: heads in the projection (for grouped-query keys, the number of key heads).
        to: ``"half"`` or ``"interleaved"``, the layout of the code that will use the result.

    Returns:
        A new tensor with the shape and dtype of ``weight``.
    """
    check_tensor("weight", weight, shape="(n_heads * d_head, d_in)")
    if weight.ndim != 2:
        raise ValueError(f"weight must be a tensor of shape (n_heads * d_head, d_in), got {tuple(weight.shape)}")
    n_heads = check_positive_int("n_heads", n_heads)
    to = check_choice("to", to, ROPE_LAYOUTS)
    rows, d_in = weight.shape
    if rows % n_heads:
        raise ValueError(f"weight has {rows} rows, not a multiple of n_heads={n_heads}")
    perm = interleaved_to_half_permutation(rows // n_heads)
    if to == "interleaved":
        perm = perm.argsort()
    return weight.reshape(n_heads, rows // n_heads, d_in)[:, perm, :].reshape(rows, d_in)


# -- 5. precision of the angles ------------------------------------------------------------------------
def _check_angle_dtype(name: str, dtype: Any) -> torch.dtype:
    return check_dtype(name, dtype, ANGLE_DTYPES)


def exact_integer_limit(dtype: torch.dtype) -> int:
    """The largest ``N`` such that every integer ``0 .. N`` is exact in ``dtype``: ``2 ** (mantissa bits + 1)``.

    256 for bfloat16, 2048 for float16, 16,777,216 for float32. Past it, neighbouring
    positions round to the same number.
    """
    dtype = _check_angle_dtype("dtype", dtype)
    return round(2.0 / torch.finfo(dtype).eps)


def rope_cos_sin(
    positions: Any, d_head: int, *, base: float = 10000.0, angle_dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE's cosines and sines with the angle ``position * theta_i`` computed in ``angle_dtype``.

    The positions and the speeds are rounded to ``angle_dtype`` and multiplied there (as code
    does that builds its tables in the model's dtype); the cosine and sine of that rounded
    angle are then taken in float64 and returned in float32, so what differs between dtypes
    is the angle alone.

    Args:
        positions: ``(n,)`` non-negative positions (at most the largest finite ``angle_dtype``).
        d_head: query/key width (even); base: RoPE's base.
        angle_dtype: one of :data:`ANGLE_DTYPES`.

    Returns:
        ``(cos, sin)``, each float32 ``(n, d_head // 2)``.
    """
    pos = check_real_positions("positions", positions)
    if pos.ndim != 1:
        raise ValueError(f"positions must have shape (n,), got {tuple(pos.shape)}")
    angle_dtype = _check_angle_dtype("angle_dtype", angle_dtype)
    if pos.numel() and float(pos.max()) > torch.finfo(angle_dtype).max:
        raise ValueError(f"positions must be <= {torch.finfo(angle_dtype).max:g} (the largest finite {angle_dtype}), "
                         f"got {float(pos.max()):g}")
    speeds = rope_inverse_frequencies(d_head, base=base)
    angles = (pos.to(angle_dtype)[:, None] * speeds.to(angle_dtype)[None, :]).to(torch.float64)
    return angles.cos().to(torch.float32), angles.sin().to(torch.float32)


def angle_error(positions: Any, d_head: int, *, dtype: torch.dtype, base: float = 10000.0) -> float:
    """Largest ``|cos - cos_ref|`` or ``|sin - sin_ref|`` of :func:`rope_cos_sin` in ``dtype`` (all positions, pairs).

    The reference takes the angles in float64. An error near 1 (up to 2) means the rotation
    is unrelated to the position. The fast pairs, whose angles are largest, are hit hardest;
    in bfloat16 even positions below 256 (exact integers) get wrong angles, because the speeds
    ``theta_i`` and the product are rounded to 8 significant bits too.

    Args:
        positions: ``(n,)`` non-negative positions; d_head, base: as in :func:`rope_cos_sin`.
        dtype: the angle dtype to test, one of :data:`ANGLE_DTYPES`.
    """
    check_positive_float("base", base)
    dtype = _check_angle_dtype("dtype", dtype)
    cos, sin = rope_cos_sin(positions, d_head, base=base, angle_dtype=dtype)
    cos_ref, sin_ref = rope_cos_sin(positions, d_head, base=base, angle_dtype=torch.float64)
    if cos.numel() == 0:
        return 0.0
    return max(float((cos - cos_ref).abs().max()), float((sin - sin_ref).abs().max()))
