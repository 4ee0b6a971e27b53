"""The explorer mechanism: both render paths, the frame grid, and input validation."""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from posenc.interactive import Control, Explorer, Frame
from posenc.plots import figure_html, use_book_style


def make_explorer() -> Explorer:
    fig = go.Figure(go.Scatter(x=[0], y=[0]))

    def update(scale: int, shape: str) -> Frame:
        x = np.arange(5)
        y = scale * (x if shape == "line" else x**2)
        return Frame(traces={0: {"x": x, "y": y}}, layout={"title.text": f"{shape} x{scale}"})

    return Explorer(fig, update, [Control("scale", [1, 2, 3], live=(1, 10, 1)), Control("shape", ["line", "square"])])


def test_initial_figure_uses_defaults() -> None:
    explorer = make_explorer()
    assert list(explorer.figure.data[0].y) == [0, 1, 2, 3, 4]
    assert explorer.figure.layout.title.text == "line x1"


def test_static_frames_cover_the_grid_in_mixed_radix_order() -> None:
    fig, frames = make_explorer().static_figure()
    assert len(frames) == 6
    # frame index = scale_index * 2 + shape_index
    assert frames[2 * 2 + 1]["traces"]["0"]["y"] == [0, 3, 12, 27, 48]
    assert frames[1 * 2 + 0]["layout"]["title.text"] == "line x2"
    # The controls are HTML beside the figure (static_html), not plotly sliders or menus in it.
    assert not fig.layout.sliders and not fig.layout.updatemenus


def test_static_html_writes_one_html_control_per_control_at_its_default() -> None:
    fig = go.Figure(go.Scatter(x=[0], y=[0]))
    controls = [
        Control("scale", [1, 2, 3], label="scale factor", default=2),
        Control("shape", ["line", "square"]),
        Control("word", [f"option number {i}" for i in range(8)], default="option number 3"),
    ]
    html = Explorer(fig, lambda scale, shape, word: Frame(), controls).static_html()
    rows = re.findall(r'<div class="posenc-control posenc-control-(\w+)" data-control="(\d)"', html)
    assert rows == [("slider", "0"), ("buttons", "1"), ("select", "2")]
    slider = re.search(r'<input type="range"[^>]*>', html)
    assert slider is not None and 'min="0" max="2" step="1" value="1"' in slider.group(0)
    assert 'aria-valuetext="2"' in slider.group(0) and ">scale factor</label>" in html
    assert re.findall(r'aria-pressed="(true|false)">(\w+)</button>', html) == [("true", "line"), ("false", "square")]
    assert '<option value="3" selected>option number 3</option>' in html
    assert html.count('class="posenc-explorer"') == 1  # the print edition counts explorers by it
    payload = json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1))
    assert [c["kind"] for c in payload["controls"]] == ["slider", "buttons", "select"]
    assert payload["controls"][2]["labels"][3] == "option number 3"


def test_control_labels_are_escaped() -> None:
    controls = [Control("choice", ["a<b", "c&d"], label="x < y")]
    html = Explorer(go.Figure(go.Scatter(y=[0])), lambda choice: Frame(), controls).static_html()
    assert ">a&lt;b</button>" in html and ">c&amp;d</button>" in html and ">x &lt; y</span>" in html


def test_static_html_has_no_plotly_js_and_embeds_valid_json() -> None:
    html = make_explorer().static_html()
    assert "cdn" not in html.lower() and "https://" not in html
    spec = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, flags=re.S)
    assert spec is not None
    payload = json.loads(spec.group(1))
    assert [c["size"] for c in payload["controls"]] == [3, 2]
    assert len(payload["frames"]) == 6


def test_live_widget_recomputes_for_values_off_the_grid() -> None:
    explorer = make_explorer()
    box = explorer.widget()
    slider = box.children[0].children[0]
    assert (slider.min, slider.max) == (1, 10)
    slider.value = 7  # not a grid value
    assert list(explorer._figure_widget.data[0].y) == [0, 7, 14, 21, 28]


def test_mimebundle_has_widget_view_and_static_html() -> None:
    bundle = make_explorer()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert 'class="posenc-explorer"' in bundle["text/html"]


def test_figures_render_for_both_worlds() -> None:
    use_book_style()
    assert pio.renderers.default == "plotly_mimetype+posenc_html"
    bundle = pio.renderers._build_mime_bundle(go.Figure(go.Scatter(y=[1, 2])).to_dict())
    assert "application/vnd.plotly.v1+json" in bundle
    assert "<figure" in bundle["text/html"] and "plotly.min.js" not in bundle["text/html"]


def test_figure_html_carries_alt_text_and_caption() -> None:
    fig = go.Figure(layout={"meta": {"alt": "a rising line", "caption": "Figure caption"}})
    html = figure_html(fig)
    assert 'aria-label="a rising line"' in html and "<figcaption>Figure caption</figcaption>" in html


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="bad name", values=[1]), "identifier"),
        (dict(name="n", values=[]), "must not be empty"),
        (dict(name="n", values=[1, 1]), "distinct"),
        (dict(name="n", values=[1, 2], default=3), "default 3"),
        (dict(name="n", values=["a"], live=(0, 1, 1)), "numeric"),
        (dict(name="n", values=[1, 5], live=(2, 4, 1)), "live range"),
    ],
)
def test_control_rejects_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Control(**kwargs)


def test_explorer_rejects_oversized_grid_and_bad_frames() -> None:
    fig = go.Figure(go.Scatter(y=[0]))
    with pytest.raises(ValueError, match="at most"):
        Explorer(fig, lambda a, b: Frame(), [Control("a", list(range(30))), Control("b", list(range(30)))])
    with pytest.raises(TypeError, match="Frame"):
        Explorer(fig, lambda a: {"y": [1]}, [Control("a", [1])])
    with pytest.raises(IndexError, match="trace 3"):
        Explorer(fig, lambda a: Frame(traces={3: {"y": [1]}}), [Control("a", [1])])
