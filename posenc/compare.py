"""Side-by-side measurements of a sinusoidal and a learned table (chapter 4).

* :func:`offset_dependence`: do dot products between position vectors depend only on the
  offset between the positions? For the sinusoidal table they do, by construction; for a
  learned table only if training made them so. With separate ``keys`` it measures the same
  after a query and a key projection, where the sinusoidal guarantee no longer holds.
* :func:`time_position_vectors`: the compute cost of a table lookup against computing
  sines and cosines, measured on the machine at hand; :func:`position_vector_samples` keeps
  every repeat, so a report can give the spread as well as the median.
* :func:`alternating_timings`, :func:`timing_spread` and :func:`ratio_spread`: time several
  candidates in turns and summarise the samples as a median with its range. Timings on a
  shared machine come with outliers; a median with its range reports them, a single ratio of
  two medians can hide or exaggerate them.

:mod:`posenc.compare_plots` draws both.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from posenc.checks import check_nonnegative_int, check_positive_int
from posenc.learned import LearnedPositionEmbedding
from posenc.sinusoidal import float32_recipe_table, sinusoidal_table

__all__ = [
    "OffsetDependence",
    "offset_dependence",
    "time_position_vectors",
    "position_vector_samples",
    "alternating_timings",
    "Spread",
    "timing_spread",
    "ratio_spread",
]


@dataclass(frozen=True)
class OffsetDependence:
    """How far the dot products ``Q[i] . K[i + k]`` vary with ``i`` at fixed offset ``k``.

    ``Q`` and ``K`` are the same table unless separate keys were given (for example the
    table after a query and a key projection).

    Attributes:
        offsets: ``k = 1 .. max_offset``.
        mean: mean over ``i`` of ``Q[i] . K[i + k]`` for each ``k`` (the key ``k`` places ahead).
        spread: max minus min over ``i`` of the same dot products, for each ``k``.
        scale: mean over ``i`` of ``|Q[i]| |K[i]|``, the mean squared row norm when ``Q = K``
            (to make spreads comparable across tables).
        backward_mean: mean over ``i`` of ``Q[i + k] . K[i]`` for each ``k`` (the key ``k``
            places behind). Equal to ``mean`` for every ``k`` when ``Q = K``: a plain dot
            product cannot tell ahead from behind.
    """

    offsets: np.ndarray
    mean: np.ndarray
    spread: np.ndarray
    scale: float
    backward_mean: np.ndarray

    @property
    def relative_spread(self) -> float:
        """Largest spread over all offsets, as a fraction of ``scale``: 0 means the dot
        products depend on the offset only."""
        return float(self.spread.max() / self.scale)

    @property
    def relative_asymmetry(self) -> float:
        """Largest ``|mean - backward_mean|`` over all offsets, as a fraction of ``scale``:
        0 means that, on average, a key ``k`` places ahead scores the same as one ``k``
        places behind."""
        return float(np.abs(self.mean - self.backward_mean).max() / self.scale)


def offset_dependence(
    table: torch.Tensor, max_offset: int = 32, *, keys: torch.Tensor | None = None
) -> OffsetDependence:
    """Measure whether ``Q[i] . K[j]`` depends on ``j - i`` only.

    Args:
        table: ``(n_positions, d_model)`` position table, the queries ``Q``.
        max_offset: largest offset ``k`` to check (``< n_positions``).
        keys: optional ``(n_positions, d_key)`` table ``K`` with ``d_key == table.shape[1]``
            (for example ``table @ W_K`` next to ``table @ W_Q``); default: ``table`` itself.

    Returns:
        :class:`OffsetDependence` (computed in float64).
    """
    if table.ndim != 2:
        raise ValueError(f"table must have shape (n_positions, d_model), got shape {tuple(table.shape)}")
    if keys is not None and keys.shape != table.shape:
        raise ValueError(f"keys must have the shape of table {tuple(table.shape)}, got shape {tuple(keys.shape)}")
    n = table.shape[0]
    max_offset = check_positive_int("max_offset", max_offset)
    if max_offset >= n:
        raise ValueError(f"max_offset must be < n_positions={n}, got {max_offset}")
    queries = table.detach().double()
    key_rows = queries if keys is None else keys.detach().double()
    gram = queries @ key_rows.T
    diagonals = [torch.diagonal(gram, offset=k) for k in range(1, max_offset + 1)]
    backward = [torch.diagonal(gram, offset=-k) for k in range(1, max_offset + 1)]
    return OffsetDependence(
        offsets=np.arange(1, max_offset + 1),
        mean=np.array([float(d.mean()) for d in diagonals]),
        spread=np.array([float(d.max() - d.min()) for d in diagonals]),
        scale=float((queries.norm(dim=1) * key_rows.norm(dim=1)).mean()),
        backward_mean=np.array([float(d.mean()) for d in backward]),
    )


def alternating_timings(
    calls: Mapping[str, Callable[[], object]],
    *,
    repeats: int,
    number: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds per call of each candidate, one sample per round, the candidates taking turns.

    Every candidate is called once first (a warm-up: the first call pays for allocations).
    Then, in each of ``repeats`` rounds, each candidate in turn runs ``number`` calls, and
    their mean time is that round's sample. Because the candidates take turns, a burst of load
    on a shared machine hits all of them in the same round, so the ratio of two candidates
    within one round (:func:`ratio_spread`) is fairer than the ratio of medians taken apart.

    Args:
        calls: ``{name: function of no arguments}``.
        repeats: rounds (samples per candidate).
        number: calls per sample.
        clock: seconds as a float; ``time.perf_counter`` unless a test passes its own.

    Returns:
        ``{name: [seconds per call in round 0, round 1, ...]}`` in the order of ``calls``.
    """
    if not calls:
        raise ValueError("calls must hold at least one candidate")
    repeats = check_positive_int("repeats", repeats)
    number = check_positive_int("number", number)
    for call in calls.values():
        call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = clock()
            for _ in range(number):
                call()
            samples[name].append((clock() - start) / number)
    return samples


@dataclass(frozen=True)
class Spread:
    """A median with the range it came from.

    Attributes:
        median: the median of the samples.
        low, high: the smallest and the largest sample.
        n: the number of samples.
    """

    median: float
    low: float
    high: float
    n: int


def timing_spread(samples: Sequence[float]) -> Spread:
    """Median, smallest and largest of ``samples`` (e.g. one candidate of :func:`alternating_timings`)."""
    values = [float(value) for value in samples]
    if not values:
        raise ValueError("samples must not be empty")
    return Spread(median=statistics.median(values), low=min(values), high=max(values), n=len(values))


def ratio_spread(samples: Mapping[str, Sequence[float]], numerator: str, denominator: str) -> Spread:
    """The ratio ``numerator / denominator`` in every round of :func:`alternating_timings`, summarised.

    Raises:
        ValueError: a name is missing, or the two lists differ in length.
    """
    for name in (numerator, denominator):
        if name not in samples:
            raise ValueError(f"no samples named {name!r}; the names are {list(samples)}")
    top, bottom = samples[numerator], samples[denominator]
    if len(top) != len(bottom):
        raise ValueError(f"{numerator!r} has {len(top)} samples and {denominator!r} {len(bottom)}: "
                         "a ratio needs one pair per round")
    return timing_spread([a / b for a, b in zip(top, bottom)])


def position_vector_samples(
    seq_len: int, d_model: int, *, batch: int = 8, number: int = 20, repeats: int = 7, seed: int = 0
) -> dict[str, list[float]]:
    """Wall time (seconds per call) of producing ``seq_len`` position vectors, three ways, next
    to the cost of adding them to a batch: every round of :func:`alternating_timings`.

    * ``"learned: table lookup"``: gather rows ``0 .. seq_len-1`` of a learned table, as
      ``nn.Embedding`` does (``F.embedding``).
    * ``"sinusoidal: posenc"``: :func:`posenc.sinusoidal.sinusoidal_table` (exact to float32
      rounding at every position).
    * ``"sinusoidal: float32 recipe"``: :func:`posenc.sinusoidal.float32_recipe_table`, the
      common recipe (``sin``/``cos`` of float32 angles).
    * ``"add to a batch"``: ``x + vectors`` for ``x`` of shape ``(batch, seq_len, d_model)``:
      the step every absolute encoding needs anyway, for scale.

    Each sample is the mean of ``number`` calls; the four take turns for ``repeats`` rounds.
    Forward pass only, no gradient. Timings depend on the machine and on its load.
    """
    seq_len, d_model = check_positive_int("seq_len", seq_len), check_positive_int("d_model", d_model)
    batch, number, repeats = (check_positive_int(n, v) for n, v in (("batch", batch), ("number", number),
                                                                    ("repeats", repeats)))
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    x = torch.randn(batch, seq_len, d_model, generator=generator)
    table = LearnedPositionEmbedding(seq_len, d_model, seed=seed).weight.detach()
    position_ids = torch.arange(seq_len)
    vectors = sinusoidal_table(seq_len, d_model)
    candidates: dict[str, Callable[[], object]] = {
        "learned: table lookup": lambda: F.embedding(position_ids, table),
        "sinusoidal: posenc": lambda: sinusoidal_table(seq_len, d_model),
        "sinusoidal: float32 recipe": lambda: float32_recipe_table(seq_len, d_model),
        "add to a batch": lambda: x + vectors,
    }
    with torch.no_grad():
        return alternating_timings(candidates, repeats=repeats, number=number)


def time_position_vectors(
    seq_len: int, d_model: int, *, batch: int = 8, number: int = 20, repeats: int = 7, seed: int = 0
) -> dict[str, float]:
    """Median wall time (seconds per call) of each method of :func:`position_vector_samples`."""
    samples = position_vector_samples(seq_len, d_model, batch=batch, number=number, repeats=repeats, seed=seed)
    return {name: statistics.median(values) for name, values in samples.items()}
