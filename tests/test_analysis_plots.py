"""Tests for posenc.analysis_plots: figure builders and the chapter 5 explorer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc.analysis import analyze_table
from posenc.analysis_plots import (
    ANALYSES,
    analysis_explorer,
    components_grid,
    cumulative_variance_figure,
    norms_figure,
    offset_profiles,
    pair_trajectory,
    similarity_heatmap,
    subsample_square,
)
from posenc.interactive import Explorer
from posenc.sinusoidal import sinusoidal_table


@pytest.fixture(scope="module")
def analyses() -> dict:
    rng = np.random.default_rng(0)
    return {
        "noise": analyze_table(rng.standard_normal((200, 24))),
        "short": analyze_table(rng.standard_normal((40, 8))),
        "sinusoidal": analyze_table(sinusoidal_table(200, 24, dtype=torch.float64)),
    }


def test_subsample_square_keeps_exact_entries() -> None:
    matrix = np.arange(300 * 300, dtype=float).reshape(300, 300)
    sub, positions = subsample_square(matrix, max_cells=128)
    stride = 3  # ceil(300 / 128)
    np.testing.assert_array_equal(positions, np.arange(0, 300, stride))
    assert sub.shape == (100, 100) and sub.shape[0] <= 128
    assert sub[5, 7] == matrix[5 * stride, 7 * stride]
    small, kept = subsample_square(np.eye(50), max_cells=128)
    assert small.shape == (50, 50) and kept.size == 50
    with pytest.raises(ValueError, match="square"):
        subsample_square(np.ones((4, 5)))
    with pytest.raises(ValueError, match="positive"):
        subsample_square(np.eye(4), max_cells=0)


def test_similarity_heatmap_fixed_colour_scale(analyses: dict) -> None:
    fig = similarity_heatmap(analyses["noise"].similarity, name="noise", max_cells=64)
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (-1.0, 1.0)
    assert np.asarray(trace.z).shape == (50, 50)  # every 4th of 200 positions
    assert "every 4th position" in fig.layout.title.text
    assert fig.layout.meta["alt"] and fig.layout.xaxis.title.text == "position j"


def test_offset_profiles_skip_offset_zero_and_respect_max_offset(analyses: dict) -> None:
    curves = {name: a.similarity_by_offset for name, a in analyses.items()}
    fig = offset_profiles(curves, title="t", y_title="y", alt="alt text", max_offset=30)
    assert [t.name for t in fig.data] == list(curves)
    assert fig.data[0].x[0] == 1 and fig.data[0].x[-1] == 30
    assert fig.data[1].x[-1] == 30  # the 40-row table has offsets up to 39
    np.testing.assert_allclose(fig.data[2].y, analyses["sinusoidal"].similarity_by_offset[1:31])
    assert fig.layout.xaxis.type == "log" and fig.layout.meta["alt"] == "alt text"
    assert len({t.line.color for t in fig.data}) == 3


def test_cumulative_variance_and_norms_figures(analyses: dict) -> None:
    fig = cumulative_variance_figure({n: a.pca.explained_variance_ratio for n, a in analyses.items()}, k=5)
    expected = 100 * np.cumsum(analyses["noise"].pca.explained_variance_ratio[:5])
    np.testing.assert_allclose(fig.data[0].y, expected)
    norms = norms_figure({n: a.norms.norms for n, a in analyses.items()})
    np.testing.assert_allclose(np.mean(norms.data[0].y), 1.0)  # divided by the table's mean
    np.testing.assert_allclose(norms.data[2].y, 1.0)  # sinusoidal rows all have the same norm


def test_components_grid_panels_and_windows(analyses: dict) -> None:
    fig = components_grid(analyses, n_components=2, max_positions={"noise": 50})
    assert len(fig.data) == 6
    assert len(fig.data[0].x) == 50 and len(fig.data[2].x) == 40
    titles = [a.text for a in fig.layout.annotations]
    assert "noise (positions 0–49)" in titles and "short" in titles
    with pytest.raises(ValueError, match="not tables"):
        components_grid(analyses, max_positions={"missing": 5})


def test_pair_trajectory_of_a_circle() -> None:
    angle = 2 * np.pi * np.arange(60) / 6
    fig = pair_trajectory(np.cos(angle), np.sin(angle), name="circle", connect=13)
    assert len(fig.data) == 2 and len(fig.data[1].x) == 13
    assert list(fig.data[1].text[:3]) == ["0", "1", "2"]
    with pytest.raises(ValueError, match="equal length"):
        pair_trajectory(np.ones(3), np.ones(4), name="bad")


def test_explorer_every_frame_and_visibility(analyses: dict) -> None:
    explorer = analysis_explorer(analyses, windows=(32, 160))
    assert isinstance(explorer, Explorer)
    names = [c.name for c in explorer.controls]
    assert names == ["table", "analysis", "positions"]
    assert explorer.controls[2].live == (16, 200, 16)
    n_traces = len(explorer.figure.data)
    for table in analyses:
        for analysis in ANALYSES:
            for window in (32, 160):
                # How fast a frame is computed is measured by benchmarks/run_all.py, not asserted here.
                frame = explorer.frame(table=table, analysis=analysis, positions=window)
                visible = [frame.traces[i]["visible"] for i in range(n_traces)]
                assert visible.count(True) >= 1
                assert visible[0] == (analysis == "similarity")
                assert table in frame.layout["title.text"]
    heat = explorer.frame(table="noise", analysis="similarity", positions=160).traces[0]
    assert np.asarray(heat["z"]).shape == (80, 80)  # 160 positions, every 2nd: at most 128 per side
    np.testing.assert_array_equal(heat["x"], np.arange(0, 160, 2))
    short = explorer.frame(table="short", analysis="row norms", positions=160).traces[n_traces - 1]
    assert len(short["y"]) == 40  # a window longer than the table shows the whole table


def test_explorer_static_page_is_light(analyses: dict) -> None:
    html = analysis_explorer(analyses, windows=(32, 160)).static_html()
    assert 'class="posenc-explorer"' in html
    assert len(html) < 1_000_000


def test_explorer_argument_errors(analyses: dict) -> None:
    with pytest.raises(ValueError, match="at least one table"):
        analysis_explorer({})
    with pytest.raises(ValueError, match="longest table"):
        analysis_explorer(analyses, windows=(64, 512))


# -- what attention sees -----------------------------------------------------------------
def _looking_back_logits(n: int = 20, n_heads: int = 2, k: int = 2) -> np.ndarray:
    """Logits whose every head peaks exactly k positions back (and at 0 for the first k queries)."""
    logits = np.zeros((n_heads, n, n))
    for i in range(n):
        logits[:, i, max(i - k, 0)] = 1.0
    return logits


def test_peak_share_figure_counts_shares_in_the_window() -> None:
    from posenc.analysis import peak_offset_shares, peak_offsets
    from posenc.analysis_plots import peak_share_figure

    peaks = {"back two": peak_offset_shares(peak_offsets(_looking_back_logits()))}
    fig = peak_share_figure(peaks, window=(-3, 3))
    heat = fig.data[0]
    assert list(heat.x) == [-3, -2, -1, 0, 1, 2, 3] and list(heat.y) == ["head 0", "head 1"]
    z = np.asarray(heat.z)
    # offset -2 for queries 2..19; query 1 can only reach key 0 (offset -1), query 0 itself (offset 0)
    assert np.allclose(z[:, 1], 18 / 20) and np.allclose(z[:, 2], 1 / 20) and np.allclose(z[:, 3], 1 / 20)
    assert fig.layout.meta and "alt" in str(fig.layout.meta)  # alt text recorded by describe()
    assert "position-only" in fig.layout.title.text  # the default title
    titled = peak_share_figure(peaks, window=(-3, 3), title="Peaks of real attention")
    assert titled.layout.title.text == "Peaks of real attention"
    with pytest.raises(ValueError, match="low <= high"):
        peak_share_figure(peaks, window=(2, -2))
    with pytest.raises(ValueError, match="at least one table"):
        peak_share_figure({})


def test_attention_explorer_frames() -> None:
    from posenc.analysis_plots import attention_explorer

    explorer = attention_explorer({"four heads": _looking_back_logits(n_heads=4), "two heads": _looking_back_logits()},
                                  max_cells=8)
    assert isinstance(explorer, Explorer)
    assert [c.name for c in explorer.controls] == ["table", "head"]
    assert list(explorer.controls[1].values) == [0, 1, 2, 3]
    frame = explorer.frame(table="two heads", head=1)
    heat, crosses = frame.traces[0], frame.traces[1]
    assert np.asarray(heat["z"]).shape == (8, 8)
    assert list(crosses["x"]) == [0, 0] + list(range(0, 6)) and list(crosses["y"]) == list(range(8))
    assert "-2: 90.0%" in frame.layout["title.text"]
    missing = explorer.frame(table="two heads", head=3)
    assert "only 2 heads" in missing.layout["title.text"]
    assert len(explorer.static_html()) < 200_000
    with pytest.raises(ValueError, match=r"must have shape \(n_heads, n, n\)"):
        attention_explorer({"bad": np.zeros((3, 4))})
