"""Figures for :mod:`posenc.rope_scaling` (chapter 11): what each method does to RoPE's
frequency ladder, the per-pair angle coverage, the score-vs-distance curve, and attention maps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from posenc.checks import (
    check_choice,
    check_choice_sequence,
    check_mapping,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
)
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import SEQUENTIAL, colour, describe, new_figure
from posenc.rope_scaling import METHOD_NAMES, METHODS, RopeScaling, pair_diagnostic, relative_score_curve

__all__ = ["SETTINGS", "FACTORS", "method_colour", "frequency_ladder_figure", "scaling_explorer", "attention_maps_figure"]

#: Settings of the explorer: name -> (d_head, train_len, base).
SETTINGS: dict[str, tuple[int, int, float]] = {
    "this book's model (d_head 16, 16 tokens)": (16, 16, 10000.0),
    "Llama 2 (d_head 128, 4,096 tokens)": (128, 4096, 10000.0),
}


def method_colour(method: str) -> str:
    """One colour per method, the same in every figure of the chapter (plain RoPE is black)."""
    check_choice("method", method, METHODS)
    return "#000000" if method == "none" else colour(METHODS.index(method) - 1)


def frequency_ladder_figure(
    d_head: int = 16, *, train_len: int = 16, factor: float = 4.0, base: float = 10000.0,
    methods: Sequence[str] = ("pi", "ntk", "yarn", "llama3"),
) -> go.Figure:
    """Each method's speed of every pair, divided by the trained speed (log scale).

    1 means the pair turns as in training; ``1 / factor`` means it is interpolated fully.
    Dynamic NTK is drawn at the length ``factor * train_len`` (where it equals NTK-aware).

    Returns:
        One trace per method, ``x`` = pair index, ``y`` = speed ratio.
    """
    d_head, train_len = check_positive_int("d_head", d_head), check_positive_int("train_len", train_len)
    factor = check_positive_float("factor", factor)
    methods = check_choice_sequence("methods", methods, METHODS, min_len=1)
    target = round(factor * train_len)
    fig = new_figure(
        title=f"What each method does to the speeds (s = {factor:g}, trained on {train_len} tokens)",
        x_title="coordinate pair i (0 = fastest)", y_title="speed after scaling ÷ trained speed",
        alt=f"Line chart over the {d_head // 2} coordinate pairs of the speed each scaling method gives a pair, "
        f"divided by its trained speed, on a log axis from 1/{factor:g} to 1. PI is flat at 1/{factor:g}; "
        "NTK-aware starts at 1 for the fastest pair and falls geometrically; YaRN and Llama 3 keep fast pairs at 1 "
        "and divide slow pairs by the factor, with a ramp between.", height=440)
    pairs = list(range(d_head // 2))
    turns = [row.turns_in_training for row in pair_diagnostic(d_head, train_len=train_len, target_len=target,
                                                               base=base)]
    for method in methods:
        scaling = RopeScaling(method, factor=1.0 if method == "dynamic_ntk" else factor, train_len=train_len)
        rows = pair_diagnostic(d_head, train_len=train_len, target_len=target, scaling=scaling, base=base)
        fig.add_scatter(x=pairs, y=[row.speed_ratio for row in rows], mode="lines+markers",
                        name=METHOD_NAMES[method], line=dict(color=method_colour(method), width=2),
                        customdata=turns, hovertemplate="pair %{x}: ×%{y:.3f} (turns in training: %{customdata:.2f})"
                        f"<extra>{METHOD_NAMES[method]}</extra>")
    fig.update_yaxes(type="log", range=[math.log10(1 / factor) - 0.08, 0.08])
    return fig


def _coverage_frame(method: str, factor: float, setting: str) -> Frame:
    d_head, train_len, base = SETTINGS[setting]
    target = max(train_len, round(factor * train_len))
    scaling = RopeScaling.for_length(method, train_len=train_len, target_len=target) if method != "none" \
        else RopeScaling("none", train_len=train_len)
    rows = pair_diagnostic(d_head, train_len=train_len, target_len=target, scaling=scaling, base=base)
    pairs = [row.pair for row in rows]
    distances = np.unique(np.linspace(0, target - 1, 200).round()).astype(int)
    trained = relative_score_curve(distances[distances < train_len], d_head, base=base).numpy()
    scaled = relative_score_curve(distances, d_head, scaling=scaling, base=base, seq_len=target).numpy()
    new = sum(row.meets_new_angles for row in rows)
    return Frame(
        traces={0: {"x": pairs, "y": [row.max_angle_trained for row in rows]},
                1: {"x": pairs, "y": [row.max_angle_at_target for row in rows],
                    "marker.color": method_colour(method), "name": f"at {target:,} tokens"},
                2: {"x": pairs, "y": [2 * math.pi] * len(pairs)},
                3: {"x": distances[distances < train_len], "y": trained},
                4: {"x": distances, "y": scaled, "line.color": method_colour(method)}},
        layout={"title.text": f"{METHOD_NAMES[method]}, {train_len:,} → {target:,} tokens: "
                              f"{new} of {len(rows)} pairs meet angles training never showed",
                "xaxis2.range": [0, target - 1]},
    )


#: The scale factors the static page of :func:`scaling_explorer` precomputes (a live kernel takes any in 1 .. 32).
FACTORS: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0)


def scaling_explorer(*, method: str = "none", factor: float = 4.0, setting: str | None = None) -> Explorer:
    """Explorer: method x scale factor x setting -> per-pair angle coverage and the score-vs-distance curve.

    Left: for each pair, the largest offset angle training showed (grey) and the largest
    the stretched input brings (colour), log scale, with a line at one full turn (2π):
    a pair below that line in training whose coloured bar rises above its grey bar meets
    angles it never saw. Right: the score an all-ones query gives an all-ones key against
    distance (:func:`posenc.rope_scaling.relative_score_curve`), trained range in grey.

    Returns:
        An Explorer with controls ``method``, ``factor`` and ``setting``.
    """
    setting = next(iter(SETTINGS)) if setting is None else check_choice("setting", setting, tuple(SETTINGS))
    method = check_choice("method", method, METHODS)
    factor = check_choice("factor", factor, FACTORS)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=("largest angle per pair", "score against distance"))
    fig.add_trace(go.Bar(x=[0], y=[1.0], name="in training", marker_color="#BBBBBB"), row=1, col=1)
    fig.add_trace(go.Bar(x=[0], y=[1.0], name="stretched"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0], y=[2 * math.pi], mode="lines", name="one full turn (2π)",
                             line=dict(color="#555555", dash="dash")), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0], y=[1.0], mode="lines", name="plain RoPE, trained distances",
                             line=dict(color="#BBBBBB", width=6, dash="solid")), row=1, col=2)
    # Told apart from the thick light-grey reference by width and lightness: both solid.
    fig.add_trace(go.Scatter(x=[0], y=[1.0], mode="lines", name="with the method", line=dict(dash="solid")),
                  row=1, col=2)
    fig.update_yaxes(type="log", dtick=1, title_text="angle (radians)", row=1, col=1)
    fig.update_xaxes(title_text="coordinate pair i (0 = fastest)", row=1, col=1)
    fig.update_xaxes(title_text="distance (positions)", row=1, col=2)
    fig.update_yaxes(title_text="score (all-ones query and key)", row=1, col=2)
    # no legend: under the slider of the static page there is no room; the titles and caption name the colours
    fig.update_layout(height=460, barmode="group", showlegend=False)
    describe(fig, alt="What a RoPE scaling method does to each coordinate pair's angles and to the score against "
             "distance, in two panels. Left: a bar chart over coordinate pairs of the largest offset angle seen in "
             "training (grey) and the largest one a stretched input brings with the chosen method (colour), on a "
             "log axis with a dashed line at one full turn. Right: the score of an all-ones query against an "
             "all-ones key as distance grows, for the trained distances (grey) and with the chosen method.")
    return Explorer(
        fig, _coverage_frame,
        [Control("method", list(METHODS), label="method", default=method),
         Control("factor", list(FACTORS), label="scale factor s", default=factor, live=(1.0, 32.0, 0.5)),
         Control("setting", list(SETTINGS), label="model", default=setting)],
        title="What each RoPE scaling method does to the angles of every pair and to the score",
        caption="Grey: what training showed; colour: the chosen method on the longer input; dashed: one full turn "
        "(2π). Choose a method, a factor and a model. PI shrinks every bar by s, so no pair meets a new angle, "
        "but the fast pairs' offset-1 angles shrink too. NTK-aware scaling, YaRN and Llama 3 keep the pairs that "
        "turned many times in training (each by its own threshold: on this book's model Llama 3's keeps none) "
        "and slow down the slow ones. YaRN's temperature lifts the whole curve on the right.")


def attention_maps_figure(maps: Mapping[str, Any], *, train_len: int, head: int, layer: int) -> go.Figure:
    """Side-by-side heatmaps of one head's attention weights, one per method.

    Args:
        maps: title -> ``(seq_len, seq_len)`` weights (rows: queries, columns: keys).
        train_len: drawn as lines: positions from there on were never seen in training.
        head, layer: for the title.
    """
    train_len = check_positive_int("train_len", train_len)
    head, layer = check_nonnegative_int("head", head), check_nonnegative_int("layer", layer)
    titles = list(check_mapping("maps", maps, min_len=1, what="a dict of title -> (seq_len, seq_len) weights",
                                item="attention map"))
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=titles, horizontal_spacing=0.04)
    for index, title in enumerate(titles, start=1):
        weights = np.asarray(maps[title], dtype=float)
        if weights.ndim != 2 or weights.shape[0] != weights.shape[1]:
            raise ValueError(f"maps[{title!r}] must be a square (seq_len, seq_len) array, got shape {weights.shape}")
        fig.add_trace(go.Heatmap(z=weights, colorscale=SEQUENTIAL, zmin=0, zmax=1, showscale=index == len(titles),
                                 colorbar=dict(title=dict(text="weight"), thickness=12),
                                 hovertemplate="query %{y}, key %{x}: %{z:.2f}<extra></extra>"), row=1, col=index)
        edge = train_len - 0.5
        fig.add_shape(type="line", x0=-0.5, x1=weights.shape[1] - 0.5, y0=edge, y1=edge, line=dict(color="#D55E00",
                      width=1.5, dash="dot"), row=1, col=index)
        fig.update_yaxes(autorange="reversed", showgrid=False, showticklabels=index == 1, row=1, col=index)
        fig.update_xaxes(showgrid=False, title_text="key position", row=1, col=index)
    fig.update_yaxes(title_text="query position", row=1, col=1)
    fig.update_layout(height=400, title=dict(text=f"Layer {layer}, head {head}: where each query looks"))
    return describe(fig, alt=f"{len(titles)} heatmaps of one attention head's weights, queries as rows and keys as "
                    f"columns, with a dotted line at query position {train_len}, the first one never seen in "
                    f"training. Panels: {', '.join(titles)}.")
