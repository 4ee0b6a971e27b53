"""RoPE as a model's configuration states it: from a ``config.json`` dict to the frequencies.

A Hugging Face model config says how its rotations are built in one dict. transformers v5
calls it ``rope_parameters`` and keeps the base in it (``rope_theta``); older files use the
key ``rope_scaling`` with the base at the top level. Models whose layers differ (Gemma 3's
sliding and global layers, for example) nest one dict per layer type. :func:`rope_settings`
reads either form into a :class:`RopeSettings`, whose :meth:`RopeSettings.inverse_frequencies`
and :attr:`RopeSettings.attention_scaling` are what Hugging Face's ``ROPE_INIT_FUNCTIONS``
(and each model's ``compute_default_rope_parameters``) return, computed with
:mod:`posenc.rope_scaling` in float64. The book's tests check the two agree to float32
rounding for every ``rope_type`` here.

:func:`check_rope_frequencies` is the one comparison that catches a scaling that was ignored
or applied to the wrong layers: it compares the frequencies an implementation uses with the
ones its config asks for, pair by pair, and says which pairs differ and by how much.

:func:`softmax_scale` is the logit scale of DeepSeek's attention, where YaRN's temperature
moves when ``mscale == mscale_all_dim``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from posenc.checks import (
    check_bool,
    check_choice,
    check_instance,
    check_mapping,
    check_positive_float,
    check_positive_int,
    check_reals,
    check_text,
)
from posenc.relative import partial_inverse_frequencies, rope_inverse_frequencies
from posenc.rope_scaling import (
    dynamic_ntk_inverse_frequencies,
    llama3_inverse_frequencies,
    longrope_attention_factor,
    _check_factor_list,
    longrope_inverse_frequencies,
    yarn_inverse_frequencies,
    yarn_mscale,
)

__all__ = [
    "ROPE_TYPES",
    "RopeSettings",
    "rope_settings",
    "layer_types",
    "check_rope_frequencies",
    "frequency_mismatch",
    "softmax_scale",
]

#: The ``rope_type`` values :class:`RopeSettings` computes: transformers' ``ROPE_INIT_FUNCTIONS``
#: keys plus ``"default"`` (each model's own ``compute_default_rope_parameters``).
ROPE_TYPES: tuple[str, ...] = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
#: Types that need the original (pre-training) length.
_NEEDS_ORIGINAL = ("yarn", "longrope", "llama3")


@dataclass(frozen=True)
class RopeSettings:
    """One attention layer's RoPE, as its config states it.

    Attributes:
        rope_type: one of :data:`ROPE_TYPES`.
        rope_theta: the base.
        head_dim: query/key width of a head.
        partial_rotary_factor: share of ``head_dim`` that rotates (1 = all).
        factor: the scaling factor (``None`` where the type has none or derives it).
        original_max_position_embeddings: the pre-training length (yarn, longrope, llama3).
        max_position_embeddings: the config's context length.
        beta_fast, beta_slow, mscale, mscale_all_dim, attention_factor, truncate: YaRN's settings.
        low_freq_factor, high_freq_factor: Llama 3's settings.
        short_factor, long_factor: LongRoPE's per-pair factors.
    """

    rope_type: str
    rope_theta: float
    head_dim: int
    partial_rotary_factor: float = 1.0
    factor: float | None = None
    original_max_position_embeddings: int | None = None
    max_position_embeddings: int | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    attention_factor: float | None = None
    truncate: bool = True
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        check_choice("rope_type", self.rope_type, ROPE_TYPES)
        check_positive_float("rope_theta", self.rope_theta)
        check_positive_int("head_dim", self.head_dim)
        fraction = check_positive_float("partial_rotary_factor", self.partial_rotary_factor)
        if fraction > 1.0:
            raise ValueError(f"partial_rotary_factor must be in (0, 1], got {fraction}")
        for name in ("factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor",
                     "low_freq_factor", "high_freq_factor"):
            if getattr(self, name) is not None:
                check_positive_float(name, getattr(self, name))
        for name in ("original_max_position_embeddings", "max_position_embeddings"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        check_bool("truncate", self.truncate)
        for name in ("short_factor", "long_factor"):
            if getattr(self, name) is not None:
                _check_factor_list(name, getattr(self, name))
        if self.rope_type in ("linear", "dynamic", "llama3") and self.factor is None:
            raise ValueError(f"rope_type {self.rope_type!r} needs a 'factor' in the config's rope parameters")
        if self.rope_type in _NEEDS_ORIGINAL and self.original_max_position_embeddings is None:
            raise ValueError(f"rope_type {self.rope_type!r} needs 'original_max_position_embeddings' "
                             f"(or 'max_position_embeddings') in the config")
        if self.rope_type == "dynamic" and self.max_position_embeddings is None:
            raise ValueError("rope_type 'dynamic' needs 'max_position_embeddings' in the config (its length scale)")
        if self.rope_type == "llama3" and (self.low_freq_factor is None or self.high_freq_factor is None):
            raise ValueError("rope_type 'llama3' needs 'low_freq_factor' and 'high_freq_factor'")
        if self.rope_type == "longrope" and (self.short_factor is None or self.long_factor is None):
            raise ValueError("rope_type 'longrope' needs 'short_factor' and 'long_factor' (one number per pair)")
        if self.rope_type != "proportional" and self.rotary_dim < 2:
            raise ValueError(f"partial_rotary_factor={fraction} of head_dim={self.head_dim} rotates no pair")

    @property
    def rotary_dim(self) -> int:
        """Width of the rotated slice: ``int(head_dim * partial_rotary_factor)``, as transformers computes it
        (``proportional`` keeps the whole ``head_dim`` and zeroes the pairs it does not rotate)."""
        if self.rope_type == "proportional":
            return self.head_dim
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def scaling_factor(self) -> float:
        """The stretch ``s``: ``factor``, or ``max_position_embeddings / original_max_position_embeddings``
        where a yarn or longrope config leaves ``factor`` out (transformers' rule); 1 without scaling."""
        if self.factor is not None:
            return float(self.factor)
        if self.rope_type in ("yarn", "longrope") and self.max_position_embeddings and \
                self.original_max_position_embeddings:
            return self.max_position_embeddings / self.original_max_position_embeddings
        return 1.0

    def inverse_frequencies(self, *, seq_len: int | None = None) -> torch.Tensor:
        """The rotation speed of each pair, float64 ``(rotary_dim // 2,)`` (``(head_dim // 2,)`` for proportional).

        Args:
            seq_len: positions of the current input (largest position + 1), read by ``dynamic``
                (default: ``max_position_embeddings``, as at initialisation) and ``longrope``
                (default: the short factors).
        """
        if seq_len is not None:
            seq_len = check_positive_int("seq_len", seq_len)
        d, base, kind = self.rotary_dim, float(self.rope_theta), self.rope_type
        if kind == "default":
            return rope_inverse_frequencies(d, base=base)
        if kind == "linear":
            return rope_inverse_frequencies(d, base=base) / float(self.factor)  # type: ignore[arg-type]
        if kind == "dynamic":
            length = self.max_position_embeddings
            assert length is not None  # checked in __post_init__
            current = length if seq_len is None else max(check_positive_int("seq_len", seq_len), length)
            return dynamic_ntk_inverse_frequencies(d, seq_len=current, train_len=length,
                                                   factor=float(self.factor), base=base)  # type: ignore[arg-type]
        original = self.original_max_position_embeddings
        if kind == "yarn":
            assert original is not None
            return yarn_inverse_frequencies(d, factor=max(self.scaling_factor, 1.0), train_len=original, base=base,
                                            beta_fast=self.beta_fast or 32.0, beta_slow=self.beta_slow or 1.0,
                                            truncate=self.truncate)
        if kind == "longrope":
            assert original is not None
            return longrope_inverse_frequencies(d, short_factor=self.short_factor, long_factor=self.long_factor,
                                                train_len=original, seq_len=seq_len, base=base)
        if kind == "llama3":
            assert original is not None
            return llama3_inverse_frequencies(d, factor=float(self.factor), train_len=original,  # type: ignore[arg-type]
                                              base=base, low_freq_factor=float(self.low_freq_factor),  # type: ignore[arg-type]
                                              high_freq_factor=float(self.high_freq_factor))  # type: ignore[arg-type]
        # proportional (p-RoPE): the full head's ladder, the slowest pairs stopped, all divided by factor
        speeds = partial_inverse_frequencies(self.head_dim, self.partial_rotary_factor, base=base, ladder="truncated")
        return speeds / (1.0 if self.factor is None else float(self.factor))

    @property
    def attention_scaling(self) -> float:
        """What cos and sin (so queries and keys) are multiplied by: transformers' ``attention_factor``."""
        if self.attention_factor is not None:
            return float(self.attention_factor)
        if self.rope_type == "yarn":
            s = self.scaling_factor
            if self.mscale and self.mscale_all_dim:
                return yarn_mscale(s, self.mscale) / yarn_mscale(s, self.mscale_all_dim)
            return yarn_mscale(s)
        if self.rope_type == "longrope":
            assert self.original_max_position_embeddings is not None
            return longrope_attention_factor(self.scaling_factor, train_len=self.original_max_position_embeddings)
        return 1.0

    def describe(self) -> str:
        """A short phrase: ``"llama3 (factor 8 from 8,192 positions)"``, ``"default"``, ..."""
        if self.rope_type == "default":
            return f"default (base {self.rope_theta:,g})"
        if self.rope_type == "proportional":
            return f"proportional (p-RoPE, {self.partial_rotary_factor:g} of the pairs)"
        where = (f" from {self.original_max_position_embeddings:,} positions"
                 if self.rope_type in _NEEDS_ORIGINAL else "")
        return f"{self.rope_type} (factor {self.scaling_factor:g}{where})"


def _check_config(config: Any) -> Mapping[str, Any]:
    return check_mapping("config", config, min_len=1, what="a dict (a model's config.json)")


def _head_dim(config: Mapping[str, Any]) -> int:
    head_dim = config.get("head_dim")
    if head_dim is not None:
        return check_positive_int("config['head_dim']", head_dim)
    if "hidden_size" not in config or "num_attention_heads" not in config:
        raise ValueError("config needs 'head_dim', or 'hidden_size' and 'num_attention_heads' to derive it")
    hidden = check_positive_int("config['hidden_size']", config["hidden_size"])
    heads = check_positive_int("config['num_attention_heads']", config["num_attention_heads"])
    return hidden // heads


def _rope_dict(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's RoPE dict: ``rope_parameters`` (transformers v5) or ``rope_scaling`` (older files)."""
    new, old = config.get("rope_parameters"), config.get("rope_scaling")
    for name, value in (("rope_parameters", new), ("rope_scaling", old)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"config['{name}'] must be a dict or null, got {type(value).__name__}")
    if new and old and dict(new) != dict(old):
        raise ValueError("config has both 'rope_parameters' and 'rope_scaling' and they differ: "
                         "give one (transformers v5 writes 'rope_parameters')")
    return dict(new or old or {})


def _nested_keys(config: Mapping[str, Any], rope: Mapping[str, Any]) -> list[str]:
    declared = set(config.get("layer_types") or ()) | {"sliding_attention", "full_attention"}
    return [key for key, value in rope.items() if isinstance(value, Mapping) and key in declared]


def layer_types(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The layer types a config gives RoPE settings for (``()`` when one dict serves every layer)."""
    config = _check_config(config)
    return tuple(_nested_keys(config, _rope_dict(config)))


def _number(params: Mapping[str, Any], key: str) -> float | None:
    value = params.get(key)
    return None if value is None else check_positive_float(f"'{key}'", value)


def rope_settings(config: Mapping[str, Any], *, layer_type: str | None = None) -> RopeSettings:
    """Read one layer type's RoPE from a model config (a ``config.json`` loaded as a dict).

    Accepts transformers v5's ``rope_parameters`` (``rope_theta`` inside it, possibly nested by
    layer type) and the older ``rope_scaling`` key with a top-level ``rope_theta`` and
    ``partial_rotary_factor``, and ``"type"`` for ``"rope_type"``. As in transformers, a
    top-level ``original_max_position_embeddings`` (Phi-3's files) takes precedence, and the
    types that need one fall back to ``max_position_embeddings``.

    Args:
        layer_type: which nested dict to read (e.g. ``"full_attention"``); required when the
            config nests its RoPE by layer type, refused when it does not.

    Raises:
        TypeError, ValueError: naming the key or argument that is missing or wrong.
    """
    config = _check_config(config)
    if layer_type is not None:
        check_text("layer_type", layer_type)
    rope = _rope_dict(config)
    nested = _nested_keys(config, rope)
    if nested:
        if layer_type is None:
            raise ValueError(f"the config gives RoPE per layer type ({', '.join(nested)}): pass layer_type")
        if layer_type not in nested:
            raise ValueError(f"layer_type must be one of {nested} for this config, got {layer_type!r}")
        params = dict(rope[layer_type])
    else:
        if layer_type is not None:
            raise ValueError(f"layer_type={layer_type!r}: this config gives one RoPE for every layer (no nesting)")
        params = rope
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"rope_type must be one of {ROPE_TYPES}, got {rope_type!r}")
    theta = params.get("rope_theta", config.get("rope_theta", 10000.0))
    partial = params.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
    max_len = config.get("max_position_embeddings")
    original = None
    if rope_type in _NEEDS_ORIGINAL:
        original = config.get("original_max_position_embeddings") or params.get("original_max_position_embeddings") \
            or max_len
    truncate = params.get("truncate", True)
    if not isinstance(truncate, bool):
        raise TypeError(f"'truncate' must be true or false, got {truncate!r}")
    short, long_ = params.get("short_factor"), params.get("long_factor")
    return RopeSettings(
        rope_type=rope_type, rope_theta=float(theta), head_dim=_head_dim(config),
        partial_rotary_factor=float(partial if partial is not None else 1.0),
        factor=_number(params, "factor"),
        original_max_position_embeddings=None if original is None else check_positive_int(
            "'original_max_position_embeddings'", original),
        max_position_embeddings=None if max_len is None else check_positive_int("'max_position_embeddings'", max_len),
        beta_fast=_number(params, "beta_fast"), beta_slow=_number(params, "beta_slow"),
        mscale=_number(params, "mscale"), mscale_all_dim=_number(params, "mscale_all_dim"),
        attention_factor=_number(params, "attention_factor"), truncate=truncate,
        low_freq_factor=_number(params, "low_freq_factor"), high_freq_factor=_number(params, "high_freq_factor"),
        short_factor=None if short is None else tuple(float(x) for x in short),
        long_factor=None if long_ is None else tuple(float(x) for x in long_),
    )


def _ranges(indices: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3–5, 9"``."""
    parts, start = [], None
    for i, index in enumerate(indices):
        if start is None:
            start = index
        if i + 1 == len(indices) or indices[i + 1] != index + 1:
            parts.append(f"{start}" if start == index else f"{start}–{index}")
            start = None
    return ", ".join(parts)


def _frequencies(name: str, value: Any) -> torch.Tensor:
    """Frequencies (any shape but a single number) as a flat float64 tensor."""
    tensor = check_reals(name, value)
    if tensor.ndim == 0:
        raise ValueError(f"{name} must be a sequence of frequencies (one per rotated pair), got the single number "
                         f"{tensor.item()!r}")
    return tensor.reshape(-1)


def frequency_mismatch(expected: torch.Tensor, got: Any, *, rtol: float = 1e-5) -> list[int]:
    """The pairs whose speed in ``got`` differs from ``expected`` by more than ``rtol`` (relative).

    A pair that should not rotate (expected 0) must be 0. Raises a ValueError if the shapes differ.
    """
    expected = _frequencies("expected", expected)
    got = _frequencies("got", got)
    rtol = check_positive_float("rtol", rtol)
    if got.shape != expected.shape:
        raise ValueError(f"got {got.numel()} frequencies, the config gives {expected.numel()} (one per rotated pair)")
    bad = (got - expected).abs() > rtol * expected.abs()
    return [int(i) for i in bad.nonzero().flatten()]


def check_rope_frequencies(
    config: Mapping[str, Any], inv_freq: Any, *, layer_type: str | None = None, seq_len: int | None = None,
    rtol: float = 1e-5,
) -> str:
    """Check the frequencies an implementation uses against the ones ``config`` asks for.

    The one comparison that catches a scaling that was ignored (or applied to other layers
    than the config says): ``inv_freq`` against :meth:`RopeSettings.inverse_frequencies`,
    pair by pair, to ``rtol`` (float32 rounding passes).

    Returns:
        a one-line summary when they agree.

    Raises:
        AssertionError: naming the pairs that differ, by how much, and whether ``inv_freq``
            is the unscaled ladder (the scaling was ignored).
    """
    settings = rope_settings(config, layer_type=layer_type)
    got = _frequencies("inv_freq", inv_freq)
    rtol = check_positive_float("rtol", rtol)
    expected = settings.inverse_frequencies(seq_len=seq_len)
    where = f" ({layer_type} layers)" if layer_type else ""
    if got.shape != expected.shape:
        raise AssertionError(f"{got.numel()} frequencies{where}, but the config's {settings.describe()} gives "
                             f"{expected.numel()}: the rotated width differs")
    bad = frequency_mismatch(expected, got, rtol=rtol)
    if bad:
        ratio = got[bad] / expected[bad].where(expected[bad] != 0, torch.ones_like(expected[bad]))
        plain = rope_inverse_frequencies(settings.rotary_dim, base=settings.rope_theta) \
            if settings.rope_type != "proportional" else None
        ignored = plain is not None and plain.shape == got.shape and not frequency_mismatch(plain, got, rtol=rtol)
        hint = (": these are the unscaled frequencies, so the config's scaling was ignored" if ignored else "")
        raise AssertionError(
            f"pairs {_ranges(bad)} of {expected.numel()}{where} differ from the config's {settings.describe()}: "
            f"they turn up to {float(ratio.max()):.3g}× as fast as the config asks (at least "
            f"{float(ratio.min()):.3g}×){hint}"
        )
    return f"{expected.numel()} frequencies{where} match the config's {settings.describe()} to {rtol:g}"


def softmax_scale(qk_head_dim: int, settings: RopeSettings | None = None) -> float:
    """The attention logit scale of DeepSeek-V2/V3 (multi-head latent attention).

    ``qk_head_dim ** -0.5``, multiplied by ``yarn_mscale(factor, mscale_all_dim) ** 2`` when the
    config's YaRN sets ``mscale_all_dim`` (transformers' ``yarn_apply_mscale``; DeepSeek's
    reference code squares its ``mscale`` the same way). With ``mscale == mscale_all_dim`` YaRN's
    own factor on cos and sin is 1 (:func:`posenc.rope_scaling.yarn_attention_factor`): the whole
    temperature is here, on every logit, including the dimensions that do not rotate.
    """
    scale = check_positive_int("qk_head_dim", qk_head_dim) ** -0.5
    if settings is not None:
        check_instance("settings", settings, RopeSettings, what="a RopeSettings (rope_settings(config)) or None")
    if settings is not None and settings.rope_type == "yarn" and settings.mscale_all_dim:
        m = yarn_mscale(settings.scaling_factor, settings.mscale_all_dim)
        scale *= m * m
    return scale
