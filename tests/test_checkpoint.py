"""``posenc.checkpoint``: a trained model and its config in one safetensors file, and the one the book ships."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from posenc.book import data_path
from posenc.checkpoint import CHECKPOINT_FORMAT, checkpoint_bytes, load_checkpoint, save_checkpoint
from posenc.results import load_results, select
from posenc.train import TrainConfig, build_model, run_metrics, train

from experiments import configs

TINY = TrainConfig(task="copy_offset", scheme="rope", causal=True, seq_len=8, steps=6, batch_size=4, d_model=16,
                   n_heads=2, n_layers=1, eval_examples=16, eval_lengths=(16,), score_new_positions=True,
                   validation_examples=8)


@pytest.fixture(scope="module")
def tiny_run() -> tuple[torch.nn.Module, object]:
    return train(TINY)


def test_round_trip_gives_the_same_model(tiny_run: tuple[torch.nn.Module, object], tmp_path: Path) -> None:
    model, result = tiny_run
    path = save_checkpoint(model, TINY, tmp_path / "sub" / "tiny.safetensors")
    loaded, config = load_checkpoint(path)
    assert config == TINY and not loaded.training
    trained, again = model.state_dict(), loaded.state_dict()
    assert trained.keys() == again.keys() and all(torch.equal(trained[k], again[k]) for k in trained)
    tokens = torch.randint(0, loaded.vocab_size, (3, 16), generator=torch.Generator().manual_seed(0))
    assert torch.equal(model(tokens), loaded(tokens))
    metrics = run_metrics(loaded, config)
    assert metrics == {k: v for k, v in result.metrics.items() if k not in ("final_loss", "n_parameters")}
    assert path.read_bytes() == checkpoint_bytes(model, TINY)  # deterministic bytes


def test_saving_and_loading_leave_the_global_random_state_alone(tiny_run: tuple[torch.nn.Module, object],
                                                                   tmp_path: Path) -> None:
    model, _ = tiny_run
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    load_checkpoint(save_checkpoint(model, TINY, tmp_path / "tiny.safetensors"))
    assert torch.equal(torch.rand(3), expected)


def test_run_metrics_leaves_the_weights_and_mode_alone(tiny_run: tuple[torch.nn.Module, object]) -> None:
    model, _ = tiny_run
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    run_metrics(model, replace(TINY, finetune_steps=2, finetune_len=16, rope_scalings=("ntk",)))
    assert model.training and all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    model.eval()
    with pytest.raises(TypeError, match="TinyTransformer"):
        run_metrics(torch.nn.Linear(2, 2), TINY)  # type: ignore[arg-type]


def test_bad_files_get_clear_errors(tiny_run: tuple[torch.nn.Module, object], tmp_path: Path) -> None:
    model, _ = tiny_run
    with pytest.raises(FileNotFoundError, match="no checkpoint at .*make grids"):
        load_checkpoint(tmp_path / "missing.safetensors")
    (tmp_path / "text.safetensors").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        load_checkpoint(tmp_path / "text.safetensors")
    save_file({"w": torch.zeros(2)}, str(tmp_path / "plain.safetensors"))
    with pytest.raises(ValueError, match="not a posenc checkpoint.*lacks a valid 'posenc' record"):
        load_checkpoint(tmp_path / "plain.safetensors")
    save_file({"w": torch.zeros(2)}, str(tmp_path / "other.safetensors"),
              metadata={"posenc": json.dumps({"format": "posenc.TinyTransformer/0", "config": {}})})
    with pytest.raises(ValueError, match="format 'posenc.TinyTransformer/0'"):
        load_checkpoint(tmp_path / "other.safetensors")
    wider = replace(TINY, d_model=32)
    weights = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(tmp_path / "wrong.safetensors"),
              metadata={"posenc": json.dumps({"format": CHECKPOINT_FORMAT, "config": wider.to_dict()})})
    with pytest.raises(ValueError, match=r"wrong shape \['token_embedding.weight \(\d+, 16\) \(expected \(\d+, 32\)\)"):
        load_checkpoint(tmp_path / "wrong.safetensors")
    with pytest.raises(ValueError, match="missing .*unexpected"):
        checkpoint_bytes(model, replace(TINY, n_layers=2))
    with pytest.raises(TypeError, match="TrainConfig"):
        checkpoint_bytes(model, TINY.to_dict())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="TinyTransformer"):
        checkpoint_bytes(torch.nn.Linear(2, 2), TINY)  # type: ignore[arg-type]


# -- the checkpoint chapter 11 reads -------------------------------------------------------------
BOOK_CHECKPOINT = data_path(configs.ROPE_SCALING_CHECKPOINT)


def _stored_run():  # noqa: ANN202
    results, _ = load_results(data_path("rope_scaling_grid.json"))
    (stored,) = select(results, task="copy_offset", seed=0, finetune_len=32, position_options={})
    return stored


def test_book_checkpoint_is_the_grid_run_and_scores_as_stored() -> None:
    model, config = load_checkpoint(BOOK_CHECKPOINT)
    assert config == configs.rope_scaling_checkpoints()[configs.ROPE_SCALING_CHECKPOINT]
    stored = _stored_run()
    assert config == replace(TrainConfig.from_dict(stored.config), finetune_steps=0, finetune_len=None,
                             rope_scalings=())
    metrics = run_metrics(model, config)
    assert set(metrics) >= {"accuracy", "val_accuracy", "new@32", "new@64"}
    assert all(metrics[key] == stored.metrics[key] for key in metrics), metrics


def test_book_checkpoint_is_what_training_gives_bit_for_bit() -> None:
    """Train chapter 11's model again from its config (about 20 s): every weight must be identical."""
    stored_model, config = load_checkpoint(BOOK_CHECKPOINT)
    model, result = train(config)
    stored, again = stored_model.state_dict(), model.state_dict()
    assert stored.keys() == again.keys()
    assert [k for k in stored if not torch.equal(stored[k], again[k])] == []
    assert result.metrics["final_loss"] == _stored_run().metrics["final_loss"]
    untrained = build_model(config).state_dict()
    assert not torch.equal(untrained["head.weight"], stored["head.weight"])  # not vacuous: training moved it


def test_realistic_checkpoint_is_the_grid_run_and_scores_as_stored() -> None:
    """Chapter 11's realistic model (width 64, 512 tokens): its config is the grid's first copy-offset run,
    and read at 1,024 tokens plainly and with YaRN it scores exactly as stored (the full re-training, about
    a minute, is the grid's business)."""
    from posenc.rope_scaling import RopeScaling
    from posenc.tasks import make_task
    from posenc.train import new_position_accuracy

    model, config = load_checkpoint(data_path(configs.REALISTIC_SCALING_CHECKPOINT))
    assert config == configs.realistic_scaling_checkpoints()[configs.REALISTIC_SCALING_CHECKPOINT]
    (stored,) = select(load_results(data_path("realistic_scaling_grid.json"))[0], task="copy_offset", seed=0,
                       lr=config.lr, position_options={})
    assert config == replace(TrainConfig.from_dict(stored.config), finetune_steps=0, finetune_len=None,
                             rope_scalings=())
    task = make_task(config.task)
    for setup, suffix in ((None, ""), ("yarn_rotations", ":yarn_rotations")):
        model.position.set_scaling(None if setup is None else
                                   RopeScaling.for_length(setup, train_len=config.seq_len, target_len=1024))
        live = new_position_accuracy(model, task, 1024, train_len=config.seq_len, n_examples=config.eval_examples)
        assert live == stored.metrics[f"new@1024{suffix}"], setup


# -- the checkpoint chapter 7 reads --------------------------------------------------------------
def _ch7_stored_run():  # noqa: ANN202
    results, _ = load_results(data_path("ch7_grid.json"))
    return select(results, scheme="learned", position_options={"init": "bert"}, seed=0)[0]


def test_ch7_checkpoint_is_the_grid_run_and_scores_as_stored() -> None:
    model, config = load_checkpoint(data_path(configs.CH7_CHECKPOINT))
    stored = _ch7_stored_run()
    assert config == configs.ch7_checkpoints()[configs.CH7_CHECKPOINT] == TrainConfig.from_dict(stored.config)
    metrics = run_metrics(model, config)
    assert set(metrics) >= {"accuracy", "accuracy@64:modular"}
    assert all(metrics[key] == stored.metrics[key] for key in metrics), metrics


def test_ch7_checkpoint_is_what_training_gives_bit_for_bit() -> None:
    """Train chapter 7's model again from its config (several seconds): every weight must be identical, so
    the chapter can load it instead of training it."""
    stored_model, config = load_checkpoint(data_path(configs.CH7_CHECKPOINT))
    model, result = train(config)
    stored, again = stored_model.state_dict(), model.state_dict()
    assert [k for k in stored if not torch.equal(stored[k], again[k])] == []
    assert result.metrics == _ch7_stored_run().metrics
    assert not torch.equal(build_model(config).state_dict()["head.weight"], stored["head.weight"])
