"""Learned absolute position embeddings (BERT, GPT-2 style).

A learned position embedding is a trainable table ``P`` of shape ``(max_len, d_model)``:
position ``i`` is looked up as row ``P[i]`` and added to the token vector at ``i``. The
table is an ordinary parameter, so it is trained by backpropagation like a token
embedding. Only the rows of positions that occur in a batch receive a non-zero gradient,
but that does not mean only those rows move: with momentum (SGD with momentum, Adam,
AdamW) a row keeps moving on later steps after its position has left the batch, and
weight decay shrinks every row. Only rows whose position never occurred keep their
initial values, and only without weight decay (:func:`row_steps`).

Initialisation strategies the book compares (:data:`INIT_STRATEGIES`), as the reference
code bases do it:

* ``"bert"``: truncated normal with std parameter 0.02, values outside +-2 std re-drawn.
  Google's BERT (``modeling.py``) uses ``tf.truncated_normal_initializer(stddev=0.02)``
  for every table, and TensorFlow's truncated normal re-draws values more than two
  standard deviations from the mean. The truncation shrinks the actual standard deviation
  to ``0.02 * 0.8796 = 0.0176`` (see :func:`truncated_normal_std`). (Hugging Face's
  PyTorch BERT initialises with a plain normal, std 0.02, when it builds a fresh model.)
* ``"gpt2"``: normal, std 0.01: OpenAI's GPT-2 ``model.py`` initialises ``wpe`` with
  ``tf.random_normal_initializer(stddev=0.01)`` (the token table ``wte`` uses 0.02).
* ``"uniform"``: ``U(-0.1, 0.1)``, a common generic choice (std ``0.1 / sqrt(3)``).
* ``"sinusoidal"``: start from the fixed sinusoidal table of Vaswani et al. (2017), then train.

Three more are accepted (:data:`INIT_CHOICES`), two from fairseq and one for scale experiments:

* ``"roberta"``: normal, std 0.02 (:data:`ROBERTA_INIT_STD`). fairseq's RoBERTa applies
  ``init_bert_params`` to the whole model after building it, which re-draws every
  ``nn.Embedding`` (the learned position table included) from ``N(0, 0.02^2)`` and zeroes its
  padding row. RoBERTa's positions therefore start at std 0.02, not ``d_model ** -0.5``.
* ``"fairseq"``: normal, std ``d_model ** -0.5``: the default of fairseq's
  ``PositionalEmbedding(..., learned=True)``, which is what its translation Transformers
  keep when they use learned positions (RoBERTa overwrites it, see above).
* ``"normal"``: normal, std 1: a random table at the scale of token embeddings drawn from
  ``N(0, 1)`` (the scale the paper's ``sqrt(d_model)`` multiplier gives its embeddings, and
  the book's default ``token_init_std``), to separate a table's scale from its structure.

fairseq (RoBERTa included) also reserves the first ``padding_idx + 1`` rows of the table
(see :func:`offset_position_ids`); this module does not model that padding row.

The module also holds :class:`BertEmbeddings` (token + position + segment, LayerNorm,
dropout), the input layer of BERT.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from posenc.checks import (
    check_choice,
    check_even_int,
    check_generator,
    check_integers,
    check_nonnegative_int,
    check_positions,
    check_positive_float,
    check_positive_int,
    check_real,
    check_tensor,
)
from posenc.sinusoidal import EVEN_WIDTH, sinusoidal_table

__all__ = [
    "INIT_STRATEGIES",
    "INIT_CHOICES",
    "INIT_DESCRIPTIONS",
    "BERT_INIT_STD",
    "ROBERTA_INIT_STD",
    "OPTIMIZERS",
    "BERT_TRUNCATION",
    "GPT2_INIT_STD",
    "UNIFORM_BOUND",
    "truncated_normal_std",
    "init_scale",
    "init_table_",
    "initial_table",
    "LearnedPositionEmbedding",
    "offset_position_ids",
    "BertEmbeddings",
    "row_steps",
]

#: The four initialisations the book compares, in the order it discusses them.
INIT_STRATEGIES = ("bert", "gpt2", "uniform", "sinusoidal")
#: Every initialisation the module accepts: the four above, fairseq's two, then a std-1 normal.
INIT_CHOICES = INIT_STRATEGIES + ("roberta", "fairseq", "normal")

#: Std parameter of BERT's truncated normal (``initializer_range`` in BERT's config).
BERT_INIT_STD = 0.02
#: BERT's truncation point in units of the std parameter (TensorFlow's truncated normal: 2).
BERT_TRUNCATION = 2.0
#: Std of GPT-2's position table ``wpe`` at initialisation.
GPT2_INIT_STD = 0.01
#: Half-width of the uniform initialisation.
UNIFORM_BOUND = 0.1
#: Std of every embedding table of fairseq's RoBERTa (``init_bert_params``), positions included.
ROBERTA_INIT_STD = 0.02

#: One-line description of each strategy, for tables and figure labels.
INIT_DESCRIPTIONS: dict[str, str] = {
    "bert": f"truncated normal, std parameter {BERT_INIT_STD}, cut at ±{BERT_TRUNCATION:g} std (BERT)",
    "gpt2": f"normal, std {GPT2_INIT_STD} (GPT-2 wpe)",
    "uniform": f"uniform on [−{UNIFORM_BOUND}, {UNIFORM_BOUND}]",
    "sinusoidal": "the sinusoidal table (Vaswani et al., 2017), then trained",
    "roberta": f"normal, std {ROBERTA_INIT_STD} (RoBERTa: fairseq's init_bert_params)",
    "fairseq": "normal, std d_model^-1/2 (fairseq's learned-position default, translation models)",
    "normal": "normal, std 1 (the scale of token embeddings drawn from N(0, 1))",
}


def truncated_normal_std(std: float, bound: float = BERT_TRUNCATION) -> float:
    """Actual standard deviation of ``N(0, std^2)`` truncated to ``[-bound*std, bound*std]``.

    For a standard normal cut at ``+-c`` the variance is ``1 - 2 c phi(c) / (2 Phi(c) - 1)``;
    for ``c = 2`` the std is 0.8796 times the untruncated one.

    Args:
        std: std parameter of the normal before truncation (> 0).
        bound: truncation point in units of ``std`` (> 0).
    """
    std, bound = check_positive_float("std", std), check_positive_float("bound", bound)
    pdf = math.exp(-0.5 * bound * bound) / math.sqrt(2.0 * math.pi)
    mass = math.erf(bound / math.sqrt(2.0))  # = 2 Phi(c) - 1
    return std * math.sqrt(1.0 - 2.0 * bound * pdf / mass)


def init_scale(init: str, d_model: int | None = None) -> float:
    """Expected root-mean-square of one entry of a freshly initialised table.

    For the random strategies (mean 0) this is the standard deviation of an entry;
    for ``"sinusoidal"`` every row has ``d/2`` sine-cosine pairs with ``sin^2 + cos^2 = 1``,
    so the RMS is exactly ``1 / sqrt(2)`` (for even ``d_model``).

    Args:
        init: one of :data:`INIT_CHOICES`.
        d_model: the table width; needed only for ``"fairseq"`` (std ``d_model ** -0.5``).
    """
    check_choice("init", init, INIT_CHOICES)
    if d_model is not None:
        d_model = check_positive_int("d_model", d_model)
    if init == "fairseq":
        if d_model is None:
            raise ValueError("init_scale('fairseq') needs d_model: its std is d_model ** -0.5, got d_model=None")
        return check_positive_int("d_model", d_model) ** -0.5
    if init == "roberta":
        return ROBERTA_INIT_STD
    if init == "bert":
        return truncated_normal_std(BERT_INIT_STD, BERT_TRUNCATION)
    if init == "gpt2":
        return GPT2_INIT_STD
    if init == "uniform":
        return UNIFORM_BOUND / math.sqrt(3.0)
    if init == "normal":
        return 1.0
    return 1.0 / math.sqrt(2.0)


@torch.no_grad()
def init_table_(weight: torch.Tensor, init: str, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Fill a ``(max_len, d_model)`` table in place with one of :data:`INIT_CHOICES`.

    Args:
        weight: the table to overwrite, shape ``(max_len, d_model)``.
        init: the strategy name (see the module docstring).
        generator: optional ``torch.Generator`` for reproducible draws.

    Returns:
        ``weight`` (for chaining).
    """
    check_choice("init", init, INIT_CHOICES)
    check_tensor("weight", weight, ndim=2, floating=True, shape="(max_len, d_model)")
    generator = check_generator("generator", generator)
    if init == "sinusoidal":
        check_even_int("d_model (the width of weight)", weight.shape[1], why=f"init='sinusoidal': {EVEN_WIDTH}")
    if init == "bert":
        limit = BERT_TRUNCATION * BERT_INIT_STD
        # torch samples the truncated normal by inverse CDF: the same distribution as
        # TensorFlow's "re-draw values beyond 2 std".
        nn.init.trunc_normal_(weight, std=BERT_INIT_STD, a=-limit, b=limit, generator=generator)
    elif init == "gpt2":
        nn.init.normal_(weight, std=GPT2_INIT_STD, generator=generator)
    elif init == "uniform":
        nn.init.uniform_(weight, -UNIFORM_BOUND, UNIFORM_BOUND, generator=generator)
    elif init == "roberta":
        nn.init.normal_(weight, std=ROBERTA_INIT_STD, generator=generator)
    elif init == "fairseq":
        nn.init.normal_(weight, std=weight.shape[1] ** -0.5, generator=generator)
    elif init == "normal":
        nn.init.normal_(weight, std=1.0, generator=generator)
    else:
        max_len, d_model = weight.shape
        weight.copy_(sinusoidal_table(max_len, d_model))
    return weight


def initial_table(max_len: int, d_model: int, init: str = "bert", *, seed: int | None = 0) -> torch.Tensor:
    """A freshly initialised table (no module around it), e.g. for figures.

    Args:
        max_len: rows (positions); d_model: columns.
        init: one of :data:`INIT_CHOICES`.
        seed: seed of the random draw (``None``: torch's global generator).

    Returns:
        Float32 tensor of shape ``(max_len, d_model)``.
    """
    max_len = check_positive_int("max_len", max_len)
    d_model = check_positive_int("d_model", d_model)
    generator = None if seed is None else torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    return init_table_(torch.empty(max_len, d_model), init, generator=generator)


class LearnedPositionEmbedding(nn.Module):
    """A trainable table of ``max_len`` position vectors added to the input.

    Args:
        max_len: number of positions the table holds (L_max).
        d_model: width of each position vector.
        init: one of :data:`INIT_CHOICES` (see the module docstring).
        seed: optional seed for the initial draw (``None``: torch's global generator).
    """

    def __init__(self, max_len: int, d_model: int, *, init: str = "bert", seed: int | None = None) -> None:
        super().__init__()
        self.max_len = check_positive_int("max_len", max_len)
        self.d_model = check_positive_int("d_model", d_model)
        self.init = check_choice("init", init, INIT_CHOICES)
        self.seed = None if seed is None else check_nonnegative_int("seed", seed)
        self.weight = nn.Parameter(torch.empty(self.max_len, self.d_model))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the table with the module's strategy (and seed, if it has one)."""
        generator = None if self.seed is None else torch.Generator().manual_seed(self.seed)
        init_table_(self.weight, self.init, generator=generator)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}, init={self.init!r}"

    def lookup(self, position_ids: Any) -> torch.Tensor:
        """The position vectors alone, without adding them to anything.

        Args:
            position_ids: integer positions of any shape, each in ``[0, max_len)``.

        Returns:
            Tensor of shape ``(*position_ids.shape, d_model)``.

        Raises:
            ValueError: a position is negative or ``>= max_len`` (the error names both).
        """
        ids = check_positions("position_ids", position_ids)
        if ids.numel() and int(ids.max()) >= self.max_len:
            raise ValueError(
                f"position_ids must be < max_len={self.max_len} (the table has {self.max_len} rows), "
                f"got a maximum of {int(ids.max())}"
            )
        return self.weight[ids.to(self.weight.device)]

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Add position vectors to ``x`` of shape ``(batch, seq_len, d_model)`` (or ``(seq_len, d_model)``).

        Args:
            position_ids: optional ``(seq_len,)`` or ``(batch, seq_len)`` integer positions;
                defaults to ``0 .. seq_len-1``.

        Returns:
            Tensor with the shape of ``x``.

        Raises:
            ValueError: ``seq_len > max_len`` (without ``position_ids``), a position outside
                the table, or ``position_ids`` of another shape than ``(seq_len,)`` or ``x``'s
                ``(..., seq_len)`` (they are never broadcast into a larger output).
        """
        check_tensor("x", x, floating=True, shape=f"(..., seq_len, d_model={self.d_model})")
        if x.ndim < 2 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (..., seq_len, d_model={self.d_model}), got shape {tuple(x.shape)}"
            )
        seq_len = x.shape[-2]
        if position_ids is None:
            if seq_len > self.max_len:
                raise ValueError(
                    f"seq_len={seq_len} exceeds max_len={self.max_len} of the learned position table; "
                    "use a workaround from posenc.extrapolate or a scheme that extends (sinusoidal, RoPE, ALiBi)"
                )
            # A slice is a view: no index tensor, and the gradient flows to these rows only.
            return x + self.weight[:seq_len]
        vectors = self.lookup(position_ids)
        if vectors.shape[:-1] not in ((seq_len,), tuple(x.shape[:-1])):  # never broadcast into a larger output
            raise ValueError(
                f"position_ids of shape {tuple(vectors.shape[:-1])} do not fit x of shape {tuple(x.shape)}: "
                f"expected ({seq_len},) or {tuple(x.shape[:-1])}"
            )
        return x + vectors


def offset_position_ids(input_ids: torch.Tensor, padding_idx: int) -> torch.Tensor:
    """fairseq / RoBERTa position ids: count real tokens from ``padding_idx + 1``; padding gets ``padding_idx``.

    fairseq reserves the table rows ``0 .. padding_idx`` and starts counting real tokens at
    ``padding_idx + 1``, so a model for ``n`` tokens needs ``n + padding_idx + 1`` rows
    (RoBERTa: ``padding_idx = 1``, 512 tokens, 514 rows). Padding tokens all point at row
    ``padding_idx``, which fairseq sets to zero and never trains.

    Args:
        input_ids: ``(batch, seq_len)`` token ids.
        padding_idx: id of the padding token (>= 0).

    Returns:
        ``(batch, seq_len)`` long position ids.
    """
    padding_idx = check_nonnegative_int("padding_idx", padding_idx)
    ids = check_integers("input_ids", input_ids)
    if ids.ndim != 2:
        raise ValueError(f"input_ids must have shape (batch, seq_len), got shape {tuple(ids.shape)}")
    is_token = (ids != padding_idx).long()
    return torch.cumsum(is_token, dim=1) * is_token + padding_idx


class BertEmbeddings(nn.Module):
    """BERT's input layer: token + position + segment vectors, then LayerNorm and dropout.

    ``E = Dropout(LayerNorm(T[input_ids] + P[position_ids] + S[token_type_ids]))`` with
    three trainable tables: tokens ``(vocab_size, d_model)``, positions
    ``(max_len, d_model)`` and segments ("token types", sentence A / B)
    ``(type_vocab_size, d_model)``.

    Args:
        vocab_size: number of token ids.
        max_len: rows of the position table (512 in BERT).
        d_model: width (768 in BERT-base).
        type_vocab_size: number of segments (2 in BERT).
        dropout: dropout probability after the LayerNorm (0.1 in BERT).
        layer_norm_eps: LayerNorm epsilon (1e-12 in BERT's code).
        init: initialisation of the position table (token and segment tables always use
            BERT's truncated normal).
        seed: optional seed for all three tables.
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        d_model: int,
        *,
        type_vocab_size: int = 2,
        dropout: float = 0.1,
        layer_norm_eps: float = 1e-12,
        init: str = "bert",
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.type_vocab_size = check_positive_int("type_vocab_size", type_vocab_size)
        d_model = check_positive_int("d_model", d_model)
        dropout = check_real("dropout", dropout, low=0.0, high=1.0, high_open=True)
        layer_norm_eps = check_positive_float("layer_norm_eps", layer_norm_eps)
        seed = None if seed is None else check_nonnegative_int("seed", seed)
        self.token = nn.Embedding(self.vocab_size, d_model)
        self.position = LearnedPositionEmbedding(max_len, d_model, init=init, seed=seed)
        self.segment = nn.Embedding(self.type_vocab_size, d_model)
        self.norm = nn.LayerNorm(d_model, eps=float(layer_norm_eps))
        self.dropout = nn.Dropout(float(dropout))
        generator = None if seed is None else torch.Generator().manual_seed(int(seed) + 1)
        init_table_(self.token.weight, "bert", generator=generator)
        init_table_(self.segment.weight, "bert", generator=generator)

    @property
    def max_len(self) -> int:
        """Rows of the position table."""
        return self.position.max_len

    def _check_ids(self, name: str, ids: torch.Tensor, upper: int, shape: tuple[int, ...]) -> torch.Tensor:
        ids = check_positions(name, ids)
        if ids.numel() and int(ids.max()) >= upper:
            raise ValueError(f"{name} must be < {upper}, got a maximum of {int(ids.max())}")
        if ids.shape != shape:
            raise ValueError(f"{name} must have shape {shape} like input_ids, got {tuple(ids.shape)}")
        return ids

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Embed a batch.

        Args:
            input_ids: ``(batch, seq_len)`` token ids in ``[0, vocab_size)``.
            token_type_ids: ``(batch, seq_len)`` segment ids (default all 0, sentence A).
            position_ids: ``(seq_len,)`` or ``(batch, seq_len)`` positions (default ``0 .. seq_len-1``).

        Returns:
            ``(batch, seq_len, d_model)``.
        """
        ids = check_integers("input_ids", input_ids)
        if ids.ndim != 2:
            raise ValueError(f"input_ids must have shape (batch, seq_len), got shape {tuple(ids.shape)}")
        ids = self._check_ids("input_ids", ids, self.vocab_size, tuple(ids.shape))
        if token_type_ids is None:
            types = torch.zeros_like(ids)
        else:
            types = self._check_ids("token_type_ids", token_type_ids, self.type_vocab_size, tuple(ids.shape))
        summed = self.token(ids) + self.segment(types)
        summed = self.position(summed, position_ids)
        return self.dropout(self.norm(summed))


#: Optimisers :func:`row_steps` can use.
OPTIMIZERS = ("sgd", "sgd-momentum", "adam", "adamw")


def row_steps(
    optimizer: str,
    occurs: Sequence[Sequence[int]],
    *,
    max_len: int = 4,
    d_model: int = 3,
    lr: float = 0.1,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """How far each row of a position table moves at each optimiser step.

    Step ``t`` (0-based) uses the loss ``sum_i ||P[i] - target[i]||^2`` over the positions
    ``occurs[t]`` only, so rows outside ``occurs[t]`` get an exactly zero gradient at that
    step. Plain SGD then leaves them alone; SGD with momentum (0.9) and Adam/AdamW
    (PyTorch defaults, AdamW with its default weight decay 0.01) do not.

    Args:
        optimizer: one of :data:`OPTIMIZERS`.
        occurs: for each step, the positions (rows) that occur in that step's batch.
        max_len, d_model: table shape; lr: learning rate; seed: seed of the table and targets.

    Returns:
        ``(moves, initial, final)``: ``moves`` of shape ``(steps, max_len)`` holds the
        Euclidean distance each row moved at each step; ``initial`` and ``final`` are the
        ``(max_len, d_model)`` tables before the first and after the last step.
    """
    check_choice("optimizer", optimizer, OPTIMIZERS)
    max_len = check_positive_int("max_len", max_len)
    d_model = check_positive_int("d_model", d_model)
    lr = check_positive_float("lr", lr)
    if isinstance(occurs, str | bytes) or not isinstance(occurs, Sequence):
        raise TypeError(f"occurs must be a sequence (one entry per step) of sequences of positions, got "
                        f"{occurs!r} of type {type(occurs).__name__}")
    if len(occurs) == 0:
        raise ValueError("occurs must list the positions of at least one step, got an empty sequence")
    steps = []
    for step, occurring in enumerate(occurs):
        if isinstance(occurring, str | bytes) or not isinstance(occurring, Sequence | torch.Tensor):
            raise TypeError(f"occurs[{step}] must be a sequence of positions, got {occurring!r} of type "
                            f"{type(occurring).__name__}")
        ids = list(occurring) if len(occurring) else torch.zeros(0, dtype=torch.long)
        steps.append(check_positions(f"occurs[{step}]", ids, upper=max_len))
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    table = nn.Parameter(torch.randn(max_len, d_model, generator=generator, dtype=torch.float64))
    target = torch.randn(max_len, d_model, generator=generator, dtype=torch.float64)
    if optimizer == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD([table], lr=lr)
    elif optimizer == "sgd-momentum":
        opt = torch.optim.SGD([table], lr=lr, momentum=0.9)
    elif optimizer == "adam":
        opt = torch.optim.Adam([table], lr=lr)
    else:
        opt = torch.optim.AdamW([table], lr=lr)
    initial = table.detach().clone()
    moves = torch.zeros(len(steps), max_len, dtype=torch.float64)
    for t, rows in enumerate(steps):
        before = table.detach().clone()
        loss = (table[rows] - target[rows]).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        moves[t] = (table.detach() - before).norm(dim=1)
    return moves, initial, table.detach().clone()
