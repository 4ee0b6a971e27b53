"""Figures, the explorer and two small demonstrations for the learned-embeddings chapter.

* :func:`row_gradient_norms` and :func:`train_with_short_inputs` show that a learned
  table is trained row by row: only positions that occur in a batch get a gradient (with
  Adam, a row that had a gradient once keeps moving afterwards; a row that never had one
  keeps its initial value, see :func:`posenc.learned.row_steps`).
* :func:`init_histograms_figure` and :func:`init_similarity_figure` put the four
  initialisations of :mod:`posenc.learned` side by side.
* :func:`training_explorer`: the table of a :func:`train_with_short_inputs` run and its
  cosine-similarity matrix at the training steps it recorded (a slider over the steps).
* :func:`learned_explorer`: pick a strategy, ``d_model`` and ``L_max``; see the initial table
  and its cosine-similarity matrix (both subsampled to at most ``max_cells`` per axis, in the
  live kernel as on the static page, so both show the same thing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch.nn import functional as F

from posenc.analysis import cosine_similarity_matrix
from posenc.checks import (
    check_choice_sequence,
    check_even_int,
    check_instance,
    check_int_sequence,
    check_mapping,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
    check_tensor,
)
from posenc.interactive import Control, Explorer, Frame
from posenc.learned import INIT_STRATEGIES, LearnedPositionEmbedding, initial_table
from posenc.models import TinyTransformer
from posenc.plots import (
    DIVERGING,
    OKABE_ITO,
    colour,
    describe,
    new_figure,
    thin_indices,
)
from posenc.runtime import single_thread
from posenc.schemes import LearnedScheme
from posenc.sinusoidal_plots import pick_channels
from posenc.tasks import CopyOffsetTask, token_accuracy

__all__ = [
    "row_gradient_norms",
    "ShortInputRun",
    "train_with_short_inputs",
    "gradient_rows_figure",
    "row_change_figure",
    "init_histograms_figure",
    "init_similarity_figure",
    "training_explorer",
    "learned_explorer",
]


def row_gradient_norms(
    max_len: int, d_model: int, seq_len: int, *, batch: int = 4, seed: int = 0
) -> torch.Tensor:
    """Gradient norm of every row of a fresh table after one backward pass on ``seq_len`` positions.

    The loss is the sum of squares of ``x + P[:seq_len]`` for random ``x`` of shape
    ``(batch, seq_len, d_model)``: any loss would do, the point is which rows it reaches.

    Returns:
        ``(max_len,)`` float tensor; rows ``>= seq_len`` are exactly zero.
    """
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    table = LearnedPositionEmbedding(max_len, d_model, seed=seed)
    x = torch.randn(check_positive_int("batch", batch), check_positive_int("seq_len", seq_len), d_model,
                    generator=generator)
    table(x).pow(2).sum().backward()
    assert table.weight.grad is not None
    return table.weight.grad.norm(dim=1)


@dataclass(frozen=True)
class ShortInputRun:
    """Result of :func:`train_with_short_inputs`.

    Attributes:
        initial, final: the position table before and after training, ``(max_len, d_model)``.
        uses: how many training sequences reached each position, ``(max_len,)``.
        accuracy: token accuracy on fresh sequences of the training lengths.
        chance: accuracy of guessing uniformly at random.
        snapshot_steps: the steps at which the table was recorded (0 = before training).
        snapshots: the table at each of ``snapshot_steps``, ``(n_snapshots, max_len, d_model)``.
        max_length: the longest training length (rows from here on never occur).
    """

    initial: torch.Tensor
    final: torch.Tensor
    uses: torch.Tensor
    accuracy: float
    chance: float
    snapshot_steps: tuple[int, ...] = ()
    snapshots: torch.Tensor | None = None
    max_length: int = 0

    @property
    def change(self) -> torch.Tensor:
        """Euclidean distance each row moved during training, ``(max_len,)``."""
        return (self.final - self.initial).norm(dim=1)


def train_with_short_inputs(
    *,
    max_len: int = 64,
    lengths: Sequence[int] = tuple(range(8, 41)),
    d_model: int = 32,
    steps: int = 150,
    batch: int = 32,
    lr: float = 1e-2,
    seed: int = 0,
    snapshot_steps: Sequence[int] = (),
) -> ShortInputRun:
    """Train a small :class:`posenc.models.TinyTransformer` with a learned table on inputs shorter than the table.

    Task: copy the token two places back (``posenc.tasks.CopyOffsetTask``). Every step draws
    one length from ``lengths``, so short positions occur in every batch, long ones rarely,
    and rows past ``max(lengths)`` never. Plain Adam (no weight decay), so a row that never
    receives a gradient keeps its initial value exactly (a row that had a gradient once keeps
    moving through Adam's momentum, even in steps whose batch is too short to reach it).

    ``snapshot_steps`` (each in ``[0, steps]``; 0 = before training) record copies of the
    table for :func:`training_explorer`.
    """

    max_len = check_positive_int("max_len", max_len)
    lengths = list(check_int_sequence("lengths", lengths, min_len=1))
    if max(lengths) > max_len or min(lengths) < 3:
        raise ValueError(f"lengths must lie in [3, max_len={max_len}], got {min(lengths)} .. {max(lengths)}")
    steps = check_positive_int("steps", steps)
    batch, lr = check_positive_int("batch", batch), check_positive_float("lr", lr)
    wanted = sorted(set(check_int_sequence("snapshot_steps", snapshot_steps, nonnegative=True)))
    if wanted and wanted[-1] > steps:
        raise ValueError(f"snapshot_steps must lie in [0, steps={steps}], got {wanted[-1]}")
    torch.manual_seed(check_nonnegative_int("seed", seed))
    task = CopyOffsetTask(n_symbols=16, offset=2)
    model = TinyTransformer(task.vocab_size, task.n_outputs, d_model=d_model, n_heads=4, n_layers=1,
                            max_len=max_len, position="learned", position_options={"init": "bert"})
    scheme = model.position
    assert isinstance(scheme, LearnedScheme)  # position="learned" above
    weight = scheme.weight
    initial = weight.detach().clone()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed + 1)
    uses = torch.zeros(max_len, dtype=torch.long)
    snapshots = [initial.clone()] if 0 in wanted else []
    with single_thread():
        for step in range(1, steps + 1):
            seq_len = lengths[int(torch.randint(len(lengths), (1,), generator=generator))]
            tokens, targets = task.sample(batch, seq_len, generator)
            loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=-100)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            uses[:seq_len] += batch
            if step in wanted:
                snapshots.append(weight.detach().clone())
    with single_thread(), torch.no_grad():
        test_generator = torch.Generator().manual_seed(seed + 2)
        scores = []
        for seq_len in lengths:
            tokens, targets = task.sample(64, seq_len, test_generator)
            scores.append(token_accuracy(model(tokens).argmax(-1), targets))
    return ShortInputRun(initial, weight.detach().clone(), uses, float(np.mean(scores)), 1.0 / task.n_outputs,
                         snapshot_steps=tuple(wanted), snapshots=torch.stack(snapshots) if snapshots else None,
                         max_length=max(lengths))


def gradient_rows_figure(grad_norms: torch.Tensor, seq_len: int) -> go.Figure:
    """Bar chart of per-row gradient norms from :func:`row_gradient_norms`."""
    check_tensor("grad_norms", grad_norms, ndim=1, floating=True, shape="(max_len,)")
    seq_len = check_positive_int("seq_len", seq_len)
    if seq_len > grad_norms.shape[0]:
        raise ValueError(f"seq_len must be <= the {grad_norms.shape[0]} rows of grad_norms, got {seq_len}")
    values = grad_norms.detach().numpy()
    fig = new_figure(
        title=f"One backward pass on {seq_len} positions: which rows get a gradient?",
        x_title="row of the position table (position)",
        y_title="gradient norm of the row",
        alt=f"Bar chart: rows 0 to {seq_len - 1} of the position table have a non-zero gradient, every later "
        "row has exactly zero.",
        height=320,
    )
    colors = [OKABE_ITO[0] if i < seq_len else OKABE_ITO[1] for i in range(len(values))]
    fig.add_trace(go.Bar(x=list(range(len(values))), y=values, marker_color=colors, name="gradient norm"))
    fig.add_vline(x=seq_len - 0.5, line_dash="dash", line_color="#444",
                  annotation_text=f"seq_len = {seq_len}", annotation_position="top right")
    return fig


def row_change_figure(run: ShortInputRun) -> go.Figure:
    """How far each row moved in training, next to how often its position occurred."""
    check_instance("run", run, ShortInputRun, what="a ShortInputRun (train_with_short_inputs(...))")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    positions = list(range(run.initial.shape[0]))
    fig.add_trace(go.Bar(x=positions, y=run.uses.numpy(), name="training sequences that reached the row",
                         marker_color=OKABE_ITO[4], opacity=0.55), secondary_y=True)
    fig.add_trace(go.Scatter(x=positions, y=run.change.numpy(), mode="lines+markers", name="distance moved",
                             line=dict(color=OKABE_ITO[5])), secondary_y=False)
    fig.update_xaxes(title_text="row of the position table (position)")
    fig.update_yaxes(title_text="‖row after − row before‖", secondary_y=False)
    fig.update_yaxes(title_text="sequences that reached the row (count)", secondary_y=True, showgrid=False)
    fig.update_layout(height=380, title=dict(text="Rows that never occur in training do not move"),
                      legend=dict(orientation="h", y=-0.25))
    return describe(
        fig,
        alt="Line chart of how far each position row moved during training, over bars of how many training "
        "sequences reached that row. Rows used in every batch moved most; rows never used did not move at all.",
    )


def _panels(names: Sequence[str], *, spacing: tuple[float, float], columns: int = 2) -> tuple[go.Figure, list]:
    """A subplot grid with one titled panel per name, ``columns`` per row, and each panel's (row, col)."""
    n_rows = -(-len(names) // columns)
    fig = make_subplots(rows=n_rows, cols=columns, subplot_titles=list(names), horizontal_spacing=spacing[0],
                        vertical_spacing=spacing[1])
    return fig, [(index // columns + 1, index % columns + 1) for index in range(len(names))]


def _finish_panels(fig: go.Figure, cells: list, *, x_title: str, y_title: str, panel_height: int, title: str,
                   alt: str) -> go.Figure:
    """Axis titles on every panel, a height that grows with the rows, a title and alt text."""
    for row, col in cells:
        fig.update_xaxes(title_text=x_title, row=row, col=col)
        fig.update_yaxes(title_text=y_title, row=row, col=col)
    fig.update_layout(height=panel_height * cells[-1][0] + 60, title=dict(text=title))
    return describe(fig, alt=alt)


def init_histograms_figure(tables: Mapping[str, torch.Tensor]) -> go.Figure:
    """One histogram of entry values per initial table (each panel with its own value range), two per row."""
    names = _check_tables(tables)
    fig, cells = _panels(names, spacing=(0.1, 0.2))
    for index, (name, (row, col)) in enumerate(zip(names, cells, strict=True)):
        # Bin here rather than in the browser: the page then carries 60 bars, not every entry.
        density, edges = np.histogram(tables[name].detach().double().flatten().numpy(), bins=60, density=True)
        fig.add_trace(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=density.round(3), width=np.diff(edges),
                             showlegend=False, marker_color=colour(index), name=name), row=row, col=col)
    return _finish_panels(
        fig, cells, x_title="entry value", y_title="density", panel_height=300,
        title="Values of the initial tables (note the different x ranges)",
        alt="Histograms of initial table entries, one per initialisation. BERT's is a normal cut off sharply at "
        "plus and minus 0.04; GPT-2's a narrower untruncated normal; the uniform one is flat between -0.1 and "
        "0.1; the sinusoidal one has a tall spike at 1 and mass spread between -1 and 1.",
    )


def init_similarity_figure(tables: Mapping[str, torch.Tensor], *, max_cells: int = 48) -> go.Figure:
    """Cosine-similarity matrices of several tables, two per row, on one colour scale [-1, 1].

    Each matrix shows at most ``max_cells`` evenly spaced positions per axis (the axes give
    the real positions), which keeps the page light.
    """
    names = _check_tables(tables)
    max_cells = check_positive_int("max_cells", max_cells)
    fig, cells = _panels(names, spacing=(0.12, 0.14))
    for index, (name, (row, col)) in enumerate(zip(names, cells, strict=True)):
        table = tables[name]
        shown = thin_indices(table.shape[0], max_cells)
        sim = cosine_similarity_matrix(table[torch.as_tensor(shown)]).round(2)
        fig.add_trace(go.Heatmap(z=sim, x=shown, y=shown, zmin=-1, zmax=1, colorscale=DIVERGING,
                                 showscale=index == 0, colorbar=dict(title=dict(text="cosine"))), row=row, col=col)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False)
    return _finish_panels(
        fig, cells, x_title="position", y_title="position", panel_height=330,
        title="Cosine similarity between positions of the initial tables",
        alt="Heatmaps of cosine similarity between positions, one per initialisation. The random tables show only "
        "a bright diagonal (every position is nearly orthogonal to every other); the sinusoidal table shows a "
        "smooth band: nearby positions are similar.",
    )


def _table_and_cosine_figure(value_scale: dict[str, float]) -> go.Figure:
    """Two empty heatmaps side by side: table values (colour scale ``value_scale``, e.g.
    ``{"zmid": 0}``) and cosine similarity (fixed to [-1, 1]); traces 0 and 1."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("table values", "cosine similarity"),
                        horizontal_spacing=0.24)
    # The left colour bar sits in the gap between the panels (the left panel ends at x = 0.38).
    fig.add_trace(go.Heatmap(z=[[0.0]], colorscale=DIVERGING, **value_scale,
                             colorbar=dict(title=dict(text="value"), x=0.4, thickness=12)), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[0.0]], colorscale=DIVERGING, zmin=-1, zmax=1,
                             colorbar=dict(title=dict(text="cosine"), thickness=12)), row=1, col=2)
    fig.update_yaxes(autorange="reversed", showgrid=False, title_text="position")
    fig.update_xaxes(showgrid=False)
    fig.update_xaxes(title_text="dimension", row=1, col=1)
    fig.update_xaxes(title_text="position", row=1, col=2)
    return fig


def training_explorer(run: ShortInputRun) -> Explorer:
    """Explorer: the position table of a training run (left) and its cosine similarity (right), step by step.

    One control, a slider over ``run.snapshot_steps`` (precomputed: the live kernel and the
    static page show the same recorded tables). A dashed line marks the first row that no
    training sequence reached; the title gives the mean cosine of neighbouring rows among
    the rows that were used.

    Args:
        run: a :func:`train_with_short_inputs` result with ``snapshot_steps`` recorded.
    """
    check_instance("run", run, ShortInputRun, what="a ShortInputRun (train_with_short_inputs(...))")
    if run.snapshots is None or len(run.snapshot_steps) < 2:
        raise ValueError(
            "run must hold at least two snapshots: call train_with_short_inputs(..., snapshot_steps=(0, ...)), "
            f"got snapshot_steps={run.snapshot_steps!r}"
        )
    snapshots = run.snapshots
    max_len, d_model = snapshots.shape[1:]
    used = run.max_length
    limit = float(snapshots.abs().max())
    positions, dims = list(range(max_len)), list(range(d_model))
    fig = _table_and_cosine_figure(dict(zmin=-limit, zmax=limit))
    if used < max_len:
        fig.add_hline(y=used - 0.5, line_dash="dash", line_color="#444", row=1, col=1)
        fig.add_hline(y=used - 0.5, line_dash="dash", line_color="#444", row=1, col=2)
        fig.add_vline(x=used - 0.5, line_dash="dash", line_color="#444", row=1, col=2)
    fig.update_layout(height=450, margin=dict(t=90))
    describe(
        fig,
        alt="Left: heatmap of a learned position table during training, positions down, dimensions across. "
        "Right: heatmap of the cosine similarity between its positions. A slider picks the training step; "
        f"dashed lines mark position {used}, the first one no training sequence reached. At step 0 both "
        "show noise and a bright diagonal; as training goes on, a band of similar neighbours forms among the "
        "used positions, while the rows past the dashed line keep their initial noise.",
    )
    index = {step: i for i, step in enumerate(run.snapshot_steps)}

    def update(step: int) -> Frame:
        table = snapshots[index[int(step)]]
        sim = cosine_similarity_matrix(table)
        neighbours = float(F.cosine_similarity(table[: used - 1], table[1:used], dim=1).mean())
        moved = int(((table - snapshots[0]).abs().amax(dim=1) > 0).sum())
        return Frame(
            traces={0: {"z": table.numpy().round(3), "x": dims, "y": positions},
                    1: {"z": sim.round(2), "x": positions, "y": positions}},
            layout={"title.text": f"training step {int(step)} · rows changed so far: {moved} of {max_len}<br>"
                                  f"<sup>mean cosine of neighbouring positions 0–{used - 1}: {neighbours:.2f}</sup>"},
        )

    return Explorer(
        fig,
        update,
        [Control("step", list(run.snapshot_steps), label="training step")],
        title="A learned position table while it trains, and its cosine similarity",
        caption="Move the slider through training. Among the positions that occur in training, neighbours become "
        "similar (a band along the diagonal); rows past the dashed line never receive a gradient and keep "
        "their initial noise.",
    )


#: The live sliders of :func:`learned_explorer`: ``(min, max, step)``; the grid values must lie in them.
D_MODEL_RANGE: tuple[int, int, int] = (2, 512, 2)
MAX_LEN_RANGE: tuple[int, int, int] = (8, 1024, 8)


def _check_grid(name: str, values: object, live: tuple[int, int, int]) -> tuple[int, ...]:
    checked = check_int_sequence(name, values, min_len=1)
    for index, value in enumerate(checked):
        if not live[0] <= value <= live[1]:
            raise ValueError(f"{name}[{index}] must be in [{live[0]}, {live[1]}] (the live slider's range), got {value}")
    return checked


def _check_tables(tables: object) -> list[str]:
    check_mapping("tables", tables, min_len=1, what="a dict of name -> (max_len, d_model) table", item="table")
    assert isinstance(tables, Mapping)
    for name, table in tables.items():
        check_tensor(f"tables[{name!r}]", table, ndim=2, floating=True, shape="(max_len, d_model)")
    return list(tables)


def _learned_print_settings(inits: Sequence[str], d_models: Sequence[int]) -> list[dict[str, Any]] | None:
    """Every initialisation at one width, then the first one wider (random rows grow more
    orthogonal as d_model grows); ``None`` (the explorer's default choice) when that is too few."""
    settings = [{"init": init, "d_model": d_models[min(1, len(d_models) - 1)]} for init in inits]
    wider = {"init": inits[0], "d_model": d_models[-1]}
    if wider not in settings:
        settings.append(wider)
    return settings[:6] if len(settings) >= 2 else None


def learned_explorer(
    *,
    inits: Sequence[str] = INIT_STRATEGIES,
    d_models: Sequence[int] = (16, 64, 256),
    max_lens: Sequence[int] = (64, 512),
    max_cells: int = 40,
    seed: int = 0,
) -> Explorer:
    """Explorer: initial table (left) and its cosine-similarity matrix (right).

    Controls: strategy (buttons), ``d_model`` and ``L_max`` (sliders; any even value live).
    Both panels show at most ``max_cells`` evenly spaced positions (and dimensions), so the
    static page stays light; axis labels give the real position and dimension numbers.
    """
    inits = check_choice_sequence("inits", inits, INIT_STRATEGIES, min_len=1)
    d_models = _check_grid("d_models", d_models, D_MODEL_RANGE)
    if "sinusoidal" in inits:  # the sinusoidal table pairs its channels (the live slider steps by 2)
        for index, d_model in enumerate(d_models):
            check_even_int(f"d_models[{index}]", d_model, why="init='sinusoidal' pairs channels as sin/cos")
    max_lens = _check_grid("max_lens", max_lens, MAX_LEN_RANGE)
    max_cells = check_positive_int("max_cells", max_cells)
    seed = check_nonnegative_int("seed", seed)
    fig = _table_and_cosine_figure(dict(zmid=0))
    fig.update_layout(height=450, margin=dict(t=90))
    describe(
        fig,
        alt="Left: heatmap of an initial position table, positions down, dimensions across. Right: heatmap of "
        "the cosine similarity between its positions. Controls choose the strategy, width and length.",
    )

    def update(init: str, d_model: int, max_len: int) -> Frame:
        d_model, max_len = int(d_model), int(max_len)
        if init == "sinusoidal" and d_model % 2:
            d_model += 1  # the sinusoidal table needs an even width (live sliders step by 2); the title says it
        table = initial_table(max_len, d_model, init, seed=seed)
        # Whole sine/cosine pairs of a sinusoid-initialised table, never one channel of a pair.
        rows, cols = thin_indices(max_len, max_cells), pick_channels(d_model, max_cells).numpy()
        shown = table[torch.as_tensor(rows)]
        limit = float(shown.abs().max())
        sim = cosine_similarity_matrix(shown)
        neighbours = float(F.cosine_similarity(table[:-1], table[1:], dim=1).mean()) if max_len > 1 else 1.0
        step = "" if len(rows) == max_len else f" · {len(rows)} of {max_len} positions shown"
        return Frame(
            traces={
                0: {"z": shown[:, torch.as_tensor(cols)].numpy().round(4), "x": cols, "y": rows,
                    "zmin": -limit, "zmax": limit},
                1: {"z": sim.round(2), "x": rows, "y": rows},
            },
            layout={"title.text": f"{init} · d_model={d_model} · L_max={max_len}{step}<br>"
                                  f"<sup>mean cosine of neighbouring positions: {neighbours:.2f}</sup>"},
        )

    return Explorer(
        fig,
        update,
        [
            Control("init", list(inits), label="initialisation"),
            Control("d_model", list(d_models), label="d_model", live=D_MODEL_RANGE),
            Control("max_len", list(max_lens), label="L_max", live=MAX_LEN_RANGE),
        ],
        title="Four ways to start a learned table, and the cosine similarity of its positions",
        # On paper: every initialisation at one width, then the first one wider (random rows
        # grow more orthogonal as d_model grows).
        print_settings=_learned_print_settings(inits, d_models),
        caption="Choose an initialisation, a width and a length. Random initialisations give nearly orthogonal "
        "positions (cosine near 0 off the diagonal, closer to 0 for larger d_model); the sinusoidal one "
        "starts with smooth structure.",
    )
