"""Stretching RoPE past its training length: the frequency transforms used in practice.

A RoPE model trained on ``train_len`` positions has seen pair ``i`` turn by at most
``(train_len - 1) * theta_i`` radians (:func:`posenc.relative.rope_inverse_frequencies`).
The methods here change the rotation speeds ``theta_i`` (and, for YaRN, the attention
temperature) so that a longer input stays closer to what training covered:

* :func:`pi_inverse_frequencies`: position interpolation (Chen et al., 2023), every speed
  divided by the factor ``s`` (the same as reading position ``p`` at ``p / s``).
* :func:`ntk_inverse_frequencies`: "NTK-aware" scaling (bloc97, 2023), a larger base
  ``base * s ** (d / (d - 2))``: the fastest pair keeps its speed, the slowest is divided by ``s``.
* :func:`dynamic_ntk_inverse_frequencies`: the same with ``s`` taken from the current
  length (Peng et al., 2023, section 3.3; the Hugging Face formula).
* :func:`yarn_inverse_frequencies` and :func:`yarn_attention_factor`: YaRN (Peng et al.,
  2023), "NTK-by-parts" (fast pairs kept, slow pairs interpolated, a ramp between) plus a
  temperature on the attention logits.
* :func:`llama3_inverse_frequencies`: Llama 3.1's rule (Grattafiori et al., 2024), the same
  idea with the ramp written in wavelengths (with ``low_freq_factor == high_freq_factor`` the
  ramp is a step, as Llama 4 Scout ships it).
* :func:`longrope_inverse_frequencies` and :func:`longrope_attention_factor`: LongRoPE (Ding
  et al., 2024; Phi-3), one searched factor per pair, a short set up to the original length
  and a long set beyond it; :class:`LongRopeScaling` bundles it for a model.
* A base change (e.g. ``base = 500_000`` in Llama 3) is :func:`rope_inverse_frequencies`
  with another base: a training-time choice (Xiong et al., 2023).

:class:`RopeScaling` bundles a method and its settings; :meth:`posenc.relative.RopeScheme.set_scaling`
switches it on in a model. :func:`pair_diagnostic` tells, pair by pair, which angles a
longer input brings that training never showed, and what a method does about it.

All frequencies are float64 tensors of shape ``(d_head // 2,)``, fastest pair first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from posenc.checks import check_choice, check_positive_float, check_positive_int, check_real, check_reals
from posenc.relative import (
    PARTIAL_LADDERS,
    FrequencyScaling,
    check_scaling,
    partial_inverse_frequencies,
    rope_inverse_frequencies,
)

__all__ = [
    "METHODS",
    "METHOD_NAMES",
    "NEEDS_TRAIN_LEN",
    "YARN_RAMPS",
    "pi_inverse_frequencies",
    "ntk_base",
    "ntk_inverse_frequencies",
    "dynamic_ntk_factor",
    "dynamic_ntk_inverse_frequencies",
    "yarn_correction_range",
    "yarn_inverse_frequencies",
    "yarn_attention_factor",
    "YarnZones",
    "yarn_zones",
    "yarn_mscale",
    "llama3_inverse_frequencies",
    "longrope_inverse_frequencies",
    "longrope_attention_factor",
    "RopeScaling",
    "SETUPS",
    "SETUP_NAMES",
    "LongRopeScaling",
    "PairRow",
    "pair_diagnostic",
    "relative_score_curve",
]

#: Scaling methods by name ("none" is plain RoPE).
METHODS: tuple[str, ...] = ("none", "pi", "ntk", "dynamic_ntk", "yarn", "llama3")
#: How the book writes each method.
METHOD_NAMES: dict[str, str] = {"none": "plain RoPE", "pi": "PI", "ntk": "NTK-aware",
                                "dynamic_ntk": "dynamic NTK", "yarn": "YaRN", "llama3": "Llama 3"}
#: The set-ups a training run can test past its length (``TrainConfig.rope_scalings``), by name:
#: every method but plain RoPE with its defaults, and YaRN with the paper's ramp (in turns).
SETUPS: dict[str, dict[str, str]] = {
    **{method: {"method": method} for method in METHODS if method != "none"},
    "yarn_rotations": {"method": "yarn", "yarn_ramp": "rotations"},
}
#: How the book writes each set-up.
SETUP_NAMES: dict[str, str] = {**{m: METHOD_NAMES[m] for m in METHODS if m != "none"},
                               "yarn_rotations": "YaRN (paper's ramp)"}
#: YaRN's ramp: ``"index"`` as in the authors' code (linear in the pair index), ``"rotations"``
#: as written in the paper (linear in the number of turns ``r``).
YARN_RAMPS: tuple[str, ...] = ("index", "rotations")


def _check_factor(factor: Any) -> float:
    factor = check_positive_float("factor", factor)
    if factor < 1.0:
        raise ValueError(f"factor must be >= 1 (these methods stretch a context, 1 = no change), got {factor}")
    return factor


def pi_inverse_frequencies(d_head: int, *, factor: float, base: float = 10000.0) -> torch.Tensor:
    """Position interpolation (Chen et al., 2023): ``theta_i / s`` for every pair.

    Rotating position ``p`` by ``p * theta_i / s`` is reading it at ``p / s``
    (:func:`posenc.extrapolate.position_interpolation_positions`): all angles, fast and
    slow pairs alike, shrink by ``s``.

    Args:
        d_head: query/key width (even); factor: ``s = L_new / L_train >= 1``; base: RoPE's base.

    Returns:
        float64 ``(d_head // 2,)``.
    """
    factor = _check_factor(factor)
    return rope_inverse_frequencies(d_head, base=base) / factor


def ntk_base(d_head: int, *, factor: float, base: float = 10000.0) -> float:
    """The NTK-aware base (bloc97, 2023): ``base * s ** (d_head / (d_head - 2))``.

    The exponent makes the slowest pair ``i = d_head/2 - 1`` turn exactly ``s`` times slower,
    while pair 0 (speed ``base ** 0 = 1``) is untouched.
    """
    factor = _check_factor(factor)
    d_head = check_positive_int("d_head", d_head)
    if d_head < 4 or d_head % 2:
        raise ValueError(f"d_head must be an even number >= 4 for NTK-aware scaling (d/(d-2) is the exponent), "
                         f"got {d_head}")
    return check_positive_float("base", base) * factor ** (d_head / (d_head - 2))


def ntk_inverse_frequencies(d_head: int, *, factor: float, base: float = 10000.0) -> torch.Tensor:
    """NTK-aware scaling: RoPE's speeds with the base :func:`ntk_base`.

    Pair ``i`` is slowed by ``s ** (2 i / (d_head - 2))``: by 1 for the fastest pair, by ``s``
    for the slowest, geometrically in between. Returns float64 ``(d_head // 2,)``.
    """
    return rope_inverse_frequencies(d_head, base=ntk_base(d_head, factor=factor, base=base))


def dynamic_ntk_factor(seq_len: int, *, train_len: int, factor: float = 1.0) -> float:
    """The factor dynamic NTK scaling uses for an input of ``seq_len`` positions.

    ``max(1, factor * seq_len / train_len - (factor - 1))``, as in Hugging Face
    ``transformers`` (``rope_type="dynamic"``). With ``factor = 1`` this is
    ``max(1, seq_len / train_len)``, the definition of Peng et al. (2023, section 3.3):
    inputs no longer than training are left alone.
    """
    seq_len = check_positive_int("seq_len", seq_len)
    train_len = check_positive_int("train_len", train_len)
    factor = _check_factor(factor)
    return max(1.0, factor * seq_len / train_len - (factor - 1.0))


def dynamic_ntk_inverse_frequencies(
    d_head: int, *, seq_len: int, train_len: int, factor: float = 1.0, base: float = 10000.0
) -> torch.Tensor:
    """NTK-aware speeds for the factor :func:`dynamic_ntk_factor` of the current length.

    ``seq_len`` is the number of positions of the input so far (largest position + 1). The
    speeds change as the input grows, so keys cached at one length were rotated with
    other speeds than a later query's. Returns float64 ``(d_head // 2,)``.
    """
    current = dynamic_ntk_factor(seq_len, train_len=train_len, factor=factor)
    return ntk_inverse_frequencies(d_head, factor=current, base=base)


def _turns_to_pair(turns: float, d_head: int, base: float, train_len: int) -> float:
    # pair index i at which speed * train_len / (2 pi) == turns: solve base**(-2i/d) * L / (2 pi) = turns
    return d_head * math.log(train_len / (turns * 2 * math.pi)) / (2 * math.log(base))


def _blend(speeds: torch.Tensor, keep: torch.Tensor, factor: float) -> torch.Tensor:
    """``(1 - keep) * speeds / factor + keep * speeds``: per pair, between interpolated (0) and kept (1)."""
    return (1.0 - keep) * speeds / factor + keep * speeds


def _check_betas(beta_fast: Any, beta_slow: Any) -> tuple[float, float]:
    beta_fast, beta_slow = check_positive_float("beta_fast", beta_fast), check_positive_float("beta_slow", beta_slow)
    if beta_fast <= beta_slow:
        raise ValueError(f"beta_fast must be > beta_slow (turns), got beta_fast={beta_fast}, beta_slow={beta_slow}")
    return beta_fast, beta_slow


def yarn_correction_range(
    d_head: int, *, train_len: int, base: float = 10000.0, beta_fast: float = 32.0, beta_slow: float = 1.0,
    truncate: bool = True,
) -> tuple[float, float]:
    """The pairs between which YaRN's ramp runs, as in the authors' code.

    ``low`` = the pair that turns ``beta_fast`` times within ``train_len`` (rounded down),
    ``high`` = the pair that turns ``beta_slow`` times (rounded up), clipped to ``[0, d_head - 1]``
    (the reference code's bounds).

    Args:
        truncate: round outwards to whole pairs (the authors' code and Hugging Face's default);
            ``False`` keeps the fractional bounds, as gpt-oss's reference code does (Hugging
            Face's ``truncate: false``).

    Returns:
        ``(low, high)``: integers when ``truncate``, else floats.
    """
    rope_inverse_frequencies(d_head, base=base)  # validates d_head (even) and base (> 1)
    train_len = check_positive_int("train_len", train_len)
    beta_fast, beta_slow = _check_betas(beta_fast, beta_slow)
    if not isinstance(truncate, bool):
        raise TypeError(f"truncate must be True or False, got {truncate!r}")
    low: float = _turns_to_pair(beta_fast, d_head, base, train_len)
    high: float = _turns_to_pair(beta_slow, d_head, base, train_len)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, d_head - 1)


def yarn_inverse_frequencies(
    d_head: int,
    *,
    factor: float,
    train_len: int,
    base: float = 10000.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    ramp: str = "index",
    truncate: bool = True,
) -> torch.Tensor:
    """YaRN's "NTK-by-parts" speeds (Peng et al., 2023).

    Each pair blends its own speed with the interpolated one:
    ``theta'_i = (1 - gamma_i) * theta_i / s + gamma_i * theta_i``. Pairs that turn more than
    ``beta_fast`` times within ``train_len`` keep their speed (``gamma = 1``); pairs that turn
    less than ``beta_slow`` times are interpolated (``gamma = 0``).

    Args:
        ramp: ``"index"`` (default): ``gamma`` is linear in the pair index between
            :func:`yarn_correction_range`, as in the authors' code and in Hugging Face;
            ``"rotations"``: ``gamma = (r_i - beta_slow) / (beta_fast - beta_slow)`` clipped to
            ``[0, 1]``, with ``r_i = train_len * theta_i / (2 pi)`` turns, as the paper writes it.
            The two agree at both ends and differ in between.
        truncate: for ``ramp="index"``, round the ramp's ends to whole pairs
            (:func:`yarn_correction_range`).

    Returns:
        float64 ``(d_head // 2,)``.
    """
    factor = _check_factor(factor)
    ramp = check_choice("ramp", ramp, YARN_RAMPS)
    train_len = check_positive_int("train_len", train_len)
    speeds = rope_inverse_frequencies(d_head, base=base)
    if ramp == "index":
        low, high = yarn_correction_range(d_head, train_len=train_len, base=base, beta_fast=beta_fast,
                                          beta_slow=beta_slow, truncate=truncate)
        if low == high:
            high += 0.001  # the reference code's guard against 0/0
        pair = torch.arange(d_head // 2, dtype=torch.float64)
        interpolated_share = ((pair - low) / (high - low)).clamp(0.0, 1.0)
        keep = 1.0 - interpolated_share
    else:
        beta_fast, beta_slow = _check_betas(beta_fast, beta_slow)
        turns = train_len * speeds / (2 * math.pi)
        keep = ((turns - beta_slow) / (beta_fast - beta_slow)).clamp(0.0, 1.0)
    return _blend(speeds, keep, factor)


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's ``0.1 * mscale * ln(s) + 1`` (1 for ``s <= 1``), as Hugging Face's ``get_mscale``."""
    factor = check_positive_float("factor", factor)
    mscale = check_positive_float("mscale", mscale)
    return 1.0 if factor <= 1.0 else 0.1 * mscale * math.log(factor) + 1.0


@dataclass(frozen=True)
class YarnZones:
    """How YaRN splits a head's pairs: kept, blended on the ramp, interpolated (pair indices, fastest first).

    Attributes:
        kept: pairs whose speed YaRN leaves alone.
        ramp: pairs it blends between kept and interpolated.
        interpolated: pairs it slows by the factor, like PI.
        n_pairs: ``d_head // 2``.
    """

    kept: tuple[int, ...]
    ramp: tuple[int, ...]
    interpolated: tuple[int, ...]
    n_pairs: int

    @property
    def counts(self) -> tuple[int, int, int]:
        """``(kept, ramp, interpolated)``: how many pairs each zone holds."""
        return len(self.kept), len(self.ramp), len(self.interpolated)

    @property
    def shares(self) -> dict[str, float]:
        """Each zone's share of the pairs: ``{"kept": ..., "ramp": ..., "interpolated": ...}``."""
        return {name: len(getattr(self, name)) / self.n_pairs for name in ("kept", "ramp", "interpolated")}

    def every_zone_holds(self, share: float = 0.1) -> bool:
        """True if each zone holds at least ``share`` of the pairs: the regime YaRN's constants were chosen for."""
        share = check_real("share", share, low=0.0, high=1.0, what="a share of the pairs")
        return min(self.shares.values()) >= share


def yarn_zones(
    d_head: int, *, train_len: int, base: float = 10000.0, beta_fast: float = 32.0, beta_slow: float = 1.0,
    ramp: str = "index",
) -> YarnZones:
    """Split the pairs of a ``d_head``-wide RoPE into YaRN's three zones.

    ``ramp="index"`` (default): as the authors' code and Hugging Face ramp
    (:func:`yarn_correction_range`): pairs up to ``low`` are kept (``low`` has ramp value 0),
    pairs from ``high`` on are interpolated. ``ramp="rotations"``: as the paper defines them, by
    the turns ``r_i = train_len * theta_i / (2 pi)`` each pair makes within the training window:
    ``r_i >= beta_fast`` kept, ``r_i <= beta_slow`` interpolated. In a real model (``d_head``
    128, 4,096 tokens) each zone holds many pairs and the two agree closely; in a toy model with
    a short window no pair turns ``beta_fast`` times, the paper's rule keeps none, and the
    code's clamp at pair 0 keeps one.

    Example: ``yarn_zones(64, train_len=512, ramp="rotations")`` keeps pairs 0-3, ramps 4-15,
    interpolates 16-31.
    """
    speeds = rope_inverse_frequencies(d_head, base=base)  # validates d_head and base
    train_len = check_positive_int("train_len", train_len)
    beta_fast, beta_slow = _check_betas(beta_fast, beta_slow)
    ramp = check_choice("ramp", ramp, YARN_RAMPS)
    n = d_head // 2
    if ramp == "index":
        low, high = yarn_correction_range(d_head, train_len=train_len, base=base, beta_fast=beta_fast,
                                          beta_slow=beta_slow)
        low, high = int(low), int(high)  # whole pairs: yarn_correction_range truncates by default
        kept = tuple(range(min(low + 1, n)))
        interpolated = tuple(range(max(high, len(kept)), n))
    else:
        turns = (train_len * speeds / (2 * math.pi)).tolist()
        kept = tuple(i for i, r in enumerate(turns) if r >= beta_fast)
        interpolated = tuple(i for i, r in enumerate(turns) if r <= beta_slow)
    middle = tuple(i for i in range(n) if i not in kept and i not in interpolated)
    return YarnZones(kept, middle, interpolated, n)


def yarn_attention_factor(factor: float, *, mscale: float | None = None, mscale_all_dim: float | None = None) -> float:
    """YaRN's temperature: ``sqrt(1 / t) = 0.1 * ln(s) + 1`` (Peng et al., 2023, eq. 22).

    Queries and keys are both multiplied by this number, so the attention logits are
    multiplied by its square (``1 / t``). 1 for ``s = 1``.

    DeepSeek's configs give two more numbers: with both ``mscale`` and ``mscale_all_dim`` set,
    the factor is ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)`` (Hugging Face's
    rule), which is 1 when they are equal: the temperature then lives in the softmax scale
    instead (:func:`posenc.rope_config.softmax_scale`).
    """
    factor = _check_factor(factor)
    for name, value in (("mscale", mscale), ("mscale_all_dim", mscale_all_dim)):
        if value is not None:
            check_positive_float(name, value)
    if mscale and mscale_all_dim:
        return yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim)
    return 0.1 * math.log(factor) + 1.0


def llama3_inverse_frequencies(
    d_head: int,
    *,
    factor: float,
    train_len: int,
    base: float = 10000.0,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
) -> torch.Tensor:
    """Llama 3.1's RoPE scaling (Grattafiori et al., 2024; Meta's reference code).

    With wavelength ``lambda_i = 2 pi / theta_i``: pairs with ``lambda_i < train_len /
    high_freq_factor`` (more than ``high_freq_factor`` turns) keep their speed; pairs with
    ``lambda_i > train_len / low_freq_factor`` are divided by ``factor``; in between,
    ``theta' = (1 - g) * theta / factor + g * theta`` with
    ``g = (train_len / lambda_i - low_freq_factor) / (high_freq_factor - low_freq_factor)``.
    Llama 3.1 ships ``factor=8, low_freq_factor=1, high_freq_factor=4, train_len=8192``.

    With ``low_freq_factor == high_freq_factor`` there is no blend: a pair is kept if it turns
    at least that many times within ``train_len`` and divided by ``factor`` otherwise. Llama 4
    Scout ships this (factor 16, both factors 1); Meta's and Hugging Face's code give the same
    step (a pair exactly on the boundary, which no real ladder hits, is kept here).

    Returns:
        float64 ``(d_head // 2,)``.
    """
    factor = _check_factor(factor)
    train_len = check_positive_int("train_len", train_len)
    low_freq_factor = check_positive_float("low_freq_factor", low_freq_factor)
    high_freq_factor = check_positive_float("high_freq_factor", high_freq_factor)
    if high_freq_factor < low_freq_factor:
        raise ValueError(f"high_freq_factor must be >= low_freq_factor, got {high_freq_factor} < {low_freq_factor}")
    speeds = rope_inverse_frequencies(d_head, base=base)
    turns = train_len * speeds / (2 * math.pi)  # = train_len / wavelength
    if high_freq_factor == low_freq_factor:  # a step: kept from low_freq_factor turns on
        keep = (turns >= low_freq_factor).to(torch.float64)
    else:
        keep = ((turns - low_freq_factor) / (high_freq_factor - low_freq_factor)).clamp(0.0, 1.0)
    return _blend(speeds, keep, factor)


def _check_factor_list(name: str, values: Any, n_pairs: int | None = None) -> torch.Tensor:
    """LongRoPE's per-pair factors: ``n_pairs`` finite numbers > 0 (any non-zero count with ``None``)."""
    try:
        tensor = torch.as_tensor(values, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a list of numbers (one per rotated pair), got {values!r:.80}") from None
    if n_pairs is None:
        if tensor.ndim != 1 or tensor.numel() == 0:
            raise ValueError(f"{name} must be a non-empty list of numbers (one per rotated pair), got shape "
                             f"{tuple(tensor.shape)}")
    elif tensor.shape != (n_pairs,):
        raise ValueError(f"{name} must hold {n_pairs} numbers (one per pair of a {2 * n_pairs}-wide rotation), "
                         f"got shape {tuple(tensor.shape)}")
    if not bool((tensor > 0).all()) or not bool(torch.isfinite(tensor).all()):
        raise ValueError(f"{name} must be finite numbers > 0 (each pair's speed is divided by its factor)")
    return tensor


def longrope_inverse_frequencies(
    d_head: int, *, short_factor: Any, long_factor: Any, train_len: int, seq_len: int | None = None,
    base: float = 10000.0,
) -> torch.Tensor:
    """LongRoPE's speeds (Ding et al., 2024), as Phi-3 ships them: ``theta_i / lambda_i``.

    Each pair has its own searched factor ``lambda_i``: the ``short_factor`` list while the
    input has at most ``train_len`` positions (Hugging Face's ``original_max_position_embeddings``),
    the ``long_factor`` list beyond. The switch depends on the length of the *current* input,
    so keys cached before it were rotated with the short set (Appendix D).

    Args:
        short_factor, long_factor: ``d_head // 2`` numbers each.
        seq_len: positions of the current input (largest position + 1); ``None`` = the short set,
            as at initialisation.

    Returns:
        float64 ``(d_head // 2,)``.
    """
    speeds = rope_inverse_frequencies(d_head, base=base)
    train_len = check_positive_int("train_len", train_len)
    short = _check_factor_list("short_factor", short_factor, d_head // 2)
    long_ = _check_factor_list("long_factor", long_factor, d_head // 2)
    if seq_len is not None and check_positive_int("seq_len", seq_len) > train_len:
        return speeds / long_
    return speeds / short


def longrope_attention_factor(factor: float, *, train_len: int) -> float:
    """LongRoPE's scale on queries and keys: ``sqrt(1 + ln(s) / ln(train_len))``, 1 for ``s <= 1``.

    Hugging Face's default when a config sets no ``attention_factor``; ``s`` is the config's
    ``factor``, or ``max_position_embeddings / original_max_position_embeddings`` (Phi-3-mini-128k:
    131,072 / 4,096 = 32). It applies to the short and the long set alike.
    """
    factor = check_positive_float("factor", factor)
    train_len = check_positive_int("train_len", train_len)
    if factor <= 1.0:
        return 1.0
    if train_len < 2:
        raise ValueError(f"train_len must be >= 2 for LongRoPE's attention factor (ln(train_len) divides), got {train_len}")
    return math.sqrt(1.0 + math.log(factor) / math.log(train_len))


#: The methods whose frequencies depend on the trained context length: they need ``train_len``.
NEEDS_TRAIN_LEN: tuple[str, ...] = ("dynamic_ntk", "yarn", "llama3")


@dataclass(frozen=True)
class RopeScaling:
    """One scaling method with its settings, for :meth:`posenc.relative.RopeScheme.set_scaling`.

    Attributes:
        method: one of :data:`METHODS`.
        factor: ``s >= 1`` (for ``"dynamic_ntk"``, Hugging Face's ``factor``; 1 = Peng et al.'s rule).
        train_len: the context length the model was trained on. Required by the methods that
            read it (:data:`NEEDS_TRAIN_LEN`: dynamic NTK, YaRN, Llama 3), so it is never
            assumed; ``None`` for the others (plain RoPE, PI and NTK-aware scale by ``factor``
            alone), which also take it when given.
        beta_fast, beta_slow, yarn_ramp: YaRN's settings (:func:`yarn_inverse_frequencies`).
        low_freq_factor, high_freq_factor: Llama 3's settings.
    """

    method: str
    factor: float = 1.0
    train_len: int | None = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    yarn_ramp: str = "index"
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS)
        object.__setattr__(self, "factor", _check_factor(self.factor))
        if self.train_len is None and self.method in NEEDS_TRAIN_LEN:
            raise ValueError(f"train_len is required for method={self.method!r}: its frequencies depend on the "
                             "context length the model was trained on (e.g. train_len=16 for the book's toy models); "
                             "it is never assumed")
        if self.train_len is not None:
            check_positive_int("train_len", self.train_len)
        _check_betas(self.beta_fast, self.beta_slow)
        check_choice("yarn_ramp", self.yarn_ramp, YARN_RAMPS)
        low = check_positive_float("low_freq_factor", self.low_freq_factor)
        high = check_positive_float("high_freq_factor", self.high_freq_factor)
        if high < low:  # equal factors are a step, as Llama 4 Scout ships them
            raise ValueError(f"high_freq_factor must be >= low_freq_factor, got {high} < {low}")

    @classmethod
    def for_length(cls, method: str, *, train_len: int, target_len: int) -> RopeScaling:
        """The method set up to stretch ``train_len`` to ``target_len`` (``factor = target_len / train_len``).

        ``method`` is a method of :data:`METHODS` or a set-up of :data:`SETUPS` (such as
        ``"yarn_rotations"``, YaRN with the paper's ramp). Dynamic NTK takes its factor from
        each input instead, so it gets ``factor = 1``.
        """
        method = check_choice("method", method, tuple(dict.fromkeys([*METHODS, *SETUPS])))
        train_len, target_len = check_positive_int("train_len", train_len), check_positive_int("target_len", target_len)
        if target_len < train_len:
            raise ValueError(f"target_len must be >= train_len={train_len}, got {target_len}")
        settings = SETUPS.get(method, {"method": method})
        factor = 1.0 if settings["method"] == "dynamic_ntk" else target_len / train_len
        return cls(settings["method"], factor=factor, train_len=train_len, yarn_ramp=settings.get("yarn_ramp", "index"))

    def inverse_frequencies(self, d_head: int, *, base: float = 10000.0, seq_len: int | None = None) -> torch.Tensor:
        """The speeds for an input of ``seq_len`` positions (only dynamic NTK reads it). float64 ``(d_head // 2,)``."""
        if seq_len is not None:
            seq_len = check_positive_int("seq_len", seq_len)
        if self.method == "none":
            return rope_inverse_frequencies(d_head, base=base)
        if self.method == "pi":
            return pi_inverse_frequencies(d_head, factor=self.factor, base=base)
        if self.method == "ntk":
            return ntk_inverse_frequencies(d_head, factor=self.factor, base=base)
        assert self.train_len is not None  # the methods below need it: checked in __post_init__
        if self.method == "dynamic_ntk":
            if seq_len is None:
                raise ValueError("dynamic_ntk needs seq_len, the length of the current input")
            return dynamic_ntk_inverse_frequencies(d_head, seq_len=seq_len, train_len=self.train_len,
                                                   factor=self.factor, base=base)
        if self.method == "yarn":
            return yarn_inverse_frequencies(d_head, factor=self.factor, train_len=self.train_len, base=base,
                                            beta_fast=self.beta_fast, beta_slow=self.beta_slow, ramp=self.yarn_ramp)
        return llama3_inverse_frequencies(d_head, factor=self.factor, train_len=self.train_len, base=base,
                                          low_freq_factor=self.low_freq_factor, high_freq_factor=self.high_freq_factor)

    @property
    def query_key_scale(self) -> float:
        """What queries and keys are multiplied by (YaRN's ``sqrt(1/t)``; 1 for the other methods)."""
        return yarn_attention_factor(self.factor) if self.method == "yarn" else 1.0

    @property
    def label(self) -> str:
        name = METHOD_NAMES[self.method]
        return name if self.method in ("none", "dynamic_ntk") else f"{name} (s = {self.factor:g})"


@dataclass(frozen=True)
class LongRopeScaling:
    """LongRoPE as a scaling for :meth:`posenc.relative.RopeScheme.set_scaling`.

    Attributes:
        short_factor, long_factor: one factor per pair (:func:`longrope_inverse_frequencies`).
        train_len: the original length (the switch point).
        factor: the stretch the attention factor is computed from (:func:`longrope_attention_factor`).
    """

    short_factor: tuple[float, ...]
    long_factor: tuple[float, ...]
    train_len: int
    factor: float = 1.0

    def __post_init__(self) -> None:
        _check_factor_list("short_factor", self.short_factor)
        _check_factor_list("long_factor", self.long_factor)
        object.__setattr__(self, "short_factor", tuple(float(x) for x in self.short_factor))
        object.__setattr__(self, "long_factor", tuple(float(x) for x in self.long_factor))
        if len(self.short_factor) != len(self.long_factor):
            raise ValueError(f"short_factor and long_factor must have the same length, got "
                             f"{len(self.short_factor)} and {len(self.long_factor)}")
        check_positive_int("train_len", self.train_len)
        check_positive_float("factor", self.factor)

    def inverse_frequencies(self, d_head: int, *, base: float = 10000.0, seq_len: int | None = None) -> torch.Tensor:
        """The short set up to ``train_len`` positions, the long set beyond. float64 ``(d_head // 2,)``."""
        return longrope_inverse_frequencies(d_head, short_factor=self.short_factor, long_factor=self.long_factor,
                                            train_len=self.train_len, seq_len=seq_len, base=base)

    @property
    def query_key_scale(self) -> float:
        """What queries and keys are multiplied by (:func:`longrope_attention_factor`)."""
        return longrope_attention_factor(self.factor, train_len=self.train_len)

    @property
    def label(self) -> str:
        return f"LongRoPE (switch at {self.train_len})"


@dataclass(frozen=True)
class PairRow:
    """One coordinate pair in :func:`pair_diagnostic` (angles in radians).

    Attributes:
        pair: index ``i`` (0 = fastest); speed: ``theta_i`` as trained.
        turns_in_training: ``train_len * theta_i / (2 pi)``.
        max_angle_trained: ``(train_len - 1) * theta_i``, the largest offset angle training showed.
        scaled_speed: ``theta'_i`` under the method; speed_ratio: ``theta'_i / theta_i``.
        max_angle_at_target: ``(target_len - 1) * theta'_i``.
        meets_new_angles: the longer input brings offset angles training never showed: the
            pair has not completed a turn in training and ``max_angle_at_target`` reaches the angle
            of offset ``train_len`` (``train_len * theta_i``), the first offset training never had.
            (PI's fractional positions end at ``train_len - 1/s``, less than one step past the
            trained range, which does not count.)
    """

    pair: int
    speed: float
    turns_in_training: float
    max_angle_trained: float
    scaled_speed: float
    speed_ratio: float
    max_angle_at_target: float
    meets_new_angles: bool


def pair_diagnostic(
    d_head: int, *, train_len: int, target_len: int, scaling: Any = None, base: float = 10000.0,
    partial: float = 1.0, ladder: str = "compressed",
) -> list[PairRow]:
    """Pair by pair: what a model trained on ``train_len`` positions meets at ``target_len``.

    Args:
        d_head: query/key width (even); base: RoPE's base.
        train_len, target_len: trained and new context lengths.
        scaling: the method applied at ``target_len`` (``None`` = plain RoPE): a
            :class:`RopeScaling` or any scaling with its ``inverse_frequencies`` (e.g.
            :class:`LongRopeScaling`); a scaling set up for another training length (its
            ``train_len``) is an error, not mixed in.
        partial, ladder: a head that rotates only part of its pairs
            (:func:`posenc.relative.partial_inverse_frequencies`); a scaling then applies to the
            rotated part, as in :class:`posenc.relative.RopeScheme`. Pairs that do not rotate
            have speed 0 and never meet a new angle.

    Returns:
        One :class:`PairRow` per pair, fastest first.
    """
    train_len, target_len = check_positive_int("train_len", train_len), check_positive_int("target_len", target_len)
    check_scaling("scaling", scaling)
    partial = check_real("partial", partial, low=0.0, low_open=True, high=1.0,
                         what="the share of d_head that rotates")
    scaling_len = getattr(scaling, "train_len", None)
    if scaling is not None and scaling_len is not None and scaling_len != train_len:
        raise ValueError(f"scaling was set up for train_len={scaling_len}, but train_len={train_len}: "
                         f"the diagnosis would mix two training lengths; build the scaling with "
                         f"train_len={train_len}")
    scaling = scaling or RopeScaling("none", train_len=train_len)
    check_choice("ladder", ladder, PARTIAL_LADDERS)
    if partial == 1.0:
        speeds = rope_inverse_frequencies(d_head, base=base)
        scaled = scaling.inverse_frequencies(d_head, base=base, seq_len=target_len)
    else:
        speeds = partial_inverse_frequencies(d_head, partial, base=base, ladder=ladder)
        rotated_dim = 2 * (int(partial * d_head) // 2) if ladder == "compressed" else d_head
        scaled = partial_inverse_frequencies(
            d_head, partial, base=base, ladder=ladder,
            speeds=scaling.inverse_frequencies(rotated_dim, base=base, seq_len=target_len))
    rows = []
    for i, (speed, new) in enumerate(zip(speeds.tolist(), scaled.tolist(), strict=True)):
        trained_max = (train_len - 1) * speed
        target_max = (target_len - 1) * new
        rows.append(PairRow(
            pair=i, speed=speed, turns_in_training=train_len * speed / (2 * math.pi), max_angle_trained=trained_max,
            scaled_speed=new, speed_ratio=new / speed if speed else 1.0, max_angle_at_target=target_max,
            meets_new_angles=speed > 0 and trained_max < 2 * math.pi
            and target_max >= train_len * speed * (1 - 1e-12)))
    return rows


def relative_score_curve(
    distances: Any, d_head: int, *, scaling: FrequencyScaling | None = None, base: float = 10000.0, seq_len: int | None = None
) -> torch.Tensor:
    """The score a query gives a key at each distance when both are all-ones vectors.

    ``scale**2 * (2 / d_head) * sum_i cos(distance * theta'_i)``: 1 at distance 0, and it decays
    (with ripples) as the distance grows: RoPE's long-term decay (Su et al., 2024). ``scale``
    is the method's :attr:`RopeScaling.query_key_scale`.

    Args:
        distances: non-negative offsets, shape ``(n,)``.
        seq_len: input length for dynamic NTK (default: largest distance + 1).

    Returns:
        float64 ``(n,)``.
    """
    dist = check_reals("distances", distances)
    if dist.ndim != 1 or bool((dist < 0).any()):
        raise ValueError(f"distances must be a 1-D tensor of offsets >= 0, got {distances!r}")
    if scaling is not None:
        check_scaling("scaling", scaling)
    if seq_len is not None:
        seq_len = check_positive_int("seq_len", seq_len)
    scaling = scaling or RopeScaling("none")
    length = int(dist.max().item()) + 1 if seq_len is None and dist.numel() else (seq_len or 1)
    speeds = scaling.inverse_frequencies(d_head, base=base, seq_len=length)
    return scaling.query_key_scale**2 * torch.cos(dist[:, None] * speeds[None, :]).mean(dim=1)
