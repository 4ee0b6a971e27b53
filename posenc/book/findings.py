"""The book's experimental findings, declared once, so that each is stated only as firmly as the data allow.

Chapters 6 to 10 compare schemes on trained models. A comparison that holds at one learning
rate, without an anchor token, can reverse at another rate or with a ``[CLS]``/BOS token in
front. So every comparison the book states in words is declared here as a
:class:`posenc.robustness.Conclusion`, together with the stored grids it reads and the
chapters that state it; the chapters evaluate it with :func:`evaluate_finding` and word it by
the verdict (robust, conditional: where it fails, contradicted) instead of by hand.

A finding never carries its expected verdict: the verdict is computed from the stored runs
each time a chapter runs.

Sides are read as in the grids: ``new@32``/``new@64`` are the new positions only (16 and
on) at two and four times the training length; ``accuracy`` is the training length;
``ft_new@32`` the new positions after the short fine-tune at 32 tokens; a learned table's
workaround is its ``strategy`` (``"clip"``, ``"modular"``, ``"interpolate"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
import re
from functools import lru_cache
from typing import Any

from posenc.book import data_path
from posenc.checks import check_choice, check_instance, check_mapping, check_text, check_text_sequence
from posenc.results import RunResult, load_results, with_curve_mean
from posenc.robustness import Conclusion, Side, Verdict, evaluate, verdict_phrase
from posenc.rope_scaling import SETUP_NAMES
from posenc.suite import WORKAROUND_NAMES

__all__ = [
    "FINDINGS",
    "Finding",
    "SUITE",
    "ENCODER_SUITE",
    "CH6_SUITE",
    "CH7_ARMS",
    "SCALE",
    "HYBRID_SUITE",
    "SCALING",
    "REALISTIC_SCALING",
    "REALISTIC",
    "REALISTIC_PASSKEY",
    "REALISTIC_TEXT",
    "REALISTIC_TEXT_LONG",
    "TEXT_MARGIN",
    "SCALING_REGIMES",
    "MATRIX_REGIMES",
    "MATRIX_RUNS_BY_LABEL",
    "PARTIAL_ROPE",
    "P_ROPE",
    "PARTIAL_LABELS",
    "finding",
    "findings_in",
    "past_the_length",
    "evaluate_finding",
    "evaluate_findings",
    "prose_name",
    "verdict_prose",
    "verdict_rows",
    "regime_rows",
]

#: The stored grids the findings read (files in ``book/data``, written by ``make grids``).
SUITE = "suite_grid.json"
ENCODER_SUITE = "encoder_suite_grid.json"
CH6_SUITE = "ch6_suite_grid.json"
CH7_ARMS = "ch7_arms_grid.json"
SCALE = "scale_grid.json"
HYBRID_SUITE = "hybrid_suite_grid.json"
SCALING = "rope_scaling_grid.json"
REALISTIC_SCALING = "realistic_scaling_grid.json"
#: Chapter 11's two regimes by name: the grid and the training length ``L`` (read at 2L and 4L,
#: fine-tuned at 2L). The toy: heads of width 16 at 16 tokens; the realistic: width 64 at 512.
SCALING_REGIMES: dict[str, tuple[str, int]] = {"toy": (SCALING, 16), "realistic": (REALISTIC_SCALING, 512)}
#: Chapter 7's matrix (copy-offset and marker recall; a realistic passkey grid is stored apart).
REALISTIC = "realistic_grid.json"
#: The realistic matrix on passkey retrieval (chapter 12's long-context measurement).
REALISTIC_PASSKEY = "realistic_passkey_grid.json"
#: The real-text arm (chapter 7): byte-level language models at 512 bytes, 800 steps (the sinusoid,
#: RoPE read also with each scaling, p-RoPE, T5, ALiBi with eight heads) and 2,400 steps (no positions,
#: the table at the tokens' scale with its workarounds, the sinusoid again).
REALISTIC_TEXT = "realistic_text_grid.json"
REALISTIC_TEXT_LONG = "realistic_text_long_grid.json"
#: By how many bits per byte a reading must be worse to count as "worse" (about 3 % of the models'
#: level at the training length); whether two seeds are enough to tell is the robustness module's call.
TEXT_MARGIN = 0.1
#: Chapter 7's two regimes: the grid, the training length ``L`` (read at 2L and 4L), the runs each
#: side reads and the learned table: the causal suite's anchored runs (width 16, four heads, 16
#: tokens, five rates) with BERT's table, and the realistic grid's one-head models (width 64, 512
#: tokens, two rates; every run anchored) with the table that starts at the tokens' scale (at
#: BERT's it barely learns the long-range lookup there).
MATRIX_REGIMES: dict[str, tuple[str, int, dict[str, Any], str]] = {
    "toy": (SUITE, 16, {"bos_token": True}, "learned (bert)"),
    "realistic": (REALISTIC, 512, {"n_heads": 1}, "learned (normal)")}
#: Where a regime reads a scheme from other runs than the rest (by regime, then run label): the
#: realistic grid's ALiBi has eight heads, the slopes 1/2 ... 1/256 it is designed with (one head
#: would hold only the flattest).
MATRIX_RUNS_BY_LABEL: dict[str, dict[str, dict[str, Any]]] = {"realistic": {"alibi": {"n_heads": 8}}}
#: The realistic grid's partial rotations (a quarter of each head turns) by run label: the
#: compressed ladder (Hugging Face's ``partial_rotary_factor``) and the truncated one (p-RoPE).
PARTIAL_ROPE = "rope [ladder=compressed, partial=0.25]"
P_ROPE = "rope [ladder=truncated, partial=0.25]"
PARTIAL_LABELS: dict[str, str] = {PARTIAL_ROPE: "partial RoPE", P_ROPE: "p-RoPE"}

#: The causal suite's tasks: a local relative rule, a long-range content lookup, an absolute rule.
CAUSAL_TASKS = ("copy_offset", "marker_recall", "copy_half")
#: The level at which a seed counts as having solved a task (per token).
SOLVED_LEVEL = 0.9


@dataclass(frozen=True)
class Finding:
    """A stated comparison, where its runs are stored, and who states it.

    Attributes:
        conclusion: the comparison (:class:`~posenc.robustness.Conclusion`), with the set-up
            choices it must survive in ``conclusion.over``.
        grids: the stored grids whose runs it reads, concatenated.
        chapters: the chapters (notebook stems, e.g. ``"07_beyond_trained_length"``) that state it.
    """

    conclusion: Conclusion
    grids: tuple[str, ...]
    chapters: tuple[str, ...]

    def __post_init__(self) -> None:
        check_instance("conclusion", self.conclusion, Conclusion, what="a Conclusion")
        for name in ("grids", "chapters"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value or not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"{name} must be a non-empty tuple of names, got {value!r}")

    @property
    def key(self) -> str:
        return self.conclusion.key


#: How the map and the explorers name a scheme (its run label otherwise).
SHOWN_NAMES = {"none": "NoPE", "sinusoidal": "sinusoid", "learned (bert)": "learned table", "rope": "RoPE",
               "alibi": "ALiBi", "t5_bias": "T5", **PARTIAL_LABELS}


def _shown(label: str) -> str:
    return SHOWN_NAMES.get(label, label)


def _side(label: str, metric: str, strategy: str | None = None, /, **where: object) -> Side:
    return Side(label, metric, strategy, dict(where))


def _finding(key: str, claim: str, better: Side | float, worse: Side | float, tasks: Iterable[str], *,
             grids: Iterable[str], chapters: Iterable[str], margin: float = 0.0, over: Iterable[str] = ("anchor", "lr"),
             relation: str = "greater", label: str = "") -> Finding:
    conclusion = Conclusion(key=key, claim=claim, better=better, worse=worse, tasks=tuple(tasks), margin=margin,
                            over=tuple(over), relation=relation, label=label)  # type: ignore[arg-type]
    return Finding(conclusion, tuple(grids), tuple(chapters))


CH6, CH7, CH8, CH9, CH10, CH11, CH12 = ("06_experiments", "07_beyond_trained_length", "08_hybrids", "09_choosing",
                                        "10_relative", "11_rope_scaling", "12_what_ships_now")
APP_A, APP_B = "appendix_a_misunderstandings", "appendix_b_fact_check"


def _suite_findings() -> list[Finding]:
    """The causal suite (chapters 6, 7, 9, 10; Appendices A and B): length 16, five learning rates, anchor or not."""
    suite = (SUITE,)
    found = [
        # -- at the training length
        *[_finding(f"{label} learns {task}", f"{label} learns {task} at the training length",
                   _side(label, "accuracy"), SOLVED_LEVEL, (task,), grids=suite, chapters=(CH6, CH7, CH9),
                   label=f"{_shown(label)} learns {task.replace('_', '-')}")
          for label in ("sinusoidal", "learned (bert)", "rope") for task in CAUSAL_TASKS],
        _finding("alibi fails copy_half", "ALiBi does not learn the absolute rule at the training length",
                 SOLVED_LEVEL, _side("alibi", "accuracy"), ("copy_half",), grids=suite, chapters=(CH6, CH7, CH9, CH10),
                 label="ALiBi fails copy-half"),
        _finding("t5 learns copy_half", "T5's buckets learn the absolute rule at the training length",
                 _side("t5_bias", "accuracy"), SOLVED_LEVEL, ("copy_half",), grids=suite, chapters=(CH6, CH7, CH10),
                 label="T5 learns copy-half"),
        _finding("none fails copy_offset", "without an encoding a decoder does not learn the local rule",
                 SOLVED_LEVEL, _side("none", "accuracy"), ("copy_offset",), grids=suite, chapters=(CH7, CH9, CH10),
                 label="NoPE fails copy-offset"),
        _finding("none fails copy_half", "without an encoding a decoder does not learn the absolute rule",
                 SOLVED_LEVEL, _side("none", "accuracy"), ("copy_half",), grids=suite, chapters=(CH7, CH9, CH10),
                 label="NoPE fails copy-half"),
        _finding("none learns marker_recall", "without an encoding a decoder learns the content lookup",
                 _side("none", "accuracy"), SOLVED_LEVEL, ("marker_recall",), grids=suite, chapters=(CH6, CH9),
                 label="NoPE learns marker recall"),
        # -- past the training length: the sinusoid and the learned table's workarounds
        _finding("sinusoid fails new@32", "the sinusoid fails on the new positions at twice the training length",
                 SOLVED_LEVEL, _side("sinusoidal", "new@32"), CAUSAL_TASKS, grids=suite, chapters=(CH7, CH9, APP_B),
                 label="sinusoid fails at 2×"),
        _finding("none>sinusoid new@32", "no encoding keeps more new positions than the sinusoid",
                 _side("none", "new@32"), _side("sinusoidal", "new@32"), CAUSAL_TASKS, grids=suite,
                 chapters=(CH7, APP_A), margin=0.05, label="NoPE > sinusoid at 2×"),
        _finding("modular>clip copy_offset", "on the local rule, wrapping is the learned table's best workaround",
                 _side("learned (bert)", "new@32", "modular"), _side("learned (bert)", "new@32", "clip"),
                 ("copy_offset",), grids=suite, chapters=(CH7, CH9), label="wrap > clip, copy-offset"),
        _finding("modular>rescale copy_offset", "on the local rule, wrapping beats the per-input rescale",
                 _side("learned (bert)", "new@32", "modular"), _side("learned (bert)", "new@32", "interpolate"),
                 ("copy_offset",), grids=suite, chapters=(CH7, CH9), label="wrap > rescale, copy-offset"),
        _finding("rescale>modular content/absolute",
                 "on the content lookup and the absolute rule, the per-input rescale beats wrapping",
                 _side("learned (bert)", "new@32", "interpolate"), _side("learned (bert)", "new@32", "modular"),
                 ("marker_recall", "copy_half"), grids=suite, chapters=(CH7, CH9), label="rescale > wrap"),
        _finding("rescale ft best content/absolute",
                 "after the short fine-tune, the per-input rescale is the best start on content and absolute rules",
                 _side("learned (bert)", "ft_new@32", "interpolate"), _side("learned (bert)", "ft_new@32", "modular"),
                 ("marker_recall", "copy_half"), grids=suite, chapters=(CH7,), label="rescale > wrap, fine-tuned"),
        _finding("modular ft best copy_offset", "after the short fine-tune, wrapping is the best start on the local rule",
                 _side("learned (bert)", "ft_new@32", "modular"), _side("learned (bert)", "ft_new@32", "interpolate"),
                 ("copy_offset",), grids=suite, chapters=(CH7,), label="wrap > rescale, fine-tuned"),
        # -- past the training length: relative schemes
        *[_finding(f"{label}>sinusoid new@32", f"{label} keeps more new positions than the sinusoid",
                   _side(label, "new@32"), _side("sinusoidal", "new@32"), ("copy_offset", "marker_recall"),
                   grids=suite, chapters=(CH7, CH9, CH10), margin=0.1, label=f"{_shown(label)} > sinusoid at 2×")
          for label in ("rope", "alibi", "t5_bias")],
        *[_finding(f"{label}>modular new@32", f"{label} keeps more new positions than the wrapped learned table",
                   _side(label, "new@32"), _side("learned (bert)", "new@32", "modular"),
                   ("copy_offset", "marker_recall"), grids=suite, chapters=(CH7,), margin=0.1,
                   label=f"{_shown(label)} > wrapped table")
          for label in ("rope", "t5_bias")],
        _finding("alibi holds new@64", "ALiBi keeps the local rule and the content lookup at four times the length",
                 _side("alibi", "new@64"), SOLVED_LEVEL, ("copy_offset", "marker_recall"), grids=suite,
                 chapters=(CH7, CH9, CH10), label="ALiBi holds at 4×"),
        _finding("t5 holds new@32", "T5's buckets keep the local rule at twice the length",
                 _side("t5_bias", "new@32"), SOLVED_LEVEL, ("copy_offset",), grids=suite, chapters=(CH9, CH10),
                 label="T5 holds at 2×"),
        _finding("t5 fades new@64", "T5's buckets lose more than a tenth between twice and four times the length",
                 _side("t5_bias", "new@32"), _side("t5_bias", "new@64"), ("copy_offset", "marker_recall"), grids=suite,
                 chapters=(CH9, CH10), margin=0.1, label="T5 fades at 4×"),
        _finding("t5>rope new@32", "RoPE falls behind T5's buckets past the training length",
                 _side("t5_bias", "new@32"), _side("rope", "new@32"), ("copy_offset", "marker_recall"), grids=suite,
                 chapters=(CH7, CH9, CH10), label="T5 > RoPE at 2×"),
        _finding("none>rope marker_recall new@32", "on the content lookup no encoding beats RoPE past the length",
                 _side("none", "new@32"), _side("rope", "new@32"), ("marker_recall",), grids=suite,
                 chapters=(CH7, CH9, CH10), label="NoPE > RoPE, marker recall"),
        _finding("alibi>rope new@64", "ALiBi keeps more new positions than RoPE at four times the length",
                 _side("alibi", "new@64"), _side("rope", "new@64"), ("copy_offset", "marker_recall"), grids=suite,
                 chapters=(CH9, CH10), label="ALiBi > RoPE at 4×"),
        _finding("none~t5 marker_recall", "on the content lookup no encoding and T5's buckets are level",
                 _side("none", "new@32"), _side("t5_bias", "new@32"), ("marker_recall",), grids=suite,
                 chapters=(CH9, CH10), margin=0.05, relation="close", label="NoPE ≈ T5, marker recall"),
        _finding("nothing extrapolates copy_half", "no scheme keeps the absolute rule at twice the length",
                 SOLVED_LEVEL, _side("learned (bert)", "new@32", "interpolate"), ("copy_half",), grids=suite,
                 chapters=(CH7, CH9, CH10), label="nothing keeps copy-half at 2×"),
        *[_finding(f"{label} fails copy_half new@32", f"{label} does not keep the absolute rule at twice the length",
                   SOLVED_LEVEL, _side(label, "new@32"), ("copy_half",), grids=suite, chapters=(CH7, CH9, CH10),
                   label=f"{_shown(label)} fails copy-half at 2×")
          for label in ("none", "rope", "alibi", "t5_bias")],
    ]
    return found


def _encoder_findings() -> list[Finding]:
    """Chapter 6's encoder suite: marker recall, copy-half and reverse, 600 steps, anchor or not."""
    grid = (ENCODER_SUITE,)
    tasks = ("marker_recall", "copy_half", "reverse")
    return [
        _finding("encoder sinusoid solves", "the sinusoid solves every encoder task",
                 _side("sinusoidal", "accuracy"), SOLVED_LEVEL, tasks, grids=grid, chapters=(CH6, CH9),
                 label="sinusoid solves (encoder)"),
        _finding("encoder none fails", "an encoder without positions fails the order-dependent tasks, anchor or not",
                 SOLVED_LEVEL, _side("none", "accuracy"), tasks, grids=grid, chapters=(CH6, CH9),
                 label="NoPE fails (encoder)"),
        _finding("encoder anchor helps alibi", "an anchor token lets symmetric ALiBi learn the absolute rule",
                 _side("alibi", "accuracy", bos_token=True), _side("alibi", "accuracy", bos_token=False), ("copy_half",),
                 grids=grid, chapters=(CH6, CH9, CH10), margin=0.1, over=("lr",), label="anchor helps ALiBi"),
        _finding("encoder anchor helps t5", "an anchor token lets T5's buckets learn the absolute rule",
                 _side("t5_bias", "accuracy", bos_token=True), _side("t5_bias", "accuracy", bos_token=False),
                 ("copy_half",), grids=grid, chapters=(CH6, CH9), margin=0.1, over=("lr",), label="anchor helps T5"),
        _finding("encoder t5 fails absolute", "T5's buckets alone do not learn the absolute rules in an encoder",
                 SOLVED_LEVEL, _side("t5_bias", "accuracy", bos_token=False), ("copy_half", "reverse"), grids=grid,
                 chapters=(CH6, CH9), over=("lr",), label="T5 without anchor fails (encoder)"),
        _finding("encoder learned solves", "the random learned table solves the encoder tasks",
                 _side("learned (bert)", "accuracy"), SOLVED_LEVEL, tasks, grids=grid, chapters=(CH6,),
                 label="learned table solves (encoder)"),
        _finding("encoder rope solves", "RoPE solves the encoder tasks", _side("rope", "accuracy"), SOLVED_LEVEL,
                 tasks, grids=grid, chapters=(CH6,), label="RoPE solves (encoder)"),
    ]


def _ch6_findings() -> list[Finding]:
    """Chapter 6's own comparisons on copy-offset in the encoder, at three learning rates, anchor or not.

    How fast a scheme learns is read as ``curve_mean``, the mean of its learning curve
    (:func:`posenc.results.curve_mean`), which every run has, solved or not."""
    grid, task = (CH6_SUITE,), ("copy_offset",)
    concat = {"sinusoidal": "sinusoidal, concat", "learned (bert)": "learned (bert), concat"}
    return [
        *[_finding(f"ch6 {label} learns copy_offset", f"{label} learns the local rule in the encoder",
                   _side(label, "accuracy"), SOLVED_LEVEL, task, grids=grid, chapters=(CH6,),
                   label=f"{_shown(label)} learns copy-offset (encoder)")
          for label in ("sinusoidal", "learned (bert)", "rope", "t5_bias")],
        _finding("ch6 none fails copy_offset", "an encoder without positions does not learn the local rule",
                 SOLVED_LEVEL, _side("none", "accuracy"), task, grids=grid, chapters=(CH6,),
                 label="NoPE fails copy-offset (encoder)"),
        _finding("ch6 alibi fails copy_offset", "symmetric ALiBi without an anchor does not learn the local rule",
                 SOLVED_LEVEL, _side("alibi", "accuracy", bos_token=False), task, grids=grid, chapters=(CH6,),
                 over=("lr",), label="ALiBi without anchor fails copy-offset"),
        _finding("ch6 anchor helps alibi", "an anchor token lets symmetric ALiBi learn the local rule",
                 _side("alibi", "accuracy", bos_token=True), _side("alibi", "accuracy", bos_token=False), task,
                 grids=grid, chapters=(CH6,), margin=0.1, over=("lr",), label="anchor helps ALiBi (copy-offset)"),
        _finding("ch6 rope faster than sinusoid", "RoPE learns the local rule faster than the sinusoid",
                 _side("rope", "curve_mean"), _side("sinusoidal", "curve_mean"), task, grids=grid, chapters=(CH6,),
                 label="RoPE faster than sinusoid"),
        _finding("ch6 sinusoid faster than learned", "the sinusoid learns the local rule faster than a random table",
                 _side("sinusoidal", "curve_mean"), _side("learned (bert)", "curve_mean"), task, grids=grid,
                 chapters=(CH6,), label="sinusoid faster than learned table"),
        *[_finding(f"ch6 concat level with add, {label}", f"concatenating {label} scores as adding it does",
                   _side(label, "accuracy"), _side(shown, "accuracy"), task, grids=grid, chapters=(CH6,),
                   margin=0.02, relation="close", label=f"concat ≈ add, {_shown(label)}")
          for label, shown in concat.items()],
        _finding("ch6 concat speeds learned", "a random table learns faster concatenated than added",
                 _side(concat["learned (bert)"], "curve_mean"), _side("learned (bert)", "curve_mean"), task,
                 grids=grid, chapters=(CH6,), label="concat faster, learned table"),
    ]


def _arm_findings() -> list[Finding]:
    """Chapter 7's arms: training lengths that vary, and randomized positions (anchored, two rates)."""
    grids = (SUITE, CH7_ARMS)
    fixed = {"bos_token": True, "min_seq_len": None, "random_positions": None}
    varied = {"bos_token": True, "min_seq_len": 4}
    randomized = {"bos_token": True, "random_positions": 128}
    return [
        *[_finding(f"varied lengths help {label}", f"training on lengths 4 to 16 helps {label} past the length",
                   _side(label, "new@32", **varied), _side(label, "new@32", **fixed), CAUSAL_TASKS, grids=grids,
                   chapters=(CH7,), margin=0.05, over=("lr",), label=f"varied lengths help {_shown(label)}")
          for label in ("none", "rope", "alibi", "t5_bias", "sinusoidal")],
        # A learned table trained at positions up to 128 has rows for every test position; the
        # same table trained at 0..15 is read past its rows with wrapping (its best on the local rule).
        *[_finding(f"random positions help {label}",
                   f"training on randomized positions lets {label} keep new positions",
                   _side(label, "new@32", **randomized),
                   _side(label, "new@32", "modular" if label == "learned (bert)" else None, **fixed), CAUSAL_TASKS,
                   grids=grids, chapters=(CH7,), margin=0.1, over=("lr",), label=f"random positions help {_shown(label)}")
          for label in ("sinusoidal", "learned (bert)", "rope")],
        _finding("varied lengths: none>t5 exact", "with varied lengths no encoding beats T5's buckets on whole sequences",
                 _side("none", "new_exact@32", **varied), _side("t5_bias", "new_exact@32", **varied), CAUSAL_TASKS,
                 grids=grids, chapters=(CH7, CH10), over=("lr",), label="NoPE > T5 (exact, varied lengths)"),
        _finding("varied lengths: none>rope exact", "with varied lengths no encoding beats RoPE on whole sequences",
                 _side("none", "new_exact@32", **varied), _side("rope", "new_exact@32", **varied), CAUSAL_TASKS,
                 grids=grids, chapters=(CH7, CH10), over=("lr",), label="NoPE > RoPE (exact, varied lengths)"),
    ]


def _scale_findings() -> list[Finding]:
    """Chapters 6, 8 and 9: tables that start small, with little data, at mismatched and matched scales."""
    grid = (SCALE,)
    # the tables that start at BERT's small random scale; the scaled sinusoid starts at the sinusoid's
    random_starts = ("learned (bert)", "hybrid-factored", "hybrid-hierarchical")
    return [
        *[_finding(f"{label} learns at matched scale", f"{label} learns with little data once the tokens match its scale",
                   _side(label, "accuracy", token_init_std=0.02), SOLVED_LEVEL, ("copy_offset",), grids=grid,
                   chapters=(CH6, CH8, CH9), over=("lr",), label=f"{_shown(label)}, matched scale")
          for label in random_starts],
        *[_finding(f"{label} matched>mismatched", f"matching the scales is what makes {label} learn with little data",
                   _side(label, "accuracy", token_init_std=0.02), _side(label, "accuracy", token_init_std=1.0),
                   ("copy_offset",), grids=grid, chapters=(CH6, CH8, CH9), margin=0.1, over=("lr",),
                   label=f"{_shown(label)}: matched > mismatched")
          for label in random_starts],
        *[_finding(f"scaled sinusoid learns, tokens std {std:g}",
                   f"the scaled sinusoid learns with little data beside tokens at std {std:g}",
                   _side("hybrid-scaled-sinusoid", "accuracy", token_init_std=std), SOLVED_LEVEL, ("copy_offset",),
                   grids=grid, chapters=(CH6, CH8, CH9), over=("lr",), label=f"scaled sinusoid, tokens std {std:g}")
          for std in (1.0, 0.02)],
        _finding("large random table learns", "a random table at the tokens' scale (std 1) learns with little data",
                 _side("learned (normal)", "accuracy"), SOLVED_LEVEL, ("copy_offset",), grids=grid,
                 chapters=(CH6, CH8, CH9), over=("lr",), label="random table at std 1"),
    ]


def _hybrid_findings() -> list[Finding]:
    """Chapter 8: the hybrids that run past the training length, in the suite's set-up (copy-offset, anchor or not)."""
    grids = (SUITE, HYBRID_SUITE)
    hierarchy = "hybrid-hierarchical [n_segments=17, segment_len=4]"
    task = ("copy_offset",)
    return [
        _finding("scaled sinusoid ~ sinusoid new@32", "the scaled sinusoid keeps as many new positions as the sinusoid",
                 _side("hybrid-scaled-sinusoid", "new@32"), _side("sinusoidal", "new@32"), task, grids=grids,
                 chapters=(CH8,), margin=0.05, relation="close", label="scaled sinusoid ≈ sinusoid at 2×"),
        _finding("scaled sinusoid fails new@32", "the scaled sinusoid fails on the new positions at twice the length",
                 SOLVED_LEVEL, _side("hybrid-scaled-sinusoid", "new@32"), task, grids=grids, chapters=(CH8,),
                 label="scaled sinusoid fails at 2×"),
        _finding("hierarchy>sinusoid new@32", "the hierarchy with spare segment rows keeps more new positions than the sinusoid",
                 _side(hierarchy, "new@32"), _side("sinusoidal", "new@32"), task, grids=grids, chapters=(CH8,),
                 margin=0.1, label="hierarchy > sinusoid at 2×"),
        _finding("hierarchy fades new@64", "the hierarchy's advantage fades between twice and four times the length",
                 _side(hierarchy, "new@32"), _side(hierarchy, "new@64"), task, grids=grids, chapters=(CH8,),
                 margin=0.1, label="hierarchy fades at 4×"),
        _finding("sinusoid start helps past the table",
                 "a table started as a sinusoid keeps more new positions (wrapped) than one started random",
                 _side("learned (sinusoidal)", "new@64", "modular"), _side("learned (bert)", "new@64", "modular"), task,
                 grids=grids, chapters=(CH8,), margin=0.05, label="sinusoid start helps at 4×"),
    ]


def _scaling_findings() -> list[Finding]:
    """Chapter 11: RoPE stretched to 2x and 4x its training length, in the toy and the realistic regime.

    Every claim is declared once per regime (key prefix ``"toy "`` or ``"realistic "``), so the
    chapter can show which conclusions survive the change of regime. The methods read the same
    trained models (paired seed by seed); a larger base is other models (independent). Zero-shot
    sides read the runs fine-tuned at 2L (their zero-shot scores do not depend on the fine-tune).
    """
    tasks = ("copy_offset", "marker_recall")
    found: list[Finding] = []
    for regime, (grid, length) in SCALING_REGIMES.items():
        two, four, ft = 2 * length, 4 * length, {"finetune_len": 2 * length}

        def rope(metric: str, setup: str | None = None) -> Side:
            return _side("rope", metric, setup, **ft)  # noqa: B023 - called within this iteration only

        def add(key: str, claim: str, better: Side | float, worse: Side | float, label: str) -> None:
            found.append(_finding(f"{regime} {key}", f"{claim} ({regime} regime)", better, worse, tasks,
                                  grids=(grid,), chapters=(CH11,), over=("lr",), label=f"{label} ({regime})"))

        for multiple, metric in (("2x", f"new@{two}"), ("4x", f"new@{four}")):
            for setup in ("ntk", "yarn", "yarn_rotations", "llama3"):
                shown = SETUP_NAMES[setup]
                add(f"{setup}>plain {multiple}", f"{shown} keeps more new positions at {multiple} than plain RoPE, "
                    "zero-shot", rope(metric, setup), rope(metric), f"{shown} > plain, {multiple}")
            add(f"plain>pi {multiple}", f"plain RoPE keeps more new positions at {multiple} than PI, zero-shot",
                rope(metric), rope(metric, "pi"), f"plain > PI, {multiple}")
            add(f"yarn>yarn_rotations {multiple}", f"YaRN with the code's ramp keeps more new positions at {multiple} "
                "than with the paper's, zero-shot", rope(metric, "yarn"), rope(metric, "yarn_rotations"),
                f"code ramp > paper ramp, {multiple}")
        for tuned in (None, "ntk", "yarn", "llama3"):
            shown = "plain RoPE" if tuned is None else SETUP_NAMES[tuned]
            add(f"ft {tuned or 'plain'} solves", f"fine-tuned at 2x with {shown}, RoPE keeps >= 0.9 of the new "
                "positions", rope(f"ft_new@{two}", tuned), SOLVED_LEVEL, f"fine-tuned {shown} solves")
        add("ft plain>pi", "fine-tuned at 2x, plain RoPE keeps more new positions than with PI",
            rope(f"ft_new@{two}"), rope(f"ft_new@{two}", "pi"), "fine-tuned plain > PI")
        add("short ntk>yarn", "set up for 4x, NTK-aware scaling costs inputs at the training length less "
            "than YaRN", rope(f"short@{four}", "ntk"), rope(f"short@{four}", "yarn"), "short inputs: NTK > YaRN")
        add("large base>plain 4x", "RoPE trained with base 500,000 keeps more new positions at 4x than base 10,000",
            _side("rope [base=500000.0]", f"new@{four}", **ft), rope(f"new@{four}"), "base 500k > 10k, 4x")
    return found


def _matrix_findings() -> list[Finding]:
    """Chapter 7's comparisons past the training length in both regimes, then the realistic grid's own.

    Each shared claim is declared once per regime of :data:`MATRIX_REGIMES` (key prefix ``"toy "``
    or ``"realistic "``) on copy-offset and marker recall, anchored, over every tied learning rate,
    so the chapter can show which verdicts survive the change of regime (a scheme read from other runs
    in one regime: :data:`MATRIX_RUNS_BY_LABEL`). The realistic grid's own claims (partial rotation)
    have no toy counterpart.
    """
    both = ("copy_offset", "marker_recall")
    found: list[Finding] = []
    for regime, (grid, length, runs, table) in MATRIX_REGIMES.items():
        two, four = f"new@{2 * length}", f"new@{4 * length}"

        def side(label: str, metric: str, strategy: str | None = None) -> Side:
            where = {**runs, **MATRIX_RUNS_BY_LABEL.get(regime, {}).get(label, {})}  # noqa: B023 - this iteration only
            return _side(label, metric, strategy, **where)

        def add(key: str, claim: str, better: Side | float, worse: Side | float, label: str, *,
                tasks: tuple[str, ...] = both, margin: float = 0.0) -> None:
            found.append(_finding(f"{regime} {key}", f"{claim} ({regime} regime)", better, worse, tasks,
                                  grids=(grid,), chapters=(CH7,), over=("lr",), margin=margin,
                                  label=f"{label} ({regime})"))

        for label in ("none", "sinusoidal", table, "rope", "alibi", "t5_bias"):
            add("table learns" if label == table else f"{label.removesuffix('_bias')} learns",
                f"{_shown(label)} learns the task at the training length", side(label, "accuracy"), SOLVED_LEVEL,
                f"{_shown(label)} learns")
        for label in ("none", "rope", "alibi"):
            for multiple, metric in (("2x", two), ("4x", four)):
                add(f"{label} holds {multiple}", f"{_shown(label)} keeps >= 0.9 of the new positions at {multiple}",
                    side(label, metric), SOLVED_LEVEL, f"{_shown(label)} holds at {multiple.replace('x', '×')}")
        add("sinusoid fails 2x", "the sinusoid fails on the new positions at 2x", SOLVED_LEVEL,
            side("sinusoidal", two), "sinusoid fails at 2×")
        add("none>sinusoid 2x", "no encoding keeps more new positions than the sinusoid at 2x", side("none", two),
            side("sinusoidal", two), "NoPE > sinusoid at 2×", margin=0.05)
        for label in ("rope", "alibi", "t5_bias"):
            add(f"{label.removesuffix('_bias')}>sinusoid 2x", f"{_shown(label)} keeps more new positions than the sinusoid at 2x",
                side(label, two), side("sinusoidal", two), f"{_shown(label)} > sinusoid at 2×", margin=0.1)
        for label in ("rope", "t5_bias"):
            add(f"{label.removesuffix('_bias')}>wrapped 2x", f"{_shown(label)} keeps more new positions than the wrapped table at 2x",
                side(label, two), side(table, two, "modular"), f"{_shown(label)} > wrapped table",
                margin=0.1)
        add("wrap>clip copy_offset", "on the local rule, wrapping beats clipping at 2x",
            side(table, two, "modular"), side(table, two, "clip"), "wrap > clip, copy-offset",
            tasks=("copy_offset",))
        add("rescale>wrap marker_recall", "on the content lookup, the per-input rescale beats wrapping at 2x",
            side(table, two, "interpolate"), side(table, two, "modular"),
            "rescale > wrap, marker recall", tasks=("marker_recall",))
        add("t5>rope 2x", "T5's buckets keep more new positions than RoPE at 2x", side("t5_bias", two),
            side("rope", two), "T5 > RoPE at 2×")
        add("alibi>rope 4x", "ALiBi keeps more new positions than RoPE at 4x", side("alibi", four), side("rope", four),
            "ALiBi > RoPE at 4×")
        add("none>rope marker_recall 2x", "on the content lookup no encoding beats RoPE at 2x", side("none", two),
            side("rope", two), "NoPE > RoPE, marker recall", tasks=("marker_recall",))
    # the realistic grid's own claims
    grid, length, runs, _ = MATRIX_REGIMES["realistic"]
    four = f"new@{4 * length}"
    one_head = dict(runs)
    for label, shown in PARTIAL_LABELS.items():
        found.append(_finding(f"{shown} learns", f"{shown} (a quarter of each head rotates) learns both tasks at the "
                              "training length", _side(label, "accuracy", **one_head), SOLVED_LEVEL, both,
                              grids=(grid,), chapters=(CH7, CH12), over=("lr",), label=f"{shown} learns"))
        found.append(_finding(f"{shown}>rope 4x", f"{shown} keeps more new positions than full RoPE at 4x",
                              _side(label, four, **one_head), _side("rope", four, **one_head), both, grids=(grid,),
                              chapters=(CH7, CH12), over=("lr",), label=f"{shown} > RoPE at 4×"))
    found.append(_finding("p-RoPE>partial RoPE 4x", "p-RoPE (the fastest pairs) keeps more new positions than the "
                          "compressed ladder at 4x", _side(P_ROPE, four, **one_head),
                          _side(PARTIAL_ROPE, four, **one_head), both, grids=(grid,), chapters=(CH7, CH12), over=("lr",),
                          label="p-RoPE > partial RoPE at 4×"))
    return found


def _passkey_findings() -> list[Finding]:
    """Chapter 12's passkey test: the realistic models retrieving a passkey on inputs four times the
    training length (every label at a new position; passkeys retrieved whole, ``new_exact``), over
    every tied learning rate. Each scheme's models as in the realistic matrix (ALiBi with eight heads)."""
    grid, length, runs, _ = MATRIX_REGIMES["realistic"]
    four = f"new_exact@{4 * length}"

    def side(label: str, metric: str) -> Side:
        return _side(label, metric, None, **{**runs, **MATRIX_RUNS_BY_LABEL["realistic"].get(label, {})})

    def add(key: str, claim: str, better: Side | float, worse: Side | float, label: str, margin: float = 0.0) -> Finding:
        return _finding(f"passkey {key}", claim, better, worse, ("passkey",), grids=(REALISTIC_PASSKEY,),
                        chapters=(CH12,), over=("lr",), margin=margin, label=f"passkey: {label}")

    found = [add("rope fades 4x", "RoPE retrieves fewer passkeys at 4x than at the training length", side("rope", "exact"),
                 side("rope", four), "RoPE: fewer at 4× than at 512", margin=0.1)]
    for label in (*PARTIAL_LABELS, "alibi", "t5_bias", "none"):
        found.append(add(f"{_shown(label)}>rope 4x", f"{_shown(label)} retrieves more passkeys than full RoPE at 4x",
                         side(label, four), side("rope", four), f"{_shown(label)} > RoPE at 4×"))
    return found


def _text_findings() -> list[Finding]:
    """Chapter 7's real-text arm, in bits per byte (lower is better), over every tied learning rate.

    Every comparison reads the same bytes on both sides. Across lengths that means the sliding
    windows (every byte scored once, each with at least three quarters of a window before it; at 2x
    and 4x every byte after the first window sits at a new position), which were read for the models
    as trained; a table's workarounds and RoPE's scalings were read on non-overlapping windows only,
    so they are compared with each other, or with the model read plainly, at one length and on the
    new positions (the same bytes for every way of reading). A "worse" or "fewer bits" claim puts
    the higher reading on the ``better`` side of a :class:`Conclusion` (whose ``better`` scores higher).
    """
    found: list[Finding] = []
    length = 512

    def add(key: str, claim: str, higher: Side, lower: Side, label: str, grid: str, margin: float = 0.0) -> None:
        found.append(_finding(f"text {key}", claim, higher, lower, ("text",), grids=(grid,), chapters=(CH7,),
                              over=("lr",), margin=margin, label=label))

    def side(label: str, metric: str, strategy: str | None = None) -> Side:
        return _side(label, metric, strategy, **({"n_heads": 8} if label == "alibi" else {}))

    budgets = ((REALISTIC_TEXT, ("sinusoidal", "rope", P_ROPE, "alibi", "t5_bias"), "", ""),
               (REALISTIC_TEXT_LONG, ("none", "sinusoidal"), " long", " (2,400 steps)"))
    for grid, labels, suffix, shown_budget in budgets:
        for label in labels:
            for multiple in (2, 4):
                add(f"{_shown(label)} worse {multiple}x{suffix}",
                    f"{_shown(label)}{shown_budget} spends more than {TEXT_MARGIN:g} bits per byte more on the same "
                    f"bytes read in sliding windows of {multiple}x the training length than of the training length",
                    side(label, f"bpb_slide@{multiple * length}"), side(label, f"bpb_slide@{length}"),
                    f"{_shown(label)} worse at {multiple}×{shown_budget}", grid, margin=TEXT_MARGIN)
    four = f"bpb_new@{4 * length}"
    for label in ("alibi", "t5_bias", P_ROPE):
        add(f"{_shown(label)}<rope 4x", f"{_shown(label)} reads new positions at 4x with fewer bits per byte than RoPE",
            side("rope", four), side(label, four), f"{_shown(label)} < RoPE at 4×", REALISTIC_TEXT)
    for method, shown in (("pi", "PI"), ("ntk", "NTK-aware"), ("yarn", "YaRN"), ("llama3", "Llama 3")):
        add(f"rope+{method}<rope 4x", f"RoPE read with {shown} reads new positions at 4x with fewer bits per byte "
            "than RoPE read plainly", side("rope", four), side("rope", four, method), f"RoPE + {shown} < RoPE at 4×",
            REALISTIC_TEXT)
    table = "learned (normal)"
    for worse, better in (("clip", "interpolate"), ("modular", "interpolate")):
        add(f"table: {better}<{worse} 4x long", f"the table (2,400 steps) read with the {WORKAROUND_NAMES[better]} "
            f"reads new positions at 4x with fewer bits per byte than with {WORKAROUND_NAMES[worse]}",
            side(table, four, worse), side(table, four, better),
            f"table: {WORKAROUND_NAMES[better]} < {WORKAROUND_NAMES[worse]} at 4× (2,400 steps)", REALISTIC_TEXT_LONG)
    add("table+rescale<sinusoid 4x long", "the table read with the per-input rescale reads new positions at 4x with "
        "fewer bits per byte than the sinusoid (both 2,400 steps)", side("sinusoidal", four), side(table, four, "interpolate"),
        "table + rescale < sinusoid at 4× (2,400 steps)", REALISTIC_TEXT_LONG)
    add("nope<sinusoid 4x long", "no positions read new positions at 4x with fewer bits per byte than the "
        "sinusoid (both 2,400 steps)",
        side("sinusoidal", four), side("none", four), "NoPE < sinusoid at 4× (2,400 steps)", REALISTIC_TEXT_LONG)
    return found


FINDINGS: tuple[Finding, ...] = (*_suite_findings(), *_encoder_findings(), *_ch6_findings(), *_arm_findings(),
                                 *_scale_findings(), *_hybrid_findings(), *_scaling_findings(), *_matrix_findings(),
                                 *_passkey_findings(), *_text_findings())


def _check_unique(findings: Sequence[Finding]) -> None:
    keys = [f.key for f in findings]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise ValueError(f"finding keys must be unique, repeated: {duplicated}")


_check_unique(FINDINGS)


def finding(key: str) -> Finding:
    """The finding with this key.

    Raises:
        ValueError: naming the key and the keys that exist.
    """
    check_choice("key", key, [f.key for f in FINDINGS])
    return next(f for f in FINDINGS if f.key == key)


def findings_in(chapter: str) -> list[Finding]:
    """The findings a chapter states (notebook stem, e.g. ``"07_beyond_trained_length"``), in declaration order.

    Raises:
        ValueError: a chapter that states none (naming the chapters that do).
    """
    chapters = sorted({c for f in FINDINGS for c in f.chapters})
    check_choice("chapter", chapter, chapters)
    return [f for f in FINDINGS if chapter in f.chapters]


def past_the_length(item: Finding) -> bool:
    """Whether a finding reads scores past the training length (a ``new@``/``ft_new@``/``new_exact@``
    metric on either side) rather than at it."""
    check_instance("item", item, Finding, what="a Finding")
    sides = (item.conclusion.better, item.conclusion.worse)
    return any(isinstance(side, Side) and "new" in side.metric.partition("@")[0] for side in sides)


Loader = Callable[[str], Sequence[RunResult]]


@lru_cache(maxsize=8)
def _stored(name: str) -> tuple[RunResult, ...]:
    results, _ = load_results(data_path(name))
    return tuple(results)


def evaluate_finding(item: Finding | str, *, load: Loader = _stored) -> Verdict:
    """Evaluate one finding (or its key) on the runs of its stored grids.

    Runs that logged a learning curve also carry ``"curve_mean"`` (:func:`posenc.results.curve_mean`),
    the metric of the findings about how fast a scheme learns.

    Args:
        item: the :class:`Finding` or its key.
        load: reads one grid file's runs by name (default: ``book/data``, cached).
    """
    found = finding(item) if isinstance(item, str) else item
    if not isinstance(found, Finding):
        raise TypeError(f"item must be a Finding or a finding key, got {type(item).__name__}")
    if not callable(load):
        raise TypeError(f"load must be a function of a grid file name, got {load!r}")
    # with "curve_mean" (how fast each run learned) for runs that logged a learning curve
    runs = with_curve_mean([run for name in found.grids for run in load(name)])
    return evaluate(found.conclusion, runs)


def evaluate_findings(chapter: str, *, load: Loader = _stored) -> Mapping[str, Verdict]:
    """Every finding a chapter states, evaluated: ``{key: verdict}`` in declaration order."""
    if not callable(load):
        raise TypeError(f"load must be a function of a grid file name, got {load!r}")
    return {f.key: evaluate_finding(f, load=load) for f in findings_in(chapter)}


_SYMBOLS = {">": "_over_", "<": "_below_", "~": "_level_with_", "@": "_at_"}


def prose_name(key: str) -> str:
    """A finding's key as a Python name for the text's values: ``"t5>rope new@32"`` -> ``"t5_over_rope_new_at_32"``."""
    key = check_text("key", key, empty=False)
    for symbol, word in _SYMBOLS.items():
        key = key.replace(symbol, word)
    return re.sub(r"_+", "_", re.sub(r"\W", "_", key)).strip("_")


def verdict_prose(verdicts: Mapping[str, Verdict]) -> dict[str, str]:
    """The values a chapter's text shows for its verdicts, by :func:`prose_name`:
    ``verdict_<name>`` (the verdict in words, :func:`~posenc.robustness.verdict_phrase`) and
    ``kind_<name>`` (``"robust"``, ``"conditional"`` or ``"contradicted"``)."""
    values: dict[str, str] = {}
    for key, verdict in _checked_verdicts(verdicts).items():
        name = prose_name(key)
        values[f"verdict_{name}"] = verdict_phrase(verdict)
        values[f"kind_{name}"] = verdict.kind
    return values


def verdict_rows(verdicts: Mapping[str, Verdict]) -> list[dict[str, Any]]:
    """One row per verdict for a table: the claim, the verdict, and in how many settings it holds."""
    return [{"claim": v.conclusion.claim, "verdict": v.kind, "holds in": f"{v.holds_in} of {v.n}",
             "where it fails": v.where_it_fails.removeprefix("fails ") or "nowhere"}
            for v in _checked_verdicts(verdicts).values()]


def _checked_verdicts(verdicts: Any) -> Mapping[str, Verdict]:
    verdicts = check_mapping("verdicts", verdicts, min_len=1, what="a dict of finding key -> Verdict (evaluate_findings)")
    for key, verdict in verdicts.items():
        check_text("verdicts key", key, empty=False)
        check_instance(f"verdicts[{key!r}]", verdict, Verdict, what="a Verdict")
    return verdicts


def regime_rows(verdicts: Mapping[str, Verdict], regimes: Sequence[str] = tuple(SCALING_REGIMES)
                ) -> tuple[list[str], list[list[str]]]:
    """Claims declared in several regimes side by side: one row per claim, one column per regime.

    Args:
        verdicts: ``{key: verdict}`` whose keys start with a regime's name and a space
            (``"toy ntk>plain 4x"``, ``"realistic ntk>plain 4x"``), as :func:`_scaling_findings`
            (chapter 11) and :func:`_matrix_findings` (chapter 7) declare them; every claim must
            be declared in every regime.
        regimes: the regimes, in column order.

    Returns:
        ``(headers, rows)``: the comparison (its short label without the regime), each regime's
        verdict (kind and ``k/n``: holds in k of n settings), and whether the kind is the same in
        every regime.
    """
    verdicts = _checked_verdicts(verdicts)
    regimes = check_text_sequence("regimes", regimes, min_len=2)
    by_claim: dict[str, dict[str, Verdict]] = {}
    for key, verdict in verdicts.items():
        regime, _, claim = key.partition(" ")
        check_choice(f"the regime of verdict {key!r}", regime, regimes)
        by_claim.setdefault(claim, {})[regime] = verdict
    headers = ["comparison", *regimes, "same?"]
    rows = []
    for claim, found in by_claim.items():
        missing = [r for r in regimes if r not in found]
        if missing:
            raise ValueError(f"claim {claim!r} has no verdict in regime(s) {missing}")
        first = found[regimes[0]].conclusion
        words = first.short.removesuffix(f" ({regimes[0]})")  # short enough for a phone's width
        cells = [f"{found[r].kind} ({found[r].holds_in}/{found[r].n})" for r in regimes]
        same = len({found[r].kind for r in regimes}) == 1
        rows.append([words, *cells, "yes" if same else "no"])
    return headers, rows
