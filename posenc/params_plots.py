"""Figures and tables of :mod:`posenc.params`: what a learned position table costs.

* :func:`parameter_table_html`: parameters by part for each configuration;
* :func:`position_params_figure`: position parameters against ``L_max`` and ``d_model``;
* :func:`position_share_figure`: the table's share of all parameters as ``L_max`` grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from posenc.checks import check_int_sequence
from posenc.params import (
    CONFIGS,
    TransformerConfig,
    _check_configs,
    count_parameters,
    parameter_rows,
    position_parameters,
)
from posenc.plots import colour, describe, html_table, new_figure

__all__ = ["parameter_table_html", "position_params_figure", "position_share_figure"]


def parameter_table_html(configs: Iterable[TransformerConfig] | None = None) -> str:
    """:func:`parameter_rows` as an HTML table (counts with thousands separators)."""
    headers = ["model (L_max × d_model)", "position", "token", "segment", "total", "position share",
               "published"]
    body = []
    for row in parameter_rows(configs):
        total = row["published_total"]
        published = f"≈ {total / 1e6:g}M" if isinstance(total, int) else "—"
        body.append([
            f"{row['name']} ({row['max_len']:,} × {row['d_model']:,})",
            f"{row['position']:,}", f"{row['token']:,}", f"{row['segment']:,}", f"{row['total']:,}",
            f"{row['position_percent']:.2f} %", published,
        ])
    return html_table(headers, body, numeric=[False] + [True] * 6, compact=True,
                      caption="Parameters by part, computed from each configuration")


def position_params_figure(
    max_lens: Sequence[int], d_models: Sequence[int], *, configs: Iterable[TransformerConfig] | None = None
) -> go.Figure:
    """Two log-log panels, one above the other: position parameters against L_max (one line per
    d_model) and against d_model (one line per L_max), with the configurations of
    :data:`CONFIGS` marked (their names appear on hover)."""
    max_lens = check_int_sequence("max_lens", max_lens, min_len=1)
    d_models = check_int_sequence("d_models", d_models, min_len=1)
    marked = list(CONFIGS.values()) if configs is None else _check_configs(configs)
    fig = make_subplots(rows=2, cols=1, subplot_titles=("against maximum length", "against model width"),
                        vertical_spacing=0.2)
    for i, d in enumerate(d_models):
        fig.add_trace(go.Scatter(x=list(max_lens), y=[position_parameters(n, d) for n in max_lens], mode="lines",
                                 name=f"d_model = {d:,}", line=dict(color=colour(i)), legend="legend"),
                      row=1, col=1)
    for i, n in enumerate(max_lens[:: max(1, len(max_lens) // 4)]):
        fig.add_trace(go.Scatter(x=list(d_models), y=[position_parameters(n, d) for d in d_models], mode="lines",
                                 name=f"L_max = {n:,}", line=dict(color=colour(i), dash="dot"),
                                 legend="legend2"), row=2, col=1)
    for row, key, legend in ((1, "max_len", "legend"), (2, "d_model", "legend2")):
        fig.add_trace(go.Scatter(
            x=[getattr(c, key) for c in marked], y=[position_parameters(c.max_len, c.d_model) for c in marked],
            mode="markers", hovertext=[c.name for c in marked], hoverinfo="text+x+y",
            marker=dict(color="#000000", size=8, symbol="diamond"), name="configurations of the table",
            legend=legend), row=row, col=1)
    fig.update_xaxes(type="log", title_text="maximum length L_max (positions)", row=1, col=1)
    fig.update_xaxes(type="log", title_text="model width d_model (dimensions)", row=2, col=1)
    fig.update_yaxes(type="log", title_text="position parameters")
    fig.update_layout(
        height=760, title=dict(text="A learned table has L_max × d_model parameters"),
        legend=dict(y=1.0, yanchor="top", x=1.02), legend2=dict(y=0.4, yanchor="top", x=1.02),
    )
    return describe(
        fig,
        alt="Two log-log line charts. Top: learned position parameters grow in proportion to the maximum "
        "length, one line per model width. Bottom: they grow in proportion to the model width, one line per "
        "maximum length. Diamonds mark BERT, GPT-2 and the two hypothetical long-context configurations.",
    )


def position_share_figure(
    configs: Sequence[TransformerConfig], max_lens: Sequence[int]
) -> go.Figure:
    """Position parameters as % of the total when only L_max of each configuration changes."""
    configs = _check_configs(configs)
    max_lens = check_int_sequence("max_lens", max_lens, min_len=1)
    fig = new_figure(
        title="Share of all parameters spent on the position table",
        x_title="maximum length L_max (positions, log scale)",
        y_title="position parameters (% of total)",
        alt="Line chart: for each model shape, the percentage of parameters in the learned position table "
        "rises with the maximum length, slowly at first and steeply past tens of thousands of positions.",
    )
    for i, config in enumerate(configs):
        shares = [100.0 * count_parameters(config.with_(max_len=n)).position_share for n in max_lens]
        fig.add_trace(go.Scatter(x=list(max_lens), y=shares, mode="lines+markers", name=config.name,
                                 line=dict(color=colour(i))))
        own = 100.0 * count_parameters(config).position_share
        fig.add_trace(go.Scatter(x=[config.max_len], y=[own], mode="markers", showlegend=False,
                                 marker=dict(color=colour(i), size=13, symbol="star"),
                                 hovertext=f"{config.name} as published: L_max={config.max_len}"))
    fig.update_xaxes(type="log")
    return fig
