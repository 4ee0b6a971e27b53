"""Hybrids between the fixed sinusoidal encoding and a learned table.

Each hybrid keeps part of one family and part of the other:

* **Sinusoid-initialised learned table**: a learned table whose starting values are the
  sinusoidal table. This is exactly :class:`posenc.learned.LearnedPositionEmbedding`
  with ``init="sinusoidal"`` (and the ``"learned"`` scheme with ``init="sinusoidal"``);
  it is not repeated here. Parameters: ``L * d``.
* :class:`ScaledSinusoidalEmbedding`: the sinusoidal table stays frozen; a learned scale
  and bias per dimension reshape it. Parameters: ``2 d``. Defined at every position,
  because the sinusoid is computed, not stored.
* :class:`FactoredPositionEmbedding`: a learned table of rank ``r``, the product of an
  ``L x r`` and an ``r x d`` matrix. Parameters: ``L r + r d``.
* :class:`HierarchicalPositionEmbedding`: position ``p = s * segment_len + o`` gets the sum
  of a segment vector (row ``s``) and an offset vector (row ``o``). Parameters:
  ``(n_segments + segment_len) d`` for ``n_segments * segment_len`` positions.

Every module has ``encode(positions)`` (the position vectors alone), ``forward(x, positions)``
(``x`` plus those vectors) and ``table(n)``; the ``*_parameters`` functions give each
count by formula. :mod:`posenc.registry` makes them available to
:class:`posenc.models.TinyTransformer` as ``"hybrid-scaled-sinusoid"``, ``"hybrid-factored"``
and ``"hybrid-hierarchical"``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from posenc.checks import check_choice, check_instance, check_positions, check_positive_int, check_tensor
from posenc.learned import INIT_CHOICES, LearnedPositionEmbedding
from posenc.params import position_parameters
from posenc.schemes import PositionScheme, SinusoidalScheme, check_hook_positions, check_stream
from posenc.sinusoidal import sinusoidal_table

__all__ = [
    "FACTORED_INITS",
    "learned_parameters",
    "scaled_sinusoid_parameters",
    "factored_parameters",
    "hierarchical_parameters",
    "ScaledSinusoidalEmbedding",
    "FactoredPositionEmbedding",
    "HierarchicalPositionEmbedding",
    "HybridScheme",
]

#: Starting points of a factored table: ``"normal"`` (random, product std 0.02 like BERT)
#: or ``"sinusoidal"`` (the best rank-r approximation of the sinusoidal table, by SVD).
FACTORED_INITS: tuple[str, ...] = ("normal", "sinusoidal")


# -- parameter counts by formula -------------------------------------------------------------
#: A full learned table (any init, including the sinusoid-initialised hybrid): ``L * d``.
#: The same count as :func:`posenc.params.position_parameters`, under the name chapter 8 uses.
learned_parameters = position_parameters


def scaled_sinusoid_parameters(d_model: int) -> int:
    """Frozen sinusoid with learned per-dimension scale and bias: ``2 * d`` (independent of length)."""
    return 2 * check_positive_int("d_model", d_model)


def factored_parameters(max_len: int, d_model: int, rank: int) -> int:
    """Factored table ``A @ B`` with ``A: (L, r)`` and ``B: (r, d)``: ``L * r + r * d``."""
    max_len, d_model = check_positive_int("max_len", max_len), check_positive_int("d_model", d_model)
    return max_len * check_positive_int("rank", rank) + rank * d_model


def hierarchical_parameters(n_segments: int, segment_len: int, d_model: int) -> int:
    """Segment table plus offset table: ``(n_segments + segment_len) * d``."""
    n_segments = check_positive_int("n_segments", n_segments)
    segment_len = check_positive_int("segment_len", segment_len)
    return (n_segments + segment_len) * check_positive_int("d_model", d_model)


# -- shared behaviour ----------------------------------------------------------------------
class _AddedPositions(nn.Module):
    """Base of the hybrids: subclasses implement ``encode``; this adds it to ``x``."""

    d_model: int
    max_len: int | None

    def encode(self, positions: Any) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def table(self, n_positions: int) -> torch.Tensor:
        """Position vectors of positions ``0 .. n_positions - 1``, shape ``(n_positions, d_model)``."""
        return self.encode(torch.arange(check_positive_int("n_positions", n_positions)))

    def forward(self, x: torch.Tensor, positions: Any = None) -> torch.Tensor:
        """Add position vectors to ``x`` of shape ``(batch, seq_len, d_model)``.

        Args:
            positions: ``None`` for ``0 .. seq_len - 1``, or ``(seq_len,)`` / ``(batch, seq_len)`` integers.
        """
        check_tensor("x", x, floating=True, shape=f"(batch, seq_len, {self.d_model})")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, seq_len, {self.d_model}), got {tuple(x.shape)}")
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        rows = self.encode(positions)
        if rows.shape[:-1] not in {(x.shape[1],), tuple(x.shape[:2])}:
            raise ValueError(
                f"positions must have shape ({x.shape[1]},) or {tuple(x.shape[:2])}, got {tuple(rows.shape[:-1])}"
            )
        return x + rows.to(x.dtype)

    def _check_positions(self, positions: Any) -> torch.Tensor:
        if self.max_len is None:
            return check_positions("positions", positions)
        try:
            return check_positions("positions", positions, upper=self.max_len)
        except ValueError as error:
            raise ValueError(f"{error} ({type(self).__name__} holds positions 0 .. {self.max_len - 1})") from None


class ScaledSinusoidalEmbedding(_AddedPositions):
    """A frozen sinusoidal table reshaped by a learned scale and bias per dimension.

    ``encode(p) = PE(p) * scale + bias`` with ``PE`` the paper's sinusoidal encoding
    (interleaved layout), ``scale`` starting at 1 and ``bias`` at 0, so at initialisation
    it *is* the sinusoidal encoding. The sinusoid is computed for whatever positions
    arrive (through a cache that grows on demand), so the module has no maximum length.

    Note that ``bias`` is the same at every position: it shifts all token vectors alike
    and carries no position information. Only ``scale`` changes how position is encoded.

    Args:
        d_model: width of each position vector (even).
        base: wavelength base of the sinusoid (10000 in the paper).
    """

    def __init__(self, d_model: int, *, base: float = 10000.0) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = None
        # The growing, non-trainable sinusoid of posenc.schemes (a buffer, not a parameter).
        self.sinusoid = SinusoidalScheme(self.d_model, base=base)
        self.scale = nn.Parameter(torch.ones(self.d_model))
        self.bias = nn.Parameter(torch.zeros(self.d_model))

    def encode(self, positions: Any) -> torch.Tensor:
        """Position vectors, shape ``(*positions.shape, d_model)``, for any non-negative integers."""
        pos = self._check_positions(positions)
        # the cached rows of these positions (the cache grows to cover them, as the table did); a few far
        # positions are computed on their own rather than building every row below them
        rows = self.sinusoid.encoding.encoding(pos).to(self.scale.device)
        return rows * self.scale + self.bias


class FactoredPositionEmbedding(_AddedPositions):
    """A learned ``(max_len, d_model)`` table constrained to rank ``rank``: ``A @ B``.

    ``A`` (``max_len x rank``) gives every position ``rank`` coordinates; ``B``
    (``rank x d_model``) maps them into the model's width. Parameters ``L r + r d``
    instead of ``L d``: smaller whenever ``r < L d / (L + d)``.

    Args:
        max_len: number of positions (rows of ``A``).
        d_model: width of each position vector.
        rank: inner dimension ``r``, ``1 <= r <= min(max_len, d_model)`` (a larger rank
            adds parameters but cannot add expressiveness).
        init: one of :data:`FACTORED_INITS`.
    """

    def __init__(self, max_len: int, d_model: int, rank: int, *, init: str = "normal") -> None:
        super().__init__()
        self.max_len = check_positive_int("max_len", max_len)
        self.d_model = check_positive_int("d_model", d_model)
        self.rank = check_positive_int("rank", rank)
        if self.rank > min(self.max_len, self.d_model):
            raise ValueError(
                f"rank must be <= min(max_len, d_model) = {min(self.max_len, self.d_model)}, got {self.rank}: "
                "a larger rank adds parameters without adding expressiveness"
            )
        self.init = check_choice("init", init, FACTORED_INITS)
        self.positions_factor = nn.Parameter(torch.empty(self.max_len, self.rank))  # A
        self.features_factor = nn.Parameter(torch.empty(self.rank, self.d_model))  # B
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        if self.init == "normal":
            # Equal std s for both factors with sqrt(r) * s**2 = 0.02: entries of A @ B then
            # have std 0.02 (BERT's table), and neither factor starts tiny.
            std = math.sqrt(0.02 / math.sqrt(self.rank))
            nn.init.normal_(self.positions_factor, std=std)
            nn.init.normal_(self.features_factor, std=std)
            return
        if self.d_model % 2:
            raise ValueError(f"init='sinusoidal' needs an even d_model, got {self.d_model}")
        # Eckart-Young: the truncated SVD is the best rank-r approximation (Frobenius norm).
        u, s, vh = torch.linalg.svd(sinusoidal_table(self.max_len, self.d_model, dtype=torch.float64),
                                    full_matrices=False)
        root = s[: self.rank].sqrt()
        self.positions_factor.copy_(u[:, : self.rank] * root)
        self.features_factor.copy_(root.unsqueeze(1) * vh[: self.rank])

    def encode(self, positions: Any) -> torch.Tensor:
        """Position vectors, shape ``(*positions.shape, d_model)``; positions must be ``< max_len``."""
        pos = self._check_positions(positions).to(self.positions_factor.device)
        return self.positions_factor[pos] @ self.features_factor

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}, rank={self.rank}, init={self.init!r}"


class HierarchicalPositionEmbedding(_AddedPositions):
    """Two small learned tables instead of one long one: segment and offset within it.

    Position ``p`` is split as ``p = segment * segment_len + offset`` and encoded as
    ``segment_table[segment] + offset_table[offset]``. The largest position is
    ``n_segments * segment_len - 1``; parameters ``(n_segments + segment_len) * d``
    instead of ``n_segments * segment_len * d``.

    Args:
        n_segments: rows of the segment table.
        segment_len: positions per segment (rows of the offset table).
        d_model: width of each vector.
        init: init of both tables, one of :data:`posenc.learned.INIT_CHOICES`.
    """

    def __init__(self, n_segments: int, segment_len: int, d_model: int, *, init: str = "bert") -> None:
        super().__init__()
        self.n_segments = check_positive_int("n_segments", n_segments)
        self.segment_len = check_positive_int("segment_len", segment_len)
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = self.n_segments * self.segment_len
        check_choice("init", init, INIT_CHOICES)
        # Two ordinary learned tables: the same inits, lookups and errors as chapter 3's.
        self.segments = LearnedPositionEmbedding(self.n_segments, self.d_model, init=init)
        self.offsets = LearnedPositionEmbedding(self.segment_len, self.d_model, init=init)

    def split(self, positions: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(segment, offset)`` of each position: ``divmod(p, segment_len)``, each shaped like ``positions``."""
        pos = self._check_positions(positions)
        return torch.div(pos, self.segment_len, rounding_mode="floor"), torch.remainder(pos, self.segment_len)

    def encode(self, positions: Any) -> torch.Tensor:
        """Position vectors, shape ``(*positions.shape, d_model)``; positions must be ``< max_len``."""
        segment, offset = self.split(positions)
        device = self.segments.weight.device
        return self.segments.weight[segment.to(device)] + self.offsets.weight[offset.to(device)]

    def extra_repr(self) -> str:
        return f"n_segments={self.n_segments}, segment_len={self.segment_len}, d_model={self.d_model}"


# -- scheme adapter -------------------------------------------------------------
class HybridScheme(PositionScheme):
    """Any hybrid above as a :class:`posenc.schemes.PositionScheme` (it adds vectors)."""

    def __init__(self, module: _AddedPositions) -> None:
        super().__init__()
        check_instance("module", module, _AddedPositions,
                       what="a hybrid of posenc.hybrid (ScaledSinusoidalEmbedding, FactoredPositionEmbedding or "
                            "HierarchicalPositionEmbedding)")
        self.module = module
        self.max_len = module.max_len

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        check_stream("x", x, self.module.d_model)
        check_hook_positions(positions, x.shape[1], x.shape[0])
        return self.module(x, positions)

    def table(self, n_positions: int) -> torch.Tensor:
        return self.module.table(n_positions)
