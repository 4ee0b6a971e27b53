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

Precision. The common recipe computes ``w`` and ``pos * w`` in float32, whose relative
precision is 2**-24 ~ 6e-8: just below 65,536 neighbouring float32 numbers are 2**-8 ~ 0.004
apart, so ``sin`` is evaluated at a wrong angle (measured errors ~5e-4 below position 8,192
and ~4e-3 to 5e-3 below 65,536, depending on d_model). Here each angle is split as
``pos = q*B + r`` (``B = 128``) and the phasor ``exp(i*pos*w) = exp(i*q*B*w) * exp(i*r*w)`` is
formed by one complex multiplication of two factors that were evaluated in float64 and
rounded once. The float64 work is only ``(seq_len/B + B) x d_model/2`` values, and the big
``seq_len x d_model/2`` product is a single fused complex64 kernel that writes the output in
place. Why not simply evaluate everything in float64 and cast? It is exact but float64
``sin``/``cos`` over millions of entries is about 3x slower than the float32 recipe here;
range reduction in float64 followed by float32 ``sin`` still needs several float64 passes
over the whole table. The block product needs one float32-sized pass and no ``sin`` at all.
Measured: max abs error against the float64 formula ~1.5e-7 for every position below 65,536,
and an 8,192 x 1,024 table builds 2-6x faster than with the recipe on a shared 2-core machine
(``benchmarks/sinusoidal_bench.py``). For positions far beyond that
the float64 product ``pos*w`` itself (in any float64 evaluation) drifts by ~pos*1e-16 rad.
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
    check_even_int,
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
    "row_errors",
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
    check_choice("odd", odd, ODD_RULES)
    if odd == "pad":
        return check_positive_int("d_model", d_model)
    return check_even_int(
        "d_model", d_model,
        why="channels come in sin/cos pairs; pass odd='pad' to append one all-zero channel as tensor2tensor "
        "and fairseq do",
    )


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


#: Positions are split as ``p = q*BLOCK + r`` with a fixed block, so every entry is built from
#: the same two float64 factors whatever the table's length or offset (tables then agree to
#: within one float32 rounding; not always bit for bit, because torch's vectorised and scalar
#: complex-multiply loops may round differently). 128 keeps the float64 work small:
#: (L/128 + 128) rows of factors for L rows of table.
BLOCK = 128


def _empty_real(rows: int, pairs: int, cdtype: torch.dtype) -> torch.Tensor:
    return torch.empty(rows, 2 * pairs, dtype=torch.float64 if cdtype == torch.complex128 else torch.float32)


def _interleaved_range(start: int, seq_len: int, omega: torch.Tensor, cdtype: torch.dtype) -> torch.Tensor:
    """Paper-layout rows for positions ``start .. start+seq_len-1``: real tensor ``(seq_len, 2*len(omega))``."""
    pairs = omega.numel()
    out = _empty_real(seq_len, pairs, cdtype)
    if pairs == 0:
        return out
    stop = start + seq_len
    first, last = start // BLOCK, (stop - 1) // BLOCK  # blocks touched, inclusive
    # Block heads q*BLOCK and in-block steps r: each evaluated in float64 and rounded once.
    heads = _unit_phasors(BLOCK * torch.arange(first, last + 1, dtype=torch.float64), omega).to(cdtype)
    r_low = start - first * BLOCK if first == last else 0
    r_high = stop - first * BLOCK if first == last else BLOCK
    steps = _phase_factors(torch.arange(r_low, r_high, dtype=torch.float64), omega).to(cdtype)
    z = torch.view_as_complex(out.view(seq_len, pairs, 2))
    # One fused complex multiply per entry, written straight into the output's memory:
    # a leading partial block, the full blocks in one broadcast, a trailing partial block.
    if first == last:
        torch.mul(heads[0], steps, out=z)
        return out
    lead = (first + 1) * BLOCK - start
    torch.mul(heads[0], steps[BLOCK - lead :], out=z[:lead])
    n_full = last - first - 1
    body = z[lead : lead + n_full * BLOCK].view(n_full, BLOCK, pairs)
    torch.mul(heads[1 : 1 + n_full, None, :], steps[None, :, :], out=body)
    tail = stop - last * BLOCK
    torch.mul(heads[-1], steps[:tail], out=z[seq_len - tail :])
    return out


def _interleaved_positions(positions: torch.Tensor, omega: torch.Tensor, cdtype: torch.dtype) -> torch.Tensor:
    """Paper-layout rows for arbitrary positions (flattened): real tensor ``(n, 2*len(omega))``."""
    flat = positions.reshape(-1)
    pairs = omega.numel()
    out = _empty_real(flat.numel(), pairs, cdtype)
    if pairs == 0 or flat.numel() == 0:
        return out
    # Evaluate the two factors only for the block heads and steps that actually occur.
    heads, head_index = torch.unique(flat // BLOCK, return_inverse=True)
    steps, step_index = torch.unique(flat % BLOCK, return_inverse=True)
    head_phasors = _unit_phasors(heads * BLOCK, omega).to(cdtype)
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

    Every entry is computed from its own position only, so tables of different lengths or
    offsets agree on the positions they share (to one float32 rounding).

    Precision: max abs error against a float64 evaluation of the formula ~1.5e-7 in float32
    (measured for every position below 65,536); in float64 it is the rounding of ``pos*w``
    itself, ~pos*1e-16.
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

    if layout == "concatenated" and omega.numel():
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


def row_errors(
    table: torch.Tensor,
    *,
    offset: int = 0,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    frequencies: Frequencies = "paper",
    odd: OddRule = "error",
    chunk: int = 4096,
) -> torch.Tensor:
    """Max abs error of each row of ``table`` against :func:`sinusoidal_reference`.

    Args:
        table: ``(seq_len, d_model)`` rows for positions ``offset .. offset+seq_len-1``, any float dtype.
        chunk: rows compared at a time (bounds the float64 memory).

    Returns:
        float64 tensor of shape ``(seq_len,)``.
    """
    if not isinstance(table, torch.Tensor) or table.dim() != 2 or not table.is_floating_point():
        shape = tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise ValueError(f"table must be a floating-point (seq_len, d_model) tensor, got {shape}")
    offset = check_nonnegative_int("offset", offset)
    chunk = check_positive_int("chunk", chunk)
    errors = torch.empty(table.shape[0], dtype=torch.float64)
    for start in range(0, table.shape[0], chunk):
        rows = table[start : start + chunk].to(device="cpu", dtype=torch.float64)
        positions = torch.arange(offset + start, offset + start + rows.shape[0])
        reference = sinusoidal_reference(
            positions, table.shape[1], base=base, layout=layout, frequencies=frequencies, odd=odd
        )
        errors[start : start + rows.shape[0]] = (rows - reference).abs().amax(dim=1)
    return errors


def float32_recipe_table(
    seq_len: int, d_model: int, *, base: float = 10000.0, validate: bool = True
) -> torch.Tensor:
    """The widespread float32 recipe, kept only as the baseline for precision and speed.

    Positions and frequencies are float32 and so is their product ``pos * w``: just below
    position 65,536 float32 numbers are 2**-8 apart, so ``sin`` is taken of a wrong angle.
    Paper layout, shape ``(seq_len, d_model)``.

    Args:
        validate: check the arguments first. ``False`` runs the recipe exactly as tutorials
            do, to show how it fails (an odd ``d_model`` ends in torch's shape error).
    """
    if validate:
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
    # (pairs, 2) -> (2, pairs): all sine channels first, then all cosine channels.
    paired = torch.arange(even).view(-1, 2).T.reshape(-1)
    return torch.cat([paired, torch.arange(even, d_model)])


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
