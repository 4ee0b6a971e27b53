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
``rope``                   rotary (:mod:`posenc.relative`)                 ``base``, ``layout``, ``partial``, ``ladder``
``alibi``                  linear biases (:mod:`posenc.relative`)          —
``t5_bias``                T5's learned buckets (:mod:`posenc.relative`)   ``bidirectional``, ``num_buckets``, ``max_distance``, ``init_std``
``hybrid-scaled-sinusoid`` frozen sinusoid, learned scale (:mod:`~posenc.hybrid`)  ``base``
``hybrid-factored``        low-rank learned table (:mod:`posenc.hybrid`)   ``rank``, ``init``
``hybrid-hierarchical``    segment + offset tables (:mod:`posenc.hybrid`)  ``segment_len``, ``n_segments``, ``init``
=========================  ==============================================  ==================================

Each name has a :class:`SchemeSpec`: its factory, the class it builds (what it supports
beyond its options), its colour in figures, the option sets the book's grids train, and the
options that depend on the model it sits in. Adding a scheme is one entry here.

A reader's own scheme joins with :func:`register_scheme` (chapter 9 shows one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from posenc.checks import check_choice, check_positive_int
from posenc.hybrid import (
    FactoredPositionEmbedding,
    HierarchicalPositionEmbedding,
    HybridScheme,
    ScaledSinusoidalEmbedding,
)
from posenc.learned import INIT_CHOICES
from posenc.palette import DASHES, OKABE_ITO, SYMBOLS
from posenc.relative import AlibiScheme, RopeScheme, T5BiasScheme
from posenc.schemes import LearnedScheme, NoPosition, PositionScheme, SinusoidalScheme, reject_options

__all__ = ["SchemeSpec", "register_scheme", "unregister_scheme", "available_schemes", "scheme_spec", "builtin_specs",
           "scheme_style", "make_position_scheme"]

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
    reject_options("rope", options, ("base", "layout", "partial", "ladder"))
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



@dataclass(frozen=True)
class SchemeSpec:
    """Everything posenc knows about a scheme name: the one place a scheme is declared.

    Attributes:
        name: the name models and configs use, e.g. ``"rope"``.
        factory: called as ``factory(*, d_model, n_heads, max_len, **options)``; returns the scheme.
        scheme_type: the class the factory returns; its class attributes say what the scheme
            accepts beyond its options (``supports_scaling``: RoPE frequency scalings;
            ``has_table``: a learned table whose end the workarounds of
            :mod:`posenc.extrapolate` can read past).
        colour, dash, symbol: how the scheme is drawn in every figure that compares schemes:
            an Okabe–Ito colour, and a line style and marker that keep it apart in grey print.
        variants: the option sets the book compares scheme by scheme (chapter 6's grid):
            one per learned-table initialisation, ``({},)`` for most schemes, ``()`` for a
            scheme that joins only the task suites.
        suite_options: the options the task suites (chapters 6, 7, 9, 10) train it with, or
            ``None`` if it is not in the suites.
        context_options: options that depend on the model the scheme sits in: called with
            ``causal`` (the model's mask); what it returns is used unless the caller gives the
            option. T5's buckets look both ways in an encoder and only back in a decoder.
    """

    name: str
    factory: SchemeFactory
    scheme_type: type[PositionScheme] = PositionScheme
    colour: str = "#666666"
    dash: str = "solid"
    symbol: str = "circle"
    variants: tuple[Mapping[str, Any], ...] = ({},)
    suite_options: Mapping[str, Any] | None = None
    context_options: Callable[[bool], dict[str, Any]] | None = None

    def options_for(self, *, causal: bool, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The options a model with this mask builds the scheme with: context defaults, then ``options``."""
        defaults = self.context_options(causal) if self.context_options is not None else {}
        return {**defaults, **dict(options or {})}


_BUILTIN: tuple[SchemeSpec, ...] = (
    SchemeSpec("none", _make_none, NoPosition, colour="#000000", dash=DASHES[0], symbol=SYMBOLS[0],
               suite_options={}),
    SchemeSpec("sinusoidal", _make_sinusoidal, SinusoidalScheme, colour=OKABE_ITO[0], dash=DASHES[1],
               symbol=SYMBOLS[1], suite_options={}),
    SchemeSpec("learned", _make_learned, LearnedScheme, colour=OKABE_ITO[1], dash=DASHES[2], symbol=SYMBOLS[2],
               variants=tuple({"init": init} for init in ("bert", "gpt2", "uniform", "sinusoidal")),
               suite_options={"init": "bert"}),
    SchemeSpec("hybrid-scaled-sinusoid", _make_scaled, HybridScheme, colour=OKABE_ITO[4], dash=DASHES[3],
               symbol=SYMBOLS[3]),
    SchemeSpec("hybrid-factored", _make_factored, HybridScheme, colour=OKABE_ITO[6], dash=DASHES[4],
               symbol=SYMBOLS[4]),
    SchemeSpec("hybrid-hierarchical", _make_hierarchical, HybridScheme, colour="#999999", dash=DASHES[5],
               symbol=SYMBOLS[5]),
    SchemeSpec("rope", _make_rope, RopeScheme, colour=OKABE_ITO[2], dash=DASHES[0], symbol=SYMBOLS[6],
               suite_options={}),
    SchemeSpec("alibi", _make_alibi, AlibiScheme, colour=OKABE_ITO[3], dash=DASHES[1], symbol=SYMBOLS[7],
               suite_options={}),
    SchemeSpec("t5_bias", _make_t5_bias, T5BiasScheme, colour=OKABE_ITO[5], dash=DASHES[3], symbol=SYMBOLS[8],
               variants=(), suite_options={}, context_options=lambda causal: {"bidirectional": not causal}),
)
_REGISTRY: dict[str, SchemeSpec] = {spec.name: spec for spec in _BUILTIN}


def register_scheme(
    name: str,
    factory: SchemeFactory,
    *,
    scheme_type: type[PositionScheme] = PositionScheme,
    colour: str = "#666666",
    dash: str = "solid",
    symbol: str = "circle",
    context_options: Callable[[bool], dict[str, Any]] | None = None,
) -> SchemeSpec:
    """Make a position scheme available by name.

    A scheme registered here can be trained and plotted by name; it joins none of the
    book's stored grids (their lists are the built-in schemes'), so they never change silently.

    Args:
        name: the scheme's name, e.g. ``"my-rope"``; re-registering a name replaces it.
        factory: called as ``factory(*, d_model, n_heads, max_len, **options)`` and
            returning a :class:`PositionScheme`.
        scheme_type: the class the factory returns (what it supports beyond its options).
        colour, dash, symbol: how figures that compare schemes draw it (plotly's names).
        context_options: options that depend on the model's mask (see :class:`SchemeSpec`).

    Returns:
        The registered :class:`SchemeSpec`.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}")
    if not (isinstance(scheme_type, type) and issubclass(scheme_type, PositionScheme)):
        raise TypeError(f"scheme_type must be a PositionScheme subclass, got {scheme_type!r}")
    if context_options is not None and not callable(context_options):
        raise TypeError(f"context_options must be callable or None, got {context_options!r}")
    spec = SchemeSpec(name, factory, scheme_type, colour=colour, dash=dash, symbol=symbol, variants=(),
                      context_options=context_options)
    _REGISTRY[name] = spec
    return spec


def unregister_scheme(name: str) -> None:
    """Remove a scheme added with :func:`register_scheme` (the built-in ones cannot be removed)."""
    check_choice("name", name, [n for n in _REGISTRY if n not in {s.name for s in _BUILTIN}])
    del _REGISTRY[name]


def available_schemes() -> list[str]:
    """Names of every registered scheme: the built-in ones, then any added with :func:`register_scheme`."""
    return list(_REGISTRY)


def scheme_spec(name: str) -> SchemeSpec:
    """The :class:`SchemeSpec` of a registered scheme (ValueError naming the choices otherwise)."""
    check_choice("name", name, list(_REGISTRY))
    return _REGISTRY[name]


def builtin_specs() -> tuple[SchemeSpec, ...]:
    """The built-in schemes' specs, in the order the book discusses them (the grids' order)."""
    return _BUILTIN


def scheme_style(name: str) -> tuple[str, str, str]:
    """``(colour, dash, symbol)`` of a registered scheme; grey, solid, circle for a name that is not registered."""
    spec = _REGISTRY.get(name)
    return (spec.colour, spec.dash, spec.symbol) if spec is not None else ("#666666", "solid", "circle")


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
    spec = scheme_spec(name)
    scheme = spec.factory(d_model=d_model, n_heads=n_heads, max_len=max_len, **options)
    if not isinstance(scheme, PositionScheme):
        raise TypeError(f"the factory for scheme {name!r} returned {type(scheme).__name__}, not a PositionScheme")
    return scheme
