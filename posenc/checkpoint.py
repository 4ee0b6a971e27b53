"""Store a trained :class:`posenc.models.TinyTransformer` with the config that made it.

A checkpoint is one safetensors file: every weight of the model (float32, exactly as
trained) plus, in the file's metadata under the key ``"posenc"``, a JSON record with the
checkpoint format, the :class:`posenc.train.TrainConfig` of the run and the torch version.
(One key, because safetensors writes several metadata keys in no fixed order; with one,
the same model always gives the same bytes.)
Loading builds the model that config describes and puts the weights back, so the model
computes bit for bit what the trained one computed.

* :func:`checkpoint_bytes` and :func:`save_checkpoint` write one;
* :func:`load_checkpoint` reads it back as ``(model, config)``.

``make grids`` stores the trained models a chapter analyses next to the grids (e.g.
chapter 11's ``book/data/rope_scaling_model.safetensors``); ``tests/test_checkpoint.py``
trains such a model again and checks that every weight comes out identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from posenc.checks import check_path
from posenc.models import TinyTransformer
from posenc.train import TrainConfig, build_model

__all__ = ["CHECKPOINT_FORMAT", "checkpoint_bytes", "save_checkpoint", "load_checkpoint"]

#: The ``format`` entry of a checkpoint's metadata; a file with another one is refused.
CHECKPOINT_FORMAT = "posenc.TinyTransformer/1"


def checkpoint_bytes(model: TinyTransformer, config: TrainConfig) -> bytes:
    """The safetensors file of ``model`` (its ``state_dict``) with ``config`` in the metadata.

    Raises:
        TypeError: if ``model`` is not a ``TinyTransformer`` or ``config`` not a ``TrainConfig``.
        ValueError: if ``model`` does not have the weights ``config`` describes.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a posenc.models.TinyTransformer, got {type(model).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a posenc.train.TrainConfig, got {type(config).__name__}")
    weights = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    _check_weights(weights, _untrained(config).state_dict(), what="the model")
    record = {"format": CHECKPOINT_FORMAT, "config": config.to_dict(), "torch": torch.__version__}
    return save(weights, metadata={"posenc": json.dumps(record, sort_keys=True)})


def save_checkpoint(model: TinyTransformer, config: TrainConfig, path: str | Path) -> Path:
    """Write :func:`checkpoint_bytes` to ``path`` (parent folders are created); returns the path."""
    path = check_path("path", path)
    data = checkpoint_bytes(model, config)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def load_checkpoint(path: str | Path) -> tuple[TinyTransformer, TrainConfig]:
    """The model and config stored in ``path`` by :func:`save_checkpoint`; the model is in eval mode.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a safetensors file, is not a posenc checkpoint, or its
            weights do not fit the model its config describes (names and shapes are listed).
    """
    path = check_path("path", path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at path={str(path)!r} (make grids writes the book's checkpoints)")
    try:
        with safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            weights = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118 - safe_open has no __iter__
    except (SafetensorError, OSError) as error:
        raise ValueError(f"{path} is not a readable safetensors file ({error})") from error
    try:
        record = json.loads(metadata["posenc"])
        if record["format"] != CHECKPOINT_FORMAT:
            raise ValueError(f"format {record['format']!r}")
        config = TrainConfig.from_dict(record["config"])
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path} is not a posenc checkpoint of format {CHECKPOINT_FORMAT!r}: its metadata "
                         f"{sorted(metadata)} lacks a valid 'posenc' record ({error!r})") from error
    model = _untrained(config)
    _check_weights(weights, model.state_dict(), what=str(path))
    model.load_state_dict(weights, strict=True)
    model.eval()
    return model, config


def _untrained(config: TrainConfig) -> TinyTransformer:
    """The model ``config`` describes, built without touching torch's global random state
    (building draws initial weights from it; saving or loading should not change what comes next)."""
    with torch.random.fork_rng(devices=[]):
        return build_model(config)


def _check_weights(weights: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], *, what: str) -> None:
    """Raise a ValueError naming every missing, unexpected or mis-shaped weight of ``what``."""
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    misshaped = [f"{name} {tuple(weights[name].shape)} (expected {tuple(tensor.shape)})"
                 for name, tensor in expected.items() if name in weights and weights[name].shape != tensor.shape]
    if missing or unexpected or misshaped:
        raise ValueError(f"{what} does not have the weights its config describes: missing {missing}, "
                         f"unexpected {unexpected}, wrong shape {misshaped}")
