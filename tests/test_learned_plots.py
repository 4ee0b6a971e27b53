"""Tests for posenc.learned_plots: demonstrations, figures and the chapter 3 explorer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from posenc.learned import INIT_STRATEGIES, initial_table
from posenc.learned_plots import (
    gradient_rows_figure,
    init_histograms_figure,
    init_similarity_figure,
    learned_explorer,
    row_change_figure,
    row_gradient_norms,
    train_with_short_inputs,
    training_explorer,
)
from posenc.plots import thin_indices


def test_thin_indices_takes_equal_steps() -> None:
    assert thin_indices(5, 10).tolist() == [0, 1, 2, 3, 4]
    picked = thin_indices(512, 40)
    assert len(picked) <= 40 and picked[0] == 0
    assert set(np.diff(picked).tolist()) == {13}  # ceil(512 / 40): one step, so one offset per diagonal
    assert len(thin_indices(512, 39)) <= 39
    with pytest.raises(ValueError, match="max_count"):
        thin_indices(5, 0)
    with pytest.raises(ValueError, match="n must be"):
        thin_indices(-1, 5)


def test_explorer_keeps_sine_cosine_pairs_together() -> None:
    frame = learned_explorer().frame(init="sinusoidal", d_model=256, max_len=64)
    channels = np.asarray(frame.traces[0]["x"])
    assert len(channels) < 256 and np.all(channels[0::2] % 2 == 0) and np.all(channels[1::2] == channels[0::2] + 1)


def test_row_gradient_norms_only_used_rows() -> None:
    norms = row_gradient_norms(20, 6, 7)
    assert norms.shape == (20,)
    assert torch.all(norms[:7] > 0) and torch.all(norms[7:] == 0)


def test_train_with_short_inputs_leaves_unused_rows_untouched() -> None:
    run = train_with_short_inputs(max_len=24, lengths=(4, 8, 12), d_model=16, steps=12, batch=8)
    assert run.uses[12:].sum() == 0 and torch.all(run.uses[:4] == 12 * 8)
    assert torch.equal(run.final[12:], run.initial[12:])  # never reached: exactly the initial values
    assert torch.all(run.change[:12] > 0)
    assert 0.0 <= run.accuracy <= 1.0 and run.chance == pytest.approx(1 / 16)
    fig = row_change_figure(run)
    assert fig.layout.meta["alt"] and len(fig.data) == 2
    with pytest.raises(ValueError, match="lengths"):
        train_with_short_inputs(max_len=8, lengths=(4, 9))


def test_figures_have_alt_text_and_axis_titles() -> None:
    tables = {name: initial_table(40, 8, name, seed=0) for name in INIT_STRATEGIES}
    for fig in (init_histograms_figure(tables), init_similarity_figure(tables, max_cells=16),
                gradient_rows_figure(row_gradient_norms(10, 4, 3), 3)):
        assert fig.layout.meta["alt"]
        assert fig.layout.xaxis.title.text
    grid = init_similarity_figure(tables, max_cells=16)
    assert len(grid.data) == 4 and np.asarray(grid.data[0].z).shape == (14, 14)  # every 3rd of 40 positions


def test_explorer_frames_and_page_weight() -> None:
    explorer = learned_explorer(max_cells=40)
    frame = explorer.frame(init="sinusoidal", d_model=256, max_len=512)
    z_table = np.asarray(frame.traces[0]["z"])
    z_sim = np.asarray(frame.traces[1]["z"])
    assert z_table.shape[0] <= 40 and z_table.shape[1] <= 40 and z_sim.shape == (z_table.shape[0],) * 2
    assert np.allclose(np.diag(z_sim), 1.0)
    assert "40 of 512 positions shown" in frame.layout["title.text"]  # says that positions are subsampled
    # Live values off the grid work too (odd widths are rounded up for the sinusoidal table).
    assert "d_model=10" in explorer.frame(init="sinusoidal", d_model=9, max_len=8).layout["title.text"]
    assert len(explorer.static_html()) < 700_000


def test_training_explorer_steps_through_snapshots() -> None:
    run = train_with_short_inputs(max_len=20, lengths=(4, 8), d_model=8, steps=6, batch=4,
                                  snapshot_steps=(6, 0, 3))
    assert run.snapshot_steps == (0, 3, 6) and run.snapshots is not None and run.snapshots.shape == (3, 20, 8)
    assert torch.equal(run.snapshots[0], run.initial) and torch.equal(run.snapshots[-1], run.final)
    assert run.max_length == 8
    explorer = training_explorer(run)
    first, last = explorer.frame(step=0), explorer.frame(step=6)
    assert "rows changed so far: 0 of 20" in first.layout["title.text"]
    assert "rows changed so far: 8 of 20" in last.layout["title.text"]
    z = np.asarray(last.traces[0]["z"])
    assert z.shape == (20, 8) and np.allclose(np.diag(np.asarray(last.traces[1]["z"])), 1.0)
    assert explorer.figure.layout.meta["alt"]
    assert len(explorer.static_html()) < 200_000
    with pytest.raises(ValueError, match="snapshot"):
        training_explorer(train_with_short_inputs(max_len=8, lengths=(4,), d_model=8, steps=2, batch=2))
    with pytest.raises(ValueError, match="snapshot_steps"):
        train_with_short_inputs(max_len=8, lengths=(4,), steps=2, snapshot_steps=(3,))


def test_training_restores_the_thread_setting() -> None:
    before = torch.get_num_threads()
    train_with_short_inputs(max_len=8, lengths=(4,), d_model=8, steps=1, batch=2)
    assert torch.get_num_threads() == before
