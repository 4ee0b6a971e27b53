"""Position schemes by name: the one place that knows every scheme.

:class:`posenc.models.TinyTransformer` takes a scheme *name* and its options (so a grid
of experiments is a list of names); this module turns them into a
:class:`posenc.schemes.PositionScheme`. It imports the modules that define schemes,
never the reverse, so the dependency runs one way:
``schemes <- relative, hybrid <- registry <- models``.

=========================  ==============================================  ==================================
name                       scheme                                          options
=========================  ==============================================  ==================================
``none``                   no position information                         —
``sinusoidal``             fixed sinusoids (:mod:`posenc.sinusoidal`)      ``base``, ``layout``
``learned``                learned table (:mod:`posenc.learned`)           ``init``, ``extrapolation``
``rope``                   rotary (:mod:`posenc.relative`)                 ``base``, ``layout``
``alibi``                  linear biases (:mod:`posenc.relative`)          —
``t5_bias``                T5's learned buckets (:mod:`posenc.relative`)   ``bidirectional``, ``num_buckets``, ``max_distance``, ``init_std``
``hybrid-scaled-sinusoid`` frozen sinusoid, learned scale (:mod:`~posenc.hybrid`)  ``base``
``hybrid-factored``        low-rank learned table (:mod:`posenc.hybrid`)   ``rank``, ``init``
``hybrid-hierarchical``    segment + offset tables (:mod:`posenc.hybrid`)  ``segment_len``, ``n_segments``, ``init``
=========================  ==============================================  ==================================

A reader's own scheme joins with :func:`register_scheme` (chapter 9 shows one).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from posenc.checks import check_choice, check_positive_int
from posenc.hybrid import (
    FactoredPositionEmbedding,
    HierarchicalPositionEmbedding,
    HybridScheme,
    ScaledSinusoidalEmbedding,
)
from posenc.learned import INIT_CHOICES
from posenc.relative import AlibiScheme, RopeScheme, T5BiasScheme
from posenc.schemes import LearnedScheme, NoPosition, PositionScheme, SinusoidalScheme, reject_options

__all__ = ["register_scheme", "available_schemes", "make_position_scheme"]

#: A factory is called as ``factory(*, d_model, n_heads, max_len, **options)``.
SchemeFactory = Callable[..., PositionScheme]


def _make_none(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("none", options, ())
    return NoPosition()


def _make_sinusoidal(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("sinusoidal", options, ("base", "layout"))
    return SinusoidalScheme(d_model, initial_len=max_len, **options)


def _make_learned(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("learned", options, ("init", "extrapolation"))
    init = options.get("init", "bert")
    check_choice("init", init, INIT_CHOICES)
    return LearnedScheme(d_model, max_len, init=init, extrapolation=options.get("extrapolation"))


def _make_rope(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("rope", options, ("base", "layout"))
    return RopeScheme(d_model, n_heads, **options)


def _make_alibi(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("alibi", options, ())
    return AlibiScheme(n_heads)


def _make_t5_bias(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("t5_bias", options, ("bidirectional", "num_buckets", "max_distance", "init_std"))
    return T5BiasScheme(d_model, n_heads, **options)


def _make_scaled(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("hybrid-scaled-sinusoid", options, ("base",))
    return HybridScheme(ScaledSinusoidalEmbedding(d_model, **options))


def _make_factored(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    reject_options("hybrid-factored", options, ("rank", "init"))
    rank = options.pop("rank", min(8, max_len, d_model))
    return HybridScheme(FactoredPositionEmbedding(max_len, d_model, rank, **options))


def _make_hierarchical(*, d_model: int, n_heads: int, max_len: int, **options: Any) -> PositionScheme:
    """Default ``segment_len``: ``ceil(sqrt(max_len))``, which makes the two tables about equal."""
    reject_options("hybrid-hierarchical", options, ("segment_len", "n_segments", "init"))
    max_len = check_positive_int("max_len", max_len)
    segment_len = check_positive_int("segment_len", options.pop("segment_len", math.isqrt(max_len - 1) + 1))
    n_segments = options.pop("n_segments", -(-max_len // segment_len))
    return HybridScheme(HierarchicalPositionEmbedding(n_segments, segment_len, d_model, **options))



_REGISTRY: dict[str, SchemeFactory] = {
    "none": _make_none,
    "sinusoidal": _make_sinusoidal,
    "learned": _make_learned,
    "rope": _make_rope,
    "alibi": _make_alibi,
    "hybrid-scaled-sinusoid": _make_scaled,
    "hybrid-factored": _make_factored,
    "hybrid-hierarchical": _make_hierarchical,
    "t5_bias": _make_t5_bias,
}


def register_scheme(name: str, factory: SchemeFactory) -> None:
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


def available_schemes() -> list[str]:
    """Names of every registered scheme: the built-in ones, then any added with :func:`register_scheme`."""
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
    check_choice("name", name, list(_REGISTRY))
    scheme = _REGISTRY[name](d_model=d_model, n_heads=n_heads, max_len=max_len, **options)
    if not isinstance(scheme, PositionScheme):
        raise TypeError(f"the factory for scheme {name!r} returned {type(scheme).__name__}, not a PositionScheme")
    return scheme

