"""Explorers on paper (posenc.paper) and grey-safe figures (posenc.palette, posenc.plots).

* an explorer prints 4 to 6 settings: the ones its builder chose (checked against its grid) or
  the default rule's; each panel is the figure with that setting's frame, computed by the same
  ``update`` as the static page's frames;
* the small multiples are one SVG, its text kept as text, one labelled panel per setting, and
  lines that differ in line style, not only colour;
* the diverging scale's lightness rises with the value (+1 and -1 print as different greys; the
  old red-white-blue scale fails the same check), and scatter traces cycle line styles and markers.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from posenc import paper
from posenc.interactive import Control, Explorer, Frame
from posenc.palette import DASHES, DIVERGING_STOPS, SYMBOLS, lightness
from posenc.plots import DIVERGING, figure_html, figure_title, heatmap, new_figure, use_book_style


def line_explorer(values: tuple[int, ...] = (1, 2, 3), shapes: tuple[str, ...] = ("line", "square"),
                  **options: Any) -> Explorer:
    fig = new_figure(title="Powers", x_title="x", y_title="y", alt="Two lines.")
    fig.add_scatter(x=[0], y=[0], mode="lines", name="first")
    fig.add_scatter(x=[0], y=[0], mode="lines", name="second")

    def update(scale: int, shape: str) -> Frame:
        x = np.arange(5)
        y = scale * (x if shape == "line" else x**2)
        return Frame(traces={0: {"x": x, "y": y}, 1: {"x": x, "y": -y}}, layout={"title.text": f"{shape} x{scale}"})

    return Explorer(fig, update, [Control("scale", list(values)), Control("shape", list(shapes))], **options)


def heatmap_explorer() -> Explorer:
    fig = heatmap([[0.0]], title="", x_title="column", y_title="row", alt="A signed heatmap.",
                  colorbar_title="value", zmin=-1.0, zmax=1.0)

    def update(sign: int) -> Frame:
        return Frame(traces={0: {"z": sign * np.array([[1.0, -1.0], [0.5, 0.0]])}})

    return Explorer(fig, update, [Control("sign", [1, -1, 2, 3])], title="Signs")


# -- which settings print ------------------------------------------------------------------------
def test_small_grids_print_every_setting() -> None:
    explorer = line_explorer()
    assert len(explorer.print_settings) == 6
    assert explorer.print_settings[0] == {"scale": 1, "shape": "line"}


def test_the_default_rule_spreads_the_first_control_then_the_next() -> None:
    explorer = line_explorer(values=tuple(range(1, 11)))
    settings = explorer.print_settings
    assert len(settings) == 6
    assert settings[0] == {"scale": 1, "shape": "line"}  # the default setting first, grid order
    assert {s["scale"] for s in settings} >= {1, 10}  # spread to the grid's end
    assert sum(s["shape"] == "square" for s in settings) == 0  # the first control took every place


def test_chosen_settings_are_completed_and_checked() -> None:
    explorer = line_explorer(print_settings=[{"scale": s} for s in (1, 2, 3)] + [{"shape": "square"}])
    assert explorer.print_settings[-1] == {"scale": 1, "shape": "square"}
    with pytest.raises(ValueError, match="not one of the grid values"):
        line_explorer(print_settings=[{"scale": s} for s in (1, 2, 3, 7)])
    with pytest.raises(ValueError, match="names no control"):
        line_explorer(print_settings=[{"size": 1}] * 4)
    with pytest.raises(ValueError, match="distinct"):
        line_explorer(print_settings=[{"scale": 1}] * 4)
    with pytest.raises(ValueError, match="prints 4 to 6"):
        line_explorer(print_settings=[{"scale": 1}, {"scale": 2}])


def test_panels_are_the_explorers_own_frames() -> None:
    """Each panel is the figure with the frame the static page precomputes for that setting."""
    explorer = line_explorer()
    _, frames = explorer.static_figure()
    names = [c.name for c in explorer.controls]
    grid = [dict(zip(names, combo, strict=True)) for combo in
            [(s, shape) for s in (1, 2, 3) for shape in ("line", "square")]]
    for panel, setting in zip(explorer.print_panels(), explorer.print_settings, strict=True):
        static = frames[grid.index(setting)]
        assert list(panel.figure.data[1].y) == static["traces"]["1"]["y"]
        assert panel.figure.layout.title.text == static["layout"]["title.text"]


# -- the drawing -----------------------------------------------------------------------------------
def test_small_multiples_are_one_svg_with_a_labelled_panel_per_setting() -> None:
    explorer = line_explorer()
    html = explorer.print_html("posenc-explorer-test")
    assert html.startswith('<figure class="posenc-print-figure" id="posenc-explorer-test-print"')
    assert 'data-panels="6"' in html and 'data-title="Powers"' in html
    assert html.count("<svg") == 1 and "<?xml" not in html
    text = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", html))  # text stays text (svg.fonttype none)
    for letter in "abcdef":
        assert f"({letter})" in text
    assert "scale" in text and "x" in text
    # Every id is the figure's own, so many figures can share the printed document.
    ids = re.findall(r'id="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "an id appears twice in one printed figure"


def test_static_html_carries_the_print_figure() -> None:
    html = line_explorer().static_html()
    assert html.count('class="posenc-print-figure"') == 1
    assert html.index("posenc-print-figure") > html.index("plotly-graph-div")


def test_series_differ_by_line_style_not_only_colour() -> None:
    figure = paper.small_multiples(line_explorer().print_panels()[:1])
    lines = [line for ax in figure.axes for line in ax.get_lines() if len(line.get_xdata()) > 1]
    assert len(lines) == 2
    assert lines[0].get_linestyle() != lines[1].get_linestyle(), "two series drawn in the same line style"


def test_heatmap_panels_keep_the_diverging_scale() -> None:
    figure = paper.small_multiples(heatmap_explorer().print_panels())
    images = [image for ax in figure.axes for image in ax.get_images()]
    assert len(images) == 4
    colours = images[0].cmap([0.0, 1.0])
    greys = [lightness("#" + "".join(f"{round(255 * c):02X}" for c in rgba[:3])) for rgba in colours]
    assert greys[1] - greys[0] > 40, f"-1 and +1 print as greys of lightness {greys}"


# -- grey-safe style -------------------------------------------------------------------------------
def sign_gap(stops: list[tuple[float, str]]) -> float:
    """How much lighter +1 prints than -1 (CIELAB L*), and 0 if the lightness does not rise with the value."""
    levels = [lightness(colour) for _, colour in stops]
    rising = all(b > a for a, b in zip(levels, levels[1:], strict=False))
    return levels[-1] - levels[0] if rising else 0.0


def test_the_diverging_scale_keeps_its_sign_in_grey() -> None:
    assert sign_gap(list(DIVERGING_STOPS)) > 50
    assert DIVERGING == [[v, c] for v, c in DIVERGING_STOPS]
    # The check can fail: red-white-blue's ends are equally dark, and its lightness falls then rises.
    red_white_blue = [(0.0, "#053061"), (0.5, "#F7F7F7"), (1.0, "#67001F")]
    assert sign_gap(red_white_blue) == 0.0


def test_lightness_of_known_colours() -> None:
    assert lightness("#000000") == pytest.approx(0.0, abs=0.01)
    assert lightness("#FFFFFF") == pytest.approx(100.0, abs=0.01)
    assert lightness("#777777") == pytest.approx(50.0, abs=0.5)
    with pytest.raises(ValueError):
        lightness("grey")


def test_scatter_traces_cycle_line_styles_and_markers() -> None:
    use_book_style()
    cycle = pio.templates["posenc"].data.scatter
    assert [t.line.dash for t in cycle[: len(DASHES)]] == list(DASHES)
    assert [t.marker.symbol for t in cycle[: len(SYMBOLS)]] == list(SYMBOLS)
    # Six series in a row get six line styles (figure 6.2's six solid lines were one grey in print).
    assert len({cycle[i % len(cycle)].line.dash for i in range(6)}) == 6


def test_figure_title_prefers_the_title_then_subplot_titles_then_alt() -> None:
    titled = new_figure(title="Wavelength of each pair<br><sup>note</sup>", x_title="x", y_title="y",
                        alt="Line chart. More.")
    assert figure_title(titled) == "Wavelength of each pair"
    from plotly.subplots import make_subplots

    panels = make_subplots(rows=1, cols=2, subplot_titles=("left", "right"))
    assert figure_title(panels) == "left · right"
    untitled = go.Figure().update_layout(meta={"alt": "Line chart for positions 0 to 63: more. Even more."})
    assert figure_title(untitled) == "Line chart for positions 0 to 63"
    assert 'data-title="Wavelength of each pair"' in figure_html(titled)


# -- what the printed figure reads ---------------------------------------------------------------
def test_numbers_in_the_printed_text_are_kept_as_drawn() -> None:
    """The SVG's coordinates are rounded to a tenth of a point; its text (titles, tick labels) is not:
    "mean accuracy 0.402" must not print as "0.4"."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1))
    axes = figure.add_axes((0.2, 0.3, 0.7, 0.5))
    axes.set_title("mean accuracy 0.402")
    axes.set_yticks([0.25, 0.75])
    text = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", paper.to_svg(figure, salt="t")))
    assert "0.402" in text and "0.75" in text and "0.25" in text
    assert re.search(r'd="M [\d.]+ [\d.]+', paper.to_svg(figure, salt="t"))
    assert not re.search(r'\d+\.\d{2,}', " ".join(re.findall(r'd="([^"]*)"', paper.to_svg(figure, salt="t"))))


def test_titles_wrap_to_the_width_they_are_given() -> None:
    title = "d_model = 16, 128 positions (drawn 64×16) and more words than fit"
    width = 140.0
    wrapped = paper.wrap_to_width(title, width, 6.5)
    assert wrapped.replace("\n", " ") == title
    assert all(paper._text_width(line, 6.5) <= width for line in wrapped.split("\n"))
    # The check can fail: cut at a count of characters, the same title has a line too wide.
    import textwrap

    assert any(paper._text_width(line, 6.5) > width for line in textwrap.wrap(title, 42))


def test_panel_titles_and_labels_stay_inside_their_panel() -> None:
    """Drawn with long frame titles and a long axis title, no text reaches past its panel's edge."""
    fig = new_figure(title="", x_title="a long axis title that would run past a narrow panel's edge", y_title="y",
                     alt="Lines.")
    fig.add_scatter(x=[0], y=[0], mode="lines", name="first")

    def update(step: int) -> Frame:
        return Frame(traces={0: {"x": [0, 1, 2], "y": [0, step, 0]}},
                     layout={"title.text": f"step {step}: a frame title with (drawn 64×64) wide words in it"})

    explorer = Explorer(fig, update, [Control("step", [1, 2, 3, 4, 5, 6])], title="Steps")
    figure = paper.small_multiples(explorer.print_panels())
    assert text_outside_panels(figure) == []
    # The check can fail: the same title, unwrapped, reaches into the next panel.
    first = figure.subfigs[0]
    first._suptitle.set_text(first._suptitle.get_text().replace("\n", " ") + " and then some more words")
    assert text_outside_panels(figure)


def title_problems(titles: list[str], labels: list[str]) -> list[str]:
    """Panel titles of unequal height (the panels' axes would not start level), or a label's
    "name value" piece split over two lines ("(c) d_model 128 · sequence length" and then "128")."""
    problems = [f"title heights {[t.count(chr(10)) for t in titles]}"] if len({t.count("\n") for t in titles}) > 1 else []
    for title, label in zip(titles, labels, strict=True):
        lines = title.split("\n")
        problems += [f"{piece!r} split in {title!r}" for piece in label.split(" · ")
                     if not any(piece in line for line in lines)]
    return problems


def test_panel_titles_are_level_and_keep_a_setting_on_one_line() -> None:
    fig = new_figure(title="", x_title="x", y_title="y", alt="Lines.")
    fig.add_scatter(x=[0], y=[0], mode="lines", name="first")

    def update(d_model: int, sequence_length: int) -> Frame:
        note = "" if d_model < 512 else ", and a longer note that needs a line more"
        return Frame(traces={0: {"x": [0, 1], "y": [0, d_model]}},
                     layout={"title.text": f"d_model = {d_model}, {sequence_length} positions (drawn 64×64){note}"})

    # Six panels, three a row, each too narrow for its whole label on one line.
    explorer = Explorer(fig, update, [Control("d_model", [16, 128, 512], label="d_model"),
                                      Control("sequence_length", [32, 128], label="the sequence length")],
                        title="Tables")
    panels = explorer.print_panels()
    figure = paper.small_multiples(panels)
    titles = [panel._suptitle.get_text() for panel in figure.subfigs]
    labels = [panel.label for panel in panels]
    assert title_problems(titles, labels) == [], titles
    # The check can fail: uneven heights, and a setting wrapped over two lines.
    assert title_problems(["(a) one", "(b) two\nlines"], ["(a) one", "(b) two"])
    label = "(c) d_model 128 · sequence length 128"
    assert title_problems([paper.wrap_to_width(label, 120, 6.5)], [label])


def text_outside_panels(figure: Any) -> list[str]:
    """Texts of each panel (a subfigure of the figure's grid) whose box leaves the panel's box (1 pt slack)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    problems = []
    for panel in figure.subfigs:
        box = panel.bbox
        texts = [panel._suptitle] if panel._suptitle is not None else []
        for ax in panel.get_axes():
            texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
            # Only the tick labels drawn: those inside the view.
            x_low, x_high = sorted(ax.get_xlim())
            y_low, y_high = sorted(ax.get_ylim())
            texts += [label for label in ax.get_xticklabels() if x_low <= label.get_position()[0] <= x_high]
            texts += [label for label in ax.get_yticklabels() if y_low <= label.get_position()[1] <= y_high]
        for text in texts:
            if not text.get_visible() or not str(text.get_text()).strip():
                continue
            extent = text.get_window_extent(renderer)
            if extent.x0 < box.x0 - 1 or extent.x1 > box.x1 + 1:
                problems.append(str(text.get_text())[:50])
    return problems


def test_heatmap_cells_at_numbers_keep_their_coordinates() -> None:
    """Cells at evenly spaced numbers (block centres 0.5, 2.5, ...) are drawn at those numbers, so the axis
    gets round ticks and a line the figure draws at y = 3.5 lands between the right rows; words are cells 0..n-1."""
    fig = heatmap([[0.0]], title="", x_title="column", y_title="row", alt="A heatmap.",
                  colorbar_title="value", zmin=-1.0, zmax=1.0)
    fig.add_hline(y=3.5, line_dash="dash")

    def update(shift: int) -> Frame:
        return Frame(traces={0: {"z": np.full((4, 3), float(shift)), "x": ["a", "b", "c"],
                                 "y": [0.5 + 2 * row for row in range(4)]}})

    explorer = Explorer(fig, update, [Control("shift", [-1, 0, 1, 2])], title="Blocks")
    figure = paper.small_multiples(explorer.print_panels())
    image = next(image for ax in figure.axes for image in ax.get_images())
    left, right, bottom, top = image.get_extent()
    assert (left, right) == (-0.5, 2.5) and sorted((bottom, top)) == [-0.5, 7.5]
    assert [label.get_text() for label in image.axes.get_xticklabels()] == ["a", "b", "c"]
    line = next(line for line in image.axes.get_lines())
    assert list(line.get_ydata()) == [3.5, 3.5]


def test_a_figures_own_ticks_are_printed_also_on_a_log_axis() -> None:
    """512, 1,024 and 2,048 on a log axis print as the figure writes them, not as matplotlib's 6×10²."""
    fig = go.Figure(go.Scatter(x=[512, 1024, 2048], y=[2.5, 2.6, 3.0]))
    fig.update_xaxes(type="log", tickvals=[512, 1024, 2048], ticktext=["512", "1,024", "2,048"])
    fig.update_yaxes(tickvals=[2.5, 3.0])  # without ticktext: the values themselves
    figure = paper.small_multiples([paper.Panel("(a) lengths", fig)])
    ax = next(ax for ax in figure.axes if ax.get_lines())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["512", "1,024", "2,048"]
    assert list(ax.get_xticks()) == [512, 1024, 2048] and ax.get_xscale() == "log"
    assert not ax.xaxis.get_minorticklocs().size
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2.5", "3"]
