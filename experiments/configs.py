"""What every stored grid of ``book/data`` trains: the book's experiments, defined in one place.

``make grids`` (:mod:`experiments.grids`) runs them; the chapters read the configurations
back from the stored files (:func:`posenc.results.load_results`). Scheme lists come from
the registry (:func:`posenc.registry.builtin_specs`): a built-in scheme's entry says which
option sets chapter 6 compares (``variants``) and whether the task suites train it
(``suite_options``), so a new scheme is one registry entry. A scheme a reader registers
joins no stored grid, and ``make grids --dry-run`` reports any difference between the
planned runs and a stored file.

Each ``*_configs`` function returns ``(config, n_seeds)`` pairs in file order; the runner
trains each config with seeds ``0 .. n_seeds - 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from posenc.extrapolate import STRATEGIES
from posenc.registry import builtin_specs
from posenc.results import RunResult, scheme_label
from posenc.rope_scaling import YARN_RAMPS, yarn_zones
from posenc.train import TrainConfig

Cells = list[tuple[TrainConfig, int]]


def _comparison_schemes() -> list[tuple[str, dict[str, Any]]]:
    """Chapter 6's schemes: every built-in scheme with each of its ``variants``, in registry order."""
    return [(spec.name, dict(options)) for spec in builtin_specs() for options in spec.variants]


def suite_schemes() -> list[tuple[str, dict[str, Any]]]:
    """The task suites' schemes: every built-in scheme with ``suite_options``, in registry order."""
    return [(spec.name, dict(spec.suite_options)) for spec in builtin_specs() if spec.suite_options is not None]


def _has_table(scheme: str) -> bool:
    return next(spec for spec in builtin_specs() if spec.name == scheme).scheme_type.has_table


def ch6_configs() -> Cells:
    """Chapter 6: copy-offset task, bidirectional encoder, length 16, 600 steps for everyone.

    Five seeds for the main comparison, three for the rest.
    """
    base = TrainConfig(task="copy_offset", seq_len=16, steps=600, batch_size=32, lr=3e-3, d_model=64, n_heads=4,
                       n_layers=2, log_every=25, curve_examples=128, eval_examples=512)
    cells: Cells = []
    # (a) every scheme at the training length, fresh data every step
    cells += [(replace(base, scheme=s, position_options=o), 5) for s, o in _comparison_schemes()]
    # (a') token embeddings at BERT's scale (std 0.02) instead of N(0, 1)
    cells += [(replace(base, scheme=s, position_options=o, token_init_std=0.02), 3)
              for s, o in [("sinusoidal", {})] + [("learned", {"init": i}) for i in ("bert", "gpt2", "uniform")]]
    # (b) low-data regime: a fixed training set of n sequences
    low = [("sinusoidal", {}), ("learned", {"init": "bert"}), ("learned", {"init": "sinusoidal"}), ("rope", {})]
    cells += [(replace(base, scheme=s, position_options=o, n_train_examples=n), 3)
              for n in (16, 64, 256) for s, o in low]
    # (c) concatenate instead of add (half the width for positions)
    cells += [(replace(base, scheme=s, position_options=o, combine="concat"), 3)
              for s, o in [("sinusoidal", {}), ("learned", {"init": "bert"}), ("learned", {"init": "sinusoidal"})]]
    return cells


def ch7_configs() -> Cells:
    """Chapter 7: copy-offset, causal, trained at length 16, tested at 16, 24, 32, 64 (five seeds)."""
    base = TrainConfig(task="copy_offset", seq_len=16, steps=600, batch_size=32, lr=3e-3, d_model=64, n_heads=4,
                       n_layers=2, causal=True, eval_lengths=(16, 24, 32, 64),
                       eval_extrapolations=("clip", "modular", "interpolate"), eval_examples=512,
                       per_position=True, log_every=50)
    cells = [("none", {}), ("sinusoidal", {}), ("learned", {"init": "bert"}), ("learned", {"init": "sinusoidal"}),
             ("hybrid-scaled-sinusoid", {}), ("rope", {}), ("alibi", {})]
    return [(replace(base, scheme=s, position_options=o), 5) for s, o in cells]


#: The file next to the ch7 grid that holds the model chapter 7 loads (training it again there would
#: be the chapter's slowest cell; tests/test_checkpoint.py trains it again and compares every weight).
CH7_CHECKPOINT = "ch7_model.safetensors"


def ch7_checkpoints() -> dict[str, TrainConfig]:
    """Chapter 7's model: the grid's first learned-table run (BERT's init, seed 0), as trained."""
    first = next(config for config, _ in ch7_configs() if config.scheme == "learned")
    assert first.position_options == {"init": "bert"}
    return {CH7_CHECKPOINT: replace(first, seed=0)}


#: The tasks of the suite, one per kind of rule (``posenc.tasks``): local relative, long-range content, absolute.
SUITE_TASKS = ("copy_offset", "marker_recall", "copy_half")
#: The learning rates every scheme of the causal suite is tried with: two decades around the
#: earlier sweep's (1e-3 .. 1e-2), so that the best rate on validation can be an interior one.
SUITE_LRS = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
#: With and without an anchor token in front of every input (a language model's BOS, an encoder's [CLS]).
ANCHORS = (False, True)
#: One more rate where a cell's best rate on validation was the sweep's top one: T5 on copy-half
#: without an anchor chose 3e-2, so the sweep goes a step higher there, to bracket it.
SUITE_EXTRA_LRS: dict[tuple[str, str, bool], tuple[float, ...]] = {("copy_half", "t5_bias", False): (1e-1,)}
#: Seeds per cell of the suites: the set-up (anchor, learning rate) varies more than the seeds do,
#: so the budget goes to settings.
SUITE_SEEDS = 3


def suite_configs() -> Cells:
    """Chapters 6, 7, 9 and 10: three tasks x the suite's schemes x anchor or not x five learning rates
    (six where the fifth was a cell's best, :data:`SUITE_EXTRA_LRS`), causal, three seeds.

    Same budget for every scheme (1,000 steps of 32 sequences at length 16); each run
    records a learning curve, its validation accuracy (for choosing the learning rate),
    accuracy at 32 and 64 tokens overall and on the new positions only, per token and per
    whole sequence, and the result of 60 fine-tuning steps at 32 tokens (for a learned table,
    after each workaround).
    """
    base = TrainConfig(seq_len=16, steps=1000, batch_size=32, d_model=64, n_heads=4, n_layers=2, causal=True,
                       eval_lengths=(32, 64), eval_examples=256, per_position=True, score_new_positions=True,
                       validation_examples=256, log_every=100, curve_examples=128, finetune_steps=60, finetune_len=32,
                       exact_match=True)
    cells: Cells = []
    for task in SUITE_TASKS:
        for anchor in ANCHORS:
            for scheme, options in suite_schemes():
                workarounds = STRATEGIES if _has_table(scheme) else ()
                for lr in (*SUITE_LRS, *SUITE_EXTRA_LRS.get((task, scheme, anchor), ())):
                    cells.append((replace(base, task=task, scheme=scheme, position_options=options, lr=lr,
                                          bos_token=anchor, eval_extrapolations=workarounds), SUITE_SEEDS))
    return cells


#: The learning rates of the encoder suite (600 steps, chapter 6's budget).
ENCODER_LRS = (1e-3, 3e-3, 1e-2)
#: One more rate for the bias schemes on the encoder's absolute tasks, where 1e-2 was their best.
ENCODER_BIAS_EXTRA_LR = 3e-2
#: And one more where that rate was still the best: T5 on copy-half without an anchor.
ENCODER_EXTRA_LRS: dict[tuple[str, str, bool], tuple[float, ...]] = {("copy_half", "t5_bias", False): (1e-1,)}


def encoder_suite_configs() -> Cells:
    """Chapter 6: the other tasks in the encoder, on chapter 6's budget (length 16, 600 steps), three seeds.

    Tasks: marker_recall (long-range content), copy_half (absolute) and reverse (absolute,
    length-tied; an encoder-only task). Every scheme of the suites, without and with a
    ``[CLS]``-like anchor token, at three learning rates chosen on a validation split. On
    the two absolute tasks the bias schemes (ALiBi, T5) did best at the top rate, so the
    sweep goes one rate higher for them there (:data:`ENCODER_BIAS_EXTRA_LR`), to bracket it, and
    one more where that was still the best (:data:`ENCODER_EXTRA_LRS`).
    """
    base = replace(ch6_configs()[0][0], validation_examples=256, exact_match=True, curve_examples=128,
                   log_every=50)

    def rates(task: str, scheme: str, anchor: bool) -> tuple[float, ...]:
        extra = task in ("copy_half", "reverse") and scheme in ("alibi", "t5_bias")
        common = (*ENCODER_LRS, ENCODER_BIAS_EXTRA_LR) if extra else ENCODER_LRS
        return (*common, *ENCODER_EXTRA_LRS.get((task, scheme, anchor), ()))

    return [(replace(base, task=task, scheme=s, position_options=o, bos_token=anchor, lr=lr), SUITE_SEEDS)
            for task in ("marker_recall", "copy_half", "reverse") for anchor in ANCHORS
            for s, o in suite_schemes() for lr in rates(task, s, anchor)]


#: One more rate where the top one was a cell's best: ALiBi without an anchor (symmetric, no way to
#: tell the two sides apart) chose 1e-2.
CH6_SUITE_EXTRA_LRS: dict[tuple[str, bool], tuple[float, ...]] = {("alibi", False): (3e-2,)}


def ch6_suite_configs() -> Cells:
    """Chapter 6's own comparisons on copy-offset in the encoder suite's set-up: every scheme of the
    suites, plus the sinusoid and the BERT-style table concatenated instead of added; without and with
    a ``[CLS]``-like anchor; the encoder suite's three learning rates (one more where the top one was
    best, :data:`CH6_SUITE_EXTRA_LRS`); three seeds; the learning curve every 25 steps (for how fast
    each scheme gets there)."""
    base = replace(encoder_suite_configs()[0][0], task="copy_offset", log_every=25)
    schemes = [*((s, o, "add") for s, o in suite_schemes()),
               ("sinusoidal", {}, "concat"), ("learned", {"init": "bert"}, "concat")]
    return [(replace(base, scheme=s, position_options=o, combine=combine, bos_token=anchor, lr=lr), SUITE_SEEDS)
            for anchor in ANCHORS for s, o, combine in schemes
            for lr in (*ENCODER_LRS, *CH6_SUITE_EXTRA_LRS.get((s, anchor), ()))]


#: The learning rates of chapter 7's arms: the suite's two central ones.
ARM_LRS = (1e-3, 3e-3)
#: One more where the top one was a cell's best on validation ((arm, task, scheme) -> rates).
ARM_EXTRA_LRS: dict[tuple[str, str, str], tuple[float, ...]] = {
    **{("varied", task, scheme): (1e-2,) for task, scheme in (
        ("copy_offset", "none"), ("copy_offset", "learned"), ("copy_offset", "alibi"),
        ("copy_half", "none"), ("copy_half", "alibi"), ("copy_half", "t5_bias"))},
    **{("random", task, "sinusoidal"): (1e-2,) for task in ("copy_offset", "copy_half")},
}


def ch7_arm_configs() -> Cells:
    """Chapter 7's two extra arms, causal, anchored, at the suite's two central learning rates, three seeds.

    * Training lengths that vary (``min_seq_len=4``: each batch 4 to 16 tokens), one of the
      differences from Kazemnejad et al. (2023), every scheme of the suite.
    * Randomized positions (Ruoss et al., 2023): positions drawn from 0 .. 127 in training and
      at test, for the schemes that read positions as such (sinusoidal, learned, RoPE).

    No fine-tuning; whole-sequence scores beside per-token ones.
    """
    base = replace(suite_configs()[0][0], finetune_steps=0, finetune_len=None, bos_token=True)
    cells: Cells = []
    for task in SUITE_TASKS:
        for scheme, options in suite_schemes():
            workarounds = STRATEGIES if _has_table(scheme) else ()
            rates = (*ARM_LRS, *ARM_EXTRA_LRS.get(("varied", task, scheme), ()))
            cells += [(replace(base, task=task, scheme=scheme, position_options=options, lr=lr, min_seq_len=4,
                               eval_extrapolations=workarounds), SUITE_SEEDS) for lr in rates]
        for scheme, options in (("sinusoidal", {}), ("learned", {"init": "bert"}), ("rope", {})):
            rates = (*ARM_LRS, *ARM_EXTRA_LRS.get(("random", task, scheme), ()))
            cells += [(replace(base, task=task, scheme=scheme, position_options=options, lr=lr, random_positions=128),
                       SUITE_SEEDS) for lr in rates]
    return cells


def hybrid_suite_configs() -> Cells:
    """Chapter 8: the hybrids that run past the training length, in the suite's set-up on the local rule.

    Copy-offset, causal, length 16, the suite's budget and scores, with and without an anchor,
    the suite's five learning rates, three seeds: the sinusoid-initialised table (with the
    workarounds), the frozen sinusoid with a learned scale, and a hierarchy with one segment row
    more than four times what training needs (so it covers 64 positions and the anchor). The sinusoid and the BERT-style table
    they are compared with are the suite's own runs.
    """
    base = replace(suite_configs()[0][0], task="copy_offset")
    longest = max(base.eval_lengths)
    schemes: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
        ("learned", {"init": "sinusoidal"}, STRATEGIES), ("hybrid-scaled-sinusoid", {}, ()),
        ("hybrid-hierarchical", {"segment_len": 4, "n_segments": longest // 4 + 1}, ())]  # + 1: room for the anchor
    return [(replace(base, scheme=scheme, position_options=options, lr=lr, bos_token=anchor,
                     eval_extrapolations=workarounds), SUITE_SEEDS)
            for anchor in ANCHORS for scheme, options, workarounds in schemes for lr in SUITE_LRS]


#: Higher rates for the small tables beside tokens at std 1 ((scheme, token std) -> rates): at the
#: encoder rates they fail, with the best at the top one; a higher rate lets a small table grow
#: faster, so the sweep goes on until it brackets the best.
SCALE_EXTRA_LRS: dict[tuple[str, float], tuple[float, ...]] = {
    (scheme, 1.0): (3e-2, 1e-1) for scheme in ("learned", "hybrid-factored", "hybrid-hierarchical")}


def scale_configs() -> Cells:
    """Chapters 6, 8 and 9: do tables that start small learn, once the tokens start small too?

    Chapter 6's low-data regime (64 training sequences, copy-offset, encoder, 600 steps) for
    each table that starts at BERT's scale (learned, factored, hierarchical, frozen sinusoid
    with a learned scale): with tokens at N(0, 1) as in the other grids and at N(0, 0.02),
    the same scale; and a learned table that starts at N(0, 1) beside tokens at N(0, 1). Three
    learning rates chosen on validation (five for the small tables beside tokens at std 1, where the
    top one was best, :data:`SCALE_EXTRA_LRS`), three seeds.
    """
    base = replace(ch6_configs()[0][0], n_train_examples=LOW_DATA_EXAMPLES, validation_examples=256,
                   curve_examples=0)
    tables = [("learned", {"init": "bert"}), ("hybrid-factored", {}), ("hybrid-hierarchical", {}),
              ("hybrid-scaled-sinusoid", {})]
    cells: Cells = []
    for scheme, options in tables:
        for token_std in (1.0, 0.02):
            rates = (*ENCODER_LRS, *SCALE_EXTRA_LRS.get((scheme, token_std), ()))
            cells += [(replace(base, scheme=scheme, position_options=options, token_init_std=token_std, lr=lr),
                       SUITE_SEEDS) for lr in rates]
    cells += [(replace(base, scheme="learned", position_options={"init": "normal"}, lr=lr), SUITE_SEEDS)
              for lr in ENCODER_LRS]
    return cells


def encoder_configs() -> Cells:
    """Chapters 6 and 10: the encoder checks, on chapter 6's budget (copy-offset, length 16, 600 steps), five seeds.

    * ALiBi and no positions, each without and with a ``[CLS]``-like anchor token;
      T5's bucketed bias (which has a direction of its own).
    * Low data (64 training sequences), a 2 x 2: table init (random N(0, 0.02) or
      sinusoidal, std about 0.7) x token-embedding std (1 or 0.02), which separates the
      scale ratio of tokens to positions from the table's structure.
    """
    base = ch6_configs()[0][0]
    cells = [(replace(base, scheme=s, bos_token=bos), 5) for s in ("alibi", "none") for bos in (False, True)]
    cells.append((replace(base, scheme="t5_bias"), 5))
    cells += [(replace(base, scheme="learned", position_options={"init": init}, token_init_std=std,
                       n_train_examples=64), 5)
              for init in ("bert", "sinusoidal") for std in (1.0, 0.02)]
    return cells


#: Chapter 11's RoPE scaling methods, tested on RoPE models with the suite's budget.
SCALING_METHODS = ("pi", "ntk", "yarn", "yarn_rotations", "llama3")
#: Chapter 11's tasks: the suite's local relative rule and its long-range content task.
SCALING_TASKS = ("copy_offset", "marker_recall")
#: The learning rate the suite chose for RoPE on both tasks (on validation, chapter 7).
SCALING_ROPE_LR = 1e-2
#: A training-time base change (Xiong et al., 2023; Llama 3 uses 500,000).
SCALING_LARGE_BASE = 500_000.0


def rope_scaling_configs() -> Cells:
    """Chapter 11: stretching RoPE models trained at length 16 to 32 and 64 tokens, five seeds.

    * The suite's RoPE runs (base 10,000, the learning rate the suite chose) scored at 2x
      and 4x with every method of ``SCALING_METHODS`` (zero-shot), then fine-tuned for the
      suite's 60 steps at 32 or at 64 tokens with each method (and without one).
    * RoPE trained with base 500,000 from the start, with the suite's learning-rate sweep
      (chosen on validation like every suite cell), plainly fine-tuned at 32 or 64.

    Dynamic NTK is left out: on a full-length input it is NTK-aware scaling with
    ``s = L / 16`` (chapter 11 shows this), so its scores would repeat NTK's.
    """
    # the suite's budget as it was when this grid was made (before anchors and the wider sweep)
    base = TrainConfig(seq_len=16, steps=1000, batch_size=32, d_model=64, n_heads=4, n_layers=2, causal=True,
                       eval_lengths=(32, 64), eval_examples=256, per_position=True, score_new_positions=True,
                       validation_examples=256, log_every=100, curve_examples=128, finetune_steps=60, finetune_len=32,
                       task="copy_offset", scheme="rope")
    cells: Cells = []
    for task in SCALING_TASKS:
        for finetune_len in (32, 64):
            cells.append((replace(base, task=task, lr=SCALING_ROPE_LR, finetune_len=finetune_len,
                                  rope_scalings=SCALING_METHODS), 5))
            for lr in (1e-3, 3e-3, 1e-2):
                cells.append((replace(base, task=task, lr=lr, finetune_len=finetune_len,
                                      position_options={"base": SCALING_LARGE_BASE}), 5))
    return cells


#: The file next to the rope_scaling grid that holds the model chapter 11 looks inside.
ROPE_SCALING_CHECKPOINT = "rope_scaling_model.safetensors"


def rope_scaling_checkpoints() -> dict[str, TrainConfig]:
    """Chapter 11's model: the grid's copy-offset run with seed 0, as trained (before any fine-tune).

    Its weights are the same in the grid's runs fine-tuned at 32 and at 64 tokens (the
    fine-tunes work on copies), so this config leaves fine-tuning and the scalings out.
    """
    first = rope_scaling_configs()[0][0]
    assert first.task == "copy_offset" and first.scheme == "rope" and not first.position_options
    return {ROPE_SCALING_CHECKPOINT: replace(first, seed=0, finetune_steps=0, finetune_len=None, rope_scalings=())}


# -- chapters 8 and 10: the runs the chapter 6 and 7 grids do not have ----------------------------------
#: Seeds of the chapter 7-style runs (chapter 7 uses five).
EXTRA_SEEDS = (0, 1, 2, 3, 4)
#: Fixed training-set size of the low-data runs (one of chapter 6's sizes).
LOW_DATA_EXAMPLES = 64
#: Steps of the longer RoPE/ALiBi budget in the chapter 7 test.
LONG_STEPS = 1500
#: Seeds of the low-data runs (chapter 6 uses three for its low-data cells).
LOW_DATA_SEEDS = (0, 1, 2)
#: Seeds of the longer runs (each costs LONG_STEPS / 600 ordinary runs).
LONG_SEEDS = (0, 1, 2)
#: Chapter 6 runs whose trained position tables chapter 8 analyses.
TABLE_SCHEMES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("learned", {"init": "bert"}),
    ("learned", {"init": "sinusoidal"}),
    ("hybrid-scaled-sinusoid", {}),
    ("hybrid-factored", {}),
    ("hybrid-hierarchical", {}),
)


def bases() -> tuple[TrainConfig, TrainConfig]:
    """The chapter 6 and chapter 7 base configurations (budget, task, model size, mask)."""
    ch6 = replace(ch6_configs()[0][0], scheme="none", position_options={}, curve_examples=0)
    ch7 = replace(ch7_configs()[0][0], scheme="none", position_options={})
    return ch6, ch7


def extra_configs() -> list[tuple[TrainConfig, tuple[int, ...]]]:
    """Chapters 8 and 10, on exactly the chapter 6/7 budgets (each cell with its seeds):

    * the hybrids that chapter 6's low-data regime does not train (frozen sinusoid with
      scale and bias, factored, hierarchical), on the same fixed small training set;
    * a hierarchical table with segment rows for 4x the training length, in chapter 7's
      extrapolation test (the default hierarchy covers the training length only);
    * RoPE and ALiBi in chapter 7's test with a longer budget (does the verdict depend on it?).
    """
    ch6, ch7 = bases()
    low_data = [
        replace(ch6, scheme=scheme, position_options=options, n_train_examples=LOW_DATA_EXAMPLES)
        for scheme, options in (("hybrid-scaled-sinusoid", {}), ("hybrid-factored", {}), ("hybrid-hierarchical", {}))
    ]
    longest = max(ch7.eval_lengths)
    hierarchy = replace(ch7, scheme="hybrid-hierarchical",
                        position_options={"segment_len": 4, "n_segments": longest // 4})
    longer = [replace(ch7, scheme=scheme, steps=LONG_STEPS) for scheme in ("rope", "alibi")]
    return ([(c, LOW_DATA_SEEDS) for c in low_data] + [(hierarchy, EXTRA_SEEDS)]
            + [(c, LONG_SEEDS) for c in longer])


def table_configs() -> list[TrainConfig]:
    """Seed 0 of each chapter 6 run of ``TABLE_SCHEMES``: training is deterministic, so these are the
    very models of the stored chapter 6 grid, kept for their trained position tables."""
    ch6, _ = bases()
    return [replace(ch6, scheme=s, position_options=o, seed=0) for s, o in TABLE_SCHEMES]


def table_entry(model: torch.nn.Module, result: RunResult, n_positions: int) -> dict[str, Any]:
    """The stored record of a trained position table: scheme, options, accuracy, rows (5 decimals).

    ``n_positions`` rows, or fewer when the table has fewer (``model.position.max_len``).
    """
    limit = model.position.max_len
    rows = n_positions if limit is None else min(n_positions, limit)
    with torch.no_grad():
        table = model.position.table(rows)
    return {
        "scheme": result.config["scheme"],
        "position_options": dict(result.config["position_options"]),
        "accuracy": result.metrics["accuracy"],
        "table": [[round(float(v), 5) for v in row] for row in table.tolist()],
    }


#: The realistic regime (chapters 7 and 11): heads of width 64 trained on 512 tokens, where
#: YaRN's three zones of pairs each hold many pairs (4 kept, 12 ramped, 16 interpolated).
REALISTIC_LEN = 512
REALISTIC_D_HEAD = 64
#: Its tasks and their budgets (steps): the local rule learns in a few hundred steps; the
#: long-range lookups need the length curriculum (``curriculum_steps``) to start learning.
REALISTIC_TASKS: dict[str, int] = {"copy_offset": 300, "marker_recall": 1000, "passkey": 800}
REALISTIC_LRS = (1e-3, 3e-3)
#: Test sequences per score (each length, each set-up): 64 sequences of 2,048 tokens are one batch
#: whose attention maps take about 3 GB per process.
REALISTIC_EVAL_EXAMPLES = 64
#: A learned table that starts at the tokens' scale (std 1), beside the suite's BERT-scale table:
#: a table of 512 rows at std 0.02 next to tokens at std 1 barely learns the long-range lookup
#: within the budget (chapter 6 shows why the scales must match).
REALISTIC_TABLE = {"init": "normal"}
#: One more rate, 1e-2, where validation's best was the sweep's top rate alone (as in the suite):
#: by task, the schemes (run labels; ALiBi's eight-head arm as ``"alibi [8 heads]"``). On marker
#: recall that is almost every scheme; the table that starts at the tokens' scale gets it on both
#: tasks.
REALISTIC_EXTRA_LR = 1e-2
REALISTIC_EXTRA: dict[str, tuple[str, ...]] = {
    "marker_recall": ("none", "sinusoidal", "learned (bert)", "learned (normal)", "rope",
                      "rope [ladder=compressed, partial=0.25]", "rope [ladder=truncated, partial=0.25]",
                      "alibi [8 heads]"),
    "copy_offset": ("none", "sinusoidal", "learned (bert)", "learned (normal)", "t5_bias", "alibi [8 heads]"),
}
#: ALiBi's slopes are a set, one per head (``2 ** (-8 h / n)``); the realistic model's one head
#: would hold only the flattest (1/256). In the realistic regime ALiBi gets the eight slopes
#: 1/2 ... 1/256 of an eight-head model (heads of width 8; ALiBi adds nothing to the head's width),
#: read on 16 test sequences: eight heads' attention maps at 2,048 tokens are eight times one head's.
REALISTIC_ALIBI_HEADS = 8
REALISTIC_ALIBI_EVAL_EXAMPLES = 16
#: Partial rotation, the 2025-26 designs: a quarter of each head rotates, compressed ladder
#: (Hugging Face's partial_rotary_factor) or truncated (p-RoPE).
PARTIAL_ROPE = ({"partial": 0.25, "ladder": "compressed"}, {"partial": 0.25, "ladder": "truncated"})


def realistic_base() -> TrainConfig:
    """The realistic regime's model and training: one head of width 64, two layers, an anchor,
    training lengths that grow from 16 to 512 over the first half of training."""
    return TrainConfig(seq_len=REALISTIC_LEN, steps=1000, batch_size=16, d_model=REALISTIC_D_HEAD, n_heads=1,
                       n_layers=2, causal=True, bos_token=True, min_seq_len=16, curriculum_steps=500,
                       eval_lengths=(2 * REALISTIC_LEN, 4 * REALISTIC_LEN), eval_examples=REALISTIC_EVAL_EXAMPLES,
                       per_position=False,
                       score_new_positions=True, validation_examples=128, log_every=100, curve_examples=64,
                       exact_match=True)


def realistic_configs(tasks: tuple[str, ...] = SCALING_TASKS) -> Cells:
    """Chapter 7's matrix in the realistic regime: the suite's schemes plus partial RoPE on ``tasks``
    (by default the scaling grids' two), two learning rates (three where the top one was best,
    :data:`REALISTIC_EXTRA`), three seeds; new positions at 2x and 4x. The table schemes are also
    read with each table workaround; the table also starts at the tokens' scale
    (:data:`REALISTIC_TABLE`). ALiBi has eight heads (:data:`REALISTIC_ALIBI_HEADS`): its slopes are
    a set, one per head, and the one-head model would hold only the flattest (1/256)."""
    cells: Cells = []
    for task in tasks:
        steps = REALISTIC_TASKS[task]
        base = replace(realistic_base(), task=task, steps=steps, curriculum_steps=steps // 2)
        schemes = [(scheme, options) for scheme, options in suite_schemes() if scheme != "alibi"]  # eight heads below
        at = next(i for i, (scheme, _) in enumerate(schemes) if _has_table(scheme)) + 1
        schemes[at:at] = [("learned", dict(REALISTIC_TABLE))]
        schemes += [("rope", dict(options)) for options in PARTIAL_ROPE]
        for scheme, options in schemes:
            workarounds = STRATEGIES if _has_table(scheme) else ()
            label = scheme_label(scheme, options)
            cells += [(replace(base, scheme=scheme, position_options=options, lr=lr, eval_extrapolations=workarounds),
                       SUITE_SEEDS) for lr in _realistic_lrs(task, label)]
        cells += [(replace(base, scheme="alibi", n_heads=REALISTIC_ALIBI_HEADS, lr=lr,
                           eval_examples=REALISTIC_ALIBI_EVAL_EXAMPLES), SUITE_SEEDS)
                  for lr in _realistic_lrs(task, f"alibi [{REALISTIC_ALIBI_HEADS} heads]")]
    return cells


def _realistic_lrs(task: str, label: str) -> tuple[float, ...]:
    extra = (REALISTIC_EXTRA_LR,) if label in REALISTIC_EXTRA.get(task, ()) else ()
    return (*REALISTIC_LRS, *extra)


def realistic_passkey_configs() -> Cells:
    """The realistic matrix on passkey retrieval (a grid of its own, to keep each within 90 minutes)."""
    return realistic_configs(("passkey",))


#: The real-text arm: byte-level language models on the Python documentation (:mod:`posenc.corpus`),
#: trained on fixed windows of the realistic length (every byte is a target, so no curriculum), read
#: in bits per byte at 2x and 4x (:mod:`posenc.perplexity`), RoPE also with the scaling methods
#: zero-shot; two seeds (a language model's score varies little from seed to seed). Every byte is a
#: target, so 8 windows of 512 bytes per step (4,096 targets) carry as much signal as the tasks'
#: batches of 16 with one or a few labels each. Three rates: a probe of RoPE at 800 steps tied 1e-2
#: and 3e-2 on validation and put 3e-3 behind, so the sweep brackets that optimum from both sides.
REALISTIC_TEXT_STEPS = 800
REALISTIC_TEXT_BATCH = 8
REALISTIC_TEXT_LRS = (3e-3, 1e-2, 3e-2)
REALISTIC_TEXT_SEEDS = 2
REALISTIC_TEXT_SCALINGS = ("pi", "ntk", "yarn", "llama3")
#: p-RoPE (a quarter of each head rotates, the slowest pairs dropped): the partial design that
#: Barbero et al. (2025) propose for language models, read on language.
REALISTIC_TEXT_PARTIAL = {"partial": 0.25, "ladder": "truncated"}
#: The schemes of the 800-step text grid: those that leave the bigram level within it (the
#: sinusoid, RoPE, p-RoPE, T5's buckets, ALiBi). No positions and a learned table stay at it for
#: longer than 800 steps (probes at 1e-2 and 3e-2: about 3.7 bits per byte, the bigram model's
#: 3.8), so they train three times as long in a grid of their own, beside the sinusoid as the bridge
#: between the two budgets: :func:`realistic_text_long_configs`.
REALISTIC_TEXT_SCHEMES = ("sinusoidal", "rope", "alibi", "t5_bias")
REALISTIC_TEXT_LONG_STEPS = 2400
REALISTIC_TEXT_LONG_SCHEMES = ("none", "sinusoidal", "learned")
#: One more rate where validation's best was the sweep's top rate alone (the suite's rule), by run
#: label: p-RoPE in the 800-step grid (3e-2 best, 1e-2 and 3e-3 behind).
REALISTIC_TEXT_EXTRA_LR = 0.1
REALISTIC_TEXT_EXTRA: tuple[str, ...] = ("rope [ladder=truncated, partial=0.25]",)


def _text_base(steps: int) -> TrainConfig:
    return replace(realistic_base(), task="text", steps=steps, batch_size=REALISTIC_TEXT_BATCH, min_seq_len=None,
                   curriculum_steps=None, exact_match=False, eval_examples=REALISTIC_ALIBI_EVAL_EXAMPLES)


def _text_cells(base: TrainConfig, schemes: tuple[str, ...]) -> Cells:
    """Every scheme of ``schemes`` at :data:`REALISTIC_TEXT_LRS`: ALiBi (with eight heads) first, then
    the others in the suite's order, the table at the tokens' scale with its workarounds, p-RoPE after
    RoPE."""
    cells: Cells = []
    if "alibi" in schemes:
        cells += [(replace(base, scheme="alibi", n_heads=REALISTIC_ALIBI_HEADS, lr=lr), REALISTIC_TEXT_SEEDS)
                  for lr in REALISTIC_TEXT_LRS]
    for scheme, options in suite_schemes():
        if scheme not in schemes or scheme == "alibi":
            continue
        variants = [dict(REALISTIC_TABLE) if _has_table(scheme) else dict(options)]
        if scheme == "rope":
            variants.append(dict(REALISTIC_TEXT_PARTIAL))
        for variant in variants:
            extra: dict[str, Any] = {}
            if _has_table(scheme):
                extra["eval_extrapolations"] = STRATEGIES
            if scheme == "rope" and not variant:
                extra["rope_scalings"] = REALISTIC_TEXT_SCALINGS
            extended = base.steps == REALISTIC_TEXT_STEPS and scheme_label(scheme, variant) in REALISTIC_TEXT_EXTRA
            rates = (*REALISTIC_TEXT_LRS, REALISTIC_TEXT_EXTRA_LR) if extended else REALISTIC_TEXT_LRS
            cells += [(replace(base, scheme=scheme, position_options=variant, lr=lr, **extra), REALISTIC_TEXT_SEEDS)
                      for lr in rates]
    return cells


def realistic_text_configs() -> Cells:
    """The real-text arm: the sinusoid, RoPE (read also with each scaling), p-RoPE, T5's buckets and
    ALiBi (eight heads, its slopes 1/2 ... 1/256) as byte-level language models at 512 bytes, 800 steps,
    three learning rates, two seeds."""
    return _text_cells(_text_base(REALISTIC_TEXT_STEPS), REALISTIC_TEXT_SCHEMES)


def realistic_text_long_configs() -> Cells:
    """The real-text arm at three times the steps, for the schemes that need them: no positions, the
    learned table (at the tokens' scale, read with each workaround) and the sinusoid beside them."""
    return _text_cells(_text_base(REALISTIC_TEXT_LONG_STEPS), REALISTIC_TEXT_LONG_SCHEMES)


#: YaRN's premise: each of its zones (kept, ramped, interpolated) holds at least this share of the pairs.
REALISTIC_MIN_ZONE_SHARE = 0.1
#: Fine-tuning in the realistic regime, at twice the training length: 30 steps of 16 sequences of
#: 1,024 tokens (about 0.5 M tokens, eight times the toy grid's 60 steps of 32 sequences of 32).
REALISTIC_FINETUNE_STEPS = 30


def check_realistic_premise(d_head: int = REALISTIC_D_HEAD, train_len: int = REALISTIC_LEN) -> dict[str, tuple[int, ...]]:
    """YaRN's zones in the realistic regime with both ramps, ``{ramp: (kept, ramp, interpolated)}``.

    Raises:
        ValueError: if a zone holds fewer than :data:`REALISTIC_MIN_ZONE_SHARE` of the pairs
            with either ramp: then YaRN would not be what it is in real models.
    """
    counts = {}
    for ramp in YARN_RAMPS:
        zones = yarn_zones(d_head, train_len=train_len, ramp=ramp)
        if not zones.every_zone_holds(REALISTIC_MIN_ZONE_SHARE):
            raise ValueError(f"d_head={d_head} at train_len={train_len}: YaRN's zones with ramp={ramp!r} hold "
                             f"{zones.counts} of {zones.n_pairs} pairs; each needs >= {REALISTIC_MIN_ZONE_SHARE:.0%}")
        counts[ramp] = zones.counts
    return counts


def realistic_scaling_configs() -> Cells:
    """Chapter 11 in the realistic regime: RoPE models at 512 tokens stretched to 1,024 and 2,048.

    * RoPE (base 10,000) at two learning rates, three seeds, on copy-offset and marker recall:
      scored at 2x and 4x plainly and with the toy grid's set-ups (:data:`SCALING_METHODS`; dynamic
      NTK left out for the same reason) zero-shot, then fine-tuned for 30 steps at 1,024 tokens
      with each (and without one). The toy grid's tasks (:data:`SCALING_TASKS`).
    * RoPE trained with base 500,000 from the start, at the same rates, plainly fine-tuned.
    """
    check_realistic_premise()
    cells: Cells = []
    for task in SCALING_TASKS:
        base = replace(realistic_base(), task=task, scheme="rope", steps=REALISTIC_TASKS[task],
                       curriculum_steps=REALISTIC_TASKS[task] // 2, finetune_steps=REALISTIC_FINETUNE_STEPS,
                       finetune_len=2 * REALISTIC_LEN)
        for lr in REALISTIC_LRS:
            cells.append((replace(base, lr=lr, rope_scalings=SCALING_METHODS), SUITE_SEEDS))
            cells.append((replace(base, lr=lr, position_options={"base": SCALING_LARGE_BASE}), SUITE_SEEDS))
    return cells


#: The file next to the realistic_scaling grid that holds the model chapter 11 reads live.
REALISTIC_SCALING_CHECKPOINT = "realistic_scaling_model.safetensors"


def realistic_scaling_checkpoints() -> dict[str, TrainConfig]:
    """Chapter 11's realistic model: the grid's first copy-offset run (seed 0), as trained."""
    first = realistic_scaling_configs()[0][0]
    assert first.task == "copy_offset" and first.scheme == "rope" and not first.position_options
    return {REALISTIC_SCALING_CHECKPOINT: replace(first, seed=0, finetune_steps=0, finetune_len=None, rope_scalings=())}


#: The chapter grids by ``--grid`` name (the runner adds ``ch8_ch10``, whose runs have their own seeds).
GRIDS: dict[str, Callable[[], Cells]] = {
    "ch6": ch6_configs, "ch7": ch7_configs, "suite": suite_configs, "encoder": encoder_configs,
    "encoder_suite": encoder_suite_configs, "ch6_suite": ch6_suite_configs, "rope_scaling": rope_scaling_configs,
    "ch7_arms": ch7_arm_configs, "scale": scale_configs, "hybrid_suite": hybrid_suite_configs, "realistic": realistic_configs,
    "realistic_passkey": realistic_passkey_configs, "realistic_text": realistic_text_configs,
    "realistic_text_long": realistic_text_long_configs,
    "realistic_scaling": realistic_scaling_configs}

#: Trained models stored next to a grid (by grid name): file name -> config.
CHECKPOINTS: dict[str, Callable[[], dict[str, TrainConfig]]] = {
    "ch7": ch7_checkpoints, "rope_scaling": rope_scaling_checkpoints, "realistic_scaling": realistic_scaling_checkpoints}
