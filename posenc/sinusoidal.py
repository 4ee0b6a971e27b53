"""The fixed sinusoidal encoding of Vaswani et al. (2017), exact to float32 rounding.

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
and ~4e-3 to 5e-3 below 65,536, depending on d_model). The error is in the *angle*, so casting
the finished table does not remove it; what does is computing the angles ``pos * w`` in float64
(with ``sin``/``cos`` in float64 too, or after reducing ``pos * w`` modulo ``2*pi`` in high
precision) and casting the table afterwards.

What this module does: each position is split as ``pos = q*B + r`` (``B = 128``) and the phasor
``exp(i*pos*w) = exp(i*q*B*w) * exp(i*r*w)`` is formed by one complex64 multiplication of two
factors whose angles, sines and cosines were computed in float64 and then rounded once to
float32. The float64 work is only ``(seq_len/B + B) x d_model/2`` values; the big
``seq_len x d_model/2`` product is a single complex64 kernel that writes the output in place.
Measured: max abs error against the float64 formula ~1.5e-7 for every position below 65,536
(the rounding of the two factors and of their product: a few float32 units, not exactly one).
Speed is a trade-off, not a win: the fixed cost of the float64 factors makes small tables
(a few hundred rows) slower to build than with the float32 recipe, about 2x on the machine
this was measured on, while large tables (8,192 x 1,024) take about as long as the recipe or
less; evaluating every entry's ``sin``/``cos`` in float64 is several times slower there
(``benchmarks/sinusoidal_bench.py``; appendix C of the book measures both sizes). For
positions far beyond 65,536 the float64 product ``pos*w`` itself drifts by ~pos*1e-16 rad.

Attention. ``PE(pos + k) = M_k @ PE(pos)`` (:func:`rotation_matrix`) is exact, but a score
``PE_i A PE_j`` with ``A = W_Q W_K^T`` depends on ``j - i`` alone only when ``A`` commutes with
every ``M_k``: one 2x2 block ``[[a, -b], [b, a]]`` per pair (:func:`scaled_rotation_blocks`).
:func:`offset_head_weights` builds such a head that attends exactly ``k`` positions back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import nn

from posenc.checks import (
    check_array,
    check_bool,
    check_choice,
    check_device,
    check_dtype,
    check_even_int,
    check_int,
    check_integers,
    check_nonnegative_int,
    check_positions,
    check_positive_float,
    check_positive_int,
    check_real,
    check_reals,
    check_tensor,
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
    "scaled_rotation_blocks",
    "bilinear_scores",
    "diagonal_spread",
    "shift_commutator",
    "offset_head_weights",
    "offset_head_attention",
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
#: Why an even width: for entry points that have no ``odd`` option (their error must not advise one).
EVEN_WIDTH = "the sinusoidal encoding pairs its channels: the sine and the cosine of one frequency"


def _check_width(d_model: Any, odd: str) -> int:
    """Validate ``d_model`` and the odd-width rule of a function that takes ``odd``; returns ``d_model`` as int.

    Only functions with an ``odd`` parameter call this (its message advises ``odd='pad'``); the
    others check ``check_even_int("d_model", d_model, why=EVEN_WIDTH)`` first.
    """
    check_choice("odd", odd, ODD_RULES)
    if odd == "pad":
        return check_positive_int("d_model", d_model)
    return check_even_int(
        "d_model", d_model,
        why="channels come in sin/cos pairs; pass odd='pad' to append one all-zero channel as tensor2tensor "
        "and fairseq do",
    )


def _check_dtype(dtype: Any) -> torch.dtype:
    return check_dtype("dtype", dtype, _FLOAT_DTYPES)


def _check_offset_k(name: str, value: Any) -> int:
    """An integer offset that may be negative (``k`` in PE(pos + k))."""
    return check_int(name, value)


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
            the accurate float32 table rounded once (positions and angles never pass through
            the half-precision format).
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
    device = check_device("device", device)
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
    if check_bool("validate", validate):
        seq_len = check_positive_int("seq_len", seq_len)
        d_model = check_even_int("d_model", d_model, why=EVEN_WIDTH)
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
    tensor = check_integers("offsets", offsets)
    omega = sinusoidal_frequencies(d_model, base=base, frequencies=frequencies, odd=odd)
    return torch.cos(tensor.to(torch.float64).unsqueeze(-1) * omega).sum(dim=-1)


# --------------------------------------------------------------------------- attention scores
def _check_matrix(name: str, value: Any, size: int | None = None) -> torch.Tensor:
    """A real square matrix as a float64 tensor (optionally of a given size)."""
    tensor = check_array(name, value)
    if tensor.dim() != 2 or tensor.shape[0] != tensor.shape[1] or not tensor.is_floating_point():
        raise ValueError(f"{name} must be a real square (d_model, d_model) matrix, got {tuple(tensor.shape)} "
                         f"of dtype {tensor.dtype}")
    if size is not None and tensor.shape[0] != size:
        raise ValueError(f"{name} must be ({size}, {size}) to match d_model={size}, got {tuple(tensor.shape)}")
    return tensor.to(torch.float64)


def scaled_rotation_blocks(
    a: Sequence[float] | torch.Tensor,
    b: Sequence[float] | torch.Tensor,
    *,
    layout: Layout = "interleaved",
) -> torch.Tensor:
    """The block-diagonal matrix with one block ``[[a_p, -b_p], [b_p, a_p]]`` per channel pair.

    These are exactly the matrices ``A`` that commute with every shift ``M_k`` (for distinct
    frequencies), so that the position-position score ``PE_i A PE_j^T`` (row vectors) depends on
    ``j - i`` alone: pair ``p`` contributes ``a_p cos((j - i) w_p) + b_p sin((j - i) w_p)``.

    Args:
        a, b: ``(pairs,)`` scale-and-rotation parameters of each pair.
        layout: channel order of the table the matrix acts on.

    Returns:
        float64 tensor of shape ``(2 * pairs, 2 * pairs)``.
    """
    a_t, b_t = check_reals("a", a), check_reals("b", b)
    if a_t.dim() != 1 or b_t.shape != a_t.shape or a_t.numel() == 0:
        raise ValueError(f"a and b must be non-empty 1-D tensors of the same length (one value per pair), "
                         f"got shapes {tuple(a_t.shape)} and {tuple(b_t.shape)}")
    check_choice("layout", layout, LAYOUTS)
    pairs = a_t.numel()
    matrix = torch.zeros(2 * pairs, 2 * pairs, dtype=torch.float64)
    s_idx = torch.arange(pairs) * 2
    c_idx = s_idx + 1
    matrix[s_idx, s_idx] = a_t
    matrix[s_idx, c_idx] = -b_t
    matrix[c_idx, s_idx] = b_t
    matrix[c_idx, c_idx] = a_t
    if layout == "concatenated":
        perm = layout_permutation(2 * pairs)
        matrix = matrix[perm][:, perm]
    return matrix


def bilinear_scores(table: torch.Tensor, form: torch.Tensor) -> torch.Tensor:
    """Position-position attention scores ``S[i, j] = PE_i A PE_j^T`` (query ``i`` = row, key ``j`` = column).

    With row vectors and ``A = W_Q W_K^T`` (``W`` as ``(d_model, d_head)`` matrices; in
    ``torch.nn.Linear.weight`` layout ``A = w_query.T @ w_key``), this is the part of a head's
    logit that comes from the position vectors alone, before the ``1/sqrt(d_head)`` scale.

    Args:
        table: ``(n_positions, d_model)`` position vectors.
        form: ``(d_model, d_model)`` matrix ``A``.

    Returns:
        float64 tensor of shape ``(n_positions, n_positions)``.
    """
    if not isinstance(table, torch.Tensor) or table.dim() != 2 or not table.is_floating_point():
        shape = tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise ValueError(f"table must be a floating-point (n_positions, d_model) tensor, got {shape}")
    matrix = _check_matrix("form", form, table.shape[1])
    rows = table.to(torch.float64)
    return rows @ matrix @ rows.T


def diagonal_spread(scores: torch.Tensor) -> torch.Tensor:
    """How much a score matrix varies along each diagonal (fixed offset ``j - i``).

    Scores that depend on the offset alone are constant along every diagonal (spread 0).

    Args:
        scores: ``(n, n)`` matrix, query ``i`` = row, key ``j`` = column.

    Returns:
        float64 tensor of shape ``(2n - 1,)``: ``max - min`` along the diagonal with offset
        ``j - i = -(n - 1), ..., n - 1`` (the two corner diagonals, one entry each, are 0).
    """
    matrix = _check_matrix("scores", scores)
    n = matrix.shape[0]
    return torch.stack([
        (diagonal.max() - diagonal.min()) for diagonal in (torch.diagonal(matrix, offset) for offset in range(-n + 1, n))
    ])


def shift_commutator(
    form: torch.Tensor,
    k: int,
    *,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    frequencies: Frequencies = "paper",
) -> float:
    """Largest entry of ``|M_k A - A M_k|``: 0 when ``A`` commutes with the shift by ``k``.

    Args:
        form: ``(d_model, d_model)`` matrix ``A`` (even ``d_model``).
        k: offset of the shift (negative allowed).
    """
    matrix = _check_matrix("form", form)
    shift = rotation_matrix(k, matrix.shape[0], base=base, layout=layout, frequencies=frequencies)
    return float((shift @ matrix - matrix @ shift).abs().max())


def offset_head_weights(
    k: int,
    d_model: int,
    *,
    scale: float = 1.0,
    base: float = 10000.0,
    layout: Layout = "interleaved",
    frequencies: Frequencies = "paper",
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Query and key weights of a head that attends exactly ``k`` positions back, on position vectors alone.

    ``w_query = scale * M_{-k}`` and ``w_key = I`` in ``torch.nn.Linear.weight`` layout
    (``q = x @ w_query.T``), so the query of position ``i`` is ``scale * PE(i - k)`` and its key
    ``j`` scores ``scale * PE(i - k) . PE(j) = scale * sum_p cos(w_p (j - i + k))``. That is
    largest, ``scale * d_model / 2``, exactly at ``j = i - k`` (for integer offsets, since
    ``w_0 = 1`` and ``cos m < 1`` for every integer ``m != 0``). ``scale`` sharpens the softmax
    without moving its peak. ``k`` may be negative (attend ahead).

    Args:
        k: how many positions back to attend.
        d_model: width of the (even) position vectors; the head has ``d_head = d_model``.
        scale: positive factor on the query weights.

    Returns:
        ``(w_query, w_key)``, each of shape ``(d_model, d_model)`` in ``dtype``.
    """
    k = _check_offset_k("k", k)
    d_model = check_even_int("d_model", d_model, why="the rotation acts on sin/cos pairs")
    scale = check_positive_float("scale", scale)
    dtype = _check_dtype(dtype)
    w_query = scale * rotation_matrix(-k, d_model, base=base, layout=layout, frequencies=frequencies)
    w_key = torch.eye(d_model, dtype=torch.float64)
    return w_query.to(dtype), w_key.to(dtype)


def offset_head_attention(
    k: int,
    d_model: int,
    n_positions: int,
    *,
    scale: float = 1.0,
    base: float = 10000.0,
    causal: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the head of :func:`offset_head_weights` on the position vectors ``PE(0 .. n_positions-1)``.

    Args:
        k, d_model, scale, base: as in :func:`offset_head_weights`.
        n_positions: number of positions (queries and keys).
        causal: mask keys after the query (``j > i``), as a decoder does.

    Returns:
        ``(logits, weights)``, float64 tensors of shape ``(n_positions, n_positions)`` (query
        ``i`` = row, key ``j`` = column): ``q_i . k_j / sqrt(d_model)`` (masked entries ``-inf``
        when ``causal``) and their row-wise softmax.
    """
    n_positions = check_positive_int("n_positions", n_positions)
    causal = check_bool("causal", causal)
    w_query, w_key = offset_head_weights(k, d_model, scale=scale, base=base, dtype=torch.float64)
    table = sinusoidal_table(n_positions, d_model, base=base, dtype=torch.float64)
    logits = (table @ w_query.T) @ (table @ w_key.T).T / math.sqrt(d_model)
    if causal:
        future = torch.ones(n_positions, n_positions, dtype=torch.bool).triu(1)
        logits = logits.masked_fill(future, float("-inf"))
    return logits, torch.softmax(logits, dim=-1)


def exact_integer_limit(dtype: torch.dtype) -> int:
    """Largest ``n`` such that every integer ``0..n`` is exactly representable in ``dtype``.

    For a float with ``p`` significand bits (implicit bit included) this is ``2**p``:
    float16 2,048, bfloat16 256, float32 16,777,216, float64 2**53. Above that limit the
    spacing between neighbouring values is 2 or more, so not every integer can be stored:
    float16 stores 2,050 but not 2,049 (it rounds to 2,048), bfloat16 stores 258 but not 257.
    A position that cannot be stored exactly is encoded as a neighbouring position.
    """
    dtype = _check_dtype(dtype)
    # eps = 2**(1 - p), so 2**p = 2 / eps.
    return int(round(2.0 / torch.finfo(dtype).eps))


# --------------------------------------------------------------------------- module
#: Entries (rows x d_model) the cached table of :class:`SinusoidalPositionalEncoding` may grow to just
#: to serve a few far positions (4M: 16 MB in float32); past that, such rows are computed on their own.
CACHE_ENTRIES = 1 << 22


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding to ``(batch, seq_len, d_model)`` input.

    The table is a non-persistent buffer (it is not saved in ``state_dict``: it is a pure
    function of the options). It grows on demand, to at least twice its size, when an input
    is longer than the table or ``position_ids`` go past it, so there is no maximum length.
    A few ``position_ids`` far past it (a grown table of more than :data:`CACHE_ENTRIES`
    entries, over 4 rows per position asked for) are computed on their own rather than
    building every row below them.
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
        dropout = check_real("dropout", dropout, low=0.0, high=1.0, high_open=True)
        self.dropout = nn.Dropout(dropout)
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
        device = self.table.device if device is None else check_device("device", device)
        stale = dtype != self._exact_dtype or self.table.dtype != dtype or self.table.device != device
        if stale:
            self.table = self._build(0, max(length, self.max_len), dtype, device)
            self._exact_dtype = dtype
        elif length > self.max_len:
            # Only the new rows are computed (offset = old length); doubling keeps growth amortised O(1).
            new_len = max(length, 2 * self.max_len)
            extra = self._build(self.max_len, new_len - self.max_len, dtype, device)
            self.table = torch.cat([self.table, extra])

    def _grows_to(self, ids: torch.Tensor) -> bool:
        """Whether the cache should grow to cover ``ids``: yes for the usual doubling step, for a table of
        at most :data:`CACHE_ENTRIES` entries, or when the grown table has at most 4 rows per position
        asked for. A few far positions (``[10**6]``) would otherwise make it build every row below them
        (2 GB at 10**6 x 512); their rows are computed on their own instead (:func:`sinusoidal_table`
        with ``positions=``: the same values to one float32 rounding)."""
        top = int(ids.max()) + 1
        return top <= max(2 * self.max_len, CACHE_ENTRIES // self.d_model, 4 * ids.numel())

    def encoding(self, position_ids: torch.Tensor) -> torch.Tensor:
        """Position vectors for integer ``position_ids`` of any shape -> ``(*shape, d_model)``.

        Positions inside the cached table (or a few times past it) read the cache, which grows to
        cover them; a handful of far positions are computed on their own (see :meth:`extend_to`),
        so one large id does not build the table up to it.
        """
        ids = check_positions("position_ids", position_ids)
        if ids.numel() and not self._grows_to(ids):
            return self._build_rows(ids, self.table.dtype, self.table.device)
        if ids.numel():
            self.extend_to(int(ids.max()) + 1)
        return self.table[ids.to(self.table.device)]

    def _build_rows(self, ids: torch.Tensor, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return sinusoidal_table(
            None, self.d_model, positions=ids, base=self.base, layout=self.layout, frequencies=self.frequencies,
            odd=self.odd, dtype=dtype, device=device,
        )

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Return ``dropout(x + PE)`` for ``x`` of shape ``(batch, seq_len, d_model)``.

        Args:
            x: floating-point input ``(batch, seq_len, d_model)``.
            position_ids: optional non-negative integer positions ``(seq_len,)`` or
                ``(batch, seq_len)``; default ``0 .. seq_len-1``.

        Returns:
            Tensor shaped like ``x``, in ``x``'s dtype and on its device.
        """
        check_tensor("x", x, shape=f"(batch, seq_len, d_model={self.d_model})")
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, seq_len, d_model={self.d_model}), got {tuple(x.shape)}")
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
            if ids.numel() and not self._grows_to(ids):
                pe = self._build_rows(ids, x.dtype, x.device)
            else:
                top = int(ids.max()) + 1 if ids.numel() else 1
                self.extend_to(top, dtype=x.dtype, device=x.device)
                pe = self.table[ids.to(x.device)]
        return self.dropout(x + pe)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, cached={self.max_len}, base={self.base:g}, layout={self.layout!r}, "
            f"frequencies={self.frequencies!r}, odd={self.odd!r}"
        )
