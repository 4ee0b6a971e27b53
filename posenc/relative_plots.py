"""Figures and explorers for chapter 10 (RoPE, ALiBi, T5's buckets); the accuracy-by-length figure also serves chapter 8.

Figure builders return plotly figures in the book's style (:mod:`posenc.plots`), with
axis titles and alt text; explorers use :mod:`posenc.interactive`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from posenc.checks import (
    check_even_int,
    check_int,
    check_int_sequence,
    check_nonnegative_int,
    check_positive_int,
    check_records,
    check_tensor,
    check_text_sequence,
)
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import OKABE_ITO, colour, describe, html_table
from posenc.relative import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_inverse_frequencies,
    t5_relative_position_bucket,
)
from posenc.results import RunResult, check_results, summarize

__all__ = [
    "rope_scores",
    "rope_pair_explorer",
    "alibi_figure",
    "t5_bucket_figure",
    "accuracy_by_length_rows",
    "length_table_html",
    "series_from_rows",
]


def rope_scores(q: torch.Tensor, k: torch.Tensor, query_position: int, offsets: Sequence[int] | np.ndarray) -> np.ndarray:
    """``q`` at ``query_position`` against ``k`` at ``query_position + offset``, after RoPE.

    Args:
        q, k: ``(d_head,)`` vectors.
        offsets: key minus query positions; every key position must be ``>= 0``.

    Returns:
        ``(len(offsets),)`` float64 scores ``<R_m q, R_n k>``.
    """
    for name, vector in (("q", q), ("k", k)):
        check_tensor(name, vector, ndim=1, floating=True, shape="(d_head,)")
        check_even_int(f"d_head (the length of {name})", vector.shape[0], why="RoPE rotates pairs of coordinates")
    if k.shape != q.shape:
        raise ValueError(f"q and k must have the same length, got {tuple(q.shape)} and {tuple(k.shape)}")
    query_position = check_nonnegative_int("query_position", query_position)
    offsets = _check_offsets(offsets, query_position)
    offsets_t = torch.as_tensor(list(offsets), dtype=torch.float64)
    keys = apply_rope(k.double().expand(len(offsets_t), -1), query_position + offsets_t)
    query = apply_rope(q.double().unsqueeze(0), torch.tensor([float(query_position)]))[0]
    return (keys @ query).numpy()


def _check_offsets(offsets: object, query_position: int) -> list[int]:
    """Key-minus-query offsets, any sign, each putting the key at a position >= 0."""
    if isinstance(offsets, str | bytes) or not hasattr(offsets, "__iter__"):
        raise TypeError(f"offsets must be a sequence of integer offsets (key - query), got {offsets!r}")
    values = [check_int(f"offsets[{i}]", o) for i, o in enumerate(offsets)]
    if not values:
        raise ValueError("offsets must hold at least one offset")
    if min(values) < -query_position:
        raise ValueError(f"offsets must be >= -query_position = {-query_position} (keys at positions >= 0), got a "
                         f"minimum of {min(values)}")
    return values


def _pair(vector: torch.Tensor, pair: int) -> tuple[float, float]:
    """Coordinates of pair ``pair`` in the paper's interleaved layout."""
    return float(vector[2 * pair]), float(vector[2 * pair + 1])


def rope_pair_explorer(*, d_head: int = 8, seed: int = 0, max_offset: int = 32) -> Explorer:
    """Explorer: one query and one key under RoPE as the offset between them changes.

    Left: the 2-D plane of one coordinate pair, with the query (at position ``m``) and the
    key (at ``n = m + offset``) drawn as arrows after rotation. Right: the score
    ``<R_m q, R_n k>`` for every offset, and the share of the chosen pair. Changing ``m``
    turns both arrows together and leaves the score unchanged.
    """
    d_head = check_even_int("d_head", d_head, why="RoPE rotates pairs of coordinates")
    max_offset = check_positive_int("max_offset", max_offset)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    q, k = torch.randn(2, d_head, generator=generator, dtype=torch.float64)
    theta = rope_inverse_frequencies(d_head)
    n_pairs = d_head // 2
    offsets = np.arange(-max_offset, max_offset + 1)
    radius = float(max(torch.linalg.norm(q.view(-1, 2), dim=1).max(), torch.linalg.norm(k.view(-1, 2), dim=1).max()))
    circle = np.linspace(0, 2 * math.pi, 73)

    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.4, 0.6], horizontal_spacing=0.12,
        subplot_titles=("one coordinate pair after rotation", "score as a function of the offset"),
    )
    fig.add_trace(go.Scatter(x=radius * np.cos(circle), y=radius * np.sin(circle), mode="lines",
                             line=dict(color="#bbbbbb", width=1), name="circle", showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 0], mode="lines+markers", name="query at m",
                             line=dict(color=OKABE_ITO[0], width=3), marker=dict(size=[0, 10])), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 0], mode="lines+markers", name="key at n",
                             line=dict(color=OKABE_ITO[1], width=3), marker=dict(size=[0, 10])), row=1, col=1)
    fig.add_trace(go.Scatter(x=offsets, y=np.zeros(len(offsets)), mode="lines", name="score q·k (all pairs)",
                             line=dict(color=OKABE_ITO[2], width=2)), row=1, col=2)
    fig.add_trace(go.Scatter(x=offsets, y=np.zeros(len(offsets)), mode="lines", name="share of the chosen pair",
                             line=dict(color=OKABE_ITO[3], width=2, dash="dot")), row=1, col=2)
    fig.add_trace(go.Scatter(x=[0], y=[0], mode="markers", name="current offset",
                             marker=dict(color="black", size=11, symbol="diamond")), row=1, col=2)
    fig.update_xaxes(title_text="first coordinate of the pair", range=[-1.15 * radius, 1.15 * radius], row=1, col=1)
    fig.update_yaxes(title_text="second coordinate of the pair", range=[-1.15 * radius, 1.15 * radius],
                     scaleanchor="x", scaleratio=1, row=1, col=1)
    fig.update_xaxes(title_text="offset n − m (positions)", row=1, col=2)
    fig.update_yaxes(title_text="dot product (unitless)", row=1, col=2)
    fig.update_layout(height=480, legend=dict(orientation="h", x=0, y=1.16, yanchor="bottom"),
                      title=dict(text="", y=0.98, yanchor="top"), margin=dict(t=150))
    describe(
        fig,
        alt="Left: a circle with two arrows, the query and the key of one RoPE coordinate pair after rotation. "
        "Right: the query-key dot product plotted against the offset between their positions, with a marker "
        "at the chosen offset.",
    )

    def update(offset: int, pair: int, query_position: int) -> Frame:
        m, n = int(query_position), int(query_position) + int(offset)
        rotated_q = apply_rope(q.unsqueeze(0), torch.tensor([float(m)]))[0]
        rotated_k = apply_rope(k.unsqueeze(0), torch.tensor([float(n)]))[0]
        qx, qy = _pair(rotated_q, pair)
        kx, ky = _pair(rotated_k, pair)
        scores = rope_scores(q, k, m, offsets)
        # Share of one pair: the same dot product restricted to its two coordinates.
        mask = torch.zeros(d_head, dtype=torch.float64)
        mask[2 * pair : 2 * pair + 2] = 1.0
        share = rope_scores(q * mask, k * mask, m, offsets)
        score = float(rotated_q @ rotated_k)
        angle = math.degrees(math.atan2(qx * ky - qy * kx, qx * kx + qy * ky))
        return Frame(
            traces={1: {"x": [0, qx], "y": [0, qy]}, 2: {"x": [0, kx], "y": [0, ky]},
                    3: {"y": scores}, 4: {"y": share}, 5: {"x": [offset], "y": [score]}},
            layout={"title.text": f"m = {m}, n = {n}: score {score:.3f}<br><sup>pair {pair} turns "
                                  f"{math.degrees(float(theta[pair])):.3g}° per position · angle from query to key "
                                  f"{angle:.1f}°</sup>"},
        )

    step = max(1, max_offset // 8)
    grid = list(range(-max_offset, max_offset + 1, step))
    return Explorer(
        fig,
        update,
        [
            Control("offset", grid, label="offset n − m", default=0 if 0 in grid else None,
                    live=(-max_offset, max_offset, 1)),
            Control("pair", list(range(n_pairs)), label="coordinate pair", live=(0, n_pairs - 1, 1)),
            Control("query_position", [64, 1000], label="query position m", live=(max_offset, 4096, 1)),
        ],
        title="One query and one key under RoPE as the offset between them changes",
        # On paper: five offsets at m = 64, then one of them at m = 1000 (same score: only the
        # offset counts).
        print_settings=[{"offset": o} for o in sorted({grid[0], grid[len(grid) // 4], 0 if 0 in grid else grid[1],
                                                         grid[-len(grid) // 4], grid[-1]})][:5]
        + [{"offset": grid[-len(grid) // 4], "query_position": 1000}],
        caption="Move the offset: the key's arrow turns against the query's and the score follows the curve. "
        "Move the query position: both arrows turn together and the score does not change.",
    )


def alibi_figure(n_heads: int = 8, seq_len: int = 24, *, query: int | None = None) -> go.Figure:
    """Left: ALiBi's bias matrix for the steepest head. Right: the attention each head gives
    to earlier keys when all content scores are equal (pure bias), for one causal query.

    Args:
        n_heads: heads (slopes from :func:`posenc.relative.alibi_slopes`).
        seq_len: positions shown.
        query: the query position of the right panel (default: the last one).
    """
    n_heads = check_positive_int("n_heads", n_heads)
    seq_len = check_positive_int("seq_len", seq_len)
    query = seq_len - 1 if query is None else check_int("query", query, low=0, high=seq_len - 1)
    bias = alibi_bias(n_heads, seq_len)
    slopes = alibi_slopes(n_heads)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.26,
                        subplot_titles=(f"bias of head 1 (m = {slopes[0].item():g})",
                                        f"query {query}, bias only"))
    fig.add_trace(go.Heatmap(z=bias[0].numpy(), colorscale="Cividis",
                             colorbar=dict(title=dict(text="bias"), x=0.375, len=0.9, thickness=12)), row=1, col=1)
    distances = np.arange(query + 1)
    for h in range(n_heads):
        weights = torch.softmax(bias[h, query, : query + 1].double(), dim=0).numpy()[::-1]  # by distance
        fig.add_trace(go.Scatter(x=distances, y=weights, mode="lines+markers", marker=dict(size=4),
                                 name=f"head {h + 1}: m = 1/{round(1 / slopes[h].item()):d}",
                                 line=dict(color=colour(h))), row=1, col=2)
    fig.update_yaxes(autorange="reversed", title_text="query position i", row=1, col=1)
    fig.update_xaxes(title_text="key position j", row=1, col=1)
    fig.update_xaxes(title_text="distance i − j (positions)", row=1, col=2)
    fig.update_yaxes(title_text="attention weight", row=1, col=2)
    fig.update_layout(height=520, title=dict(text=""), legend=dict(orientation="h", x=0, y=-0.2, yanchor="top"),
                      margin=dict(b=150))
    return describe(
        fig,
        alt=f"Left: heatmap of ALiBi's bias for the steepest of {n_heads} heads, zero on the diagonal and "
        "decreasing linearly away from it. Right: for each head, the softmax attention weight a query gives to "
        "keys at increasing distance when content scores are equal; steep heads look only at the nearest keys.",
    )


def t5_bucket_figure(num_buckets: int = 32, max_distance: int = 128, *, max_offset: int | None = None) -> go.Figure:
    """T5's bucket index against the offset ``key - query``, for an encoder and for a decoder.

    Two step lines from :func:`posenc.relative.t5_relative_position_bucket`: bidirectional
    (an encoder: keys before and after the query get separate buckets) and causal (a
    decoder: only distances back count, every key after the query shares bucket 0). A
    dotted line marks ``±max_distance``, where the last bucket begins for good.

    Args:
        num_buckets: total buckets (T5: 32).
        max_distance: distances from here on share the last bucket (T5: 128).
        max_offset: offsets ``-max_offset .. max_offset`` are drawn (default: ``1.25 * max_distance``).

    Returns:
        A figure whose trace 0 (bidirectional) and trace 1 (causal) hold ``x`` = offsets and
        ``y`` = bucket indices.

    Raises:
        ValueError: a ``max_offset`` or ``max_distance`` below 1, or (from the bucket rule) too
            few ``num_buckets``.
        TypeError: a non-integer ``max_offset``, ``max_distance`` or ``num_buckets``.
    """
    max_offset = int(1.25 * check_positive_int("max_distance", max_distance)) if max_offset is None else max_offset
    max_offset = check_positive_int("max_offset", max_offset)
    offsets = torch.arange(-max_offset, max_offset + 1)
    fig = go.Figure()
    for index, (bidirectional, name) in enumerate(((True, "encoder (bidirectional)"), (False, "decoder (causal)"))):
        buckets = t5_relative_position_bucket(offsets, bidirectional=bidirectional, num_buckets=num_buckets,
                                              max_distance=max_distance)
        fig.add_trace(go.Scatter(x=offsets.numpy(), y=buckets.numpy(), mode="lines", line_shape="hv", name=name,
                                 line=dict(color=colour(index), width=2.5, dash="solid" if index == 0 else "dash"),
                                 hovertemplate="offset %{x}: bucket %{y}<extra>" + name + "</extra>"))
    for x in (-max_distance, max_distance):
        if abs(x) <= max_offset:
            fig.add_vline(x=x, line=dict(color="#888", dash="dot"))
    fig.update_xaxes(title_text="offset j − i, key minus query (positions)")
    fig.update_yaxes(title_text="bucket index")
    fig.update_layout(height=430, title=dict(text=f"T5's buckets: {num_buckets} in all, max_distance {max_distance}"),
                      legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"))
    return describe(
        fig,
        alt=f"Step plot of T5's bucket index against the offset from the query to the key, from {-max_offset} to "
        f"{max_offset}, with {num_buckets} buckets and max_distance {max_distance}. Encoder: near offsets have a "
        "bucket each, wider and wider buckets follow up to the dotted lines at plus and minus max_distance, and "
        "keys after the query use a second set of buckets. Decoder: one set of buckets for keys before the query; "
        "every key after it shares bucket 0.",
    )


def accuracy_by_length_rows(
    results: Sequence[RunResult],
    lengths: Sequence[int],
    *,
    strategies: Sequence[str] = (),
    by: Sequence[str] = ("scheme", "position_options"),
) -> list[dict[str, Any]]:
    """Mean and spread over seeds of the accuracy at each test length, one row per (scheme, length).

    Args:
        results: runs with ``accuracy@L`` metrics (e.g. chapter 7's grid).
        lengths: test lengths ``L`` to collect.
        strategies: also collect ``accuracy@L:strategy`` (a learned table with a workaround);
            those rows get the label ``"<scheme> + <strategy>"``.
        by: config fields that identify a scheme (seeds are pooled).

    Returns:
        Rows of :func:`posenc.results.summarize` with an added ``"length"``; a scheme that is not
        defined at a length simply has no row there.
    """
    rows: list[dict[str, Any]] = []
    results = check_results("results", results)
    lengths = check_int_sequence("lengths", lengths, min_len=1)
    by = check_text_sequence("by", by)
    strategies = check_text_sequence("strategies", strategies)
    held = {key for r in results for key in r.metrics}  # a length where no run holds a metric has no row
    unknown = [s for s in strategies if not any(key.endswith(f":{s}") for key in held)]
    if unknown:
        raise ValueError(f"strategies has {unknown}, with which no run was scored")
    for length in lengths:
        if f"accuracy@{length}" in held:
            for row in summarize(results, metric=f"accuracy@{length}", by=list(by)):
                rows.append({**row, "length": int(length)})
        for strategy in strategies:
            if f"accuracy@{length}:{strategy}" not in held:
                continue
            for row in summarize(results, metric=f"accuracy@{length}:{strategy}", by=list(by)):
                rows.append({**row, "label": f"{row['label']} + {strategy}", "length": int(length)})
    return rows


def length_table_html(
    rows: Sequence[Mapping[str, Any]], lengths: Sequence[int], *, train_len: int, caption: str | None = None
) -> str:
    """An HTML table: one line per label, one column per test length, ``mean ± std``, and the seed count.

    A dash marks a length where the scheme is not defined (a learned table without a workaround).
    (Notebook Markdown outputs are rendered as CommonMark, which has no tables: hence HTML.)
    """
    rows = check_records("rows", rows, ("label", "length", "mean", "std", "n"))
    lengths = check_int_sequence("lengths", lengths, min_len=1)
    train_len = check_positive_int("train_len", train_len)
    labels = list(dict.fromkeys(row["label"] for row in rows))
    cells = {(row["label"], row["length"]): row for row in rows}
    headers = ["scheme"] + [f"{length} ({length / train_len:g}×)" for length in lengths] + ["seeds"]
    body = []
    for label in labels:
        entries, counts = [], set()
        for length in lengths:
            row = cells.get((label, length))
            if row is None:
                entries.append("—")
            else:
                entries.append(f"{row['mean']:.3f} ± {row['std']:.3f}")
                counts.add(row["n"])
        body.append([label, *entries, ", ".join(map(str, sorted(counts)))])
    return html_table(headers, body, numeric=[False] + [True] * (len(lengths) + 1), caption=caption)


def series_from_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[list[int], list[float], list[float]]]:
    """Rows of :func:`accuracy_by_length_rows` as ``label -> (lengths, means, stds)``, the input of
    :func:`posenc.results_plots.errorbar_figure`."""
    rows = check_records("rows", rows, ("label", "length", "mean", "std"))
    series: dict[str, tuple[list[int], list[float], list[float]]] = {}
    for row in sorted(rows, key=lambda r: r["length"]):
        lengths, means, stds = series.setdefault(row["label"], ([], [], []))
        lengths.append(row["length"])
        means.append(row["mean"])
        stds.append(row["std"])
    return series
