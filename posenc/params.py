"""What a learned position table costs in parameters and memory, computed from configs.

* :class:`TransformerConfig` describes a BERT-style encoder or a GPT-2-style decoder by
  the numbers that fix its size (vocabulary, layers, width, feed-forward width, heads,
  maximum length, segment vocabulary, output head).
* :data:`CONFIGS` holds BERT-base, BERT-large, GPT-2 small, GPT-2 large and two
  *hypothetical* long-context models (8K and 32K positions), defined in full here.
* :func:`count_parameters` counts every parameter by formula; :func:`reference_modules`
  builds the same architecture from PyTorch's own layers (on the ``meta`` device, so even
  a billion parameters cost no memory) so the formula can be checked against a real
  module count.
* :func:`training_bytes` gives the memory side (time is measured in :mod:`posenc.compare`).
* :mod:`posenc.params_plots` presents the numbers (a table and two figures).

Nothing here is typed in: every count follows from the configs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import torch
from torch import nn

from posenc.checks import (
    check_bool,
    check_choice,
    check_device,
    check_instance,
    check_nonnegative_int,
    check_positive_int,
    check_text,
)
from posenc.learned import BertEmbeddings, LearnedPositionEmbedding

__all__ = [
    "FAMILIES",
    "OUTPUT_HEADS",
    "TransformerConfig",
    "ParamCount",
    "CONFIGS",
    "position_parameters",
    "layer_parameters",
    "count_parameters",
    "reference_modules",
    "module_parameter_count",
    "training_bytes",
    "parameter_rows",
]

#: Architecture families: ``"bert"`` (post-LayerNorm encoder with an embedding LayerNorm
#: and a pooler) and ``"gpt2"`` (pre-LayerNorm decoder with a final LayerNorm).
FAMILIES: tuple[str, ...] = ("bert", "gpt2")
#: Output layers: ``"none"`` (the base model), ``"tied"`` (a vocabulary projection that
#: reuses the token table: no new weights) or ``"untied"`` (its own ``vocab x d`` matrix).
OUTPUT_HEADS: tuple[str, ...] = ("none", "tied", "untied")


@dataclass(frozen=True)
class TransformerConfig:
    """The numbers that fix the size of a Transformer.

    Attributes:
        name: label for tables and figures.
        family: one of :data:`FAMILIES`.
        vocab_size: token vocabulary.
        n_layers: number of blocks.
        d_model: width; n_heads: attention heads (must divide ``d_model``); d_ff: MLP width.
        max_len: rows of the learned position table (L_max).
        type_vocab_size: rows of the segment table (0: no segment table).
        output_head: one of :data:`OUTPUT_HEADS`.
        hypothetical: ``True`` for a configuration no published model has.
        published_total: the size its authors published (``None`` if there is none).
        source: where the configuration (and the published size) comes from.
    """

    name: str
    family: str
    vocab_size: int
    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int
    max_len: int
    type_vocab_size: int = 0
    output_head: str = "none"
    hypothetical: bool = False
    published_total: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        check_text("name", self.name, empty=False)
        check_choice("family", self.family, FAMILIES)
        check_bool("hypothetical", self.hypothetical)
        if self.published_total is not None:
            check_positive_int("published_total", self.published_total)
        check_text("source", self.source)
        check_choice("output_head", self.output_head, OUTPUT_HEADS)
        for name in ("vocab_size", "n_layers", "d_model", "n_heads", "d_ff", "max_len"):
            check_positive_int(name, getattr(self, name))
        check_nonnegative_int("type_vocab_size", self.type_vocab_size)
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}")

    def with_(self, **changes: object) -> TransformerConfig:
        """A copy with some fields changed (e.g. ``max_len=8192``), validated again."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ParamCount:
    """Parameters of one configuration, by part. ``total`` is their sum."""

    token: int
    position: int
    segment: int
    embedding_norm: int
    layers: int
    final_norm: int
    pooler: int
    output_head: int

    @property
    def total(self) -> int:
        return (
            self.token + self.position + self.segment + self.embedding_norm
            + self.layers + self.final_norm + self.pooler + self.output_head
        )

    @property
    def position_share(self) -> float:
        """Position parameters as a fraction of the total (multiply by 100 for %)."""
        return self.position / self.total


def position_parameters(max_len: int, d_model: int) -> int:
    """Parameters of a learned position table: ``max_len * d_model`` (a sinusoidal table has 0)."""
    return check_positive_int("max_len", max_len) * check_positive_int("d_model", d_model)


def layer_parameters(d_model: int, d_ff: int) -> int:
    """Parameters of one Transformer block (BERT and GPT-2 blocks are the same size).

    Attention: Q, K, V and output projections with biases, ``4 d^2 + 4 d``.
    MLP: ``d -> d_ff -> d`` with biases, ``2 d d_ff + d_ff + d``. Two LayerNorms: ``4 d``.
    """
    d = check_positive_int("d_model", d_model)
    f = check_positive_int("d_ff", d_ff)
    return (4 * d * d + 4 * d) + (2 * d * f + f + d) + 4 * d


def count_parameters(config: TransformerConfig) -> ParamCount:
    """Count every parameter of ``config`` by formula, part by part."""
    _check_config(config)
    d = config.d_model
    bert = config.family == "bert"
    return ParamCount(
        token=config.vocab_size * d,
        position=position_parameters(config.max_len, d),
        segment=config.type_vocab_size * d,
        embedding_norm=2 * d if bert else 0,
        layers=config.n_layers * layer_parameters(d, config.d_ff),
        final_norm=0 if bert else 2 * d,
        pooler=d * d + d if bert else 0,
        output_head=config.vocab_size * d if config.output_head == "untied" else 0,
    )


def reference_modules(config: TransformerConfig, *, device: str | torch.device = "meta") -> nn.ModuleDict:
    """The architecture of ``config`` assembled from PyTorch layers, to check the formula.

    BERT: :class:`posenc.learned.BertEmbeddings` (token, position, segment tables and a
    LayerNorm), post-LayerNorm ``nn.TransformerEncoderLayer`` blocks, a ``d x d`` pooler.
    GPT-2: token ``nn.Embedding``, :class:`posenc.learned.LearnedPositionEmbedding`,
    pre-LayerNorm blocks, a final LayerNorm. An untied output head is a bias-free
    ``nn.Linear(d, vocab)``. The parts are not wired into a forward pass: this is for
    counting. On the default ``meta`` device no memory is allocated.
    """
    _check_config(config)
    where = check_device("device", device)
    if where is None:
        raise TypeError("device must be a device such as 'meta' (the default, no memory) or 'cpu', got None")
    d, bert = config.d_model, config.family == "bert"
    parts: dict[str, nn.Module] = {}
    with torch.device(where):
        if bert:
            parts["embeddings"] = BertEmbeddings(
                config.vocab_size, config.max_len, d, type_vocab_size=max(config.type_vocab_size, 1)
            )
            if config.type_vocab_size == 0:
                del parts["embeddings"].segment
        else:
            parts["token"] = nn.Embedding(config.vocab_size, d)
            parts["position"] = LearnedPositionEmbedding(config.max_len, d)
            if config.type_vocab_size:
                parts["segment"] = nn.Embedding(config.type_vocab_size, d)
        parts["layers"] = nn.ModuleList(
            nn.TransformerEncoderLayer(d, config.n_heads, config.d_ff, batch_first=True, norm_first=not bert)
            for _ in range(config.n_layers)
        )
        if bert:
            parts["pooler"] = nn.Linear(d, d)
        else:
            parts["final_norm"] = nn.LayerNorm(d)
        if config.output_head == "untied":
            parts["output_head"] = nn.Linear(d, config.vocab_size, bias=False)
    return nn.ModuleDict(parts)


def module_parameter_count(module: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of parameters of a module (shared parameters counted once).

    Args:
        trainable_only: count only parameters with ``requires_grad`` (frozen buffers are
            never parameters; frozen parameters are skipped only with this flag).
    """
    check_instance("module", module, nn.Module, what="a torch.nn.Module")
    trainable_only = check_bool("trainable_only", trainable_only)
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def training_bytes(n_params: int, *, optimizer: str = "adam", bytes_per_value: int = 4) -> int:
    """Bytes a set of trainable parameters occupies while training.

    Args:
        n_params: number of parameters.
        optimizer: ``"adam"`` (weights, gradients and two moment estimates: 4 copies),
            ``"sgd"`` (weights and gradients: 2) or ``"inference"`` (weights only: 1).
        bytes_per_value: 4 for float32, 2 for float16/bfloat16.
    """
    copies = {"adam": 4, "sgd": 2, "inference": 1}
    check_choice("optimizer", optimizer, list(copies))
    return check_nonnegative_int("n_params", n_params) * copies[optimizer] * check_positive_int(
        "bytes_per_value", bytes_per_value
    )


def _check_config(config: object) -> None:
    check_instance("config", config, TransformerConfig, what="a posenc.params.TransformerConfig (e.g. CONFIGS['BERT-base'])")


def _check_configs(configs: object) -> list[TransformerConfig]:
    """``configs`` as a list of :class:`TransformerConfig` (a TypeError naming the first entry that is not one)."""
    if isinstance(configs, str | bytes | TransformerConfig) or not isinstance(configs, Iterable):
        raise TypeError(f"configs must be a sequence of TransformerConfig (e.g. CONFIGS.values()), got {configs!r}")
    listed = list(configs)
    for index, config in enumerate(listed):
        check_instance(f"configs[{index}]", config, TransformerConfig)
    return listed


def _configs() -> dict[str, TransformerConfig]:
    bert_source = "Devlin et al. (2019); published size from the paper"
    gpt2_source = "Radford et al. (2019); size from the openai/gpt-2 README (the paper's table says {paper})"
    configs = [
        TransformerConfig("BERT-base", "bert", 30522, 12, 768, 12, 3072, 512, type_vocab_size=2,
                          published_total=110_000_000, source=bert_source),
        TransformerConfig("BERT-large", "bert", 30522, 24, 1024, 16, 4096, 512, type_vocab_size=2,
                          published_total=340_000_000, source=bert_source),
        TransformerConfig("GPT-2 small", "gpt2", 50257, 12, 768, 12, 3072, 1024, output_head="tied",
                          published_total=124_000_000, source=gpt2_source.format(paper="117M")),
        TransformerConfig("GPT-2 large", "gpt2", 50257, 36, 1280, 20, 5120, 1024, output_head="tied",
                          published_total=774_000_000, source=gpt2_source.format(paper="762M")),
        # Two made-up long-context models: GPT-2-style decoders, defined in full so their
        # totals (and the position share) are computed like the real ones.
        TransformerConfig("Hypothetical 8K", "gpt2", 50257, 24, 1024, 16, 4096, 8192, output_head="tied",
                          hypothetical=True,
                          source="hypothetical: GPT-2 medium's shape (24 layers, width 1024) with 8,192 positions"),
        TransformerConfig("Hypothetical 32K", "gpt2", 50257, 24, 2048, 16, 8192, 32768, output_head="tied",
                          hypothetical=True,
                          source="hypothetical: 24 layers of width 2048 with 32,768 positions"),
    ]
    return {config.name: config for config in configs}


#: The configurations of chapter 4, keyed by name.
CONFIGS: dict[str, TransformerConfig] = _configs()


def parameter_rows(configs: Iterable[TransformerConfig] | None = None) -> list[dict[str, object]]:
    """One dict per configuration with its counts (plain values, for tables and asserts)."""
    rows = []
    for config in CONFIGS.values() if configs is None else _check_configs(configs):
        count = count_parameters(config)
        rows.append(
            {
                "name": config.name,
                "hypothetical": config.hypothetical,
                "max_len": config.max_len,
                "d_model": config.d_model,
                "position": count.position,
                "token": count.token,
                "segment": count.segment,
                "total": count.total,
                "position_percent": 100.0 * count.position_share,
                "published_total": config.published_total,
            }
        )
    return rows


