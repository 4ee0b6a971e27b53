"""The cases of issue 27, one regression test each, in the issue's order.

Each reproduces a call the issue reports (an unclear error, a silent result, a valid input that
failed, work that was not bounded) and pins how it behaves now. The generic sweep of every public
callable is ``tests/test_contract.py``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc.analysis import as_table
from posenc.checkpoint import load_checkpoint
from posenc.learned import LearnedPositionEmbedding, initial_table, init_table_
from posenc.models import TinyTransformer, attention_probabilities
from posenc.order import embed_words, random_attention, self_attention, with_positions
from posenc.order_plots import order_explorer
from posenc.pretrained import checkpoint_keys, load_position_table
from posenc.registry import available_schemes, make_position_scheme
from posenc.results import RunResult, load_results, metric_values, save_results, summarize, summary_by_label
from posenc.rope_practice import rope_attention_scores
from posenc.rope_scaling import LongRopeScaling, RopeScaling, pair_diagnostic
from posenc.sinusoidal import SinusoidalPositionalEncoding, sinusoidal_table
from posenc.tasks import CopyOffsetTask
from posenc.train import TrainConfig, evaluate, fine_tune, position_accuracy, train

TINY = TrainConfig(seq_len=8, steps=2, batch_size=4, d_model=8, n_heads=2, n_layers=1, eval_examples=8, log_every=1)


def _model(**changes: object) -> TinyTransformer:
    return TinyTransformer(8, 8, **{**dict(d_model=8, n_heads=2, n_layers=1, max_len=8), **changes})  # type: ignore[arg-type]


# -- 1. the order explorer with a sentence as a string ----------------------------------------------
def test_embed_words_reads_a_sentence_as_words_not_characters() -> None:
    assert embed_words("the cat sat", d_model=8).shape == (3, 8)
    assert torch.equal(embed_words("the cat sat", d_model=8), embed_words(["the", "cat", "sat"], d_model=8))
    with pytest.raises(ValueError, match="words must hold at least one word"):
        embed_words("   ", d_model=8)
    with pytest.raises(TypeError, match=r"words\[1\] must be a string"):
        embed_words(["the", 3], d_model=8)  # type: ignore[list-item]


def test_order_explorer_takes_a_sentence() -> None:
    from_text, from_list = order_explorer("dog bites man", d_model=4), order_explorer(["dog", "bites", "man"], d_model=4)
    assert from_text.controls[0].values == from_list.controls[0].values
    assert len(order_explorer("the dog saw the cat", d_model=4).controls[0].values) == 60  # 5! / 2: "the" twice


@pytest.mark.parametrize("sentence", ["the cat sat on the mat", "a b c d e f g h", "one two three four five six"])
def test_order_explorer_refuses_too_many_words_before_any_attention(sentence: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """6 words were 720 permutations x 3 modes run through attention before the 400-frame cap (24 GB for the
    string, read as 22 characters); now the count is checked first."""
    import posenc.order_plots

    def no_attention(*args: object, **kwargs: object) -> None:
        raise AssertionError("attention ran before the word count was checked")

    monkeypatch.setattr(posenc.order_plots, "self_attention", no_attention)
    monkeypatch.setattr(posenc.order_plots, "embed_words", no_attention)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"words must hold at most 5 words, got \d") as info:
        order_explorer(sentence)
    assert time.perf_counter() - start < 0.5
    assert "equivariance_gap" in str(info.value)  # what to use instead, a function that exists


# -- 2. the odd-d_model hint only where odd= is accepted ------------------------------------------
ODD = 63
NO_ODD_OPTION = {
    "TinyTransformer": lambda: TinyTransformer(8, 8, d_model=ODD, n_heads=3, max_len=16),
    "TrainConfig via train": lambda: train(replace(TINY, d_model=ODD, n_heads=3)),
    "make_position_scheme sinusoidal": lambda: make_position_scheme("sinusoidal", d_model=ODD, n_heads=3, max_len=16),
    "make_position_scheme scaled sinusoid": lambda: make_position_scheme("hybrid-scaled-sinusoid", d_model=ODD,
                                                                         n_heads=3, max_len=16),
    "SinusoidalScheme": lambda: __import__("posenc.schemes", fromlist=["x"]).SinusoidalScheme(ODD),
    "fractional_sinusoidal": lambda: __import__("posenc.extrapolate", fromlist=["x"]).fractional_sinusoidal([0.5], ODD),
    "initial_table": lambda: initial_table(4, ODD, "sinusoidal"),
    "init_table_": lambda: init_table_(torch.empty(4, ODD), "sinusoidal"),
    "LearnedPositionEmbedding": lambda: LearnedPositionEmbedding(4, ODD, init="sinusoidal"),
    "float32_recipe_table": lambda: __import__("posenc.sinusoidal", fromlist=["x"]).float32_recipe_table(4, ODD),
    "time_position_vectors": lambda: __import__("posenc.compare", fromlist=["x"]).time_position_vectors(4, ODD),
    "with_positions": lambda: with_positions(torch.zeros(3, ODD), "sinusoidal added"),
    "table_figure": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).table_figure(8, ODD),
    "table_explorer": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).table_explorer((ODD,), (8,)),
    "position_explorer": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).position_explorer(ODD),
    "rotation_explorer": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).rotation_explorer(ODD),
    "wavelength_figure": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).wavelength_figure(ODD),
    "dot_product_figure": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).dot_product_figure(ODD),
    "layouts_figure": lambda: __import__("posenc.sinusoidal_plots", fromlist=["x"]).layouts_figure(8, ODD),
    "learned_explorer": lambda: __import__("posenc.learned_plots", fromlist=["x"]).learned_explorer(d_models=(ODD,)),
}


@pytest.mark.parametrize("call", NO_ODD_OPTION.values(), ids=NO_ODD_OPTION)
def test_an_odd_width_error_advises_only_options_the_call_takes(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="must be even") as info:
        call()
    assert "d_model" in str(info.value) and str(ODD) in str(info.value)
    assert "odd=" not in str(info.value)


def test_where_odd_is_accepted_the_hint_is_given_and_works() -> None:
    with pytest.raises(ValueError, match="pass odd='pad'"):
        sinusoidal_table(4, ODD)
    assert sinusoidal_table(4, ODD, odd="pad").shape == (4, ODD)
    assert SinusoidalPositionalEncoding(ODD, odd="pad")(torch.zeros(1, 4, ODD)).shape == (1, 4, ODD)
    # the scheme does not take odd=: the options it does take are named, nothing else
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['odd'\] for scheme 'sinusoidal'; allowed: base, layout"):
        make_position_scheme("sinusoidal", d_model=ODD, n_heads=3, max_len=16, odd="pad")


# -- 3. types at the common boundaries ----------------------------------------------------------
@pytest.mark.parametrize("tokens", [[[1, 2, 3]], np.array([[1, 2, 3]])], ids=["list", "numpy"])
def test_tokens_that_are_not_a_tensor_are_named(tokens: object) -> None:
    model = _model()
    for call in (lambda: model(tokens), lambda: attention_probabilities(model, tokens)):  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"tokens must be a torch.Tensor .*\(convert it with torch.tensor"):
            call()
    assert model(torch.tensor([[1, 2, 3]])).shape == (1, 3, 8)


@pytest.mark.parametrize("call", [
    lambda m: evaluate(m, "copy_offset", 4),
    lambda m: fine_tune(m, "copy_offset", 4, steps=1),
    lambda m: position_accuracy(m, "copy_offset", 4),
], ids=["evaluate", "fine_tune", "position_accuracy"])
def test_a_task_name_where_a_task_is_needed_is_named(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=r"task must be a posenc.tasks.Task \(e.g. make_task\('copy_offset'\)\), "
                                        r"got 'copy_offset'"):
        call(_model())


# -- 4. eval lengths past a learned table: scored with a stated rule, or refused before training ----------
def test_an_eval_length_past_a_learned_table_needs_a_workaround(monkeypatch: pytest.MonkeyPatch) -> None:
    config = replace(TINY, scheme="learned", position_options={"init": "bert"}, eval_lengths=(32,))
    import posenc.train

    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("the optimiser was built before the lengths were checked")

    with monkeypatch.context() as patch:
        patch.setattr(posenc.train.torch.optim, "AdamW", no_training)
        with pytest.raises(ValueError, match=r"eval_lengths has 32, past the end of the learned table .* holds 8 "
                                             r"positions .*give eval_extrapolations"):
            train(config)
    _, result = train(replace(config, eval_extrapolations=("clip",)))
    assert "accuracy@32:clip" in result.metrics and "accuracy@32" not in result.metrics  # the rule the docs state


def test_a_length_past_a_fixed_length_hybrid_is_refused() -> None:
    config = replace(TINY, scheme="hybrid-factored", eval_lengths=(16,), eval_extrapolations=("clip",))
    with pytest.raises(ValueError, match="eval_lengths has 16, past the end of scheme 'hybrid-factored'"):
        train(config)


def test_a_finetune_length_past_a_learned_table_needs_a_workaround() -> None:
    config = replace(TINY, scheme="learned", finetune_steps=1, finetune_len=16)
    with pytest.raises(ValueError, match="finetune_len has 16, past the end of the learned table"):
        train(config)


def test_with_an_anchor_the_table_end_counts_the_anchor() -> None:
    """A learned table with an anchor has max_len + 1 rows for max_len + 1 positions: length max_len + 1 needs a
    workaround (it crashed inside the lookup before)."""
    config = replace(TINY, scheme="learned", bos_token=True, eval_lengths=(9,), eval_extrapolations=("clip",))
    _, result = train(config)
    assert "accuracy@9:clip" in result.metrics and "accuracy@9" not in result.metrics


# -- 5. TrainConfig's sequence fields -----------------------------------------------------------
@pytest.mark.parametrize(("changes", "error", "message"), [
    ({"eval_lengths": 32}, TypeError, r"eval_lengths must be a sequence of integers .* written \(32,\), not \(32\)"),
    ({"eval_extrapolations": "clip"}, TypeError, r"eval_extrapolations must be a sequence of names, got the string "
                                                 r"'clip': .* written \('clip',\)"),
    ({"rope_scalings": "yarn"}, TypeError, r"rope_scalings must be a sequence of names, got the string 'yarn'"),
    ({"eval_extrapolations": ("clip", "wrap")}, ValueError, r"eval_extrapolations\[1\] must be one of"),
    ({"eval_lengths": (16, -4)}, ValueError, r"eval_lengths\[1\] must be a positive integer"),
    ({"position_options": None}, TypeError, r"position_options must be a dict of the scheme's options \({} for none\)"),
    ({"task_options": None}, TypeError, r"task_options must be a dict"),
    ({"weight_decay": "x"}, TypeError, r"weight_decay must be a real number, got 'x'"),
    ({"weight_decay": math.nan}, ValueError, r"weight_decay must be a finite number, got nan"),
    ({"weight_decay": -0.1}, ValueError, r"weight_decay must be a number in \[0, inf\)"),
    ({"causal": "yes"}, TypeError, r"causal must be True or False, got 'yes'"),
    ({"causal": 1}, TypeError, r"causal must be True or False, got 1"),
    ({"scheme": "fourier"}, ValueError, r"scheme must be one of"),
    ({"task": "copy"}, ValueError, r"task must be one of"),
    ({"d_model": 0}, ValueError, r"d_model must be a positive integer"),
], ids=lambda v: str(v)[:40])
def test_train_config_fields_are_checked_and_named(changes: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        replace(TINY, **changes)


def test_valid_configs_keep_their_dict() -> None:
    """What the cache keys of make grids hash: unchanged, lists from JSON included."""
    config = replace(TINY, scheme="learned", eval_lengths=[16, 32], eval_extrapolations=["clip"])
    assert config.eval_lengths == (16, 32) and config.eval_extrapolations == ("clip",)
    assert TrainConfig.from_dict(config.to_dict()) == config
    assert json.dumps(TrainConfig().to_dict(), sort_keys=True) == json.dumps({
        "task": "copy_offset", "scheme": "sinusoidal", "seed": 0, "seq_len": 16, "steps": 300, "batch_size": 32,
        "lr": 3e-3, "d_model": 64, "n_heads": 4, "n_layers": 2, "position_options": {}, "n_train_examples": None,
        "task_options": {}, "max_len": None, "combine": "add", "d_pos": None, "causal": False, "token_init_std": 1.0,
        "weight_decay": 0.0, "eval_lengths": [], "eval_extrapolations": [], "eval_examples": 512, "log_every": 25,
        "curve_examples": 0, "per_position": False}, sort_keys=True)


# -- 6. file readers ----------------------------------------------------------------------------
def _runs() -> list[RunResult]:
    return [RunResult(config=TINY.to_dict(), seed=0, metrics={"accuracy": 0.5}, history=[], wall_time_s=0.1)]


def test_a_truncated_results_file_is_named(tmp_path: Path) -> None:
    path = save_results(_runs(), tmp_path / "grid.json")
    path.write_text(path.read_text()[:40])
    with pytest.raises(ValueError, match=r"path='.*grid.json' is not a results file: it is not valid JSON"):
        load_results(path)


def test_a_bad_entry_of_a_results_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "grid.json"
    entry = _runs()[0].to_dict()
    entry["metrics"] = None
    path.write_text(json.dumps({"results": [_runs()[0].to_dict(), entry]}))
    with pytest.raises(ValueError, match=r"results\[1\] is not a stored run: data\['metrics'\] must be a dict"):
        load_results(path)
    path.write_text(json.dumps({"results": [3]}))
    with pytest.raises(ValueError, match=r"results\[0\] must be a JSON object"):
        load_results(path)


@pytest.mark.parametrize("content", [b"\x00\x01", b"\xff" * 16, b'{"not": "safetensors"}'],
                         ids=["truncated", "foreign", "json"])
def test_a_damaged_safetensors_file_is_named(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    for call in (checkpoint_keys, load_position_table):
        with pytest.raises(ValueError, match=r"model.safetensors' is not a readable safetensors file"):
            call(path)
    with pytest.raises(ValueError, match="is not a readable safetensors file"):
        load_checkpoint(path)  # the reader that already did this: the same answer


def test_a_damaged_tensor_inside_a_readable_header_is_named(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({"wpe.weight": torch.randn(64, 16)}, str(path))
    path.write_bytes(path.read_bytes()[:-1024])  # the header is intact, the data is cut short
    with pytest.raises(ValueError, match=r"model.safetensors"):
        load_position_table(path)


# -- 7. silent results ------------------------------------------------------------------------------
def test_a_misspelled_metric_is_an_error_everywhere() -> None:
    runs = _runs()
    for call in (lambda: summarize(runs, metric="acuracy"), lambda: summary_by_label(runs, metric="acuracy"),
                 lambda: metric_values(runs, "acuracy")):
        with pytest.raises(ValueError, match="acuracy"):
            call()
    assert summarize([], metric="anything") == []  # no runs: no rows, as before


def test_a_scaling_that_reads_the_training_length_needs_it() -> None:
    for method in ("yarn", "llama3", "dynamic_ntk"):
        with pytest.raises(ValueError, match=f"train_len is required for method='{method}'"):
            RopeScaling(method, factor=4.0)
    assert RopeScaling("ntk", factor=4.0).train_len is None  # these scale by the factor alone
    assert RopeScaling("yarn", factor=4.0, train_len=16).train_len == 16


def test_pair_diagnostic_refuses_a_scaling_set_up_for_another_length() -> None:
    with pytest.raises(ValueError, match=r"scaling was set up for train_len=32, but train_len=16"):
        pair_diagnostic(16, train_len=16, target_len=64, scaling=RopeScaling("yarn", factor=4.0, train_len=32))
    assert len(pair_diagnostic(16, train_len=16, target_len=64, scaling=RopeScaling("yarn", factor=4.0,
                                                                                    train_len=16))) == 8


def test_learned_position_ids_are_never_broadcast_into_a_larger_output() -> None:
    table = LearnedPositionEmbedding(8, 4)
    with pytest.raises(ValueError, match=r"position_ids of shape \(3, 1\) do not fit x of shape \(1, 3, 4\)"):
        table(torch.zeros(1, 3, 4), torch.zeros(3, 1, dtype=torch.long))
    assert table(torch.zeros(2, 3, 4), torch.arange(3)).shape == (2, 3, 4)
    assert table(torch.zeros(2, 3, 4), torch.tensor([[0, 1, 2], [3, 4, 5]])).shape == (2, 3, 4)


def test_a_diverging_run_is_an_error_naming_the_learning_rate() -> None:
    with pytest.raises(ValueError, match=r"training diverged at step \d+ of \d+: the loss is (nan|inf) with lr=1e\+09"):
        train(replace(TINY, lr=1e9, steps=20))


# -- 8. valid input that failed -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_an_alibi_model_runs_in_half_precision(dtype: torch.dtype) -> None:
    model = _model(position="alibi").to(dtype)
    logits = model(torch.tensor([[1, 2, 3]]))
    assert logits.dtype == dtype and bool(torch.isfinite(logits).all())


def test_as_table_reads_bfloat16() -> None:
    table = torch.randn(4, 3).to(torch.bfloat16)
    assert np.array_equal(as_table(table), table.float().numpy().astype(np.float64))


# -- 9. smaller ---------------------------------------------------------------------------------
def test_query_and_key_dtypes_must_agree() -> None:
    with pytest.raises(ValueError, match=r"q and k must have the same dtype, got q torch.float32 and k torch.float64"):
        rope_attention_scores(torch.zeros(3, 4), torch.zeros(3, 4, dtype=torch.float64), torch.arange(3))
    with pytest.raises(ValueError, match=r"x must have the dtype of the weights \(torch.float32\), got torch.float64"):
        self_attention(torch.zeros(3, 8, dtype=torch.float64), random_attention(8))


def test_one_far_position_does_not_build_the_table_up_to_it() -> None:
    encoding = SinusoidalPositionalEncoding(512, max_len=16)
    start = time.perf_counter()
    rows = encoding.encoding(torch.tensor([3, 10**6]))
    assert time.perf_counter() - start < 1.0
    assert encoding.max_len == 16  # not 1,000,001 rows (2 GB)
    exact = sinusoidal_table(None, 512, positions=[3, 10**6])
    assert torch.allclose(rows, exact, atol=1e-6)
    assert torch.equal(encoding.encoding(torch.arange(40)), sinusoidal_table(40, 512))  # near positions: the cache


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA")
def test_an_unavailable_device_is_named() -> None:
    with pytest.raises(ValueError, match=r"device='cuda', but this torch cannot use CUDA .* use device='cpu'"):
        sinusoidal_table(4, 8, device="cuda")


# -- valid edge cases, for every registered scheme ----------------------------------------------------
@pytest.mark.parametrize("scheme", available_schemes())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_the_smallest_model_runs_for_every_scheme_and_dtype(scheme: str, dtype: torch.dtype) -> None:
    """d_model = 2, one head, one layer, a sequence of one token, a batch of one, in full and half precision."""
    torch.manual_seed(0)
    model = TinyTransformer(5, 3, d_model=2, n_heads=1, n_layers=1, max_len=1, position=scheme).to(dtype)
    logits = model(torch.tensor([[4]]))
    assert logits.shape == (1, 1, 3) and logits.dtype == dtype and bool(torch.isfinite(logits).all())
    weights = attention_probabilities(model, torch.tensor([[4]]))
    assert weights.shape == (1, 1, 1, 1)


@pytest.mark.parametrize("scheme", available_schemes())
def test_a_tiny_run_trains_for_every_scheme(scheme: str) -> None:
    config = replace(TINY, scheme=scheme, d_model=2, n_heads=1, seq_len=3, batch_size=1,
                     task_options={"n_symbols": 4, "offset": 1})
    _, result = train(config)
    assert 0.0 <= result.metrics["accuracy"] <= 1.0 and math.isfinite(result.metrics["final_loss"])


# -- issue 24's code under the contract ------------------------------------------------------------------
def _long_rope() -> LongRopeScaling:
    return LongRopeScaling((1.0,) * 4, (1.0, 1.5, 2.0, 4.0), train_len=8, factor=4.0)


def test_a_long_rope_scaling_is_taken_wherever_a_scaling_is() -> None:
    """The RopeScaling-only check of issue 27 refused LongRoPE (Appendix D's check_longrope_cache failed on
    every implementation); one duck-typed check (posenc.relative.check_scaling) now serves every function."""
    from posenc import bugs
    from posenc.relative import RopeScheme
    from posenc.rope_scaling import relative_score_curve

    scaling = _long_rope()
    q, k = torch.randn(12, 8, dtype=torch.float64), torch.randn(12, 8, dtype=torch.float64)
    assert rope_attention_scores(q, k, torch.arange(12), scaling=scaling).shape == (12, 12)
    assert len(pair_diagnostic(8, train_len=8, target_len=32, scaling=scaling)) == 4
    assert relative_score_curve(torch.arange(4.0), 8, scaling=scaling).shape == (4,)
    RopeScheme(8, 1).set_scaling(scaling)
    assert bugs.check_longrope_cache(bugs.generate_longrope_fixed).startswith("every generated token")
    for call in (lambda: rope_attention_scores(q, k, torch.arange(12), scaling="yarn"),  # type: ignore[arg-type]
                 lambda: pair_diagnostic(8, train_len=8, target_len=32, scaling="yarn"),
                 lambda: RopeScheme(8, 1).set_scaling("yarn")):  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"scaling must be a RoPE scaling \(a posenc.rope_scaling.RopeScaling or "
                                            r"LongRopeScaling.*got 'yarn' of type str"):
            call()


def test_a_partial_head_is_named_as_partial() -> None:
    with pytest.raises(ValueError, match=r"partial must be the share of d_head that rotates in \(0, 1\], got -1"):
        pair_diagnostic(8, train_len=8, target_len=32, partial=-1)
    with pytest.raises(TypeError, match="partial must be a real number, got True of type bool"):
        pair_diagnostic(8, train_len=8, target_len=32, partial=True)


def test_the_config_check_takes_a_config_dict() -> None:
    from posenc import bugs

    assert bugs.check_config_scaling(bugs.rotary_inverse_frequencies_fixed).startswith("every layer type")
    with pytest.raises(TypeError, match=r"config must be a dict \(a model's config.json\), got \['x'\] of type list"):
        bugs.rotary_inverse_frequencies_fixed(["x"])  # type: ignore[arg-type]
