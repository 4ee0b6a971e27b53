"""Figures of training results (chapters 6 to 10), in the book's style (:mod:`posenc.plots`).

* :func:`bar_figure`: mean ± std bars with one dot per seed, for :func:`posenc.results.summarize` rows.
* :func:`errorbar_figure`: lines of means with error bars or shaded bands (learning curves,
  accuracy against test length or position).
* :func:`position_accuracy_explorer`: chapter 7's explorer of accuracy at each position,
  one scheme (and workaround) and test length at a time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from posenc.checks import (
    check_bool,
    check_choice,
    check_int_sequence,
    check_mapping,
    check_positive_int,
    check_real,
    check_real_pair,
    check_records,
    check_text,
)
from posenc.interactive import Control, Explorer, Frame
from posenc.palette import DASHES, SYMBOLS
from posenc.plots import OKABE_ITO, colour, new_figure
from posenc.results import RunResult, check_results, field_values, group_by_label, position_curves

__all__ = ["bar_figure", "errorbar_figure", "position_accuracy_explorer"]

#: Colours of thin lines: the palette without its last colour, yellow, too pale on white.
_LINE_COLOURS: tuple[str, ...] = tuple(colour(i) for i in range(len(OKABE_ITO) - 1))


def bar_figure(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    y_title: str,
    alt: str,
    caption: str | None = None,
    y_range: tuple[float, float] | None = (0.0, 1.05),
    reference: tuple[float, str] | None = None,
    height: int = 420,
) -> go.Figure:
    """Bars of ``mean`` with ``std`` error bars, plus one dot per seed.

    Args:
        rows: one bar each, with ``"label"``, ``"mean"``, ``"std"`` and ``"values"`` (one
            number per seed): rows of :func:`posenc.results.summarize` or
            :func:`posenc.results.reach_summary` dicts.
        reference: optional ``(y, text)`` drawn as a dashed horizontal line (e.g. chance).
        y_range: the y axis range; ``None`` lets plotly choose.
    """
    rows = check_records("rows", rows, ("label", "mean", "std", "values"))
    if y_range is not None:
        y_range = check_real_pair("y_range", y_range, increasing=True)
    if reference is not None:
        if not isinstance(reference, tuple | list) or len(reference) != 2:
            raise TypeError(f"reference must be a (y, text) pair such as (0.5, 'chance') or None, got {reference!r}")
        reference = (check_real("reference[0]", reference[0]), check_text("reference[1]", reference[1]))
    height = check_positive_int("height", height)
    fig = new_figure(title=title, x_title="position scheme", y_title=y_title, alt=alt, caption=caption, height=height)
    labels = [row["label"] for row in rows]
    fig.add_trace(go.Bar(
        x=labels, y=[row["mean"] for row in rows], name="mean over seeds", marker_color=colour(0),
        error_y=dict(type="data", array=[row["std"] for row in rows], visible=True, color="#333"),
        hovertemplate="%{x}: mean %{y:.3f}<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=[row["label"] for row in rows for _ in row["values"]], y=[v for row in rows for v in row["values"]],
        mode="markers", name="one seed", marker=dict(color=colour(1), size=7, line=dict(color="#333", width=1)),
        hovertemplate="%{x}: %{y:.3f}<extra>one seed</extra>",
    ))
    if reference is not None:
        fig.add_hline(y=reference[0], line_dash="dash", line_color="#555", annotation_text=reference[1],
                      annotation_position="top right")
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    fig.update_layout(legend=dict(orientation="h", y=-0.3), margin=dict(b=140))
    return fig


def errorbar_figure(
    series: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    alt: str,
    caption: str | None = None,
    band: bool = False,
    log_x: bool = False,
    y_range: tuple[float, float] | None = (0.0, 1.05),
    bounds: tuple[float, float] | None = (0.0, 1.0),
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    legend_below: bool = False,
    height: int = 440,
) -> go.Figure:
    """Lines of means with error bars (or shaded ±std bands), one per series.

    Args:
        series: label -> ``(xs, means, stds)``, three sequences of one length each (e.g. from
            :func:`posenc.results.curve`, :func:`~posenc.results.accuracy_by_length` or
            :func:`~posenc.results.position_curve`).
        band: draw ±std as a shaded band instead of error bars (for dense x, e.g. steps).
        bounds: the range the values can take (accuracy: 0 to 1); bands are clipped to it.
        styles: optional label -> line properties (e.g. ``{"color": ..., "dash": "dot"}``) to
            group related series; others get the palette in order.
        legend_below: put the legend under the plot (for many series).
    """
    check_mapping("series", series, min_len=1, what="a dict of label -> (xs, means, stds)")
    for label, triple in series.items():
        if not isinstance(triple, tuple | list) or len(triple) != 3 \
                or not all(hasattr(part, "__len__") and not isinstance(part, str) for part in triple) \
                or not len(triple[0]) == len(triple[1]) == len(triple[2]):
            raise ValueError(f"series[{label!r}] must be (xs, means, stds) of one length each")
    band, log_x = check_bool("band", band), check_bool("log_x", log_x)
    legend_below = check_bool("legend_below", legend_below)
    if y_range is not None:
        y_range = check_real_pair("y_range", y_range, increasing=True)
    if bounds is not None:
        bounds = check_real_pair("bounds", bounds, increasing=True)
    if styles is not None:
        check_mapping("styles", styles, what="a dict of label -> line properties")
    unknown = sorted(set(styles or {}) - set(series))
    if unknown:
        raise ValueError(f"styles names series {unknown} that are not in series; series: {list(series)}")
    height = check_positive_int("height", height)
    fig = new_figure(title=title, x_title=x_title, y_title=y_title, alt=alt, caption=caption, height=height)
    low, high = bounds if bounds is not None else (-math.inf, math.inf)
    for i, (label, (xs, means, stds)) in enumerate(series.items()):
        # Line style and marker per series as well as colour: in grey print colour alone is lost
        # (figure 6.2's six solid lines printed as one grey).
        line: dict[str, Any] = dict(color=_LINE_COLOURS[i % len(_LINE_COLOURS)], width=2,
                                    dash=DASHES[i % len(DASHES)])
        line.update((styles or {}).get(label, {}))
        marker = dict(symbol=SYMBOLS[i % len(SYMBOLS)], size=5 if band else 6, color=line["color"])
        line_colour = line["color"]
        if band:
            # a band past what the values can reach (accuracy above 1) would only mislead
            upper = [min(m + s, high) for m, s in zip(means, stds, strict=True)]
            lower = [max(m - s, low) for m, s in zip(means, stds, strict=True)]
            fig.add_trace(go.Scatter(x=list(xs) + list(xs)[::-1], y=upper + lower[::-1], fill="toself",
                                     fillcolor=_rgba(line_colour, 0.18), line=dict(width=0), hoverinfo="skip",
                                     showlegend=False, legendgroup=label))
            fig.add_trace(go.Scatter(x=list(xs), y=list(means), mode="lines+markers", name=label, line=line,
                                     marker=marker, legendgroup=label))
        else:
            fig.add_trace(go.Scatter(
                x=list(xs), y=list(means), mode="lines+markers", name=label, line=line, marker=marker,
                error_y=dict(type="data", array=list(stds), visible=True, color=line_colour),
            ))
    if log_x:
        fig.update_xaxes(type="log")
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    if legend_below:
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0), margin=dict(b=170))
    return fig


def position_accuracy_explorer(
    results: Sequence[RunResult],
    *,
    lengths: Sequence[int] | None = None,
    strategies: Sequence[str] | None = None,
    scheme: str | None = None,
    length: int | None = None,
    caption: str | None = None,
) -> Explorer:
    """Explorer: accuracy at each position of a test sequence, for one scheme and test length.

    Each frame shows the mean over seeds of the accuracy at every labelled position (a line)
    with a band of one standard deviation, and a dashed line at the end of the training
    length. A learned table appears once per workaround (``"learned (bert) + clip"``, ...).

    Args:
        results: runs trained with ``per_position=True`` at one training length, e.g. chapter
            7's grid; each run's ``extras["position_accuracy@L"]`` is a list of ``L`` accuracies.
        lengths: test lengths offered; default: the runs' ``eval_lengths``.
        strategies: workarounds offered for a learned table; default: the runs' ``eval_extrapolations``.
        scheme: the label shown first; default ``"sinusoidal"`` if present, else the first label.
        length: the test length shown first; default twice the training length if offered,
            else the first length.
        caption: text under the figure; default: how to use it and the number of seeds.

    Returns:
        An :class:`~posenc.interactive.Explorer` with controls ``scheme`` (labels) and ``length``.
        Frames set trace 0 (the band: ``2 * n_labelled`` points around it) and trace 1
        (``n_labelled`` means).

    Raises:
        ValueError: no runs, runs of several training lengths, or ``scheme``/``length``/``lengths``
            not among what the runs hold.
    """
    results = check_results("results", results)
    if not results:
        raise ValueError("results is empty: pass the runs of a grid trained with per_position=True")
    train_lengths = field_values(results, "seq_len")
    if len(train_lengths) != 1:
        raise ValueError(f"results must share one training length (seq_len), got {train_lengths}")
    train_len = int(train_lengths[0])
    tested = sorted({int(n) for config_lengths in field_values(results, "eval_lengths") for n in config_lengths})
    if lengths is None:
        lengths = tested
    lengths = list(check_int_sequence("lengths", lengths, min_len=1))
    for index, entry in enumerate(lengths):
        check_choice(f"lengths[{index}]", entry, tested)
    curves = position_curves(results, lengths, strategies=strategies)
    labels = list(dict.fromkeys(label for label, _ in curves))
    if scheme is None:
        scheme = "sinusoidal" if "sinusoidal" in labels else labels[0]
    check_choice("scheme", scheme, labels)
    if length is None:
        length = 2 * train_len if 2 * train_len in lengths else lengths[0]
    check_choice("length", length, lengths)
    if caption is None:
        n_seeds = min(len(runs) for runs in group_by_label(results).values())
        caption = f"Choose a scheme and a test length. Stored results of the grid, {n_seeds} seeds per scheme."

    fig = new_figure(
        title="Accuracy at each position",
        x_title="position in the test sequence",
        y_title="token accuracy at this position",
        alt="Line chart of accuracy against position for one scheme and test length, with a shaded band of one "
        "standard deviation over seeds and a dashed vertical line at the end of the trained length.",
        height=420,
    )
    fig.add_scatter(x=[0], y=[0], fill="toself", fillcolor=_rgba(colour(0), 0.18), line=dict(width=0),
                    hoverinfo="skip", showlegend=False)
    # One line: solid (the template would dash it, as the second scatter trace after the band).
    fig.add_scatter(x=[0], y=[0], mode="lines+markers", line=dict(color=colour(0), width=2, dash="solid"),
                    marker=dict(size=4), name="mean over seeds")
    # positions 0 .. train_len - 1 were seen in training: the line sits between the last of them and the next
    fig.add_vline(x=train_len - 0.5, line_dash="dash", line_color="#555", annotation_text="trained length",
                  annotation_position="top right")
    fig.update_xaxes(range=[-1, max(lengths)])
    fig.update_yaxes(range=[-0.02, 1.05])

    def update(scheme: str, length: int) -> Frame:
        positions, means, stds = curves[scheme, length]
        upper = [m + s for m, s in zip(means, stds, strict=True)]
        lower = [m - s for m, s in zip(means, stds, strict=True)]
        overall = sum(means) / len(means)
        return Frame(
            traces={0: {"x": positions + positions[::-1], "y": upper + lower[::-1]}, 1: {"x": positions, "y": means}},
            layout={"title.text": f"{scheme}, test length {length}: mean accuracy {overall:.3f}"},
        )

    return Explorer(
        fig,
        update,
        [Control("scheme", labels, default=scheme, label="scheme"),
         Control("length", lengths, default=length, label="test length")],
        caption=caption,
    )


def _rgba(hex_colour: str, alpha: float) -> str:
    """``"#RRGGBB"`` and an opacity in ``[0, 1]`` as a CSS ``rgba(...)`` string (for shaded bands)."""
    if not (isinstance(hex_colour, str) and len(hex_colour) == 7 and hex_colour.startswith("#")):
        raise ValueError(f"hex_colour must look like '#0072B2', got {hex_colour!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"

