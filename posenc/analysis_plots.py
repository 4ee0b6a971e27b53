"""Figures for chapter 5: the four analyses of :mod:`posenc.analysis`, side by side.

Every builder takes results of :mod:`posenc.analysis` (never raw computations of its
own) and returns a plotly figure in the book's style, with axis titles and alt text.
Tables are passed as ``{name: result}`` mappings; each name keeps one colour in every
figure (the Okabe-Ito palette, in mapping order).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from posenc.analysis import HeadPeaks, TableAnalysis, as_table, peak_offset_shares, peak_offsets
from posenc.checks import (
    check_bool,
    check_instance,
    check_int,
    check_int_sequence,
    check_mapping,
    check_nonnegative_int,
    check_positive_int,
    check_reals,
    check_text,
)
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import DIVERGING, OKABE_ITO, SEQUENTIAL, colour, describe, heatmap, new_figure, thin_indices

__all__ = [
    "ANALYSES",
    "subsample_square",
    "similarity_heatmap",
    "offset_profiles",
    "cumulative_variance_figure",
    "components_grid",
    "pair_trajectory",
    "norms_figure",
    "analysis_explorer",
    "peak_share_figure",
    "attention_explorer",
]

#: The analyses the explorer offers, in display order.
ANALYSES: tuple[str, ...] = ("similarity", "principal components", "row norms", "distance by offset")


def _add_lines(
    fig: go.Figure, series: Mapping[str, tuple[np.ndarray, np.ndarray]], *, mode: str = "lines", width: float = 2.0
) -> go.Figure:
    """One line per table, in the table's colour: ``series`` maps name -> ``(x, y)``."""
    for index, (name, (x, y)) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=x, y=y, mode=mode, name=name, line=dict(color=colour(index), width=width)))
    return fig


def _fmt(value: float) -> str:
    """Three decimals, without the confusing "-0.000" of tiny negative numbers."""
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text


def _check_series(name: str, curves: object) -> dict[str, np.ndarray]:
    """``name -> values``: a non-empty dict of 1-D arrays of finite numbers, as float64 arrays."""
    check_mapping(name, curves, min_len=1, what="a dict of table name -> 1-D values", item="table")
    assert isinstance(curves, Mapping)
    series = {}
    for key, values in curves.items():
        array = check_reals(f"{name}[{key!r}]", values).numpy()
        if array.ndim != 1 or array.size == 0:
            raise ValueError(f"{name}[{key!r}] must be a non-empty 1-D array, got shape {array.shape}")
        series[key] = array
    return series


def _check_analyses(analyses: object) -> None:
    check_mapping("analyses", analyses, min_len=1, what="a dict of table name -> analyze_table(...)", item="table")
    assert isinstance(analyses, Mapping)
    for name, result in analyses.items():
        check_instance(f"analyses[{name!r}]", result, TableAnalysis, what="a TableAnalysis (analyze_table(...))")


def subsample_square(matrix: np.ndarray, max_cells: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Every ``k``-th row and column of a square matrix (:func:`posenc.plots.thin_indices`), so at most
    ``max_cells`` remain per side.

    Entries are exact values of the matrix (no averaging); the positions they belong to
    are returned for the axis labels.

    Args:
        matrix: ``(n, n)``.
        max_cells: most rows/columns kept.

    Returns:
        ``(sub, positions)``: ``sub`` of shape ``(m, m)`` with ``m <= max_cells`` and the
        ``(m,)`` positions kept (``0, k, 2k, ...``).
    """
    array = as_table(matrix, name="matrix", min_rows=1)
    if array.shape[0] != array.shape[1]:
        raise ValueError(f"matrix must be square, got shape {array.shape}")
    positions = thin_indices(array.shape[0], check_positive_int("max_cells", max_cells))
    return array[np.ix_(positions, positions)], positions


def similarity_heatmap(similarity: np.ndarray, *, name: str, max_cells: int = 128) -> go.Figure:
    """Cosine-similarity matrix of one table as a heatmap on a fixed ``[-1, 1]`` colour scale."""
    check_text("name", name, empty=False)
    array = as_table(similarity, name="similarity", min_rows=1)
    sub, positions = subsample_square(array, max_cells)
    stride = int(positions[1] - positions[0]) if positions.size > 1 else 1
    note = "" if stride == 1 else f" (every {stride}th position)"
    return heatmap(
        sub,
        x=positions,
        y=positions,
        title=f"Cosine similarity between positions: {name}{note}",
        x_title="position j",
        y_title="position i",
        colorbar_title="cos(i, j)",
        zmin=-1.0,
        zmax=1.0,
        alt=f"Heatmap of the cosine similarity between every pair of positions of the {name} table.",
    )


def offset_profiles(
    curves: Mapping[str, np.ndarray],
    *,
    title: str,
    y_title: str,
    alt: str,
    caption: str | None = None,
    max_offset: int | None = None,
    log_x: bool = True,
) -> go.Figure:
    """One line per table of a quantity indexed by offset ``Δ`` (entry 0 is skipped).

    Args:
        curves: table name -> ``(n,)`` values for offsets ``0 .. n - 1``.
        max_offset: largest offset drawn (default: all); a shorter curve ends at its own last offset.
        log_x: logarithmic offset axis (short and long offsets both stay readable).
    """
    curves = _check_series("curves", curves)
    if max_offset is not None:
        max_offset = check_positive_int("max_offset", max_offset)
    log_x = check_bool("log_x", log_x)
    fig = new_figure(title=title, x_title="offset Δ between positions (positions)", y_title=y_title,
                     alt=alt, caption=caption)
    series = {}
    for name, values in curves.items():
        top = values.size - 1 if max_offset is None else min(max_offset, values.size - 1)
        series[name] = (np.arange(1, top + 1), values[1 : top + 1])
    _add_lines(fig, series)
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def cumulative_variance_figure(ratios: Mapping[str, np.ndarray], *, k: int = 10) -> go.Figure:
    """Cumulative share of variance of the first ``k`` principal components, one line per table."""
    ratios = _check_series("ratios", ratios)
    k = check_positive_int("k", k)
    fig = new_figure(
        title="How much of each table do the first components carry?",
        x_title="number of principal components",
        y_title="cumulative share of variance (%)",
        alt="Line chart: cumulative percentage of variance explained by the first principal components "
        "of each position table.",
    )
    series = {}
    for name, values in ratios.items():
        cumulative = 100.0 * np.cumsum(values[:k])
        series[name] = (np.arange(1, cumulative.size + 1), cumulative)
    _add_lines(fig, series, mode="lines+markers")
    fig.update_yaxes(range=[0, 100])
    return fig


def components_grid(
    analyses: Mapping[str, TableAnalysis],
    *,
    n_components: int = 2,
    max_positions: int | Mapping[str, int] | None = None,
) -> go.Figure:
    """One panel per table: its leading principal components as functions of position.

    Args:
        analyses: table name -> analysis.
        n_components: components drawn per panel.
        max_positions: show only the first positions: one number for every panel, or
            ``{name: number}`` for some panels (fast components are unreadable over 512 positions).
    """
    _check_analyses(analyses)
    n_components = check_positive_int("n_components", n_components)
    names = list(analyses)
    if max_positions is not None and not isinstance(max_positions, Mapping):
        check_positive_int("max_positions", max_positions)
    limits = dict(max_positions) if isinstance(max_positions, Mapping) else {n: max_positions for n in names}
    unknown = sorted(set(limits) - set(names))
    if unknown:
        raise ValueError(f"max_positions names {unknown} are not tables; tables: {names}")
    tops = {}
    for name in names:
        rows_available = analyses[name].pca.scores.shape[0]
        limit = limits.get(name)
        tops[name] = rows_available if limit is None else min(check_positive_int("max_positions", limit),
                                                                rows_available)
    titles = [name if tops[name] == analyses[name].pca.scores.shape[0] else f"{name} (positions 0–{tops[name] - 1})"
              for name in names]
    cols = 2
    rows = math.ceil(len(names) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, vertical_spacing=0.16, horizontal_spacing=0.12)
    dashes = ("solid", "dot", "dash", "dashdot")
    for index, name in enumerate(names):
        scores = analyses[name].pca.scores
        ratio = analyses[name].pca.explained_variance_ratio
        top = tops[name]
        row, col = divmod(index, cols)
        for k in range(min(n_components, scores.shape[1])):
            fig.add_trace(
                go.Scatter(x=np.arange(top), y=scores[:top, k], mode="lines",
                           name=f"PC{k + 1}", legendgroup=f"PC{k + 1}", showlegend=index == 0,
                           line=dict(color=colour(k), width=1.5, dash=dashes[k % len(dashes)]),
                           hovertemplate=f"{name}<br>PC{k + 1} ({100 * ratio[k]:.1f}%)<br>"
                           "position %{x}: %{y:.3f}<extra></extra>"),
                row=row + 1, col=col + 1,
            )
        fig.update_xaxes(title_text="position", row=row + 1, col=col + 1)
        fig.update_yaxes(title_text="component score" if col == 0 else None, row=row + 1, col=col + 1)
    fig.update_layout(height=330 * rows + 80, title=dict(text="Leading principal components along the positions"))
    return describe(
        fig,
        alt="Small multiples, one per position table: the scores of the first principal components "
        "plotted against position.",
    )


def pair_trajectory(first: np.ndarray, second: np.ndarray, *, name: str, labels: tuple[str, str] = ("PC1", "PC2"),
                    connect: int = 13) -> go.Figure:
    """Positions as points in the plane of two components, coloured by position.

    The first ``connect`` positions are joined in order, so a steady turn from one
    position to the next (a sin/cos pair) shows as a regular polygon-like path.

    Args:
        first, second: ``(n,)`` scores of two components.
        name: the table's name (for the title and alt text).
        connect: how many leading positions to join with a line (0 for none).
    """
    a = check_reals("first", first).numpy()
    b = check_reals("second", second).numpy()
    check_text("name", name, empty=False)
    if isinstance(labels, str) or not isinstance(labels, tuple | list) or len(labels) != 2:
        raise TypeError(f"labels must be a pair of axis names such as ('PC1', 'PC2'), got {labels!r}")
    labels = (check_text("labels[0]", labels[0]), check_text("labels[1]", labels[1]))
    connect = check_nonnegative_int("connect", connect)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"first and second must be 1-D of equal length, got shapes {a.shape} and {b.shape}")
    fig = new_figure(
        title=f"{name}: every position in the plane of {labels[0]} and {labels[1]}",
        x_title=f"{labels[0]} score",
        y_title=f"{labels[1]} score",
        alt=f"Scatter plot of the {name} table's positions projected on {labels[0]} and {labels[1]}, coloured "
        f"by position, with the first {connect} positions joined in order.",
        height=480,
    )
    fig.add_trace(go.Scatter(x=a, y=b, mode="markers", name="all positions",
                             marker=dict(size=5, color=np.arange(a.size), colorscale="Cividis",
                                         colorbar=dict(title=dict(text="position"))),
                             hovertemplate="position %{marker.color}<extra></extra>"))
    if connect:
        top = min(connect, a.size)
        fig.add_trace(go.Scatter(x=a[:top], y=b[:top], mode="lines+markers+text", name=f"positions 0–{top - 1}",
                                 text=[str(p) for p in range(top)], textposition="top center",
                                 line=dict(color=OKABE_ITO[5], width=1), marker=dict(size=4, color=OKABE_ITO[5])))
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    fig.update_layout(legend=dict(x=0.0, y=1.0))
    return fig


def norms_figure(norms: Mapping[str, np.ndarray]) -> go.Figure:
    """Row norms divided by each table's mean row norm, one line per table."""
    fig = new_figure(
        title="Length of each position vector, relative to the table's average",
        x_title="position",
        y_title="row norm ÷ mean row norm",
        alt="Line chart of the length of every position vector divided by the table's mean length, "
        "one line per table.",
    )
    series = {}
    for name, values in _check_series("norms", norms).items():
        series[name] = (np.arange(values.size), values / values.mean())
    return _add_lines(fig, series, width=1.5)


def analysis_explorer(
    analyses: Mapping[str, TableAnalysis],
    *,
    windows: Sequence[int] = (64, 512),
    max_cells: int = 128,
    n_components: int = 3,
) -> Explorer:
    """Explorer: pick a table and an analysis, and how many leading positions to show.

    Args:
        analyses: table name -> :func:`posenc.analysis.analyze_table` result.
        windows: grid of "first N positions" values precomputed for the static page; a
            live kernel offers any N from 16 to the longest table in steps of 16.
        max_cells: heatmaps keep at most this many positions per side (every k-th position).
        n_components: principal components drawn.
    """
    _check_analyses(analyses)
    names = list(analyses)
    longest = max(a.similarity.shape[0] for a in analyses.values())
    windows = sorted(set(check_int_sequence("windows", windows, min_len=1)))
    if windows[-1] > longest:
        raise ValueError(f"windows must be <= the longest table ({longest} rows), got {windows}")
    n_components = check_positive_int("n_components", n_components)

    fig = go.Figure()
    fig.add_trace(go.Heatmap(z=[[0.0]], colorscale=DIVERGING, zmin=-1.0, zmax=1.0,
                             colorbar=dict(title=dict(text="cos(i, j)")), name="similarity"))
    for k in range(n_components):
        fig.add_trace(go.Scatter(x=[0], y=[0], mode="lines", name=f"PC{k + 1}",
                                 line=dict(color=colour(k), width=1.5)))
    # The single curve of the norm and distance analyses: solid (the template would dash it).
    fig.add_trace(go.Scatter(x=[0], y=[0], mode="lines", name="value", showlegend=False,
                             line=dict(color=OKABE_ITO[5], width=2, dash="solid")))
    line_index = 1 + n_components
    fig.update_layout(height=520, title=dict(text=""), margin=dict(t=90))
    describe(
        fig,
        alt="Interactive chart of one analysis of one position table: a similarity heatmap, principal "
        "components against position, row norms against position, or mean distance against offset.",
    )
    hidden: dict[int, dict[str, object]] = {i: {"visible": False} for i in range(line_index + 1)}

    def update(table: str, analysis: str, positions: int) -> Frame:
        result = analyses[table]
        n = result.similarity.shape[0]
        shown = min(int(positions), n)
        traces = {i: dict(props) for i, props in hidden.items()}
        # No reversed y axis for the heatmap: plotly keeps a reversed range when later frames
        # ask for autorange, so every frame uses the same (upward) orientation.
        layout: dict[str, object] = {"yaxis.autorange": True, "xaxis.autorange": True}
        if analysis == "similarity":
            sub, kept = subsample_square(result.similarity[:shown, :shown], max_cells)
            traces[0] = {"visible": True, "z": sub, "x": kept, "y": kept}
            layout.update({"xaxis.title.text": "position j", "yaxis.title.text": "position i"})
            step = int(kept[1] - kept[0]) if kept.size > 1 else 1
            detail = f"adjacent {_fmt(result.summary.adjacent)}, offsets 10–50 {_fmt(result.summary.near)}"
            title = f"{table}: cosine similarity, positions 0–{shown - 1}" + (
                f" (every {step}th)" if step > 1 else "") + f"<br>mean {detail}"
        elif analysis == "principal components":
            ratios = result.pca.explained_variance_ratio
            for k in range(min(n_components, result.pca.scores.shape[1])):
                traces[1 + k] = {"visible": True, "x": np.arange(shown), "y": result.pca.scores[:shown, k],
                                 "name": f"PC{k + 1} ({100 * ratios[k]:.1f}%)"}
            layout.update({"xaxis.title.text": "position", "yaxis.title.text": "component score"})
            first = result.periodicities[0]
            title = (f"{table}: leading principal components (first 5 carry {100 * result.pca.cumulative(5):.1f}%)"
                     f"<br>PC1 dominant period {first.period:.1f} positions, sinusoid fit R² {first.fit_r2:.2f}")
        elif analysis == "row norms":
            traces[line_index] = {"visible": True, "x": np.arange(shown), "y": result.norms.norms[:shown],
                                  "name": "row norm"}
            layout.update({"xaxis.title.text": "position", "yaxis.title.text": "row norm (length of the vector)"})
            title = (f"{table}: row norms, mean {result.norms.mean:.3f}<br>first {result.norms.window} positions "
                     f"{result.norms.early_mean:.3f}, last {result.norms.window} {result.norms.late_mean:.3f}, "
                     f"longest at position {result.norms.argmax}")
        else:
            offsets = np.arange(1, shown)
            traces[line_index] = {"visible": True, "x": offsets, "y": result.distances[1:shown],
                                  "name": "mean distance"}
            layout.update({"xaxis.title.text": "offset Δ (positions)",
                           "yaxis.title.text": "mean Euclidean distance ||p_i − p_(i+Δ)||"})
            title = f"{table}: mean distance between positions Δ apart<br>Δ = 1: {result.distances[1]:.3f}"
        layout["title.text"] = title
        return Frame(traces=traces, layout=layout)

    controls = [
        Control("table", names, label="table"),
        Control("analysis", list(ANALYSES), label="analysis"),
        Control("positions", windows, label="first N positions", default=windows[-1],
                live=(16, longest, 16) if all(w % 16 == 0 for w in windows) else None),
    ]
    return Explorer(
        fig,
        update,
        controls,
        title="Four analyses of position tables",
        # On paper: every analysis of the first table, then the similarity of two more tables.
        print_settings=([{"table": names[0], "analysis": analysis} for analysis in ANALYSES]
                        + [{"table": name, "analysis": "similarity"} for name in names[1:3]])[:6],
        caption="Choose a table and an analysis; the slider limits the view to the first N positions "
        "(the analyses themselves use the whole table). Heatmaps show at most "
        f"{max_cells} positions per side.",
    )


def _attention_print_settings(summaries: Mapping[str, Sequence[HeadPeaks]]) -> list[dict[str, object]]:
    """What the attention explorer prints: per table (the first two), its two heads whose peak
    offset is most concentrated and its least concentrated head, by the share of queries at the
    head's most common offset."""
    settings: list[dict[str, object]] = []
    tables = list(summaries)[:2]
    for table in tables:
        heads = sorted(summaries[table], key=lambda head: -head.top(1)[0][1] if head.shares else 0.0)
        picks = heads[:2] + heads[-1:] if len(heads) > 2 else heads
        if len(tables) == 1:
            picks = heads[:4] + heads[-2:] if len(heads) > 6 else heads
        settings += [{"table": table, "head": head.head} for head in sorted(picks, key=lambda h: h.head)]
    return settings[:6]


# -- what attention sees ---------------------------------------------------------------
def peak_share_figure(
    peaks: Mapping[str, Sequence[HeadPeaks]],
    *,
    window: tuple[int, int] = (-8, 8),
    alt: str | None = None,
    title: str = "Peak offset of each head's position-only logit (share of queries)",
) -> go.Figure:
    """One heatmap per table: for each head (row) and offset ``Δ = j - i`` (column), the share of
    queries whose position-only logit peaks at ``Δ``.

    Args:
        peaks: table name -> :func:`posenc.analysis.peak_offset_shares` result (one entry per head);
            the peaks may also come from real attention weights (their argmax), e.g. of
            :func:`posenc.pretrained.text_attention`.
        window: ``(low, high)`` offsets shown, both included; shares outside it are left out
            (each row's total says how much of the head the window holds).
        alt: alt text (a default describing the layout is used if ``None``).
        title: the figure's title (say what the peaks are peaks of).
    """
    check_mapping("peaks", peaks, min_len=1, what="a dict of table name -> peak_offset_shares(...)", item="table")
    for name, heads in peaks.items():
        if isinstance(heads, str) or not isinstance(heads, Sequence):
            raise TypeError(f"peaks[{name!r}] must be a sequence of HeadPeaks (peak_offset_shares(...)), got {heads!r}")
        for index, head in enumerate(heads):
            check_instance(f"peaks[{name!r}][{index}]", head, HeadPeaks)
    if not isinstance(window, tuple | list) or len(window) != 2:
        raise TypeError(f"window must be a (low, high) pair of offsets such as (-8, 8), got {window!r}")
    low, high = check_int("window[0]", window[0]), check_int("window[1]", window[1])
    if alt is not None:
        check_text("alt", alt, empty=False)
    check_text("title", title)
    if high < low:
        raise ValueError(f"window must be (low, high) with low <= high, got {window}")
    names = list(peaks)
    offsets = np.arange(low, high + 1)
    cols = min(2, len(names))
    rows = math.ceil(len(names) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, vertical_spacing=0.2, horizontal_spacing=0.1)
    for index, name in enumerate(names):
        heads = list(peaks[name])
        if not heads:
            raise ValueError(f"peaks[{name!r}] holds no heads")
        z = np.array([[head.share(int(o)) for o in offsets] for head in heads])
        row, col = divmod(index, cols)
        fig.add_trace(
            go.Heatmap(
                z=z, x=offsets, y=[f"head {h.head}" for h in heads], zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL,
                showscale=index == 0, colorbar=dict(title=dict(text="share of queries")),
                hovertemplate=f"{name}<br>%{{y}}, offset %{{x}}: %{{z:.0%}} of queries<extra></extra>",
            ),
            row=row + 1, col=col + 1,
        )
        fig.update_xaxes(title_text="offset Δ = key − query (positions)", row=row + 1, col=col + 1)
        fig.update_yaxes(autorange="reversed", row=row + 1, col=col + 1)
    fig.update_layout(height=360 * rows + 90,
                      title=dict(text=title))
    return describe(
        fig,
        alt=alt or "Heatmaps, one per table: rows are attention heads, columns are offsets from "
        f"{low} to {high}; the colour of a cell is the share of queries whose position-only logit is "
        "largest at that offset. A bright cell means the head looks at one fixed offset.",
    )


def attention_explorer(
    logits: Mapping[str, np.ndarray], *, max_cells: int = 64, causal: bool = False
) -> Explorer:
    """Explorer: pick a table and a head; see its position-only logits for the first positions.

    Each frame shows the logits of the first ``max_cells`` queries and keys (exact entries, not a
    strided sample: striding would skip the short offsets that matter), minus each query's mean
    logit (softmax does not change when a row is shifted by a constant), with a marker on each
    query's peak key. The colour scale is symmetric and ends at the 99th percentile of the
    shown values, so one extreme row does not wash out the rest. The title gives the head's modal peak offset over *all* queries.

    Args:
        logits: table name -> ``(n_heads, n, n)`` from :func:`posenc.analysis.position_only_logits`.
            Tables may have different numbers of heads; a head a table lacks shows an empty frame.
        max_cells: queries and keys shown per side.
        causal: count only keys ``j <= i`` when finding peaks.
    """
    check_mapping("logits", logits, min_len=1, what="a dict of table name -> (n_heads, n, n) logits", item="table")
    max_cells = check_positive_int("max_cells", max_cells)
    causal = check_bool("causal", causal)
    names = list(logits)
    arrays: dict[str, np.ndarray] = {}
    for name in names:
        array = check_reals(f"logits[{name!r}]", logits[name]).numpy()
        if array.ndim != 3 or array.shape[1] != array.shape[2]:
            raise ValueError(f"logits[{name!r}] must have shape (n_heads, n, n), got {array.shape}")
        arrays[name] = array
    peaks = {name: peak_offsets(array, causal=causal) for name, array in arrays.items()}
    summaries = {name: peak_offset_shares(p) for name, p in peaks.items()}
    most_heads = max(a.shape[0] for a in arrays.values())

    fig = go.Figure()
    fig.add_trace(go.Heatmap(z=[[0.0]], colorscale=DIVERGING, zmid=0.0, name="logit",
                             colorbar=dict(title=dict(text="logit − query's mean")),
                             hovertemplate="query %{y}, key %{x}: %{z:.2f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0], y=[0], mode="markers", name="each query's peak key",
                             # Black, not a palette colour: it must stand out on both ends of the diverging scale.
                             marker=dict(symbol="x", size=7, color="black")))
    fig.update_layout(height=560, title=dict(text=""), margin=dict(t=90), legend=dict(x=0.0, y=-0.18,
                                                                                      orientation="h"))
    fig.update_xaxes(title_text="key position j")
    fig.update_yaxes(title_text="query position i", autorange="reversed")
    describe(
        fig,
        alt="Interactive heatmap of one attention head's position-only logits for the first positions of one "
        "table: query position down, key position across, with a cross on each query's largest logit. A "
        "head that looks a fixed distance back shows a diagonal line of crosses below the main diagonal.",
    )

    def update(table: str, head: int) -> Frame:
        array = arrays[table]
        head = int(head)
        if head >= array.shape[0]:
            return Frame(traces={0: {"z": [[None]], "x": [0], "y": [0]}, 1: {"x": [], "y": []}},
                         layout={"title.text": f"{table}: the model has only {array.shape[0]} heads "
                                               f"(0–{array.shape[0] - 1})"})
        shown = min(max_cells, array.shape[1])
        block = array[head, :shown, :shown]
        centred = block - array[head, :shown, :].mean(axis=1, keepdims=True)
        # The 99th percentile, not the maximum: one extreme row (MiniLM's position 0) would wash out the rest.
        limit = float(np.percentile(np.abs(centred), 99)) or 1.0
        queries = np.arange(shown)
        keys = queries + peaks[table][head, :shown]
        inside = (keys >= 0) & (keys < shown)
        summary = summaries[table][head]
        top = ", ".join(f"{offset:+d}: {share:.1%}" for offset, share in summary.top(3))
        title = (f"{table}, head {head}: position-only logits, positions 0–{shown - 1}<br>"
                 f"peak offset over all {summary.n_queries} queries: {top}")
        return Frame(
            traces={0: {"z": centred, "x": queries, "y": queries, "zmin": -limit, "zmax": limit},
                    1: {"x": keys[inside], "y": queries[inside]}},
            layout={"title.text": title},
        )

    controls = [
        Control("table", names, label="table"),
        Control("head", list(range(most_heads)), label="head"),
    ]
    return Explorer(
        fig,
        update,
        controls,
        title="Position-only attention logits of single heads",
        print_settings=_attention_print_settings(summaries),
        caption="Choose a table and a head. Colours: each query's logit for each key, minus the query's mean "
        f"(the first {max_cells} positions); crosses: the key with the largest logit. The title counts the "
        "peak offsets over all queries of the table.",
    )
