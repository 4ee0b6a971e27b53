"""Position schemes: every way of telling :class:`posenc.models.TinyTransformer` where a token is.

A :class:`PositionScheme` acts through one of three hooks:

* ``embed(x, positions)``: absolute schemes (sinusoidal, learned, the hybrids) add a
  vector to the token embeddings;
* ``rotate(q, k, positions)``: rotary schemes (RoPE) turn queries and keys;
* ``attention_bias(positions)``: bias schemes (ALiBi) add a term to the attention scores.

This module holds the base class and the absolute schemes of chapters 2 and 3
(:class:`NoPosition`, :class:`SinusoidalScheme`, :class:`LearnedScheme`). RoPE and ALiBi
live in :mod:`posenc.relative`, the hybrids in :mod:`posenc.hybrid`; :mod:`posenc.registry`
creates any of them by name.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from posenc.checks import (
    check_choice,
    check_even_int,
    check_mapping,
    check_positions,
    check_positive_int,
    check_tensor,
    check_text,
    check_text_sequence,
)
from posenc.extrapolate import STRATEGIES, lookup
from posenc.learned import LearnedPositionEmbedding
from posenc.sinusoidal import EVEN_WIDTH, Layout, SinusoidalPositionalEncoding

__all__ = ["PositionScheme", "NoPosition", "SinusoidalScheme", "LearnedScheme", "reject_options"]


def check_stream(name: str, x: Any, width: int | None = None) -> torch.Tensor:
    """A hook's token vectors: a floating-point ``(batch, seq_len, width)`` tensor (returned as given)."""
    expected = f"(batch, seq_len, {'d_model' if width is None else f'd_model={width}'})"
    check_tensor(name, x, floating=True, shape=expected)
    if x.ndim != 3 or (width is not None and x.shape[-1] != width):
        raise ValueError(f"{name} must have shape {expected}, got {tuple(x.shape)}")
    return x


def check_hook_positions(positions: Any, seq_len: int | None = None, batch: int | None = None) -> torch.Tensor:
    """A hook's positions: a ``(seq_len,)`` or ``(batch, seq_len)`` tensor of integers >= 0, returned as given
    (so the hook computes exactly what it computed before the check)."""
    expected = "(seq_len,) or (batch, seq_len)" if seq_len is None else f"({seq_len},) or ({batch}, {seq_len})"
    check_tensor("positions", positions, ndim=(1, 2), shape=expected)
    check_positions("positions", positions)
    if seq_len is not None and positions.shape not in ((seq_len,), (batch, seq_len)):
        raise ValueError(f"positions must have shape {expected}, got {tuple(positions.shape)}")
    return positions


class PositionScheme(nn.Module):
    """Base class of every position scheme: all three hooks default to "do nothing".

    Attributes:
        max_len: the largest number of positions the scheme can encode, or ``None`` if it
            is defined for any position.
        has_table: the scheme looks positions up in a learned table of ``table_len`` rows
            whose end the workarounds of :mod:`posenc.extrapolate` can read past
            (:meth:`set_extrapolation`).
        supports_scaling: the scheme rotates queries and keys and accepts the frequency
            scalings of :mod:`posenc.rope_scaling` (:meth:`set_scaling`).
    """

    max_len: int | None = None
    has_table: ClassVar[bool] = False
    supports_scaling: ClassVar[bool] = False
    table_len: int | None = None

    def set_extrapolation(self, strategy: str | None) -> None:
        """Choose the workaround for positions past the table (only schemes with ``has_table``)."""
        raise TypeError(f"{type(self).__name__} has no learned table to read past (has_table is False)")

    def set_scaling(self, scaling: Any) -> None:
        """Rotate with a scaled set of frequencies (only schemes with ``supports_scaling``)."""
        raise TypeError(f"{type(self).__name__} does not rotate queries and keys (supports_scaling is False)")

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Return ``x`` with position information added.

        Args:
            x: ``(batch, seq_len, d_model)`` token vectors.
            positions: ``(seq_len,)`` or ``(batch, seq_len)`` long positions.

        Returns:
            Tensor with the shape of ``x``.
        """
        check_stream("x", x)
        check_hook_positions(positions, x.shape[1], x.shape[0])
        return x

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return queries and keys, possibly transformed by position.

        Args:
            q, k: ``(batch, n_heads, seq_len, d_head)``.
            positions: ``(seq_len,)`` or ``(batch, seq_len)`` long positions.
        """
        check_queries_keys(q, k)
        check_hook_positions(positions, q.shape[2], q.shape[0])
        return q, k

    def attention_bias(self, positions: torch.Tensor) -> torch.Tensor | None:
        """Additive attention-score bias of shape ``(n_heads, seq_len, seq_len)``
        (or ``(batch, n_heads, seq_len, seq_len)``), or ``None`` for no bias."""
        check_hook_positions(positions)
        return None

    def table(self, n_positions: int) -> torch.Tensor | None:
        """The vectors ``embed`` adds at positions ``0 .. n_positions - 1``, shape
        ``(n_positions, d_model)``, or ``None`` if the scheme adds no vectors."""
        check_positive_int("n_positions", n_positions)
        return None


def check_queries_keys(q: Any, k: Any) -> None:
    """A hook's queries and keys: floating-point ``(batch, n_heads, seq_len, d_head)`` tensors of one shape and dtype."""
    for name, t in (("q", q), ("k", k)):
        check_tensor(name, t, ndim=4, floating=True, shape="(batch, n_heads, seq_len, d_head)")
    if k.shape != q.shape:
        raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    if k.dtype != q.dtype:
        raise ValueError(f"q and k must have the same dtype, got {q.dtype} and {k.dtype}")


class NoPosition(PositionScheme):
    """No position information at all (the "bag of tokens" baseline without a causal mask)."""


class SinusoidalScheme(PositionScheme):
    """The fixed sinusoidal encoding (Vaswani et al., 2017), defined for any position.

    A thin adapter around :class:`posenc.sinusoidal.SinusoidalPositionalEncoding`, whose
    cached table grows on demand, so a longer input never fails.

    Args:
        d_model: width of each position vector (even).
        base: the wavelength base (10000 in the paper).
        initial_len: rows computed up front (a hint, not a limit).
        layout: ``"interleaved"`` (the paper) or ``"concatenated"`` (tensor2tensor/fairseq).
    """

    def __init__(
        self, d_model: int, *, base: float = 10000.0, initial_len: int = 64, layout: Layout = "interleaved"
    ) -> None:
        super().__init__()
        self.d_model = check_even_int("d_model", d_model, why=EVEN_WIDTH)
        initial_len = check_positive_int("initial_len", initial_len)
        self.max_len = None
        self.encoding = SinusoidalPositionalEncoding(self.d_model, max_len=initial_len, base=base, layout=layout)

    def table(self, n_positions: int) -> torch.Tensor:
        return self.encoding.encoding(torch.arange(check_positive_int("n_positions", n_positions)))

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        check_stream("x", x, self.d_model)
        check_hook_positions(positions, x.shape[1], x.shape[0])
        return x + self.encoding.encoding(positions).to(device=x.device, dtype=x.dtype)


class LearnedScheme(PositionScheme):
    """A learned absolute position table (:class:`posenc.learned.LearnedPositionEmbedding`).

    Args:
        d_model: width of each position vector.
        max_len: rows in the table (the longest input it was built for).
        init: one of :data:`posenc.learned.INIT_CHOICES`.
        extrapolation: ``None`` (positions past the table raise ValueError) or a
            workaround from :mod:`posenc.extrapolate` (``"clip"``, ``"modular"``,
            ``"interpolate"``) used only for positions the table does not have.
            With a workaround the scheme accepts any position, so ``max_len`` is ``None``
            and the table size is ``table_len``.
    """

    has_table: ClassVar[bool] = True

    def __init__(self, d_model: int, max_len: int, *, init: str = "bert", extrapolation: str | None = None) -> None:
        super().__init__()
        if extrapolation is not None:
            check_choice("extrapolation", extrapolation, STRATEGIES)
        self.embedding = LearnedPositionEmbedding(max_len, d_model, init=init)
        self.table_len = self.embedding.max_len
        self.set_extrapolation(extrapolation)

    def set_extrapolation(self, strategy: str | None) -> None:
        """Switch the workaround used past the table (``None`` restores the hard limit)."""
        if strategy is not None:
            check_choice("strategy", strategy, STRATEGIES)
        self.extrapolation = strategy
        self.max_len = self.table_len if strategy is None else None

    @property
    def weight(self) -> torch.Tensor:
        """The ``(table_len, d_model)`` trainable table."""
        return self.embedding.weight

    def table(self, n_positions: int) -> torch.Tensor:
        n_positions = check_positive_int("n_positions", n_positions)
        positions = torch.arange(n_positions)
        return self._rows(positions)

    def _rows(self, positions: torch.Tensor) -> torch.Tensor:
        pos = check_positions("positions", positions)
        top = int(pos.max()) + 1 if pos.numel() else 0
        if self.extrapolation is None or top <= self.embedding.max_len:
            # Inside the table (or no workaround): the table's own lookup, and its own error
            # past the end (the plain 0..seq_len-1 case gives its most explicit message).
            zeros = self.weight.new_zeros(*pos.shape, self.weight.shape[1])
            if pos.ndim == 1 and torch.equal(pos, torch.arange(pos.numel())):
                return self.embedding(zeros.unsqueeze(0)).squeeze(0)
            return self.embedding(zeros, pos.to(self.weight.device))
        target = top if self.extrapolation == "interpolate" else None
        return lookup(self.weight, pos, self.extrapolation, target_len=target)

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        check_stream("x", x, self.embedding.d_model)
        check_hook_positions(positions, x.shape[1], x.shape[0])
        return x + self._rows(positions).to(x.dtype)


def reject_options(name: str, options: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Raise a ValueError naming any option of scheme ``name`` that is not in ``allowed``.

    Scheme factories (here and in plug-in modules) call it so every scheme words the error alike.
    """
    check_text("name", name, empty=False)
    check_mapping("options", options)
    allowed = check_text_sequence("allowed", allowed)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        allowed_text = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"unknown option(s) {unknown} for scheme {name!r}; allowed: {allowed_text}")
