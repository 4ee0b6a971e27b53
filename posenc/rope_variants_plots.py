"""Figures for partial rotation: the two ladders a partial head can rotate with, against the full one."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from posenc.checks import check_positive_float, check_positive_int
from posenc.plots import DASHES, colour, new_figure
from posenc.relative import partial_inverse_frequencies, rope_inverse_frequencies

__all__ = ["partial_ladders_figure"]


def partial_ladders_figure(d_head: int = 128, fraction: float = 0.25, *, train_len: int = 4096,
                           base: float = 10000.0) -> go.Figure:
    """Turns within ``train_len`` of every rotated pair: the full head, and a ``fraction`` of it on each ladder.

    ``"compressed"`` (Hugging Face's ``partial_rotary_factor``) squeezes a whole ladder, fast to slow,
    into the rotated pairs; ``"truncated"`` (p-RoPE, Gemma 4's ``proportional``) keeps the full
    head's fastest pairs and stops the rest. Pairs that do not rotate are not drawn (log axis).
    A dotted line marks one turn: pairs below it meet angles training never showed on a longer input.
    """
    d_head, train_len = check_positive_int("d_head", d_head), check_positive_int("train_len", train_len)
    fraction = check_positive_float("fraction", fraction)
    ladders = {
        "every pair (full RoPE)": rope_inverse_frequencies(d_head, base=base),
        f"compressed, {fraction:g} of the head": partial_inverse_frequencies(d_head, fraction, base=base,
                                                                             ladder="compressed"),
        f"truncated (p-RoPE), {fraction:g} of the head": partial_inverse_frequencies(d_head, fraction, base=base,
                                                                                     ladder="truncated"),
    }
    fig = new_figure(
        title=f"Turns within {train_len:,} tokens of each rotating pair (head width {d_head}, base {base:,g})",
        x_title="coordinate pair i (0 = fastest)", y_title=f"turns within {train_len:,} tokens",
        alt=f"Line chart, log vertical axis: turns within {train_len:,} tokens of every rotating pair of a head of "
            f"width {d_head}. Full RoPE falls from {train_len / (2 * math.pi):,.0f} turns at pair 0 to well below one "
            f"turn at pair {d_head // 2 - 1}. The compressed ladder covers the same range on its {int(fraction * d_head) // 2} "
            f"pairs, so it keeps slow pairs; the truncated ladder follows full RoPE for its first "
            f"{int(fraction * d_head) // 2} pairs and stops there, above one turn.", height=440)
    for index, (name, speeds) in enumerate(ladders.items()):
        rotating = [i for i, s in enumerate(speeds.tolist()) if s > 0]
        turns = [train_len * float(speeds[i]) / (2 * math.pi) for i in rotating]
        fig.add_scatter(x=rotating, y=turns, mode="lines+markers", name=name, line=dict(color=colour(index), width=2, dash=DASHES[index]),
                        hovertemplate="pair %{x}: %{y:.3g} turns<extra>" + name + "</extra>")
    fig.add_hline(y=1.0, line=dict(dash="dot", color="#555"))
    # on a log axis plotly.js reads an annotation's y as an exponent: 0 puts the label at one turn
    fig.add_annotation(x=1, xref="x domain", xanchor="right", y=math.log10(1.0), yref="y", yanchor="bottom",
                       showarrow=False, text="one turn")
    fig.update_yaxes(type="log")
    return fig
