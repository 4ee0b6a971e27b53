"""Explorers on paper: a plotly figure at a few settings, drawn as matplotlib small multiples.

Paper has no sliders. An explorer (:class:`posenc.interactive.Explorer`) prints as 4 to 6 of its
settings side by side; each panel is the explorer's figure with that setting's frame applied, the
frame computed by the same ``update`` function that drives the widget and the static controls.
This module is only the second renderer: it reads a plotly figure (traces, axes, subplots, shapes,
titles) and draws the same data with matplotlib, grey-safe:

* every line gets a line style and every series of markers a marker shape (the figure's own,
  else the next of :data:`posenc.palette.DASHES` and :data:`posenc.palette.SYMBOLS`, as on the site);
* heatmaps keep the figure's colour scale; the book's diverging scale
  (:data:`posenc.plots.DIVERGING`) gets lighter with the value, so its sign survives grey.

The result is vector SVG (heatmaps as small embedded images at their own resolution, text as
text), compact enough to sit, hidden, in the site's page (``@media print`` shows it).

matplotlib is imported when a figure is drawn, not when this module is imported: a kernel that
never prints pays nothing, and nothing here touches pyplot or matplotlib's global settings
(``rc_context`` only while drawing).
"""

from __future__ import annotations

import functools
import html
import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.colors as plotly_colors
import plotly.graph_objects as go

from posenc.checks import check_instance, check_int, check_positive_float, check_text
from posenc.palette import DASHES, OKABE_ITO, SYMBOLS
from posenc.plots import plain_text

__all__ = ["Panel", "PRINT_WIDTH_IN", "MIN_PANELS", "MAX_PANELS", "small_multiples", "to_svg", "panel_letter", "wrap_to_width"]

#: Width of the printed figure: the A4 text column of ``make pdf`` (178 mm), a little less.
PRINT_WIDTH_IN = 6.8
#: How many settings an explorer prints (fewer only if its grid has fewer).
MIN_PANELS, MAX_PANELS = 4, 6
#: Height of the printed figure at most, so that it fits one page with its caption.
MAX_HEIGHT_IN = 8.6
#: Font sizes (pt) of the printed figure; the book's body text is 9.5 pt.
_RC = {
    "font.size": 6.5,
    "axes.titlesize": 6.5,
    "axes.labelsize": 6.5,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "legend.fontsize": 6.5,
    "figure.titlesize": 7,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.5,
    "ytick.major.width": 0.5,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "lines.linewidth": 1.1,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # ships with matplotlib: the layout is measured with it
    "svg.fonttype": "none",  # text stays text: searchable in the PDF, and a small file
    "svg.image_inline": True,
    "image.interpolation": "none",  # heatmaps embed their own cells, not a resampled picture
}
#: Sizes (pt) of titles and labels, and of tick labels (as in ``_RC``), for measuring text.
_LABEL_PT, _TICK_PT = 6.5, 6.0
#: Text drawn (hinted by Agg, laid out by a browser) comes out up to ~6 % wider than the font's advance
#: widths say: lines are wrapped with that margin.
_WIDTH_MARGIN = 1.07
#: Width of the strip of shared colour bars, as a share of the panels' width.
_STRIP = 0.11
#: plotly's line styles as matplotlib dash patterns (in line widths).
_DASH_PATTERNS: dict[str, Any] = {
    "solid": "-",
    "dash": (0, (4.0, 2.0)),
    "dot": (0, (1.0, 1.6)),
    "dashdot": (0, (4.0, 1.6, 1.0, 1.6)),
    "longdash": (0, (7.0, 2.0)),
    "longdashdot": (0, (7.0, 1.6, 1.0, 1.6)),
}
#: plotly's marker symbols as matplotlib markers; ``-open`` symbols are drawn hollow.
_MARKERS = {
    "circle": "o", "square": "s", "diamond": "D", "triangle-up": "^", "triangle-down": "v", "x": "x",
    "star": "*", "cross": "P", "pentagon": "p", "triangle-left": "<", "triangle-right": ">", "hexagon": "h",
}


@dataclass(frozen=True)
class Panel:
    """One setting of an explorer, ready to draw.

    Attributes:
        label: what the setting is, e.g. ``"d_model 16 · sequence length 32"``.
        figure: the explorer's figure with that setting's frame applied.
    """

    label: str
    figure: go.Figure

    def __post_init__(self) -> None:
        check_text("label", self.label)
        check_instance("figure", self.figure, go.Figure, what="a plotly Figure")


def panel_letter(index: int) -> str:
    """``0 -> "(a)"``, ``1 -> "(b)"``, ...: the letters the printed panels are named by."""
    index = check_int("index", index, low=0, high=25)
    return f"({chr(ord('a') + index)})"


# -- reading a plotly figure -----------------------------------------------------------------
def _values(value: Any) -> list[Any]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    return list(value)


def _floats(value: Any) -> np.ndarray:
    """Numbers (``None`` -> NaN) as a float array of any shape."""
    array = np.asarray(value if value is not None else [], dtype=object)
    return np.where(array == None, np.nan, array).astype(float)  # noqa: E711 (element-wise)


def _colour(value: Any, default: str = "#444444") -> Any:
    """A plotly colour (``#hex``, ``rgb(...)``, ``rgba(...)``, a name) as something matplotlib reads."""
    if value is None:
        return default
    text = str(value).strip().replace(" ", "")
    match = re.fullmatch(r"rgba?\(([\d.]+),([\d.]+),([\d.]+)(?:,([\d.]+))?\)", text)
    if match:
        red, green, blue = (float(match.group(i)) / 255 for i in (1, 2, 3))
        return (red, green, blue, float(match.group(4)) if match.group(4) else 1.0)
    return text


def _colourmap(scale: Any) -> Any:
    """A plotly colour scale (a name such as ``"Cividis"``, or ``[[0, colour], ..., [1, colour]]``)
    as a matplotlib colour map."""
    from matplotlib.colors import LinearSegmentedColormap

    stops = plotly_colors.get_colorscale(scale) if isinstance(scale, str) else [list(stop) for stop in scale]
    return LinearSegmentedColormap.from_list("plotly", [(float(v), _colour(c)) for v, c in stops])


def _axis_names(trace: Any) -> tuple[str, str]:
    return str(getattr(trace, "xaxis", None) or "x"), str(getattr(trace, "yaxis", None) or "y")


def _layout_axis(fig: go.Figure, name: str) -> Any:
    """``"x2"`` -> ``fig.layout.xaxis2``."""
    return fig.layout[f"{name[0]}axis{name[1:]}"]


def _domain(axis: Any) -> tuple[float, float]:
    low, high = axis.domain if axis.domain else (0.0, 1.0)
    return float(low), float(high)


@dataclass(frozen=True)
class _Grid:
    """Where the subplots of a plotly figure sit: axis pair -> (row, column), and the sizes."""

    cells: dict[tuple[str, str], tuple[int, int]]
    width_ratios: list[float]
    height_ratios: list[float]


def _grid(fig: go.Figure) -> _Grid:
    pairs = list(dict.fromkeys(_axis_names(trace) for trace in fig.data)) or [("x", "y")]
    x_domains = sorted({_domain(_layout_axis(fig, x)) for x, _ in pairs})
    y_domains = sorted({_domain(_layout_axis(fig, y)) for _, y in pairs}, reverse=True)  # top row first
    cells = {(x, y): (y_domains.index(_domain(_layout_axis(fig, y))), x_domains.index(_domain(_layout_axis(fig, x))))
             for x, y in pairs}
    return _Grid(cells, [max(b - a, 0.05) for a, b in x_domains], [max(b - a, 0.05) for a, b in y_domains])


# -- drawing one trace ---------------------------------------------------------------------------
@dataclass
class _Style:
    """What the series of one figure take when they do not choose: the next colour, line style, marker."""

    scatter_count: int = 0
    colour_count: int = 0

    def next_colour(self) -> str:
        colour = OKABE_ITO[self.colour_count % len(OKABE_ITO)]
        self.colour_count += 1
        return colour


def _heatmap(ax: Any, trace: Any, reversed_y: bool, room: tuple[float, float]) -> Any:
    """Draw a heatmap trace; ``room`` is the axes' (width, height) in points, for its tick labels.

    Cells at evenly spaced numbers (positions 0, 1, 2, ... or block centres 0.5, 2.5, ...) are
    drawn at those numbers, so the axis gets round ticks and the figure's shapes and markers,
    which plotly places in data coordinates, land where they do on the site; other cells (words)
    are drawn at 0 .. n-1 and labelled with their text.
    """
    z = _floats(trace.z)
    if z.ndim != 2 or z.size == 0:
        return None
    finite = z[np.isfinite(z)]
    low = trace.zmin if trace.zmin is not None else (float(finite.min()) if finite.size else 0.0)
    high = trace.zmax if trace.zmax is not None else (float(finite.max()) if finite.size else 1.0)
    if trace.zmid is not None and (trace.zmin is None or trace.zmax is None) and finite.size:
        half = float(np.abs(finite - trace.zmid).max()) or 1.0
        low, high = trace.zmid - half, trace.zmid + half
    rows, cols = z.shape
    xs, ys = _values(trace.x), _values(trace.y)
    x_low, x_high = _cell_edges(xs, cols) or (-0.5, cols - 0.5)
    y_low, y_high = _cell_edges(ys, rows) or (-0.5, rows - 0.5)
    image = ax.imshow(z, cmap=_colourmap(trace.colorscale or "Cividis"), vmin=low, vmax=high, aspect="auto",
                      origin="upper" if reversed_y else "lower",
                      extent=(x_low, x_high, y_high, y_low) if reversed_y else (x_low, x_high, y_low, y_high))
    width, height = room
    if _cell_edges(xs, cols) is None:
        widest = max((_text_width(_tick_text(label), _TICK_PT) for label in xs), default=0.0)
        _index_ticks(ax.xaxis, xs, cols, most=max(2, min(6, int(width // (widest + 6)))))
    if _cell_edges(ys, rows) is None:
        _index_ticks(ax.yaxis, ys, rows, most=max(2, min(12, int(height // (2 * _TICK_PT)))))
    return image


def _cell_edges(values: list[Any], count: int) -> tuple[float, float] | None:
    """(first edge, last edge) of ``count`` cells centred at evenly spaced, rising numbers ``values``;
    None for anything else (words, uneven steps, a single cell)."""
    if len(values) != count or count < 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    centres = np.asarray(values, dtype=float)
    steps = np.diff(centres)
    if not np.all(steps > 0) or not np.allclose(steps, steps[0], rtol=1e-6, atol=0.0):
        return None
    return float(centres[0] - steps[0] / 2), float(centres[-1] + steps[0] / 2)


def _index_ticks(axis: Any, labels: list[Any], count: int, most: int = 6) -> None:
    """Label a heatmap's cells (drawn at 0 .. count-1) with the figure's x or y values, at most
    ``most`` of them (labels wider than their share of the axis would run into each other)."""
    if not labels or len(labels) != count:
        return
    ticks = np.unique(np.linspace(0, count - 1, min(most, count)).round().astype(int))
    axis.set_ticks(ticks)
    axis.set_ticklabels([_tick_text(labels[t]) for t in ticks])


@functools.lru_cache(maxsize=1)
def _text_to_path() -> Any:
    from matplotlib.textpath import TextToPath

    return TextToPath()


@functools.lru_cache(maxsize=4096)
def _text_width(text: str, size: float) -> float:
    """Width (points) of one line of ``text`` in DejaVu Sans at ``size`` pt, the font the SVG names."""
    from matplotlib.font_manager import FontProperties

    width, _, _ = _text_to_path().get_text_width_height_descent(
        text, FontProperties(family="DejaVu Sans", size=size), ismath=False)
    return float(width)


def wrap_to_width(text: str, width_pt: float, size: float) -> str:
    """``text`` with line breaks between words so that no line is wider than ``width_pt`` at
    ``size`` pt (measured, not counted in characters: "(drawn 64×16)" is wider than "illicit").
    Existing line breaks stay; a single word wider than the room keeps a line of its own."""
    check_text("text", text)
    check_positive_float("width_pt", width_pt)
    check_positive_float("size", size)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        current = ""
        # Split at plain spaces only: a no-break space (see _glued) keeps its words on one line.
        for word in paragraph.split(" "):
            if not word:
                continue
            trial = f"{current} {word}" if current else word
            if current and _WIDTH_MARGIN * _text_width(trial, size) > width_pt:
                lines.append(current)
                current = word
            else:
                current = trial
        lines.append(current)
    return "\n".join(lines)


def _tick_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _scatter(ax: Any, trace: Any, style: _Style, categories: dict[str, int]) -> Any:
    y = _values(trace.y)
    if trace.x is not None:
        x = _values(trace.x)
    else:
        x0 = float(trace.x0) if trace.x0 is not None else 0.0
        dx = float(trace.dx) if trace.dx is not None else 1.0
        x = list(x0 + dx * np.arange(len(y)))
    index = style.scatter_count
    style.scatter_count += 1
    if not y:
        return None
    x_values = _positions(x, categories)
    y_values = _floats(y)
    mode = trace.mode or ("lines+markers" if len(y) < 20 else "lines")
    line, marker = trace.line, trace.marker
    colour = line.color or (marker.color if isinstance(marker.color, str) else None)
    if colour is None and (trace.fill is None or trace.fill == "none"):
        colour = style.next_colour()
    name = plain_text(trace.name) if trace.name else None
    shown_in_legend = trace.showlegend is not False and bool(name)
    if trace.fill == "toself":
        return ax.fill(x_values, y_values, color=_colour(trace.fillcolor, "#dddddd"), linewidth=0,
                       label=name if shown_in_legend else None)[0]
    artist = None
    if "lines" in mode and (line.width is None or line.width > 0):
        dash = line.dash or DASHES[index % len(DASHES)]
        (artist,) = ax.plot(x_values, y_values, color=_colour(colour), linewidth=0.75 * (line.width or 2) * 0.8,
                            linestyle=_DASH_PATTERNS.get(str(dash), "-"), label=name if shown_in_legend else None)
    if "markers" in mode:
        symbol = str(marker.symbol or SYMBOLS[index % len(SYMBOLS)])
        hollow = symbol.endswith("-open")
        shape = _MARKERS.get(symbol.removesuffix("-open"), "o")
        sizes = _floats(marker.size) if isinstance(marker.size, (list, tuple, np.ndarray)) else None
        size = float(marker.size) if marker.size is not None and sizes is None else 6.0
        fill = marker.color if marker.color is not None else colour
        fills = [_colour(c) for c in _values(fill)] if isinstance(fill, (list, tuple, np.ndarray)) else _colour(fill)
        edge = _colour(marker.line.color, "none") if marker.line and marker.line.color is not None else None
        if isinstance(marker.line.color, (list, tuple, np.ndarray)) if marker.line else False:
            edge = [_colour(c) for c in _values(marker.line.color)]
        transparent = isinstance(fills, tuple) and len(fills) == 4 and fills[3] == 0
        face = "none" if hollow or transparent else fills
        unfilled = shape in ("x", "+", "1", "2", "3", "4")  # line-only markers: their colour is the face's
        edges = edge if edge is not None else (fills if hollow or transparent else "none")
        if unfilled:
            face, edges = fills, None
        area = (0.6 * (sizes if sizes is not None else np.full(len(y), size))) ** 2
        drawn = ax.scatter(x_values, y_values, s=area, marker=shape, facecolors=face, edgecolors=edges, linewidths=0.7, zorder=3,
                           label=name if shown_in_legend and artist is None else None)
        artist = artist or drawn
    return artist


def _bars(ax: Any, traces: list[Any], categories: dict[str, int], style: _Style, gap: float) -> list[Any]:
    """Grouped bars: each bar trace of one axes gets its share of each slot (as plotly's
    ``barmode="group"``); a slot is the smallest step between the bars' positions."""
    artists = []
    positions = [np.asarray(_positions(_values(trace.x), categories), dtype=float) for trace in traces]
    steps = np.diff(np.unique(np.concatenate(positions))) if positions else np.array([])
    slot = float(steps.min()) if steps.size else 1.0
    width = slot * (1 - gap) / max(1, len(traces))
    many = sum(len(p) for p in positions) > 40
    for number, (trace, x) in enumerate(zip(traces, positions, strict=True)):
        y = _floats(_values(trace.y))
        if not len(y):
            continue
        colour = trace.marker.color if trace.marker and trace.marker.color is not None else style.next_colour()
        colours = [_colour(c) for c in _values(colour)] if isinstance(colour, (list, tuple, np.ndarray)) \
            else _colour(colour)
        offset = (number - (len(traces) - 1) / 2) * width
        name = plain_text(trace.name) if trace.name else None
        label = name if trace.showlegend is not False and name else None
        if many and not isinstance(colours, list):
            artists.append(_bar_outline(ax, x + offset, y, width, colours, label))
            continue
        # An outline tells neighbouring bars apart in grey; with many thin bars it would be all outline.
        artists.append(ax.bar(x + offset, y, width=width, color=colours, edgecolor="none" if many else "#333333",
                              linewidth=0.3, label=name if trace.showlegend is not False and name else None))
    return artists


def _bar_outline(ax: Any, x: np.ndarray, y: np.ndarray, width: float, colour: Any, label: str | None) -> Any:
    """Many bars of one colour as ONE filled path (one SVG element instead of one per bar)."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    corners = [[(left, 0.0), (left, top), (left + width, top), (left + width, 0.0), (left, 0.0)]
               for left, top in zip(x - width / 2, np.nan_to_num(y), strict=True)]
    codes = [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY] * len(corners)
    patch = PathPatch(Path(np.array(corners).reshape(-1, 2), codes), facecolor=colour, edgecolor="none", label=label)
    ax.add_patch(patch)
    ax.update_datalim(np.array(corners).reshape(-1, 2))
    ax.autoscale_view()
    return patch


def _positions(values: list[Any], categories: dict[str, int]) -> list[float]:
    """Numbers stay numbers; text values (categories) become 0, 1, 2, ... in order of appearance."""
    if values and all(isinstance(v, str) for v in values):
        return [float(categories.setdefault(v, len(categories))) for v in values]
    return [float("nan") if v is None else float(v) for v in values]


# -- one panel: the figure's subplots at one setting -----------------------------------------------
@dataclass
class _Drawn:
    """What drawing one panel produced, for the shared legend and colour bars."""

    legend: dict[str, Any]
    images: list[tuple[int, Any, str]]  # (trace index, image, colour bar title)


def _draw_panel(container: Any, fig: go.Figure, room: tuple[float, float]) -> _Drawn:
    """Draw one setting's figure into ``container`` (a subfigure); ``room`` is the subplots' share
    of the panel, (width, height) in points, which axis titles and tick labels must fit."""
    grid = _grid(fig)
    rows, cols = len(grid.height_ratios), len(grid.width_ratios)
    # Each subplot's (width, height) in points, less what its tick labels and axis titles take.
    rooms = {cell: (room[0] * grid.width_ratios[cell[1]] / sum(grid.width_ratios) - 40,
                    room[1] * grid.height_ratios[cell[0]] / sum(grid.height_ratios) - 22)
             for cell in grid.cells.values()}
    axes = container.subplots(rows, cols, squeeze=False, gridspec_kw={
        "width_ratios": grid.width_ratios, "height_ratios": grid.height_ratios})
    used = set(grid.cells.values())
    for r in range(rows):
        for c in range(cols):
            if (r, c) not in used:
                axes[r][c].set_axis_off()
    style = _Style()
    drawn = _Drawn(legend={}, images=[])
    by_axes: dict[tuple[str, str], list[tuple[int, Any]]] = {}
    for index, trace in enumerate(fig.data):
        if trace.visible is False or trace.visible == "legendonly":
            if trace.type == "scatter":
                style.scatter_count += 1
            continue
        by_axes.setdefault(_axis_names(trace), []).append((index, trace))
    for pair, (r, c) in grid.cells.items():
        ax = axes[r][c]
        x_axis, y_axis = _layout_axis(fig, pair[0]), _layout_axis(fig, pair[1])
        reversed_y = y_axis.autorange == "reversed"
        categories: dict[str, int] = {}
        has_heatmap = False
        bar_traces = []
        for index, trace in by_axes.get(pair, []):
            if trace.type == "heatmap":
                image = _heatmap(ax, trace, reversed_y, rooms[(r, c)])
                has_heatmap = True
                if image is not None and trace.showscale is not False:
                    title = plain_text(trace.colorbar.title.text) if trace.colorbar and trace.colorbar.title and \
                        trace.colorbar.title.text else ""
                    drawn.images.append((index, image, title))
            elif trace.type == "scatter":
                artist = _scatter(ax, trace, style, categories)
                if artist is not None and artist.get_label() and not artist.get_label().startswith("_"):
                    drawn.legend.setdefault(artist.get_label(), artist)
            elif trace.type == "bar":
                bar_traces.append(trace)
        gap = float(fig.layout.bargap) if fig.layout.bargap is not None else 0.2
        for artist in _bars(ax, bar_traces, categories, style, gap):
            label = artist.get_label()
            if label and not label.startswith("_"):
                drawn.legend.setdefault(label, artist)
        _axis_style(ax, x_axis, y_axis, categories, has_heatmap, rooms[(r, c)])
    _subplot_titles(fig, axes, grid, rooms)
    _shapes(fig, axes, grid)
    return drawn


def _axis_style(ax: Any, x_axis: Any, y_axis: Any, categories: dict[str, int], heatmap: bool,
                room: tuple[float, float]) -> None:
    from matplotlib.ticker import NullLocator

    for axis, spec, setter, length in ((ax.xaxis, x_axis, ax.set_xlabel, room[0]),
                                       (ax.yaxis, y_axis, ax.set_ylabel, room[1])):
        if spec.title and spec.title.text:
            # A long axis title under a narrow panel would reach past the figure's edge (or, beside a
            # short one, into the title above): wrap it to the axis' length.
            setter(wrap_to_width(plain_text(spec.title.text).replace("\n", " "), max(length, 40.0), _LABEL_PT))
        log = spec.type == "log"
        if log:
            (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
        if spec.range and not heatmap:
            low, high = spec.range
            if log:
                low, high = 10.0**low, 10.0**high
            (ax.set_xlim if axis is ax.xaxis else ax.set_ylim)(low, high)
        if spec.tickvals is not None and not heatmap:
            # the figure's own ticks (e.g. 512, 1,024, 2,048 on a log axis, not matplotlib's 6x10^2)
            values = list(spec.tickvals)
            labels = list(spec.ticktext) if spec.ticktext is not None else [f"{v:g}" for v in values]
            (ax.set_xticks if axis is ax.xaxis else ax.set_yticks)(values, labels)
            if log:
                axis.set_minor_locator(NullLocator())
    if categories and not heatmap:
        names = list(categories)
        step = max(1, math.ceil(len(names) / 12))
        ax.set_xticks(range(0, len(names), step))
        ax.set_xticklabels(names[::step], rotation=35 if max(map(len, names)) > 4 else 0, ha="right"
                           if max(map(len, names)) > 4 else "center")
    if y_axis.autorange == "reversed" and not heatmap:
        ax.invert_yaxis()
    if y_axis.scaleanchor and not heatmap:
        ax.set_aspect("equal", adjustable="box")
    if not heatmap:
        ax.grid(True, color="#e5e5e5", linewidth=0.4)
        ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _subplot_titles(fig: go.Figure, axes: Any, grid: _Grid, rooms: Mapping[tuple[int, int], tuple[float, float]]) -> None:
    """plotly's subplot titles are paper annotations just above a subplot: titles of matplotlib axes,
    wrapped to the subplot's width (a title wider than its subplot runs into its neighbour)."""
    if len(grid.cells) < 2:
        return
    for annotation in fig.layout.annotations:
        if not annotation.text or annotation.xref != "paper" or annotation.yref != "paper":
            continue
        for (x_name, y_name), (r, c) in grid.cells.items():
            x0, x1 = _domain(_layout_axis(fig, x_name))
            _, y1 = _domain(_layout_axis(fig, y_name))
            if abs(float(annotation.x) - (x0 + x1) / 2) < 0.02 and abs(float(annotation.y) - y1) < 0.02:
                title = plain_text(annotation.text).replace("\n", " ")
                axes[r][c].set_title(wrap_to_width(title, max(rooms[(r, c)][0], 40.0), _LABEL_PT),
                                     fontsize=_LABEL_PT)


def _shapes(fig: go.Figure, axes: Any, grid: _Grid) -> None:
    """Lines across a subplot (``add_hline`` / ``add_vline``): dashed reference lines."""
    for shape in fig.layout.shapes:
        if shape.type != "line":
            continue
        xref, yref = str(shape.xref or "x"), str(shape.yref or "y")
        x_name, y_name = xref.split(" ")[0], yref.split(" ")[0]
        cell = grid.cells.get((x_name, y_name))
        if cell is None:
            continue
        ax = axes[cell[0]][cell[1]]
        options = {"color": _colour(shape.line.color, "#444444"), "linewidth": 0.8,
                   "linestyle": _DASH_PATTERNS.get(str(shape.line.dash or "solid"), "-")}
        if xref.endswith("domain") and shape.y0 == shape.y1:
            ax.axhline(float(shape.y0), **options)
        elif yref.endswith("domain") and shape.x0 == shape.x1:
            ax.axvline(float(shape.x0), **options)
        else:
            ax.plot([shape.x0, shape.x1], [shape.y0, shape.y1], **options)


# -- the whole figure ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    """How the panels sit on the page: a grid of ``columns`` x ``rows`` panels, the figure's height
    (inches), each panel's title (wrapped to its width) and its subplots' room (width, height) in points."""

    columns: int
    rows: int
    height_in: float
    titles: list[str]
    room: tuple[float, float]


def _layout(panels: Sequence[Panel], colour_strip: bool) -> _Layout:
    grid = _grid(panels[0].figure)
    sub_cols, sub_rows = len(grid.width_ratios), len(grid.height_ratios)
    count = len(panels)
    if sub_cols == 1:
        columns = 2 if count in (2, 4) else min(count, 3)
    else:
        columns = max(1, min(count, 4 // sub_cols))
    rows = math.ceil(count / columns)
    width_in = PRINT_WIDTH_IN * (1 / (1 + _STRIP) if colour_strip else 1.0) / columns
    # The title starts 2 % in from the panel's left edge and must end before its right edge.
    titles = [_panel_title(panel, 0.92 * width_in * 72) for panel in panels]
    lines = max(len(title.split("\n")) for title in titles)
    # Every title as tall as the tallest (blank lines under it): the panels' axes start level.
    titles = [title + "\n" * (lines - len(title.split("\n"))) for title in titles]
    title_in = lines * 0.12
    subplots_in = sub_rows * min(PRINT_WIDTH_IN / (columns * sub_cols) * 0.82, 2.3)
    height = min(MAX_HEIGHT_IN, rows * (subplots_in + title_in + 0.35) + 0.45)
    # Under the height cap every panel shrinks by the same share.
    subplots_in = (height - 0.45) / rows - title_in - 0.35
    return _Layout(columns, rows, height, titles, (width_in * 72, subplots_in * 72))


def _panel_title(panel: Panel, width_pt: float) -> str:
    title = plain_text(panel.figure.layout.title.text) if panel.figure.layout.title.text else ""

    def letters(text: str) -> str:
        return re.sub(r"[^a-z0-9]", "", text.lower())

    setting = letters(panel.label.split(" ", 1)[-1])
    # A frame title that only repeats the setting ("Position 40" under "(c) position 40") is left out.
    lines = [panel.label] + [line for line in title.split("\n") if line and letters(line) not in setting]
    # The label's "name value" pieces and short parentheses are not split over two lines (a lone
    # "128" under "(c) d_model 128 · sequence length"), when they fit the width at all.
    label = f"{_NO_BREAK}· ".join(_glued(piece, width_pt) for piece in lines[0].split(" · "))
    rest = [re.sub(r"\([^()]*\)", lambda group: _glued(group.group(0), width_pt), line) for line in lines[1:]]
    return wrap_to_width("\n".join([label, *rest]), width_pt, _LABEL_PT).replace(_NO_BREAK, " ")


#: Joins words that wrap_to_width keeps on one line (it splits at plain spaces only).
_NO_BREAK = "\u00a0"


def _glued(text: str, width_pt: float) -> str:
    """``text`` with no-break spaces, so it is wrapped as one word, if it fits ``width_pt``."""
    return text.replace(" ", _NO_BREAK) if _WIDTH_MARGIN * _text_width(text, _LABEL_PT) <= width_pt else text


def small_multiples(panels: Sequence[Panel]) -> Any:
    """One matplotlib ``Figure``: every panel's figure drawn side by side, each titled by its label
    (then the frame's own title), with one legend and one colour bar per heatmap when the panels
    share them.

    Args:
        panels: the settings to draw, in reading order (at most 26).

    Returns:
        A ``matplotlib.figure.Figure`` (not attached to pyplot), ``PRINT_WIDTH_IN`` wide.
    """
    if isinstance(panels, str | bytes) or not isinstance(panels, Sequence):
        raise TypeError(f"panels must be a list of Panel, got {panels!r}")
    if not panels or len(panels) > 26:
        raise ValueError(f"panels must hold 1 to 26 panels, got {len(panels)}")
    for index, panel in enumerate(panels):
        check_instance(f"panels[{index}]", panel, Panel)
    from cycler import cycler
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    scaled = any(trace.type == "heatmap" and trace.showscale is not False for trace in panels[0].figure.data)
    layout = _layout(panels, colour_strip=scaled)
    columns, rows = layout.columns, layout.rows
    settings: Any = dict(_RC, **{"axes.prop_cycle": cycler(color=list(OKABE_ITO))})
    with rc_context(settings):
        figure = Figure(figsize=(PRINT_WIDTH_IN, layout.height_in), layout="constrained")
        # Shared colour bars get a strip of their own on the right (a colour bar cannot span subfigures).
        main: Any = figure
        side: Any = None
        if scaled:
            strips: Any = figure.subfigures(1, 2, width_ratios=[1, _STRIP], wspace=0)
            main, side = strips
        grid = main.subfigures(rows, columns, squeeze=False, wspace=0.02, hspace=0.02)
        drawn = []
        for number, (panel, title) in enumerate(zip(panels, layout.titles, strict=True)):
            cell = grid[number // columns][number % columns]
            cell.suptitle(title, fontsize=_LABEL_PT, x=0.02, ha="left")
            drawn.append(_draw_panel(cell, panel.figure, layout.room))
        for number in range(len(panels), rows * columns):
            grid[number // columns][number % columns].set_visible(False)
        _colour_bars(side, drawn)
        _shared_legend(figure, drawn)
    return figure


def _colour_bars(side: Any, drawn: list[_Drawn]) -> None:
    """One colour bar per heatmap trace in the strip ``side`` if every panel uses the same scale
    for it, else one beside each panel's heatmap."""
    by_trace: dict[int, list[tuple[Any, str]]] = {}
    for panel in drawn:
        for index, image, title in panel.images:
            by_trace.setdefault(index, []).append((image, title))
    shared = [images for images in by_trace.values()
              if len({(round(float(img.norm.vmin), 6), round(float(img.norm.vmax), 6)) for img, _ in images}) == 1]
    for images in by_trace.values():
        if any(images is s for s in shared):
            continue
        for image, _ in images:
            bar = image.axes.figure.colorbar(image, ax=image.axes, shrink=0.8, aspect=20, pad=0.02)
            bar.ax.tick_params(labelsize=5)
    if side is None:
        return
    if not shared:
        side.set_visible(False)
        return
    holders = side.subplots(len(shared), 1, squeeze=False)
    for images, (holder,) in zip(shared, holders, strict=True):
        image, title = images[0]
        bar = side.colorbar(image, cax=holder)
        bar.set_label(title)


def _shared_legend(figure: Any, drawn: list[_Drawn]) -> None:
    """The panels' series once, under the figure; a panel whose series differ keeps its own legend."""
    labels = [tuple(panel.legend) for panel in drawn]
    if not any(labels):
        return
    if len(set(labels)) == 1:
        handles = list(drawn[0].legend.values())
        figure.legend(handles, list(drawn[0].legend), loc="outside lower center", ncols=min(4, len(handles)),
                      frameon=False)
        return
    for panel in drawn:
        if panel.legend:
            ax = next(iter(panel.legend.values())).axes
            ax.legend(list(panel.legend.values()), list(panel.legend), fontsize=5, frameon=False)


def to_svg(figure: Any, *, salt: str) -> str:
    """The figure as an SVG element to put in a page (no XML prolog; ids made unique by ``salt``,
    so several figures can share one document)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    check_instance("figure", figure, Figure, what="a matplotlib Figure (small_multiples)")
    check_text("salt", salt, empty=False)

    buffer = io.StringIO()
    with rc_context({"svg.hashsalt": salt, "svg.fonttype": "none", "svg.image_inline": True}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    # Chromium smooths a scaled-up image: heatmap cells stay sharp squares on paper.
    text = text.replace("<image ", '<image style="image-rendering:pixelated" ')
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    # Coordinates are in points: a tenth of one (0.035 mm) is as fine as paper shows; six decimals
    # would double the file. Only inside tags (coordinates, paths, styles): the text between tags
    # is what the reader reads ("0.75", "mean accuracy 0.402"), kept as drawn.
    text = re.sub(r"<[^>]*>", lambda tag: re.sub(r"(\d+\.\d)\d+", r"\1", tag.group(0)), text)
    # matplotlib lays out pretty-printed XML and names ten fallback fonts in every text element.
    text = re.sub(r">\s+<", "><", text)
    text = re.sub(r"\s*\n\s*", " ", text)
    text = re.sub(r"font-family: [^;\"]*", "font-family: 'DejaVu Sans', sans-serif", text)
    # Every id is the figure's own: prefix the few that matplotlib names by counters (axes_1, ...).
    return re.sub(r'id="((?:figure|axes|patch|line2d|text|matplotlib\.axis|xtick|ytick|legend|image|'
                  r'PathCollection|QuadMesh|LineCollection|PolyCollection|subfigure|colorbar|BarContainer)[^"]*)"',
                  lambda m: f'id="{salt}-{m.group(1)}"', text)


def alt_text(alt: str, panels: Sequence[Panel]) -> str:
    """The printed figure's accessible description: the explorer's alt text, then each panel's setting."""
    settings = "; ".join(f"{panel_letter(i)} {panel.label}" for i, panel in enumerate(panels))
    return f"{alt} Printed at {len(panels)} settings side by side: {settings}."


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def panel_labels(values: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> list[str]:
    """``[{"d_model": 16, "seq_len": 32}, ...]`` -> ``["(a) d_model 16 · sequence length 32", ...]``: only
    the controls whose value differs between panels are named (the others are the same everywhere)."""
    varying = [name for name in names if len({repr(setting[name]) for setting in values}) > 1] or list(names)[:1]
    return [f"{panel_letter(i)} " + " · ".join(f"{names[n]} {_tick_text(setting[n])}" for n in varying)
            for i, setting in enumerate(values)]
