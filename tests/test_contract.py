"""posenc's input contract (the module docstring of ``posenc/checks.py``), swept over the whole public API.

The sweep
---------
:func:`public_targets` enumerates every public callable of posenc: each module's ``__all__``
(functions and classes, the ``*_plots`` modules and :mod:`posenc.book` included), and for each
class its constructor and the public methods it defines. A new public function is swept as
soon as it is exported; nobody writes a test for it.

For every target the sweep builds one valid call (:data:`EXAMPLES` by parameter name,
:data:`TARGET_EXAMPLES` where a target needs its own value; parameters with a default keep it)
and runs it once, so the examples are known to be valid. Then, parameter by parameter, it
replaces one argument by generic bad values chosen by the parameter's kind (:func:`kind_of`: from
its annotation, or :data:`KIND_BY_NAME` / :data:`KIND_BY_TARGET`): a wrong type, ``None`` (unless
the parameter is optional), a negative number, NaN, an empty collection, a 0-d tensor where a
shaped one is needed, a missing file. Each bad call must raise a ``TypeError`` or a ``ValueError``
(or a ``FileNotFoundError`` for a missing file) whose message names the parameter.

Where a valid call would be too slow for the sweep (loading ``transformers`` and a checkpoint), :data:`EXPENSIVE`
names the step that does the work and the sweep stands in for it: a call that reaches it has passed every check.
Bad values are still probed, and must be refused before that step.

What is deliberately accepted is in :data:`ALLOWED`, one entry per (target, parameter, probe),
``*`` matching any, each with its reason. A parameter whose kind the sweep cannot tell (an
``Any``, ``**options``) must have an entry too, so nothing is skipped silently; an entry that no
longer matches anything fails the test, so the list cannot go stale.

The hypothesis strategies at the end drive the core entry points with generated valid and
invalid arguments: :func:`posenc.sinusoidal.sinusoidal_table`, the RoPE functions, every
registered scheme through :func:`posenc.registry.make_position_scheme` and
:class:`posenc.models.TinyTransformer`, :class:`posenc.train.TrainConfig` and every task's
``sample``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import pkgutil
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import posenc

# ================================================================================ the public API
PACKAGE_DIR = Path(posenc.__file__).resolve().parent
MODULES: list[str] = ["posenc"] + sorted(
    info.name for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="posenc.")
)


@dataclass(frozen=True)
class Target:
    """One public callable: a function, a class (its constructor) or a public method of a class."""

    id: str  #: "posenc.sinusoidal.sinusoidal_table", "posenc.models.TinyTransformer", "...TinyTransformer.forward"
    obj: Any  #: the function, the class, or the method as found on the class
    owner: type | None = None  #: the class of a method
    method: str | None = None  #: the method's name

    @property
    def kind(self) -> str:
        return "method" if self.owner is not None else "constructor" if inspect.isclass(self.obj) else "function"

    def signature(self) -> inspect.Signature:
        if inspect.isclass(self.obj):
            init = self.obj.__init__
            return _without_self(inspect.signature(init))
        if self.owner is not None and isinstance(inspect.getattr_static(self.owner, self.method), staticmethod):
            return inspect.signature(self.obj)
        if self.owner is not None and isinstance(inspect.getattr_static(self.owner, self.method), classmethod):
            return inspect.signature(self.obj)  # bound to the class: cls is gone
        if self.owner is not None:
            return _without_self(inspect.signature(self.obj))
        return inspect.signature(self.obj)


def _without_self(signature: inspect.Signature) -> inspect.Signature:
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def _methods(cls: type) -> Iterator[str]:
    """Public methods ``cls`` itself defines (inherited ones are swept on the class that defines them)."""
    for name, value in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(value, staticmethod | classmethod) or inspect.isfunction(value):
            yield name


def public_targets() -> list[Target]:
    """Every public callable of posenc, each once (re-exports are swept where they are defined)."""
    targets: list[Target] = []
    seen: set[int] = set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not callable(obj) or id(obj) in seen or getattr(obj, "__module__", "").split(".")[0] != "posenc":
                continue
            seen.add(id(obj))
            home = f"{obj.__module__}.{obj.__qualname__}"
            targets.append(Target(home, obj))
            if inspect.isclass(obj):
                targets += [Target(f"{home}.{m}", getattr(obj, m), obj, m) for m in _methods(obj)]
    return targets


TARGETS = public_targets()


# ================================================================================ valid examples
# Small, valid values by parameter name; TARGET_EXAMPLES overrides them where a target needs its
# own. Each is a factory (a fresh tensor or model per call: some targets write into their input).
_TMP = Path(tempfile.mkdtemp(prefix="posenc-contract-"))


def _tiny_config(**changes: Any) -> Any:
    from posenc.train import TrainConfig

    base = dict(seq_len=4, steps=2, batch_size=2, d_model=8, n_heads=2, n_layers=1, eval_examples=4, log_every=1)
    return TrainConfig(**{**base, **changes})


def _model(**changes: Any) -> Any:
    from posenc.models import TinyTransformer

    return TinyTransformer(8, 8, **{**dict(d_model=8, n_heads=2, n_layers=1, max_len=8), **changes})


@cache
def _runs() -> tuple[Any, ...]:
    """Fake runs of a tiny grid: two schemes x two learning rates x two seeds, with every metric the readers read."""
    from posenc.results import RunResult

    runs = []
    for scheme, options in (("sinusoidal", {}), ("learned", {"init": "bert"})):
        for lr in (1e-3, 3e-3):
            for seed in (0, 1):
                config = _tiny_config(scheme=scheme, position_options=options, lr=lr, seed=seed, eval_lengths=(4, 8),
                                      eval_extrapolations=("clip",) if scheme == "learned" else (),
                                      per_position=True).to_dict()
                config["task"] = "copy_offset"
                value = 0.5 + 0.1 * seed + lr
                metrics = {"accuracy": value, "accuracy@4": value, "accuracy@8": value - 0.1, "new@8": value - 0.2,
                           "val_accuracy": value, "final_loss": 1.0 - value, "short@8": value, "ft_new@8": value}
                if scheme == "learned":
                    metrics = {k: v for k, v in metrics.items() if k not in ("accuracy@8", "new@8")}
                    metrics.update({"accuracy@8:clip": value - 0.15, "new@8:clip": value - 0.25})
                curve8 = [None, None] + [value] * 6
                extras = {"position_accuracy@4": [None, None, value, value]}
                extras["position_accuracy@8:clip" if scheme == "learned" else "position_accuracy@8"] = curve8
                history = [{"step": 1, "loss": 1.0, "accuracy": value}, {"step": 2, "loss": 0.5, "accuracy": value}]
                runs.append(RunResult(config=config, seed=seed, metrics=metrics, history=history, wall_time_s=0.1,
                                      extras=extras))
    return tuple(runs)


def _arm_runs() -> list[Any]:
    """The fake runs twice: with an anchor token and without (the two arms of a suite)."""
    from posenc.results import RunResult

    return [RunResult(config={**run.config, "bos_token": anchor}, seed=run.seed, metrics=run.metrics,
                      history=run.history, wall_time_s=run.wall_time_s, extras=run.extras)
            for run in _runs() for anchor in (True, False)]


def _cells() -> Any:
    from posenc.suite import choose_learning_rates

    return choose_learning_rates(list(_runs()))


def _cell() -> Any:
    return next(iter(_cells().values()))


def _analysis() -> Any:
    from posenc.analysis import analyze_table
    from posenc.sinusoidal import sinusoidal_table

    return analyze_table(sinusoidal_table(16, 8), n_components=4, n_periodic=2, norm_window=4, near_band=(2, 4),
                         far_from=8)


def _table() -> torch.Tensor:
    return torch.randn(8, 4, generator=torch.Generator().manual_seed(0))


def _results_file() -> Path:
    from posenc.results import save_results

    return save_results(list(_runs()), _TMP / "runs.json")


@cache
def _checkpoint_file() -> Path:
    from posenc.checkpoint import save_checkpoint

    config = _tiny_config()
    from posenc.train import build_model

    return save_checkpoint(build_model(config), config, _TMP / "model.safetensors")


@cache
def _bert_folder() -> Path:
    """A tiny BERT-style checkpoint (one layer, width 4, 2 heads) as the pretrained readers expect."""
    from safetensors.torch import save_file

    folder = _TMP / "bert"
    folder.mkdir(exist_ok=True)
    g = torch.Generator().manual_seed(0)
    d = 4
    tensors = {
        "embeddings.word_embeddings.weight": torch.randn(10, d, generator=g),
        "embeddings.position_embeddings.weight": torch.randn(6, d, generator=g),
        "embeddings.token_type_embeddings.weight": torch.randn(2, d, generator=g),
        "embeddings.LayerNorm.weight": torch.ones(d), "embeddings.LayerNorm.bias": torch.zeros(d),
        "encoder.layer.0.attention.self.query.weight": torch.randn(d, d, generator=g),
        "encoder.layer.0.attention.self.query.bias": torch.zeros(d),
        "encoder.layer.0.attention.self.key.weight": torch.randn(d, d, generator=g),
        "encoder.layer.0.attention.self.key.bias": torch.zeros(d),
    }
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text('{"num_attention_heads": 2, "layer_norm_eps": 1e-12}')
    return folder


def _explorer() -> Any:
    from posenc.interactive import Control, Explorer, Frame

    return Explorer(go.Figure(go.Scatter(x=[0], y=[0])), lambda n: Frame(layout={"title.text": str(n)}),
                    [Control("n", [1, 2])])


def _side(label: str = "sinusoidal") -> Any:
    from posenc.robustness import Side

    return Side(label, "accuracy")


def _conclusion() -> Any:
    from posenc.robustness import Conclusion

    return Conclusion("k", "sinusoidal beats learned", _side(), _side("learned (bert)"), ("copy_offset",),
                      over=("lr",))


def _verdict() -> Any:
    from posenc.robustness import evaluate

    return evaluate(_conclusion(), list(_runs()))


def _finding() -> Any:
    from posenc.book.findings import Finding

    return Finding(_conclusion(), ("tiny_grid.json",), ("07_beyond_trained_length",))


def _no_grid(name: str) -> list[Any]:
    """evaluate_findings' loader in its valid call: it stands for reading the chapter's stored grids
    (which the fake runs cannot replace), so reaching it means the call passed its checks."""
    raise ReachedWork(name)


def _panels() -> list[Any]:
    import plotly.graph_objects as go

    from posenc.paper import Panel

    return [Panel(f"slope {k}", go.Figure(go.Scatter(x=[0, 1, 2], y=[0, k, 2 * k]))) for k in (1, 2)]


def _claim() -> Any:
    from posenc.book.factcheck import Claim

    return Claim("c1", "source", "a claim", "confirmed", "see {ref}`somewhere`")


def _bytes() -> torch.Tensor:
    """A stream of 40 bytes, as posenc.corpus.split_bytes gives (uint8)."""
    return torch.tensor(list(b"the cat sat on the mat; the dog sat too."), dtype=torch.uint8)


def _byte_model() -> Any:
    """A tiny byte-level model: (batch, length) bytes -> (batch, length, 256) logits."""
    from posenc.models import TinyTransformer

    torch.manual_seed(0)
    return TinyTransformer(256, 256, d_model=8, n_heads=2, n_layers=1, max_len=16, position="rope", causal=True).eval()


def _bert_q_k_v() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(4, 4, generator=g, dtype=torch.float64) for _ in range(3))


#: parameter name -> factory of a valid value (the common meaning of the name in posenc).
EXAMPLES: dict[str, Callable[[], Any]] = {
    "d_model": lambda: 8, "n_heads": lambda: 2, "seq_len": lambda: 4, "max_len": lambda: 8, "d_head": lambda: 4,
    "n_positions": lambda: 4, "new_len": lambda: 12, "train_len": lambda: 4, "target_len": lambda: 8,
    "vocab_size": lambda: 10, "n_outputs": lambda: 8, "d_ff": lambda: 16, "rank": lambda: 2, "n_segments": lambda: 2,
    "segment_len": lambda: 4, "length": lambda: 4, "k": lambda: 1, "positions": lambda: torch.arange(4),
    "table": _table, "matrix": lambda: torch.eye(4, dtype=torch.float64), "offset": lambda: 1,
    "x": lambda: torch.randn(2, 4, 8), "model": _model, "tokens": lambda: torch.tensor([[1, 2, 3, 4]]),
    "task": lambda: __import__("posenc.tasks", fromlist=["x"]).CopyOffsetTask(),
    "config": _tiny_config, "results": lambda: list(_runs()), "runs": lambda: list(_runs()),
    "result": lambda: _runs()[0], "stored": lambda: _runs()[0], "metric": lambda: "accuracy", "key": lambda: "accuracy",
    "path": _results_file, "cells": _cells, "cell": _cell, "strategy": lambda: "clip", "method": lambda: "ntk",
    "factor": lambda: 2.0, "words": lambda: ["dog", "bites", "man"], "title": lambda: "a title", "alt": lambda: "alt text",
    "y_title": lambda: "y", "x_title": lambda: "x", "name": lambda: "table", "label": lambda: "a label",
    "q": lambda: torch.randn(4, 4), "k_positions": lambda: torch.arange(4), "q_positions": lambda: torch.arange(4),
    "v": lambda: torch.randn(4, 3), "prompt_len": lambda: 2, "lengths": lambda: [4, 8], "ranks": lambda: [1, 2],
    "weights": lambda: __import__("posenc.order", fromlist=["x"]).random_attention(8),
    "analyses": lambda: {"sinusoidal": _analysis()}, "tables": lambda: {"a": _table(), "b": _table() + 1.0},
    "run": lambda: __import__("posenc.learned_plots", fromlist=["x"]).train_with_short_inputs(
        max_len=8, lengths=(3, 4), d_model=4, steps=2, batch=2, snapshot_steps=(0, 1)),
    "values": lambda: [0.5, 0.9, 0.95], "threshold": lambda: 0.9, "scaling": lambda: None,
    "occurs": lambda: [[0, 1], [2]], "optimizer": lambda: "adam", "init": lambda: "bert", "layer": lambda: 0,
    "embedding": lambda: nn.Embedding(10, 8), "token_ids": lambda: torch.tensor([1, 2, 3]),
    "signal": lambda: torch.sin(torch.arange(16.0)), "first": lambda: torch.sin(torch.arange(8.0)),
    "second": lambda: torch.cos(torch.arange(8.0)), "share": lambda: 0.9, "edges": lambda: [2.0, 4.0, 8.0],
    "logits": lambda: torch.randn(2, 4, 4), "peaks": lambda: np.array([[0, -1, -1, -2]]),
    "w_query": lambda: torch.eye(4), "w_key": lambda: torch.eye(4), "low": lambda: 1,
    "curve": lambda: [None, 0.5, 0.75, 1.0], "labelled": lambda: [0, 2, 2, 2],
    "predictions": lambda: torch.tensor([[1, 2]]), "targets": lambda: torch.tensor([[1, -100]]),
    "n_examples": lambda: 8, "steps": lambda: 2, "generator": lambda: torch.Generator().manual_seed(0),
    "batch_size": lambda: 2, "n_symbols": lambda: 4, "relative_position": lambda: torch.arange(-3, 4),
    "bidirectional": lambda: True, "distances": lambda: torch.arange(4.0), "check": lambda: (lambda impl: impl()),
    "implementation": lambda: (lambda: None), "build": lambda: __import__("posenc.bugs", fromlist=["x"]).sinusoid_table_recipe,
    "measures": lambda: {"accuracy": "accuracy"}, "maps": lambda: {"plain": np.zeros((1, 2, 8, 8))},
    "document_lengths": lambda: [3, 2], "attention_mask": lambda: torch.tensor([[0, 1, 1], [1, 1, 1]]),
    "past_length": lambda: 2, "n_new": lambda: 2, "weight": lambda: torch.randn(8, 4), "to": lambda: "half",
    "dtype": lambda: torch.float32, "kernel": lambda: torch.randn(8, 8, 3), "shift": lambda: 1,
    "permutation": lambda: [2, 0, 1, 3], "prefix_order": lambda: [1, 0], "mode": lambda: "none",
    "a": lambda: [1.0, 0.5], "b": lambda: [0.0, 0.5], "form": lambda: torch.eye(4, dtype=torch.float64),
    "scores": lambda: torch.eye(4, dtype=torch.float64), "padding_idx": lambda: 1, "input_ids": lambda: torch.tensor([[5, 6, 1]]),
    "std": lambda: 0.02, "max_offset": lambda: 3, "offsets": lambda: [0, 1, 2], "ratios": lambda: {"a": np.array([0.5, 0.3])},
    "norms": lambda: {"a": np.ones(8)}, "curves": lambda: {"a": np.linspace(1, 0, 8)}, "similarity": lambda: np.eye(8),
    "timings": lambda: {(4, 8): {"learned: table lookup": 1e-6, "sinusoidal: posenc": 2e-6}},
    "rows": lambda: [{"label": "a", "mean": 0.5, "std": 0.1, "values": [0.4, 0.6]}], "groups": lambda: ["a"],
    "headers": lambda: ["a", "b"], "n": lambda: 10, "max_count": lambda: 3, "index": lambda: 0, "colour": lambda: "#000000",
    "fig": lambda: go.Figure(), "figure": lambda: go.Figure(go.Scatter(x=[0], y=[0])), "z": lambda: [[0.0, 1.0]],
    "update": lambda: (lambda n: __import__("posenc.interactive", fromlist=["x"]).Frame()),
    "controls": lambda: [__import__("posenc.interactive", fromlist=["x"]).Control("n", [1, 2])],
    "frame": lambda: __import__("posenc.interactive", fromlist=["x"]).Frame(),
    "claims": lambda: [_claim()], "verdict": lambda: "right", "obj": lambda: posenc.checks.check_positive_int,
    "conclusion": _conclusion, "side": _side, "better": lambda: {0: 0.9, 1: 0.95}, "worse": lambda: {0: 0.5, 1: 0.6},
    "paired": lambda: False, "by_lr": lambda: {1e-3: list(_runs())[:2], 3e-3: list(_runs())[2:4]},
    "solved": lambda: 0.9, "cache": lambda: __import__("posenc.sinusoidal", fromlist=["x"]).SinusoidalPositionalEncoding(8),
    "start": lambda: 0, "add": lambda: __import__("posenc.bugs", fromlist=["x"]).add_positions_from_cache_fixed,
    "embed": lambda: __import__("posenc.bugs", fromlist=["x"]).embed_with_scale,
    "cos_sin": lambda: __import__("posenc.rope_practice", fromlist=["x"]).rope_cos_sin,
    "generate": lambda: __import__("posenc.bugs", fromlist=["x"]).generate_dynamic_ntk_fixed,
    "w_q": lambda: torch.randn(4, 8, dtype=torch.float64),
    "w_k": lambda: torch.randn(4, 8, dtype=torch.float64), "grad_norms": lambda: torch.rand(8),
    "value": lambda: 0.5, "kept": lambda: True, "status": lambda: "holds", "factory": lambda: (lambda **kw: None),
    "max_cells": lambda: 8, "window": lambda: 2, "n_components": lambda: 2, "digits": lambda: 2,
    "series": lambda: {"a": ([4, 8], [0.5, 0.4], [0.1, 0.1])}, "errors": lambda: {"posenc": np.full(4, 1e-7)},
    "split": lambda: "test", "repeats": lambda: 2, "fraction": lambda: 0.5, "texts": lambda: ["the cat sat"],
    "calls": lambda: {"a": lambda: None, "b": lambda: None}, "data": lambda: _bytes(),
    "verdicts": lambda: [_verdict()], "setting": lambda: {"task": "copy_offset", "anchor": True, "lr": 3e-3},
}

def _import(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _heads() -> Any:
    from posenc.analysis import peak_offset_shares

    return peak_offset_shares(np.array([[0, -1, -1, -2], [0, 0, 1, -3]]))


def _attention_weights() -> Any:
    from posenc.analysis import attention_weights

    return attention_weights(_model())


#: target pattern -> {parameter: factory}: values for one target where the common one does not fit.
TARGET_EXAMPLES: dict[str, dict[str, Callable[[], Any]]] = {
    "posenc.book.factcheck.Claim": {"id": lambda: "c1", "source": lambda: "s", "claim": lambda: "a claim",
                                    "verdict": lambda: "confirmed", "evidence": lambda: "see {ref}`x`"},
    "posenc.interactive.Explorer.frame": {"n": lambda: 1},
    "posenc.params_plots.position_params_figure": {"max_lens": lambda: [8, 16], "d_models": lambda: [4, 8]},
    "posenc.params_plots.position_share_figure": {"max_lens": lambda: [8, 16]},
    "posenc.plots.html_table": {"rows": lambda: [["a", 1]]},
    "posenc.results.one_of": {"*": lambda: ("rope", "alibi")},
    "posenc.results.check_results": {"name": lambda: "results"},
    "posenc.analysis.similarity_summary": {"near_band": lambda: (1, 2), "far_from": lambda: 4},
    "posenc.analysis.row_norms": {"window": lambda: 2},
    "posenc.analysis.principal_components": {"n_components": lambda: 2},
    "posenc.analysis.analyze_table": {"n_components": lambda: 2, "n_periodic": lambda: 1, "near_band": lambda: (1, 2),
                                      "far_from": lambda: 4, "norm_window": lambda: 2},
    "posenc.analysis.HeadPeaks.window": {"low": lambda: -2, "high": lambda: 2},
    "posenc.analysis.band_mean": {"matrix": lambda: np.eye(4)},
    "posenc.analysis_plots.analysis_explorer": {"windows": lambda: (8, 16), "max_cells": lambda: 8,
                                                "n_components": lambda: 2},
    "posenc.analysis_plots.components_grid": {"n_components": lambda: 2},
    "posenc.analysis_plots.pair_trajectory": {"first": lambda: np.sin(np.arange(8.0)),
                                              "second": lambda: np.cos(np.arange(8.0))},
    "posenc.analysis_plots.peak_share_figure": {"peaks": lambda: {"a": _heads()}},
    "posenc.analysis_plots.attention_explorer": {"logits": lambda: {"a": np.random.default_rng(0).normal(size=(2, 6, 6))},
                                                 "max_cells": lambda: 4},
    "posenc.analysis_plots.subsample_square": {"matrix": lambda: np.eye(8)},
    "posenc.book.data_path": {"name": lambda: "ch6_grid.json"},
    "posenc.book.factcheck.verdict_key": {"verdict": lambda: "confirmed"},
    "posenc.bugs.add_positions_from_cache*": {"x": lambda: torch.zeros(2, 8)},
    "posenc.bugs.check_alibi_slopes": {"slopes": lambda: _import("posenc.relative.alibi_slopes")},
    "posenc.bugs.check_fails": {"check": lambda: _import("posenc.bugs.check_alibi_slopes"),
                                "implementation": lambda: _import("posenc.bugs.alibi_slopes_geometric")},
    "posenc.bugs.check_odd_width": {"build": lambda: _import("posenc.bugs.sinusoid_table_any_width")},
    "posenc.bugs.check_rope_layout_conversion": {"scores": lambda: _import("posenc.bugs.half_split_scores_fixed")},
    "posenc.bugs.rope_layout_gaps": {"scores": lambda: _import("posenc.bugs.half_split_scores_fixed")},
    "posenc.bugs.generate_dynamic_ntk_*": {
        "q": lambda: _bert_q_k_v()[0], "k": lambda: _bert_q_k_v()[1], "v": lambda: _bert_q_k_v()[2],
        "scaling": lambda: _import("posenc.rope_scaling.RopeScaling")("dynamic_ntk", train_len=2)},
    "posenc.bugs.*_scores*": {"x": lambda: torch.randn(4, 8, dtype=torch.float64)},
    "posenc.bugs.rope_cos_sin_model_dtype": {"positions": lambda: torch.arange(4)},
    "posenc.bugs.*config_scaling*": {"build": lambda: _import("posenc.bugs.rotary_inverse_frequencies_fixed")},
    "posenc.bugs.*longrope_*": {"generate": lambda: _import("posenc.bugs.generate_longrope_fixed")},
    "posenc.bugs.cos_sin_error": {"positions": lambda: torch.arange(4)},
    "posenc.bugs.shift_error": {"table": lambda: _import("posenc.sinusoidal.sinusoidal_table")(8, 4)},
    "posenc.bugs.pair_radius_error": {"table": lambda: _import("posenc.sinusoidal.sinusoidal_table")(8, 4)},
    "posenc.bugs.to_interleaved": {"table": lambda: torch.randn(3, 4)},
    "posenc.bugs.embed_with*": {"embedding": lambda: nn.Embedding(10, 8)},
    "posenc.checkpoint.checkpoint_bytes": {"model": lambda: _import("posenc.train.build_model")(_tiny_config())},
    "posenc.checkpoint.save_checkpoint": {"model": lambda: _import("posenc.train.build_model")(_tiny_config()),
                                          "path": lambda: _TMP / "saved.safetensors"},
    "posenc.checkpoint.load_checkpoint": {"path": _checkpoint_file},
    "posenc.checks.*": {"name": lambda: "n", "value": lambda: 3},
    "posenc.checks.check_even_int": {"value": lambda: 4, "why": lambda: "pairs"},
    "posenc.checks.check_choice": {"value": lambda: "a", "allowed": lambda: ("a", "b")},
    "posenc.checks.check_choice_sequence": {"value": lambda: ["a"], "allowed": lambda: ("a", "b")},
    "posenc.checks.check_real": {"value": lambda: 0.5},
    "posenc.checks.check_real_pair": {"value": lambda: (0.0, 1.0)},
    "posenc.checks.check_records": {"value": lambda: [{"a": 1}], "keys": lambda: ("a",)},
    "posenc.checks.check_positive_float": {"value": lambda: 0.5},
    "posenc.checks.check_bool": {"value": lambda: True},
    "posenc.checks.check_text": {"value": lambda: "text"},
    "posenc.checks.check_int_sequence": {"value": lambda: [1, 2]},
    "posenc.checks.check_text_sequence": {"value": lambda: ["a"]},
    "posenc.checks.check_instance": {"types": lambda: int},
    "posenc.checks.check_callable": {"value": lambda: len},
    "posenc.checks.check_mapping": {"value": lambda: {"a": 1}},
    "posenc.checks.check_tensor": {"value": lambda: torch.zeros(2)},
    "posenc.checks.check_dtype": {"value": lambda: torch.float32, "allowed": lambda: (torch.float32,)},
    "posenc.checks.check_device": {"value": lambda: "cpu"},
    "posenc.checks.check_generator": {"value": lambda: None},
    "posenc.checks.check_file": {"value": _results_file},
    "posenc.checks.check_path": {"value": lambda: "a.json"},
    "posenc.checks.check_*positions": {"positions": lambda: [0, 1]},
    "posenc.compare.offset_dependence": {"max_offset": lambda: 3},
    "posenc.compare.time_position_vectors": {"number": lambda: 1, "repeats": lambda: 1, "batch": lambda: 1},
    "posenc.compare_plots.dot_product_by_offset_figure": {"starts": lambda: (0, 2), "max_offset": lambda: 3,
                                                          "tables": lambda: {"a": torch.randn(8, 4)}},
    "posenc.extrapolate.fractional_sinusoidal": {"positions": lambda: torch.tensor([0.0, 1.5])},
    "posenc.hybrid.HybridScheme": {"module": lambda: _import("posenc.hybrid.ScaledSinusoidalEmbedding")(8)},
    "posenc.hybrid*.embed": {"x": lambda: torch.randn(2, 4, 8)},
    "posenc.hybrid_plots.accuracy_bars_figure": {
        "rows": lambda: [{"label": "a", "group": "g", "mean": 0.5, "std": 0.1}], "groups": lambda: ["g"]},
    "posenc.hybrid_plots.low_rank_explorer": {"ranks": lambda: (1, 2)},
    "posenc.interactive.Control": {"values": lambda: [1, 2]},
    "posenc.learned.LearnedPositionEmbedding.lookup": {"position_ids": lambda: torch.arange(4)},
    "posenc.learned.LearnedPositionEmbedding.forward": {"x": lambda: torch.randn(2, 4, 4)},
    "posenc.learned.init_table_": {"weight": lambda: torch.empty(4, 8)},
    "posenc.learned.truncated_normal_std": {"std": lambda: 0.02},
    "posenc.learned_plots.learned_explorer": {"inits": lambda: ("bert", "gpt2"), "d_models": lambda: (4,),
                                              "max_lens": lambda: (8,), "max_cells": lambda: 4},
    "posenc.learned_plots.gradient_rows_figure": {"seq_len": lambda: 4},
    "posenc.learned_plots.train_with_short_inputs": {"max_len": lambda: 8, "lengths": lambda: (3, 4), "d_model": lambda: 4,
                                                     "steps": lambda: 2, "batch": lambda: 2},
    "posenc.learned_plots.init_*": {"tables": lambda: {"bert": _table()}},
    "posenc.models.MultiHeadSelfAttention.forward": {"x": lambda: torch.randn(2, 4, 8),
                                                     "positions": lambda: torch.arange(4),
                                                     "scheme": lambda: _import("posenc.schemes.NoPosition")()},
    "posenc.models.TransformerBlock.forward": {"x": lambda: torch.randn(2, 4, 8), "positions": lambda: torch.arange(4),
                                               "scheme": lambda: _import("posenc.schemes.NoPosition")()},
    "posenc.models.TinyTransformer.embed": {"tokens": lambda: torch.tensor([[1, 2, 3, 4]])},
    "posenc.order.*": {"x": lambda: torch.randn(4, 8)},
    "posenc.order.AttentionWeights": {"w_q": lambda: torch.eye(8), "w_k": lambda: torch.eye(8), "w_v": lambda: torch.eye(8)},
    "posenc.order.convolve": {"kernel": lambda: torch.randn(8, 8, 3)},
    "posenc.order.convolution_shift_gap": {"kernel": lambda: torch.randn(8, 8, 3)},
    "posenc.params.count_parameters": {"config": lambda: _import("posenc.params.CONFIGS")["BERT-base"]},
    "posenc.params.reference_modules": {"config": lambda: _import("posenc.params.CONFIGS")["BERT-base"]},
    "posenc.params.TransformerConfig": {"name": lambda: "tiny", "family": lambda: "gpt2", "vocab_size": lambda: 10,
                                        "n_layers": lambda: 1},
    "posenc.params.training_bytes": {"n_params": lambda: 10},
    "posenc.params.module_parameter_count": {"module": lambda: nn.Linear(2, 2)},
    "posenc.params_plots.*": {"configs": lambda: list(_import("posenc.params.CONFIGS").values())[:2]},
    "posenc.plots.heatmap": {"colorbar_title": lambda: "c"},
    "posenc.plots.describe": {"fig": lambda: go.Figure()},
    "posenc.plots.figure_html": {"fig": lambda: go.Figure()},
    "posenc.plots.thin_indices": {"n": lambda: 10},
    "posenc.pretrained.*": {"path": _bert_folder},
    "posenc.pretrained.token_vectors": {"input_ids": lambda: [1, 2, 3]},
    "posenc.compare.timing_spread": {"samples": lambda: [1e-6, 2e-6, 3e-6]},
    "posenc.compare.ratio_spread": {"samples": lambda: {"a": [2e-6, 4e-6], "b": [1e-6, 2e-6]},
                                    "numerator": lambda: "a", "denominator": lambda: "b"},
    "posenc.perplexity.*": {"model": _byte_model},
    "posenc.perplexity.ScoredBytes.profile": {"bucket": lambda: 2},
    "posenc.perplexity.ngram_bits": {"train": lambda: torch.arange(64) % 7, "test": lambda: torch.arange(32) % 5},
    "posenc.corpus.*": {"split": lambda: "test"},
    "posenc.registry.*": {"name": lambda: "rope"},
    "posenc.registry.register_scheme": {"name": lambda: "contract-scheme",
                                        "factory": lambda: (lambda **kw: _import("posenc.schemes.NoPosition")())},
    "posenc.registry.unregister_scheme": {"name": lambda: _registered("contract-gone")},
    "posenc.registry.SchemeSpec.options_for": {"causal": lambda: True},
    "posenc.relative.apply_rope": {"x": lambda: torch.randn(2, 4, 4)},
    "posenc.relative.RotaryEmbedding.forward": {"q": lambda: torch.randn(1, 2, 4, 4), "k": lambda: torch.randn(1, 2, 4, 4)},
    "posenc.relative.RopeScheme.rotate": {"q": lambda: torch.randn(1, 2, 4, 4), "k": lambda: torch.randn(1, 2, 4, 4)},
    "posenc.relative.RopeScheme.set_position_interpolation": {"train_len": lambda: 4, "target_len": lambda: 8},
    "posenc.relative.RopeScheme.set_scaling": {"scaling": lambda: _import("posenc.rope_scaling.RopeScaling")("pi", factor=2.0)},
    "posenc.relative_plots.rope_scores": {"q": lambda: torch.randn(4), "k": lambda: torch.randn(4),
                                          "query_position": lambda: 2},
    "posenc.relative_plots.length_table_html": {
        "rows": lambda: [{"label": "a", "length": 4, "mean": 0.5, "std": 0.1, "n": 2}]},
    "posenc.relative_plots.series_from_rows": {
        "rows": lambda: [{"label": "a", "length": 4, "mean": 0.5, "std": 0.1, "n": 2}]},
    "posenc.results.RunResult": {"config": lambda: _tiny_config().to_dict(), "seed": lambda: 0,
                                 "metrics": lambda: {"accuracy": 0.5}, "history": lambda: [], "wall_time_s": lambda: 0.1},
    "posenc.results.RunResult.from_dict": {"data": lambda: _runs()[0].to_dict()},
    "posenc.results.scheme_label": {"scheme": lambda: "learned"},
    "posenc.results.field_values": {"name": lambda: "scheme"},
    "posenc.results.select_labels": {"labels": lambda: ["sinusoidal"]},
    "posenc.results.differing_fields": {"reference": lambda: _runs()[0].config},
    "posenc.results.summary_by_label": {"results": lambda: [r for r in _runs() if r.config["lr"] == 1e-3]},
    "posenc.results.position_curve": {"key": lambda: "4"},
    "posenc.results.reach_text": {"summary": lambda: {"reached": 1, "n": 2, "mean": 2.0, "std": 0.0}},
    "posenc.results.accuracy_by_length": {"lengths": lambda: [4]},
    "posenc.results.length_curves": {"lengths": lambda: [4]},
    "posenc.results.position_curves": {"lengths": lambda: [4]},
    "posenc.results.curve": {"key": lambda: "loss"},
    "posenc.results_plots.errorbar_figure": {"series": lambda: {"a": ([4, 8], [0.5, 0.4], [0.1, 0.1])}},
    "posenc.results_plots.position_accuracy_explorer": {"lengths": lambda: [4]},
    "posenc.robustness.Conclusion": {"key": lambda: "k", "claim": lambda: "a claim", "better": _side,
                                     "worse": lambda: _side("learned (bert)"), "tasks": lambda: ("copy_offset",)},
    "posenc.robustness.evaluate": {"conclusion": _conclusion},
    "posenc.robustness.side_values": {"side": _side},
    "posenc.robustness.verdict_phrase": {"verdict": _verdict},
    "posenc.robustness.where_it_holds": {"verdict": _verdict},
    "posenc.robustness.map_cell": {"results": lambda: list(_verdict().results)},
    "posenc.robustness.map_rows": {"verdicts": lambda: [_verdict()]},
    "posenc.book.findings.past_the_length": {"item": _finding},
    "posenc.robustness.rate_text": {"lr": lambda: 1e-3},
    "posenc.results.config_value": {"config": lambda: {"task": "copy_offset"}, "name": lambda: "bos_token"},
    "posenc.book.findings.Finding": {"conclusion": _conclusion, "grids": lambda: ("suite_grid.json",),
                                     "chapters": lambda: ("07_beyond_trained_length",)},
    "posenc.book.findings.finding": {"key": lambda: "t5>rope new@32"},
    "posenc.book.findings.findings_in": {"chapter": lambda: "08_hybrids"},
    "posenc.book.findings.evaluate_finding": {"item": _finding, "load": lambda: (lambda name: list(_runs()))},
    "posenc.book.findings.evaluate_findings": {"chapter": lambda: "08_hybrids", "load": lambda: _no_grid},
    "posenc.book.findings.prose_name": {"key": lambda: "t5>rope new@32"},
    "posenc.book.findings.verdict_prose": {"verdicts": lambda: {"k": _verdict()}},
    "posenc.book.findings.verdict_rows": {"verdicts": lambda: {"k": _verdict()}},
    "posenc.book.findings.regime_rows": {"verdicts": lambda: {"toy k": _verdict(), "realistic k": _verdict()}},
    "posenc.interactive.Explorer.print_html": {"uid": lambda: "x1"},
    "posenc.palette.lightness": {"hex_colour": lambda: "#0072B2"},
    "posenc.paper.small_multiples": {"panels": _panels},
    "posenc.paper.to_svg": {"figure": lambda: __import__("posenc.paper", fromlist=["x"]).small_multiples(_panels()),
                            "salt": lambda: "x1"},
    "posenc.paper.wrap_to_width": {"text": lambda: "a few words to wrap", "width_pt": lambda: 40.0,
                                   "size": lambda: 8.0},
    "posenc.plots.plain_text": {"text": lambda: "a <b>bold</b> title"},
    "posenc.rope_practice.*": {"q": lambda: torch.randn(4, 4), "k": lambda: torch.randn(4, 4), "v": lambda: torch.randn(4, 3)},
    "posenc.rope_practice.permute_rotary_weight": {"weight": lambda: torch.randn(8, 3)},
    "posenc.rope_practice.angle_error": {"dtype": lambda: torch.bfloat16},
    "posenc.rope_scaling.RopeScaling": {"method": lambda: "ntk"},
    "posenc.rope_scaling.RopeScaling.for_length": {"method": lambda: "yarn"},
    "posenc.rope_scaling.pair_diagnostic": {"d_head": lambda: 8, "train_len": lambda: 4, "target_len": lambda: 16},
    "posenc.rope_scaling.LongRopeScaling": {"short_factor": lambda: (1.0, 1.0), "long_factor": lambda: (1.0, 2.0)},
    "posenc.rope_scaling.longrope_inverse_frequencies": {"short_factor": lambda: (1.0, 1.0),
                                                         "long_factor": lambda: (1.0, 2.0)},
    "posenc.landscape.ModelRow": {"model": lambda: "A model", "released": lambda: "2026", "scheme": lambda: "RoPE",
                                  "base": lambda: "10,000", "scaling": lambda: "none", "context": lambda: "4K",
                                  "position_free": lambda: "none", "partial": lambda: "1",
                                  "sources": lambda: ("devlin2019bert",), "provenance": lambda: "a source"},
    "posenc.long_context.*": {"position_ids": lambda: torch.tensor([[0, 1, 2], [0, 0, 1]])},
    "posenc.long_context.softmax_with_sink": {"sink": lambda: 0.5},
    "posenc.long_context.streaming_cache": {"n_tokens": lambda: 10, "n_sink": lambda: 2, "window": lambda: 4},
    "posenc.long_context.effective_length": {"scores": lambda: {16: 1.0, 32: 0.95, 64: 0.5}},
    "posenc.robustness.and_list": {"items": lambda: ("RoPE", "ALiBi")},
    "posenc.suite.tied_effective_lengths": {"cell": _cell, "metrics": lambda: {4: "accuracy@4", 8: "accuracy@8"},
                                                  "threshold": lambda: 0.5},
    "posenc.rope_config.*": {"config": lambda: _hf_config()},
    "posenc.rope_config.RopeSettings": {"rope_type": lambda: "default", "rope_theta": lambda: 10000.0,
                                        "head_dim": lambda: 8},
    "posenc.rope_config.check_rope_frequencies": {
        "inv_freq": lambda: _import("posenc.rope_config.rope_settings")(_hf_config()).inverse_frequencies()},
    "posenc.rope_config.frequency_mismatch": {"expected": lambda: torch.ones(4, dtype=torch.float64),
                                              "got": lambda: torch.ones(4)},
    "posenc.rope_config.softmax_scale": {"qk_head_dim": lambda: 192},
    "posenc.rope_variants.*": {"q": lambda: torch.randn(3, 4, dtype=torch.float64),
                               "q_nope": lambda: torch.randn(3, 4, dtype=torch.float64),
                               "q_rope": lambda: torch.randn(3, 2, dtype=torch.float64),
                               "latents": lambda: torch.randn(5, 2, dtype=torch.float64),
                               "k_rope": lambda: torch.randn(5, 2, dtype=torch.float64),
                               "w_uk": lambda: torch.randn(4, 2, dtype=torch.float64),
                               "q_positions": lambda: torch.arange(3), "k_positions": lambda: torch.arange(5)},
    "posenc.rope_variants.axial_rope": {"x": lambda: torch.randn(2, 8, dtype=torch.float64),
                                        "rows": lambda: torch.tensor([0, 1]), "cols": lambda: torch.tensor([1, 3])},
    "posenc.rope_variants.cache_width": {"latent": lambda: 8, "rope": lambda: 2},
    "posenc.rope_variants.mrope_position_ids": {"n_text_before": lambda: 2, "grid": lambda: (1, 2, 2),
                                                "n_text_after": lambda: 1},
    "posenc.rope_variants.mrope_angles": {
        "position_ids": lambda: _import("posenc.rope_variants.mrope_position_ids")(2, (1, 2, 2), 1),
        "d_head": lambda: 8, "sections": lambda: (1, 2, 1)},
    "posenc.rope_scaling_plots.attention_maps_figure": {"maps": lambda: {"plain": np.eye(4)}, "head": lambda: 0},
    "posenc.schemes.reject_options": {"name": lambda: "rope", "options": lambda: {"base": 10.0},
                                      "allowed": lambda: ("base",)},
    "posenc.schemes.*.embed": {"x": lambda: torch.randn(2, 4, 8)},
    "posenc.schemes.*.rotate": {"q": lambda: torch.randn(1, 2, 4, 4), "k": lambda: torch.randn(1, 2, 4, 4)},
    "posenc.schemes.*Scheme.set_extrapolation": {"strategy": lambda: "clip"},
    "posenc.sinusoidal.SinusoidalPositionalEncoding.encoding": {"position_ids": lambda: torch.arange(4)},
    "posenc.sinusoidal.SinusoidalPositionalEncoding.forward": {"x": lambda: torch.randn(2, 4, 8)},
    "posenc.sinusoidal.row_errors": {"table": lambda: _import("posenc.sinusoidal.sinusoidal_table")(8, 4)},
    "posenc.sinusoidal.bilinear_scores": {"table": lambda: torch.randn(4, 4)},
    "posenc.sinusoidal_plots.pool_rows": {"values": lambda: torch.randn(8, 4), "max_rows": lambda: 4},
    "posenc.sinusoidal_plots.pick_channels": {"max_channels": lambda: 4},
    "posenc.sinusoidal_plots.drawable_table": {"table": lambda: torch.randn(8, 4)},
    "posenc.sinusoidal_plots.table_explorer": {"d_models": lambda: (8,), "lengths": lambda: (8,)},
    "posenc.sinusoidal_plots.precision_figure": {"positions": lambda: np.arange(4.0)},
    "posenc.sinusoidal_plots.score_forms_figure": {"scores": lambda: {"a": np.eye(4)}},
    "posenc.sinusoidal_plots.offset_head_figure": {"weights": lambda: np.eye(6)},
    "posenc.suite.outcome_text": {"result": lambda: _import("posenc.suite.outcome")([0.5, 0.95])},
    "posenc.suite.arm_ranges": {"results": lambda: _arm_runs()},
    "posenc.suite.ranges_by": {"field": lambda: "seed"},
    "posenc.suite.ranking_text": {"ranges": lambda: {"rope": (0.5, 0.6), "alibi": (0.9, 1.0)}},
    "posenc.suite.reversals": {"before": lambda: {"rope": (0.5, 0.6), "alibi": (0.9, 1.0)},
                               "after": lambda: {"rope": (0.9, 1.0), "alibi": (0.5, 0.6)}},
    "posenc.suite.arm_table": {"ranges": lambda: {("anchor", "copy_offset", "rope"): (0.5, 0.6)}},
    "posenc.results.drop_onsets": {"positions": lambda: [2, 3, 4], "accuracy": lambda: [1.0, 0.9, 0.5]},
    "posenc.suite.new_position_series": {"lengths": lambda: [8]},
    "posenc.suite.stored_key": {"name": lambda: "bpb", "length": lambda: 8, "train_len": lambda: 4},
    "posenc.suite.bpb_mean": {"name": lambda: "bpb", "length": lambda: 8},
    "posenc.suite.tied_bpb_range": {"name": lambda: "bpb", "length": lambda: 8},
    "posenc.suite.profile_mean": {"length": lambda: 8},
    "posenc.suite.tied_rows": {"metrics": lambda: ["accuracy"], "task": lambda: "copy_offset"},
    "posenc.suite.renamed_cells": {"names": lambda: {"rope": "RoPE"}},
    "posenc.suite.range_text": {"low": lambda: 0.2, "high": lambda: 0.9},
    "posenc.suite.scaling_rows": {"cells_by_length": lambda: {8: _cells()}, "task": lambda: "copy_offset"},
    "posenc.suite.stretch_rows": {"cells": lambda: {k: c for k, c in _cells().items() if k[1] == "sinusoidal"},
                                  "task": lambda: "copy_offset", "lengths": lambda: (8,), "finetune_len": lambda: 8},
    "posenc.suite.workaround_label": {"label": lambda: "learned (bert) + interpolate"},
    "posenc.suite.variant_values": {"metric": lambda: "accuracy"},
    "posenc.suite.learning_rate_spread": {"metric": lambda: "accuracy"},
    "posenc.suite_plots.seed_explorer": {"measures": lambda: {"accuracy": "accuracy"}},
    "posenc.suite_plots.learning_curve_explorer": {"measures": lambda: ("accuracy", "training loss")},
    "posenc.suite_plots.cell_styles": {"cells": lambda: list(_cells().values())},
    "posenc.perplexity_plots.bpb_length_explorer": {"groups": lambda: {"all": _cells()}, "lengths": lambda: (4, 8)},
    "posenc.perplexity_plots.bpb_profile_explorer": {"groups": lambda: {"all": _cells()}, "lengths": lambda: (8,)},
    "posenc.tasks.make_task": {"name": lambda: "copy_offset"},
    "posenc.tasks.make_generator": {"seed": lambda: 0},
    "posenc.tasks.fixed_dataset": {"seed": lambda: 0},
    "posenc.tasks.*.labels": {"tokens": lambda: torch.tensor([[1, 2, 3, 4]])},
    "posenc.tasks.*.bag_ceiling_guess": {"tokens": lambda: torch.tensor([[1, 2, 3, 4]])},
    "posenc.tasks.MarkerRecallTask.*": {"tokens": lambda: torch.tensor([[1, 16, 3, 4]])},
    "posenc.train.TrainConfig.from_dict": {"data": lambda: _tiny_config().to_dict()},
    "posenc.train.fine_tune": {"model": lambda: _model(max_len=8).float(), "task": lambda: _task8()},
    "posenc.train.evaluate": {"task": lambda: _task8()},
    "posenc.train.position_accuracy": {"task": lambda: _task8()},
    "posenc.train.position_counts": {"task": lambda: _task8()},
    "posenc.train.new_position_accuracy": {"task": lambda: _task8(), "length": lambda: 6},
    "posenc.train.split_seen_new": {"train_len": lambda: 2},
    "posenc.train.run_metrics": {"model": lambda: _import("posenc.train.build_model")(_tiny_config())},
    "posenc.train.random_position_ids": {"n_positions": lambda: 8},
}


def _hf_config() -> dict[str, Any]:
    """A small Hugging Face config.json with Llama 3's scaling (width-16 heads, trained on 32 positions)."""
    return {"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 256,
            "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 32, "rope_theta": 10000.0}}


def _task8() -> Any:
    from posenc.tasks import CopyOffsetTask

    return CopyOffsetTask(n_symbols=8)


def _registered(name: str) -> str:
    from posenc.registry import register_scheme
    from posenc.schemes import NoPosition

    register_scheme(name, lambda **kw: NoPosition())
    return name


def _examples_for(target: Target) -> dict[str, Callable[[], Any]]:
    specific: dict[str, Callable[[], Any]] = {}
    for pattern, values in TARGET_EXAMPLES.items():
        if _matches(pattern, target.id):
            specific.update(values)
    return specific


#: class id -> factory of an instance whose methods the sweep calls.
INSTANCES: dict[str, Callable[[], Any]] = {
    "posenc.analysis.PCAResult": lambda: _analysis().pca,
    "posenc.analysis.AttentionWeights": _attention_weights,
    "posenc.analysis.HeadPeaks": lambda: _heads()[0],
    "posenc.hybrid.ScaledSinusoidalEmbedding": lambda: _import("posenc.hybrid.ScaledSinusoidalEmbedding")(8),
    "posenc.hybrid.FactoredPositionEmbedding": lambda: _import("posenc.hybrid.FactoredPositionEmbedding")(8, 8, 2),
    "posenc.hybrid.HierarchicalPositionEmbedding": lambda: _import("posenc.hybrid.HierarchicalPositionEmbedding")(2, 4, 8),
    "posenc.hybrid.HybridScheme": lambda: _import("posenc.hybrid.HybridScheme")(
        _import("posenc.hybrid.FactoredPositionEmbedding")(8, 8, 2)),
    "posenc.interactive.Explorer": _explorer,
    "posenc.learned.LearnedPositionEmbedding": lambda: _import("posenc.learned.LearnedPositionEmbedding")(8, 4),
    "posenc.learned.BertEmbeddings": lambda: _import("posenc.learned.BertEmbeddings")(10, 8, 8),
    "posenc.models.MultiHeadSelfAttention": lambda: _import("posenc.models.MultiHeadSelfAttention")(8, 2),
    "posenc.models.TransformerBlock": lambda: _import("posenc.models.TransformerBlock")(8, 2, 16),
    "posenc.models.TinyTransformer": _model,
    "posenc.params.TransformerConfig": lambda: _import("posenc.params.CONFIGS")["BERT-base"],
    "posenc.registry.SchemeSpec": lambda: _import("posenc.registry.scheme_spec")("t5_bias"),
    "posenc.relative.RotaryEmbedding": lambda: _import("posenc.relative.RotaryEmbedding")(4),
    "posenc.relative.ALiBi": lambda: _import("posenc.relative.ALiBi")(2),
    "posenc.relative.RopeScheme": lambda: _import("posenc.relative.RopeScheme")(8, 2),
    "posenc.relative.AlibiScheme": lambda: _import("posenc.relative.AlibiScheme")(2),
    "posenc.relative.T5RelativeBias": lambda: _import("posenc.relative.T5RelativeBias")(2),
    "posenc.relative.T5BiasScheme": lambda: _import("posenc.relative.T5BiasScheme")(8, 2),
    "posenc.results.RunResult": lambda: _runs()[0],
    "posenc.robustness.Verdict": _verdict,
    "posenc.perplexity.ScoredBytes": lambda: _import("posenc.perplexity.ScoredBytes")(
        torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), torch.tensor([0, 1, 2])),
    "posenc.robustness.Side": _side,
    "posenc.rope_scaling.RopeScaling": lambda: _import("posenc.rope_scaling.RopeScaling")("yarn", factor=2.0, train_len=4),
    "posenc.rope_scaling.LongRopeScaling": lambda: _import("posenc.rope_scaling.LongRopeScaling")(
        (1.0, 1.0), (1.0, 2.0), train_len=4, factor=2.0),
    "posenc.rope_scaling.YarnZones": lambda: _import("posenc.rope_scaling.yarn_zones")(64, train_len=512),
    "posenc.rope_config.RopeSettings": lambda: _import("posenc.rope_config.RopeSettings")("default", 10000.0, 8),
    "posenc.schemes.PositionScheme": lambda: _import("posenc.schemes.PositionScheme")(),
    "posenc.schemes.SinusoidalScheme": lambda: _import("posenc.schemes.SinusoidalScheme")(8),
    "posenc.schemes.LearnedScheme": lambda: _import("posenc.schemes.LearnedScheme")(8, 8),
    "posenc.sinusoidal.SinusoidalPositionalEncoding": lambda: _import("posenc.sinusoidal.SinusoidalPositionalEncoding")(8),
    "posenc.tasks.Task": lambda: _import("posenc.tasks.CopyOffsetTask")(),
    "posenc.tasks.CopyOffsetTask": lambda: _import("posenc.tasks.CopyOffsetTask")(),
    "posenc.tasks.ReverseTask": lambda: _import("posenc.tasks.ReverseTask")(),
    "posenc.tasks.MarkerRecallTask": lambda: _import("posenc.tasks.MarkerRecallTask")(),
    "posenc.tasks.CopyHalfTask": lambda: _import("posenc.tasks.CopyHalfTask")(),
    "posenc.tasks.LanguageModelTask": lambda: _import("posenc.tasks.LanguageModelTask")("test"),
    "posenc.train.TrainConfig": _tiny_config,
    "posenc.interactive.Control": lambda: _import("posenc.interactive.Control")("n", [1, 2]),
    "posenc.book.factcheck.Claim": _claim,
}


def _instance(target: Target) -> Any:
    assert target.owner is not None
    owner_id = target.id.rsplit(".", 1)[0]
    if owner_id in INSTANCES:
        return INSTANCES[owner_id]()
    raise LookupError(f"no instance of {owner_id} to call {target.method} on: add INSTANCES[{owner_id!r}]")


# ================================================================================ kinds and probes
class _Junk:
    """A value of no kind posenc accepts; its repr names no parameter."""

    def __repr__(self) -> str:
        return "⊥"


JUNK = _Junk()
NAN = float("nan")


@dataclass(frozen=True)
class Probe:
    label: str
    value: Callable[[], Any]
    errors: tuple[type[BaseException], ...] = (TypeError, ValueError)
    may_pass: bool = False  #: a value some targets accept: only the error, if one comes, is judged


#: kind -> the bad values every parameter of that kind is fed (None is added unless the parameter is optional).
PROBES: dict[str, tuple[Probe, ...]] = {
    "int": (Probe("wrong type", lambda: "⊥"), Probe("float", lambda: 2.5), Probe("bool", lambda: True),
            Probe("negative", lambda: -1)),
    "float": (Probe("wrong type", lambda: "⊥"), Probe("NaN", lambda: NAN), Probe("negative", lambda: -1.0),
              Probe("bool", lambda: True)),
    "bool": (Probe("wrong type", lambda: "⊥"), Probe("number", lambda: 2)),
    "str": (Probe("wrong type", lambda: 5), Probe("unknown", lambda: "⊥")),
    "tensor": (Probe("wrong type", lambda: "⊥"), Probe("0-d", lambda: torch.tensor(0.5))),
    "array": (Probe("wrong type", lambda: "⊥"), Probe("0-d", lambda: np.float64(0.5))),
    "positions": (Probe("wrong type", lambda: "⊥"), Probe("negative", lambda: torch.tensor([0, -1])),
                  Probe("NaN", lambda: torch.tensor([0.0, NAN]))),
    "int_seq": (Probe("wrong type", lambda: JUNK), Probe("bare int", lambda: 4), Probe("string", lambda: "⊥"),
                Probe("empty", lambda: []), Probe("negative", lambda: [-1])),
    "str_seq": (Probe("wrong type", lambda: JUNK), Probe("bare string", lambda: "⊥"), Probe("empty", lambda: []),
                Probe("bad entry", lambda: ["⊥"])),
    "mapping": (Probe("wrong type", lambda: ["⊥"]), Probe("empty", lambda: {})),
    "options": (Probe("wrong type", lambda: ["⊥"]),),  # keyword options: {} is "none"
    "callable": (Probe("wrong type", lambda: 5),),
    "path": (Probe("wrong type", lambda: 5), Probe("missing", lambda: _TMP / "no-such-file.json",
                                                   (FileNotFoundError,))),
    "out_path": (Probe("wrong type", lambda: 5),),
    "dtype": (Probe("wrong type", lambda: "float32"), Probe("integer dtype", lambda: torch.int64)),
    "device": (Probe("wrong type", lambda: 5), Probe("unavailable", lambda: "cuda")),
    "generator": (Probe("wrong type", lambda: 5),),
    "instance": (Probe("wrong type", lambda: JUNK),),
    "results": (Probe("wrong type", lambda: 5), Probe("wrong entry", lambda: [JUNK])),
    "float_seq": (Probe("wrong type", lambda: JUNK), Probe("bare number", lambda: 0.5), Probe("string", lambda: "⊥"),
                  Probe("empty", lambda: []), Probe("NaN", lambda: [NAN])),
    "int_pair": (Probe("wrong type", lambda: JUNK), Probe("bare int", lambda: 4), Probe("wrong length", lambda: (1,)),
                 Probe("negative", lambda: (-1, 2))),
    "float_pair": (Probe("wrong type", lambda: JUNK), Probe("bare number", lambda: 0.5),
                   Probe("wrong length", lambda: (0.5,)), Probe("NaN", lambda: (NAN, 1.0))),
    "str_pair": (Probe("wrong type", lambda: JUNK), Probe("bare string", lambda: "⊥"), Probe("wrong length", lambda: ("a",))),
    "type": (Probe("wrong type", lambda: 5), Probe("wrong class", lambda: int)),
    "pair": (Probe("wrong type", lambda: JUNK), Probe("wrong length", lambda: (1.0,))),
    "any_seq": (Probe("wrong type", lambda: JUNK), Probe("bare string", lambda: "⊥"), Probe("empty", lambda: [])),
    "instance_seq": (Probe("wrong type", lambda: 5), Probe("wrong entry", lambda: [JUNK])),
    "nested_int_seq": (Probe("wrong type", lambda: JUNK), Probe("bare int", lambda: 4), Probe("empty", lambda: []),
                       Probe("negative", lambda: [[-1]])),
    "signed_ints": (Probe("wrong type", lambda: "⊥"), Probe("NaN", lambda: torch.tensor([NAN]))),
    "rows": (Probe("wrong type", lambda: JUNK), Probe("wrong entry", lambda: [JUNK]),
             Probe("string entry", lambda: ["ab"])),
    "bool_seq": (Probe("wrong type", lambda: JUNK), Probe("bare bool", lambda: True), Probe("wrong entry", lambda: ["⊥"])),
    "live": (Probe("wrong type", lambda: JUNK), Probe("wrong length", lambda: (1.0,)),
             Probe("NaN", lambda: (0.0, NAN, 1.0))),
    "mapping_seq": (Probe("wrong type", lambda: JUNK), Probe("wrong entry", lambda: [JUNK]), Probe("entry lacks keys",
                                                                                              lambda: [{}])),
}
NONE_PROBE = Probe("None", lambda: None)
#: Widths: an odd one is fine for most targets; where it is refused, the hint may only name options the target takes
#: (``odd='pad'`` only where there is an ``odd`` parameter).
ODD_WIDTH = Probe("odd width", lambda: 7, may_pass=True)
WIDTHS = ("d_model", "d_head", "d_pos")

#: "pass x=...", "use x=...": a hint that names an option. It must be one the target has.
_HINT = re.compile(r"\b(?:pass|use|give|set)\s+(\w+)=")

_SIMPLE = {"int": "int", "float": "float", "bool": "bool", "str": "str", "torch.Tensor": "tensor",
           "np.ndarray": "array", "torch.dtype": "dtype", "torch.Generator": "generator", "Path": "path",
           "str | Path": "path", "Layout": "str", "Frequencies": "str", "OddRule": "str", "Kind": "str",
           "Status": "str", "nn.Module": "instance", "nn.Embedding": "instance", "go.Figure": "instance"}


def kind_of(target: Target, name: str, annotation: Any) -> str | None:
    """The kind of a parameter (a key of :data:`PROBES`), or ``None`` if the sweep cannot tell."""
    for pattern, kinds in KIND_BY_TARGET.items():
        if _matches(pattern, target.id) and name in kinds:
            return kinds[name]
    if name in KIND_BY_NAME:
        return KIND_BY_NAME[name]
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    text = re.sub(r"\s*\|\s*None$", "", text.strip()).removeprefix("None | ")
    if text in _SIMPLE:
        return _SIMPLE[text]
    if "torch.device" in text:
        return "device"
    if text.startswith(("Callable", "Check", "SchemeFactory")):
        return "callable"
    if re.fullmatch(r"(Sequence|Iterable|tuple|list)\[int(, \.\.\.)?\]", text):
        return "int_seq"
    if re.fullmatch(r"(Sequence|Iterable|tuple|list)\[str(, \.\.\.)?\]", text):
        return "str_seq"
    if re.fullmatch(r"(Sequence|Iterable|tuple|list)\[RunResult(, \.\.\.)?\]", text):
        return "results"
    if re.fullmatch(r"(Sequence|Iterable|tuple|list)\[float(, \.\.\.)?\]", text):
        return "float_seq"
    if re.fullmatch(r"(Sequence|Iterable|tuple|list)\[Mapping\[str, Any\]\]", text):
        return "mapping_seq"
    if re.fullmatch(r"(Sequence|Iterable|tuple|list)\[[A-Z][A-Za-z]+(, \.\.\.)?\]", text):
        return "instance_seq"  # a sequence of posenc objects: Claim, Control, TransformerConfig, ...
    pairs = {"tuple[int, int]": "int_pair", "tuple[float, float]": "float_pair", "tuple[str, str]": "str_pair",
             "tuple[Any, Any]": "pair", "tuple[float, str]": "pair"}
    if text in pairs:
        return pairs[text]
    if text.startswith("type["):
        return "type"
    if text.startswith(("Mapping[", "dict[")):
        return "mapping"
    if re.fullmatch(r"[A-Z][A-Za-z]+", text):  # a posenc class: TinyTransformer, Task, RunResult, ...
        return "instance"
    return None


def _optional(parameter: inspect.Parameter) -> bool:
    annotation = parameter.annotation if isinstance(parameter.annotation, str) else str(parameter.annotation)
    return parameter.default is None or "None" in annotation.split("|")[-1] or annotation.startswith("None")


#: parameter name -> kind, where the annotation does not say it (``Any``) or says too little.
KIND_BY_NAME: dict[str, str] = {
    "positions": "positions", "position_ids": "positions", "q_positions": "positions", "k_positions": "positions",
    "path": "path", "table": "tensor", "matrix": "tensor", "signal": "tensor", "first": "tensor", "second": "tensor",
    "logits": "tensor", "peaks": "array", "w_query": "tensor", "w_key": "tensor", "z": "tensor",
    "document_lengths": "int_seq", "attention_mask": "tensor", "distances": "tensor", "relative_position": "tensor",
    "words": "str_seq", "tokens": "tensor",
    "position_options": "options", "options": "options", "task_options": "options", "meta": "options",
    "occurs": "nested_int_seq", "a": "float_seq", "b": "float_seq", "curve": "float_seq", "x": "tensor",
}
#: target pattern -> {parameter: kind}, where one target's parameter differs from the name's usual kind.
KIND_BY_TARGET: dict[str, dict[str, str]] = {
    "posenc.results.save_results": {"path": "out_path"},
    "posenc.book.findings.evaluate_finding": {"item": "instance"},
    "posenc.checkpoint.save_checkpoint": {"path": "out_path"},
    "posenc.analysis_plots.components_grid": {"max_positions": "int"},
    "posenc.hybrid.HybridScheme": {"module": "instance"},
    "posenc.interactive.Control": {"values": "any_seq", "live": "live"},
    "posenc.plots.figure_html": {"fig": "instance"},
    "posenc.plots.html_table": {"rows": "rows", "numeric": "bool_seq"},
    "posenc.plots.heatmap": {"x": "any_seq", "y": "any_seq", "z": "tensor"},
    "posenc.relative_plots.rope_scores": {"offsets": "int_seq"},
    "posenc.robustness.Conclusion": {"better": "instance", "worse": "instance"},
    "posenc.relative.partial_inverse_frequencies": {"speeds": "tensor"},
    "posenc.pretrained.token_vectors": {"input_ids": "int_seq"},
    "posenc.sinusoidal.offset_dot_product": {"offsets": "signed_ints"},
    "posenc.rope_scaling.longrope_inverse_frequencies": {"short_factor": "float_seq", "long_factor": "float_seq"},
    "posenc.rope_config.check_rope_frequencies": {"inv_freq": "tensor"},
    "posenc.rope_config.frequency_mismatch": {"got": "tensor"},
    "posenc.rope_variants.axial_rope": {"rows": "positions", "cols": "positions"},
    "posenc.rope_variants.mrope_position_ids": {"grid": "int_seq"},
    "posenc.long_context.softmax_with_sink": {"scores": "tensor"},
}

#: target pattern -> {parameter: the name its error must give}: the check helpers name the caller's argument.
NAMED_AS: dict[str, dict[str, str]] = {
    "posenc.checks.*": {"value": "n", "positions": "n"},
}


# ================================================================================ the allow-list
@dataclass(frozen=True)
class Allowed:
    """What the sweep deliberately accepts: ``target`` (``fnmatch`` pattern), ``parameter`` and ``probe`` (``*`` any)."""

    target: str
    parameter: str
    probe: str
    reason: str


#: Records: frozen dataclasses posenc computes and returns (readers read their fields; nothing of posenc
#: builds them from a reader's input). Their constructors are not swept; their methods are.
RECORDS: tuple[str, ...] = (
    "posenc.analysis.SimilaritySummary", "posenc.analysis.NormSummary", "posenc.analysis.PCAResult",
    "posenc.analysis.Periodicity", "posenc.analysis.PairRotation", "posenc.analysis.TableAnalysis",
    "posenc.analysis.AttentionWeights", "posenc.analysis.HeadPeaks", "posenc.compare.OffsetDependence",
    "posenc.params.ParamCount", "posenc.pretrained.PositionTable", "posenc.pretrained.BertAttention",
    "posenc.rope_scaling.PairRow", "posenc.train.SeenNewSplit", "posenc.suite.SuiteCell", "posenc.suite.Outcome",
    "posenc.learned_plots.ShortInputRun", "posenc.robustness.Comparison", "posenc.results.RunResult",
    "posenc.registry.SchemeSpec", "posenc.robustness.SettingResult",
    "posenc.robustness.Verdict", "posenc.robustness.Bracket", "posenc.bugs.Bug",
    "posenc.compare.Spread", "posenc.corpus.Document", "posenc.perplexity.ScoredBytes", "posenc.perplexity.LengthScores",
    "posenc.perplexity_plots.TextLine",
    "posenc.pretrained.TextAttention",
    "posenc.rope_scaling.YarnZones",
)

#: Parameters whose value is free text: any string is valid (their wrong types are still probed).
FREE_TEXT: tuple[str, ...] = ("title", "alt", "caption", "label", "x_title", "y_title", "colorbar_title", "claim",
                              "source", "div_id")

#: Appendix D's exhibits: plausible position code as it is written in the wild (a bug and its fix), which the
#: appendix shows with show_source. Checks added to them would change the exhibit; bug 4 *is* torch's own error
#: on an odd width. Appendix D's checks (check_*) take them as inputs and are swept.
EXHIBITS: tuple[str, ...] = tuple(f"posenc.bugs.{name}" for name in (
    "sinusoid_table_channel_exponent", "sinusoid_table_recipe", "sinusoid_table_concatenated",
    "sinusoid_table_concatenated_fixed", "embed_without_scale", "embed_with_scale", "sinusoid_table_any_width",
    "add_positions_from_cache", "add_positions_from_cache_fixed", "half_split_scores", "half_split_scores_fixed",
    "rope_cos_sin_model_dtype", "generate_dynamic_ntk_cached", "generate_dynamic_ntk_fixed", "alibi_slopes_geometric",
    "rotary_inverse_frequencies", "rotary_inverse_frequencies_fixed", "generate_longrope_cached",
    "generate_longrope_fixed"))

ALLOWED: tuple[Allowed, ...] = (
    *(Allowed(exhibit, "*", "*", "an exhibit of appendix D, shown as written in the wild (see EXHIBITS)")
      for exhibit in EXHIBITS),
    *(Allowed("*", name, "unknown", "free text: any string is valid") for name in FREE_TEXT),
    *(Allowed(record, "*", "*", "a result record posenc returns: its fields are outputs, not reader input")
      for record in RECORDS),
    Allowed("posenc.schemes.PositionScheme.set_*", "*", "*",
            "refuses every call by design: the base scheme has no table and no rotation (a TypeError saying so)"),
    Allowed("posenc.checks.*", "name", "*", "the label the caller's code gives its own argument, not reader data"),
    Allowed("posenc.checks.*", "why", "*", "the caller's explanation, put in the message as given"),
    Allowed("posenc.checks.*", "what", "*", "the caller's wording of the expected kind, put in the message as given"),
    Allowed("posenc.checks.*", "shape", "*", "the caller's wording of the expected shape, put in the message as given"),
    Allowed("posenc.checks.check_choice*", "allowed", "*", "the caller's own list of choices (any collection)"),
    Allowed("posenc.checks.check_dtype", "allowed", "*", "the caller's own list of dtypes"),
    Allowed("posenc.checks.check_instance", "types", "*", "the caller's own class or classes, as isinstance takes them"),
    Allowed("posenc.checks.check_tensor", "ndim", "*", "the caller's own dimension count(s)"),
    Allowed("posenc.checks.check_records", "keys", "*", "the caller's own list of keys each row needs"),
    Allowed("posenc.checks.check_mapping", "item", "*", "the caller's word for one entry, put in the message"),
    *(Allowed("posenc.checks.*", option, "*", "configures the check in the caller's code (a literal in posenc's "
              "source), not reader data") for option in ("low", "high", "low_open", "high_open", "empty", "min_len",
                                                          "nonnegative", "floating", "integer", "nonempty", "upper",
                                                          "increasing")),
    Allowed("posenc.checks.check_device", "value", "None", "None means torch's default device, by design"),
    Allowed("posenc.checks.check_generator", "value", "None", "None means torch's global generator, by design"),
    Allowed("posenc.sinusoidal.*", "k", "negative", "an offset: a negative k shifts the other way (documented)"),
    Allowed("posenc.train.TrainConfig", "eval_lengths", "empty", "no extra test length: the default"),
    Allowed("posenc.train.TrainConfig", "eval_extrapolations", "empty", "no workaround: the default"),
    Allowed("posenc.train.TrainConfig", "rope_scalings", "empty", "no RoPE scaling: the default"),
    Allowed("posenc.train.TrainConfig.from_dict", "data", "empty", "every field at its default, as TrainConfig()"),
    Allowed("posenc.registry.register_scheme", "name", "unknown", "a new scheme's name: any non-empty string"),
    *(Allowed("posenc.registry.register_scheme", style, "unknown", "a plotly name: the registry is a computing "
              "module and cannot import plotly; a figure drawing the scheme names a bad one (plotly's ValueError)")
      for style in ("colour", "dash", "symbol")),
    Allowed("posenc.registry.scheme_style", "name", "unknown", "documented fallback: grey, solid, circle for a label "
            "that is not a registered scheme (figures style variants such as 'learned (bert) + clip' by name)"),
    Allowed("posenc.schemes.reject_options", "name", "unknown", "the label of the caller's own scheme (any name)"),
    *(Allowed(target, "words", "bare string", "a sentence: split on whitespace into words (documented), never into "
              "characters") for target in ("posenc.order.as_words", "posenc.order.embed_words",
                                           "posenc.order_plots.order_explorer")),
    *(Allowed(target, "words", "bad entry", "any non-empty string is a word") for target in (
        "posenc.order.as_words", "posenc.order.embed_words", "posenc.order_plots.order_explorer")),
    Allowed("posenc.pretrained.*text_attention", "texts", "bad entry", "any non-empty string is a text to read"),
    Allowed("posenc.results.scheme_label", "scheme", "unknown", "labels any scheme a stored config names, a reader's "
            "registered one too (results sits below the registry and knows no list of names)"),
    Allowed("posenc.results.scheme_label", "combine", "unknown", "labels any value a stored config holds (results "
            "sits below the models and knows no list of modes)"),
    Allowed("posenc.results.differing_fields", "ignore", "empty", "ignore nothing: the default"),
    Allowed("posenc.book.findings.prose_name", "key", "unknown", "turns any key into a Python name for the text's "
            "values (verdict_prose passes the keys of the verdicts it is given)"),
    Allowed("posenc.interactive.Explorer.print_html", "uid", "unknown", "any non-empty string makes the SVG's ids unique"),
    Allowed("posenc.paper.to_svg", "salt", "unknown", "any non-empty string makes the SVG's ids unique"),
    Allowed("posenc.paper.wrap_to_width", "text", "unknown", "free text: any string is wrapped"),
    Allowed("posenc.plots.plain_text", "text", "unknown", "free text: any string is read as plotly's HTML subset"),
    Allowed("posenc.results.summar*", "by", "empty", "group by no field: every run in one group, on purpose"),
    Allowed("posenc.suite.arm_table", "blank", "unknown", "free text: any string marks a combination that was not run"),
    Allowed("posenc.suite.ranking_text", "names", "empty", "rename no scheme: every label printed as it is"),
    Allowed("*", "strategies", "empty", "read no workaround: each scheme once, by its plain metrics"),
    Allowed("posenc.robustness.Side", "metric", "unknown", "a metric name, looked up in the runs at evaluate: a run "
            "without it is a ValueError naming it"),
    Allowed("posenc.robustness.Side", "strategy", "unknown", "a workaround or scaling name, read where the runs hold "
            "metric:strategy and the plain metric elsewhere (documented), so one name serves a whole grid"),
    *(Allowed(target, "strateg*", "*", "a workaround name, read where the runs hold metric:strategy and the plain "
              "metric elsewhere (inside a table, schemes without one: documented), so one name serves a grid")
      for target in ("posenc.results.accuracy_by_length", "posenc.results.extrapolation_variants",
                     "posenc.results.length_curves", "posenc.results.position_curves",
                     "posenc.suite.variant_values", "posenc.suite.learning_rate_spread", "posenc.suite.tied_range",
                     "posenc.suite.tied_effective_lengths",
                     "posenc.results_plots.position_accuracy_explorer")),
    Allowed("posenc.robustness.Side", "where", "empty", "no extra config condition: the default"),
    Allowed("posenc.robustness.Conclusion", "key", "unknown", "free text: the conclusion's identifier"),
    Allowed("posenc.robustness.Conclusion", "tasks", "bad entry", "a task name, looked up in the runs at evaluate: "
            "one no run has is a ValueError naming it"),
    Allowed("posenc.robustness.Conclusion", "over", "empty", "no set-up choice varied: one setting per task"),
    Allowed("posenc.results.check_results", "name", "unknown", "the caller's label for its argument, used in messages"),
    Allowed("posenc.suite.kept_text", "value", "negative", "formats any finite number"),
    Allowed("posenc.suite.kept_text", "mark", "unknown", "any non-empty word marks the value (the tables use "
            "'kept' and 'tied')"),
    Allowed("posenc.suite.range_text", "low", "negative", "formats any finite range (a difference can be negative)"),
    Allowed("posenc.results_plots.errorbar_figure", "styles", "empty", "no series restyled: the default"),
    Allowed("posenc.learned_plots.train_with_short_inputs", "snapshot_steps", "empty", "no snapshot: the default"),
    Allowed("posenc.analysis_plots.*", "name", "unknown", "free text: the table's name in the title"),
    Allowed("posenc.analysis_plots.peak_share_figure", "window", "negative", "offsets: negative ones are keys "
            "before the query"),
    Allowed("posenc.relative_plots.rope_scores", "offsets", "negative", "key minus query: a key before the query "
            "(the key's own position must stay >= 0, which the message names)"),
    Allowed("posenc.relative_plots.accuracy_by_length_rows", "by", "empty", "group by no field: all runs pooled"),
    Allowed("posenc.book.data_path", "name", "unknown", "a file that is not there: a FileNotFoundError naming it, the "
            "folder and the files present (the contract's error for a missing file)"),
    Allowed("posenc.book.factcheck.Claim", "id", "unknown", "free text: a claim's id is any unique string"),
    Allowed("posenc.book.factcheck.summary_table", "source_names", "empty", "no display names: sources keep their codes"),
    Allowed("posenc.interactive.Frame", "traces", "empty", "a frame that changes only the layout"),
    Allowed("posenc.interactive.Frame", "layout", "empty", "a frame that changes only traces"),
    Allowed("posenc.plots.heatmap", "zm*", "negative", "a colour-scale end: any finite number"),
    Allowed("posenc.analysis.as_table", "name", "unknown", "the caller's label for its table, used in messages"),
    Allowed("posenc.params.TransformerConfig", "name", "unknown", "free text: the configuration's label in tables"),
    Allowed("posenc.analysis.HeadPeaks.*", "*", "negative", "an offset j - i: negative means a key before the query"),
    Allowed("posenc.results.one_of", "values", "*", "any values a config field may be compared with (==)"),
    Allowed("posenc.results.select", "where", "*", "config field -> value or predicate; a name that is not a config "
            "field raises a ValueError naming it and the fields"),
    Allowed("posenc.registry.make_position_scheme", "options", "*", "forwarded to the scheme's factory, which "
            "rejects unknown names (reject_options) and checks each value in the scheme's constructor"),
    Allowed("posenc.tasks.make_task", "options", "*", "forwarded to the task's constructor, which checks each value; "
            "an unknown name raises a ValueError naming the task and its options"),
    Allowed("posenc.params.TransformerConfig.with_", "changes", "*", "forwarded to dataclasses.replace: an unknown "
            "field is a TypeError naming it, and __post_init__ checks every value again"),
    Allowed("posenc.book.evals.ProseValues", "*", "*", "a dict the chapters fill: any name, any value"),
    Allowed("posenc.pretrained.PositionKeyError", "*", "*", "an exception class: its argument is its message"),
    Allowed("posenc.schemes.PositionScheme", "*", "*", "the abstract base (nn.Module's constructor): the schemes "
            "that derive from it are swept"),
    Allowed("posenc.schemes.NoPosition", "*", "*", "nn.Module's constructor: the scheme takes no argument"),
    Allowed("posenc.tasks.LanguageModelTask.labels", "*", "*", "refuses every call by design: the text task's "
            "targets are the bytes after each window, not a function of the tokens (a TypeError saying so)"),
    Allowed("posenc.tasks.Task", "*", "*", "the abstract base (object's constructor): the tasks that derive from "
            "it are swept"),
    Allowed("posenc.interactive.Explorer.frame", "values", "*",
            "forwarded to the reader's update function, which receives them as its own arguments"),
    Allowed("posenc.landscape.ModelRow", "*", "unknown", "a table cell: free text (Markdown), any non-empty string"),
    Allowed("posenc.landscape.ModelRow", "sources", "bad entry", "a bibliography key: any non-empty string "
            "(tests/test_landscape.py checks every row's keys against references.bib)"),
    Allowed("posenc.long_context.softmax_with_sink", "sink", "negative", "a logit: any finite number"),
    Allowed("posenc.suite.*_mean", "strategy", "unknown", "a variant's name as the runs store it (a workaround, a "
            "scaling): one they were not read with is documented to read as None"),
    Allowed("posenc.suite.tied_bpb_range", "strategy", "unknown", "as for bpb_mean: None where the runs were not "
            "read with it"),
    Allowed("posenc.suite.stored_key", "strategy", "unknown", "builds a key; which variants a run holds is the "
            "readers' business"),
    Allowed("posenc.robustness.and_list", "items", "empty", "no items: the text says so (``empty``)"),
    Allowed("posenc.robustness.and_list", "items", "bad entry", "any non-empty string is a name to list"),
    Allowed("posenc.robustness.and_list", "empty", "unknown", "free text: what an empty list reads as"),
    Allowed("posenc.*effective_length*", "threshold", "negative", "a bar on the caller's own score "
            "scale: any finite number"),
)


def _matches(pattern: str, text: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(text, pattern)


def _allowance(target: Target, parameter: str, probe: str) -> Allowed | None:
    for entry in ALLOWED:
        if _matches(entry.target, target.id) and _matches(entry.parameter, parameter) and _matches(entry.probe, probe):
            return entry
    return None


# ================================================================================ running the sweep
@dataclass
class Report:
    callables: int = 0
    parameters: int = 0
    probed_parameters: int = 0
    probes: int = 0
    problems: list[str] = field(default_factory=list)
    used: set[Allowed] = field(default_factory=set)


class ReachedWork(Exception):
    """Raised in place of an expensive step (:data:`EXPENSIVE`): the call got past its checks."""


#: target pattern -> (the attribute standing for the expensive work, why). The sweep replaces that attribute by one
#: raising :class:`ReachedWork`: a call that reaches it has passed every check (the valid call must reach it, a bad
#: one must not). The contract asks for exactly this order: checks first, then the expensive work.
EXPENSIVE: dict[str, tuple[str, str]] = {
    "posenc.pretrained.*text_attention": ("posenc.pretrained._hub_offline", "loads transformers and a checkpoint "
                                          "(about 30 s on one core)"),
}


def _call(target: Target, kwargs: dict[str, Any]) -> Any:
    """Call a target; a scheme it registers is removed again, so no probe leaves a trace in posenc's registry.

    A call that reaches the expensive work of an :data:`EXPENSIVE` target returns ``None`` there (it was accepted).
    """
    from unittest import mock

    from posenc import registry

    def reached(*args: Any, **kw: Any) -> Any:
        raise ReachedWork

    before = dict(registry._REGISTRY)
    expensive = next((where for pattern, (where, _) in EXPENSIVE.items() if _matches(pattern, target.id)), None)
    try:
        if expensive is None:
            return _call_once(target, kwargs)
        module, _, attribute = expensive.rpartition(".")
        with mock.patch.object(importlib.import_module(module), attribute, reached):
            return _call_once(target, kwargs)
    except ReachedWork:
        return None
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(before)


def _call_once(target: Target, kwargs: dict[str, Any]) -> Any:
    kwargs = dict(kwargs)
    args = kwargs.pop("*", ())  # values for a *args parameter
    if target.owner is None:
        return target.obj(*args, **kwargs)
    if isinstance(inspect.getattr_static(target.owner, target.method), staticmethod | classmethod):
        return getattr(target.owner, target.method)(*args, **kwargs)
    return getattr(_instance(target), target.method)(*args, **kwargs)


def _names(error: BaseException, parameter: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(parameter)}(?![A-Za-z0-9_])", str(error)) is not None


def _named_as(target: Target, parameter: str) -> str:
    for pattern, names in NAMED_AS.items():
        if _matches(pattern, target.id) and parameter in names:
            return names[parameter]
    return parameter


def _foreign_hints(target: Target, error: BaseException) -> list[str]:
    """Options a message advises (``pass odd='pad'``) that the target does not take."""
    try:
        accepted = set(target.signature().parameters)
    except (TypeError, ValueError):
        return []
    return [name for name in _HINT.findall(str(error)) if name not in accepted]


def _outcome(target: Target, kwargs: dict[str, Any], parameter: str, probe: Probe) -> str | None:
    """``None`` if the bad call raised a clear error naming ``parameter``, else what went wrong."""
    parameter = _named_as(target, parameter)
    try:
        _call(target, kwargs)
    except probe.errors as error:
        foreign = _foreign_hints(target, error)
        if foreign:
            return f"a hint names option(s) {foreign} the target does not take: {str(error)[:160]}"
        if _names(error, parameter):
            return None
        return f"{type(error).__name__} that does not name {parameter!r}: {str(error)[:160]}"
    except Exception as error:  # noqa: BLE001 - any other exception is the finding
        return f"{type(error).__name__} (not {' or '.join(e.__name__ for e in probe.errors)}): {str(error)[:160]}"
    return None if probe.may_pass else "accepted without a word"


def sweep_target(target: Target, report: Report) -> None:
    """Sweep one target; posenc's registry is restored afterwards (an example value may register a scheme)."""
    from posenc import registry

    before = dict(registry._REGISTRY)
    try:
        _sweep_target(target, report)
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(before)


def _sweep_target(target: Target, report: Report) -> None:
    report.callables += 1
    try:
        signature = target.signature()
    except (TypeError, ValueError):
        return  # a builtin signature (e.g. an exception's): nothing of posenc's to check
    examples = _examples_for(target)
    parameters = list(signature.parameters.values())
    report.parameters += len(parameters)
    whole = next((e for e in ALLOWED if e.parameter == e.probe == "*" and _matches(e.target, target.id)), None)
    if whole is not None:  # an allowed target: counted, not probed
        report.used.add(whole)
        return
    if not parameters:
        return
    factories: dict[str, Callable[[], Any]] = {}
    names = {p.name for p in parameters}
    for name, factory in examples.items():  # values for *args ("*") and **kwargs
        if name not in names and any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
            factories[name] = factory
    for p in parameters:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in examples:
            factories[p.name] = examples[p.name]
        elif p.default is p.empty:
            if p.name not in EXAMPLES:
                report.problems.append(f"{target.id}: no valid example for parameter {p.name!r} (add it to EXAMPLES "
                                       "or TARGET_EXAMPLES)")
                return
            factories[p.name] = EXAMPLES[p.name]

    def valid() -> dict[str, Any]:
        return {name: factory() for name, factory in factories.items()}

    try:
        _call(target, valid())
    except Exception as error:  # noqa: BLE001
        report.problems.append(f"{target.id}: the valid example call failed: {type(error).__name__}: "
                               f"{str(error)[:200]}")
        return
    for p in parameters:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            entry = _allowance(target, p.name, "*")
            if entry is None:
                report.problems.append(f"{target.id}: **{p.name} needs an ALLOWED entry saying who checks it")
            else:
                report.used.add(entry)
            continue
        kind = kind_of(target, p.name, p.annotation)
        probes = list(PROBES.get(kind, ())) if kind else []
        if not _optional(p):
            probes.append(NONE_PROBE)
        if p.name in WIDTHS and kind == "int":
            probes.append(ODD_WIDTH)
        if kind is None:
            entry = _allowance(target, p.name, "*")
            if entry is None:
                report.problems.append(f"{target.id}: parameter {p.name!r} ({p.annotation}) has no kind: add it to "
                                       "KIND_BY_NAME / KIND_BY_TARGET, or an ALLOWED entry")
                continue
            report.used.add(entry)
        report.probed_parameters += 1
        for probe in probes:
            entry = _allowance(target, p.name, probe.label)
            report.probes += 1
            kwargs = valid()
            kwargs[p.name] = probe.value()
            problem = _outcome(target, kwargs, p.name, probe)
            if problem is None:
                continue
            if entry is not None:
                report.used.add(entry)
                continue
            report.problems.append(f"{target.id}({p.name}={probe.label}): {problem}")


def sweep(targets: list[Target] | None = None) -> Report:
    report = Report()
    for target in TARGETS if targets is None else targets:
        sweep_target(target, report)
    return report


# ================================================================================ the tests
@pytest.fixture(scope="module")
def report() -> Report:
    return sweep()


def test_every_public_callable_answers_bad_input_clearly(report: Report) -> None:
    """Every bad value of every parameter of every public callable: a TypeError/ValueError naming it."""
    assert not report.problems, f"{len(report.problems)} problem(s):\n" + "\n".join(report.problems)


def test_the_allow_list_holds_only_what_the_sweep_meets(report: Report) -> None:
    """An entry nothing matches any more would hide a future regression: it must go."""
    stale = [entry for entry in ALLOWED if entry not in report.used]
    assert not stale, "ALLOWED entries that match nothing:\n" + "\n".join(map(str, stale))


def test_the_sweep_covers_the_api(report: Report) -> None:
    """The numbers of the issue's closing note: every module, several hundred callables and parameters."""
    modules = {target.id.rsplit(".", 2 if target.owner else 1)[0] for target in TARGETS}
    assert {m for m in MODULES if getattr(importlib.import_module(m), "__all__", None)} <= modules | {"posenc.book"}
    assert report.callables == len(TARGETS) > 400
    assert report.parameters > 1000 and report.probed_parameters > 900 and report.probes > 4000
    print(f"\ncontract sweep: {report.callables} callables, {report.parameters} parameters "
          f"({report.probed_parameters} probed), {report.probes} bad calls, {len(ALLOWED)} allow-list entries")


def _lenient(d_model: int, positions: Any = None) -> int:
    """A public function as it should not be written: no check at all."""
    return d_model * 2


def _bare_library_error(table: torch.Tensor) -> torch.Tensor:
    return table.sum(dim=1)  # a string gets "'str' object has no attribute 'sum'"


def test_a_new_function_is_swept_without_a_test_of_its_own() -> None:
    """Not vacuous: a function that checks nothing is caught on its own, by kind, with no example written for it
    beyond the common parameter names."""
    found = Report()
    sweep_target(Target(f"{__name__}._lenient", _lenient), found)
    assert any("_lenient(d_model=negative): accepted without a word" in p for p in found.problems)
    assert any("_lenient(d_model=wrong type)" in p for p in found.problems)
    assert any("_lenient(positions=wrong type): accepted without a word" in p for p in found.problems)
    found = Report()
    sweep_target(Target(f"{__name__}._bare_library_error", _bare_library_error), found)
    assert any("AttributeError (not TypeError or ValueError)" in p for p in found.problems)


def test_a_hint_may_name_only_options_the_function_takes() -> None:
    def needs_even(d_model: int) -> int:
        if d_model % 2:
            raise ValueError(f"d_model must be even, got {d_model}; pass odd='pad' to pad it")
        return d_model

    found = Report()
    sweep_target(Target(f"{__name__}.needs_even", needs_even), found)
    assert any("a hint names option(s) ['odd']" in p for p in found.problems)


# ================================================================================ hypothesis: the core entry points
# Generated arguments for the entry points readers call most. Valid ones must give a result of the documented
# shape (and, where it is a property of the maths, the documented values); invalid ones a TypeError/ValueError
# naming the argument. The strategies are reusable: ``valid_*`` build valid arguments, ``bad_for(kind)`` bad ones.
GENERATED = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def bad_for(kind: str) -> st.SearchStrategy[Any]:
    """Generic bad values of a kind of parameter (wrong types, out of range, non-finite)."""
    wrong_types = st.one_of(st.text(max_size=4), st.none(), st.lists(st.integers(), max_size=2), st.just(JUNK))
    if kind == "positive int":
        return st.one_of(wrong_types, st.integers(max_value=0), st.floats(allow_nan=True), st.booleans())
    if kind == "even int":
        return st.one_of(bad_for("positive int"), st.integers(min_value=0, max_value=50).map(lambda n: 2 * n + 1))
    if kind == "positive float":
        return st.one_of(wrong_types, st.booleans(), st.floats(max_value=0.0),
                         st.sampled_from([math.nan, math.inf, -math.inf]))
    if kind == "positions":  # (None means "0 .. seq_len - 1" where positions are optional: not generated)
        return st.one_of(st.text(min_size=1, max_size=4), st.just(JUNK),
                         st.lists(st.integers(max_value=-1), min_size=1, max_size=3),
                         st.lists(st.sampled_from([math.nan, math.inf, -1.5]), min_size=1, max_size=3))
    raise KeyError(kind)


def _names_it(call: Callable[[], Any], name: str) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert _names(info.value, name), f"{type(info.value).__name__} does not name {name!r}: {info.value}"


even_widths = st.integers(min_value=1, max_value=32).map(lambda n: 2 * n)


@GENERATED
@given(seq_len=st.integers(1, 64), d_model=even_widths, dtype=st.sampled_from(DTYPES),
       layout=st.sampled_from(("interleaved", "concatenated")), frequencies=st.sampled_from(("paper", "endpoint")),
       offset=st.integers(0, 10**6))
def test_sinusoidal_table_on_generated_arguments(seq_len: int, d_model: int, dtype: torch.dtype, layout: str,
                                                 frequencies: str, offset: int) -> None:
    from posenc.sinusoidal import sinusoidal_table

    table = sinusoidal_table(seq_len, d_model, dtype=dtype, layout=layout, frequencies=frequencies, offset=offset)
    assert table.shape == (seq_len, d_model) and table.dtype == dtype
    assert bool(torch.isfinite(table).all()) and float(table.abs().max()) <= 1.0


@GENERATED
@given(data=st.data())
def test_sinusoidal_table_names_each_bad_argument(data: st.DataObject) -> None:
    from posenc.sinusoidal import sinusoidal_table

    name, kind = data.draw(st.sampled_from([("seq_len", "positive int"), ("d_model", "even int"),
                                            ("base", "positive float"), ("positions", "positions")]))
    kwargs: dict[str, Any] = {"seq_len": 4, "d_model": 8}
    if name == "positions":
        kwargs["seq_len"] = None
    kwargs[name] = data.draw(bad_for(kind))
    _names_it(lambda: sinusoidal_table(**kwargs), name)


@GENERATED
@given(batch=st.integers(1, 3), seq_len=st.integers(1, 12), pairs=st.integers(1, 8),
       layout=st.sampled_from(("interleaved", "half")), dtype=st.sampled_from((torch.float64, torch.float32)),
       fractional=st.booleans(), data=st.data())
def test_rope_on_generated_arguments(batch: int, seq_len: int, pairs: int, layout: str, dtype: torch.dtype,
                                     fractional: bool, data: st.DataObject) -> None:
    """apply_rope keeps the length of every pair; a rotation by p then by -p is the identity; the score of
    rotated queries and keys depends on the offset only."""
    from posenc.relative import RotaryEmbedding, apply_rope, rope_angles

    d_head = 2 * pairs
    values = st.floats(0.0, 1000.0) if fractional else st.integers(0, 10**4)
    positions = torch.tensor(data.draw(st.lists(values, min_size=seq_len, max_size=seq_len)), dtype=torch.float64)
    x = torch.randn(batch, 2, seq_len, d_head, generator=torch.Generator().manual_seed(seq_len), dtype=dtype)
    rotated = apply_rope(x, positions, layout=layout)
    assert rotated.shape == x.shape and rotated.dtype == dtype
    assert rope_angles(positions, d_head).shape == (seq_len, pairs)
    if layout == "interleaved" and dtype == torch.float64:
        norms = lambda t: t.unflatten(-1, (pairs, 2)).norm(dim=-1)  # noqa: E731
        assert torch.allclose(norms(rotated), norms(x), atol=1e-9)
        shift = float(data.draw(st.integers(0, 100)))
        q, k = RotaryEmbedding(d_head)(x, x.flip(0), positions)
        q2, k2 = RotaryEmbedding(d_head)(x, x.flip(0), positions + shift)
        assert torch.allclose(q @ k.transpose(-2, -1), q2 @ k2.transpose(-2, -1), atol=1e-6)


@GENERATED
@given(data=st.data())
def test_rope_names_each_bad_argument(data: st.DataObject) -> None:
    from posenc.relative import apply_rope, rope_inverse_frequencies

    which = data.draw(st.sampled_from(["d_head", "base", "positions"]))
    if which == "d_head":
        _names_it(lambda: rope_inverse_frequencies(data.draw(bad_for("even int"))), "d_head")
    elif which == "base":
        _names_it(lambda: rope_inverse_frequencies(8, base=data.draw(bad_for("positive float"))), "base")
    else:
        _names_it(lambda: apply_rope(torch.zeros(3, 8), data.draw(bad_for("positions"))), "positions")


@st.composite
def valid_models(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A registered scheme and the keyword arguments of a small TinyTransformer that uses it."""
    scheme = draw(st.sampled_from(_builtin_schemes()))
    n_heads = draw(st.integers(1, 3))
    d_model = n_heads * 2 * draw(st.integers(1, 3))  # an even width per head: RoPE rotates pairs
    return scheme, dict(d_model=d_model, n_heads=n_heads, n_layers=draw(st.integers(1, 2)),
                        max_len=draw(st.integers(1, 12)), causal=draw(st.booleans()), position=scheme,
                        bos_token=draw(st.booleans()))


def _builtin_schemes() -> list[str]:
    from posenc.registry import builtin_specs

    return [spec.name for spec in builtin_specs()]


@GENERATED
@given(model=valid_models(), batch=st.integers(1, 3), data=st.data(), dtype=st.sampled_from(DTYPES))
def test_every_scheme_builds_and_runs_on_generated_sizes(model: tuple[str, dict[str, Any]], batch: int,
                                                         data: st.DataObject, dtype: torch.dtype) -> None:
    from posenc.models import TinyTransformer
    from posenc.registry import make_position_scheme

    scheme, kwargs = model
    seq_len = data.draw(st.integers(1, kwargs["max_len"]))
    assert make_position_scheme(scheme, d_model=kwargs["d_model"], n_heads=kwargs["n_heads"],
                                max_len=kwargs["max_len"]) is not None
    torch.manual_seed(0)
    network = TinyTransformer(6, 4, **kwargs).to(dtype)
    tokens = torch.tensor(data.draw(st.lists(st.lists(st.integers(0, 5), min_size=seq_len, max_size=seq_len),
                                             min_size=batch, max_size=batch)))
    logits = network(tokens)
    assert logits.shape == (batch, seq_len, 4) and logits.dtype == dtype and bool(torch.isfinite(logits).all())


@GENERATED
@given(data=st.data())
def test_models_name_each_bad_argument(data: st.DataObject) -> None:
    from posenc.models import TinyTransformer
    from posenc.registry import make_position_scheme

    name = data.draw(st.sampled_from(["d_model", "n_heads", "max_len", "vocab_size", "dropout", "position",
                                      "tokens"]))
    if name == "tokens":
        bad = data.draw(st.one_of(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=3), min_size=1,
                                           max_size=2),
                                  st.just(torch.tensor([[1.5]])), st.just(torch.tensor([[-1]])),
                                  st.just(torch.tensor([[6]])), st.just(torch.tensor([1, 2]))))
        _names_it(lambda: TinyTransformer(6, 4, d_model=8, n_heads=2)(bad), "tokens")
        return
    if name == "dropout":
        bad = data.draw(st.one_of(st.floats(min_value=1.0), st.floats(max_value=-1e-9), st.just(math.nan),
                                  st.text(max_size=3)))
    elif name == "position":
        bad = data.draw(st.text(max_size=6).filter(lambda t: t not in _builtin_schemes()))
    else:
        bad = data.draw(bad_for("positive int"))
    kwargs: dict[str, Any] = dict(d_model=8, n_heads=2, max_len=8)
    if name in ("d_model", "n_heads", "max_len") and data.draw(st.booleans()):
        _names_it(lambda: make_position_scheme("rope", **{**kwargs, name: bad}), name)
    elif name == "vocab_size":
        _names_it(lambda: TinyTransformer(bad, 4, **kwargs), name)
    else:
        _names_it(lambda: TinyTransformer(6, 4, **{**kwargs, name: bad}), name)


@st.composite
def valid_configs(draw: st.DrawFn) -> Any:
    from posenc.train import TrainConfig

    seq_len = draw(st.integers(2, 16))
    scheme = draw(st.sampled_from(_builtin_schemes()))
    lengths = draw(st.lists(st.integers(1, seq_len), max_size=3))
    return TrainConfig(
        task=draw(st.sampled_from(["copy_offset", "copy_half", "marker_recall"])),
        scheme=scheme, seed=draw(st.integers(0, 10**6)), seq_len=max(seq_len, 3),
        lr=draw(st.floats(1e-5, 1e-1)), weight_decay=draw(st.floats(0.0, 0.1)), causal=draw(st.booleans()),
        eval_lengths=tuple(lengths) if draw(st.booleans()) else list(lengths),
        eval_extrapolations=tuple(draw(st.lists(st.sampled_from(["clip", "modular", "interpolate"]), max_size=2,
                                                unique=True))),
        bos_token=draw(st.booleans()), per_position=draw(st.booleans()),
    )


@GENERATED
@given(config=valid_configs())
def test_train_config_round_trips(config: Any) -> None:
    from posenc.train import TrainConfig

    again = TrainConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config and again.to_dict() == config.to_dict()
    assert isinstance(config.eval_lengths, tuple) and all(isinstance(n, int) for n in config.eval_lengths)


@GENERATED
@given(data=st.data())
def test_train_config_names_each_bad_field(data: st.DataObject) -> None:
    from posenc.train import TrainConfig

    name, bad = data.draw(st.one_of(
        st.tuples(st.sampled_from(["seq_len", "steps", "batch_size", "d_model", "n_heads", "n_layers",
                                   "eval_examples", "log_every"]), bad_for("positive int")),
        st.tuples(st.sampled_from(["lr", "finetune_lr", "token_init_std"]), bad_for("positive float")),
        st.tuples(st.just("weight_decay"), st.one_of(st.floats(max_value=-1e-9), st.just(math.nan), st.text(max_size=3))),
        st.tuples(st.sampled_from(["causal", "bos_token", "per_position", "exact_match"]),
                  st.one_of(st.text(max_size=3), st.integers(), st.none())),
        st.tuples(st.just("eval_lengths"), st.one_of(st.integers(), st.text(min_size=1, max_size=3),
                                                     st.lists(st.integers(max_value=0), min_size=1, max_size=2))),
        st.tuples(st.just("eval_extrapolations"), st.one_of(st.sampled_from(["clip", "modular"]),
                                                            st.lists(st.text(max_size=3), min_size=1, max_size=2))),
        st.tuples(st.sampled_from(["position_options", "task_options"]),
                  st.one_of(st.none(), st.lists(st.integers(), max_size=2), st.text(max_size=3))),
    ))
    _names_it(lambda: TrainConfig(**{name: bad}), name)


@GENERATED
@given(task_name=st.sampled_from(["copy_offset", "reverse", "marker_recall", "copy_half"]), batch=st.integers(1, 8),
       extra=st.integers(0, 30), seed=st.integers(0, 2**31))
def test_every_task_samples_generated_sizes(task_name: str, batch: int, extra: int, seed: int) -> None:
    from posenc.tasks import IGNORE_INDEX, make_generator, make_task

    task = make_task(task_name)
    seq_len = task.min_len + extra
    tokens, targets = task.sample(batch, seq_len, make_generator(seed))
    assert tokens.shape == targets.shape == (batch, seq_len)
    assert int(tokens.min()) >= 0 and int(tokens.max()) < task.vocab_size
    labelled = targets[targets != IGNORE_INDEX]
    assert labelled.numel() > 0 and int(labelled.min()) >= 0 and int(labelled.max()) < task.n_outputs
    assert torch.equal(task.labels(tokens), targets)


@GENERATED
@given(task_name=st.sampled_from(["copy_offset", "reverse", "marker_recall", "copy_half", "text"]), data=st.data())
def test_every_task_names_a_bad_sample_argument(task_name: str, data: st.DataObject) -> None:
    from posenc.tasks import make_task

    task = make_task(task_name)
    name = data.draw(st.sampled_from(["batch_size", "seq_len", "generator"]))
    kwargs: dict[str, Any] = {"batch_size": 2, "seq_len": task.min_len, "generator": None}
    if name == "generator":
        kwargs[name] = data.draw(st.one_of(st.integers(), st.text(max_size=3)))
    elif name == "seq_len" and data.draw(st.booleans()):
        kwargs[name] = data.draw(st.integers(1, task.min_len - 1)) if task.min_len > 1 else 0
    else:
        kwargs[name] = data.draw(bad_for("positive int"))
    _names_it(lambda: task.sample(**kwargs), name)


if __name__ == "__main__":  # a readable report while working on the contract: python tests/test_contract.py
    import sys

    found = sweep([t for t in TARGETS if not sys.argv[1:] or any(a in t.id for a in sys.argv[1:])])
    print("\n".join(found.problems))
    print(f"{found.callables} callables, {found.parameters} parameters, {found.probes} probes, "
          f"{len(found.problems)} problems")
