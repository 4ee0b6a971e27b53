"""Figures of :mod:`posenc.robustness`: a map of what holds where, and an explorer of each conclusion.

* :func:`robustness_map`: conclusions (rows) x groups of settings (columns: task, anchor or
  not): each cell is the share of the group's settings (the tied learning rates) where the
  conclusion holds, marked with a symbol that survives grey print (``✓`` all, ``✗`` none,
  ``k/n`` some; ``↺`` where it is reversed) — one glance says what holds where.
* :func:`conclusion_explorer`: pick a conclusion; its difference (better − worse) in every
  setting with two standard errors either side, the margin it must clear, and its verdict.
  Live in a kernel, static on the site (:class:`posenc.interactive.Explorer`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from posenc.checks import check_choice, check_instance, check_mapping, check_text
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import heatmap, new_figure
from posenc.robustness import STANDARD_ERRORS, SettingResult, Verdict, map_cell, verdict_phrase

__all__ = ["robustness_map", "conclusion_explorer", "group_label", "setting_label"]

#: Marker symbols by status (grey-safe: shape, not only colour).
_STATUS_SYMBOL = {"holds": "circle", "unclear": "square-open", "reversed": "x"}
_STATUS_COLOUR = {"holds": "#009E73", "unclear": "#999999", "reversed": "#D55E00"}


def _check_setting(setting: object) -> None:
    check_mapping("setting", setting, what="a dict of dimension -> value (SettingResult.setting)")
    assert isinstance(setting, Mapping)
    if "task" not in setting:
        raise ValueError(f"setting must name its task (a SettingResult.setting has 'task'), got {setting!r}")


def group_label(setting: Mapping[str, Any]) -> str:
    """The column a setting belongs to in the map: its task, and its anchor if the setting has one."""
    _check_setting(setting)
    label = str(setting.get("task", ""))
    if "anchor" in setting:
        label += " + anchor" if setting["anchor"] else ", no anchor"
    return label


def setting_label(setting: Mapping[str, Any]) -> str:
    """A short label of one setting, e.g. ``"copy_offset, anchor, lr 0.003 vs 0.01"``."""
    _check_setting(setting)
    parts = [str(setting.get("task", ""))]
    if "anchor" in setting:
        parts.append("anchor" if setting["anchor"] else "no anchor")
    if "lr" in setting:
        parts.append(f"lr {setting['lr']:g}" + (f" vs {setting['lr_worse']:g}" if "lr_worse" in setting else ""))
    return ", ".join(parts)


def _check_verdicts(verdicts: object) -> list[Verdict]:
    if isinstance(verdicts, str | bytes) or not isinstance(verdicts, Sequence):
        raise TypeError(f"verdicts must be a sequence of Verdicts (posenc.robustness.evaluate), got {verdicts!r} "
                        f"of type {type(verdicts).__name__}")
    if not verdicts:
        raise ValueError("verdicts is empty: pass at least one Verdict")
    return [check_instance(f"verdicts[{i}]", v, Verdict, what="a Verdict (posenc.robustness.evaluate)")
            for i, v in enumerate(verdicts)]


def _groups(verdicts: Sequence[Verdict]) -> list[str]:
    return list(dict.fromkeys(group_label(r.setting) for v in verdicts for r in v.results))


def _cell(results: Sequence[SettingResult]) -> tuple[float, str]:
    """(share of settings that hold, cell text) for one conclusion's settings in one group; NaN
    (drawn as a gap) where the conclusion claims nothing about the group."""
    if not results:
        return math.nan, ""
    return sum(r.holds for r in results) / len(results), map_cell(results)


def robustness_map(verdicts: Sequence[Verdict], *, title: str = "What holds where") -> Any:
    """A heatmap of conclusions x setting groups: the share of each group's settings where each holds.

    Args:
        verdicts: from :func:`posenc.robustness.evaluate`, one per conclusion (rows, in order).

    Returns:
        A plotly figure (rows top to bottom in ``verdicts`` order; empty cells where a
        conclusion does not claim that group).
    """
    verdicts = _check_verdicts(verdicts)
    check_text("title", title)
    groups = _groups(verdicts)
    z: list[list[float]] = []
    text: list[list[str]] = []
    for verdict in verdicts:
        row, labels = [], []
        for group in groups:
            share, label = _cell([r for r in verdict.results if group_label(r.setting) == group])
            row.append(share)
            labels.append(label)
        z.append(row)
        text.append(labels)
    rows = [f"{v.conclusion.label or v.conclusion.claim} [{v.kind}]" for v in verdicts]
    fig = heatmap(
        z, x=groups, y=rows, title=title, x_title="setting (task, anchor)", y_title="",
        alt=("Grid of the stated conclusions (rows) against groups of settings (columns: task, with or without an "
             "anchor token): each cell shows the share of that group's settings (tied learning rates) where the "
             "conclusion holds, with a tick where it holds in all, a cross where in none, a circular arrow where it "
             "is reversed, and k/n where in some."),
        colorbar_title="share of settings where it holds", diverging=False, zmin=0.0, zmax=1.0,
        height=max(260, 90 + 46 * len(verdicts)))
    fig.update_traces(text=text, texttemplate="%{text}", textfont=dict(size=15), hoverongaps=False,
                      hovertemplate="%{y}<br>%{x}: %{text}<extra></extra>")
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_xaxes(tickangle=-25, automargin=True)
    return fig


def _frame(verdict: Verdict) -> Frame:
    xs = [setting_label(r.setting) for r in verdict.results]
    ys = [r.comparison.difference for r in verdict.results]
    errors = [STANDARD_ERRORS * r.comparison.standard_error for r in verdict.results]
    statuses = [r.comparison.status for r in verdict.results]
    margin = verdict.conclusion.margin
    return Frame(
        traces={
            0: {"x": xs, "y": ys, "error_y.array": errors,
                "marker.symbol": [_STATUS_SYMBOL[s] for s in statuses],
                "marker.color": [_STATUS_COLOUR[s] for s in statuses], "text": statuses},
            1: {"x": xs, "y": [margin] * len(xs)},
        },
        layout={"title.text": f"{verdict.conclusion.claim}<br><sup>{verdict_phrase(verdict)}</sup>"},
    )


def conclusion_explorer(verdicts: Sequence[Verdict], *, conclusion: str | None = None) -> Explorer:
    """Explorer: choose a conclusion (by its label) and see its difference in every setting.

    Each point is the mean difference (better − worse: accuracy, or share of solved seeds for
    bimodal cells) with two standard errors either side; the dashed line is the margin it must
    clear; the marker says the status (filled circle: holds, open square: unclear, cross:
    reversed).

    Args:
        verdicts: from :func:`posenc.robustness.evaluate`, with unique labels (or keys).
        conclusion: the one shown first, by label or key (default: the first).

    Returns:
        An Explorer with control ``conclusion`` (the labels); trace 0 the settings, trace 1 the margin.
    """
    verdicts = _check_verdicts(verdicts)
    # the reader picks by the short label (the key where a conclusion has none)
    by_name = {v.conclusion.label or v.conclusion.key: v for v in verdicts}
    if len(by_name) != len(verdicts):
        raise ValueError(f"conclusion labels must be unique, got {[v.conclusion.label or v.conclusion.key for v in verdicts]}")
    names = list(by_name)
    keys = {v.conclusion.key: name for name, v in by_name.items()}
    if conclusion is None:
        conclusion = names[0]
    else:
        check_text("conclusion", conclusion, empty=False)
        conclusion = keys.get(conclusion, conclusion)
        check_choice("conclusion", conclusion, names)
    fig = new_figure(
        title="A conclusion, setting by setting", x_title="setting", y_title="difference (better − worse)",
        alt=("Dot plot of one conclusion's difference between its two sides in every setting of its sensitivity "
             "set (task, anchor, tied learning rates), with error bars of two standard errors and a dashed line at "
             "the margin the difference must clear; the marker shape gives the status (holds, unclear, reversed)."),
        height=460)
    fig.add_scatter(x=[""], y=[0.0], mode="markers", name="difference in one setting",
                    marker=dict(size=11, line=dict(width=2)), error_y=dict(type="data", array=[0.0], visible=True),
                    hovertemplate="%{x}<br>difference %{y:.3f} (%{text})<extra></extra>", text=[""])
    fig.add_scatter(x=[""], y=[0.0], mode="lines", name="margin", line=dict(dash="dash", color="#555555"),
                    hoverinfo="skip")
    fig.add_hline(y=0.0, line_color="#999999", line_width=1)
    fig.update_xaxes(tickangle=-30, automargin=True)

    def update(conclusion: str) -> Frame:
        return _frame(by_name[conclusion])

    return Explorer(fig, update, [Control("conclusion", names, default=conclusion, label="conclusion")],
                    caption="Choose a conclusion. Each point is one setting (task, anchor or not, learning rates "
                    "tied on validation); bars: two standard errors; dashed: the margin to clear.")
