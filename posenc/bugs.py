"""Spot the bug: eleven plausible pieces of position code, each with one bug reported in public trackers.

Every bug comes as three things:

* the **buggy implementation**, short and plausible, written the way the reported code was;
* its **fix**: a small function here, or the :mod:`posenc` function that already does it right;
* a **check**: a function that takes an implementation, runs it, and raises an AssertionError
  with a message that says what is wrong when the implementation has the bug. It passes on
  the fix. Checks compare against :mod:`posenc`'s reference code (the sinusoidal table, RoPE
  attention, ALiBi's slopes), so a check tests behaviour, never the text of the code.

:func:`check_fails` runs a check that is expected to fail and returns its message (it raises
if the check passes), so a notebook can show the failure without stopping. :data:`BUGS` lists
the eleven cases.

The bugs:

1. :func:`sinusoid_table_channel_exponent`: the exponent ``2i / d`` with ``i`` the channel,
   not the pair (fix: :func:`sinusoid_table_recipe`).
2. :func:`sinusoid_table_concatenated`: all sines then all cosines, given to code that expects
   the paper's interleaved order (fix: :func:`sinusoid_table_concatenated_fixed`).
3. :func:`embed_without_scale`: token vectors added to the encoding without the
   ``sqrt(d_model)`` factor (fix: :func:`embed_with_scale`).
4. :func:`sinusoid_table_recipe`: the common recipe, which breaks for an odd ``d_model``
   (fix: :func:`sinusoid_table_any_width`).
5. :func:`add_positions_from_cache`: a cached table read by slicing, past its length
   (fix: :func:`add_positions_from_cache_fixed`).
6. :func:`half_split_scores`: half-split RoPE run on weights trained with interleaved pairs
   (fix: :func:`half_split_scores_fixed`).
7. :func:`rope_cos_sin_model_dtype`: RoPE angles computed in bfloat16
   (fix: :func:`posenc.rope_practice.rope_cos_sin`).
8. :func:`generate_dynamic_ntk_cached`: dynamic NTK speeds recomputed as a KV cache grows,
   with the cached keys left at older speeds (fix: :func:`generate_dynamic_ntk_fixed`).
9. :func:`alibi_slopes_geometric`: ALiBi's geometric slopes for any head count
   (fix: :func:`posenc.relative.alibi_slopes`).
10. :func:`rotary_inverse_frequencies`: RoPE's frequencies built from a model config's base and
    head width, its scaling ignored (fix: :func:`rotary_inverse_frequencies_fixed`, which reads
    the whole config with :func:`posenc.rope_config.rope_settings`).
11. :func:`generate_longrope_cached`: LongRoPE's short-to-long switch with a KV cache whose keys
    keep the short factors' rotations (fix: :func:`generate_longrope_fixed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from posenc.checks import (
    check_callable,
    check_even_int,
    check_int,
    check_nonnegative_int,
    check_positive_int,
    check_tensor,
)
from posenc.relative import alibi_slopes, apply_rope, rope_inverse_frequencies
from posenc.rope_config import check_rope_frequencies, rope_settings
from posenc.rope_practice import (
    permute_rotary_weight,
    rope_attention,
    rope_attention_scores,
    rope_cos_sin,
)
from posenc.rope_scaling import LongRopeScaling, RopeScaling
from posenc.sinusoidal import (
    EVEN_WIDTH,
    SinusoidalPositionalEncoding,
    layout_permutation,
    rotation_matrix,
    sinusoidal_frequencies,
    sinusoidal_table,
)

__all__ = [
    "BUGS",
    "CONFIG_CASES",
    "LONGROPE_D_HEAD",
    "LONGROPE_PROMPT_LEN",
    "LONGROPE_TOKENS",
    "LONGROPE_TRAIN_LEN",
    "CACHE_REQUESTS",
    "CACHE_ROWS",
    "CACHE_WIDTH",
    "NTK_D_HEAD",
    "NTK_PROMPT_LEN",
    "NTK_TOKENS",
    "NTK_TRAIN_LEN",
    "Bug",
    "add_positions_from_cache",
    "add_positions_from_cache_fixed",
    "alibi_slopes_geometric",
    "cache_rows_report",
    "check_alibi_slopes",
    "check_cached_table",
    "check_dynamic_ntk_cache",
    "check_config_scaling",
    "check_embedding_scale",
    "check_longrope_cache",
    "config_scaling_report",
    "generate_longrope_cached",
    "generate_longrope_fixed",
    "longrope_case",
    "longrope_gaps",
    "rotary_inverse_frequencies",
    "rotary_inverse_frequencies_fixed",
    "check_fails",
    "check_interleaved_layout",
    "check_odd_width",
    "check_rope_angle_precision",
    "check_rope_layout_conversion",
    "check_sinusoid_frequencies",
    "cos_sin_error",
    "dynamic_ntk_gaps",
    "embed_with_scale",
    "embed_without_scale",
    "generate_dynamic_ntk_cached",
    "generate_dynamic_ntk_fixed",
    "half_split_scores",
    "half_split_scores_fixed",
    "interleaved_reference_scores",
    "pair_radius_error",
    "rope_cos_sin_model_dtype",
    "rope_layout_gaps",
    "shift_error",
    "sinusoid_table_any_width",
    "sinusoid_table_channel_exponent",
    "sinusoid_table_concatenated",
    "sinusoid_table_concatenated_fixed",
    "sinusoid_table_recipe",
    "to_interleaved",
    "token_position_ratio",
]

#: A check: runs an implementation and raises AssertionError if it shows the bug.
Check = Callable[[Any], Any]


def _check_callable(name: str, value: Any) -> Callable[..., Any]:
    """An implementation to test must be a function."""
    return check_callable(name, value)


def _check_table(table: Any) -> torch.Tensor:
    """A paper-layout table: a floating-point ``(seq_len, d_model)`` tensor with an even ``d_model``."""
    check_tensor("table", table, ndim=2, floating=True, shape="(seq_len, d_model)")
    if table.shape[1] % 2:
        raise ValueError(f"table must have an even d_model (sin/cos pairs), got shape {tuple(table.shape)}")
    return table


def _require(condition: bool, message: str) -> None:
    """Raise AssertionError(message) unless ``condition``: an ``assert`` that ``python -O`` cannot strip."""
    if not condition:
        raise AssertionError(message)


def _name(obj: Any) -> str:
    return str(getattr(obj, "__name__", repr(obj)))


def check_fails(check: Check, implementation: Any) -> str:
    """Run ``check`` on an implementation that should fail it; return the check's message.

    Only an AssertionError counts as the check failing: any other exception (a broken check,
    a bad argument) propagates.

    Raises:
        AssertionError: if the check passes, i.e. it does not expose the bug it was written for.
    """
    _check_callable("check", check)
    _check_callable("implementation", implementation)  # every check of this module tests a function
    try:
        check(implementation)
    except AssertionError as error:
        return str(error)
    raise AssertionError(f"{_name(check)} passed on {_name(implementation)}: the check was expected to expose a bug")


# -- 1. the exponent per channel instead of per pair ---------------------------------------------
def sinusoid_table_channel_exponent(seq_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table, PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...).

    Returns:
        float32 ``(seq_len, d_model)``.
    """
    position = torch.arange(seq_len, dtype=torch.float32)[:, None]
    i = torch.arange(d_model, dtype=torch.float32)
    angles = position / 10000.0 ** (2 * i / d_model)
    table = torch.empty(seq_len, d_model)
    table[:, 0::2] = torch.sin(angles[:, 0::2])
    table[:, 1::2] = torch.cos(angles[:, 1::2])
    return table


def sinusoid_table_recipe(seq_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table as most tutorials write it (the PyTorch tutorial, the Annotated Transformer).

    Returns:
        float32 ``(seq_len, d_model)``.
    """
    position = torch.arange(seq_len, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(seq_len, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


def pair_radius_error(table: torch.Tensor) -> float:
    """Largest ``|sin^2 + cos^2 - 1|`` over the (channel 2i, channel 2i+1) pairs of a paper-layout table.

    Each pair of the paper's table is one point on the unit circle (a sine and a cosine of the
    same angle), so this is 0 up to rounding; it is not when a pair's two channels were given
    different frequencies.

    Args:
        table: ``(seq_len, d_model)`` with ``d_model`` even.
    """
    table = _check_table(table)
    pairs = table[:, 0::2].double() ** 2 + table[:, 1::2].double() ** 2
    return float((pairs - 1.0).abs().max())


def check_sinusoid_frequencies(build: Callable[[int, int], torch.Tensor]) -> str:
    """Check a table builder ``build(seq_len, d_model)`` against the paper's formula.

    Compares a 64 x 16 table with :func:`posenc.sinusoidal.sinusoidal_table` (tolerance 1e-5)
    and reports the first wrong channel and how far its pairs are from the unit circle.

    Returns:
        a one-line summary when the table is right.
    """
    _check_callable("build", build)
    seq_len, d_model = 64, 16
    table = build(seq_len, d_model)
    _require(table.shape == (seq_len, d_model), f"expected shape ({seq_len}, {d_model}), got {tuple(table.shape)}")
    reference = sinusoidal_table(seq_len, d_model)
    error = (table.double() - reference.double()).abs().amax(dim=0)
    if float(error.max()) > 1e-5:
        channel = int((error > 1e-5).nonzero()[0])
        raise AssertionError(
            f"channel {channel} (pair {channel // 2}) differs from the paper's formula by up to "
            f"{float(error.max()):.2f}; "
            f"the (sin, cos) pairs are off the unit circle by up to {pair_radius_error(table):.2f}: the sine and "
            f"the cosine of a pair do not share one frequency"
        )
    return f"matches the paper's table to {float(error.max()):.1e} ({seq_len} positions x {d_model} channels)"


# -- 2. concatenated where interleaved is expected ----------------------------------------------
def sinusoid_table_concatenated(seq_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table for a model whose code and weights use the paper's channel order.

    Returns:
        float32 ``(seq_len, d_model)``.
    """
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * sinusoidal_frequencies(d_model)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1).float()


def to_interleaved(table: torch.Tensor) -> torch.Tensor:
    """Reorder a concatenated table (all sines, then all cosines) into the paper's order.

    The inverse of :func:`posenc.sinusoidal.layout_permutation`: ``(..., d_model)`` in,
    ``(..., d_model)`` out, the same numbers in other channels.
    """
    if not isinstance(table, torch.Tensor) or table.ndim < 1:
        raise ValueError(f"table must be a tensor of shape (..., d_model), got {getattr(table, 'shape', table)!r}")
    return table[..., layout_permutation(table.shape[-1]).argsort()]


def sinusoid_table_concatenated_fixed(seq_len: int, d_model: int) -> torch.Tensor:
    """:func:`sinusoid_table_concatenated` converted at the boundary to the order its consumer expects."""
    return to_interleaved(sinusoid_table_concatenated(seq_len, d_model))


def shift_error(table: torch.Tensor, k: int) -> float:
    """Largest ``|PE[pos + k] - M_k PE[pos]|`` with ``M_k`` the paper-layout shift matrix.

    :func:`posenc.sinusoidal.rotation_matrix` rotates each (channel 2i, channel 2i+1) pair: what
    code written for the paper's layout assumes. 0 up to rounding for a paper-layout table.

    Args:
        table: ``(seq_len, d_model)`` rows for positions ``0 .. seq_len - 1`` (``seq_len > k``).
        k: the shift, ``0 <= k < seq_len``.
    """
    table = _check_table(table)
    k = check_int("k", k, low=0, high=table.shape[0] - 1)
    shift = rotation_matrix(k, table.shape[-1])
    rows = table.double()
    return float((rows[k:] - rows[:-k] @ shift.T).abs().max())


def check_interleaved_layout(build: Callable[[int, int], torch.Tensor]) -> str:
    """Check that ``build(seq_len, d_model)`` gives the paper's channel order (sin, cos, sin, cos, ...).

    Two tests, on a 64 x 16 table: the shift ``PE[pos + k] = M_k PE[pos]`` of the paper's layout
    holds (k = 1 and 5), and the table equals :func:`posenc.sinusoidal.sinusoidal_table`.
    """
    _check_callable("build", build)
    seq_len, d_model = 64, 16
    table = build(seq_len, d_model)
    _require(table.shape == (seq_len, d_model), f"expected shape ({seq_len}, {d_model}), got {tuple(table.shape)}")
    concatenated = sinusoidal_table(seq_len, d_model, layout="concatenated")
    layout_hint = (" The table is the concatenated layout (all sines, then all cosines)."
                   if torch.allclose(table.float(), concatenated, atol=1e-5) else "")
    for k in (1, 5):
        error = shift_error(table, k)
        _require(error < 1e-5, (
            f"PE[pos + {k}] != M_{k} PE[pos] for the paper's pair-wise rotation M_{k}: off by up to {error:.2f}; "
            f"code written for the interleaved order reads channels (2i, 2i+1) as one (sin, cos) pair.{layout_hint}"
        ))
    error_ref = float((table.double() - sinusoidal_table(seq_len, d_model).double()).abs().max())
    _require(error_ref < 1e-5, f"the table differs from the paper's interleaved table by up to {error_ref:.2f}")
    return f"paper layout: the pair-wise shift holds to {max(shift_error(table, 1), shift_error(table, 5)):.1e}"


# -- 3. the sqrt(d_model) scaling left out ----------------------------------------------------------
def embed_without_scale(
    token_ids: torch.Tensor, embedding: nn.Embedding, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """Input vectors of a Transformer: token embedding plus the sinusoidal encoding.

    Args:
        token_ids: ``(seq_len,)`` integer ids.
        embedding: the token table, ``embedding_dim = d_model``.
        positions: ``(seq_len,)`` positions, default ``0 .. seq_len - 1``.

    Returns:
        ``(seq_len, d_model)``.
    """
    if positions is None:
        positions = torch.arange(token_ids.shape[-1])
    return embedding(token_ids) + sinusoidal_table(None, embedding.embedding_dim, positions=positions)


def embed_with_scale(
    token_ids: torch.Tensor, embedding: nn.Embedding, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """As :func:`embed_without_scale`, with the token vectors multiplied by ``sqrt(d_model)`` (Vaswani et al., 3.4)."""
    if positions is None:
        positions = torch.arange(token_ids.shape[-1])
    d_model = embedding.embedding_dim
    return embedding(token_ids) * math.sqrt(d_model) + sinusoidal_table(None, d_model, positions=positions)


def token_position_ratio(
    embed: Callable[..., torch.Tensor], *, d_model: int = 512, vocab_size: int = 1000, samples: int = 256,
    max_position: int = 512, seed: int = 0,
) -> float:
    """How far a different token moves an input vector, relative to a different position.

    Builds a token table initialised with standard deviation ``d_model ** -0.5`` (fairseq's
    ``Embedding``), draws pairs of distinct tokens ``a, b`` and of distinct positions ``p, q``
    below ``max_position``, and returns

        median ||x(a, p) - x(b, p)||  /  median ||x(a, p) - x(a, q)||

    where ``x = embed(token_ids, embedding, positions)``. Below 1, the position signal
    dominates: two different tokens at one position are closer than one token at two positions.
    """
    _check_callable("embed", embed)
    d_model = check_even_int("d_model", d_model, why=EVEN_WIDTH)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    samples, max_position = check_positive_int("samples", samples), check_positive_int("max_position", max_position)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    embedding = nn.Embedding(vocab_size, d_model)
    with torch.no_grad():
        embedding.weight.normal_(0.0, d_model**-0.5, generator=generator)
    a = torch.randint(vocab_size, (samples,), generator=generator)
    b = (a + torch.randint(1, vocab_size, (samples,), generator=generator)) % vocab_size
    p = torch.randint(max_position, (samples,), generator=generator)
    q = (p + torch.randint(1, max_position, (samples,), generator=generator)) % max_position
    with torch.no_grad():
        x_ap, x_bp, x_aq = embed(a, embedding, p), embed(b, embedding, p), embed(a, embedding, q)
    token_moves = (x_ap - x_bp).norm(dim=-1).median()
    position_moves = (x_ap - x_aq).norm(dim=-1).median()
    return float(token_moves / position_moves)


def check_embedding_scale(embed: Callable[..., torch.Tensor]) -> str:
    """Check that tokens are not drowned by positions: :func:`token_position_ratio` >= 1 at ``d_model = 512``."""
    ratio = token_position_ratio(embed)
    _require(ratio >= 1.0, (
        f"a different token moves the input vector {ratio:.3f} times as far as a different position "
        f"(d_model = 512, token embeddings at std d_model^-1/2): the position signal dominates the token signal"
    ))
    return f"a different token moves the input {ratio:.2f} times as far as a different position"


# -- 4. an odd d_model ---------------------------------------------------------------------------
def sinusoid_table_any_width(seq_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table for any width: for an odd ``d_model``, the table of width ``d_model - 1``
    followed by one all-zero channel (the rule of tensor2tensor and fairseq)."""
    return sinusoidal_table(seq_len, d_model, odd="pad")


def check_odd_width(build: Callable[[int, int], torch.Tensor]) -> str:
    """Check ``build(seq_len, d_model)`` at odd widths (7 and 9).

    Accepted: a ValueError that names ``d_model``, or a ``(seq_len, d_model)`` table whose first
    ``d_model - 1`` channels are the paper's table of that even width and whose last channel is
    zero (the rule of tensor2tensor and fairseq). Not accepted: torch's own error from inside the
    code, a table of another shape, or a last channel holding anything else.
    """
    _check_callable("build", build)
    seq_len = 16
    for d_model in (7, 9):
        try:
            table = build(seq_len, d_model)
        except ValueError as error:
            _require("d_model" in str(error), f"d_model={d_model}: a ValueError that does not name d_model: {error}")
            continue
        except (RuntimeError, IndexError) as error:
            first_line = str(error).splitlines()[0]
            raise AssertionError(
                f"d_model={d_model}: torch's own {type(error).__name__} from inside the table code "
                f"({first_line}) instead of a table or a clear ValueError"
            ) from None
        _require(table.shape == (seq_len, d_model), (
            f"d_model={d_model}: expected shape ({seq_len}, {d_model}), got {tuple(table.shape)}"
        ))
        even = sinusoidal_table(seq_len, d_model - 1)
        error_even = float((table[:, :-1].double() - even.double()).abs().max())
        _require(error_even < 1e-5, f"d_model={d_model}: the first {d_model - 1} channels are off by {error_even:.2f}")
        last = float(table[:, -1].abs().max())
        _require(last == 0.0, f"d_model={d_model}: the last channel holds values up to {last:.2f}, not zero padding")
    return "odd widths: the even table plus one zero channel, or a clear ValueError"


# -- 5. a cached table read past its end -------------------------------------------------------------
def add_positions_from_cache(x: torch.Tensor, cache: SinusoidalPositionalEncoding, start: int) -> torch.Tensor:
    """Add the cached position vectors to ``x``, the tokens at positions ``start .. start + n - 1``.

    Args:
        x: ``(n, d_model)`` token vectors (``n = 1`` for one generated token).
        cache: the model's sinusoidal encoding, whose ``table`` buffer holds the rows computed so far.
        start: position of the first row of ``x``.

    Returns:
        ``(n, d_model)``.
    """
    return x + cache.table[start : start + x.shape[0]]


def add_positions_from_cache_fixed(x: torch.Tensor, cache: SinusoidalPositionalEncoding, start: int) -> torch.Tensor:
    """As :func:`add_positions_from_cache`, through the cache's accessor, which grows the table on demand."""
    return x + cache.encoding(torch.arange(start, start + x.shape[0]))


#: Rows and width of the cached table in the cache check.
CACHE_ROWS, CACHE_WIDTH = 16, 8
#: (start, number of tokens) the cache check asks for: inside the cache, one token just past its
#: end (a generation step), a chunk that straddles the end, a chunk far past it.
CACHE_REQUESTS: tuple[tuple[int, int], ...] = ((0, 4), (16, 1), (14, 4), (40, 3))


def cache_rows_report(add: Callable[..., torch.Tensor]) -> list[tuple[int, int, str]]:
    """What ``add(x, cache, start)`` returns for each request of the cache check, on a fresh 16-row cache.

    Returns:
        ``[(start, n, outcome)]`` where outcome is the result's shape, or the error it raised.
    """
    _check_callable("add", add)
    cache = SinusoidalPositionalEncoding(CACHE_WIDTH, max_len=CACHE_ROWS)
    report = []
    for start, n in CACHE_REQUESTS:
        try:
            out = add(torch.zeros(n, CACHE_WIDTH), cache, start)
            outcome = f"shape {tuple(out.shape)}"
        except (RuntimeError, IndexError, ValueError) as error:
            outcome = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        report.append((start, n, outcome))
    return report


def check_cached_table(add: Callable[..., torch.Tensor]) -> str:
    """Check ``add(x, cache, start)`` inside and past the end of a 16-row cached table.

    Each result must have the shape of ``x`` and the rows :func:`posenc.sinusoidal.sinusoidal_table`
    gives for those positions; a clear ValueError naming the limit is also accepted past the end.
    Fewer rows than asked for, or torch's broadcasting error, fail.
    """
    _check_callable("add", add)
    cache = SinusoidalPositionalEncoding(CACHE_WIDTH, max_len=CACHE_ROWS)
    for start, n in CACHE_REQUESTS:
        x = torch.zeros(n, CACHE_WIDTH)
        try:
            out = add(x, cache, start)
        except ValueError:
            continue
        except RuntimeError as error:
            raise AssertionError(
                f"positions {start}..{start + n - 1} with a {CACHE_ROWS}-row cache: torch's error "
                f"({str(error).splitlines()[0]}) instead of the rows or a clear ValueError"
            ) from None
        _require(out.shape == x.shape, (
            f"positions {start}..{start + n - 1} with a {CACHE_ROWS}-row cache: a result of shape "
            f"{tuple(out.shape)} for input {tuple(x.shape)}, silently: the slice of the cached table "
            f"returned {max(0, min(CACHE_ROWS, start + n) - start)} rows"
        ))
        error_rows = float((out - sinusoidal_table(n, CACHE_WIDTH, offset=start)).abs().max())
        _require(error_rows < 1e-6, f"positions {start}..{start + n - 1}: wrong rows (off by {error_rows:.2f})")
    return "right rows inside and past the cached length"


# -- 6. half-split RoPE on weights trained with interleaved pairs --------------------------------------
def half_split_scores(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor) -> torch.Tensor:
    """Attention logits of one RoPE head loaded into half-split code (Hugging Face style).

    Args:
        x: ``(seq_len, d_in)`` inputs at positions ``0 .. seq_len - 1``.
        w_q, w_k: ``(d_head, d_in)`` projections of a checkpoint trained with interleaved RoPE
            (Meta's LLaMA code).

    Returns:
        ``(seq_len, seq_len)``.
    """
    positions = torch.arange(x.shape[0])
    return rope_attention_scores(x @ w_q.T, x @ w_k.T, positions, layout="half")


def half_split_scores_fixed(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor) -> torch.Tensor:
    """As :func:`half_split_scores`, with the q/k rows permuted for the half-split layout on loading."""
    w_q = permute_rotary_weight(w_q, 1, to="half")
    w_k = permute_rotary_weight(w_k, 1, to="half")
    positions = torch.arange(x.shape[0])
    return rope_attention_scores(x @ w_q.T, x @ w_k.T, positions, layout="half")


def interleaved_reference_scores(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor) -> torch.Tensor:
    """The logits of the head as trained: interleaved RoPE, the weights as they are. ``(seq_len, seq_len)``."""
    check_tensor("x", x, ndim=2, floating=True, shape="(seq_len, d_in)")
    for name, weight in (("w_q", w_q), ("w_k", w_k)):
        check_tensor(name, weight, ndim=2, floating=True, shape=f"(d_head, d_in={x.shape[1]})")
        if weight.shape[1] != x.shape[1] or weight.dtype != x.dtype:
            raise ValueError(f"{name} must have shape (d_head, {x.shape[1]}) and x's dtype {x.dtype}, got "
                             f"{tuple(weight.shape)} {weight.dtype}")
    positions = torch.arange(x.shape[0])
    return rope_attention_scores(x @ w_q.T, x @ w_k.T, positions, layout="interleaved")


def _layout_case(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    seq_len, d_in, d_head = 12, 16, 8
    x = torch.randn(seq_len, d_in, generator=generator, dtype=torch.float64)
    w_q = torch.randn(d_head, d_in, generator=generator, dtype=torch.float64)
    w_k = torch.randn(d_head, d_in, generator=generator, dtype=torch.float64)
    return x, w_q, w_k


def rope_layout_gaps(scores: Callable[..., torch.Tensor]) -> tuple[torch.Tensor, float]:
    """Per query position, the largest ``|scores(x, w_q, w_k) - interleaved logits|`` over causal keys.

    A random head (12 positions, ``d_in = 16``, ``d_head = 8``, float64), compared with
    :func:`interleaved_reference_scores`.

    Returns:
        ``(gaps, scale)``: float64 ``(12,)`` and the largest reference logit in absolute value.
    """
    _check_callable("scores", scores)
    x, w_q, w_k = _layout_case()
    got, reference = scores(x, w_q, w_k), interleaved_reference_scores(x, w_q, w_k)
    gaps = ((got - reference).abs() * torch.ones_like(got).tril()).amax(dim=1)  # keys at or before the query
    return gaps, float(reference.abs().max())


def check_rope_layout_conversion(scores: Callable[..., torch.Tensor]) -> str:
    """Check that ``scores(x, w_q, w_k)`` reproduces the interleaved model's logits (see :func:`rope_layout_gaps`).

    The message gives the first query position whose logits differ.
    """
    gap, scale = rope_layout_gaps(scores)
    if float(gap.max()) > 1e-9 * scale:
        first = int((gap > 1e-9 * scale).nonzero()[0])
        raise AssertionError(
            f"the converted head's logits agree with the trained (interleaved) head at position 0 "
            f"(gap {float(gap[0]):.1e}) but not from query position {first} on: off by up to "
            f"{float(gap.max()):.2f} for logits of size up to {scale:.2f}"
        )
    return f"the logits match the interleaved head to {float(gap.max()):.1e}"


# -- 7. RoPE angles in bfloat16 -----------------------------------------------------------------------------
def rope_cos_sin_model_dtype(
    positions: torch.Tensor, d_head: int, *, base: float = 10000.0, dtype: torch.dtype = torch.bfloat16
) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE's cosine and sine tables for ``positions``, built in the model's dtype.

    Returns:
        ``(cos, sin)``, each float32 ``(n, d_head // 2)``.
    """
    inv_freq = 1.0 / base ** (torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
    inv_freq = inv_freq.to(dtype)  # a buffer: model.to(dtype) casts it with the weights
    angles = torch.outer(torch.as_tensor(positions).to(dtype), inv_freq)
    return angles.cos().float(), angles.sin().float()


def cos_sin_error(
    cos_sin: Callable[..., tuple[torch.Tensor, torch.Tensor]], positions: torch.Tensor, d_head: int
) -> torch.Tensor:
    """Per-position largest ``|cos - cos_ref|`` or ``|sin - sin_ref|`` of ``cos_sin(positions, d_head)``.

    The reference is the formula in float64 throughout: angles ``position * theta_i``, their
    cosines and sines, nothing rounded to float32.

    Returns:
        float64 ``(n,)``.
    """
    _check_callable("cos_sin", cos_sin)
    cos, sin = cos_sin(positions, d_head)
    angles = torch.as_tensor(positions).double()[:, None] * rope_inverse_frequencies(d_head)
    gap = torch.maximum((cos.double() - angles.cos()).abs(), (sin.double() - angles.sin()).abs())
    return gap.amax(dim=-1)


def check_rope_angle_precision(cos_sin: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> str:
    """Check ``cos_sin(positions, d_head)`` for positions 0 .. 4095, ``d_head = 64``: error below 1e-3.

    The tolerance lets float32 angles pass (their error grows with the position, ~2e-4 here);
    float64 angles are within float32 rounding (~1e-7).
    """
    positions, d_head = torch.arange(4096), 64
    error = cos_sin_error(cos_sin, positions, d_head)
    worst = int(error.argmax())
    _require(float(error.max()) < 1e-3, (
        f"cos/sin off by up to {float(error.max()):.2f} (at position {worst}; already {float(error[:256].max()):.3f} "
        f"below position 256) against angles taken in float64"
    ))
    return f"cos/sin within {float(error.max()):.1e} of the float64 angles for positions below 4,096"


# -- 8. dynamic NTK with a KV cache -----------------------------------------------------------------------------
def generate_dynamic_ntk_cached(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, prompt_len: int, scaling: RopeScaling
) -> torch.Tensor:
    """Causal attention with dynamic NTK RoPE, computed as a generator does: the prompt, then one token at a time.

    Args:
        q, k: ``(n, d_head)``; v: ``(n, d_v)``: the whole sequence's projections (one head).
        prompt_len: tokens of the first pass.
        scaling: a ``RopeScaling("dynamic_ntk", train_len=...)``.

    Returns:
        ``(n, d_v)``: row ``t`` is token ``t``'s output.
    """
    n, d_head = q.shape
    prompt = torch.arange(prompt_len)
    outputs = [rope_attention(q[:prompt_len], k[:prompt_len], v[:prompt_len], prompt, scaling=scaling)]
    speeds = scaling.inverse_frequencies(d_head, seq_len=prompt_len)
    k_cache = apply_rope(k[:prompt_len], prompt, inverse_frequencies=speeds)
    for t in range(prompt_len, n):
        speeds = scaling.inverse_frequencies(d_head, seq_len=t + 1)  # the input is one token longer
        position = torch.tensor([t])
        k_cache = torch.cat([k_cache, apply_rope(k[t : t + 1], position, inverse_frequencies=speeds)])
        q_t = apply_rope(q[t : t + 1], position, inverse_frequencies=speeds)
        weights = torch.softmax(q_t @ k_cache.T / math.sqrt(d_head), dim=-1)
        outputs.append(weights @ v[: t + 1])
    return torch.cat(outputs)


def generate_dynamic_ntk_fixed(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, prompt_len: int, scaling: RopeScaling
) -> torch.Tensor:
    """As :func:`generate_dynamic_ntk_cached`, caching the keys before rotation and rotating all of them
    at each step with the current speeds. Costs one rotation of the whole cache per generated token."""
    n, d_head = q.shape
    prompt = torch.arange(prompt_len)
    outputs = [rope_attention(q[:prompt_len], k[:prompt_len], v[:prompt_len], prompt, scaling=scaling)]
    for t in range(prompt_len, n):
        speeds = scaling.inverse_frequencies(d_head, seq_len=t + 1)
        positions = torch.arange(t + 1)
        keys = apply_rope(k[: t + 1], positions, inverse_frequencies=speeds)  # k[: t + 1] is the raw cache
        q_t = apply_rope(q[t : t + 1], positions[-1:], inverse_frequencies=speeds)
        weights = torch.softmax(q_t @ keys.T / math.sqrt(d_head), dim=-1)
        outputs.append(weights @ v[: t + 1])
    return torch.cat(outputs)


#: The dynamic-NTK case: a model trained on 8 positions, a 4-token prompt, 32 tokens in all, 16-wide heads.
NTK_TRAIN_LEN, NTK_PROMPT_LEN, NTK_TOKENS, NTK_D_HEAD = 8, 4, 32, 16


def dynamic_ntk_gaps(generate: Callable[..., torch.Tensor], *, seed: int = 0) -> torch.Tensor:
    """Per token, ``|generate(...)[t] - one pass over tokens 0..t|`` (largest over the value channels).

    The one-pass result is :func:`posenc.rope_practice.rope_attention` on the first ``t + 1``
    tokens with the same scaling: what the model computes when it reads that prefix at once.
    Random float64 projections, ``train_len = 8``, a 4-token prompt, 32 tokens.

    Returns:
        float64 ``(32,)``.
    """
    _check_callable("generate", generate)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    shape = (NTK_TOKENS, NTK_D_HEAD)
    q, k, v = (torch.randn(shape, generator=generator, dtype=torch.float64) for _ in range(3))
    scaling = RopeScaling("dynamic_ntk", train_len=NTK_TRAIN_LEN)
    out = generate(q, k, v, prompt_len=NTK_PROMPT_LEN, scaling=scaling)
    reference = torch.stack([
        rope_attention(q[: t + 1], k[: t + 1], v[: t + 1], torch.arange(t + 1), scaling=scaling)[-1]
        for t in range(NTK_TOKENS)
    ])
    return (out - reference).abs().amax(dim=-1)


def check_dynamic_ntk_cache(generate: Callable[..., torch.Tensor]) -> str:
    """Check that token-by-token generation with dynamic NTK equals one pass over each prefix (to 1e-9)."""
    gaps = dynamic_ntk_gaps(generate)
    if float(gaps.max()) > 1e-9:
        first = int((gaps > 1e-9).nonzero()[0])
        raise AssertionError(
            f"from token {first} on (training length {NTK_TRAIN_LEN}: dynamic NTK changes the speeds once the "
            f"input is longer), the output differs from one pass over the same prefix by up to "
            f"{float(gaps.max()):.3f}: the cached keys were rotated with the speeds of shorter inputs"
        )
    return f"every generated token matches one pass over its prefix to {float(gaps.max()):.1e}"


# -- 9. ALiBi slopes for any head count ------------------------------------------------------------------------
def alibi_slopes_geometric(n_heads: int) -> torch.Tensor:
    """ALiBi's head slopes: the geometric sequence ``2^(-8/n), 2^(-16/n), ..., 2^(-8)``.

    Returns:
        float64 ``(n_heads,)``.
    """
    h = torch.arange(n_heads, dtype=torch.float64)
    return 2.0 ** (-8.0 * (h + 1) / n_heads)


def check_alibi_slopes(slopes: Callable[[int], torch.Tensor]) -> str:
    """Check ``slopes(n_heads)`` for 1 to 16 heads against :func:`posenc.relative.alibi_slopes`.

    The reference follows Press et al.'s code: for a head count that is not a power of two, the
    slopes of the next lower power of two plus every other slope of twice that many heads. A model
    trained with that code was trained with those biases.
    """
    _check_callable("slopes", slopes)
    for n_heads in range(1, 17):
        got, reference = slopes(n_heads).double(), alibi_slopes(n_heads)
        _require(got.shape == reference.shape and torch.allclose(got, reference, rtol=1e-12, atol=0.0), (
            f"{n_heads} heads: slopes {_short(got)}, but the reference code gives {_short(reference)}"
        ))
    return "the reference slopes for 1 to 16 heads"


def _short(values: torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(v):.3g}" for v in values) + "]"


# -- 10. a config's RoPE scaling ignored, or applied to the wrong layers ---------------------------------------
def rotary_inverse_frequencies(config: dict[str, Any], layer_type: str | None = None) -> torch.Tensor:
    """RoPE's inverse frequencies for one attention layer of a model, from its Hugging Face config.

    Args:
        config: the model's ``config.json`` as a dict (transformers v5 keeps the base in
            ``rope_parameters``, nested by layer type for models whose layers differ).
        layer_type: e.g. ``"full_attention"`` for a model whose config nests its RoPE by layer type.

    Returns:
        float64 ``(head_dim // 2,)``.
    """
    params = config.get("rope_parameters") or {}
    if layer_type is not None:
        params = params[layer_type]
    base = params.get("rope_theta", config.get("rope_theta", 10000.0))
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def rotary_inverse_frequencies_fixed(config: dict[str, Any], layer_type: str | None = None) -> torch.Tensor:
    """As :func:`rotary_inverse_frequencies`, reading the whole RoPE entry: its ``rope_type`` and parameters
    (:func:`posenc.rope_config.rope_settings`), per layer type where the config nests them."""
    return rope_settings(config, layer_type=layer_type).inverse_frequencies()


_LLAMA3 = {"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192, "rope_theta": 500000.0}
#: The configs of the scaling check: ``(name, config, layer types)``. The RoPE fields are those of
#: the named models (Llama 3.1 8B, Llama 3.2 1B, Gemma 3 4B); the rest of each config is left out.
CONFIG_CASES: tuple[tuple[str, dict[str, Any], tuple[str | None, ...]], ...] = (
    ("Llama 3.1 8B", {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                      "rope_parameters": {**_LLAMA3, "factor": 8.0}}, (None,)),
    ("Llama 3.2 1B", {"hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
                      "max_position_embeddings": 131072, "rope_parameters": {**_LLAMA3, "factor": 32.0}}, (None,)),
    ("Llama 3.1 8B, an older file (rope_scaling)",
     {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072, "rope_theta": 500000.0,
      "rope_scaling": {k: v for k, v in {**_LLAMA3, "factor": 8.0}.items() if k != "rope_theta"}}, (None,)),
    ("Gemma 3 4B", {"hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
                    "max_position_embeddings": 131072, "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
                    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                        "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                           "rope_theta": 1000000.0}}},
     ("sliding_attention", "full_attention")),
)


def config_scaling_report(build: Callable[..., torch.Tensor]) -> list[tuple[str, str]]:
    """For each config and layer type of :data:`CONFIG_CASES`: ``(case, outcome)``, the outcome being the
    summary of :func:`posenc.rope_config.check_rope_frequencies` or its failure message."""
    _check_callable("build", build)
    report = []
    for name, config, types in CONFIG_CASES:
        for layer_type in types:
            case = name + (f", {layer_type} layers" if layer_type else "")
            try:
                report.append((case, check_rope_frequencies(config, build(config, layer_type), layer_type=layer_type)))
            except AssertionError as error:
                report.append((case, "FAILS: " + str(error)))
    return report


def check_config_scaling(build: Callable[..., torch.Tensor]) -> str:
    """Check ``build(config, layer_type)`` against each config of :data:`CONFIG_CASES`, layer type by layer type.

    The one comparison: the frequencies the implementation uses against those the config asks
    for (:func:`posenc.rope_config.check_rope_frequencies`, to float32 rounding).
    """
    report = config_scaling_report(build)
    failures = [f"{case}: {outcome.removeprefix('FAILS: ')}" for case, outcome in report if outcome.startswith("FAILS")]
    _require(not failures, "; ".join(failures))
    return f"every layer type of the {len(CONFIG_CASES)} configs gets the frequencies its config asks for"


# -- 11. LongRoPE's switch with a KV cache ---------------------------------------------------------------------
#: The LongRoPE case: a switch at 8 positions, a 4-token prompt, 16 tokens in all, 16-wide heads.
LONGROPE_TRAIN_LEN, LONGROPE_PROMPT_LEN, LONGROPE_TOKENS, LONGROPE_D_HEAD = 8, 4, 16, 16


def longrope_case() -> LongRopeScaling:
    """The case's scaling: short factors 1 (plain RoPE up to the switch), long factors rising geometrically
    from 1 (the fastest pair) to 4 (the slowest), as LongRoPE's searched factors do; stretch 4."""
    n = LONGROPE_D_HEAD // 2
    return LongRopeScaling(short_factor=(1.0,) * n, long_factor=tuple(4.0 ** (i / (n - 1)) for i in range(n)),
                           train_len=LONGROPE_TRAIN_LEN, factor=4.0)


def generate_longrope_cached(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, prompt_len: int, scaling: LongRopeScaling
) -> torch.Tensor:
    """Causal attention with LongRoPE, computed as a generator does: the prompt, then one token at a time.

    Each step computes the speeds for the current length (the largest position + 1, as Hugging
    Face's ``dynamic_rope_update`` does), rotates the new token's query and key with them and
    appends the key to the cache.

    Args:
        q, k: ``(n, d_head)``; v: ``(n, d_v)``: the whole sequence's projections (one head).
        prompt_len: tokens of the first pass.
        scaling: a :class:`posenc.rope_scaling.LongRopeScaling`.

    Returns:
        ``(n, d_v)``: row ``t`` is token ``t``'s output.
    """
    n, d_head = q.shape
    scale = scaling.query_key_scale
    speeds = scaling.inverse_frequencies(d_head, seq_len=prompt_len)
    prompt = torch.arange(prompt_len)
    k_cache = apply_rope(k[:prompt_len], prompt, inverse_frequencies=speeds) * scale
    q_prompt = apply_rope(q[:prompt_len], prompt, inverse_frequencies=speeds) * scale
    scores = (q_prompt @ k_cache.T / math.sqrt(d_head)).masked_fill(
        torch.ones(prompt_len, prompt_len, dtype=torch.bool).triu(1), float("-inf"))
    outputs = [torch.softmax(scores, dim=-1) @ v[:prompt_len]]
    for t in range(prompt_len, n):
        speeds = scaling.inverse_frequencies(d_head, seq_len=t + 1)
        position = torch.tensor([t])
        k_cache = torch.cat([k_cache, apply_rope(k[t : t + 1], position, inverse_frequencies=speeds) * scale])
        q_t = apply_rope(q[t : t + 1], position, inverse_frequencies=speeds) * scale
        outputs.append(torch.softmax(q_t @ k_cache.T / math.sqrt(d_head), dim=-1) @ v[: t + 1])
    return torch.cat(outputs)


def generate_longrope_fixed(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, prompt_len: int, scaling: LongRopeScaling
) -> torch.Tensor:
    """As :func:`generate_longrope_cached`, rotating the whole cache again, once, when the speeds switch.

    Hugging Face's Phi-3 fix drops the cache at the switch and runs the prefix again with the long
    factors; rotating the cached (unrotated) keys again gives the same keys for less work.
    """
    n, d_head = q.shape
    scale = scaling.query_key_scale
    prompt = torch.arange(prompt_len)
    rotated_with = scaling.inverse_frequencies(d_head, seq_len=prompt_len)
    k_cache = apply_rope(k[:prompt_len], prompt, inverse_frequencies=rotated_with) * scale
    q_prompt = apply_rope(q[:prompt_len], prompt, inverse_frequencies=rotated_with) * scale
    scores = (q_prompt @ k_cache.T / math.sqrt(d_head)).masked_fill(
        torch.ones(prompt_len, prompt_len, dtype=torch.bool).triu(1), float("-inf"))
    outputs = [torch.softmax(scores, dim=-1) @ v[:prompt_len]]
    for t in range(prompt_len, n):
        speeds = scaling.inverse_frequencies(d_head, seq_len=t + 1)
        if not torch.equal(speeds, rotated_with):  # the switch: every cached key again, with the new speeds
            k_cache = apply_rope(k[:t], torch.arange(t), inverse_frequencies=speeds) * scale
            rotated_with = speeds
        position = torch.tensor([t])
        k_cache = torch.cat([k_cache, apply_rope(k[t : t + 1], position, inverse_frequencies=speeds) * scale])
        q_t = apply_rope(q[t : t + 1], position, inverse_frequencies=speeds) * scale
        outputs.append(torch.softmax(q_t @ k_cache.T / math.sqrt(d_head), dim=-1) @ v[: t + 1])
    return torch.cat(outputs)


def _one_pass_last(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaling: LongRopeScaling) -> torch.Tensor:
    """The last token's output when the whole prefix ``q, k, v`` is read at once."""
    n, d_head = q.shape
    speeds = scaling.inverse_frequencies(d_head, seq_len=n)
    positions, scale = torch.arange(n), scaling.query_key_scale
    keys = apply_rope(k, positions, inverse_frequencies=speeds) * scale
    query = apply_rope(q[-1:], positions[-1:], inverse_frequencies=speeds) * scale
    return (torch.softmax(query @ keys.T / math.sqrt(d_head), dim=-1) @ v)[0]


def longrope_gaps(generate: Callable[..., torch.Tensor], *, seed: int = 0) -> torch.Tensor:
    """Per token, ``|generate(...)[t] - one pass over tokens 0..t|`` (largest over the value channels).

    Random float64 projections, the scaling of :func:`longrope_case`, a 4-token prompt, 16 tokens.

    Returns:
        float64 ``(16,)``.
    """
    _check_callable("generate", generate)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    shape = (LONGROPE_TOKENS, LONGROPE_D_HEAD)
    q, k, v = (torch.randn(shape, generator=generator, dtype=torch.float64) for _ in range(3))
    scaling = longrope_case()
    out = generate(q, k, v, prompt_len=LONGROPE_PROMPT_LEN, scaling=scaling)
    reference = torch.stack([_one_pass_last(q[: t + 1], k[: t + 1], v[: t + 1], scaling) for t in range(LONGROPE_TOKENS)])
    return (out - reference).abs().amax(dim=-1)


def check_longrope_cache(generate: Callable[..., torch.Tensor]) -> str:
    """Check that token-by-token generation with LongRoPE equals one pass over each prefix (to 1e-9)."""
    gaps = longrope_gaps(generate)
    if float(gaps.max()) > 1e-9:
        first = int((gaps > 1e-9).nonzero()[0])
        raise AssertionError(
            f"from token {first} on (the input is longer than {LONGROPE_TRAIN_LEN} positions, so LongRoPE switches "
            f"from the short to the long factors), the output differs from one pass over the same prefix by up to "
            f"{float(gaps.max()):.3f}: the cached keys keep the short factors' rotations"
        )
    return f"every generated token matches one pass over its prefix to {float(gaps.max()):.1e}"


# -- the catalogue -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bug:
    """One case of the appendix: a buggy implementation, its fix and the check that tells them apart."""

    key: str
    title: str
    buggy: Callable[..., Any]
    fixed: Callable[..., Any]
    check: Check


BUGS: tuple[Bug, ...] = (
    Bug("exponent", "the exponent per channel", sinusoid_table_channel_exponent, sinusoid_table_recipe,
        check_sinusoid_frequencies),
    Bug("layout", "concatenated where interleaved is expected", sinusoid_table_concatenated,
        sinusoid_table_concatenated_fixed, check_interleaved_layout),
    Bug("scale", "the missing sqrt(d_model)", embed_without_scale, embed_with_scale, check_embedding_scale),
    Bug("odd", "an odd d_model", sinusoid_table_recipe, sinusoid_table_any_width, check_odd_width),
    Bug("cache", "a cached table read past its end", add_positions_from_cache, add_positions_from_cache_fixed,
        check_cached_table),
    Bug("rope_layout", "half-split RoPE on interleaved weights", half_split_scores, half_split_scores_fixed,
        check_rope_layout_conversion),
    Bug("bf16", "RoPE angles in bfloat16", rope_cos_sin_model_dtype, rope_cos_sin, check_rope_angle_precision),
    Bug("dynamic_ntk", "dynamic NTK and the KV cache", generate_dynamic_ntk_cached, generate_dynamic_ntk_fixed,
        check_dynamic_ntk_cache),
    Bug("alibi", "ALiBi slopes for any head count", alibi_slopes_geometric, alibi_slopes, check_alibi_slopes),
    Bug("config_scaling", "a config's scaling ignored", rotary_inverse_frequencies, rotary_inverse_frequencies_fixed,
        check_config_scaling),
    Bug("longrope_cache", "LongRoPE's switch and the KV cache", generate_longrope_cached, generate_longrope_fixed,
        check_longrope_cache),
)
