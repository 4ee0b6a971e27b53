"""What a position table has learned: four analyses that return plain numbers.

A position table is a matrix of shape ``(n_positions, d_model)``: row ``p`` is the vector
added at position ``p``. The analyses treat it as data, whatever produced it (a
random initialisation, a training run, a downloaded checkpoint, the sinusoidal formula):

* **similarity**: the cosine-similarity matrix of the rows
  (:func:`cosine_similarity_matrix`), its average along each diagonal
  (:func:`mean_by_offset`) and summaries over bands of offsets
  (:func:`band_mean`, :func:`similarity_summary`);
* **principal components**: PCA of the rows (:func:`principal_components`), and how
  periodic each component is as a function of position (:func:`periodicity`,
  :func:`pair_rotation`);
* **norms**: the length of each row, with early/late summaries (:func:`row_norms`);
* **distance by offset**: the Euclidean distance between rows ``p`` and ``p + Δ``
  (:func:`offset_distances`) and its mean for every ``Δ`` (:func:`distance_by_offset`);
* **what attention sees**: the table passed through a layer's LayerNorm and query/key
  projections, giving position-only attention logits per head
  (:func:`position_only_logits`), the offset at which each query's logit peaks
  (:func:`peak_offsets`) and how often each offset wins (:func:`peak_offset_shares`);
  :func:`attention_weights` reads the needed weights from a trained
  :class:`posenc.models.TinyTransformer`.

Everything returns numpy arrays or small frozen dataclasses; figures live in
:mod:`posenc.analysis_plots`. Cosine similarity and PCA come from scikit-learn, so the
numbers match what any reader gets with the standard tools.

Conventions used throughout (they matter: the same words are used loosely elsewhere):

* the *offset* of a pair of positions ``(i, j)`` is ``|i - j|``;
* a *band* ``[low, high]`` is the set of unordered pairs ``i < j`` with
  ``low <= j - i <= high`` (both ends included); a band mean averages over every such
  pair, so offsets that occur more often weigh more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from posenc.checks import (
    check_bool,
    check_int,
    check_nonnegative_int,
    check_positive_float,
    check_positive_int,
    check_real,
    check_reals,
    check_text,
)
from posenc.models import TinyTransformer, TransformerBlock

__all__ = [
    "as_table",
    "cosine_similarity_matrix",
    "mean_by_offset",
    "band_mean",
    "SimilaritySummary",
    "similarity_summary",
    "offset_distances",
    "distance_by_offset",
    "NormSummary",
    "row_norms",
    "PCAResult",
    "principal_components",
    "components_for_share",
    "variance_by_period",
    "Periodicity",
    "periodicity",
    "PairRotation",
    "pair_rotation",
    "TableAnalysis",
    "analyze_table",
    "AttentionWeights",
    "attention_weights",
    "position_only_logits",
    "peak_offsets",
    "HeadPeaks",
    "peak_offset_shares",
]


# -- input checks --------------------------------------------------------------------
def _real_array(values: Any, name: str) -> np.ndarray:
    """``values`` (array-like or torch tensor: detached, on the CPU) as a numpy array of real
    numbers; a TypeError names ``name`` otherwise."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        if values.dtype in (torch.float16, torch.bfloat16):
            values = values.float()  # numpy has no bfloat16; float32 holds both half formats exactly
        values = values.numpy()
    array = np.asarray(values)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got an array of dtype {array.dtype}")
    return array


def as_table(table: Any, *, name: str = "table", min_rows: int = 2) -> np.ndarray:
    """Check that ``table`` is a finite 2-D matrix of numbers and return it as float64.

    Args:
        table: numpy array, torch tensor or nested sequence of shape ``(n_positions, d_model)``.
        name: argument name used in error messages.
        min_rows: the fewest rows (positions) the caller needs.

    Returns:
        A float64 array of shape ``(n_positions, d_model)`` (a copy when a conversion was needed).
    """
    check_text("name", name, empty=False)
    min_rows = check_positive_int("min_rows", min_rows)
    array = _real_array(table, name)
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D with shape (n_positions, d_model), got shape {array.shape}")
    if array.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows (positions), got {array.shape[0]}")
    if array.shape[1] < 1:
        raise ValueError(f"{name} needs at least 1 column, got shape {array.shape}")
    array = array.astype(np.float64, copy=False)
    if not np.isfinite(array).all():
        row, col = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(f"{name} must be finite, found {array[row, col]} at row {row}, column {col}")
    return array


def _as_square(matrix: Any, name: str) -> np.ndarray:
    array = as_table(matrix, name=name, min_rows=1)
    if array.shape[0] != array.shape[1]:
        raise ValueError(f"{name} must be square (n_positions, n_positions), got shape {array.shape}")
    return array


# -- similarity ----------------------------------------------------------------------
def cosine_similarity_matrix(table: Any) -> np.ndarray:
    """Cosine similarity between every pair of rows.

    Args:
        table: ``(n_positions, d_model)``; no row may be all zeros (its direction is undefined).

    Returns:
        ``(n_positions, n_positions)`` float64 matrix, entry ``[i, j] = cos(row_i, row_j)``.
    """
    array = as_table(table)
    norms = np.linalg.norm(array, axis=1)
    zero_rows = np.flatnonzero(norms == 0.0)
    if zero_rows.size:
        raise ValueError(
            f"table has all-zero rows at positions {zero_rows[:10].tolist()}: their cosine similarity is undefined; "
            "drop those rows first (e.g. a padding row)"
        )
    # scikit-learn is imported where it is used: it takes ~2 s to import (scipy with it), and
    # most pages that import this module never compute a similarity or a PCA.
    from sklearn.metrics.pairwise import cosine_similarity

    return cosine_similarity(array)


def mean_by_offset(matrix: Any) -> np.ndarray:
    """Average of a square matrix along each diagonal above the main one.

    Args:
        matrix: ``(n, n)``, e.g. a similarity matrix.

    Returns:
        ``(n,)`` array whose entry ``Δ`` is the mean of ``matrix[i, i + Δ]`` over
        ``i = 0 .. n - 1 - Δ`` (entry 0 is the mean of the main diagonal).
    """
    array = _as_square(matrix, "matrix")
    n = array.shape[0]
    return np.array([np.diagonal(array, offset=delta).mean() for delta in range(n)])


def band_mean(matrix: Any, low: int, high: int | None = None) -> float:
    """Mean of ``matrix[i, j]`` over every pair ``i < j`` whose offset ``j - i`` is in ``[low, high]``.

    Args:
        matrix: ``(n, n)`` symmetric matrix (the upper triangle is used).
        low: smallest offset included (>= 1).
        high: largest offset included; ``None`` means "up to the largest offset, n - 1".

    Returns:
        The mean over all pairs in the band (each pair counts once).
    """
    array = _as_square(matrix, "matrix")
    n = array.shape[0]
    low = check_positive_int("low", low)
    high = n - 1 if high is None else check_positive_int("high", high)
    if high < low:
        raise ValueError(f"high must be >= low, got low={low}, high={high}")
    if low > n - 1:
        raise ValueError(
            f"low={low} is larger than the largest offset of a {n}-row matrix ({n - 1}): the band is empty"
        )
    high = min(high, n - 1)  # offsets past the table simply have no pairs; the band is still well defined
    offsets = np.arange(low, high + 1)
    counts = n - offsets
    means = np.array([np.diagonal(array, offset=int(delta)).mean() for delta in offsets])
    # Weighting each diagonal's mean by its number of pairs gives the mean over all pairs.
    return float((means * counts).sum() / counts.sum())


@dataclass(frozen=True)
class SimilaritySummary:
    """Mean cosine similarity over three bands of offsets.

    Attributes:
        adjacent: mean over all pairs with offset 1.
        near: mean over all pairs with offset in ``near_band`` (both ends included).
        far: mean over all pairs with offset ``>= far_from``; ``nan`` if the table has no such pair.
        near_band: the ``(low, high)`` offsets of ``near``.
        far_from: the smallest offset counted in ``far``.
        n_positions: number of rows of the table.
    """

    adjacent: float
    near: float
    far: float
    near_band: tuple[int, int]
    far_from: int
    n_positions: int


def similarity_summary(
    table: Any, *, near_band: tuple[int, int] = (10, 50), far_from: int = 200
) -> SimilaritySummary:
    """Adjacent, near-band and far cosine similarity of a table (see :class:`SimilaritySummary`).

    Args:
        table: ``(n_positions, d_model)`` with ``n_positions > near_band[0]``.
        near_band: offsets ``(low, high)`` of the middle band, both included.
        far_from: the far band is every offset ``>= far_from``.
    """
    _check_band(near_band)
    check_positive_int("far_from", far_from)
    return _summary_from_similarity(cosine_similarity_matrix(table), near_band=near_band, far_from=far_from)


def _check_band(near_band: Any) -> tuple[int, int]:
    if not isinstance(near_band, tuple | list) or len(near_band) != 2:
        raise TypeError(f"near_band must be a (low, high) pair of offsets such as (10, 50), got {near_band!r}")
    return check_positive_int("near_band[0]", near_band[0]), check_positive_int("near_band[1]", near_band[1])


def _summary_from_similarity(
    similarity: np.ndarray, *, near_band: tuple[int, int], far_from: int
) -> SimilaritySummary:
    low, high = _check_band(near_band)
    far_from = check_positive_int("far_from", far_from)
    n = similarity.shape[0]
    if n <= low:
        raise ValueError(f"table has {n} rows, too few for the near band {near_band}: it needs more than {low}")
    far = band_mean(similarity, far_from) if far_from <= n - 1 else math.nan
    return SimilaritySummary(
        adjacent=band_mean(similarity, 1, 1),
        near=band_mean(similarity, low, high),
        far=far,
        near_band=(low, high),
        far_from=far_from,
        n_positions=n,
    )


# -- distance by offset --------------------------------------------------------------
def offset_distances(table: Any, offset: int) -> np.ndarray:
    """Euclidean distance between rows ``p`` and ``p + offset`` for every ``p``.

    Args:
        table: ``(n_positions, d_model)``.
        offset: ``1 <= offset <= n_positions - 1``.

    Returns:
        ``(n_positions - offset,)`` array; entry ``p`` is ``||row_p - row_{p+offset}||``. A
        table whose geometry depends on the offset only (translation invariance) gives a
        constant array.
    """
    array = as_table(table)
    offset = check_positive_int("offset", offset)
    if offset > array.shape[0] - 1:
        raise ValueError(f"offset must be <= n_positions - 1 = {array.shape[0] - 1}, got {offset}")
    # Differences of rows, not the |a|^2 + |b|^2 - 2ab shortcut: exact zeros stay zeros.
    return np.linalg.norm(array[offset:] - array[:-offset], axis=1)


def distance_by_offset(table: Any, *, max_offset: int | None = None, relative: bool = False) -> np.ndarray:
    """Mean Euclidean distance between rows ``p`` and ``p + Δ`` for each offset ``Δ``.

    Args:
        table: ``(n_positions, d_model)``.
        max_offset: largest ``Δ`` computed (default ``n_positions - 1``).
        relative: divide by ``sqrt(2 * mean(||row||^2))``, the typical distance between two
            *unrelated* rows of the table's size (independent zero-mean rows have expected
            squared distance ``2 * E||row||^2``). Then about 1 means "as far apart as
            unrelated vectors", whatever the table's scale, so tables can share one axis.

    Returns:
        ``(max_offset + 1,)`` array; entry ``Δ`` averages ``||row_p - row_{p+Δ}||`` over
        ``p = 0 .. n_positions - 1 - Δ``; entry 0 is 0.
    """
    array = as_table(table)
    relative = check_bool("relative", relative)
    n = array.shape[0]
    max_offset = n - 1 if max_offset is None else check_nonnegative_int("max_offset", max_offset)
    if max_offset > n - 1:
        raise ValueError(f"max_offset must be <= n_positions - 1 = {n - 1}, got {max_offset}")
    out = np.zeros(max_offset + 1)
    for delta in range(1, max_offset + 1):
        out[delta] = offset_distances(array, delta).mean()
    if relative:
        scale = math.sqrt(2.0 * float((array**2).sum(axis=1).mean()))
        if scale == 0.0:
            raise ValueError("table is all zeros: relative distances are undefined")
        out /= scale
    return out


# -- norms ---------------------------------------------------------------------------
@dataclass(frozen=True)
class NormSummary:
    """Euclidean length of every row and a few summaries.

    Attributes:
        norms: ``(n_positions,)`` row lengths.
        window: rows averaged for ``early_mean`` and ``late_mean``.
        early_mean: mean length of the first ``window`` rows.
        late_mean: mean length of the last ``window`` rows.
        mean, std, min, max: over all rows.
        argmin, argmax: positions of the shortest and longest row.
    """

    norms: np.ndarray
    window: int
    early_mean: float
    late_mean: float
    mean: float
    std: float
    min: float
    max: float
    argmin: int
    argmax: int


def row_norms(table: Any, *, window: int = 20) -> NormSummary:
    """Row lengths with early/late summaries.

    Args:
        table: ``(n_positions, d_model)``.
        window: rows in the early and late groups, ``1 <= window <= n_positions // 2``
            (so the two groups never overlap).
    """
    array = as_table(table)
    window = check_positive_int("window", window)
    n = array.shape[0]
    if window > n // 2:
        raise ValueError(f"window must be <= n_positions // 2 = {n // 2} so early and late rows differ, got {window}")
    norms = np.linalg.norm(array, axis=1)
    return NormSummary(
        norms=norms,
        window=window,
        early_mean=float(norms[:window].mean()),
        late_mean=float(norms[-window:].mean()),
        mean=float(norms.mean()),
        std=float(norms.std()),
        min=float(norms.min()),
        max=float(norms.max()),
        argmin=int(norms.argmin()),
        argmax=int(norms.argmax()),
    )


# -- principal components --------------------------------------------------------------
@dataclass(frozen=True)
class PCAResult:
    """Principal components of the rows of a table.

    Attributes:
        scores: ``(n_positions, n_components)``: each position's coordinate on each
            component (a component "as a function of position").
        components: ``(n_components, d_model)`` unit directions in embedding space.
        explained_variance_ratio: ``(n_components,)`` share of the table's *total*
            variance carried by each component.
    """

    scores: np.ndarray
    components: np.ndarray
    explained_variance_ratio: np.ndarray

    def cumulative(self, k: int) -> float:
        """Share of the total variance carried by the first ``k`` components."""
        k = check_positive_int("k", k)
        if k > self.explained_variance_ratio.size:
            raise ValueError(f"k must be <= n_components = {self.explained_variance_ratio.size}, got {k}")
        return float(self.explained_variance_ratio[:k].sum())


def principal_components(table: Any, *, n_components: int = 10) -> PCAResult:
    """PCA of the rows (positions as samples, embedding dimensions as features).

    Args:
        table: ``(n_positions, d_model)`` whose rows are not all equal.
        n_components: components kept, ``<= min(n_positions, d_model)``.
    """
    array = as_table(table)
    n_components = check_positive_int("n_components", n_components)
    limit = min(array.shape)
    if n_components > limit:
        raise ValueError(f"n_components must be <= min(n_positions, d_model) = {limit}, got {n_components}")
    if np.allclose(array, array[0], rtol=0.0, atol=0.0):
        raise ValueError("table has no variance across positions (all rows are equal): PCA is undefined")
    from sklearn.decomposition import PCA  # imported here, like cosine_similarity above

    # The full solver is exact and deterministic; the tables here are small.
    pca = PCA(n_components=n_components, svd_solver="full")
    scores = pca.fit_transform(array)
    return PCAResult(
        scores=scores,
        components=pca.components_.copy(),
        explained_variance_ratio=pca.explained_variance_ratio_.copy(),
    )


def components_for_share(table: Any, share: float) -> int:
    """Smallest number of principal components that carry at least ``share`` of the table's
    total variance (every component is computed, so the answer is exact).

    Args:
        table: ``(n_positions, d_model)`` whose rows are not all equal.
        share: in (0, 1].
    """
    array = as_table(table)
    share = check_real("share", share, low=0.0, low_open=True, high=1.0)
    singular = np.linalg.svd(array - array.mean(axis=0), compute_uv=False)
    cumulative = np.cumsum(singular**2) / np.sum(singular**2)
    # The tolerance keeps share=1.0 from running past the last component through rounding.
    return int(np.searchsorted(cumulative, share - 1e-12)) + 1


def variance_by_period(table: Any, edges: Sequence[float]) -> np.ndarray:
    """Share of a table's variance in each band of period along the positions.

    The table is centred per channel and Fourier-transformed along positions; the power of
    each frequency, summed over channels, is assigned to the band ``[edges[i], edges[i+1])``
    that contains its period ``n_positions / k`` (positions per cycle). By Parseval's theorem
    the power over all non-zero frequencies is the table's total variance, so the shares sum
    to 1 when the bands cover every period from 2 to ``n_positions``. This is a spectrum of the
    *whole* table, every channel and direction, not of a few principal components.

    Args:
        table: ``(n_positions, d_model)`` whose rows are not all equal.
        edges: increasing periods in positions, at least two.

    Returns:
        ``(len(edges) - 1,)`` shares of the total variance.
    """
    array = as_table(table)
    if isinstance(edges, str | bytes):
        raise TypeError(f"edges must be a sequence of periods (numbers), got the string {edges!r}")
    bounds = check_reals("edges", edges).numpy()
    if bounds.ndim != 1 or bounds.size < 2 or not np.all(np.isfinite(bounds)) or np.any(np.diff(bounds) <= 0):
        raise ValueError(f"edges must be at least two increasing finite periods, got {edges!r}")
    centred = array - array.mean(axis=0)
    power = (np.abs(np.fft.rfft(centred, axis=0)) ** 2).sum(axis=1)
    power[0] = 0.0  # the mean, zero after centring
    n = array.shape[0]
    period = n / np.maximum(np.arange(power.size), 1)
    shares = [power[(period >= low) & (period < high)].sum() for low, high in zip(bounds[:-1], bounds[1:])]
    return np.asarray(shares) / power.sum()


# -- periodicity ---------------------------------------------------------------------
@dataclass(frozen=True)
class Periodicity:
    """How periodic a 1-D signal over positions is.

    Attributes:
        period: the dominant period in positions: the peak of the (zero-padded) power
            spectrum of the mean-removed signal.
        cycles: ``n / period``: how many full periods fit in the signal. Below about 1
            the "period" describes a trend, not a repetition.
        fit_r2: share of the signal's variance explained by the best sinusoid of that
            period (least squares, with an offset): 1 for a pure sinusoid, near 0 for noise.
        autocorr_lag: the first lag ``>= 1`` at which the autocorrelation has a local
            maximum of at least the threshold, or ``None`` if there is none.
        autocorr_value: the autocorrelation at ``autocorr_lag`` (``None`` with it).
    """

    period: float
    cycles: float
    fit_r2: float
    autocorr_lag: int | None
    autocorr_value: float | None


def _as_signal(signal: Any, name: str) -> np.ndarray:
    if hasattr(signal, "detach"):
        signal = signal.detach().cpu().numpy()
    array = np.asarray(signal)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per position), got shape {array.shape}")
    return as_table(array[:, None], name=name, min_rows=4)[:, 0]


def periodicity(signal: Any, *, oversample: int = 8, threshold: float = 0.3) -> Periodicity:
    """Dominant period of a signal over positions, from its spectrum and its autocorrelation.

    Args:
        signal: ``(n,)`` values, e.g. one column of :attr:`PCAResult.scores`; ``n >= 4``,
            not constant.
        oversample: zero-padding factor of the FFT; the frequency grid has spacing
            ``1 / (oversample * n)`` cycles per position, so periods that do not divide ``n``
            are found accurately.
        threshold: smallest autocorrelation that counts as a peak, in ``(0, 1]``.
    """
    x = _as_signal(signal, "signal")
    oversample = check_positive_int("oversample", oversample)
    threshold = check_positive_float("threshold", threshold)
    if threshold > 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    n = x.size
    centred = x - x.mean()
    if not np.any(centred):
        raise ValueError("signal is constant: it has no period")
    n_fft = oversample * n
    power = np.abs(np.fft.rfft(centred, n=n_fft)) ** 2
    peak = int(np.argmax(power[1:])) + 1  # bin 0 is the (removed) mean
    period = n_fft / peak
    positions = np.arange(n)
    angle = 2.0 * np.pi * positions / period
    design = np.column_stack([np.sin(angle), np.cos(angle), np.ones(n)])
    coef, *_ = np.linalg.lstsq(design, x, rcond=None)
    residual = x - design @ coef
    fit_r2 = float(1.0 - residual.var() / x.var())
    # Biased autocorrelation (same divisor at every lag): the usual estimator, bounded by 1.
    autocorr = np.correlate(centred, centred, mode="full")[n - 1 :]
    autocorr = autocorr / np.dot(centred, centred)
    lag: int | None = None
    value: float | None = None
    for k in range(1, n - 1):
        is_peak = autocorr[k] > autocorr[k - 1] and autocorr[k] >= autocorr[k + 1]
        if is_peak and autocorr[k] >= threshold:
            lag, value = k, float(autocorr[k])
            break
    return Periodicity(period=float(period), cycles=float(n / period), fit_r2=fit_r2,
                       autocorr_lag=lag, autocorr_value=value)


@dataclass(frozen=True)
class PairRotation:
    """Two signals read as the coordinates of a point turning in a plane.

    A sin/cos pair of period ``P`` turns by ``360 / P`` degrees per position, at a
    constant radius: that is what each frequency of the sinusoidal table does.

    Attributes:
        step_degrees: circular mean of the angle turned from one position to the next
            (signed, in ``(-180, 180]``).
        step_spread_degrees: circular standard deviation of those steps (0 for a perfect rotation).
        period: ``360 / |step_degrees|`` positions per turn (``inf`` if the mean step is 0).
        radius_cv: coefficient of variation (std / mean) of the distance from the origin.
    """

    step_degrees: float
    step_spread_degrees: float
    period: float
    radius_cv: float


def pair_rotation(first: Any, second: Any) -> PairRotation:
    """Treat ``(first[p], second[p])`` as a point in the plane and measure how it turns with ``p``.

    Args:
        first, second: ``(n,)`` signals of equal length, e.g. two columns of
            :attr:`PCAResult.scores`. No point may sit at the origin.
    """
    a = _as_signal(first, "first")
    b = _as_signal(second, "second")
    if a.shape != b.shape:
        raise ValueError(f"first and second must have the same length, got {a.size} and {b.size}")
    radius = np.hypot(a, b)
    if np.any(radius == 0.0):
        raise ValueError(f"the point is at the origin at positions {np.flatnonzero(radius == 0.0)[:10].tolist()}: "
                         "its angle is undefined")
    phasor = (a + 1j * b) / radius
    steps = phasor[1:] * np.conj(phasor[:-1])  # unit complex numbers: the turn from p to p + 1
    mean_step = steps.mean()
    resultant = float(abs(mean_step))
    step = math.degrees(math.atan2(mean_step.imag, mean_step.real))
    spread = math.degrees(math.sqrt(max(0.0, -2.0 * math.log(resultant)))) if resultant > 0 else math.inf
    return PairRotation(
        step_degrees=step,
        step_spread_degrees=spread,
        period=360.0 / abs(step) if step != 0.0 else math.inf,
        radius_cv=float(radius.std() / radius.mean()),
    )


# -- everything at once ----------------------------------------------------------------
@dataclass(frozen=True)
class TableAnalysis:
    """The four analyses of one table (see :func:`analyze_table`).

    Attributes:
        similarity: ``(n, n)`` cosine-similarity matrix.
        similarity_by_offset: ``(n,)`` mean cosine similarity at each offset.
        summary: adjacent / near / far similarity.
        pca: principal components.
        periodicities: one :class:`Periodicity` per leading component.
        norms: row lengths and summaries.
        distances: ``(n,)`` mean Euclidean distance at each offset.
    """

    similarity: np.ndarray
    similarity_by_offset: np.ndarray
    summary: SimilaritySummary
    pca: PCAResult
    periodicities: tuple[Periodicity, ...]
    norms: NormSummary
    distances: np.ndarray


def analyze_table(
    table: Any,
    *,
    n_components: int = 10,
    n_periodic: int = 5,
    norm_window: int = 20,
    near_band: tuple[int, int] = (10, 50),
    far_from: int = 200,
) -> TableAnalysis:
    """Run all four analyses on one table.

    Args:
        table: ``(n_positions, d_model)``.
        n_components: principal components kept (capped at ``min(n_positions, d_model)``).
        n_periodic: leading components whose periodicity is measured (``<= n_components``).
        norm_window: rows in the early/late norm summaries (capped at ``n_positions // 2``).
        near_band, far_from: bands of :func:`similarity_summary`.
    """
    array = as_table(table)
    _check_band(near_band)
    n_components = min(check_positive_int("n_components", n_components), min(array.shape))
    n_periodic = check_positive_int("n_periodic", n_periodic)
    if n_periodic > n_components:
        raise ValueError(f"n_periodic must be <= n_components = {n_components}, got {n_periodic}")
    similarity = cosine_similarity_matrix(array)
    pca = principal_components(array, n_components=n_components)
    window = min(check_positive_int("norm_window", norm_window), array.shape[0] // 2)
    return TableAnalysis(
        similarity=similarity,
        similarity_by_offset=mean_by_offset(similarity),
        summary=_summary_from_similarity(similarity, near_band=near_band, far_from=far_from),
        pca=pca,
        periodicities=tuple(periodicity(pca.scores[:, k]) for k in range(n_periodic)),
        norms=row_norms(array, window=window),
        distances=distance_by_offset(array),
    )


# -- what attention sees -----------------------------------------------------------------
def _as_vector(value: Any, name: str, size: int) -> np.ndarray:
    """A finite float64 vector of length ``size`` (for biases and LayerNorm parameters)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D with length {size} (d_model), got shape {array.shape}")
    if array.size != size:
        raise ValueError(f"{name} must have length {size} (d_model), got length {array.size}")
    return as_table(array[:, None], name=name, min_rows=1)[:, 0]


def _layer_norm(rows: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis, as ``torch.nn.LayerNorm``."""
    centred = rows - rows.mean(axis=-1, keepdims=True)
    variance = (centred**2).mean(axis=-1, keepdims=True)  # biased, as torch.nn.LayerNorm
    return centred / np.sqrt(variance + eps) * weight + bias


@dataclass(frozen=True)
class AttentionWeights:
    """What one attention layer does to a position table before the softmax.

    Arguments of :func:`position_only_logits`, read from a model by :func:`attention_weights`.

    Attributes:
        table: ``(n_positions, d_model)`` the position vectors entering the layer.
        w_query, w_key: ``(d_model, d_model)`` in ``torch.nn.Linear.weight`` layout
            ``(out_features, in_features)``: ``q = x @ w_query.T + b_query``; head ``h`` uses
            output features ``h * d_head .. (h + 1) * d_head - 1``.
        b_query, b_key: ``(d_model,)`` biases.
        layer_norm: ``(weight, bias)``, each ``(d_model,)``: the LayerNorm the layer applies
            to its input before the projections.
        layer_norm_eps: that LayerNorm's ``eps``.
        n_heads: number of heads.
    """

    table: np.ndarray
    w_query: np.ndarray
    w_key: np.ndarray
    b_query: np.ndarray
    b_key: np.ndarray
    layer_norm: tuple[np.ndarray, np.ndarray]
    layer_norm_eps: float
    n_heads: int

    def logits(self, table: Any | None = None, *, scale: bool = True) -> np.ndarray:
        """:func:`position_only_logits` of ``table`` (default: :attr:`table`) through these weights."""
        return position_only_logits(
            self.table if table is None else table,
            self.w_query,
            self.w_key,
            n_heads=self.n_heads,
            b_query=self.b_query,
            b_key=self.b_key,
            layer_norm=self.layer_norm,
            layer_norm_eps=self.layer_norm_eps,
            scale=scale,
        )


def attention_weights(model: TinyTransformer, *, layer: int = 0) -> AttentionWeights:
    """The position table and one block's LayerNorm and query/key projections of a :class:`TinyTransformer`.

    ``TinyTransformer`` is pre-LayerNorm: block ``l`` computes ``x + attn(LN_l(x))``, and the
    input of block 0 is ``token_vector + position_vector`` (``combine="add"``). Its attention
    projects with one fused ``qkv`` ``nn.Linear(d_model, 3 * d_model)`` whose output features
    are ``[q | k | v]``, each split into heads of ``d_head`` consecutive features; this
    function cuts ``w_query`` and ``w_key`` out of it. Only ``layer=0`` sees the table
    directly; deeper blocks see it mixed with everything earlier blocks added.

    Args:
        model: a ``TinyTransformer`` with ``combine="add"`` and a scheme that adds position
            vectors (learned or sinusoidal; not RoPE/ALiBi, which act inside attention).
        layer: index of the block, ``0 <= layer < n_layers``.

    Returns:
        :class:`AttentionWeights` with the ``(max_len, d_model)`` position table.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a posenc.models.TinyTransformer, got {type(model).__name__}")
    layer = check_nonnegative_int("layer", layer)
    if layer >= len(model.blocks):
        raise ValueError(f"layer must be < the model's {len(model.blocks)} blocks, got {layer}")
    if model.combine != "add":
        raise ValueError(f"the model combines token and position vectors with {model.combine!r}; only 'add' is "
                         "supported (with 'concat' the position part has its own dimensions)")
    table = model.position.table(model.max_len)
    if table is None:
        raise ValueError(f"the model's position scheme {model.position_name!r} adds no position vectors: "
                         "there is no table for attention to see")
    block = model.blocks[layer]
    assert isinstance(block, TransformerBlock)
    attn, norm = block.attn, block.norm1
    d = model.d_model

    def numpy(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().cpu().double().numpy().copy()

    weight, bias = numpy(attn.qkv.weight), numpy(attn.qkv.bias)
    return AttentionWeights(
        table=as_table(table),
        w_query=weight[:d],
        w_key=weight[d : 2 * d],
        b_query=bias[:d],
        b_key=bias[d : 2 * d],
        layer_norm=(numpy(norm.weight), numpy(norm.bias)),
        layer_norm_eps=float(norm.eps),
        n_heads=attn.n_heads,
    )


def position_only_logits(
    table: Any,
    w_query: Any,
    w_key: Any,
    *,
    n_heads: int,
    b_query: Any | None = None,
    b_key: Any | None = None,
    layer_norm: tuple[Any, Any] | None = None,
    layer_norm_eps: float = 1e-5,
    scale: bool = True,
) -> np.ndarray:
    """Attention logits between positions when the input is the position table alone.

    With ``x_i = LN(table[i])`` (or ``table[i]`` without a LayerNorm),
    ``q_i = x_i @ w_query.T + b_query`` and ``k_j = x_j @ w_key.T + b_key``, head ``h``
    (features ``h * d_head .. (h + 1) * d_head - 1``, ``d_head = d_model / n_heads``) scores

        ``logits[h, i, j] = q_i[h] · k_j[h] / sqrt(d_head)``   (no division if ``scale=False``).

    **An approximation**: a real input is ``token + position`` (plus a segment vector in
    BERT), and the LayerNorm and both projections act on the sum, so the true logits also
    hold token-token and token-position terms. These logits drop the token part: they show
    what position alone asks for. Pass ``table + mean_token_vector`` to keep an average
    token in the LayerNorm.

    Args:
        table: ``(n_positions, d_model)`` position vectors.
        w_query, w_key: ``(d_model, d_model)`` in ``torch.nn.Linear.weight`` layout
            ``(out_features, in_features)``.
        n_heads: number of heads; must divide ``d_model``.
        b_query, b_key: ``(d_model,)`` biases, or ``None`` for none.
        layer_norm: ``(weight, bias)``, each ``(d_model,)``, applied to every row first as
            ``torch.nn.LayerNorm`` does; ``None`` for no LayerNorm.
        layer_norm_eps: the LayerNorm's ``eps`` (PyTorch's default 1e-5; BERT uses 1e-12).
        scale: divide by ``sqrt(d_head)`` as scaled dot-product attention does.

    Returns:
        ``(n_heads, n_positions, n_positions)`` float64 logits; query ``i`` is the row,
        key ``j`` the column.
    """
    x = as_table(table, min_rows=1)
    d_model = x.shape[1]
    n_heads = check_positive_int("n_heads", n_heads)
    eps = check_positive_float("layer_norm_eps", layer_norm_eps)
    scale = check_bool("scale", scale)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model} (the table's width)")
    projections = []
    for name, value in (("w_query", w_query), ("w_key", w_key)):
        matrix = as_table(value, name=name, min_rows=1)
        if matrix.shape != (d_model, d_model):
            raise ValueError(f"{name} must have shape (d_model, d_model) = ({d_model}, {d_model}) in "
                             f"nn.Linear.weight layout, got shape {matrix.shape}")
        projections.append(matrix)
    biases = [np.zeros(d_model) if value is None else _as_vector(value, name, d_model)
              for name, value in (("b_query", b_query), ("b_key", b_key))]
    if layer_norm is not None:
        if not isinstance(layer_norm, tuple) or len(layer_norm) != 2:
            raise ValueError(f"layer_norm must be a (weight, bias) pair or None, got {type(layer_norm).__name__}")
        x = _layer_norm(x, _as_vector(layer_norm[0], "layer_norm weight", d_model),
                        _as_vector(layer_norm[1], "layer_norm bias", d_model), eps)
    d_head = d_model // n_heads
    n = x.shape[0]
    q = (x @ projections[0].T + biases[0]).reshape(n, n_heads, d_head).transpose(1, 0, 2)
    k = (x @ projections[1].T + biases[1]).reshape(n, n_heads, d_head).transpose(1, 0, 2)
    logits = q @ k.transpose(0, 2, 1)
    return logits / math.sqrt(d_head) if scale else logits


def peak_offsets(logits: Any, *, causal: bool = False) -> np.ndarray:
    """The offset ``j - i`` of the key with the largest logit, for every head and query.

    Args:
        logits: ``(n_heads, n_queries, n_keys)`` (query ``i`` = row, key ``j`` = column), e.g.
            from :func:`position_only_logits`.
        causal: if ``True`` only keys ``j <= i`` compete (a decoder's mask); query ``i`` must
            then have at least one such key, which holds for square logits.

    Returns:
        ``(n_heads, n_queries)`` int array; negative = the winning key is before the query,
        0 = the query itself. A head that attends ``k`` positions back peaks at ``-k``. Ties
        go to the first (leftmost) key.
    """
    causal = check_bool("causal", causal)
    array = _real_array(logits, "logits")
    if array.ndim != 3:
        raise ValueError(f"logits must be 3-D (n_heads, n_queries, n_keys), got shape {array.shape}")
    if 0 in array.shape:
        raise ValueError(f"logits must not be empty, got shape {array.shape}")
    if np.isnan(array).any():
        raise ValueError("logits contain NaN: the peak is undefined")
    array = array.astype(np.float64)
    _, n_queries, n_keys = array.shape
    queries = np.arange(n_queries)[:, None]
    keys = np.arange(n_keys)[None, :]
    if causal:
        if n_keys < n_queries:
            raise ValueError(f"with causal=True every query i needs keys 0..i: n_keys={n_keys} < n_queries={n_queries}")
        array = np.where(keys <= queries, array, -np.inf)
    return (array.argmax(axis=-1) - queries[:, 0]).astype(np.int64)


@dataclass(frozen=True)
class HeadPeaks:
    """Where one head's queries put their largest logit (see :func:`peak_offset_shares`).

    Attributes:
        head: the head's index.
        n_queries: queries counted.
        modal_offset: the offset ``j - i`` most queries peak at (ties: the smaller ``|offset|``,
            then the negative one).
        modal_share: share of queries peaking at ``modal_offset``, in ``(0, 1]``.
        shares: ``{offset: share}`` for every offset some query peaks at, in offset order;
            shares sum to 1, so heads of tables of different lengths compare.
    """

    head: int
    n_queries: int
    modal_offset: int
    modal_share: float
    shares: dict[int, float]

    def share(self, offset: int) -> float:
        """Share of queries peaking at ``offset`` (0 if none; offsets may be negative)."""
        return self.shares.get(check_int("offset", offset), 0.0)

    def window(self, low: int, high: int) -> dict[int, float]:
        """``{offset: share}`` for every offset in ``[low, high]`` (both included, negative allowed), zeros kept."""
        low, high = check_int("low", low), check_int("high", high)
        if high < low:
            raise ValueError(f"high must be >= low, got low={low}, high={high}")
        return {offset: self.share(offset) for offset in range(int(low), int(high) + 1)}

    def top(self, k: int = 3) -> list[tuple[int, float]]:
        """The ``k`` most common peak offsets as ``(offset, share)``, most common first."""
        k = check_positive_int("k", k)
        ranked = sorted(self.shares.items(), key=lambda item: (-item[1], abs(item[0]), item[0]))
        return ranked[:k]


def peak_offset_shares(peaks: Any) -> tuple[HeadPeaks, ...]:
    """Per head, the share of queries whose logit peaks at each offset.

    Args:
        peaks: ``(n_heads, n_queries)`` integer offsets from :func:`peak_offsets`.

    Returns:
        One :class:`HeadPeaks` per head, in head order.
    """
    if hasattr(peaks, "detach"):
        peaks = peaks.detach().cpu().numpy()
    array = np.asarray(peaks)
    if array.ndim != 2:
        raise ValueError(f"peaks must be 2-D (n_heads, n_queries), got shape {array.shape}")
    if array.shape[1] == 0:
        raise ValueError(f"peaks must hold at least one query per head, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"peaks must hold integer offsets, got dtype {array.dtype}")
    summaries = []
    for head, row in enumerate(array):
        offsets, counts = np.unique(row, return_counts=True)
        shares = {int(o): float(c) / row.size for o, c in zip(offsets, counts)}
        modal = min(shares, key=lambda o: (-shares[o], abs(o), o))
        summaries.append(HeadPeaks(head=head, n_queries=int(row.size), modal_offset=modal,
                                   modal_share=shares[modal], shares=shares))
    return tuple(summaries)
