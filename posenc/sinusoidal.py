"""The fixed sinusoidal encoding of Vaswani et al. (2017), exact and fast.

For a position ``pos`` and a channel pair ``i = 0 .. d_model/2 - 1`` the paper defines

    PE[pos, 2i]     = sin(pos * w_i)
    PE[pos, 2i + 1] = cos(pos * w_i),      w_i = base ** (-2i / d_model),  base = 10000.

Options cover the variants found in real code:

* ``layout="interleaved"`` (the paper: sin, cos, sin, cos, ...) or ``"concatenated"``
  (tensor2tensor and fairseq: all sines, then all cosines). The two are the same numbers in
  a fixed channel order, see :func:`layout_permutation`.
* ``frequencies="paper"`` (``w_i = base ** (-2i / d_model)``; the longest wavelength is
  ``2*pi * base ** ((d_model - 2) / d_model)``, not ``2*pi * base``) or ``"endpoint"``
  (tensor2tensor and fairseq: ``w_i = base ** (-i / (d_model/2 - 1))``, so the progression
  ends exactly at ``w = 1/base``, wavelength ``2*pi * base``).
* ``odd="error"`` (default) or ``"pad"`` for an odd ``d_model``: the table of the even width
  ``d_model - 1`` followed by one all-zero channel, which is what tensor2tensor and fairseq do.

Precision. The common recipe multiplies ``pos * w`` in float32. The product of a position
near 65,536 and ``w = 1`` has a float32 spacing of 2**-7 ~ 0.008, so ``sin`` is evaluated at
the wrong angle (errors ~5e-4 at 8,192 and ~4e-3 at 65,536). Here each angle is split as
``pos = q*B + r`` and the phasor ``exp(i*pos*w) = exp(i*q*B*w) * exp(i*r*w)`` is formed by one
complex multiplication of two factors that were evaluated in float64 and rounded once. The
float64 work is only ``(Q + B) x d_model/2`` values with ``Q*B ~ seq_len``, and the big
``seq_len x d_model/2`` product is a single fused complex64 kernel that writes the output in
place. Max abs error against float64 stays ~1.5e-7 for any position below 2**40, and the
table is built several times faster than the float32 recipe (see
``benchmarks/sinusoidal_bench.py``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import nn

from posenc.checks import (
    check_choice,
    check_nonnegative_int,
    check_positions,
    check_positive_float,
    check_positive_int,
)

__all__ = [
    "LAYOUTS",
    "FREQUENCY_VARIANTS",
    "ODD_RULES",
    "sinusoidal_frequencies",
    "sinusoidal_wavelengths",
    "sinusoidal_table",
    "sinusoidal_reference",
    "float32_recipe_table",
    "layout_permutation",
    "rotation_matrix",
    "offset_dot_product",
    "exact_integer_limit",
    "SinusoidalPositionalEncoding",
]

Layout = Literal["interleaved", "concatenated"]
Frequencies = Literal["paper", "endpoint"]
OddRule = Literal["error", "pad"]

LAYOUTS: tuple[str, ...] = ("interleaved", "concatenated")
FREQUENCY_VARIANTS: tuple[str, ...] = ("paper", "endpoint")
ODD_RULES: tuple[str, ...] = ("error", "pad")

#: float dtypes the table can be returned in.
_FLOAT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


# --------------------------------------------------------------------------- checks
def _check_width(d_model: Any, odd: str) -> int:
    """Validate ``d_model`` and the odd-width rule; returns ``d_model`` as int."""
    d_model = check_positive_int("d_model", d_model)
    check_choice("odd", odd, ODD_RULES)
    if d_model % 2 and odd == "error":
        raise ValueError(
            f"d_model must be even for the sinusoidal encoding (channels come in sin/cos pairs), got {d_model}; "
            "pass odd='pad' to append one all-zero channel as tensor2tensor and fairseq do"
        )
    return d_model


def _check_dtype(dtype: Any) -> torch.dtype:
    if dtype not in _FLOAT_DTYPES:
        allowed = ", ".join(str(d) for d in _FLOAT_DTYPES)
        raise TypeError(f"dtype must be one of {allowed}; got {dtype!r}")
    return dtype


def _check_offset_k(name: str, value: Any) -> int:
    """An integer offset that may be negative (``k`` in PE(pos + k))."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer (negative allowed), got {value!r} of type {type(value).__name__}")
    return int(value)


# --------------------------------------------------------------------------- frequencies
def sinusoidal_frequencies(
    d_model: int,
    *,
    base: float = 10000.0,
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
) -> torch.Tensor:
    """Angular frequencies ``w_i`` of the sin/cos pairs, in float64.

    ``"paper"``: ``w_i = base ** (-2i / d)``; ``"endpoint"``: ``w_i = base ** (-i / (d/2 - 1))``
    (tensor2tensor/fairseq; a single pair gets ``w_0 = 1`` as in tensor2tensor). ``d`` is
    ``d_model``, or ``d_model - 1`` for an odd width with ``odd="pad"``.

    Returns:
        float64 tensor of shape ``(d_model // 2,)``, decreasing from ``w_0 = 1``.
    """
    d_model = _check_width(d_model, odd)
    base = check_positive_float("base", base)
    check_choice("frequencies", frequencies, FREQUENCY_VARIANTS)
    pairs = d_model // 2
    index = torch.arange(pairs, dtype=torch.float64)
    if frequencies == "paper":
        exponent = 2.0 * index / (2 * pairs)
    else:
        exponent = index / max(pairs - 1, 1)
    # base ** (-exponent) through exp/log: identical to float64 rounding, and works for tensors.
    return torch.exp(-exponent * math.log(base))


def sinusoidal_wavelengths(
    d_model: int,
    *,
    base: float = 10000.0,
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
) -> torch.Tensor:
    """Wavelengths ``2*pi / w_i`` (in positions) of the sin/cos pairs, float64, shape ``(d_model // 2,)``.

    They form a geometric progression from ``2*pi`` up to ``2*pi * base ** ((d - 2) / d)``
    (``"paper"``) or exactly ``2*pi * base`` (``"endpoint"``).
    """
    return 2.0 * math.pi / sinusoidal_frequencies(d_model, base=base, frequencies=frequencies, odd=odd)


# --------------------------------------------------------------------------- the table
def _unit_phasors(positions: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    """``sin(p*w) + i*cos(p*w)`` for each position (rows) and frequency (columns), complex128.

    Written as ``i * exp(-i*p*w)`` so that, viewed as real pairs, a complex number reads
    ``(sin, cos)``: exactly the paper's interleaved channel order. float64 ``sin``/``cos``
    reduce their argument exactly, so the only error is the float64 product ``p*w``
    (relative 1e-16: below 1e-11 rad for positions up to 2**40).
    """
    angles = positions.to(torch.float64).unsqueeze(-1) * omega
    return torch.complex(torch.sin(angles), torch.cos(angles))


def _phase_factors(positions: torch.Tensor, omega: torch.Tensor) -> torch.Tensor:
    """``exp(-i*p*w)`` (the factor that, multiplied into a unit phasor, adds ``p`` to its position)."""
    angles = positions.to(torch.float64).unsqueeze(-1) * omega
    return torch.complex(torch.cos(angles), -torch.sin(angles))


def _block_size(count: int) -> int:
    # Q + B float64 rows are evaluated for Q*B output rows: B ~ sqrt(count) minimises Q + B.
    return max(1, math.isqrt(max(count, 1)))


def _interleaved_range(start: int, seq_len: int, omega: torch.Tensor, cdtype: torch.dtype) -> torch.Tensor:
    """Paper-layout rows for positions ``start .. start+seq_len-1``: real tensor ``(seq_len, 2*len(omega))``."""
    pairs = omega.numel()
    out = torch.empty(seq_len, 2 * pairs, dtype=torch.float64 if cdtype == torch.complex128 else torch.float32)
    if pairs == 0:
        return out
    block = _block_size(seq_len)
    n_blocks = seq_len // block
    # Block heads (start + q*B) and in-block steps r, each exact in float64, rounded once.
    heads = _unit_phasors(start + block * torch.arange(n_blocks + 1, dtype=torch.float64), omega).to(cdtype)
    steps = _phase_factors(torch.arange(block, dtype=torch.float64), omega).to(cdtype)
    z = torch.view_as_complex(out.view(seq_len, pairs, 2))
    full = n_blocks * block
    # One fused complex multiply per element, written straight into the output's memory.
    torch.mul(heads[:n_blocks, None, :], steps[None, :, :], out=z[:full].view(n_blocks, block, pairs))
    if full < seq_len:
        torch.mul(heads[n_blocks], steps[: seq_len - full], out=z[full:])
    return out


def _interleaved_positions(positions: torch.Tensor, omega: torch.Tensor, cdtype: torch.dtype) -> torch.Tensor:
    """Paper-layout rows for arbitrary positions (flattened): real tensor ``(n, 2*len(omega))``."""
    flat = positions.reshape(-1)
    pairs = omega.numel()
    out = torch.empty(flat.numel(), 2 * pairs, dtype=torch.float64 if cdtype == torch.complex128 else torch.float32)
    if pairs == 0 or flat.numel() == 0:
        return out
    block = _block_size(int(flat.max()) + 1)
    # Evaluate the two factors only for the block heads and steps that actually occur.
    heads, head_index = torch.unique(flat // block, return_inverse=True)
    steps, step_index = torch.unique(flat % block, return_inverse=True)
    head_phasors = _unit_phasors(heads * block, omega).to(cdtype)
    step_factors = _phase_factors(steps, omega).to(cdtype)
    z = torch.view_as_complex(out.view(-1, pairs, 2))
    torch.mul(head_phasors[head_index], step_factors[step_index], out=z)
    return out


def sinusoidal_table(
    seq_len: int | None,
    d_model: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
    offset: int = 0,
    positions: Sequence[int] | torch.Tensor | None = None,
    layout: Layout = "interleaved",
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
) -> torch.Tensor:
    """The sinusoidal position table, exact to float rounding at any position.

    Args:
        seq_len: number of rows: positions ``offset, offset+1, ..., offset+seq_len-1``.
            May be ``None`` when ``positions`` is given.
        d_model: number of channels (even; odd only with ``odd="pad"``).
        base: the 10000 of the paper; wavelengths run from ``2*pi`` to about ``2*pi*base``.
        dtype: float64, float32 (default), float16 or bfloat16. float16/bfloat16 tables are
            the exact float32 table rounded once.
        device: where the result lives. The table is computed on the CPU and then moved, so
            it is bit-identical on every device.
        offset: first position of the range (e.g. to extend a cached table).
        positions: explicit non-negative integer positions of any shape, instead of a range.
        layout: ``"interleaved"`` (paper: sin, cos, sin, cos, ...) or ``"concatenated"``
            (tensor2tensor/fairseq: all sines, then all cosines).
        frequencies: ``"paper"`` (``w_i = base**(-2i/d)``) or ``"endpoint"``
            (tensor2tensor/fairseq: ``w_i = base**(-i/(d/2-1))``, ending exactly at ``1/base``).
        odd: ``"error"`` (default) raises for odd ``d_model``; ``"pad"`` returns the table of
            width ``d_model - 1`` with one all-zero channel appended (tensor2tensor/fairseq).

    Returns:
        Tensor of shape ``(seq_len, d_model)``, or ``(*positions.shape, d_model)``.

    Precision: max abs error against a float64 evaluation of the formula ~1.5e-7 in float32
    (any position below 2**40), ~1e-15 in float64.
    """
    d_model = _check_width(d_model, odd)
    base = check_positive_float("base", base)
    dtype = _check_dtype(dtype)
    check_choice("layout", layout, LAYOUTS)
    offset = check_nonnegative_int("offset", offset)
    omega = sinusoidal_frequencies(d_model, base=base, frequencies=frequencies, odd=odd)
    cdtype = torch.complex128 if dtype == torch.float64 else torch.complex64

    if positions is None:
        if seq_len is None:
            raise ValueError("seq_len must be a positive integer when positions is not given, got None")
        seq_len = check_positive_int("seq_len", seq_len)
        table = _interleaved_range(offset, seq_len, omega, cdtype)
        shape: tuple[int, ...] = (seq_len,)
    else:
        ids = check_positions("positions", positions)
        if offset:
            raise ValueError(f"offset must be 0 when explicit positions are given (add it to them), got {offset}")
        if seq_len is not None:
            seq_len = check_positive_int("seq_len", seq_len)
            if ids.dim() != 1 or ids.shape[0] != seq_len:
                raise ValueError(
                    f"seq_len={seq_len} does not match positions of shape {tuple(ids.shape)}; "
                    "pass seq_len=None with explicit positions"
                )
        table = _interleaved_positions(ids, omega, cdtype)
        shape = tuple(ids.shape)

    if layout == "concatenated":
        pairs = omega.numel()
        table = table.view(-1, pairs, 2).transpose(1, 2).reshape(-1, 2 * pairs)
    if d_model % 2:
        table = torch.nn.functional.pad(table, (0, 1))
    return table.reshape(*shape, d_model).to(dtype=dtype, device=device)


# --------------------------------------------------------------------------- references
def sinusoidal_reference(
    positions: Sequence[int] | torch.Tensor,
    d_model: int,
    *,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
) -> torch.Tensor:
    """The formula evaluated directly in float64: the yardstick for precision checks.

    Slow (float64 ``sin``/``cos`` on every entry) but as plain as possible.

    Returns:
        float64 tensor of shape ``(*positions.shape, d_model)``.
    """
    d_model = _check_width(d_model, odd)
    check_choice("layout", layout, LAYOUTS)
    ids = check_positions("positions", positions)
    omega = sinusoidal_frequencies(d_model, base=base, frequencies=frequencies, odd=odd)
    angles = ids.to(torch.float64).unsqueeze(-1) * omega
    pairs = omega.numel()
    table = torch.zeros(*ids.shape, d_model, dtype=torch.float64)
    if layout == "interleaved":
        table[..., 0 : 2 * pairs : 2] = torch.sin(angles)
        table[..., 1 : 2 * pairs : 2] = torch.cos(angles)
    else:
        table[..., :pairs] = torch.sin(angles)
        table[..., pairs : 2 * pairs] = torch.cos(angles)
    return table


def float32_recipe_table(seq_len: int, d_model: int, *, base: float = 10000.0) -> torch.Tensor:
    """The widespread float32 recipe, kept only as the baseline for precision and speed.

    Positions and frequencies are float32 and so is their product ``pos * w``: at position
    65,536 that product is only known to within 2**-8 rad, so ``sin`` is taken of the wrong
    angle. Paper layout, shape ``(seq_len, d_model)``.
    """
    seq_len = check_positive_int("seq_len", seq_len)
    d_model = _check_width(d_model, "error")
    base = check_positive_float("base", base)
    angles = torch.arange(seq_len, dtype=torch.float32)[:, None] * torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(base) / d_model)
    )
    table = torch.zeros(seq_len, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


# --------------------------------------------------------------------------- structure
def layout_permutation(d_model: int, *, odd: OddRule = "error") -> torch.Tensor:
    """Channel order linking the layouts: ``concatenated == interleaved[..., perm]``.

    ``perm = [0, 2, 4, ..., 1, 3, 5, ...]`` (plus the padded last channel for odd widths).
    Use it to convert a table or weights between paper and tensor2tensor/fairseq order;
    ``torch.argsort(perm)`` goes the other way.

    Returns:
        ``torch.long`` tensor of shape ``(d_model,)``.
    """
    d_model = _check_width(d_model, odd)
    even = 2 * (d_model // 2)
    perm = torch.cat([torch.arange(0, even, 2), torch.arange(1, even, 2), torch.arange(even, d_model)])
    return perm


def rotation_matrix(
    k: int,
    d_model: int,
    *,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """The matrix ``M_k`` with ``PE(pos + k) = M_k @ PE(pos)`` for every position ``pos``.

    For each pair ``(sin a, cos a)`` with ``a = pos * w``, shifting by ``k`` adds ``k * w`` to
    the angle, and the angle-addition formulas give

        [sin(a + kw)]   [ cos kw   sin kw] [sin a]
        [cos(a + kw)] = [-sin kw   cos kw] [cos a]

    so ``M_k`` is block-diagonal with one 2x2 rotation per frequency (by ``-k*w`` in the
    (sin, cos) plane), independent of ``pos``. ``k`` may be negative; ``M_{-k} = M_k.T``.
    A padded zero channel gets a 1 on the diagonal.

    Returns:
        Tensor of shape ``(d_model, d_model)`` (float64 by default).
    """
    k = _check_offset_k("k", k)
    d_model = _check_width(d_model, odd)
    check_choice("layout", layout, LAYOUTS)
    dtype = _check_dtype(dtype)
    omega = sinusoidal_frequencies(d_model, base=base, frequencies=frequencies, odd=odd)
    cos, sin = torch.cos(k * omega), torch.sin(k * omega)
    pairs = omega.numel()
    matrix = torch.zeros(d_model, d_model, dtype=torch.float64)
    s_idx = torch.arange(pairs) * 2
    c_idx = s_idx + 1
    matrix[s_idx, s_idx] = cos
    matrix[s_idx, c_idx] = sin
    matrix[c_idx, s_idx] = -sin
    matrix[c_idx, c_idx] = cos
    if d_model % 2:
        matrix[-1, -1] = 1.0
    if layout == "concatenated":
        perm = layout_permutation(d_model, odd=odd)
        matrix = matrix[perm][:, perm]
    return matrix.to(dtype)


def offset_dot_product(
    offsets: int | Sequence[int] | torch.Tensor,
    d_model: int,
    *,
    base: float = 10000.0,
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
) -> torch.Tensor:
    """``PE(pos) . PE(pos + k)`` as a function of the offset ``k`` alone.

    Each pair contributes ``sin a sin(a + kw) + cos a cos(a + kw) = cos(k w)``, so the dot
    product is ``sum_i cos(k * w_i)`` whatever ``pos`` is; it equals ``d_model // 2`` at
    ``k = 0`` and is symmetric in ``k``. (The layout does not matter: a dot product does not
    depend on channel order.)

    Args:
        offsets: integer offset(s) ``k``, any shape, may be negative.

    Returns:
        float64 tensor with the shape of ``offsets``.
    """
    tensor = torch.as_tensor(offsets)
    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
        raise TypeError(f"offsets must hold integers, got dtype {tensor.dtype}")
    omega = sinusoidal_frequencies(d_model, base=base, frequencies=frequencies, odd=odd)
    return torch.cos(tensor.to(torch.float64).unsqueeze(-1) * omega).sum(dim=-1)


def exact_integer_limit(dtype: torch.dtype) -> int:
    """Largest ``n`` such that every integer ``0..n`` is exactly representable in ``dtype``.

    For a float with ``p`` significand bits (implicit bit included) this is ``2**p``:
    float16 2,048, bfloat16 256, float32 16,777,216, float64 2**53. Positions beyond it
    cannot even be stored exactly, let alone multiplied by a frequency.
    """
    dtype = _check_dtype(dtype)
    # eps = 2**(1 - p), so 2**p = 2 / eps.
    return int(round(2.0 / torch.finfo(dtype).eps))


# --------------------------------------------------------------------------- module
class SinusoidalPositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding to ``(batch, seq_len, d_model)`` input.

    The table is a non-persistent buffer (it is not saved in ``state_dict``: it is a pure
    function of the options). It grows on demand, to at least twice its size, when an input
    is longer than the table or ``position_ids`` go past it, so there is no maximum length.
    It follows the input: the buffer is rebuilt (exactly, never by casting a lower-precision
    copy up) in the input's dtype and on its device when they change.

    Args:
        d_model: width of the input and of each position vector.
        max_len: rows built up front (a hint, not a limit).
        base, layout, frequencies, odd: as in :func:`sinusoidal_table`.
        dropout: dropout probability applied to the sum, as in the paper (0 = none).
    """

    table: torch.Tensor

    def __init__(
        self,
        d_model: int,
        *,
        max_len: int = 512,
        base: float = 10000.0,
        layout: Layout = "interleaved",
        frequencies: Frequencies = "paper",
        odd: OddRule = "error",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.d_model = _check_width(d_model, odd)
        self.base = check_positive_float("base", base)
        self.layout = check_choice("layout", layout, LAYOUTS)
        self.frequencies = check_choice("frequencies", frequencies, FREQUENCY_VARIANTS)
        self.odd = odd
        max_len = check_positive_int("max_len", max_len)
        if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
        self.dropout = nn.Dropout(float(dropout))
        self.register_buffer("table", self._build(0, max_len, torch.float32, None), persistent=False)
        # dtype the buffer was computed in: module.to(dtype) casts buffers, which must not pass
        # for an exact table (float32 -> float64 keeps float32's errors).
        self._exact_dtype = torch.float32

    def _build(self, start: int, count: int, dtype: torch.dtype, device: torch.device | None) -> torch.Tensor:
        return sinusoidal_table(
            count, self.d_model, base=self.base, offset=start, layout=self.layout,
            frequencies=self.frequencies, odd=self.odd, dtype=dtype, device=device,
        )

    @property
    def max_len(self) -> int:
        """Number of rows currently cached (grows on demand)."""
        return int(self.table.shape[0])

    def extend_to(self, length: int, *, dtype: torch.dtype | None = None, device: torch.device | None = None) -> None:
        """Make sure the cached table has ``length`` rows in ``dtype`` on ``device``."""
        length = check_positive_int("length", length)
        dtype = self.table.dtype if dtype is None else _check_dtype(dtype)
        device = self.table.device if device is None else torch.device(device)
        stale = dtype != self._exact_dtype or self.table.dtype != dtype or self.table.device != device
        if stale:
            self.table = self._build(0, max(length, self.max_len), dtype, device)
            self._exact_dtype = dtype
        elif length > self.max_len:
            # Only the new rows are computed (offset = old length); doubling keeps growth amortised O(1).
            new_len = max(length, 2 * self.max_len)
            extra = self._build(self.max_len, new_len - self.max_len, dtype, device)
            self.table = torch.cat([self.table, extra])

    def encoding(self, position_ids: torch.Tensor) -> torch.Tensor:
        """Position vectors for integer ``position_ids`` of any shape -> ``(*shape, d_model)``."""
        ids = check_positions("position_ids", position_ids)
        if ids.numel():
            self.extend_to(int(ids.max()) + 1)
        return self.table[ids.to(self.table.device)]

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Return ``dropout(x + PE)`` for ``x`` of shape ``(batch, seq_len, d_model)``.

        Args:
            x: floating-point input ``(batch, seq_len, d_model)``.
            position_ids: optional non-negative integer positions ``(seq_len,)`` or
                ``(batch, seq_len)``; default ``0 .. seq_len-1``.

        Returns:
            Tensor shaped like ``x``, in ``x``'s dtype and on its device.
        """
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (batch, seq_len, d_model={self.d_model}), got {shape}")
        if x.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"x must be a floating-point tensor (one of {_FLOAT_DTYPES}), got {x.dtype}")
        batch, seq_len, _ = x.shape
        if position_ids is None:
            self.extend_to(max(seq_len, 1), dtype=x.dtype, device=x.device)
            pe = self.table[:seq_len]
        else:
            ids = check_positions("position_ids", position_ids)
            if ids.shape not in ((seq_len,), (batch, seq_len)):
                raise ValueError(
                    f"position_ids must have shape ({seq_len},) or ({batch}, {seq_len}) to match x, "
                    f"got {tuple(ids.shape)}"
                )
            top = int(ids.max()) + 1 if ids.numel() else 1
            self.extend_to(top, dtype=x.dtype, device=x.device)
            pe = self.table[ids.to(x.device)]
        return self.dropout(x + pe)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, cached={self.max_len}, base={self.base:g}, layout={self.layout!r}, "
            f"frequencies={self.frequencies!r}, odd={self.odd!r}"
        )
