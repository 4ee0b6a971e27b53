"""The explorer of :mod:`posenc.order`: attention outputs of a sentence and its reorderings."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from posenc.checks import check_nonnegative_int, check_positive_int
from posenc.interactive import MAX_FRAMES, Control, Explorer, Frame
from posenc.order import (
    MAX_EXPLORER_WORDS,
    POSITION_MODES,
    as_words,
    embed_words,
    permute_rows,
    random_attention,
    self_attention,
    with_positions,
)
from posenc.plots import DIVERGING, describe

__all__ = ["order_explorer"]


def order_explorer(words: Sequence[str] | str, *, d_model: int = 8, seed: int = 0) -> Explorer:
    """Explorer: reorder the words, choose how positions enter, compare outputs token by token.

    Left: attention outputs for the original order. Right: outputs for the reordered
    sentence, rows put back in the original word order. Identical panels mean the
    reordering changed nothing but the order of the outputs.

    Args:
        words: a sentence (``"dog bites the man"``, split on whitespace) or a sequence of words;
            1 to :data:`posenc.order.MAX_EXPLORER_WORDS` words, because the static page holds
            every reordering for every position mode (``n! x 3`` frames, at most 400). The count
            is checked before any attention runs.
        d_model: width of the word vectors; seed: seed of the words and the attention weights.
    """
    words = as_words(words)
    d_model = check_positive_int("d_model", d_model)
    seed = check_nonnegative_int("seed", seed)
    frames = math.factorial(len(words)) * len(POSITION_MODES) if len(words) <= MAX_EXPLORER_WORDS + 1 else None
    if frames is None or frames > MAX_FRAMES:
        raise ValueError(
            f"words must hold at most {MAX_EXPLORER_WORDS} words, got {len(words)} ({' '.join(words)[:60]!r}): the "
            f"explorer shows every reordering for each of {len(POSITION_MODES)} position modes, "
            f"{len(words)}! x {len(POSITION_MODES)} frames, and a page holds at most {MAX_FRAMES}; pick "
            f"{MAX_EXPLORER_WORDS} of them, or compare two orders with posenc.order.equivariance_gap"
        )
    x = embed_words(words, d_model=d_model, seed=seed)
    weights = random_attention(d_model, seed=seed + 1)
    # A sentence with a repeated word has fewer distinct reorderings than n!: each is offered once.
    by_label: dict[str, tuple[int, ...]] = {}
    for order in itertools.permutations(range(len(words))):
        by_label.setdefault(" ".join(words[i] for i in order), order)
    labels, orders = list(by_label), list(by_label.values())
    # rows are named by word; a repeated word gets its place, so that no two rows share a name
    rows = [f"{word} ({i + 1})" if words.count(word) > 1 else word for i, word in enumerate(words)]
    dims = [f"dim {d}" for d in range(d_model)]

    def outputs(order: Sequence[int], mode: str) -> torch.Tensor:
        out, _ = self_attention(with_positions(permute_rows(x, order), mode), weights, causal=mode == "causal mask")
        # Row r of `out` belongs to word order[r]; put rows back in the original word order.
        back = torch.empty_like(out)
        back[list(order)] = out
        return back

    limit = float(max(outputs(o, m).abs().max() for o in orders for m in POSITION_MODES))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("original order", "reordered, rows matched by word"),
                        horizontal_spacing=0.12)
    for col in (1, 2):
        fig.add_trace(
            go.Heatmap(z=[[0.0]], x=dims, y=rows, colorscale=DIVERGING, zmin=-limit, zmax=limit,
                       showscale=col == 2, colorbar=dict(title=dict(text="output value"))),
            row=1, col=col,
        )
        fig.update_yaxes(autorange="reversed", title_text="word" if col == 1 else None, row=1, col=col)
        fig.update_xaxes(title_text="output dimension", row=1, col=col)
    fig.update_layout(height=380, title=dict(text="", font=dict(size=14)), margin=dict(t=80))
    describe(
        fig,
        alt="Two heatmaps of self-attention outputs, one row per word: left for the original sentence, "
        "right for a reordered sentence with rows matched back to words.",
    )

    def update(order: str, mode: str) -> Frame:
        permutation = orders[labels.index(order)]
        original = outputs(tuple(range(len(words))), mode)
        reordered = outputs(permutation, mode)
        gap = float((reordered - original).abs().max())
        verdict = "same vectors, only reordered" if gap < 1e-5 else "different vectors"
        return Frame(
            traces={0: {"z": original.numpy()}, 1: {"z": reordered.numpy()}},
            layout={"title.text": f"input “{order}”, positions: {mode}<br>max difference {gap:.3f}: {verdict}"},
        )

    return Explorer(
        fig,
        update,
        [Control("order", labels, label="word order"), Control("mode", list(POSITION_MODES), label="positions")],
        title="Self-attention outputs of a sentence and of a reordering",
        # On paper: a swap and the full reversal, under each way positions enter.
        print_settings=[{"order": order, "mode": mode} for order in (labels[1], labels[-1]) for mode in POSITION_MODES],
        caption="Pick a word order and how position enters attention. With no positions the two panels "
        "are identical for every order.",
    )
