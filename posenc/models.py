"""A tiny Transformer encoder with a pluggable position scheme.

:class:`TinyTransformer` is a small pre-LayerNorm encoder with its own attention, so a
:class:`posenc.schemes.PositionScheme` can act inside it through any of its three hooks
(add vectors, rotate queries and keys, bias the scores). The scheme is given by name and
created by :func:`posenc.registry.make_position_scheme`. The model has an optional causal
mask, two ways to combine token and position vectors: ``"add"`` (the usual sum) or
``"concat"`` (see the class docstring), and an optional learned anchor token in front of
every input (``bos_token=True``). :func:`reversal_gap` measures whether a model treats a
reversed input as the mirror image of the original.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from posenc.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_mapping,
    check_nonnegative_int,
    check_positions,
    check_positive_float,
    check_positive_int,
    check_real,
    check_tensor,
)
from posenc.registry import available_schemes, make_position_scheme, scheme_spec
from posenc.schemes import PositionScheme, check_hook_positions, check_stream

__all__ = ["MultiHeadSelfAttention", "TransformerBlock", "TinyTransformer", "COMBINE_MODES", "reversal_gap",
           "attention_probabilities"]

#: Ways :class:`TinyTransformer` combines token and position vectors.
COMBINE_MODES: tuple[str, ...] = ("add", "concat")


class MultiHeadSelfAttention(nn.Module):
    """Scaled dot-product self-attention with the scheme's ``rotate`` and bias hooks.

    Args:
        d_model: model width (divisible by ``n_heads``).
        n_heads: number of heads.
        dropout: dropout on the attention weights.
    """

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        d_model, n_heads = check_positive_int("d_model", d_model), check_positive_int("n_heads", n_heads)
        dropout = _check_dropout(dropout)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        #: when True, forward keeps its attention weights in ``last_weights`` (see :func:`attention_probabilities`)
        self.keep_weights = False
        self.last_weights: torch.Tensor | None = None

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
        check_stream("x", x, self.qkv.in_features)
        batch, seq_len, d_model = x.shape
        check_hook_positions(positions, seq_len, batch)
        check_instance("scheme", scheme, PositionScheme, what="a posenc.schemes.PositionScheme")
        if bias is not None:
            check_tensor("bias", bias, floating=True, shape="(n_heads, seq_len, seq_len) or (batch, n_heads, seq_len, "
                                                             "seq_len)")
            if bias.ndim not in (3, 4) or bias.shape[-2:] != (seq_len, seq_len):
                raise ValueError(f"bias must have shape (n_heads, {seq_len}, {seq_len}) or (batch, n_heads, {seq_len}, "
                                 f"{seq_len}), got {tuple(bias.shape)}")
        if mask is not None:
            check_tensor("mask", mask, shape=f"({seq_len}, {seq_len}) of bools")
            if mask.dtype != torch.bool or mask.shape != (seq_len, seq_len):
                raise ValueError(f"mask must be a bool tensor of shape ({seq_len}, {seq_len}), got {mask.dtype} "
                                 f"{tuple(mask.shape)}")
        q, k, v = self.qkv(x).view(batch, seq_len, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        q, k = scheme.rotate(q, k, positions)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if bias is not None:
            # in the scores' dtype: ALiBi's bias is float32, a float16 or bfloat16 model adds it in its own
            # precision (for float32 this is the bias itself)
            scores = scores + bias.to(scores.dtype)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        if self.keep_weights:
            self.last_weights = weights.detach()
        return self.out((weights @ v).transpose(1, 2).reshape(batch, seq_len, d_model))


class TransformerBlock(nn.Module):
    """Pre-LayerNorm block: ``x + attn(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        d_model, n_heads = check_positive_int("d_model", d_model), check_positive_int("n_heads", n_heads)
        d_ff, dropout = check_positive_int("d_ff", d_ff), _check_dropout(dropout)
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
        check_stream("x", x, self.norm1.normalized_shape[0])
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
        bos_token: if ``True``, one learned vector (an anchor, like BERT's ``[CLS]``) is put
            in front of every input at position 0, the tokens move to positions ``1 .. seq_len``
            (given ``position_ids`` are shifted by one), and the anchor's own output is
            dropped, so the logits keep the shape ``(batch, seq_len, n_outputs)``. The scheme
            is built for ``max_len + 1`` positions so an input of ``max_len`` tokens still
            fits. Why: a model whose only position signal is the distance ``|i - j|`` (ALiBi
            without a causal mask) cannot tell an input from its reverse (see
            :func:`reversal_gap`); an anchor at one end gives every token a distance to the
            start. This is a model option, not a scheme option, because no scheme hook can
            add a token; it is off by default, and when off the model, its parameters and
            its random initialisation are exactly what they were before the option existed
            (the anchor's weights are drawn after all others).
            The anchor vector has the token width (``d_model``, or ``d_model - d_pos`` with
            ``combine="concat"``) and the init std of the token embeddings.

    Options that depend on the model come from the scheme's registry entry
    (:attr:`posenc.registry.SchemeSpec.context_options`) unless given: for
    ``position="t5_bias"``, ``bidirectional`` defaults to ``not causal`` (T5's encoder
    buckets without a mask, its decoder buckets with one).
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
        bos_token: bool = False,
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
        dropout = _check_dropout(dropout)
        self.causal = check_bool("causal", causal)
        self.position_name = check_choice("position", position, available_schemes())
        if position_options is not None:
            check_mapping("position_options", position_options)
        # Options that depend on the model (T5's bucket direction follows the mask) come from the registry.
        options = scheme_spec(position).options_for(causal=self.causal, options=position_options)
        if not isinstance(bos_token, bool):
            raise TypeError(f"bos_token must be True or False, got {bos_token!r} of type {type(bos_token).__name__}")
        self.bos_token = bos_token
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
        # With an anchor the last of max_len tokens sits at position max_len: one more row.
        scheme_len = self.max_len + 1 if self.bos_token else self.max_len
        try:
            self.position = make_position_scheme(
                position, d_model=self.d_pos, n_heads=n_heads, max_len=scheme_len, **options
            )
        except (TypeError, ValueError) as error:
            if self.combine != "concat":
                raise
            # the scheme is built at the position part's width: say so, or its "d_model" misleads
            raise type(error)(f"{error} (with combine='concat' the scheme {position!r} is built at the width of "
                              f"the position part, d_pos={self.d_pos}, of d_model={self.d_model})") from None
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
        self.bos: nn.Parameter | None = None
        if self.bos_token:
            # Created last so every other weight gets the same random draw as without an anchor.
            self.bos = nn.Parameter(torch.empty(d_token))
            nn.init.normal_(self.bos, std=token_init_std)

    def _positions(self, tokens: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        _check_tokens(tokens, self.vocab_size)
        batch, seq_len = tokens.shape
        if position_ids is None:
            return torch.arange(seq_len, device=tokens.device)
        pos = check_positions("position_ids", position_ids).to(tokens.device)
        if pos.shape not in {(seq_len,), (batch, seq_len)}:
            raise ValueError(
                f"position_ids must have shape ({seq_len},) or ({batch}, {seq_len}), got {tuple(pos.shape)}"
            )
        return pos

    @staticmethod
    def _with_anchor(positions: torch.Tensor) -> torch.Tensor:
        """Positions with the anchor at 0 in front: ``[0, p_0 + 1, ..., p_{n-1} + 1]`` (per batch row if 2-D)."""
        zero = positions.new_zeros(*positions.shape[:-1], 1)
        return torch.cat([zero, positions + 1], dim=-1)

    def embed(self, tokens: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Token plus position vectors, ``(batch, seq_len, d_model)``, before the blocks.

        With ``bos_token=True`` the anchor comes first: ``(batch, 1 + seq_len, d_model)``,
        at positions ``0, p_0 + 1, ..., p_{n-1} + 1``.
        """
        positions = self._positions(tokens, position_ids)
        x = self.token_embedding(tokens)
        if self.bos is not None:
            anchor = self.bos.to(x.dtype).expand(x.shape[0], 1, -1)
            x = torch.cat([anchor, x], dim=1)
            positions = self._with_anchor(positions)
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
        positions = self._positions(tokens, position_ids)
        x = self.embed(tokens, positions)
        if self.bos is not None:
            positions = self._with_anchor(positions)
        bias = self.position.attention_bias(positions)
        seq_len = x.shape[1]
        mask = None
        if self.causal:
            mask = torch.ones(seq_len, seq_len, dtype=torch.bool, device=tokens.device).triu(1)
        for block in self.blocks:
            x = block(x, positions, self.position, bias=bias, mask=mask)
        logits = self.head(self.norm(x))
        return logits[:, 1:] if self.bos is not None else logits


def _check_dropout(dropout: object) -> float:
    return check_real("dropout", dropout, low=0.0, high=1.0, high_open=True)


def _check_tokens(tokens: object, vocab_size: int) -> None:
    """Token ids: an integer ``(batch, seq_len)`` tensor with every id in ``[0, vocab_size)``."""
    if not isinstance(tokens, torch.Tensor):
        check_tensor("tokens", tokens, shape="(batch, seq_len) of token ids")
    assert isinstance(tokens, torch.Tensor)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (batch, seq_len), got shape {tuple(tokens.shape)}")
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        raise ValueError(
            f"tokens must be in [0, {vocab_size}), got values in [{int(tokens.min())}, {int(tokens.max())}]"
        )


def reversal_gap(model: TinyTransformer, tokens: torch.Tensor) -> float:
    """How far a model is from treating a reversed input as the mirror image of the original.

    ``gap = max |f(reverse(x)) - reverse(f(x))|`` over every batch row, position and logit,
    where ``reverse`` flips the sequence axis and ``f`` is the model (in eval mode, no
    gradients; its training mode is restored afterwards).

    Why it matters: without a causal mask, attention is permutation-equivariant, and a
    position bias of the form ``b(|i - j|)`` (ALiBi's encoder bias, or no position signal at
    all) is unchanged by reversal (``|(n-1-i) - (n-1-j)| = |i - j|``), so the gap is 0 up to
    float error. Then for any input that reads the same both ways, position ``i`` and
    position ``n - 1 - i`` get identical logits: the model can never learn labels that are
    not reverse-symmetric (e.g. "mark the first token"). Direction-aware signals (T5's
    bidirectional buckets, RoPE, absolute vectors, a causal mask, or ``bos_token=True``)
    make the gap large. Default positions ``0 .. seq_len - 1`` are used.

    Args:
        model: a :class:`TinyTransformer`.
        tokens: ``(batch, seq_len)`` token ids.

    Returns:
        The gap as a Python float (``0.0`` means exactly mirror-equivariant).
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2:
        raise ValueError(f"tokens must be a tensor of shape (batch, seq_len), got {getattr(tokens, 'shape', tokens)!r}")
    if tokens.numel() == 0:
        raise ValueError(f"tokens must hold at least one token, got shape {tuple(tokens.shape)}")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            forward = model(tokens)
            backward = model(tokens.flip(1))
    finally:
        model.train(was_training)
    return float((backward - forward.flip(1)).abs().max())


def attention_probabilities(model: TinyTransformer, tokens: torch.Tensor, *, layer: int = 0) -> torch.Tensor:
    """The attention weights (after the softmax) of one layer for an input.

    Args:
        model: a :class:`TinyTransformer` (run in eval mode, without gradients; its mode is restored).
        tokens: ``(batch, seq_len)`` token ids.
        layer: ``0 <= layer < n_layers``.

    Returns:
        ``(batch, n_heads, seq_len, seq_len)``: row ``i`` is how query ``i`` spreads over the keys
        (with ``bos_token=True`` the anchor is included, so ``seq_len + 1``).
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    layer = check_nonnegative_int("layer", layer)
    if layer >= len(model.blocks):
        raise ValueError(f"layer must be an int in [0, {len(model.blocks)}), got {layer!r}")
    _check_tokens(tokens, model.vocab_size)
    attention = model.blocks[layer].attn
    assert isinstance(attention, MultiHeadSelfAttention)
    was_training = model.training
    model.eval()
    attention.keep_weights = True
    try:
        with torch.no_grad():
            model(tokens)
        assert attention.last_weights is not None
        return attention.last_weights
    finally:
        attention.keep_weights = False
        attention.last_weights = None
        model.train(was_training)
