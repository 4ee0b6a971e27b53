"""A tiny Transformer encoder with a pluggable position scheme.

Every way of telling the model *where* a token is plugs into one of three hooks of a
:class:`PositionScheme`:

* ``embed(x, positions)``: absolute schemes (sinusoidal, learned) add a vector to the
  token embeddings;
* ``rotate(q, k, positions)``: rotary schemes (RoPE) turn queries and keys;
* ``attention_bias(positions)``: bias schemes (ALiBi) add a term to the attention scores.

Schemes are created by name through a registry (:func:`register_scheme`,
:func:`make_position_scheme`, :func:`available_schemes`). This module registers
``"none"``, ``"sinusoidal"`` and ``"learned"``; :mod:`posenc.relative` and
:mod:`posenc.hybrid`, when present, register theirs on first use of the registry.

:class:`TinyTransformer` is a small pre-LayerNorm encoder with its own attention (so the
hooks can act inside it), an optional causal mask, and two ways to combine token and
position vectors: ``"add"`` (the usual sum) or ``"concat"`` (see the class docstring).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from posenc.checks import check_choice, check_positions, check_positive_float, check_positive_int
from posenc.extrapolate import STRATEGIES, lookup
from posenc.learned import INIT_STRATEGIES, LearnedPositionEmbedding
from posenc.sinusoidal import SinusoidalPositionalEncoding

__all__ = [
    "PositionScheme",
    "NoPosition",
    "SinusoidalScheme",
    "LearnedScheme",
    "register_scheme",
    "reject_options",
    "make_position_scheme",
    "available_schemes",
    "MultiHeadSelfAttention",
    "TransformerBlock",
    "TinyTransformer",
    "COMBINE_MODES",
]

#: Ways :class:`TinyTransformer` combines token and position vectors.
COMBINE_MODES: tuple[str, ...] = ("add", "concat")
#: Modules that register more schemes when imported (other chapters' code).
_PLUGIN_MODULES: tuple[str, ...] = ("posenc.relative", "posenc.hybrid")


class PositionScheme(nn.Module):
    """Base class of every position scheme: all three hooks default to "do nothing".

    Attributes:
        max_len: the largest number of positions the scheme can encode, or ``None`` if it
            is defined for any position.
    """

    max_len: int | None = None

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Return ``x`` with position information added.

        Args:
            x: ``(batch, seq_len, d_model)`` token vectors.
            positions: ``(seq_len,)`` or ``(batch, seq_len)`` long positions.

        Returns:
            Tensor with the shape of ``x``.
        """
        return x

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return queries and keys, possibly transformed by position.

        Args:
            q, k: ``(batch, n_heads, seq_len, d_head)``.
            positions: ``(seq_len,)`` or ``(batch, seq_len)`` long positions.
        """
        return q, k

    def attention_bias(self, positions: torch.Tensor) -> torch.Tensor | None:
        """Additive attention-score bias of shape ``(n_heads, seq_len, seq_len)``
        (or ``(batch, n_heads, seq_len, seq_len)``), or ``None`` for no bias."""
        return None

    def table(self, n_positions: int) -> torch.Tensor | None:
        """The vectors ``embed`` adds at positions ``0 .. n_positions - 1``, shape
        ``(n_positions, d_model)``, or ``None`` if the scheme adds no vectors."""
        return None


class NoPosition(PositionScheme):
    """No position information at all (the "bag of tokens" baseline without a causal mask)."""

    def __init__(self, **_: Any) -> None:
        super().__init__()


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
        self, d_model: int, *, base: float = 10000.0, initial_len: int = 64, layout: str = "interleaved"
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = None
        self.encoding = SinusoidalPositionalEncoding(self.d_model, max_len=initial_len, base=base, layout=layout)

    def table(self, n_positions: int) -> torch.Tensor:
        return self.encoding.encoding(torch.arange(check_positive_int("n_positions", n_positions)))

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + self.encoding.encoding(positions).to(device=x.device, dtype=x.dtype)


class LearnedScheme(PositionScheme):
    """A learned absolute position table (:class:`posenc.learned.LearnedPositionEmbedding`).

    Args:
        d_model: width of each position vector.
        max_len: rows in the table (the longest input it was built for).
        init: one of :data:`posenc.learned.INIT_STRATEGIES`.
        extrapolation: ``None`` (positions past the table raise ValueError) or a
            workaround from :mod:`posenc.extrapolate` (``"clip"``, ``"modular"``,
            ``"interpolate"``) used only for positions the table does not have.
            With a workaround the scheme accepts any position, so ``max_len`` is ``None``
            and the table size is ``table_len``.
    """

    def __init__(self, d_model: int, max_len: int, *, init: str = "bert", extrapolation: str | None = None) -> None:
        super().__init__()
        self.embedding = LearnedPositionEmbedding(max_len, d_model, init=init)
        self.table_len = self.embedding.max_len
        self.set_extrapolation(extrapolation)

    def set_extrapolation(self, strategy: str | None) -> None:
        """Switch the workaround used past the table (``None`` restores the hard limit)."""
        if strategy is not None:
            check_choice("extrapolation", strategy, STRATEGIES)
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
        if self.extrapolation is None or top <= self.table_len:
            # Inside the table (or no workaround): the table's own lookup, and its own error
            # past the end (the plain 0..seq_len-1 case gives its most explicit message).
            zeros = self.weight.new_zeros(*pos.shape, self.weight.shape[1])
            if pos.ndim == 1 and torch.equal(pos, torch.arange(pos.numel())):
                return self.embedding(zeros.unsqueeze(0)).squeeze(0)
            return self.embedding(zeros, pos.to(self.weight.device))
        target = top if self.extrapolation == "interpolate" else None
        return lookup(self.weight, pos, self.extrapolation, target_len=target)

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + self._rows(positions).to(x.dtype)


# -- registry --------------------------------------------------------------------------
_REGISTRY: dict[str, Callable[..., PositionScheme]] = {}
_plugins_loaded = False


def register_scheme(name: str, factory: Callable[..., PositionScheme]) -> None:
    """Make a position scheme available by name.

    Args:
        name: the scheme's name, e.g. ``"rope"``; re-registering a name replaces it.
        factory: called as ``factory(*, d_model, n_heads, max_len, **options)`` and
            returning a :class:`PositionScheme`.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}")
    _REGISTRY[name] = factory


def _load_plugins() -> None:
    """Import the modules that register more schemes, if they exist yet."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for module in _PLUGIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:  # the module exists but something it imports is missing
                raise


def available_schemes() -> list[str]:
    """Names of every registered scheme, in registration order."""
    _load_plugins()
    return list(_REGISTRY)


def make_position_scheme(name: str, *, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    """Create a registered scheme by name.

    Args:
        name: one of :func:`available_schemes`.
        d_model: model width.
        n_heads: number of attention heads.
        max_len: the longest input the model is built for (learned tables get this many rows).
        **options: scheme-specific options, e.g. ``init="gpt2"`` or ``extrapolation="clip"``
            for ``"learned"``.
    """
    _load_plugins()
    check_choice("name", name, list(_REGISTRY))
    scheme = _REGISTRY[name](d_model=d_model, n_heads=n_heads, max_len=max_len, **options)
    if not isinstance(scheme, PositionScheme):
        raise TypeError(f"the factory for scheme {name!r} returned {type(scheme).__name__}, not a PositionScheme")
    return scheme


def reject_options(name: str, options: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Raise a ValueError naming any option of scheme ``name`` that is not in ``allowed``.

    Scheme factories (here and in plug-in modules) call it so every scheme words the error alike.
    """
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        allowed_text = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"unknown option(s) {unknown} for scheme {name!r}; allowed: {allowed_text}")


def _make_none(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("none", options, ())
    return NoPosition()


def _make_sinusoidal(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("sinusoidal", options, ("base", "layout"))
    return SinusoidalScheme(d_model, initial_len=max_len, **options)


def _make_learned(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("learned", options, ("init", "extrapolation"))
    init = options.get("init", "bert")
    check_choice("init", init, INIT_STRATEGIES)
    return LearnedScheme(d_model, max_len, init=init, extrapolation=options.get("extrapolation"))


register_scheme("none", _make_none)
register_scheme("sinusoidal", _make_sinusoidal)
register_scheme("learned", _make_learned)


# -- the model -------------------------------------------------------------------------
class MultiHeadSelfAttention(nn.Module):
    """Scaled dot-product self-attention with the scheme's ``rotate`` and bias hooks.

    Args:
        d_model: model width (divisible by ``n_heads``).
        n_heads: number of heads.
        dropout: dropout on the attention weights.
    """

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        scheme: PositionScheme,
        *,
        bias: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Args:
            x: ``(batch, seq_len, d_model)``.
            positions: ``(seq_len,)`` or ``(batch, seq_len)``.
            bias: additive score bias broadcastable to ``(batch, n_heads, seq_len, seq_len)``.
            mask: boolean ``(seq_len, seq_len)``, ``True`` where attention is *blocked*.

        Returns:
            ``(batch, seq_len, d_model)``.
        """
        batch, seq_len, d_model = x.shape
        q, k, v = self.qkv(x).view(batch, seq_len, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        q, k = scheme.rotate(q, k, positions)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if bias is not None:
            scores = scores + bias
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        return self.out((weights @ v).transpose(1, 2).reshape(batch, seq_len, d_model))


class TransformerBlock(nn.Module):
    """Pre-LayerNorm block: ``x + attn(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadSelfAttention(d_model, n_heads, dropout=dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model), nn.Dropout(dropout))
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        scheme: PositionScheme,
        *,
        bias: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        x = x + self.dropout(self.attn(self.norm1(x), positions, scheme, bias=bias, mask=mask))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """A small Transformer encoder that predicts one label per token.

    Args:
        vocab_size: number of input token ids.
        n_outputs: number of output classes per token.
        d_model: model width; n_heads: heads; n_layers: blocks; d_ff: MLP width (``4 * d_model``).
        max_len: the longest input the model is built for (learned tables get this many rows).
        position: a scheme name from :func:`available_schemes`.
        position_options: options for that scheme (e.g. ``{"init": "gpt2"}``).
        causal: if ``True``, position ``i`` attends only to positions ``<= i``.
        dropout: dropout rate in attention and MLP.
        combine: ``"add"`` — ``token_vector + position_vector``, both ``d_model`` wide; or
            ``"concat"`` — ``[token_vector ; position_vector]`` with widths
            ``d_model - d_pos`` and ``d_pos``, so the stream entering the blocks has the same
            width ``d_model`` and every block has exactly the same parameters as with
            ``"add"``; only the embedding tables shrink (the token table by
            ``vocab_size * d_pos`` weights, a learned position table to ``max_len * d_pos``).
            Concatenation needs a scheme that adds vectors (not RoPE/ALiBi-style hooks).
        d_pos: width of the position part for ``combine="concat"`` (default ``d_model // 2``).

        token_init_std: standard deviation of the token embeddings at initialisation.
            The default 1.0 is the scale the paper's ``sqrt(d_model)`` multiplier gives its
            embeddings; BERT and GPT-2 use 0.02 for tokens *and* 0.02 / 0.01 for positions.
            What matters for a learned position table is its scale relative to this one.
    """

    def __init__(
        self,
        vocab_size: int,
        n_outputs: int,
        *,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int | None = None,
        max_len: int = 64,
        position: str = "sinusoidal",
        position_options: dict[str, Any] | None = None,
        causal: bool = False,
        dropout: float = 0.0,
        combine: str = "add",
        d_pos: int | None = None,
        token_init_std: float = 1.0,
    ) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.n_outputs = check_positive_int("n_outputs", n_outputs)
        self.d_model = check_positive_int("d_model", d_model)
        n_heads = check_positive_int("n_heads", n_heads)
        n_layers = check_positive_int("n_layers", n_layers)
        d_ff = 4 * self.d_model if d_ff is None else check_positive_int("d_ff", d_ff)
        self.max_len = check_positive_int("max_len", max_len)
        self.combine = check_choice("combine", combine, COMBINE_MODES)
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.causal = bool(causal)
        self.position_name = position
        options = dict(position_options or {})
        if self.combine == "add":
            if d_pos is not None:
                raise ValueError(f"d_pos is only used with combine='concat', got d_pos={d_pos!r}")
            self.d_pos = self.d_model
            d_token = self.d_model
        else:
            self.d_pos = self.d_model // 2 if d_pos is None else check_positive_int("d_pos", d_pos)
            if self.d_pos >= self.d_model:
                raise ValueError(f"d_pos must be < d_model={self.d_model} for combine='concat', got {self.d_pos}")
            d_token = self.d_model - self.d_pos
        self.token_embedding = nn.Embedding(self.vocab_size, d_token)
        nn.init.normal_(self.token_embedding.weight, std=check_positive_float("token_init_std", token_init_std))
        self.position = make_position_scheme(
            position, d_model=self.d_pos, n_heads=n_heads, max_len=self.max_len, **options
        )
        if self.combine == "concat" and (
            type(self.position).rotate is not PositionScheme.rotate
            or type(self.position).attention_bias is not PositionScheme.attention_bias
        ):
            raise ValueError(
                f"combine='concat' needs a scheme that adds position vectors; {position!r} acts inside attention"
            )
        self.blocks = nn.ModuleList(
            TransformerBlock(self.d_model, n_heads, d_ff, dropout=dropout) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(self.d_model)
        self.head = nn.Linear(self.d_model, self.n_outputs)

    def _positions(self, tokens: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        batch, seq_len = tokens.shape
        if position_ids is None:
            return torch.arange(seq_len, device=tokens.device)
        pos = check_positions("position_ids", position_ids).to(tokens.device)
        if pos.shape not in {(seq_len,), (batch, seq_len)}:
            raise ValueError(
                f"position_ids must have shape ({seq_len},) or ({batch}, {seq_len}), got {tuple(pos.shape)}"
            )
        return pos

    def embed(self, tokens: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Token plus position vectors, ``(batch, seq_len, d_model)``, before the blocks."""
        positions = self._positions(tokens, position_ids)
        x = self.token_embedding(tokens)
        if self.combine == "add":
            return self.position.embed(x, positions)
        # The scheme adds its vector to zeros: that *is* the position vector to concatenate.
        zeros = x.new_zeros(*x.shape[:-1], self.d_pos)
        return torch.cat([x, self.position.embed(zeros, positions)], dim=-1)

    def forward(self, tokens: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Args:
            tokens: ``(batch, seq_len)`` long token ids in ``[0, vocab_size)``.
            position_ids: optional ``(seq_len,)`` or ``(batch, seq_len)`` positions
                (default ``0 .. seq_len - 1``).

        Returns:
            Logits of shape ``(batch, seq_len, n_outputs)``.
        """
        if tokens.ndim != 2:
            raise ValueError(f"tokens must have shape (batch, seq_len), got shape {tuple(tokens.shape)}")
        if tokens.is_floating_point():
            raise TypeError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise ValueError(
                f"tokens must be in [0, {self.vocab_size}), got values in [{int(tokens.min())}, {int(tokens.max())}]"
            )
        positions = self._positions(tokens, position_ids)
        x = self.embed(tokens, positions)
        bias = self.position.attention_bias(positions)
        seq_len = tokens.shape[1]
        mask = None
        if self.causal:
            mask = torch.ones(seq_len, seq_len, dtype=torch.bool, device=tokens.device).triu(1)
        for block in self.blocks:
            x = block(x, positions, self.position, bias=bias, mask=mask)
        return self.head(self.norm(x))
