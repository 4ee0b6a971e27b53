"""Tests for posenc.sinusoidal_plots: what is drawn is an honest reduction of the real table,
explorer frames carry the right values, static pages stay light."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from posenc.interactive import Explorer
from posenc.sinusoidal import offset_dot_product, sinusoidal_table
from posenc.sinusoidal_plots import (
    dot_product_figure,
    drawable_table,
    layouts_figure,
    offset_head_figure,
    pick_channels,
    pool_rows,
    position_explorer,
    precision_figure,
    rotation_explorer,
    score_forms_figure,
    table_explorer,
    wave_pairs,
    wavelength_figure,
)


def test_pool_rows_block_means() -> None:
    values = torch.arange(10, dtype=torch.float32).reshape(10, 1)
    pooled, centres = pool_rows(values, 4)  # blocks of 3: [0,1,2] [3,4,5] [6,7,8] [9]
    assert pooled.flatten().tolist() == [1.0, 4.0, 7.0, 9.0]
    assert centres.tolist() == [1.0, 4.0, 7.0, 9.0]
    same, index = pool_rows(values, 10)
    assert torch.equal(same, values) and index.tolist() == list(range(10))


def test_pick_channels_keeps_pairs_together() -> None:
    assert pick_channels(8, 64).tolist() == list(range(8))
    interleaved = pick_channels(512, 64)
    assert len(interleaved) <= 64 and interleaved[0] == 0 and interleaved[-1] == 511
    assert set((interleaved[0::2] + 1).tolist()) == set(interleaved[1::2].tolist())  # (2i, 2i+1) pairs
    concatenated = pick_channels(512, 64, layout="concatenated")
    sines = concatenated[concatenated < 256]
    assert set((sines + 256).tolist()) == set(concatenated[concatenated >= 256].tolist())


def test_drawable_table_is_a_reduction_of_the_real_table() -> None:
    table = sinusoidal_table(512, 512)
    z, rows, cols = drawable_table(table, max_rows=64, max_channels=64)
    assert z.shape == (64, len(cols)) and len(rows) == 64
    assert np.allclose(z[3], table[24:32, cols].mean(dim=0).numpy(), atol=1e-6)
    assert rows[3] == pytest.approx(27.5)


def test_table_explorer_frames_match_the_table() -> None:
    explorer = table_explorer()
    frame = explorer.frame(d_model=16, seq_len=32)  # small: drawn in full
    assert np.allclose(np.asarray(frame.traces[0]["z"]), sinusoidal_table(32, 16).numpy())
    big = explorer.frame(d_model=1000, seq_len=3000)  # live values outside the grid work too
    assert np.asarray(big.traces[0]["z"]).shape[0] <= 64 and "d_model = 1000" in big.layout["title.text"]


def test_position_explorer_dots_are_table_entries() -> None:
    explorer = position_explorer(64)
    pairs = wave_pairs(64, 6)
    frame = explorer.frame(position=12345)
    n = len(pairs)
    dots = np.asarray(frame.traces[n + 1]["y"])
    vector = sinusoidal_table(None, 64, positions=[12345])[0]
    assert np.allclose(dots, vector[[2 * i for i in pairs]].numpy())
    assert np.allclose(np.asarray(frame.traces[n + 2]["y"]), vector[0::2].numpy())
    # each drawn wave passes through its dot at the chosen position
    start = frame.traces[0]["x0"]
    index = int(round((12345 - start) / 0.5))
    for k, i in enumerate(pairs):
        assert float(np.asarray(frame.traces[k]["y"])[index]) == pytest.approx(float(dots[k]), abs=1e-5)


def test_rotation_explorer_reports_coinciding_vectors() -> None:
    explorer = rotation_explorer(16)
    frame = explorer.frame(k=37, position=2000)
    expected = sinusoidal_table(None, 16, positions=[2037], dtype=torch.float64)[0].numpy()
    assert np.allclose(np.asarray(frame.traces[3]["y"]), expected)
    assert np.allclose(np.asarray(frame.traces[4]["y"]), expected, atol=1e-12)
    radius = np.hypot(np.asarray(frame.traces[2]["x"]), np.asarray(frame.traces[2]["y"]))
    assert np.allclose(radius, 1.0)  # every pair lies on the unit circle


@pytest.mark.parametrize("make", [table_explorer, position_explorer, rotation_explorer])
def test_explorers_apply_and_stay_light(make) -> None:  # type: ignore[no-untyped-def]
    explorer = make()
    figure = go.Figure(explorer.figure)
    control = explorer.controls[0]
    Explorer.apply(explorer.frame(**{c.name: c.values[-1] for c in explorer.controls}), figure)
    assert len(explorer.static_html()) < 400_000, control.name
    assert explorer.figure.layout.meta["alt"]


def test_static_figures_have_labels_and_alt_text() -> None:
    figures = [
        wavelength_figure(64),
        dot_product_figure(64, max_offset=50, positions=(0, 7)),
        layouts_figure(16, 8),
        precision_figure(np.arange(3), {"a": np.array([1e-3, 2e-3, 3e-3])}),
        offset_head_figure(np.eye(8), 2),
        score_forms_figure({"random": np.ones((4, 4)), "offset only": np.zeros((4, 4))}),
    ]
    for fig in figures:
        assert fig.layout.meta["alt"]
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_dot_product_figure_markers_on_the_curve() -> None:
    fig = dot_product_figure(32, max_offset=40, positions=(0, 1000))
    curve = np.asarray(fig.data[0].y)
    for trace in fig.data[1:]:
        x = np.asarray(trace.x).astype(int)
        assert np.allclose(np.asarray(trace.y), curve[x], atol=1e-9)
    assert curve[0] == pytest.approx(16.0) and math.isclose(curve[5], float(offset_dot_product(5, 32)))


def test_wavelength_figure_end_points() -> None:
    fig = wavelength_figure(512)
    paper, endpoint = fig.data[0].y, fig.data[2].y
    assert paper[-1] == pytest.approx(2 * math.pi * 10000 ** (510 / 512))
    assert endpoint[-1] == pytest.approx(2 * math.pi * 10000)


def test_plot_helpers_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="max_rows"):
        pool_rows(torch.zeros(3, 3), 0)
    with pytest.raises(ValueError, match="layout"):
        pick_channels(8, 4, layout="diagonal")
    with pytest.raises(ValueError, match="window"):
        position_explorer(window=0)


def test_offset_head_figure_draws_the_weights_and_the_target_line() -> None:
    weights = np.tril(np.ones((10, 10)))
    fig = offset_head_figure(weights, 3)
    assert np.array_equal(np.asarray(fig.data[0].z), weights)
    assert list(fig.data[1].x) == [0, 6] and list(fig.data[1].y) == [3, 9]  # the line j = i - 3


def test_score_forms_figure_one_panel_per_matrix() -> None:
    fig = score_forms_figure({"a": np.eye(3), "b": -np.eye(3)})
    assert len(fig.data) == 2 and fig.data[1].zmin == -1.0
    with pytest.raises(ValueError, match="scores"):
        score_forms_figure({})
