"""Tests for posenc.results_plots: bar and error-bar figures, and chapter 7's position explorer."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import pytest

from posenc.book import data_path
from posenc.interactive import Explorer
from posenc.plots import OKABE_ITO, colour
from posenc.results import RunResult, load_results, position_curves, summarize
from posenc.results_plots import _rgba, bar_figure, errorbar_figure, position_accuracy_explorer


def run(scheme: str, seed: int, extras: dict[str, Any], *, options: dict[str, Any] | None = None,
        seq_len: int = 4, eval_lengths: tuple[int, ...] = (4, 8)) -> RunResult:
    """A hand-made record of a run trained with per_position=True."""
    config = {"scheme": scheme, "position_options": dict(options or {}), "seed": seed, "combine": "add",
              "seq_len": seq_len, "eval_lengths": list(eval_lengths), "eval_extrapolations": ["clip", "modular"]}
    metrics = {f"accuracy@{key.split('@')[1]}": 0.5 for key in extras}
    return RunResult(config=config, seed=seed, metrics={"accuracy": 0.5, **metrics}, history=[], wall_time_s=1.0,
                     extras=extras)


@pytest.fixture
def runs() -> list[RunResult]:
    """A sinusoid (two seeds) and a learned table of 4 rows, tested at 4 and 8 with two workarounds."""
    return [
        run("sinusoidal", 0, {"position_accuracy@4": [None, 1.0, 1.0, 1.0], "position_accuracy@8": [None] + [0.5] * 7}),
        run("sinusoidal", 1, {"position_accuracy@4": [None, 0.8, 0.8, 0.8], "position_accuracy@8": [None] + [0.3] * 7}),
        run("learned", 0, {"position_accuracy@4": [None, 0.9, 0.9, 0.9],
                           "position_accuracy@8:clip": [None] + [0.2] * 7,
                           "position_accuracy@8:modular": [None] + [0.6] * 7}, options={"init": "bert"}),
    ]


def test_rgba() -> None:
    assert _rgba("#0072B2", 0.18) == "rgba(0,114,178,0.18)"
    with pytest.raises(ValueError, match="hex_colour"):
        _rgba("blue", 0.5)
    with pytest.raises(ValueError, match="alpha"):
        _rgba("#0072B2", 2)


def test_bar_figure_has_a_bar_per_row_and_a_dot_per_seed(runs: list[RunResult]) -> None:
    rows = summarize(runs, metric="accuracy")
    fig = bar_figure(rows, title="t", y_title="accuracy", alt="bars", reference=(0.25, "chance"))
    bars, dots = fig.data
    assert list(bars.x) == ["sinusoidal", "learned (bert)"] and list(bars.error_y.array) == [0.0, 0.0]
    assert len(dots.y) == 3 and bars.marker.color == colour(0)
    assert fig.layout.shapes[0].y0 == 0.25 and fig.layout.meta["alt"] == "bars"
    with pytest.raises(ValueError, match=r"rows\[0\] lacks \['values'\]"):
        bar_figure([{"label": "a", "mean": 1.0, "std": 0.0}], title="t", y_title="y", alt="a")


def grey_clashes(fig: go.Figure) -> list[str]:
    """Pairs of named series that look alike in grey: the same line style and no distinct marker."""
    def look(trace: Any) -> tuple[str, str]:
        symbol = str(trace.marker.symbol) if trace.mode and "markers" in trace.mode else ""
        return str(trace.line.dash or "solid"), symbol

    named = [trace for trace in fig.data if trace.name]
    return [f"{a.name} and {b.name}" for i, a in enumerate(named) for b in named[i + 1:] if look(a) == look(b)]


def test_errorbar_figure_bands_stay_within_bounds() -> None:
    series = {"a": ([1, 2], [0.9, 1.0], [0.2, 0.1]), "b": ([1, 2], [0.1, 0.2], [0.3, 0.0])}
    fig = errorbar_figure(series, title="t", x_title="x", y_title="y", alt="lines", band=True,
                          styles={"b": {"dash": "dot"}})
    band_a, line_a, band_b, line_b = fig.data
    assert max(band_a.y) == 1.0 and min(band_b.y) == 0.0  # clipped to what accuracy can be
    assert line_a.line.color == colour(0) and line_b.line.dash == "dot"
    plain = errorbar_figure(series, title="t", x_title="x", y_title="y", alt="lines")
    assert [trace.error_y.array for trace in plain.data] == [(0.2, 0.1), (0.3, 0.0)]
    many = errorbar_figure({str(i): ([0], [0.5], [0.0]) for i in range(8)}, title="t", x_title="x", y_title="y",
                           alt="many")
    assert OKABE_ITO[-1] not in {trace.line.color for trace in many.data}  # yellow is too pale for lines
    assert grey_clashes(many) == []
    # Figure 6.2's seven curves (bands): each its own line style or marker, as well as colour.
    curves = errorbar_figure({str(i): ([0, 1], [0.5, 0.6], [0.1, 0.1]) for i in range(7)}, title="t", x_title="x",
                             y_title="y", alt="curves", band=True)
    assert grey_clashes(curves) == []
    # The check can fail: two solid lines without markers differ by colour only.
    solid = go.Figure([go.Scatter(name=n, mode="lines", line=dict(color=c, dash="solid"))
                       for n, c in (("a", colour(0)), ("b", colour(1)))])
    assert grey_clashes(solid) == ["a and b"]
    with pytest.raises(ValueError, match=r"series\['a'\] must be \(xs, means, stds\)"):
        errorbar_figure({"a": ([1, 2], [0.5], [0.1])}, title="t", x_title="x", y_title="y", alt="a")
    with pytest.raises(ValueError, match="styles names series"):
        errorbar_figure(series, title="t", x_title="x", y_title="y", alt="a", styles={"c": {}})


def test_position_explorer_controls_and_frames(runs: list[RunResult]) -> None:
    explorer = position_accuracy_explorer(runs)
    assert isinstance(explorer, Explorer)
    scheme, length = explorer.controls
    assert (scheme.name, list(scheme.values), scheme.start) == (
        "scheme", ["sinusoidal", "learned (bert) + clip", "learned (bert) + modular"], "sinusoidal")
    assert (length.name, list(length.values), length.start) == ("length", [4, 8], 8)  # twice the training length
    frame = explorer.frame(scheme="sinusoidal", length=8)
    band, means = frame.traces[0], frame.traces[1]
    assert means["x"] == list(range(1, 8)) and means["y"] == pytest.approx([0.4] * 7)
    assert len(band["x"]) == len(band["y"]) == 14  # up the upper edge, back along the lower one
    assert band["y"][0] == pytest.approx(0.4 + 0.2 / 2**0.5)
    assert frame.layout["title.text"] == "sinusoidal, test length 8: mean accuracy 0.400"
    # past its 4 rows the learned table is read through the chosen workaround; inside, as trained
    assert explorer.frame(scheme="learned (bert) + modular", length=8).traces[1]["y"] == pytest.approx([0.6] * 7)
    assert explorer.frame(scheme="learned (bert) + clip", length=4).traces[1]["y"] == pytest.approx([0.9] * 3)
    assert explorer.figure.layout.shapes[0].x0 == 3.5  # the end of the training length
    assert "1 seeds per scheme" in (explorer.caption or "")
    _, frames = explorer.static_figure()
    assert len(frames) == 3 * 2


def test_position_explorer_arguments(runs: list[RunResult]) -> None:
    chosen = position_accuracy_explorer(runs, lengths=[4], scheme="learned (bert) + clip", caption="c")
    assert [c.start for c in chosen.controls] == ["learned (bert) + clip", 4] and chosen.caption == "c"
    with pytest.raises(ValueError, match="scheme must be one of 'sinusoidal', .*; got 'rope'"):
        position_accuracy_explorer(runs, scheme="rope")
    with pytest.raises(ValueError, match="length must be one of 4, 8; got 16"):
        position_accuracy_explorer(runs, length=16)
    with pytest.raises(ValueError, match=r"lengths\[1\] must be one of 4, 8; got 12"):
        position_accuracy_explorer(runs, lengths=[4, 12])
    with pytest.raises(ValueError, match="results is empty"):
        position_accuracy_explorer([])
    with pytest.raises(ValueError, match=r"share one training length \(seq_len\), got \[4, 6\]"):
        position_accuracy_explorer(runs + [run("rope", 0, {}, seq_len=6)])


def test_position_explorer_on_the_stored_chapter_7_grid() -> None:
    results, _ = load_results(data_path("ch7_grid.json"))
    explorer = position_accuracy_explorer(results)
    labels = list(explorer.controls[0].values)
    assert "learned (bert) + interpolate" in labels and "rope" in labels
    curves = position_curves(results, list(explorer.controls[1].values))
    frame = explorer.frame(scheme="rope", length=64)
    assert frame.traces[1]["y"] == curves["rope", 64][1]  # the explorer shows exactly the curves chapter 7 checks
