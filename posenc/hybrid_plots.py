"""Figures and the explorer of chapter 8 (hybrids), in the book's style (:mod:`posenc.plots`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from posenc.analysis import cosine_similarity_matrix
from posenc.checks import (
    check_int_sequence,
    check_mapping,
    check_positive_int,
    check_records,
    check_tensor,
    check_text,
    check_text_sequence,
)
from posenc.hybrid import factored_parameters, learned_parameters
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import DIVERGING, OKABE_ITO, colour, describe, new_figure

__all__ = ["rank_parameters_figure", "similarity_grid_figure", "accuracy_bars_figure", "low_rank_explorer"]


def rank_parameters_figure(max_len: int, d_model: int, ranks: Sequence[int]) -> go.Figure:
    """Parameters of a factored table against its rank, with the full table for comparison.

    Args:
        max_len, d_model: table shape ``L x d``.
        ranks: ranks to plot (each ``<= min(L, d)``).
    """
    full = learned_parameters(max_len, d_model)
    ranks = list(check_int_sequence("ranks", ranks, min_len=1))
    for index, rank in enumerate(ranks):
        if rank > min(max_len, d_model):
            raise ValueError(f"ranks[{index}] must be <= min(max_len, d_model) = {min(max_len, d_model)}, got {rank}")
    fig = new_figure(
        title=f"Factored table, L = {max_len}, d = {d_model}",
        x_title="rank r", y_title="trainable parameters",
        alt=f"Line chart: parameters of a factored {max_len} by {d_model} position table grow linearly with the "
        "rank and cross the constant count of the full table at the break-even rank.",
    )
    fig.add_trace(go.Scatter(x=ranks, y=[factored_parameters(max_len, d_model, r) for r in ranks],
                             mode="lines+markers", name="factored: L·r + r·d", line=dict(color=OKABE_ITO[0])))
    fig.add_trace(go.Scatter(x=[ranks[0], ranks[-1]], y=[full, full], mode="lines", name="full table: L·d",
                             line=dict(color=OKABE_ITO[1], dash="dash")))
    return fig


def similarity_grid_figure(tables: Mapping[str, Any], *, columns: int = 4, title: str = "") -> go.Figure:
    """Cosine-similarity heatmaps of several position tables side by side.

    Args:
        tables: label -> ``(n_positions, d_model)`` table (tables may differ in length).
        columns: heatmaps per row.
    """
    check_mapping("tables", tables, min_len=1, what="a dict of label -> (n_positions, d_model) table", item="table")
    columns = check_positive_int("columns", columns)
    check_text("title", title)
    labels = list(tables)
    rows = -(-len(labels) // columns)
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=labels, horizontal_spacing=0.06,
                        vertical_spacing=0.14)
    for index, label in enumerate(labels):
        similarity = cosine_similarity_matrix(tables[label])
        fig.add_trace(go.Heatmap(z=similarity, zmin=-1, zmax=1, colorscale=DIVERGING, showscale=index == 0,
                                 colorbar=dict(title=dict(text="cosine similarity"))),
                      row=index // columns + 1, col=index % columns + 1)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False)
    fig.update_xaxes(title_text="position", row=rows)
    fig.update_yaxes(title_text="position", col=1)
    fig.update_layout(height=300 * rows + 90, title=dict(text=title))
    for annotation in fig.layout.annotations:
        annotation.font.size = 11
    return describe(
        fig,
        alt="Grid of cosine-similarity heatmaps, one per position table: "
        + ", ".join(labels)
        + ". Each shows how similar the vectors of every pair of positions are.",
    )


def accuracy_bars_figure(
    rows: Sequence[Mapping[str, Any]], *, groups: Sequence[str], title: str, alt: str, caption: str | None = None
) -> go.Figure:
    """Grouped bars of mean accuracy with ± one standard deviation.

    Args:
        rows: dicts with ``"label"``, ``"group"``, ``"mean"``, ``"std"``.
        groups: group names in display order (one bar colour each); every row's group must be one of them.
    """
    rows = check_records("rows", rows, ("label", "group", "mean", "std"))
    groups = check_text_sequence("groups", groups, min_len=1)
    unknown = sorted({str(row["group"]) for row in rows} - set(groups))
    if unknown:
        raise ValueError(f"rows have group(s) {unknown} that groups does not list ({list(groups)}): their bars "
                         "would be dropped")
    fig = new_figure(title=title, x_title="position scheme", y_title="token accuracy", alt=alt, caption=caption,
                     height=460)
    for index, group in enumerate(groups):
        mine = [row for row in rows if row["group"] == group]
        fig.add_trace(go.Bar(x=[row["label"] for row in mine], y=[row["mean"] for row in mine], name=group,
                             marker_color=colour(index),
                             error_y=dict(type="data", array=[row["std"] for row in mine], visible=True)))
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.05])
    return fig


def low_rank_explorer(table: torch.Tensor, *, ranks: Sequence[int] = (1, 2, 4, 8, 16, 32, 64)) -> Explorer:
    """Explorer: the cosine-similarity matrix of the best rank-r approximation of ``table``.

    Args:
        table: ``(n_positions, d_model)``, e.g. a sinusoidal table (keep ``n_positions`` <= ~128).
        ranks: the grid of ranks precomputed for the static page; ranks above the table's own
            rank ``min(n_positions, d_model)`` are left out (they would show the same full table),
            and a grid with none at or below it is an error.
    """
    check_tensor("table", table, ndim=2, floating=True, shape="(n_positions, d_model)")
    table = table.detach().to(torch.float64)
    n, d = table.shape
    full_rank = min(n, d)
    ranks = check_int_sequence("ranks", ranks, min_len=1)
    u, s, vh = torch.linalg.svd(table, full_matrices=False)
    energy = (s**2).cumsum(0) / (s**2).sum()
    ranks = [r for r in ranks if r <= full_rank]  # ranks past the table's own rank change nothing: not offered
    if not ranks:
        raise ValueError(f"ranks must hold a rank <= {full_rank}, the rank of a {n} x {d} table, got {list(ranks)}")
    fig = new_figure(title="", x_title="position", y_title="position",
                     alt="Heatmap of cosine similarity between positions of a rank-limited sinusoidal table; "
                     "low ranks blur the diagonal band, higher ranks sharpen it.", height=460)
    fig.add_trace(go.Heatmap(z=np.zeros((n, n)), colorscale=DIVERGING, zmin=-1, zmax=1,
                             colorbar=dict(title=dict(text="cosine similarity"))))
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False)

    def update(rank: int) -> Frame:
        approx = (u[:, :rank] * s[:rank]) @ vh[:rank]
        similarity = cosine_similarity_matrix(approx.numpy())
        return Frame(traces={0: {"z": similarity}},
                     layout={"title.text": f"rank {rank} of {full_rank}: keeps {100 * energy[rank - 1]:.1f}% "
                                           "of the table's energy (sum of squares)"})

    return Explorer(fig, update, [Control("rank", ranks, label="rank r", live=(1, full_rank, 1))],
                    title="Cosine similarity of a rank-limited table",
                    caption="The best rank-r approximation (truncated SVD) of the table, compared position by "
                    "position. The factored hybrid starts here with init='sinusoidal'.")
