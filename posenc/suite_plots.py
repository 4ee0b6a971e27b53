"""Figures of the task suite: seeds as data and learning curves, live in a kernel and static on the site.

Both read the cells of :func:`posenc.suite.choose_learning_rates` and return a
:class:`posenc.interactive.Explorer`. Each scheme keeps its registry colour, line style
and marker (:func:`posenc.registry.scheme_style`) in every figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from posenc.checks import check_choice, check_instance, check_mapping
from posenc.interactive import Control, Explorer, Frame
from posenc.plots import new_figure
from posenc.registry import scheme_style
from posenc.results import curve
from posenc.suite import SOLVED, SuiteCell, _check_cells, outcome, suite_variants, variant_values

__all__ = ["CURVE_MEASURES", "VARIANT_DASHES", "cell_styles", "seed_explorer", "learning_curve_explorer"]


#: Dashes for a scheme's second, third ... cell in one figure (never the scheme's own dash).
VARIANT_DASHES = ("dot", "dashdot", "longdash", "longdashdot")


def cell_styles(cells: Iterable[SuiteCell]) -> dict[str, tuple[str, str, str]]:
    """``label -> (colour, dash, symbol)``: the registry style of each cell's scheme (read from its
    runs, so a renamed cell keeps it); a scheme's second and later cells (``"learned (normal)"``
    after ``"learned (bert)"``, ``"rope [base=500000.0]"`` after ``"rope"``) keep the colour and get
    another dash and an open marker, so every line stays apart in grey."""
    if isinstance(cells, Mapping) or not isinstance(cells, Iterable):
        raise TypeError(f"cells must be an iterable of SuiteCell (e.g. choose_learning_rates(...).values()), got "
                        f"{type(cells).__name__}")
    cells = list(cells)
    for index, cell in enumerate(cells):
        check_instance(f"cells[{index}]", cell, SuiteCell, what="a SuiteCell (choose_learning_rates(...))")
    seen: dict[str, int] = {}
    styles: dict[str, tuple[str, str, str]] = {}
    for cell in cells:
        if cell.label in styles:
            continue
        scheme = str(cell.runs[0].config.get("scheme", cell.label.split(" ")[0]))
        colour, dash, symbol = scheme_style(scheme)
        earlier = seen.get(scheme, 0)
        seen[scheme] = earlier + 1
        if earlier:
            dashes = [d for d in VARIANT_DASHES if d != dash]
            dash = dashes[(earlier - 1) % len(dashes)]
            symbol = symbol if symbol.endswith("-open") else f"{symbol}-open"
        styles[cell.label] = (colour, dash, symbol)
    return styles


def seed_explorer(
    cells: Mapping[tuple[str, str], SuiteCell],
    measures: Mapping[str, str],
    *,
    task: str | None = None,
    measure: str | None = None,
) -> Explorer:
    """Explorer: one dot per seed and a bar per scheme, for a chosen task and measure.

    Args:
        cells: from :func:`choose_learning_rates`.
        measures: menu text -> metric key, e.g. ``{"new positions at 2×": "new@32"}``.
        task, measure: shown first (defaults: the first of each).

    Returns:
        An Explorer with controls ``task`` and ``measure``. Frames set trace 0 (the means,
        bars) and trace 1 (the seeds, dots).
    """
    _check_cells("cells", cells)
    names = list(check_mapping("measures", measures, min_len=1, what="a dict of menu text -> metric key",
                               item="metric"))
    tasks = list(dict.fromkeys(t for t, _ in cells))
    task = tasks[0] if task is None else check_choice("task", task, tasks)
    measure = names[0] if measure is None else check_choice("measure", measure, names)
    fig = new_figure(
        title="Seeds as data", x_title="position scheme (learned table: + workaround)", y_title="token accuracy",
        alt="Bar chart with one bar per position scheme (the mean over seeds) and one dot per seed, for the chosen "
        "task and measure; a dashed line marks the level counted as solved.", height=470)
    fig.add_bar(x=[""], y=[0.0], name="mean over seeds", marker_color="#BBBBBB", hovertemplate="%{x}: %{y:.3f}"
                "<extra>mean</extra>")
    fig.add_scatter(x=[""], y=[0.0], mode="markers", name="one seed", marker=dict(size=9, color="#000000",
                    symbol="circle-open", line=dict(width=2)), hovertemplate="%{x}: %{y:.3f}<extra>seed</extra>")
    fig.add_hline(y=SOLVED, line_dash="dash", line_color="#555", annotation_text=f"solved (≥ {SOLVED:g})",
                  annotation_position="bottom right")
    fig.update_yaxes(range=[-0.02, 1.05])
    fig.update_layout(margin=dict(b=150))
    fig.update_xaxes(tickangle=-30)

    def update(task: str, measure: str) -> Frame:
        labels, means, colours, dots_x, dots_y, solved = [], [], [], [], [], []
        styles = cell_styles(cells.values())
        for (cell_task, _), cell in cells.items():
            if cell_task != task:
                continue
            for label, strategy in suite_variants(cell).items():
                result = outcome(variant_values(cell, measures[measure], strategy))
                labels.append(label)
                means.append(result.mean)
                colours.append(styles[cell.label][0])
                dots_x += [label] * result.n
                dots_y += list(result.values)
                solved.append(f"{label.split(' ')[0]} {result.solved}/{result.n}")
        return Frame(
            traces={0: {"x": labels, "y": means, "marker.color": colours}, 1: {"x": dots_x, "y": dots_y}},
            layout={"title.text": f"{task}: {measure}"},
        )

    return Explorer(fig, update, [Control("task", tasks, default=task, label="task"),
                                  Control("measure", names, default=measure, label="measure")],
                    caption="Choose a task and a measure. Bars: mean over seeds; dots: single seeds, each at the "
                    "learning rate chosen for its scheme on the validation split.")


class _CurveMeasure(NamedTuple):
    """What a learning curve can show: the history key it reads, its axis title, the factor its values
    are multiplied by, its y range (``None``: fit the data) and the caption's words for it."""

    key: str
    axis_title: str
    scale: float
    y_range: tuple[float, float] | None
    caption: str


#: The curves :func:`learning_curve_explorer` offers, by name.
CURVE_MEASURES: dict[str, _CurveMeasure] = {
    "accuracy": _CurveMeasure("accuracy", "token accuracy at the training length", 1.0, (-0.02, 1.05),
                             "the accuracy on {sequences} {every}"),
    "training loss": _CurveMeasure("loss", "training loss (bits per token)", 1 / math.log(2), None,
                                  "the training loss in bits per token (nats / ln 2), averaged over the steps "
                                  "since the previous point, {every}"),
}


def _curve_layout(measure: str, task: str) -> dict[str, Any]:
    """The layout paths one (task, measure) setting of :func:`learning_curve_explorer` sets."""
    shown = CURVE_MEASURES[measure]
    layout: dict[str, Any] = {"title.text": f"Learning curves: {task}", "yaxis.title.text": shown.axis_title}
    if shown.y_range is None:
        layout["yaxis.autorange"] = True
    else:
        layout["yaxis.range"] = list(shown.y_range)
    return layout


def learning_curve_explorer(cells: Mapping[tuple[str, str], SuiteCell], *, task: str | None = None,
                            measures: Sequence[str] = ("accuracy",), measure: str | None = None) -> Explorer:
    """Explorer: accuracy or training loss against training step, one line per scheme.

    Each line is the mean over seeds (at the chosen learning rate) of the learning curve
    stored in the runs' histories, so the budget every scheme had is visible.

    Args:
        cells: from :func:`choose_learning_rates`; every task must hold the same schemes.
        task: the task shown first (default: the first).
        measures: the curves to offer, names of :data:`CURVE_MEASURES`: ``"accuracy"`` (on
            fresh test sequences at the training length; needs ``curve_examples``) and/or
            ``"training loss"`` (bits per token; for a language model, whose accuracy says little).
        measure: the one shown first (default: the first of ``measures``).

    Returns:
        An Explorer with a control ``task`` when there are several tasks and a control
        ``measure`` when there are several measures; trace ``i`` is the ``i``-th scheme.

    Raises:
        ValueError: the tasks do not share the same schemes, runs lack a learning curve, a
            measure is unknown, or there is nothing to choose (one task and one measure).
    """
    _check_cells("cells", cells)
    check_instance("measures", measures, (list, tuple), what="a list of names of CURVE_MEASURES")
    if not measures or len(set(measures)) != len(measures):
        raise ValueError(f"measures must name one or more distinct curves of {list(CURVE_MEASURES)}, got {measures!r}")
    unknown = [name for name in measures if name not in CURVE_MEASURES]
    if unknown:
        raise ValueError(f"measures must name curves of {list(CURVE_MEASURES)}, got {unknown[0]!r} in {measures!r}")
    measure = measures[0] if measure is None else check_choice("measure", measure, list(measures))
    tasks = list(dict.fromkeys(t for t, _ in cells))
    task = tasks[0] if task is None else check_choice("task", task, tasks)
    if len(tasks) == 1 and len(measures) == 1:
        raise ValueError(f"nothing to choose: cells hold one task ({tasks[0]!r}) and measures one curve "
                         f"({measures[0]!r}); pass more measures, e.g. measures=('training loss', 'accuracy')")
    labels = [label for t, label in cells if t == tasks[0]]
    for other in tasks:
        if [label for t, label in cells if t == other] != labels:
            raise ValueError(f"task {other!r} has other schemes than {tasks[0]!r}; the explorer needs the same ones")
    steps = curve(cells[tasks[0], labels[0]].runs, CURVE_MEASURES[measures[0]].key)[0]
    fig = new_figure(
        title="Learning curves", x_title="training step", y_title=CURVE_MEASURES[measure].axis_title,
        alt=f"Line chart of {' or '.join(measures)} against training step, one line per position scheme, "
        "for the chosen setting: the mean over seeds at each scheme's chosen learning rate.", height=440)
    styles = cell_styles(cells[tasks[0], label] for label in labels)
    for label in labels:
        colour, dash, symbol = styles[label]
        fig.add_scatter(x=steps, y=[0.0] * len(steps), mode="lines+markers", name=label,
                        line=dict(color=colour, width=2, dash=dash), marker=dict(size=6, symbol=symbol))

    def update(task: str = task, measure: str = measure) -> Frame:
        shown = CURVE_MEASURES[measure]
        traces = {}
        for index, label in enumerate(labels):
            xs, means, _ = curve(cells[task, label].runs, shown.key)
            traces[index] = {"x": xs, "y": [shown.scale * m for m in means]}
        return Frame(traces=traces, layout=_curve_layout(measure, task))

    config = cells[tasks[0], labels[0]].runs[0].config
    sequences = f"{config['curve_examples']} test sequences" if "curve_examples" in config else "test sequences"
    every = f"every {steps[1] - steps[0]} steps" if len(steps) > 1 else f"at step {steps[0]}"
    controls = ([Control("task", tasks, default=task, label="task")] if len(tasks) > 1 else []) + (
        [Control("measure", list(measures), default=measure, label="curve")] if len(measures) > 1 else [])
    chosen = " and ".join(["a task"] * (len(tasks) > 1) + ["a curve"] * (len(measures) > 1))
    words = "; or ".join(CURVE_MEASURES[name].caption.format(sequences=sequences, every=every) for name in measures)
    return Explorer(fig, update, controls,
                    caption=f"Choose {chosen}. Mean over seeds of {words}, each scheme at its chosen learning rate.")
