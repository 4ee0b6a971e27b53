"""Tests for chapter 10's T5 bucket figure (posenc.relative_plots.t5_bucket_figure).

The other figures of posenc.relative_plots are tested in tests/test_relative.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from posenc.relative_plots import t5_bucket_figure


def test_traces_are_the_bucket_rule_for_both_directions() -> None:
    fig = t5_bucket_figure()  # T5's defaults: 32 buckets, max_distance 128
    encoder, decoder = fig.data
    assert "bidirectional" in encoder.name and "causal" in decoder.name
    x = np.asarray(encoder.x)
    assert x[0] == -160 and x[-1] == 160 and np.array_equal(x, np.asarray(decoder.x))
    enc = dict(zip(x.tolist(), np.asarray(encoder.y).tolist(), strict=True))
    dec = dict(zip(x.tolist(), np.asarray(decoder.y).tolist(), strict=True))
    # By hand (see tests/test_t5_bias.py for the rule): encoder n = 16 per direction, e = 8 exact;
    # d = 20 -> 8 + floor(2 log2(20/8)) = 10; keys after the query add 16.
    assert [enc[o] for o in (-5, 0, 5, -20, 20, -160, 160)] == [5, 0, 21, 10, 26, 15, 31]
    # Decoder: n = 32, e = 16; d = 20 -> 16 + floor(16 ln(20/16) / ln 8) = 17; the future is bucket 0.
    assert [dec[o] for o in (-5, 0, 5, 160, -20, -100, -160)] == [5, 0, 0, 0, 17, 30, 31]


def test_small_settings_and_offset_range() -> None:
    fig = t5_bucket_figure(8, 16, max_offset=20)
    assert list(fig.data[0].x) == list(range(-20, 21))
    assert max(fig.data[0].y) == 7 and max(fig.data[1].y) == 7
    assert sum(1 for shape in fig.layout.shapes) == 2  # the two dotted lines at ±max_distance
    assert len(t5_bucket_figure(8, 16, max_offset=10).layout.shapes) == 0  # both outside the range


def test_figure_has_alt_text_and_axis_titles() -> None:
    fig = t5_bucket_figure()
    assert "bucket" in fig.layout.meta["alt"]
    assert "offset" in fig.layout.xaxis.title.text and "positions" in fig.layout.xaxis.title.text
    assert fig.layout.yaxis.title.text == "bucket index"


def test_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="max_offset must be a positive integer"):
        t5_bucket_figure(max_offset=0)
    with pytest.raises(TypeError, match="max_offset must be a positive integer"):
        t5_bucket_figure(max_offset=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_distance must be a positive integer"):
        t5_bucket_figure(max_distance=0)
    with pytest.raises(ValueError, match="num_buckets"):
        t5_bucket_figure(num_buckets=3)
