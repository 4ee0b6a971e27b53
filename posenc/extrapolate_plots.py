"""Figures of :mod:`posenc.extrapolate`: what each workaround does past the end of a table.

* :func:`mapping_figure`: which row each position reads under clip, modular and interpolate;
* :func:`similarity_panels_figure`: cosine-similarity heatmaps of several (extended) tables
  on one colour scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from posenc.analysis import cosine_similarity_matrix
from posenc.checks import check_mapping, check_positive_int, check_text
from posenc.extrapolate import STRATEGIES, map_positions
from posenc.plots import DIVERGING, colour, describe, new_figure

__all__ = ["mapping_figure", "similarity_panels_figure"]


# -- figures -----------------------------------------------------------------------------------
def mapping_figure(max_len: int, new_len: int) -> go.Figure:
    """Step plot: which table row (possibly fractional) each workaround reads for positions
    ``0 .. new_len - 1`` of a table with ``max_len`` rows."""
    max_len = check_positive_int("max_len", max_len)
    new_len = check_positive_int("new_len", new_len)
    positions = torch.arange(new_len)
    fig = new_figure(
        title=f"Which row of a {max_len}-row table each position reads",
        x_title="position in the input",
        y_title="row of the learned table",
        alt=f"Line chart for positions 0 to {new_len - 1}. All three workarounds follow the diagonal up to "
        f"position {max_len - 1}. Past it, clip stays flat at row {max_len - 1}, modular saws back to row 0 "
        f"every {max_len} positions, and interpolate is a straight line from row 0 to row {max_len - 1} "
        f"that is {new_len / max_len:g} times less steep than the diagonal.",
        height=380,
    )
    for i, strategy in enumerate(STRATEGIES):
        rows = map_positions(positions, max_len, strategy, target_len=new_len if strategy == "interpolate" else None)
        fig.add_trace(go.Scatter(x=positions.tolist(), y=rows.tolist(), mode="lines+markers", name=strategy,
                                 marker=dict(size=4), line=dict(color=colour(i), width=2)))
    fig.add_vline(x=max_len - 0.5, line_dash="dash", line_color="#555", annotation_text="end of the table",
                  annotation_position="top left")
    return fig


def similarity_panels_figure(
    tables: dict[str, Any], *, title: str, alt: str, caption: str | None = None, cols: int = 3,
    panel_height: int = 300,
) -> go.Figure:
    """Cosine-similarity heatmaps of several tables in a grid, on one colour scale [-1, 1].

    Args:
        tables: panel title -> ``(n_positions, d_model)`` table (keep n_positions <= ~128).
        cols: panels per row; each panel is square.
        panel_height: height of one row of panels in pixels.
    """
    check_mapping("tables", tables, min_len=1, what="a dict of panel title -> (n_positions, d_model) table", item="table")
    cols = check_positive_int("cols", cols)
    panel_height = check_positive_int("panel_height", panel_height)
    rows = -(-len(tables) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=list(tables), horizontal_spacing=0.08,
                        vertical_spacing=0.16 / rows)
    for i, table in enumerate(tables.values()):
        row, col = divmod(i, cols)
        sim = cosine_similarity_matrix(table)
        fig.add_trace(go.Heatmap(z=np.round(sim, 3), coloraxis="coloraxis",
                                 hovertemplate="positions %{y} and %{x}: %{z}<extra></extra>"),
                      row=row + 1, col=col + 1)
        axis = i + 1
        fig.update_xaxes(title_text="position", showgrid=False, row=row + 1, col=col + 1)
        fig.update_yaxes(autorange="reversed", showgrid=False, row=row + 1, col=col + 1,
                         scaleanchor=f"x{axis if axis > 1 else ''}", constrain="domain",
                         title_text="position" if col == 0 else None)
    fig.update_layout(title=dict(text=check_text("title", title)), height=panel_height * rows + 90,
                      coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1,
                                     colorbar=dict(title=dict(text="cosine similarity"))))
    return describe(fig, alt=alt, caption=caption)
