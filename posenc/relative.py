"""Relative position methods that act inside attention: RoPE, ALiBi and T5's bucketed bias.

Absolute schemes (sinusoidal, learned, the hybrids) *add* a vector to each token before
the first layer. The two methods here leave the token vectors alone and change the
attention scores instead, so what a head sees depends on the offset between a query
and a key rather than on where either of them sits:

* **RoPE** (rotary position embedding, Su et al., RoFormer): split each query and key
  into pairs of coordinates and rotate pair ``i`` at position ``m`` by the angle
  ``m * theta_i`` with ``theta_i = base ** (-2 i / d_head)``. A rotation by ``m`` on one
  side and ``n`` on the other leaves a dot product that depends only on ``m - n``.
* **ALiBi** (attention with linear biases, Press et al., 2022): add ``-slope_h * distance``
  to the attention score of head ``h``; the slopes are fixed, a geometric sequence.
* **T5's relative bias** (Raffel et al., 2020): put the offset ``key - query`` into one
  of a few buckets (exact for small offsets, logarithmic up to ``max_distance``, one bucket
  beyond) and add a *learned* scalar per bucket and head to the attention score.

All three are available to :class:`posenc.models.TinyTransformer` by name (``"rope"``,
``"alibi"`` and ``"t5_bias"``, see :mod:`posenc.registry`); the scheme adapters are at the
end of this module.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from posenc.checks import (
    check_bool,
    check_choice,
    check_even_int,
    check_nonnegative_int,
    check_integers,
    check_positions,
    check_positive_float,
    check_positive_int,
    check_real,
    check_real_positions,
    check_reals,
    check_tensor,
)
from posenc.extrapolate import position_interpolation_positions
from posenc.schemes import PositionScheme, check_hook_positions, check_queries_keys


class FrequencyScaling(Protocol):
    """What :meth:`RopeScheme.set_scaling` needs of a scaling (:class:`posenc.rope_scaling.RopeScaling`,
    :class:`~posenc.rope_scaling.LongRopeScaling`); :func:`check_scaling` checks it."""

    @property
    def query_key_scale(self) -> float: ...

    def inverse_frequencies(self, d_head: int, *, base: float = ..., seq_len: int | None = ...) -> torch.Tensor: ...


def check_scaling(name: str, value: Any) -> FrequencyScaling | None:
    """Return ``value`` if it is a RoPE scaling (or ``None``), else a TypeError naming ``name``.

    A scaling is anything with ``inverse_frequencies(d_head, *, base, seq_len)`` and ``query_key_scale``
    (:class:`FrequencyScaling`): :class:`posenc.rope_scaling.RopeScaling` and
    :class:`posenc.rope_scaling.LongRopeScaling`. Duck-typed, so that this module need not import
    :mod:`posenc.rope_scaling` (which builds on it); every function that takes a scaling checks it here.
    """
    if value is not None and not (callable(getattr(value, "inverse_frequencies", None))
                                  and hasattr(value, "query_key_scale")):
        raise TypeError(f"{name} must be a RoPE scaling (a posenc.rope_scaling.RopeScaling or LongRopeScaling, "
                        f"with inverse_frequencies and query_key_scale) or None, got {value!r:.80} of type "
                        f"{type(value).__name__}")
    return value

__all__ = [
    "ROPE_LAYOUTS",
    "rope_inverse_frequencies",
    "PARTIAL_LADDERS",
    "partial_inverse_frequencies",
    "rope_angles",
    "rope_alias_offsets",
    "apply_rope",
    "apply_rope_reference",
    "RotaryEmbedding",
    "alibi_slopes",
    "alibi_bias",
    "ALiBi",
    "RopeScheme",
    "AlibiScheme",
    "t5_relative_position_bucket",
    "T5RelativeBias",
    "T5BiasScheme",
]

#: How coordinates are paired for rotation. ``"interleaved"``: ``(x[2i], x[2i+1])``, as in
#: the RoFormer paper; ``"half"``: ``(x[i], x[i + d/2])``, as in GPT-NeoX and Hugging Face
#: LLaMA code. The same rotations on a fixed permutation of the channels.
ROPE_LAYOUTS: tuple[str, ...] = ("interleaved", "half")
_PAIRS = "RoPE rotates pairs of coordinates"


def rope_inverse_frequencies(d_head: int, *, base: float = 10000.0) -> torch.Tensor:
    """The rotation speed of each coordinate pair: ``theta_i = base ** (-2 i / d_head)``.

    Args:
        d_head: width of a query/key vector (even).
        base: 10000 in RoFormer, as in the sinusoidal encoding.

    Returns:
        float64 tensor of shape ``(d_head // 2,)``, from ``1`` down to ``base ** (-(d_head - 2) / d_head)``.
    """
    d_head = check_even_int("d_head", d_head, why=_PAIRS)
    base = check_positive_float("base", base)
    if base <= 1.0:
        raise ValueError(f"base must be > 1 so that the frequencies decrease, got {base}")
    return base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)


#: How a partial rotation picks its speeds (:func:`partial_inverse_frequencies`).
PARTIAL_LADDERS: tuple[str, ...] = ("compressed", "truncated")


def partial_inverse_frequencies(
    d_head: int, fraction: float, *, base: float = 10000.0, ladder: str = "compressed",
    speeds: Any = None,
) -> torch.Tensor:
    """Speeds of a head that rotates only part of its pairs (partial RoPE); the rest get speed 0 (no rotation).

    ``k = int(fraction * d_head) // 2`` pairs rotate. Two designs ship:

    * ``"compressed"`` (Hugging Face's ``partial_rotary_factor``: GLM-4.5, Qwen3-Next, Phi):
      the rotated pairs get a full ladder of their own, ``theta_i = base ** (-2 i / (2 k))``,
      from 1 down to nearly ``1 / base``.
    * ``"truncated"`` (p-RoPE, Barbero et al., 2025; Gemma 4's ``"proportional"``): the pairs
      keep the full head's ladder, ``theta_i = base ** (-2 i / d_head)``, and the slowest
      ``d_head / 2 - k`` pairs, which barely turn over a long context, stop rotating.

    Args:
        d_head: query/key width (even); fraction: share of it that rotates, in ``(0, 1]``.
        speeds: the full head's speeds to cut from (``(d_head // 2,)``, e.g. a scaled set of
            :mod:`posenc.rope_scaling`) for ``"truncated"``, or the rotated part's own
            (``(k,)``) for ``"compressed"``; default: ``base``'s.

    Returns:
        float64 ``(d_head // 2,)``: the rotated pairs first, then zeros.
    """
    d_head = check_even_int("d_head", d_head, why=_PAIRS)
    fraction = check_real("fraction", fraction, low=0.0, low_open=True, high=1.0, what="the share of d_head that rotates")
    check_choice("ladder", ladder, PARTIAL_LADDERS)
    base = check_positive_float("base", base)
    k = int(fraction * d_head) // 2
    if k < 1:
        raise ValueError(f"fraction={fraction} of d_head={d_head} rotates no pair: it must be >= {2 / d_head:g}")
    if speeds is None:
        speeds = rope_inverse_frequencies(2 * k if ladder == "compressed" else d_head, base=base)
    speeds = check_reals("speeds", speeds)
    expected = k if ladder == "compressed" else d_head // 2
    if speeds.shape != (expected,):
        raise ValueError(f"speeds must have shape ({expected},) for ladder {ladder!r}, got {tuple(speeds.shape)}")
    out = torch.zeros(d_head // 2, dtype=torch.float64)
    out[:k] = speeds[:k]
    return out


def rope_angles(
    positions: Any, d_head: int, *, base: float = 10000.0, inverse_frequencies: torch.Tensor | None = None
) -> torch.Tensor:
    """Rotation angle ``position * theta_i`` of every coordinate pair, in float64.

    Computed in double precision because ``position * theta`` loses accuracy in float32
    at large positions; callers cast the cosines and sines, not the angles.

    Args:
        positions: non-negative positions, any shape ``P`` (fractions allowed).
        d_head: width of a query/key vector (even).
        inverse_frequencies: ``(d_head // 2,)`` speeds to use instead of ``base``'s, e.g. a
            scaled set from :mod:`posenc.rope_scaling`.

    Returns:
        float64 tensor of shape ``(*P, d_head // 2)``.
    """
    pos = check_real_positions("positions", positions)
    if inverse_frequencies is None:
        speeds = rope_inverse_frequencies(d_head, base=base)
    else:
        speeds = check_reals("inverse_frequencies", inverse_frequencies)
        if speeds.shape != (d_head // 2,):
            raise ValueError(f"inverse_frequencies must have shape ({d_head // 2},) for d_head={d_head}, "
                             f"got {tuple(speeds.shape)}")
    return pos.unsqueeze(-1) * speeds.to(pos.device)


def rope_alias_offsets(
    offset: int, d_head: int, *, max_offset: int, pairs: int = 2, tolerance: float = 0.6, base: float = 10000.0
) -> list[tuple[int, tuple[float, ...]]]:
    """The longer offsets that RoPE's fastest pairs cannot tell from ``offset``.

    Pair ``i`` turns a key at offset ``r`` by ``r * theta_i``; it confuses ``r`` with ``offset``
    when the two angles differ by a whole number of turns, give or take ``tolerance``. A model
    that reads a short offset from the fastest pairs alone sees such an ``r`` as that offset.

    Args:
        offset: the offset a rule needs (e.g. 2 for copy-offset), ``>= 0``.
        d_head: query/key width (even); base: RoPE's base.
        max_offset: the largest offset to look at (the longest input's length minus one).
        pairs: how many of the fastest pairs must all be fooled.
        tolerance: largest wrapped angle difference (radians) that counts as "cannot tell".

    Returns:
        ``[(r, (difference in pair 0, pair 1, ...)), ...]`` for every ``offset < r <= max_offset``
        fooling all ``pairs`` pairs, smallest ``r`` first; differences in radians, in ``[0, pi]``.
    """
    offset = check_nonnegative_int("offset", offset)
    max_offset = check_positive_int("max_offset", max_offset)
    if max_offset <= offset:
        raise ValueError(f"max_offset must be > offset ({offset}), got {max_offset}")
    speeds = rope_inverse_frequencies(d_head, base=base).to(torch.float64)
    pairs = check_positive_int("pairs", pairs)
    if pairs > speeds.numel():
        raise ValueError(f"pairs must be at most d_head / 2 = {speeds.numel()}, got {pairs}")
    tolerance = check_real("tolerance", tolerance, low=0.0, low_open=True, high=math.pi)
    found = []
    for r in range(offset + 1, max_offset + 1):
        angles = (r - offset) * speeds[:pairs]
        differences = torch.remainder(angles + math.pi, 2 * math.pi) - math.pi  # wrapped into [-pi, pi)
        if bool((differences.abs() <= tolerance).all()):
            found.append((r, tuple(round(float(d), 4) for d in differences.abs())))
    return found


def apply_rope(
    x: torch.Tensor,
    positions: Any = None,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    inverse_frequencies: torch.Tensor | None = None,
) -> torch.Tensor:
    """Rotate each coordinate pair of ``x`` by ``position * theta_i``.

    Args:
        x: ``(..., seq_len, d_head)`` queries or keys (``d_head`` even), e.g.
            ``(batch, n_heads, seq_len, d_head)``.
        positions: ``None`` for ``0 .. seq_len - 1``; a ``(seq_len,)`` tensor; or
            ``(batch, seq_len)`` for a 4-D ``x`` of shape ``(batch, n_heads, seq_len, d_head)``.
            Non-negative, integer or fractional.
        base: frequency base (10000 in RoFormer).
        layout: one of :data:`ROPE_LAYOUTS`.
        inverse_frequencies: optional ``(d_head // 2,)`` speeds replacing ``base``'s (see :func:`rope_angles`).

    Returns:
        Tensor with the shape and dtype of ``x``. Every pair keeps its length.
    """
    layout = check_choice("layout", layout, ROPE_LAYOUTS)
    pos = _positions_for(x, positions)
    cos, sin = _rotation_tables(pos, x.shape[-1], base, inverse_frequencies, layout, x.dtype, x.device)
    return _rotate_pairs(x, cos, sin, layout)


def apply_rope_reference(
    x: torch.Tensor,
    positions: Any = None,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    inverse_frequencies: torch.Tensor | None = None,
) -> torch.Tensor:
    """RoPE written out pair by pair: the readable twin of :func:`apply_rope`, with the same arguments.

    Every query or key is cut into pairs of coordinates ``(a, b)``, and pair ``i`` at position
    ``p`` is turned by the angle ``p * theta_i`` with the 2x2 rotation matrix::

        [a']   [cos -sin] [a]        a' = a cos - b sin
        [b'] = [sin  cos] [b],       b' = a sin + b cos

    Which coordinates form a pair is the layout: ``"interleaved"`` pairs neighbours
    ``(x[2i], x[2i+1])`` (RoFormer), ``"half"`` pairs the two halves ``(x[i], x[i + d/2])``
    (GPT-NeoX, Hugging Face LLaMA). :func:`apply_rope` computes exactly the same numbers with
    one multiply-add over whole tensors; the tests check that the two agree to the last bit.

    Args:
        x: ``(..., seq_len, d_head)`` queries or keys, ``d_head`` even.
        positions: ``None`` for ``0 .. seq_len - 1``, a ``(seq_len,)`` tensor, or
            ``(batch, seq_len)`` for ``x`` of shape ``(batch, n_heads, seq_len, d_head)``.
        base, layout, inverse_frequencies: as in :func:`apply_rope`.

    Returns:
        The rotated tensor, shape and dtype of ``x``.
    """
    layout = check_choice("layout", layout, ROPE_LAYOUTS)
    pos = _positions_for(x, positions)  # (seq_len,), or (batch, 1, seq_len) for 4-D x
    d_head = x.shape[-1]
    angle = rope_angles(pos, d_head, base=base, inverse_frequencies=inverse_frequencies)  # (..., seq_len, d_head // 2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # angles in float64, as apply_rope does
    if layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]  # (..., seq_len, d_head // 2): first and second coordinate of each pair
    else:
        a, b = x[..., : d_head // 2], x[..., d_head // 2 :]
    rotated_a = a * cos - b * sin
    rotated_b = a * sin + b * cos
    if layout == "interleaved":
        return torch.stack([rotated_a, rotated_b], dim=-1).flatten(-2)  # back to a0, b0, a1, b1, ...
    return torch.cat([rotated_a, rotated_b], dim=-1)


def _positions_for(x: Any, positions: Any) -> torch.Tensor:
    """Checked positions for queries or keys ``x``: ``(seq_len,)``, or ``(batch, 1, seq_len)`` for 4-D ``x``."""
    check_tensor("x", x, floating=True, shape="(..., seq_len, d_head)")
    if x.ndim < 2:
        raise ValueError(f"x must be a tensor of shape (..., seq_len, d_head), got {tuple(x.shape)}")
    seq_len, d_head = x.shape[-2], x.shape[-1]
    check_even_int("d_head (the last dimension of x)", d_head, why=_PAIRS)
    if positions is None:
        positions = torch.arange(seq_len)
    pos = check_real_positions("positions", positions)
    if pos.ndim == 2 and x.ndim == 4 and pos.shape == (x.shape[0], seq_len):
        return pos.unsqueeze(1)  # one set of positions per batch row, shared by the heads
    if pos.shape != (seq_len,):
        raise ValueError(
            f"positions must have shape ({seq_len},) (or (batch, seq_len) for 4-D x); got {tuple(pos.shape)} "
            f"for x of shape {tuple(x.shape)}"
        )
    return pos


def _rotation_tables(
    pos: torch.Tensor, d_head: int, base: float, inverse_frequencies: torch.Tensor | None, layout: str,
    dtype: torch.dtype, device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel factors ``(cos, signed_sin)`` for :func:`_rotate_pairs`, each ``(*P, d_head)``.

    Channel by channel, in the pair order of ``layout``: ``cos`` holds ``cos(p * theta_i)`` in both
    channels of pair ``i``; ``signed_sin`` holds ``-sin(p * theta_i)`` in the pair's first channel
    and ``+sin(p * theta_i)`` in its second. The angles are computed in float64, then cast to ``dtype``.
    """
    angles = rope_angles(pos.to(device), d_head, base=base, inverse_frequencies=inverse_frequencies)
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    if layout == "interleaved":
        return cos.repeat_interleave(2, dim=-1), torch.stack([-sin, sin], dim=-1).flatten(-2)
    return torch.cat([cos, cos], dim=-1), torch.cat([-sin, sin], dim=-1)


def _swap_pairs(x: torch.Tensor, layout: str) -> torch.Tensor:
    """``x`` with the two channels of every pair exchanged: pair ``(a, b)`` becomes ``(b, a)``."""
    if layout == "interleaved":
        return x.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)
    half = x.shape[-1] // 2
    return torch.cat([x[..., half:], x[..., :half]], dim=-1)


def _rotate_pairs(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor, layout: str) -> torch.Tensor:
    """The 2x2 rotation ``[[cos, -sin], [sin, cos]]`` applied to every coordinate pair of ``x``.

    Pair ``(a, b)`` becomes ``(a cos - b sin, b cos + a sin) = (a, b) * (cos, cos) + (b, a) * (-sin, sin)``:
    one multiply-add over whole contiguous tensors (tables from :func:`_rotation_tables`) instead of
    four products on strided halves. Each channel gets exactly the same two products and one sum,
    so the result is the same to the last bit, only faster.
    """
    return x * cos + _swap_pairs(x, layout) * signed_sin


class RotaryEmbedding(nn.Module):
    """RoPE for one attention layer: rotates queries and keys by their positions.

    It has no parameters; the same module can serve every layer.

    Args:
        d_head: width of one head's query/key vectors (even).
        base: frequency base (10000 in RoFormer).
        layout: one of :data:`ROPE_LAYOUTS`.
    """

    def __init__(self, d_head: int, *, base: float = 10000.0, layout: str = "interleaved") -> None:
        super().__init__()
        self.d_head = check_even_int("d_head", d_head, why=_PAIRS)
        self.base = check_positive_float("base", base)
        rope_inverse_frequencies(self.d_head, base=self.base)  # validates base > 1 now, not at first use
        self.layout = check_choice("layout", layout, ROPE_LAYOUTS)
        # (key, cos, signed_sin) of the last positions rotated (see _rotation_tables)
        self._tables: tuple[Any, torch.Tensor, torch.Tensor] | None = None

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, positions: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate ``q`` and ``k`` (each ``(..., seq_len, d_head)``) by their positions.

        Args:
            positions: as in :func:`apply_rope`; the same positions for queries and keys.

        Returns:
            ``(q_rotated, k_rotated)`` with the shapes of ``q`` and ``k``.
        """
        for name, t in (("q", q), ("k", k)):
            check_tensor(name, t, floating=True, shape=f"(..., seq_len, d_head={self.d_head})")
            if t.ndim < 2 or t.shape[-1] != self.d_head:
                raise ValueError(f"{name} must have shape (..., seq_len, d_head={self.d_head}), got {tuple(t.shape)}")
        if k.shape != q.shape:
            raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
        if k.dtype != q.dtype:
            raise ValueError(f"q and k must have the same dtype, got {q.dtype} and {k.dtype}")
        pos = _positions_for(q, positions)
        # Every layer and every training step asks for the same positions: compute the (float64)
        # tables once and keep the last ones; the values are the same as computing them anew.
        key = (tuple(pos.shape), pos.dtype, q.dtype, q.device, tuple(pos.flatten().tolist()))
        if self._tables is None or self._tables[0] != key:
            self._tables = (key, *_rotation_tables(pos, self.d_head, self.base, None, self.layout, q.dtype, q.device))
        _, cos, signed_sin = self._tables
        return _rotate_pairs(q, cos, signed_sin, self.layout), _rotate_pairs(k, cos, signed_sin, self.layout)

    def extra_repr(self) -> str:
        return f"d_head={self.d_head}, base={self.base:g}, layout={self.layout!r}"


# -- ALiBi -------------------------------------------------------------------------------
def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The fixed per-head slopes of ALiBi (Press et al., 2022).

    For ``n`` a power of two: the geometric sequence ``2 ** (-8 h / n)`` for
    ``h = 1 .. n`` (8 heads: 1/2, 1/4, ..., 1/256). For other ``n``, the rule of the
    authors' reference implementation: the slopes of the largest power of two
    ``c < n``, followed by the first ``n - c`` slopes at odd positions of the ``2c``-head
    sequence (``2 ** (-4 (2k + 1) / c)``), i.e. values half-way, in log scale, between
    the ones already taken.

    Args:
        n_heads: number of attention heads.

    Returns:
        float64 tensor of shape ``(n_heads,)``, every value in ``(0, 1)``.
    """
    n_heads = check_positive_int("n_heads", n_heads)

    def power_of_two(n: int) -> torch.Tensor:
        return 2.0 ** (-8.0 * torch.arange(1, n + 1, dtype=torch.float64) / n)

    closest = 2 ** math.floor(math.log2(n_heads))
    if closest == n_heads:
        return power_of_two(n_heads)
    extra = power_of_two(2 * closest)[0::2][: n_heads - closest]
    return torch.cat([power_of_two(closest), extra])


def alibi_bias(n_heads: int, positions: Any, *, slopes: torch.Tensor | None = None) -> torch.Tensor:
    """ALiBi's additive attention bias: ``bias[h, i, j] = -slope_h * |p_i - p_j|``.

    With a causal mask (key ``j <= i``) this is exactly the paper's ``-m * (i - j)``.
    ALiBi was designed for causal language models; without a mask (an encoder) this
    module uses the symmetric extension ``-m * |i - j|``: a key ``d`` steps before or
    ``d`` steps after the query gets the same penalty. (A bias of this symmetric form
    cannot tell left from right on its own.)

    Args:
        n_heads: number of heads.
        positions: an int ``seq_len`` (positions ``0 .. seq_len - 1``), a ``(seq_len,)``
            tensor, or ``(batch, seq_len)``. Non-negative; fractions allowed.
        slopes: optional ``(n_heads,)`` slopes; defaults to :func:`alibi_slopes`.

    Returns:
        float32 tensor ``(n_heads, seq_len, seq_len)``, or ``(batch, n_heads, seq_len, seq_len)``
        for 2-D positions. Zero on the diagonal, more negative with distance.
    """
    n_heads = check_positive_int("n_heads", n_heads)
    if isinstance(positions, int) and not isinstance(positions, bool):
        positions = torch.arange(check_positive_int("positions (as a length)", positions))
    pos = check_real_positions("positions", positions)
    if pos.ndim not in (1, 2):
        raise ValueError(f"positions must have shape (seq_len,) or (batch, seq_len), got {tuple(pos.shape)}")
    if slopes is None:
        slopes = alibi_slopes(n_heads)
    slopes = check_reals("slopes", slopes).to(pos.device)
    if slopes.shape != (n_heads,):
        raise ValueError(f"slopes must have shape ({n_heads},), got {tuple(slopes.shape)}")
    distance = (pos.unsqueeze(-1) - pos.unsqueeze(-2)).abs()  # (..., seq_len, seq_len)
    bias = 0.0 - slopes.view(n_heads, 1, 1) * distance.unsqueeze(-3)  # 0.0 - ...: no -0.0 on the diagonal
    return bias.to(torch.float32)


class ALiBi(nn.Module):
    """ALiBi's fixed linear attention biases for ``n_heads`` heads (no parameters).

    Args:
        n_heads: number of attention heads.
    """

    slopes: torch.Tensor

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.register_buffer("slopes", alibi_slopes(self.n_heads), persistent=False)

    def forward(self, positions: Any) -> torch.Tensor:
        """The bias for ``positions`` (see :func:`alibi_bias`), on the positions' device."""
        return alibi_bias(self.n_heads, positions, slopes=self.slopes)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"


# -- scheme adapters ------------------------------------------------------------
class RopeScheme(PositionScheme):
    """RoPE as a :class:`posenc.schemes.PositionScheme`: every layer rotates its queries
    and keys; nothing is added to the token vectors. Defined for any position.

    Args:
        d_model: model width; n_heads: heads (``d_model / n_heads`` must be even).
        base, layout: as in :class:`RotaryEmbedding`.
        partial: the share of each head that rotates (1 = all of it); the other pairs pass
            through unrotated (:func:`partial_inverse_frequencies`).
        ladder: the speeds of a partial rotation: ``"compressed"`` or ``"truncated"`` (p-RoPE).

    :meth:`set_position_interpolation` switches on Chen et al.'s fixed-factor position
    interpolation, :meth:`set_scaling` any method of :mod:`posenc.rope_scaling` (both off
    by default).
    """

    supports_scaling: ClassVar[bool] = True

    def __init__(self, d_model: int, n_heads: int, *, base: float = 10000.0, layout: str = "interleaved",
                 partial: float = 1.0, ladder: str = "compressed") -> None:
        super().__init__()
        d_model, n_heads = check_positive_int("d_model", d_model), check_positive_int("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.max_len = None
        self.rotary = RotaryEmbedding(d_model // n_heads, base=base, layout=layout)
        partial = check_real("partial", partial, low=0.0, low_open=True, high=1.0, what="a share of each head")
        ladder = check_choice("ladder", ladder, PARTIAL_LADDERS)
        self.partial, self.ladder = partial, ladder
        # the speeds of a partial rotation (None: every pair rotates, the rotary module's fast path)
        self.partial_speeds = (None if partial == 1.0 else
                               partial_inverse_frequencies(self.rotary.d_head, partial, base=base, ladder=ladder))
        self.interpolation: tuple[int, int] | None = None
        self.scaling: FrequencyScaling | None = None

    def set_scaling(self, scaling: FrequencyScaling | None) -> None:
        """Rotate with the speeds (and YaRN's temperature) of ``scaling``, or plainly with ``None``.

        Args:
            scaling: a :class:`posenc.rope_scaling.RopeScaling` or
                :class:`~posenc.rope_scaling.LongRopeScaling` (:func:`check_scaling`); for dynamic NTK and
                LongRoPE the current length is the largest position of the input + 1.
        """
        scaling = check_scaling("scaling", scaling)
        if scaling is not None and self.interpolation is not None:
            raise ValueError("position interpolation is on: switch it off (set_position_interpolation()) first")
        self.scaling = scaling

    def set_position_interpolation(self, train_len: int | None = None, target_len: int | None = None) -> None:
        """Read every position ``p`` at ``p * train_len / target_len`` (Chen et al., 2023), or
        switch back to plain positions with no arguments.

        The factor is fixed here, once, not per input (see
        :func:`posenc.extrapolate.position_interpolation_positions`); positions ``>= target_len``
        then raise a ValueError.
        """
        if train_len is None and target_len is None:
            self.interpolation = None
            return
        if self.scaling is not None:
            raise ValueError("a RoPE scaling is on: switch it off (set_scaling(None)) first")
        if train_len is None or target_len is None:
            raise ValueError(
                f"give both train_len and target_len (or neither), got train_len={train_len!r}, target_len={target_len!r}"
            )
        position_interpolation_positions([0], train_len=train_len, target_len=target_len)  # validates now
        self.interpolation = (train_len, target_len)

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        check_queries_keys(q, k)
        check_hook_positions(positions, q.shape[2], q.shape[0])
        if self.interpolation is not None:
            train_len, target_len = self.interpolation
            positions = position_interpolation_positions(positions, train_len=train_len, target_len=target_len)
        if self.scaling is None and self.partial_speeds is None:
            return self.rotary(q, k, positions)
        scale = 1.0
        speeds = self.partial_speeds
        if self.scaling is not None:
            seq_len = int(positions.max().item()) + 1 if positions.numel() else 1
            d_head, base = self.rotary.d_head, self.rotary.base
            rotated_dim = 2 * (int(self.partial * d_head) // 2) if self.ladder == "compressed" else d_head
            speeds = self.scaling.inverse_frequencies(rotated_dim, base=base, seq_len=seq_len)
            if self.partial_speeds is not None:  # scale the rotated part's ladder, keep the rest still
                speeds = partial_inverse_frequencies(d_head, self.partial, base=base, ladder=self.ladder,
                                                     speeds=speeds)
            scale = self.scaling.query_key_scale
        rotated = [apply_rope(t, positions, layout=self.rotary.layout, inverse_frequencies=speeds) * scale
                   for t in (q, k)]
        return rotated[0], rotated[1]


class AlibiScheme(PositionScheme):
    """ALiBi as a :class:`posenc.schemes.PositionScheme`: a fixed bias on every layer's
    attention scores (symmetric ``-m |i - j|``; see :func:`alibi_bias`). Defined for any position.

    Without a causal mask this bias is its own reverse (``bias[n-1-i, n-1-j] = bias[i, j]``),
    so a model whose only position signal it is maps a reversed input to the reversed output
    (:func:`posenc.models.reversal_gap` is 0 up to float error). ``TinyTransformer(...,
    bos_token=True)`` adds an anchor at one end that breaks this symmetry.

    Args:
        n_heads: number of heads (one slope each).
    """

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.max_len = None
        self.alibi = ALiBi(n_heads)

    def attention_bias(self, positions: torch.Tensor) -> torch.Tensor:
        return self.alibi(check_hook_positions(positions))


# -- T5 relative bias ---------------------------------------------------------------------
def _check_buckets(bidirectional: Any, num_buckets: Any, max_distance: Any) -> tuple[bool, int, int]:
    """Validate T5's bucket settings; return them. Each direction needs an exact half and a log half."""
    bidirectional = check_bool("bidirectional", bidirectional)
    num_buckets = check_positive_int("num_buckets", num_buckets)
    max_distance = check_positive_int("max_distance", max_distance)
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    if per_direction < 2:
        least = 4 if bidirectional else 2
        raise ValueError(
            f"num_buckets must be >= {least} with bidirectional={bidirectional} (each direction needs at least "
            f"one exact and one logarithmic bucket), got {num_buckets}"
        )
    max_exact = per_direction // 2
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be > {max_exact} (the offsets that get exact buckets with num_buckets={num_buckets}, "
            f"bidirectional={bidirectional}), got {max_distance}"
        )
    return bidirectional, num_buckets, max_distance


def t5_relative_position_bucket(
    relative_position: Any,
    *,
    bidirectional: bool,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    """T5's bucket for each offset ``r = key_position - query_position`` (Raffel et al., 2020).

    The rule of the reference implementation (Mesh TensorFlow, and Hugging Face's
    ``T5Attention._relative_position_bucket``), with ``n`` buckets per direction
    (``n = num_buckets // 2`` if ``bidirectional``, else ``num_buckets``) and
    ``e = n // 2`` exact buckets:

    * distance ``d``: ``|r|`` if ``bidirectional``; else ``max(-r, 0)`` (a causal model
      only looks back; every future offset shares bucket 0 with ``r = 0``);
    * ``d < e``: bucket ``d`` (one bucket per offset);
    * ``d >= e``: bucket ``min(e + floor(log(d / e) / log(max_distance / e) * (n - e)), n - 1)``,
      i.e. logarithmically wider buckets up to ``max_distance``; every ``d >= max_distance``
      is in the last bucket ``n - 1``;
    * if ``bidirectional``, keys *after* the query (``r > 0``) use buckets ``n .. 2n - 1``
      (bucket ``n`` itself, distance 0 after the query, never occurs: a quirk of the reference).

    The logarithm is taken in float32 with the same operations as the reference, so the
    buckets agree with it even where ``log(d / e) / log(max_distance / e) * (n - e)`` is an
    integer in exact arithmetic (e.g. ``d = 16, 32, 64`` for the defaults).

    Args:
        relative_position: integer offsets ``key - query``, any shape ``S``, any sign.
        bidirectional: ``True`` for an encoder (direction-aware buckets), ``False`` for a
            causal decoder.
        num_buckets: total number of buckets (T5: 32). With ``bidirectional`` and an odd
            value, the last bucket is never used (as in the reference).
        max_distance: distances from here on share the last bucket (T5: 128).

    Returns:
        ``torch.long`` tensor of shape ``S``, values in ``[0, num_buckets)``.
    """
    bidirectional, num_buckets, max_distance = _check_buckets(bidirectional, num_buckets, max_distance)
    rel = check_integers("relative_position", relative_position)
    n = num_buckets
    offset = torch.zeros_like(rel)
    if bidirectional:
        n = num_buckets // 2
        offset = (rel > 0).long() * n
        distance = rel.abs()
    else:
        distance = (-rel).clamp(min=0)
    max_exact = n // 2
    # The log branch is only used for d >= max_exact; clamping keeps log(0) = -inf out of it.
    far = distance.clamp(min=max_exact).float()
    log_bucket = max_exact + (
        torch.log(far / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
    ).to(torch.long)
    log_bucket = log_bucket.clamp(max=n - 1)
    return offset + torch.where(distance < max_exact, distance, log_bucket)


class T5RelativeBias(nn.Module):
    """T5's learned relative attention bias: ``bias[h, i, j] = w[bucket(p_j - p_i), h]``.

    One learned scalar per bucket and head (``num_buckets * n_heads`` parameters), the
    same for every layer, as in T5 (its first layer computes the bias and the others reuse
    it). Defined at any length: offsets past ``max_distance`` share the last bucket.

    Args:
        n_heads: number of heads.
        bidirectional, num_buckets, max_distance: as in :func:`t5_relative_position_bucket`.
        init_std: standard deviation of the initial weights; Hugging Face's T5 uses
            ``d_model ** -0.5`` (the scheme's default).
    """

    def __init__(
        self,
        n_heads: int,
        *,
        bidirectional: bool = True,
        num_buckets: int = 32,
        max_distance: int = 128,
        init_std: float = 0.02,
    ) -> None:
        super().__init__()
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.bidirectional, self.num_buckets, self.max_distance = _check_buckets(
            bidirectional, num_buckets, max_distance
        )
        self.weight = nn.Parameter(torch.empty(self.num_buckets, self.n_heads))
        nn.init.normal_(self.weight, std=check_positive_float("init_std", init_std))

    def buckets(self, positions: Any) -> torch.Tensor:
        """Bucket of every (query, key) pair: ``(seq_len, seq_len)`` or ``(batch, seq_len, seq_len)``.

        Args:
            positions: an int ``seq_len`` (positions ``0 .. seq_len - 1``), a ``(seq_len,)``
                tensor or ``(batch, seq_len)``; non-negative integers.
        """
        if isinstance(positions, int) and not isinstance(positions, bool):
            positions = torch.arange(check_positive_int("positions (as a length)", positions))
        pos = check_positions("positions", positions)
        if pos.ndim not in (1, 2):
            raise ValueError(f"positions must have shape (seq_len,) or (batch, seq_len), got {tuple(pos.shape)}")
        relative = pos.unsqueeze(-2) - pos.unsqueeze(-1)  # [..., i, j] = p_j - p_i: key minus query
        return t5_relative_position_bucket(
            relative, bidirectional=self.bidirectional, num_buckets=self.num_buckets, max_distance=self.max_distance
        )

    def forward(self, positions: Any) -> torch.Tensor:
        """The bias ``(n_heads, seq_len, seq_len)`` (or ``(batch, n_heads, seq_len, seq_len)``
        for 2-D positions), differentiable with respect to :attr:`weight`."""
        buckets = self.buckets(positions).to(self.weight.device)
        return self.weight[buckets].movedim(-1, -3)  # (..., i, j, h) -> (..., h, i, j)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, bidirectional={self.bidirectional}, "
            f"num_buckets={self.num_buckets}, max_distance={self.max_distance}"
        )


class T5BiasScheme(PositionScheme):
    """T5's bucketed relative bias as a :class:`posenc.schemes.PositionScheme` (name ``"t5_bias"``).

    Like :class:`AlibiScheme` it acts only through ``attention_bias``: nothing is added to
    the token vectors, and the same bias enters every layer. Unlike ALiBi the bias is
    learned, and with ``bidirectional=True`` it tells a key before the query from one after
    it (ALiBi's encoder bias ``-m |i - j|`` does not). Defined for any position.

    Args:
        d_model: model width (only sets the default ``init_std = d_model ** -0.5``, T5's).
        n_heads: heads (one learned scalar per bucket each).
        bidirectional: ``True`` (T5's encoder) or ``False`` (T5's decoder, for causal
            models). :class:`posenc.models.TinyTransformer` sets it to ``not causal``
            unless given.
        num_buckets, max_distance: as in :func:`t5_relative_position_bucket`.
        init_std: standard deviation of the initial bias weights.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bidirectional: bool = True,
        num_buckets: int = 32,
        max_distance: int = 128,
        init_std: float | None = None,
    ) -> None:
        super().__init__()
        d_model = check_positive_int("d_model", d_model)
        self.max_len = None
        self.bias = T5RelativeBias(
            n_heads,
            bidirectional=bidirectional,
            num_buckets=num_buckets,
            max_distance=max_distance,
            init_std=d_model**-0.5 if init_std is None else init_std,
        )

    def attention_bias(self, positions: torch.Tensor) -> torch.Tensor:
        return self.bias(check_hook_positions(positions))
