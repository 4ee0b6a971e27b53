"""Figures of :mod:`posenc.compare`: sinusoidal and learned tables side by side.

* :func:`dot_product_by_offset_figure`: does ``PE_i · PE_{i+k}`` depend on ``k`` alone?
* :func:`timing_figure`: the measured cost of looking rows up against computing them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch.nn import functional as F

from posenc.compare import Spread
from posenc.plots import colour, describe, new_figure

__all__ = ["dot_product_by_offset_figure", "timing_figure"]


def dot_product_by_offset_figure(
    tables: Mapping[str, torch.Tensor], *, starts: Sequence[int] = (0, 50, 100, 200), max_offset: int = 40
) -> go.Figure:
    """For each table, cosine of ``P[i]`` and ``P[i + k]`` against ``k``, one line per start ``i``.

    Lines that coincide mean the similarity depends on the offset only.
    """
    names = list(tables)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, shared_yaxes=True, horizontal_spacing=0.05)
    offsets = np.arange(max_offset + 1)
    for col, name in enumerate(names, start=1):
        table = tables[name].detach().double()
        for j, start in enumerate(starts):
            if start + max_offset >= table.shape[0]:
                raise ValueError(f"start {start} + max_offset {max_offset} is past the {table.shape[0]} rows of {name!r}")
            cos = F.cosine_similarity(table[start].expand(max_offset + 1, -1), table[start: start + max_offset + 1])
            fig.add_trace(go.Scatter(x=offsets, y=cos.numpy().round(4), mode="lines", name=f"from position {start}",
                                     line=dict(color=colour(j)), legendgroup=str(start), showlegend=col == 1),
                          row=1, col=col)
        fig.update_xaxes(title_text="offset k (positions)", row=1, col=col)
    fig.update_yaxes(title_text="cosine of P[i] and P[i+k]", row=1, col=1)
    fig.update_layout(height=380, title=dict(text="Similarity to the vector k positions ahead, by start position"))
    return describe(
        fig,
        alt="Line charts of the cosine similarity between a position vector and the vector k positions later, "
        "one line per starting position. For the sinusoidal table all lines lie on top of each other; for a "
        "randomly initialised learned table they are unrelated noise around zero.",
    )


def timing_figure(timings: Mapping[tuple[int, int], Mapping[str, float | Spread]], *, batch: int = 8) -> go.Figure:
    """Grouped bars: microseconds per call of each method of :func:`posenc.compare.position_vector_samples`,
    one group per ``(seq_len, d_model)``.

    A value is either seconds per call (a bar) or a :class:`posenc.compare.Spread` (a bar at the
    median with a whisker from the fastest to the slowest repeat).
    """
    if not timings:
        raise ValueError("timings must hold at least one (seq_len, d_model) entry")
    with_range = any(isinstance(value, Spread) for row in timings.values() for value in row.values())
    fig = new_figure(
        title="Producing position vectors on this CPU (forward only)",
        x_title="sequence length × d_model",
        y_title="time per call (µs, log scale)",
        alt="Grouped bar chart, one group per size: time to look rows up in a learned table, time to compute "
        f"the sinusoidal table two ways, and time to add the vectors to a batch of {batch} sequences"
        + (" (bars: medians; whiskers: fastest to slowest repeat)." if with_range else "."),
    )
    labels = [f"{n:,} × {d}" for n, d in timings]
    methods = list(next(iter(timings.values())))
    for i, method in enumerate(methods):
        values = [row[method] for row in timings.values()]
        medians = [value.median if isinstance(value, Spread) else float(value) for value in values]
        error_y = None
        if with_range:
            error_y = dict(
                type="data", symmetric=False,
                array=[round(1e6 * (v.high - v.median), 2) if isinstance(v, Spread) else 0.0 for v in values],
                arrayminus=[round(1e6 * (v.median - v.low), 2) if isinstance(v, Spread) else 0.0 for v in values],
            )
        fig.add_trace(go.Bar(x=labels, y=[round(1e6 * m, 2) for m in medians], name=method,
                             marker_color=colour(i), error_y=error_y))
    fig.update_yaxes(type="log")
    fig.update_layout(barmode="group")
    return fig
