"""Using a learned position table past the length it was trained for.

A learned table has ``max_len`` rows; position ``max_len`` simply has no row. The
three workarounds here map every position ``p >= 0`` to a (possibly fractional) row
index inside the table:

* ``"clip"``: ``min(p, max_len - 1)``; every position past the end reuses the last row.
* ``"modular"``: ``p mod max_len``; the table repeats, so ``p`` and ``p + max_len`` share a row.
* ``"interpolate"``: squeeze the longer range ``0 .. target_len - 1`` onto
  ``0 .. max_len - 1`` with ``p * (max_len - 1) / (target_len - 1)`` and blend the two
  neighbouring rows linearly. This is the idea of position interpolation
  (Chen et al., 2023), which rescales RoPE positions by ``max_len / target_len``; here it
  is applied to the rows of a learned table. If ``target_len <= max_len`` nothing needs
  squeezing and positions map to themselves.

:func:`map_positions` returns the indices, :func:`lookup` reads (and blends) rows, and
:func:`extend_table` builds a longer table; :mod:`posenc.extrapolate_plots` draws what
each workaround does.
"""

from __future__ import annotations

from typing import Any

import torch

from posenc.checks import check_choice, check_positions, check_positive_int

__all__ = [
    "STRATEGIES",
    "clip_indices",
    "modular_indices",
    "interpolate_indices",
    "map_positions",
    "lookup",
    "extend_table",
]

#: The workarounds this module implements, in the order the book discusses them.
STRATEGIES: tuple[str, ...] = ("clip", "modular", "interpolate")


def clip_indices(positions: Any, max_len: int) -> torch.Tensor:
    """Row index for each position under clipping: ``min(p, max_len - 1)``.

    Args:
        positions: non-negative integer positions, any shape.
        max_len: number of rows in the table.

    Returns:
        ``torch.long`` tensor, same shape as ``positions``, values in ``[0, max_len)``.
    """
    max_len = check_positive_int("max_len", max_len)
    pos = check_positions("positions", positions)
    return torch.minimum(pos, torch.tensor(max_len - 1))


def modular_indices(positions: Any, max_len: int) -> torch.Tensor:
    """Row index for each position under wrap-around: ``p mod max_len``.

    Args:
        positions: non-negative integer positions, any shape.
        max_len: number of rows in the table.

    Returns:
        ``torch.long`` tensor, same shape as ``positions``, values in ``[0, max_len)``.
    """
    max_len = check_positive_int("max_len", max_len)
    pos = check_positions("positions", positions)
    return torch.remainder(pos, max_len)


def interpolate_indices(positions: Any, max_len: int, *, target_len: int | None = None) -> torch.Tensor:
    """Fractional row index for each position under linear position interpolation.

    Positions ``0 .. target_len - 1`` are mapped linearly onto ``0 .. max_len - 1``:
    ``p * (max_len - 1) / (target_len - 1)``. When ``target_len <= max_len`` the table is
    long enough and the mapping is the identity.

    Args:
        positions: non-negative integer positions, any shape.
        max_len: number of rows in the table.
        target_len: the longest sequence the mapping must cover; every position must be
            ``< target_len``. Defaults to ``max(positions) + 1``.

    Returns:
        ``torch.float64`` tensor, same shape as ``positions``, values in ``[0, max_len - 1]``.
    """
    max_len = check_positive_int("max_len", max_len)
    pos = check_positions("positions", positions)
    if target_len is None:
        target_len = int(pos.max()) + 1 if pos.numel() else 1
    target_len = check_positive_int("target_len", target_len)
    if pos.numel() and int(pos.max()) >= target_len:
        raise ValueError(
            f"positions must be < target_len={target_len} for interpolation, got a maximum of {int(pos.max())}"
        )
    if target_len <= max_len:
        return pos.to(torch.float64)
    # target_len > max_len >= 1, so target_len - 1 >= 1: no division by zero. Multiplying
    # first keeps the last position exactly on the last row (integer products are exact).
    return (pos * (max_len - 1)).to(torch.float64) / (target_len - 1)


def map_positions(positions: Any, max_len: int, strategy: str, *, target_len: int | None = None) -> torch.Tensor:
    """Row indices for ``positions`` under one workaround (see the module docstring).

    Args:
        positions: non-negative integer positions, any shape.
        max_len: number of rows in the table.
        strategy: one of :data:`STRATEGIES`.
        target_len: only for ``"interpolate"`` (see :func:`interpolate_indices`).

    Returns:
        ``torch.long`` indices for ``"clip"``/``"modular"``; ``torch.float64`` fractional
        indices for ``"interpolate"``. Same shape as ``positions``.
    """
    check_choice("strategy", strategy, STRATEGIES)
    if strategy == "interpolate":
        return interpolate_indices(positions, max_len, target_len=target_len)
    if target_len is not None:
        raise ValueError(f"target_len is only used by strategy='interpolate', got target_len={target_len!r}")
    if strategy == "clip":
        return clip_indices(positions, max_len)
    return modular_indices(positions, max_len)


def _check_table(table: Any) -> torch.Tensor:
    tensor = torch.as_tensor(table)
    if tensor.ndim != 2 or tensor.shape[0] < 1:
        raise ValueError(f"table must have shape (max_len, d_model) with max_len >= 1, got shape {tuple(tensor.shape)}")
    if not tensor.is_floating_point():
        raise TypeError(f"table must be a floating-point tensor, got dtype {tensor.dtype}")
    return tensor


def lookup(table: Any, positions: Any, strategy: str | None = None, *, target_len: int | None = None) -> torch.Tensor:
    """Rows of ``table`` for ``positions``, using a workaround past the end of the table.

    Args:
        table: ``(max_len, d_model)`` floating-point tensor (a learned table's weight).
        positions: non-negative integer positions, shape ``S`` (any).
        strategy: ``None`` (no workaround: positions past the table raise ValueError) or
            one of :data:`STRATEGIES`.
        target_len: only for ``"interpolate"`` (see :func:`interpolate_indices`).

    Returns:
        Tensor of shape ``S + (d_model,)``, differentiable with respect to ``table``.
    """
    weight = _check_table(table)
    max_len = weight.shape[0]
    if strategy is None:
        if target_len is not None:
            raise ValueError(f"target_len is only used by strategy='interpolate', got target_len={target_len!r}")
        pos = check_positions("positions", positions, upper=max_len)
        return weight[pos.to(weight.device)]
    indices = map_positions(positions, max_len, strategy, target_len=target_len).to(weight.device)
    if strategy != "interpolate":
        return weight[indices]
    lower = indices.floor().long()
    upper = torch.clamp(lower + 1, max=max_len - 1)  # at the last row the blend weight is 0 anyway
    frac = (indices - lower.to(indices.dtype)).to(weight.dtype).unsqueeze(-1)
    return weight[lower] * (1.0 - frac) + weight[upper] * frac


def extend_table(table: Any, new_len: int, strategy: str) -> torch.Tensor:
    """A table of ``new_len`` rows built from ``table`` with one workaround.

    Row ``p`` of the result is ``lookup(table, p, strategy, target_len=new_len)``.

    Args:
        table: ``(max_len, d_model)`` floating-point tensor.
        new_len: rows of the result (any length >= 1).
        strategy: one of :data:`STRATEGIES`.

    Returns:
        Tensor of shape ``(new_len, d_model)``.
    """
    new_len = check_positive_int("new_len", new_len)
    check_choice("strategy", strategy, STRATEGIES)
    target = new_len if strategy == "interpolate" else None
    return lookup(table, torch.arange(new_len), strategy, target_len=target)
