"""Figures of the real-text arm: bits per byte against the length a model reads, and along its window.

Both explorers read groups of text cells (:func:`posenc.suite.choose_learning_rates` on a text
grid), each group a set of lines the reader switches between ("800 steps", "RoPE with each
scaling", ...). A cell gives one line per way it was read (:func:`posenc.suite.suite_variants`:
a learned table once per workaround, RoPE once plainly and once per scaling), each the mean over
the seeds of the cell's chosen learning rate, read exactly as scored
(:func:`posenc.suite.bpb_mean`, :func:`posenc.suite.profile_mean`): a reading that was not made
is a gap, never another model's value. Lower is better on every axis.

* :func:`bpb_length_explorer`: bits per byte against the length read (Press et al. 2022, Fig. 1),
  with non-overlapping windows, sliding windows, or the new positions only.
* :func:`bpb_profile_explorer`: the loss along one window of 2x or 4x the training length,
  by stretch of offsets: where past the training length each scheme starts to lose.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from posenc.checks import check_int_sequence, check_mapping, check_text
from posenc.interactive import Control, Explorer, Frame
from posenc.perplexity import READINGS
from posenc.plots import new_figure
from posenc.rope_scaling import METHODS
from posenc.rope_scaling_plots import method_colour
from posenc.suite import SuiteCell, _check_cells, bpb_mean, profile_mean, suite_variants
from posenc.suite_plots import VARIANT_DASHES, cell_styles

__all__ = ["TextLine", "text_lines", "bpb_length_explorer", "bpb_profile_explorer"]

#: How the explorers name the readings of :data:`posenc.perplexity.READINGS`.
READING_NAMES: dict[str, str] = {"bpb": "every position", "bpb_slide": "sliding windows", "bpb_new": "new positions only"}


@dataclass(frozen=True)
class TextLine:
    """One line of a text figure: a cell read one way.

    Attributes:
        name: the legend entry (``"rope + YaRN"``, ``"learned (normal) + clip"``).
        cell: the grid cell.
        strategy: the workaround or scaling it is read with past the training length (``None``: as trained).
        colour, dash, symbol: its style.
    """

    name: str
    cell: SuiteCell
    strategy: str | None
    colour: str
    dash: str
    symbol: str


def text_lines(cells: Mapping[tuple[str, str], SuiteCell]) -> list[TextLine]:
    """Every line of a group of cells, in order: each cell's ways of being read.

    A cell keeps its scheme's style (:func:`posenc.suite_plots.cell_styles`); a RoPE scaling takes its
    method's colour (:func:`posenc.rope_scaling_plots.method_colour`) and a table's second and later
    workarounds another dash, so every line stays apart in grey.
    """
    _check_cells("cells", cells)
    styles = cell_styles(cells.values())
    lines = []
    for cell in cells.values():
        colour, dash, symbol = styles[cell.label]
        for index, (name, strategy) in enumerate(suite_variants(cell).items()):
            if strategy in METHODS:  # a RoPE scaling: its method's colour, the book's dash for it
                lines.append(TextLine(name, cell, strategy, method_colour(strategy),
                                      VARIANT_DASHES[(index - 1) % len(VARIANT_DASHES)], "diamond-open"))
            elif index:
                lines.append(TextLine(name, cell, strategy, colour, VARIANT_DASHES[(index - 1) % len(VARIANT_DASHES)],
                                      symbol if symbol.endswith("-open") else f"{symbol}-open"))
            else:
                lines.append(TextLine(name, cell, strategy, colour, dash, symbol))
    return lines


def _train_len(groups: Mapping[str, Mapping[tuple[str, str], SuiteCell]]) -> int:
    lengths = {int(run.config["seq_len"]) for cells in groups.values() for cell in cells.values() for run in cell.runs}
    if len(lengths) != 1:
        raise ValueError(f"groups must hold runs of one training length, got {sorted(lengths)}")
    return lengths.pop()


def _check_groups(groups: object) -> dict[str, list[TextLine]]:
    groups = check_mapping("groups", groups, min_len=1, what="a dict of group name -> cells (choose_learning_rates)")
    lines = {}
    for name, cells in groups.items():
        check_text("groups' name", name, empty=False)
        _check_cells(f"groups[{name!r}]", cells)
        lines[name] = text_lines(cells)
    return lines


def _line_traces(lines: Sequence[TextLine], n_traces: int, xs: Sequence[float], ys: list[list[float | None]]
                 ) -> dict[int, dict[str, object]]:
    traces: dict[int, dict[str, object]] = {}
    for index in range(n_traces):
        if index < len(lines):
            line = lines[index]
            traces[index] = {"visible": True, "x": list(xs), "y": ys[index], "name": line.name,
                             "line.color": line.colour, "line.dash": line.dash, "marker.symbol": line.symbol,
                             "marker.color": line.colour}
        else:
            traces[index] = {"visible": False, "x": [], "y": [], "name": "", "line.color": "#000000",
                             "line.dash": "solid", "marker.symbol": "circle", "marker.color": "#000000"}
    return traces


def _y_range(ys: list[list[float | None]]) -> list[float]:
    values = [y for series in ys for y in series if y is not None]
    if not values:
        return [0.0, 8.0]
    low, high = min(values), max(values)
    pad = max(0.05, 0.06 * (high - low))
    return [low - pad, high + pad]


def _figure_with_training_line(n_traces: int, train_len: int, *, markers: bool, log_x: bool, title: str,
                               x_title: str, y_title: str, alt: str) -> go.Figure:
    """An empty figure of ``n_traces`` lines (filled by the frames) with a dashed line at the
    training length, labelled to its right so the label never covers the y axis' ticks."""
    fig = new_figure(title=title, x_title=x_title, y_title=y_title, alt=alt, height=460)
    for _ in range(n_traces):
        fig.add_scatter(x=[], y=[], mode="lines+markers" if markers else "lines", line=dict(width=2),
                        **({"marker": dict(size=8)} if markers else {}))
    fig.add_vline(x=train_len, line_dash="dash", line_color="#555")
    # plotly.js places an annotation on a log axis at 10 ** x: give it the exponent, or it leaves the plot
    fig.add_annotation(x=math.log10(train_len) if log_x else train_len, xref="x", y=1, yref="y domain",
                       xanchor="left", yanchor="top", showarrow=False, text=f"trained on {train_len}")
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def bpb_length_explorer(groups: Mapping[str, Mapping[tuple[str, str], SuiteCell]], *,
                        lengths: Sequence[int]) -> Explorer:
    """Explorer: bits per byte against the length read, one line per way each model was read.

    Args:
        groups: group name -> text cells; the control ``models`` switches between them.
        lengths: the lengths read, the training length first (e.g. ``(512, 1024, 2048)``).

    Returns:
        An Explorer with controls ``models`` and ``windows`` (:data:`READING_NAMES`). With "new
        positions only" the point at the training length is every position (there is no new one).
    """
    lines = _check_groups(groups)
    lengths = check_int_sequence("lengths", lengths, min_len=2)
    train_len = _train_len(groups)
    if lengths[0] != train_len or sorted(set(lengths)) != list(lengths):
        raise ValueError(f"lengths must start at the training length {train_len} and increase, got {list(lengths)}")
    n_traces = max(len(group) for group in lines.values())
    fig = _figure_with_training_line(
        n_traces, train_len, markers=True, log_x=True,
        title="Bits per byte against the length read", x_title="length read (bytes, log scale)",
        y_title="bits per byte on test text (lower is better)",
        alt="Line chart of bits per byte on held-out text against the length each model reads, one line per position "
        "scheme (and per scaling or workaround); a dashed vertical line marks the training length.")
    fig.update_xaxes(tickvals=list(lengths), ticktext=[f"{n:,}" for n in lengths])
    names = list(lines)
    windows = [READING_NAMES[name] for name in READINGS]
    by_window = {READING_NAMES[name]: name for name in READINGS}

    def update(models: str, windows: str) -> Frame:
        reading = by_window[windows]
        group = lines[models]
        ys = [[bpb_mean(line.cell, "bpb" if (reading == "bpb_new" and n == train_len) else reading, n,
                        strategy=line.strategy) for n in lengths] for line in group]
        return Frame(traces=_line_traces(group, n_traces, lengths, ys),
                     layout={"title.text": f"Bits per byte against the length read: {models}, {windows}",
                             "yaxis.range": _y_range(ys)})

    return Explorer(fig, update, [Control("models", names, label="models"),
                                  Control("windows", windows, label="read with")],
                    caption="Mean over seeds at each scheme's chosen learning rate, on the first "
                    "32 KiB of the test documents. Every position: non-overlapping windows of the length read, "
                    "every byte scored. Sliding windows: the windows advance by a quarter of their length and "
                    "score only their last quarter, so every byte has at least three quarters of a window of "
                    "context (read for the models as trained only). New positions only: the bytes at offsets "
                    "past the training length (at the training length itself, every position).")


def bpb_profile_explorer(groups: Mapping[str, Mapping[tuple[str, str], SuiteCell]], *,
                         lengths: Sequence[int], reference: SuiteCell | None = None) -> Explorer:
    """Explorer: bits per byte along one window, by stretch of offsets, one line per way each model was read.

    Every model reads the same windows, so a stretch of hard text is hard for all of them; with a
    ``reference`` (a model that holds past the training length, read plainly) the control ``scale``
    also shows each line minus the reference at the same offsets, which takes the text out.

    Args:
        groups: group name -> text cells; the control ``models`` switches between them.
        lengths: the window lengths to choose from (past the training length, e.g. ``(1024, 2048)``).
        reference: a text cell read plainly at every length of ``lengths``, or ``None``.

    Returns:
        An Explorer with controls ``models``, ``length`` and (with a reference) ``scale``; a dashed
        line marks the training length.
    """
    lines = _check_groups(groups)
    lengths = check_int_sequence("lengths", lengths, min_len=1)
    if reference is not None:
        if not isinstance(reference, SuiteCell):
            raise TypeError(f"reference must be a SuiteCell (choose_learning_rates(...)) or None, got "
                            f"{type(reference).__name__}")
        missing = [n for n in lengths if profile_mean(reference, n) is None]
        if missing:
            raise ValueError(f"reference {reference.label!r} has no plain loss profile at {missing}")
    train_len = _train_len(groups)
    if min(lengths) <= train_len:
        raise ValueError(f"lengths must be past the training length {train_len}, got {list(lengths)}")
    n_traces = max(len(group) for group in lines.values())
    fig = _figure_with_training_line(
        n_traces, train_len, markers=False, log_x=False,
        title="Bits per byte along the window", x_title="offset in the window (bytes)",
        y_title="bits per byte (lower is better)",
        alt="Line chart of the loss at each stretch of offsets of non-overlapping test windows longer than the "
        "training length, one line per position scheme (and per scaling or workaround); a dashed vertical line "
        "marks the training length.")
    names = list(lines)
    scales = ["bits per byte"] + ([f"minus {reference.label}"] if reference is not None else [])

    def update(models: str, length: int, scale: str = scales[0]) -> Frame:
        group = lines[models]
        profiles = [profile_mean(line.cell, length, strategy=line.strategy) for line in group]
        bucket = length / max(len(p) for p in profiles if p is not None) if any(profiles) else 1.0
        width = max((len(p) for p in profiles if p is not None), default=0)
        xs = [(k + 0.5) * bucket for k in range(width)]
        ys: list[list[float | None]] = [list(p) if p is not None else [None] * width for p in profiles]
        title = f"Bits per byte along a window of {length:,} bytes: {models}"
        y_title = "bits per byte (lower is better)"
        if scale != scales[0] and reference is not None:
            base = profile_mean(reference, length)
            assert base is not None  # checked above
            ys = [[None if y is None else y - b for y, b in zip(series, base, strict=False)] for series in ys]
            title += f", minus {reference.label}"
            y_title = f"bits per byte minus {reference.label}'s (lower is better)"
        return Frame(traces=_line_traces(group, n_traces, xs, ys),
                     layout={"title.text": title, "xaxis.range": [0, length], "yaxis.range": _y_range(ys),
                             "yaxis.title.text": y_title})

    controls = [Control("models", names, label="models"),
                Control("length", list(lengths), default=max(lengths), label="window (bytes)")]
    if reference is not None:
        controls.append(Control("scale", scales, label="show"))
    return Explorer(fig, update, controls,
                    caption="Mean over seeds at each scheme's chosen learning rate of the loss of every byte at "
                    "each stretch of offsets in non-overlapping windows of the test text. Left of the dashed "
                    "line the model reads positions it was trained on; right of it, new ones. Every model reads "
                    "the same windows, so a stretch of hard text shows in every line"
                    + (f"; 'minus {reference.label}' subtracts {reference.label}'s loss at the same offsets, which "
                       "takes the text out." if reference is not None else "."))
