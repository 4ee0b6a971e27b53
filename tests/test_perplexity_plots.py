"""posenc.perplexity_plots: the real-text explorers read every line exactly as it was scored."""

from __future__ import annotations

import math

import pytest

from posenc.interactive import Explorer
from posenc.results import RunResult
from posenc.rope_scaling_plots import method_colour
from posenc.suite import choose_learning_rates
from posenc.perplexity_plots import bpb_length_explorer, bpb_profile_explorer, text_lines


def _runs() -> list[RunResult]:
    """RoPE (read also with PI) and a learned table (read with clip past its end) trained on 16 bytes,
    read at 16, 32 and 64; one rate, two seeds; bits per byte rise past the length by a known amount."""
    runs = []
    for seed in (0, 1):
        rope = {"val_accuracy": 0.5, "bpb@16": 2.0, "bpb_slide@16": 1.9}
        table = {"val_accuracy": 0.5, "bpb@16": 2.5, "bpb_slide@16": 2.4}
        rope_extras, table_extras = {"bpb_profile@16": [2.0]}, {"bpb_profile@16": [2.5]}
        for n in (32, 64):
            rope |= {f"bpb@{n}": 2.0 + n / 32, f"bpb_slide@{n}": 1.9 + n / 32, f"bpb_new@{n}": 2.5 + n / 32,
                     f"bpb@{n}:pi": 2.2, f"bpb_new@{n}:pi": 2.3}
            table |= {f"bpb@{n}:clip": 3.0, f"bpb_new@{n}:clip": 3.5}
            rope_extras |= {f"bpb_profile@{n}": [2.0] + [3.0] * (n // 16 - 1), f"bpb_profile@{n}:pi": [2.2] * (n // 16)}
            table_extras |= {f"bpb_profile@{n}:clip": [2.5] + [3.5] * (n // 16 - 1)}
        runs.append(RunResult(config={"task": "text", "scheme": "rope", "position_options": {}, "lr": 1e-2,
                                      "seq_len": 16, "rope_scalings": ["pi"]},
                              seed=seed, metrics=rope, history=[], wall_time_s=0.0, extras=rope_extras))
        runs.append(RunResult(config={"task": "text", "scheme": "learned", "position_options": {"init": "normal"},
                                      "lr": 1e-2, "seq_len": 16, "eval_extrapolations": ["clip"]},
                              seed=seed, metrics=table, history=[], wall_time_s=0.0, extras=table_extras))
    return runs


def test_every_way_a_cell_was_read_is_a_line_styled_apart() -> None:
    lines = text_lines(choose_learning_rates(_runs()))
    assert [line.name for line in lines] == ["rope", "rope + PI", "learned (normal) + clip"]
    assert [line.strategy for line in lines] == [None, "pi", "clip"]
    assert lines[1].colour == method_colour("pi") and lines[1].dash != lines[0].dash


def test_the_length_explorer_reads_each_line_as_scored() -> None:
    cells = choose_learning_rates(_runs())
    explorer = bpb_length_explorer({"all": cells, "RoPE only": {k: v for k, v in cells.items() if k[1] == "rope"}},
                                   lengths=(16, 32, 64))
    assert isinstance(explorer, Explorer)
    every = explorer.frame(models="all", windows="every position").traces
    assert every[0]["y"] == pytest.approx([2.0, 3.0, 4.0])
    assert every[1]["y"] == pytest.approx([2.0, 2.2, 2.2])  # PI past the length, as trained within it
    assert every[2]["y"] == pytest.approx([2.5, 3.0, 3.0])
    sliding = explorer.frame(models="all", windows="sliding windows").traces
    assert sliding[1]["y"][1:] == [None, None] and sliding[2]["y"][1:] == [None, None]  # never read: gaps
    new = explorer.frame(models="all", windows="new positions only").traces
    assert new[0]["y"] == pytest.approx([2.0, 3.5, 4.5])  # at the training length: every position
    fewer = explorer.frame(models="RoPE only", windows="every position").traces
    assert fewer[2]["visible"] is False and fewer[0]["visible"] is True
    # the training length is marked on the log axis: the line at 16, its label at log10(16), where plotly.js
    # puts an annotation of a log axis (at x=16 it would sit at 10**16, off the plot)
    layout = explorer.figure.layout
    assert layout.xaxis.type == "log" and layout.shapes[0].x0 == 16
    assert layout.annotations[0].text == "trained on 16" and layout.annotations[0].x == pytest.approx(math.log10(16))


def test_the_profile_explorer_marks_where_new_positions_start() -> None:
    cells = choose_learning_rates(_runs())
    explorer = bpb_profile_explorer({"all": cells}, lengths=(32, 64))
    frame = explorer.frame(models="all", length=64)
    assert frame.traces[0]["x"] == pytest.approx([8.0, 24.0, 40.0, 56.0])
    assert frame.traces[0]["y"] == pytest.approx([2.0, 3.0, 3.0, 3.0])
    assert frame.traces[2]["y"] == pytest.approx([2.5, 3.5, 3.5, 3.5])
    assert frame.layout["xaxis.range"] == [0, 64]
    assert explorer.figure.layout.annotations[0].x == 16 and explorer.figure.layout.annotations[0].xanchor == "left"
    rope = cells["text", "rope"]
    relative = bpb_profile_explorer({"all": cells}, lengths=(32, 64), reference=rope)
    minus = relative.frame(models="all", length=64, scale="minus rope")
    assert minus.traces[0]["y"] == pytest.approx([0.0, 0.0, 0.0, 0.0])
    assert minus.traces[2]["y"] == pytest.approx([0.5, 0.5, 0.5, 0.5])  # the table against RoPE, offset by offset
    with pytest.raises(ValueError, match="reference 'learned \\(normal\\)' has no plain loss profile at \\[32, 64\\]"):
        bpb_profile_explorer({"all": cells}, lengths=(32, 64), reference=cells["text", "learned (normal)"])


def test_bad_groups_and_lengths_are_named() -> None:
    cells = choose_learning_rates(_runs())
    with pytest.raises(ValueError, match="lengths must start at the training length 16"):
        bpb_length_explorer({"all": cells}, lengths=(32, 64))
    with pytest.raises(ValueError, match="lengths must be past the training length 16"):
        bpb_profile_explorer({"all": cells}, lengths=(16, 32))
    with pytest.raises(ValueError, match="groups must"):
        bpb_length_explorer({}, lengths=(16, 32))
