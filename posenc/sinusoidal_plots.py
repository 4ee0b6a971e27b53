"""Figures and explorers for chapter 2 (the sinusoidal encoding).

The maths lives in :mod:`posenc.sinusoidal`; this module only draws. Explorers compute the
full table for the reader's setting and then reduce what is *drawn* to a bounded number of
cells (row blocks are averaged, channel pairs are subsampled), which keeps the static page
light and the live update fast. Averaging, not striding: striding rows of a fast wave would
alias it into a slow, false pattern, while a block mean shows "oscillates faster than this
pixel" as a value near 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from posenc.checks import (
    check_choice,
    check_even_int,
    check_int,
    check_int_sequence,
    check_mapping,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
    check_reals,
    check_tensor,
)
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import DIVERGING, OKABE_ITO, colour, describe, heatmap, new_figure
from posenc.sinusoidal import (
    EVEN_WIDTH,
    LAYOUTS,
    Frequencies,
    Layout,
    offset_dot_product,
    rotation_matrix,
    sinusoidal_frequencies,
    sinusoidal_table,
    sinusoidal_wavelengths,
)

__all__ = [
    "pool_rows",
    "pick_channels",
    "drawable_table",
    "table_figure",
    "table_explorer",
    "wave_pairs",
    "position_explorer",
    "rotation_explorer",
    "wavelength_figure",
    "dot_product_figure",
    "layouts_figure",
    "precision_figure",
    "score_forms_figure",
    "offset_head_figure",
]


def _even(name: str, d_model: object) -> int:
    """A width these figures can draw: sin/cos pairs (no ``odd`` option here, so no ``odd='pad'`` hint)."""
    return check_even_int(name, d_model, why=EVEN_WIDTH)


# --------------------------------------------------------------------------- reducing what is drawn
def pool_rows(values: torch.Tensor, max_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Average consecutive rows in equal blocks so at most ``max_rows`` remain.

    Args:
        values: ``(rows, columns)``.

    Returns:
        ``(pooled, centres)``: ``(n_blocks, columns)`` block means and the ``(n_blocks,)``
        mean row index of each block (unchanged rows if ``rows <= max_rows``).
    """
    check_tensor("values", values, ndim=2, floating=True, shape="(rows, columns)")
    max_rows = check_positive_int("max_rows", max_rows)
    rows = values.shape[0]
    block = math.ceil(rows / max_rows)
    index = torch.arange(rows, dtype=torch.float64)
    if block == 1:
        return values, index
    group = torch.arange(rows) // block
    n_blocks = int(group[-1]) + 1
    counts = torch.bincount(group, minlength=n_blocks).to(values.dtype)
    sums = torch.zeros(n_blocks, values.shape[1], dtype=values.dtype).index_add_(0, group, values)
    centres = torch.zeros(n_blocks, dtype=torch.float64).index_add_(0, group, index) / counts.double()
    return sums / counts[:, None], centres


def pick_channels(d_model: int, max_channels: int, *, layout: Layout = "interleaved") -> torch.Tensor:
    """Channel indices to draw: every channel, or both channels of evenly spaced pairs.

    Keeps sine and cosine of each chosen frequency together, so a subsampled heatmap
    still shows pairs. Returns sorted ``torch.long`` indices.
    """
    d_model = check_positive_int("d_model", d_model)
    max_channels = check_positive_int("max_channels", max_channels)
    check_choice("layout", layout, LAYOUTS)
    if d_model <= max_channels:
        return torch.arange(d_model)
    pairs = d_model // 2
    chosen = torch.linspace(0, pairs - 1, max(1, max_channels // 2)).round().long().unique()
    partner = chosen + pairs if layout == "concatenated" else 2 * chosen + 1
    first = chosen if layout == "concatenated" else 2 * chosen
    return torch.cat([first, partner]).sort().values


def drawable_table(
    table: torch.Tensor, *, max_rows: int = 64, max_channels: int = 64, layout: Layout = "interleaved"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reduce a ``(seq_len, d_model)`` table to at most ``max_rows x max_channels`` cells.

    Returns:
        ``(z, positions, channels)``: the drawn values, the (mean) position of each drawn row
        and the channel index of each drawn column.
    """
    check_tensor("table", table, ndim=2, floating=True, shape="(seq_len, d_model)")
    channels = pick_channels(table.shape[1], max_channels, layout=layout)
    pooled, centres = pool_rows(table[:, channels], max_rows)
    return pooled.numpy(), centres.numpy(), channels.numpy()


def _table_title(seq_len: int, d_model: int, drawn_rows: int, drawn_cols: int) -> str:
    note = f" (drawn {drawn_rows}×{drawn_cols})" if drawn_rows < seq_len or drawn_cols < d_model else ""
    return f"d_model = {d_model}, {seq_len} positions{note}"


# --------------------------------------------------------------------------- the table
def table_figure(
    seq_len: int,
    d_model: int,
    *,
    layout: Layout = "interleaved",
    base: float = 10000.0,
    max_rows: int = 64,
    max_channels: int = 64,
) -> go.Figure:
    """Heatmap of the table (positions down, channels across), reduced for drawing."""
    d_model = _even("d_model", d_model)
    table = sinusoidal_table(seq_len, d_model, layout=layout, base=base)
    z, rows, cols = drawable_table(table, max_rows=max_rows, max_channels=max_channels, layout=layout)
    fig = heatmap(
        z,
        x=[str(c) for c in cols],
        y=rows,
        title=_table_title(seq_len, d_model, len(rows), len(cols)),
        x_title="channel (encoding dimension)",
        y_title="position",
        colorbar_title="value",
        zmin=-1.0,
        zmax=1.0,
        alt=f"Heatmap of the {layout} sinusoidal table for {seq_len} positions and d_model {d_model}: "
        "fast stripes in the first channels on the left, slowly varying or constant channels on the right.",
    )
    fig.update_xaxes(type="category", nticks=16)
    return fig


def table_explorer(
    d_models: Sequence[int] = (16, 64, 128, 512),
    lengths: Sequence[int] = (32, 128, 512),
    *,
    max_rows: int = 64,
    max_channels: int = 64,
) -> Explorer:
    """Explorer (a): choose d_model and sequence length, see the table.

    The live sliders accept any even d_model in [2, 1024] and any length in [1, 4096]; the
    static page holds the grid ``d_models x lengths``.
    """
    d_models = tuple(_even(f"d_models[{i}]", d) for i, d in enumerate(check_int_sequence("d_models", d_models,
                                                                                             min_len=1)))
    lengths = check_int_sequence("lengths", lengths, min_len=1)
    start_d, start_len = d_models[-1], lengths[-1]
    fig = table_figure(start_len, start_d, max_rows=max_rows, max_channels=max_channels)

    def update(d_model: int, seq_len: int) -> Frame:
        d_model, seq_len = int(d_model), int(seq_len)
        table = sinusoidal_table(seq_len, d_model)  # computed in full; only the drawing is reduced
        z, rows, cols = drawable_table(table, max_rows=max_rows, max_channels=max_channels)
        return Frame(
            traces={0: {"z": z, "x": [str(c) for c in cols], "y": rows}},
            layout={"title.text": _table_title(seq_len, d_model, len(rows), len(cols))},
        )

    return Explorer(
        fig,
        update,
        [
            Control("d_model", list(d_models), label="d_model", default=start_d, live=(2, 1024, 2)),
            Control("seq_len", list(lengths), label="sequence length", default=start_len, live=(1, 4096, 1)),
        ],
        title="The sinusoidal table at several widths and lengths",
        # On paper: every width at the middle length (more channels, more slow ones), then the
        # widest table at the other lengths (a longer table shows more of its slow waves).
        print_settings=([{"d_model": d, "seq_len": lengths[len(lengths) // 2]} for d in d_models]
                        + [{"d_model": start_d, "seq_len": n} for n in lengths if n != lengths[len(lengths) // 2]])[:6],
        caption="Rows are positions, columns are channels (sin, cos, sin, cos, ...). Large tables are drawn "
        "as means of row blocks and a subset of channel pairs; the table itself is computed in full.",
    )


# --------------------------------------------------------------------------- waves through a position
def wave_pairs(d_model: int, count: int = 6) -> list[int]:
    """``count`` pair indices spread from the fastest (0) to the slowest (d_model/2 - 1) pair."""
    pairs = check_positive_int("d_model", d_model) // 2
    count = check_positive_int("count", count)
    return sorted({int(round(x)) for x in np.linspace(0, pairs - 1, min(count, pairs))})


def position_explorer(
    d_model: int = 128,
    *,
    positions: Sequence[int] = (0, 3, 10, 40, 100, 250, 1000, 10000),
    n_waves: int = 6,
    window: int = 96,
) -> Explorer:
    """Explorer (b): pick a position; see the sine waves crossing it and its whole vector.

    Top: ``sin(pos * w_i)`` for a few pairs ``i`` (fast to slow) as continuous curves over a
    window of ``window`` positions around the chosen one, which is marked. Bottom: all
    ``d_model`` entries of ``PE(pos)``. Positions up to 100,000 in a live kernel.
    """
    d_model = _even("d_model", d_model)
    positions = check_int_sequence("positions", positions, nonnegative=True, min_len=1)
    window = check_positive_int("window", window)
    pairs = wave_pairs(d_model, check_positive_int("n_waves", n_waves))
    omega = sinusoidal_frequencies(d_model)
    wavelengths = sinusoidal_wavelengths(d_model)
    samples = 2 * window + 1  # 2 per position: ~12 per period of the fastest wave (2*pi)
    fig = make_subplots(
        rows=2, cols=1, vertical_spacing=0.17,
        subplot_titles=("sine channels 2i around the position", "the whole vector PE(pos)"),
    )
    for n, i in enumerate(pairs):
        # x0/dx instead of an x array: a frame only has to carry the y values.
        fig.add_trace(
            go.Scatter(x0=0.0, dx=0.5, y=np.zeros(samples, dtype=np.float32), mode="lines",
                       line=dict(width=1.5, color=colour(n)),
                       name=f"ch {2 * i}, λ = {float(wavelengths[i]):,.1f}"),
            row=1, col=1,
        )
    n_static = len(pairs)
    fig.add_trace(go.Scatter(x=[0, 0], y=[-1.15, 1.15], mode="lines", line=dict(color="#444", dash="dot"),
                             name="chosen position", showlegend=False, hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0] * len(pairs), y=[0.0] * len(pairs), mode="markers",
                             marker=dict(size=10, color=[colour(n) for n in range(len(pairs))],
                                         line=dict(color="black", width=1)),
                             name="values at the position", showlegend=False), row=1, col=1)
    channels = np.arange(d_model)
    fig.add_trace(go.Bar(x=channels[0::2], y=np.zeros(d_model // 2), name="sin channels",
                         marker_color=OKABE_ITO[0]), row=2, col=1)
    fig.add_trace(go.Bar(x=channels[1::2], y=np.zeros(d_model // 2), name="cos channels",
                         marker_color=OKABE_ITO[1]), row=2, col=1)
    fig.update_xaxes(title_text="position", row=1, col=1)
    fig.update_yaxes(title_text="value", range=[-1.2, 1.2], row=1, col=1)
    fig.update_xaxes(title_text="channel", row=2, col=1)
    fig.update_yaxes(title_text="value", range=[-1.1, 1.1], row=2, col=1)
    fig.update_layout(height=640, bargap=0.0, legend=dict(font=dict(size=11)))
    describe(
        fig,
        alt=f"Top: {len(pairs)} sine waves of increasing wavelength over a window of {window} positions around "
        "the chosen position, with a dotted vertical line at that position and dots where the waves cross it. "
        f"Bottom: bar chart of the {d_model} values of the chosen position's encoding, sine channels in blue, "
        "cosine channels in orange.",
    )

    def update(position: int) -> Frame:
        position = int(position)
        first = max(0, position - window // 2)
        x = first + 0.5 * torch.arange(samples, dtype=torch.float64)
        vector = sinusoidal_table(None, d_model, positions=[position])[0].numpy()
        traces: dict[int, dict[str, object]] = {
            n: {"x0": first, "y": torch.sin(x * omega[i]).numpy().astype(np.float32)} for n, i in enumerate(pairs)
        }
        traces[n_static] = {"x": [position, position]}
        traces[n_static + 1] = {"x": [position] * len(pairs), "y": vector[[2 * i for i in pairs]]}
        traces[n_static + 2] = {"y": vector[0::2]}
        traces[n_static + 3] = {"y": vector[1::2]}
        return Frame(
            traces=traces,
            layout={"title.text": f"Position {position}", "xaxis.range": [first, first + window]},
        )

    return Explorer(
        fig,
        update,
        [Control("position", list(positions), label="position", default=positions[min(3, len(positions) - 1)],
                 live=(0, 100000, 1))],
        title=f"The waves through a position, and its whole vector (d_model = {d_model})",
        caption=f"d_model = {d_model}. Each dot is one entry of PE(pos): the value of one wave at the chosen "
        "position. Fast waves swing within a few positions; slow ones barely move over the whole window.",
    )


# --------------------------------------------------------------------------- rotation by an offset
def rotation_explorer(
    d_model: int = 32,
    *,
    offsets: Sequence[int] = (0, 1, 2, 5, 10, 50, 200, 1000),
    positions: Sequence[int] = (0, 7, 100, 1000),
) -> Explorer:
    """Explorer (c): pick an offset k (and a position); PE(pos+k) as M_k · PE(pos).

    Left: every (sin, cos) pair as a point on the unit circle: PE(pos) (hollow) and
    M_k · PE(pos) (filled); each pair turns by its own angle k·w_i. Right: the entries of
    M_k · PE(pos) (markers) on top of PE(pos+k) from the table (line): they coincide.
    """
    d_model = _even("d_model", d_model)
    offsets = check_int_sequence("offsets", offsets, nonnegative=True, min_len=1)
    positions = check_int_sequence("positions", positions, nonnegative=True, min_len=1)
    pairs = d_model // 2
    circle = np.linspace(0, 2 * np.pi, 181)
    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.42, 0.58], horizontal_spacing=0.12,
        subplot_titles=("each (sin, cos) pair on the unit circle", "channel values"),
    )
    fig.add_trace(go.Scatter(x=np.cos(circle), y=np.sin(circle), mode="lines", line=dict(color="#bbb", width=1),
                             hoverinfo="skip", showlegend=False), row=1, col=1)
    colors = [colour(i) for i in range(pairs)]
    fig.add_trace(go.Scatter(x=np.zeros(pairs), y=np.zeros(pairs), mode="markers", name="PE(pos)",
                             marker=dict(size=9, color="rgba(0,0,0,0)", line=dict(color=colors, width=1.5))),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=np.zeros(pairs), y=np.zeros(pairs), mode="markers", name="M_k · PE(pos)",
                             marker=dict(size=7, color=colors)), row=1, col=1)
    channels = np.arange(d_model)
    fig.add_trace(go.Scatter(x=channels, y=np.zeros(d_model), mode="lines", name="PE(pos+k) from the table",
                             line=dict(color=OKABE_ITO[0], width=2)), row=1, col=2)
    fig.add_trace(go.Scatter(x=channels, y=np.zeros(d_model), mode="markers", name="M_k · PE(pos)",
                             marker=dict(color=OKABE_ITO[5], size=6, symbol="x"), showlegend=False), row=1, col=2)
    fig.update_xaxes(title_text="cos channel (2i+1)", range=[-1.15, 1.15], row=1, col=1)
    fig.update_yaxes(title_text="sin channel (2i)", range=[-1.15, 1.15], scaleanchor="x", scaleratio=1, row=1, col=1)
    fig.update_xaxes(title_text="channel", row=1, col=2)
    fig.update_yaxes(title_text="value", range=[-1.1, 1.1], row=1, col=2)
    fig.update_layout(height=480, legend=dict(orientation="h", x=0.0, y=1.1, yanchor="bottom"),
                      margin=dict(t=120))
    describe(
        fig,
        alt=f"Left: unit circle with {pairs} hollow points (the pairs of PE(pos)) and {pairs} filled points (the "
        "same pairs rotated by M_k). Right: the channel values of PE(pos+k) as a line and of M_k times PE(pos) as "
        "crosses, lying on the line.",
    )

    def update(k: int, position: int) -> Frame:
        k, position = int(k), int(position)
        table = sinusoidal_table(None, d_model, positions=[position, position + k], dtype=torch.float64)
        rotated = rotation_matrix(k, d_model) @ table[0]
        gap = float((rotated - table[1]).abs().max())
        start, moved = table[0].numpy(), rotated.numpy()
        return Frame(
            traces={
                1: {"x": start[1::2], "y": start[0::2]},
                2: {"x": moved[1::2], "y": moved[0::2]},
                3: {"y": table[1].numpy()},
                4: {"y": moved},
            },
            layout={"title.text": f"pos = {position}, k = {k}: largest gap {gap:.0e}"},
        )

    return Explorer(
        fig,
        update,
        [
            Control("k", list(offsets), label="offset k", default=offsets[min(3, len(offsets) - 1)],
                    live=(0, 5000, 1)),
            Control("position", list(positions), label="position", default=positions[min(2, len(positions) - 1)],
                    live=(0, 100000, 1)),
        ],
        title=f"A shift by k positions is a rotation of every pair (d_model = {d_model})",
        # On paper: four offsets at one position, then one offset at two other positions (the
        # rotation does not depend on the position).
        print_settings=_rotation_print_settings(offsets, positions),
        caption=f"d_model = {d_model}. M_k turns pair i by the angle k·w_i, whatever the position: fast pairs "
        "turn a lot, slow pairs hardly at all. The title shows the largest gap between M_k·PE(pos) and PE(pos+k).",
    )


def _rotation_print_settings(offsets: Sequence[int], positions: Sequence[int]) -> list[dict[str, int]]:
    """Four offsets spread over the grid at the default position, then the default offset at two
    other positions: what the rotation explorer prints."""
    k, position = offsets[min(3, len(offsets) - 1)], positions[min(2, len(positions) - 1)]
    picks = sorted({offsets[int(i)] for i in np.linspace(0, len(offsets) - 1, 4).round()} | {k})
    settings = [{"k": o, "position": position} for o in picks]
    others = [p for p in positions if p != position]
    settings += [{"k": k, "position": p} for p in (others[:1] + others[-1:] if len(others) > 1 else others)]
    return settings[:6]


# --------------------------------------------------------------------------- static figures
def wavelength_figure(d_model: int = 512, *, base: float = 10000.0) -> go.Figure:
    """Wavelength of each pair (log scale) for the paper's and the tensor2tensor/fairseq frequencies."""
    d_model = _even("d_model", d_model)
    base = check_positive_float("base", base)
    fig = new_figure(
        title=f"Wavelength of each pair, d_model = {d_model}",
        x_title="pair index i (channels 2i and 2i+1)",
        y_title="wavelength (positions, log scale)",
        alt=f"Two nearly straight lines on a log scale: wavelength against pair index for d_model {d_model}, "
        "rising from 2 pi; the paper's line ends slightly below 2 pi times 10000, the endpoint variant exactly at it.",
    )
    variants: tuple[tuple[Frequencies, str, str], ...] = (("paper", "paper: 2π·base^(2i/d)", OKABE_ITO[0]),
                                 ("endpoint", "tensor2tensor / fairseq: 2π·base^(i/(d/2−1))", OKABE_ITO[1]))
    for variant, name, color in variants:
        lengths = sinusoidal_wavelengths(d_model, base=base, frequencies=variant).numpy()
        fig.add_trace(go.Scatter(x=np.arange(len(lengths)), y=lengths, mode="lines", name=name,
                                 line=dict(color=color, width=2)))
        fig.add_trace(go.Scatter(x=[len(lengths) - 1], y=[lengths[-1]], mode="markers+text", showlegend=False,
                                 text=[f"{lengths[-1]:,.0f} = 2π·{lengths[-1] / (2 * math.pi):,.0f}"],
                                 textposition="top left" if variant == "endpoint" else "bottom left",
                                 marker=dict(color=color, size=8)))
    fig.update_yaxes(type="log")
    fig.update_layout(legend=dict(x=0.02, y=0.98))
    return fig


def dot_product_figure(
    d_model: int = 512, *, max_offset: int = 256, positions: Sequence[int] = (0, 100, 5000)
) -> go.Figure:
    """``PE(pos) · PE(pos+k)`` against k: the closed form and measured dot products from several positions."""
    d_model = _even("d_model", d_model)
    max_offset = check_positive_int("max_offset", max_offset)
    positions = check_int_sequence("positions", positions, nonnegative=True, min_len=1)
    offsets = torch.arange(0, max_offset + 1)
    curve = offset_dot_product(offsets, d_model).numpy()
    fig = new_figure(
        title=f"PE(pos) · PE(pos+k), d_model = {d_model}",
        x_title="offset k (positions)",
        y_title="dot product",
        alt="A curve starting at d_model/2 for k = 0 that falls quickly and then decays with small wiggles; "
        "markers measured from different starting positions lie exactly on the curve.",
    )
    fig.add_trace(go.Scatter(x=offsets.numpy(), y=curve, mode="lines", name="Σ_i cos(k·w_i)",
                             line=dict(color="#444", width=2)))
    step = max(1, max_offset // 40)
    for n, pos in enumerate(positions):
        table = sinusoidal_table(max_offset + 1, d_model, offset=pos, dtype=torch.float64)
        measured = (table[0] @ table.T).numpy()
        fig.add_trace(go.Scatter(x=offsets.numpy()[n::step], y=measured[n::step], mode="markers",
                                 name=f"measured from pos = {pos}",
                                 marker=dict(color=colour(n), size=7)))
    return fig


def layouts_figure(seq_len: int = 64, d_model: int = 32) -> go.Figure:
    """The interleaved (paper) and concatenated (tensor2tensor/fairseq) layouts side by side."""
    seq_len, d_model = check_positive_int("seq_len", seq_len), _even("d_model", d_model)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("interleaved (paper): sin, cos, sin, cos, ...",
                                        "concatenated (tensor2tensor): sines | cosines"))
    layouts: tuple[tuple[int, Layout], ...] = ((1, "interleaved"), (2, "concatenated"))
    for col, layout in layouts:
        table = sinusoidal_table(seq_len, d_model, layout=layout).numpy()
        fig.add_trace(go.Heatmap(z=table, colorscale=DIVERGING, zmin=-1, zmax=1, showscale=col == 2,
                                 colorbar=dict(title=dict(text="value"))), row=1, col=col)
        fig.update_xaxes(title_text="channel", row=1, col=col)
        fig.update_yaxes(title_text="position", autorange="reversed", row=1, col=col)
    fig.update_layout(height=420)
    return describe(
        fig,
        alt=f"Two heatmaps of the same {seq_len} by {d_model} sinusoidal table. Left: sine and cosine channels "
        "alternate. Right: all sine channels in the left half, all cosine channels in the right half.",
    )


def precision_figure(
    positions: np.ndarray, errors: Mapping[str, np.ndarray], *, target: float | None = 1e-6
) -> go.Figure:
    """Max abs error (log scale) against position for several ways of building the table.

    Args:
        positions: ``(n,)`` x values (e.g. the last position of each bucket).
        errors: method name -> ``(n,)`` errors.
        target: a level drawn as a dashed line (``None``: none).
    """
    xs = check_reals("positions", positions)
    if xs.ndim != 1 or xs.numel() == 0 or bool((xs < 0).any()):
        raise ValueError(f"positions must be a non-empty 1-D array of positions >= 0, got shape {tuple(xs.shape)}")
    check_mapping("errors", errors, min_len=1, what="a dict of method name -> errors")
    for name, values in errors.items():
        errs = check_reals(f"errors[{name!r}]", values)
        if errs.shape != xs.shape:
            raise ValueError(f"errors[{name!r}] must have one value per position ({xs.numel()}), got shape "
                             f"{tuple(errs.shape)}")
    if target is not None:
        target = check_positive_float("target", target)
    fig = new_figure(
        title="float32 tables against the float64 formula",
        x_title="position",
        y_title="max abs error (log scale)",
        alt="Log-scale error against position: the float32 recipe's error grows with position to a few times "
        "1e-3, the exact table stays flat near 1e-7, below the dashed 1e-6 target line.",
    )
    for n, (name, values) in enumerate(errors.items()):
        fig.add_trace(go.Scatter(x=positions, y=values, mode="lines", name=name,
                                 line=dict(color=colour(n), width=2)))
    if target is not None:
        fig.add_trace(go.Scatter(x=[positions[0], positions[-1]], y=[target, target], mode="lines",
                                 name=f"target {target:g}", line=dict(color="#444", dash="dash", width=1)))
    fig.update_yaxes(type="log", exponentformat="power")
    return fig


# --------------------------------------------------------------------------- attention scores
def score_forms_figure(scores: Mapping[str, np.ndarray]) -> go.Figure:
    """Position-position score matrices side by side (query ``i`` = row, key ``j`` = column).

    Args:
        scores: panel title -> ``(n, n)`` scores ``PE_i A PE_j^T`` (one to three panels).
    """
    check_mapping("scores", scores, min_len=1, what="a dict of panel title -> (n, n) scores")
    if not 1 <= len(scores) <= 3:
        raise ValueError(f"scores must hold 1 to 3 matrices, got {len(scores)}")
    for title, matrix in scores.items():
        square = check_reals(f"scores[{title!r}]", matrix)
        if square.ndim != 2 or square.shape[0] != square.shape[1]:
            raise ValueError(f"scores[{title!r}] must be a square (n, n) matrix, got shape {tuple(square.shape)}")
    titles = list(scores)
    fig = make_subplots(rows=1, cols=len(titles), horizontal_spacing=0.12, subplot_titles=titles)
    for col, title in enumerate(titles, start=1):
        values = np.asarray(scores[title], dtype=float)
        limit = float(np.abs(values).max()) or 1.0
        fig.add_trace(go.Heatmap(z=values, colorscale=DIVERGING, zmin=-limit, zmax=limit,
                                 colorbar=dict(title=dict(text="score"), x=col / len(titles) - 0.02, len=0.9)),
                      row=1, col=col)
        fig.update_xaxes(title_text="key position j", row=1, col=col)
        fig.update_yaxes(title_text="query position i", autorange="reversed", row=1, col=col)
    fig.update_layout(height=440)
    return describe(
        fig,
        alt="Heatmaps of position-position attention scores, query position down, key position across. "
        "With a random matrix the pattern changes along each diagonal; with a block matrix of scaled "
        "rotations every diagonal has one constant colour, so the score depends on the offset only.",
    )


def offset_head_figure(weights: np.ndarray, k: int) -> go.Figure:
    """Causal attention weights of the constructed head that attends ``k`` positions back.

    Args:
        weights: ``(n, n)`` softmax weights, query ``i`` = row, key ``j`` = column.
        k: the offset the head was built for (drawn as a dashed line ``j = i - k``).
    """
    values = check_reals("weights", weights).numpy()
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise ValueError(f"weights must be a square (n, n) matrix of attention weights, got shape {values.shape}")
    n = values.shape[0]
    k = check_int("k", k, low=0, high=n - 1)
    fig = heatmap(
        values,
        title=f"Head built from M_(−{k}): weights on position vectors alone",
        x_title="key position j",
        y_title="query position i",
        colorbar_title="weight",
        diverging=False,
        zmin=0.0,
        zmax=1.0,
        alt=f"Heatmap of causal attention weights for {n} positions: a single bright line parallel to the "
        f"diagonal, {k} positions to its left, so every query attends almost only to the key {k} positions back; "
        f"the first {k} queries, which have no such key, spread their weight over the keys they have.",
    )
    fig.add_trace(go.Scatter(x=[0, n - 1 - k], y=[k, n - 1], mode="lines", name=f"j = i − {k}",
                             line=dict(color=OKABE_ITO[1], dash="dash", width=1)))
    fig.update_layout(legend=dict(x=0.75, y=0.05))
    return fig
