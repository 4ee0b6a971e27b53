"""posenc.rope_variants_plots: chapter 12's figure of the two partial-rotation ladders."""

from __future__ import annotations

import math

import pytest

from posenc.rope_variants_plots import partial_ladders_figure


def test_partial_ladders_figure_draws_the_three_ladders() -> None:
    fig = partial_ladders_figure(128, 0.25, train_len=4096)
    full, compressed, truncated = fig.data
    assert len(full.x) == 64 and len(compressed.x) == len(truncated.x) == 16  # still pairs are not drawn
    assert full.y[0] == pytest.approx(4096 / (2 * math.pi))
    assert min(truncated.y) > 1 > min(compressed.y)  # p-RoPE stops before the pairs below one turn
    assert list(truncated.y) == list(full.y[:16])
    assert fig.layout.yaxis.type == "log"
    # the line at one turn, and its label where plotly.js puts y on a log axis (10 ** y): y = 0, not 1
    assert fig.layout.shapes[0].y0 == 1.0 and fig.layout.annotations[0].y == 0.0


def test_partial_ladders_figure_names_a_bad_argument() -> None:
    with pytest.raises(ValueError, match="train_len"):
        partial_ladders_figure(128, 0.25, train_len=0)
