"""Using a learned position table past the length it was trained for.

A learned table has ``max_len`` rows; position ``max_len`` simply has no row. The
three workarounds here map every position ``p >= 0`` to a (possibly fractional) row
index inside the table:

* ``"clip"``: ``min(p, max_len - 1)``; every position past the end reuses the last row.
* ``"modular"``: ``p mod max_len``; the table repeats, so ``p`` and ``p + max_len`` share a row.
* ``"interpolate"``: squeeze the longer range ``0 .. target_len - 1`` onto
  ``0 .. max_len - 1`` with ``p * (max_len - 1) / (target_len - 1)`` and blend the two
  neighbouring rows linearly. If ``target_len <= max_len`` nothing needs squeezing and
  positions map to themselves. Used inside a model (``LearnedScheme``), ``target_len`` is
  each input's *own* length, so the squeeze factor changes from one input length to the
  next (a length-``n`` input always spans the whole table). That is **not** Chen et al.'s
  position interpolation; it only shares its idea of reading between rows.

**Position interpolation** (Chen et al., 2023, "Extending Context Window of Large Language
Models via Positional Interpolation") is implemented separately, below the three
workarounds: one fixed factor ``s = target_len / train_len`` chosen once for the new
context length, and every position ``p < target_len`` of every input is read at
``p / s = p * train_len / target_len`` (:func:`position_interpolation_positions`). An input
shorter than ``target_len`` is squeezed by the same factor, so it does *not* span the whole
trained range. RoPE takes these fractional positions directly (``apply_rope(x,
position_interpolation_positions(...))``); :func:`fractional_sinusoidal` evaluates the
sinusoidal encoding at them; :func:`position_interpolation_lookup` reads a learned table at
them by blending neighbouring rows.

:func:`map_positions` returns the indices, :func:`lookup` reads (and blends) rows, and
:func:`extend_table` builds a longer table; :mod:`posenc.extrapolate_plots` draws what
each workaround does.
"""

from __future__ import annotations

from typing import Any

import torch

from posenc.checks import (
    check_array,
    check_choice,
    check_even_int,
    check_positions,
    check_positive_float,
    check_positive_int,
    check_real_positions,
)
from posenc.sinusoidal import EVEN_WIDTH, LAYOUTS, sinusoidal_frequencies

__all__ = [
    "STRATEGIES",
    "clip_indices",
    "modular_indices",
    "interpolate_indices",
    "map_positions",
    "lookup",
    "extend_table",
    "position_interpolation_positions",
    "position_interpolation_lookup",
    "fractional_sinusoidal",
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
    """Fractional row index for each position under the ``"interpolate"`` workaround.

    Positions ``0 .. target_len - 1`` are mapped linearly onto ``0 .. max_len - 1``:
    ``p * (max_len - 1) / (target_len - 1)``. When ``target_len <= max_len`` the table is
    long enough and the mapping is the identity. With the default ``target_len`` (the
    input's own length) every input is rescaled by its own factor; for Chen et al.'s
    fixed-factor position interpolation see :func:`position_interpolation_positions`.

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
    tensor = check_array("table", table)
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


# -- position interpolation (Chen et al., 2023): one fixed factor ---------------------------
def position_interpolation_positions(positions: Any, *, train_len: int, target_len: int) -> torch.Tensor:
    """Chen et al.'s (2023) position interpolation: ``p -> p * train_len / target_len``.

    A model trained on ``train_len`` positions is extended to ``target_len >= train_len``
    by one factor ``s = target_len / train_len`` fixed in advance: every position
    ``p`` in ``0 .. target_len - 1`` of *every* input is read at the fractional position
    ``p / s``, which lies in ``[0, train_len)``, the range seen in training. (Per-input
    rescaling, the ``"interpolate"`` workaround with ``target_len`` = the input's length,
    is a different method: it squeezes a short input less, or not at all.)

    Example: ``train_len=4, target_len=8`` gives ``s = 2`` and positions ``0 .. 7`` map to
    ``0, 0.5, 1, ..., 3.5``; an input of length 6 is read at ``0, 0.5, ..., 2.5``.

    Args:
        positions: non-negative integer positions, any shape ``S``; all ``< target_len``.
        train_len: the context length the model was trained on.
        target_len: the context length to extend to (``>= train_len``; equal means no change).

    Returns:
        ``torch.float64`` tensor of shape ``S`` with values in ``[0, train_len)``.
    """
    train_len = check_positive_int("train_len", train_len)
    target_len = check_positive_int("target_len", target_len)
    if target_len < train_len:
        raise ValueError(
            f"target_len must be >= train_len={train_len} (position interpolation extends a context), "
            f"got {target_len}"
        )
    pos = check_positions("positions", positions)
    if pos.numel() and int(pos.max()) >= target_len:
        raise ValueError(
            f"positions must be < target_len={target_len} (the factor covers only 0 .. target_len - 1; "
            f"choose a larger target_len), got a maximum of {int(pos.max())}"
        )
    # The integer product is exact, so p * train_len / target_len is one correctly rounded division.
    return (pos * train_len).to(torch.float64) / target_len


def position_interpolation_lookup(
    table: Any, positions: Any, *, target_len: int, train_len: int | None = None
) -> torch.Tensor:
    """Rows of a learned table read with position interpolation (Chen et al., 2023).

    Each position is mapped by :func:`position_interpolation_positions` to
    ``x = p * train_len / target_len`` and the two neighbouring rows are blended:
    ``(1 - f) * table[floor(x)] + f * table[floor(x) + 1]`` with ``f = x - floor(x)``.
    The fractional positions of the last ``s - 1`` input positions fall between the last
    trained row ``train_len - 1`` and ``train_len``, a row the table does not have; there
    the last row is used (``x`` is clipped to ``train_len - 1``). RoPE and sinusoids need no
    such rule: they are defined at any fractional position.

    Args:
        table: ``(max_len, d_model)`` floating-point tensor.
        positions: non-negative integer positions, shape ``S``; all ``< target_len``.
        target_len: the extended context length.
        train_len: the trained context length; defaults to ``max_len`` (the table's rows),
            and may not exceed it.

    Returns:
        Tensor of shape ``S + (d_model,)``, differentiable with respect to ``table``.
    """
    weight = _check_table(table)
    max_len = weight.shape[0]
    train_len = max_len if train_len is None else check_positive_int("train_len", train_len)
    if train_len > max_len:
        raise ValueError(f"train_len must be <= the table's {max_len} rows, got {train_len}")
    x = position_interpolation_positions(positions, train_len=train_len, target_len=target_len)
    x = x.clamp(max=train_len - 1).to(weight.device)
    lower = x.floor().long()
    upper = torch.clamp(lower + 1, max=max_len - 1)  # where lower is the last row, the blend weight is 0
    frac = (x - lower.to(x.dtype)).to(weight.dtype).unsqueeze(-1)
    return weight[lower] * (1.0 - frac) + weight[upper] * frac


def fractional_sinusoidal(
    positions: Any, d_model: int, *, base: float = 10000.0, layout: str = "interleaved"
) -> torch.Tensor:
    """The sinusoidal encoding (Vaswani et al., 2017) at real-valued positions.

    ``PE(x, 2i) = sin(x * w_i)``, ``PE(x, 2i + 1) = cos(x * w_i)``, ``w_i = base ** (-2i / d_model)``
    (``"interleaved"``; ``"concatenated"`` puts all sines first). At integer positions this is
    :func:`posenc.sinusoidal.sinusoidal_table`; at ``position_interpolation_positions(...)``
    it is the sinusoidal model under position interpolation. Angles are computed in float64.

    Args:
        positions: non-negative positions, any shape ``S`` (fractions allowed).
        d_model: even width.
        base: the wavelength base.
        layout: one of :data:`posenc.sinusoidal.LAYOUTS`.

    Returns:
        float32 tensor of shape ``S + (d_model,)``.
    """
    check_positive_float("base", base)
    check_choice("layout", layout, LAYOUTS)
    d_model = check_even_int("d_model", d_model, why=EVEN_WIDTH)
    omega = sinusoidal_frequencies(d_model, base=base)
    angles = check_real_positions("positions", positions).unsqueeze(-1) * omega
    sin, cos = angles.sin(), angles.cos()
    if layout == "interleaved":
        out = torch.stack([sin, cos], dim=-1).flatten(-2)
    else:
        out = torch.cat([sin, cos], dim=-1)
    return out.to(torch.float32)
