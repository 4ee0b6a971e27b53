"""posenc.robustness_plots: the map of what holds where, and the explorer of one conclusion."""

from __future__ import annotations

import math

import pytest
from test_robustness import ROPE_BEATS_NONE, grid, noise

from posenc.interactive import Explorer
from posenc.robustness import Conclusion, Side, Verdict, evaluate
from posenc.robustness_plots import conclusion_explorer, group_label, robustness_map, setting_label


def _verdicts() -> list[Verdict]:
    """RoPE beats no encoding without the anchor and loses with it, on copy-offset; a second
    conclusion claims marker recall only, so the map has a column it says nothing about."""

    def score(scheme: str, anchor: bool, lr: float, seed: int) -> dict[str, float]:
        rope = 0.2 if anchor and lr == 1e-3 else 0.8
        return {"val_accuracy": 1.0, "new@32": (rope if scheme == "rope" else 0.5) + noise(seed)}

    runs = grid(score, rates=(1e-3, 3e-3)) + grid(score, tasks=("marker_recall",), rates=(1e-3, 3e-3))
    content = Conclusion("rope>none mr", "RoPE beats no encoding on the content lookup", Side("rope", "new@32"),
                         Side("none", "new@32"), tasks=("marker_recall",), label="RoPE > NoPE, marker recall")
    return [evaluate(ROPE_BEATS_NONE, runs), evaluate(content, runs)]


def test_the_map_marks_each_group_and_leaves_a_gap_where_nothing_is_claimed() -> None:
    verdicts = _verdicts()
    fig = robustness_map(verdicts)
    heat = fig.data[0]
    assert list(heat.x) == ["copy_offset, no anchor", "copy_offset + anchor", "marker_recall, no anchor",
                            "marker_recall + anchor"]
    # rows by label where there is one, with the verdict
    assert list(heat.y) == ["RoPE scores more new positions than no encoding [conditional]",
                            "RoPE > NoPE, marker recall [conditional]"]
    first, second = heat.z
    assert first[0] == 1.0 and first[1] == 0.5 and math.isnan(first[2]) and math.isnan(first[3])
    assert math.isnan(second[0]) and list(second[2:]) == [1.0, 0.5]
    assert [list(row) for row in heat.text] == [["✓", "2/4", "", ""], ["", "", "✓", "2/4"]]
    assert fig.layout.meta["alt"].startswith("Grid of the stated conclusions")


def test_the_explorer_shows_every_setting_of_the_chosen_conclusion() -> None:
    verdicts = _verdicts()
    explorer = conclusion_explorer(verdicts, conclusion="rope>none mr")  # a key selects its label
    assert isinstance(explorer, Explorer)
    frame = explorer.frame(conclusion="RoPE > NoPE, marker recall")
    assert len(frame.traces[0]["x"]) == verdicts[1].n == 8  # 2 anchors x 2 x 2 pairs of tied rates
    assert frame.traces[0]["text"].count("reversed") == 2
    assert "conditional" in frame.layout["title.text"]
    with pytest.raises(ValueError, match="conclusion must be one of"):
        conclusion_explorer(verdicts, conclusion="nothing like it")
    with pytest.raises(ValueError, match="labels must be unique"):
        conclusion_explorer([verdicts[0], verdicts[0]])


def test_labels_and_errors() -> None:
    assert group_label({"task": "copy_offset", "anchor": True}) == "copy_offset + anchor"
    assert setting_label({"task": "copy_half", "anchor": False, "lr": 1e-3, "lr_worse": 3e-3}) == (
        "copy_half, no anchor, lr 0.001 vs 0.003")
    with pytest.raises(ValueError, match="must name its task"):
        group_label({"anchor": True})
    with pytest.raises(ValueError, match="verdicts is empty"):
        robustness_map([])
    with pytest.raises(TypeError, match=r"verdicts\[0\] must be"):
        robustness_map(["robust"])  # type: ignore[list-item]
