"""RoPE variants that ship beside the plain one: decoupled (MLA), two-dimensional and multimodal.

* **Decoupled RoPE** (DeepSeek-V2's multi-head latent attention, DeepSeek-AI 2024): keys and
  values are rebuilt from one small latent vector per token, ``k = W_uk c``. Without
  rotation the query can absorb ``W_uk`` once, ``q . (W_uk c) = (W_uk^T q) . c``, so only
  ``c`` is cached. A rotation sits between them, ``R_m q . R_n W_uk c = q . R_{n-m} W_uk c``,
  and the matrix ``R_{n-m} W_uk`` changes with the offset: nothing fixed can be absorbed.
  DeepSeek therefore rotates a separate, small slice per token (:func:`decoupled_scores`).
  :func:`latent_scores` computes both ways, :func:`offset_matrix_gap` shows the dependence
  on the offset, and :func:`cache_width` counts what each design caches.
* **Axial 2-D RoPE** (:func:`axial_rope`): half of the pairs turn with an image patch's row,
  half with its column, so a score depends on the offset in both.
* **M-RoPE** (Qwen2-VL, Wang et al., 2024): three position ids per token (time, height,
  width) that coincide on text (:func:`mrope_position_ids`), and the pairs split into three
  sections, one per id (:func:`mrope_angles`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from posenc.checks import (
    check_bool,
    check_even_int,
    check_int_sequence,
    check_nonnegative_int,
    check_positive_int,
    check_real_positions,
    check_tensor,
)
from posenc.relative import apply_rope, rope_inverse_frequencies

__all__ = [
    "latent_scores",
    "offset_matrix_gap",
    "decoupled_scores",
    "cache_width",
    "axial_rope",
    "mrope_position_ids",
    "mrope_angles",
]

_PAIRS = "RoPE rotates pairs of coordinates"


def _matrix(name: str, value: Any, rows: int | None = None) -> torch.Tensor:
    check_tensor(name, value, ndim=2)
    if rows is not None and value.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows, got shape {tuple(value.shape)}")
    return value


def _base(base: Any) -> float:
    """RoPE's base, checked as :func:`posenc.relative.rope_inverse_frequencies` checks it (even where nothing rotates)."""
    rope_inverse_frequencies(2, base=base)
    return base


def _positions(name: str, positions: Any, n: int) -> Any:
    """``n`` integer or fractional positions >= 0 (as :func:`posenc.relative.apply_rope` takes them), or None."""
    if positions is not None:
        checked = check_real_positions(name, positions)
        if checked.shape != (n,):
            raise ValueError(f"{name} must hold {n} positions (one per row), got shape {tuple(checked.shape)}")
    return positions


def latent_scores(
    q: torch.Tensor, latents: torch.Tensor, w_uk: torch.Tensor, *, q_positions: Any = None, k_positions: Any = None,
    rotate: bool = False, absorbed: bool = False, base: float = 10000.0,
) -> torch.Tensor:
    """Query-key scores of one head whose keys are rebuilt from cached latents, ``k_n = W_uk c_n``.

    Args:
        q: ``(n_q, d_head)`` queries; latents: ``(n_k, d_latent)`` the cache; w_uk: ``(d_head, d_latent)``.
        rotate: apply RoPE to queries and keys (positions required).
        absorbed: compute ``(W_uk^T q) . c`` instead of ``q . (W_uk c)``: the cache is used as it
            is, no key is rebuilt. With ``rotate`` the rotation is applied to the query only (the
            one fixed matrix absorption can use), which is *not* RoPE: the comparison shows it.

    Returns:
        ``(n_q, n_k)`` scores (unscaled dot products).
    """
    q = _matrix("q", q)
    latents = _matrix("latents", latents)
    w_uk = _matrix("w_uk", w_uk, rows=q.shape[1])
    if w_uk.shape[1] != latents.shape[1]:
        raise ValueError(f"w_uk must have {latents.shape[1]} columns (d_latent), got shape {tuple(w_uk.shape)}")
    q_positions = _positions("q_positions", q_positions, q.shape[0])
    k_positions = _positions("k_positions", k_positions, latents.shape[0])
    rotate, absorbed, base = check_bool("rotate", rotate), check_bool("absorbed", absorbed), _base(base)
    if rotate:
        if q_positions is None or k_positions is None:
            raise ValueError("rotate=True needs q_positions and k_positions")
        q = apply_rope(q, q_positions, base=base)
    if absorbed:
        return (q @ w_uk) @ latents.T
    keys = latents @ w_uk.T
    if rotate:
        keys = apply_rope(keys, k_positions, base=base)
    return q @ keys.T


def offset_matrix_gap(w_uk: torch.Tensor, offsets: Sequence[int], *, base: float = 10000.0) -> list[float]:
    """For each offset ``t``, ``|R_t W_uk - W_uk| / |W_uk|``: how far the matrix a query would need to
    absorb for keys ``t`` positions away is from the one for offset 0 (Frobenius norms)."""
    w_uk = _matrix("w_uk", w_uk)
    check_even_int("w_uk rows (d_head)", w_uk.shape[0], why=_PAIRS)
    offsets = check_int_sequence("offsets", offsets, nonnegative=True, min_len=1)
    base = _base(base)
    norm = float(w_uk.norm())
    gaps = []
    for t in offsets:
        # R_t acting on each column of W_uk: rotate the columns as vectors at position t
        rotated = apply_rope(w_uk.T, torch.full((w_uk.shape[1],), int(t)), base=base).T
        gaps.append(float((rotated - w_uk).norm()) / norm)
    return gaps


def decoupled_scores(
    q_nope: torch.Tensor, q_rope: torch.Tensor, latents: torch.Tensor, k_rope: torch.Tensor, w_uk: torch.Tensor,
    *, q_positions: Any, k_positions: Any, absorbed: bool = True, base: float = 10000.0,
) -> torch.Tensor:
    """DeepSeek's decoupled RoPE: ``q_nope . W_uk c_n + R_m q_rope . R_n k_rope_n``.

    The first term never rotates, so ``W_uk`` is absorbed into the query (``absorbed=True``)
    or the keys are rebuilt (``False``): the two are equal. The second term rotates a small
    slice of its own: ``k_rope`` (one per token, shared by the heads in DeepSeek) is cached
    beside the latent.

    Args:
        q_nope: ``(n_q, d_nope)``; q_rope: ``(n_q, d_rope)``; latents: ``(n_k, d_latent)``;
        k_rope: ``(n_k, d_rope)``; w_uk: ``(d_nope, d_latent)``.

    Returns:
        ``(n_q, n_k)``.
    """
    q_nope, q_rope = _matrix("q_nope", q_nope), _matrix("q_rope", q_rope, rows=q_nope.shape[0])
    latents, k_rope = _matrix("latents", latents), _matrix("k_rope", k_rope, rows=latents.shape[0])
    w_uk = _matrix("w_uk", w_uk, rows=q_nope.shape[1])
    if k_rope.shape[1] != q_rope.shape[1]:
        raise ValueError(f"k_rope must have {q_rope.shape[1]} columns (q_rope's d_rope), got shape {tuple(k_rope.shape)}")
    check_even_int("q_rope's width (d_rope)", q_rope.shape[1], why=_PAIRS)
    q_positions = _positions("q_positions", q_positions, q_nope.shape[0])
    k_positions = _positions("k_positions", k_positions, latents.shape[0])
    if q_positions is None or k_positions is None:
        raise TypeError("q_positions and k_positions must be positions (the rotated slice needs them), got None")
    absorbed, base = check_bool("absorbed", absorbed), _base(base)
    content = latent_scores(q_nope, latents, w_uk, absorbed=absorbed)
    position = apply_rope(q_rope, q_positions, base=base) @ apply_rope(k_rope, k_positions, base=base).T
    return content + position


def cache_width(*, latent: int, rope: int) -> int:
    """Numbers MLA caches per token and layer: the latent plus the rotated slice."""
    return check_positive_int("latent", latent) + check_nonnegative_int("rope", rope)


def axial_rope(x: torch.Tensor, rows: Any, cols: Any, *, base: float = 10000.0) -> torch.Tensor:
    """Two-dimensional RoPE for image patches: the first half of the pairs turns with the row,
    the second half with the column, each half with its own ladder (as a ``d/2``-wide head).

    Args:
        x: ``(n, d)`` with ``d`` divisible by 4; rows, cols: ``(n,)`` integer positions.

    Returns:
        ``(n, d)``, interleaved layout within each half.
    """
    x = _matrix("x", x)
    d = x.shape[1]
    if d % 4:
        raise ValueError(f"x's width must be divisible by 4 for axial RoPE (two halves of pairs), got {d}")
    rows, cols = _positions("rows", rows, x.shape[0]), _positions("cols", cols, x.shape[0])
    if rows is None or cols is None:
        raise TypeError(f"rows and cols must be positions (one per row of x), got rows={rows!r}, cols={cols!r}")
    half = d // 2
    return torch.cat([apply_rope(x[:, :half], rows, base=base), apply_rope(x[:, half:], cols, base=base)], dim=1)


def mrope_position_ids(n_text_before: int, grid: tuple[int, int, int], n_text_after: int) -> torch.Tensor:
    """M-RoPE's three position ids (time, height, width) for text, one image or video, then text (Qwen2-VL).

    Text tokens get one id on all three axes, counting up. The ``grid = (t, h, w)`` patches
    get ``start + (t_i, h_i, w_i)``, where ``start`` is the next text id; text after them
    continues from the largest id so far plus one.

    Returns:
        int64 ``(3, n_text_before + t*h*w + n_text_after)``.
    """
    before = check_nonnegative_int("n_text_before", n_text_before)
    after = check_nonnegative_int("n_text_after", n_text_after)
    sizes = check_int_sequence("grid", grid)
    if len(sizes) != 3:
        raise ValueError(f"grid must be (t, h, w): three positive integers, got {grid!r}")
    t, h, w = sizes
    text = torch.arange(before).expand(3, -1)
    tt, hh, ww = torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij")
    vision = torch.stack([tt.flatten(), hh.flatten(), ww.flatten()]) + before
    nxt = int(vision.max()) + 1
    tail = (torch.arange(after) + nxt).expand(3, -1)
    return torch.cat([text, vision, tail], dim=1)


def mrope_angles(position_ids: torch.Tensor, d_head: int, sections: Sequence[int], *,
                 base: float = 10000.0) -> torch.Tensor:
    """Rotation angles under M-RoPE: pair ``i`` turns with the id of the section it falls in.

    Args:
        position_ids: ``(3, n)`` (:func:`mrope_position_ids`).
        sections: pairs per axis (time, height, width), summing to ``d_head // 2`` (Hugging
            Face's ``mrope_section``), taken in order over the ladder.

    Returns:
        float64 ``(n, d_head // 2)``.
    """
    d_head = check_even_int("d_head", d_head, why=_PAIRS)
    check_real_positions("position_ids", position_ids)
    ids = torch.as_tensor(position_ids)
    if ids.ndim != 2 or ids.shape[0] != 3:
        raise ValueError(f"position_ids must have shape (3, n), got {tuple(ids.shape)}")
    sections = list(check_int_sequence("sections", sections, nonnegative=True))
    if len(sections) != 3 or sum(sections) != d_head // 2:
        raise ValueError(f"sections must be three numbers summing to d_head // 2 = {d_head // 2}, got {sections}")
    axis = torch.repeat_interleave(torch.arange(3), torch.tensor(sections))
    speeds = rope_inverse_frequencies(d_head, base=base)
    return ids[axis].T.to(torch.float64) * speeds
