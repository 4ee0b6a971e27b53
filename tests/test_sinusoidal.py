"""Tests for posenc.sinusoidal: known values, precision, structure (rotation, layouts,
offsets), the module, and error messages. Property tests use hypothesis."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.sinusoidal import (
    SinusoidalPositionalEncoding,
    exact_integer_limit,
    float32_recipe_table,
    layout_permutation,
    offset_dot_product,
    rotation_matrix,
    sinusoidal_frequencies,
    sinusoidal_reference,
    sinusoidal_table,
    sinusoidal_wavelengths,
)

PROPERTY = settings(max_examples=40, deadline=None)
even_widths = st.integers(1, 48).map(lambda h: 2 * h)
layouts = st.sampled_from(["interleaved", "concatenated"])
variants = st.sampled_from(["paper", "endpoint"])
bases = st.sampled_from([10.0, 500.0, 10000.0, 1e6])
F32_TOL = 3e-7  # float32 rounding of the two factors, their product and the output
SAME = dict(atol=2.5e-7, rtol=0.0)  # two float32 evaluations of one entry (vectorised vs scalar loops)


def max_err(table: torch.Tensor, reference: torch.Tensor) -> float:
    return float((table.double() - reference).abs().max())


# --------------------------------------------------------------------------- known values
def test_known_values_paper_layout() -> None:
    table = sinusoidal_table(3, 4, dtype=torch.float64)
    # d=4: w_0 = 1, w_1 = 10000 ** (-2/4) = 0.01
    expected = torch.tensor(
        [
            [0.0, 1.0, 0.0, 1.0],
            [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
            [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
        ],
        dtype=torch.float64,
    )
    assert torch.allclose(table, expected, atol=1e-15, rtol=0)


def test_default_call_is_backwards_compatible() -> None:
    table = sinusoidal_table(50, 16)
    assert table.shape == (50, 16) and table.dtype == torch.float32 and table.device.type == "cpu"
    assert max_err(table, sinusoidal_reference(torch.arange(50), 16)) < F32_TOL
    same = sinusoidal_table(50, 16, base=10000.0, dtype=torch.float32, device="cpu")
    assert torch.equal(table, same)


def test_matches_an_independent_fairseq_style_formula() -> None:
    """frequencies="endpoint" + concatenated layout + odd pad == fairseq's SinusoidalPositionalEmbedding maths."""
    seq_len, d_model = 40, 11
    half = d_model // 2
    step = math.log(10000.0) / (half - 1)
    inv = torch.exp(torch.arange(half, dtype=torch.float64) * -step)
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv[None, :]
    expected = torch.cat([torch.sin(angles), torch.cos(angles), torch.zeros(seq_len, 1, dtype=torch.float64)], dim=1)
    table = sinusoidal_table(seq_len, d_model, layout="concatenated", frequencies="endpoint", odd="pad",
                             dtype=torch.float64)
    assert torch.allclose(table, expected, atol=1e-13, rtol=0)


# --------------------------------------------------------------------------- wavelengths (FACTS item 5)
def test_wavelength_end_points() -> None:
    paper = sinusoidal_wavelengths(512)
    endpoint = sinusoidal_wavelengths(512, frequencies="endpoint")
    assert paper.shape == (256,) and paper[0] == pytest.approx(2 * math.pi, rel=1e-15)
    assert float(paper[-1]) == pytest.approx(2 * math.pi * 10000 ** (510 / 512), rel=1e-12)
    assert 9646 < float(paper[-1]) / (2 * math.pi) < 9648  # not 10000
    assert float(endpoint[-1]) == pytest.approx(2 * math.pi * 10000, rel=1e-12)
    ratios = paper[1:] / paper[:-1]  # a geometric progression
    assert torch.allclose(ratios, torch.full_like(ratios, 10000 ** (2 / 512)), rtol=1e-12)


def test_single_pair_endpoint_frequency_is_one() -> None:
    assert torch.equal(sinusoidal_frequencies(2, frequencies="endpoint"), torch.ones(1, dtype=torch.float64))


# --------------------------------------------------------------------------- precision (FACTS item 12)
def test_float32_error_below_1e6_for_every_position_up_to_65536() -> None:
    table = sinusoidal_table(65536, 64)
    worst = max(
        max_err(table[s : s + 8192], sinusoidal_reference(torch.arange(s, s + 8192), 64)) for s in range(0, 65536, 8192)
    )
    assert worst <= 1e-6
    # full width near the top of the range, where the recipe is worst
    wide = sinusoidal_table(2048, 1024, offset=63488)
    assert max_err(wide, sinusoidal_reference(torch.arange(63488, 65536), 1024)) <= 1e-6


def test_the_float32_recipe_really_is_imprecise() -> None:
    positions = torch.arange(65536 - 512, 65536)
    recipe = float32_recipe_table(65536, 64)[positions]
    error = max_err(recipe, sinusoidal_reference(positions, 64))
    assert error > 1e-3  # the problem the exact table fixes
    small = float32_recipe_table(64, 64)
    assert max_err(small, sinusoidal_reference(torch.arange(64), 64)) < 1e-5  # tolerable at small positions


def test_float64_and_half_dtypes() -> None:
    positions = torch.arange(30000, 30300)
    reference = sinusoidal_reference(positions, 32)
    # float64: both evaluations round pos * w (~3e4 * 1e-16 rad)
    assert max_err(sinusoidal_table(300, 32, offset=30000, dtype=torch.float64), reference) < 1e-10
    exact32 = sinusoidal_table(300, 32, offset=30000)
    for dtype in (torch.float16, torch.bfloat16):
        table = sinusoidal_table(300, 32, offset=30000, dtype=dtype)
        assert table.dtype == dtype and torch.equal(table, exact32.to(dtype))


def test_huge_positions_stay_exact() -> None:
    positions = torch.tensor([0, 2**20 + 3, 10**7, 10**8 - 1])
    assert max_err(sinusoidal_table(None, 64, positions=positions), sinusoidal_reference(positions, 64)) < F32_TOL


def test_exact_integer_limits() -> None:
    limits = {dtype: exact_integer_limit(dtype) for dtype in (torch.float16, torch.bfloat16, torch.float32)}
    assert limits == {torch.float16: 2048, torch.bfloat16: 256, torch.float32: 2**24}
    for dtype, n in limits.items():
        values = torch.arange(n - 4, n + 4, dtype=torch.float64)
        roundtrip = values.to(dtype).to(torch.float64)
        assert torch.equal(roundtrip[:5], values[:5])  # n-4 .. n exact
        assert roundtrip[5] != values[5]  # n + 1 is not representable


@pytest.mark.parametrize(("dtype", "stored", "not_stored"), [(torch.float16, 2050, 2049), (torch.bfloat16, 258, 257)])
def test_half_precision_stores_some_integers_past_the_limit_but_not_all(
    dtype: torch.dtype, stored: int, not_stored: int
) -> None:
    """Past the limit the spacing is 2: even integers survive, odd ones round to a neighbour."""
    assert stored > not_stored > exact_integer_limit(dtype)
    assert float(torch.tensor(float(stored)).to(dtype)) == stored
    assert float(torch.tensor(float(not_stored)).to(dtype)) != not_stored


# --------------------------------------------------------------------------- properties
@PROPERTY
@given(d_model=even_widths, seq_len=st.integers(1, 80), offset=st.integers(0, 10**6), base=bases,
       layout=layouts, frequencies=variants)
def test_values_in_unit_interval_and_match_reference(
    d_model: int, seq_len: int, offset: int, base: float, layout: str, frequencies: str
) -> None:
    table = sinusoidal_table(seq_len, d_model, offset=offset, base=base, layout=layout, frequencies=frequencies)
    assert table.shape == (seq_len, d_model)
    assert float(table.abs().max()) <= 1.0
    reference = sinusoidal_reference(torch.arange(offset, offset + seq_len), d_model, base=base, layout=layout,
                                     frequencies=frequencies)
    assert max_err(table, reference) < F32_TOL


@PROPERTY
@given(d_model=even_widths, pos=st.integers(0, 10**5), k=st.integers(-(10**4), 10**4), base=bases,
       layout=layouts, frequencies=variants)
def test_rotation_identity(d_model: int, pos: int, k: int, base: float, layout: str, frequencies: str) -> None:
    pos = max(pos, -k)  # keep pos + k >= 0
    options = dict(base=base, layout=layout, frequencies=frequencies)
    pe = sinusoidal_table(None, d_model, positions=[pos, pos + k], dtype=torch.float64, **options)
    rotation = rotation_matrix(k, d_model, **options)
    assert torch.allclose(rotation @ pe[0], pe[1], atol=1e-9, rtol=0)
    # orthogonal, and the inverse shift is the transpose
    assert torch.allclose(rotation @ rotation.T, torch.eye(d_model, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(rotation_matrix(-k, d_model, **options), rotation.T, atol=1e-12)


@PROPERTY
@given(d_model=st.integers(1, 40), seq_len=st.integers(1, 50), offset=st.integers(0, 10**5), frequencies=variants)
def test_layouts_are_a_fixed_channel_permutation(d_model: int, seq_len: int, offset: int, frequencies: str) -> None:
    options = dict(offset=offset, frequencies=frequencies, odd="pad")
    interleaved = sinusoidal_table(seq_len, d_model, **options)
    concatenated = sinusoidal_table(seq_len, d_model, layout="concatenated", **options)
    perm = layout_permutation(d_model, odd="pad")
    assert sorted(perm.tolist()) == list(range(d_model))
    assert torch.equal(concatenated, interleaved[:, perm])
    assert torch.equal(concatenated[:, torch.argsort(perm)], interleaved)


def test_layout_permutation_known_value() -> None:
    assert layout_permutation(6).tolist() == [0, 2, 4, 1, 3, 5]
    assert layout_permutation(7, odd="pad").tolist() == [0, 2, 4, 1, 3, 5, 6]


@PROPERTY
@given(d_model=even_widths, pos=st.lists(st.integers(0, 10**5), min_size=2, max_size=5),
       k=st.integers(-2000, 2000), frequencies=variants)
def test_dot_product_depends_on_offset_only(d_model: int, pos: list[int], k: int, frequencies: str) -> None:
    starts = torch.tensor([max(p, -k) for p in pos])
    table = sinusoidal_table(None, d_model, positions=torch.stack([starts, starts + k], 1), dtype=torch.float64,
                             frequencies=frequencies)
    dots = (table[:, 0] * table[:, 1]).sum(-1)
    curve = offset_dot_product(k, d_model, frequencies=frequencies)
    assert torch.allclose(dots, curve.expand_as(dots), atol=1e-9)
    assert float(offset_dot_product(0, d_model)) == pytest.approx(d_model / 2)
    assert float(offset_dot_product(-k, d_model)) == pytest.approx(float(offset_dot_product(k, d_model)))


@PROPERTY
@given(d_model=st.integers(1, 8).map(lambda h: 2 * h), base=st.sampled_from([3.0, 10.0, 50.0, 200.0]),
       frequencies=variants)
def test_rows_unique_within_the_longest_wavelength(d_model: int, base: float, frequencies: str) -> None:
    """Within one period of the slowest pair its angle alone identifies the position, so
    ||PE(p) - PE(q)||^2 = 2 * (d/2 - dot(q - p)) > 0 for every p != q there."""
    longest = float(sinusoidal_wavelengths(d_model, base=base, frequencies=frequencies)[-1])
    n = min(int(longest), 400)  # every pair of rows is less than one longest wavelength apart
    table = sinusoidal_table(n, d_model, base=base, frequencies=frequencies, dtype=torch.float64)
    distances = torch.cdist(table, table)
    offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    closed_form = (2 * (d_model / 2 - offset_dot_product(offsets, d_model, base=base, frequencies=frequencies)))
    assert torch.allclose(distances**2, closed_form.clamp_min(0), atol=1e-9)
    off_diagonal = distances + torch.eye(n, dtype=torch.float64) * 10
    slowest = float(sinusoidal_frequencies(d_model, base=base, frequencies=frequencies)[-1])
    # lower bound from the slowest pair: 2 |sin(k w / 2)| with k the closest wrap-around
    bound = min(2 * abs(math.sin(k * slowest / 2)) for k in range(1, n)) if n > 1 else 1.0
    assert float(off_diagonal.min()) >= bound - 1e-12 > 0


@PROPERTY
@given(d_model=even_widths, seq_len=st.integers(1, 60), offset=st.integers(0, 5000))
def test_offset_equals_explicit_positions(d_model: int, seq_len: int, offset: int) -> None:
    by_offset = sinusoidal_table(seq_len, d_model, offset=offset)
    by_positions = sinusoidal_table(None, d_model, positions=torch.arange(offset, offset + seq_len))
    assert torch.allclose(by_offset, by_positions, **SAME)


@PROPERTY
@given(d_model=st.integers(1, 24).map(lambda h: 2 * h), start=st.integers(0, 3000), length=st.integers(1, 700),
       cut=st.integers(0, 700), layout=layouts)
def test_entries_depend_only_on_their_position(d_model: int, start: int, length: int, cut: int, layout: str) -> None:
    """Any split of a range, and explicit positions, give the same entries (so a grown cache is exact)."""
    cut = min(cut, length - 1)
    whole = sinusoidal_table(length, d_model, offset=start, layout=layout)
    head = sinusoidal_table(cut, d_model, offset=start, layout=layout) if cut else whole[:0]
    rest = sinusoidal_table(length - cut, d_model, offset=start + cut, layout=layout)
    assert torch.allclose(torch.cat([head, rest]), whole, **SAME)
    shuffled = torch.randperm(length, generator=torch.Generator().manual_seed(start)) + start
    assert torch.allclose(sinusoidal_table(None, d_model, positions=shuffled, layout=layout), whole[shuffled - start],
                          **SAME)


def test_positions_any_shape_and_seq_len_agreement() -> None:
    ids = torch.tensor([[3, 1], [0, 70000]])
    table = sinusoidal_table(None, 8, positions=ids)
    assert table.shape == (2, 2, 8)
    assert torch.allclose(table[1, 1], sinusoidal_table(1, 8, offset=70000)[0], atol=2 * F32_TOL)
    assert torch.equal(sinusoidal_table(3, 8, positions=[5, 6, 7]), sinusoidal_table(None, 8, positions=[5, 6, 7]))


def test_odd_width_pad_rule() -> None:
    padded = sinusoidal_table(20, 9, odd="pad")
    assert torch.equal(padded[:, :8], sinusoidal_table(20, 8))
    assert torch.equal(padded[:, 8], torch.zeros(20))
    assert torch.equal(sinusoidal_table(4, 1, odd="pad"), torch.zeros(4, 1))
    rotation = rotation_matrix(5, 9, odd="pad")
    exact = sinusoidal_table(30, 9, odd="pad", dtype=torch.float64)
    assert torch.allclose(exact[:25] @ rotation.T, exact[5:], atol=1e-12)


# --------------------------------------------------------------------------- module
def test_module_adds_table_and_keeps_no_state() -> None:
    module = SinusoidalPositionalEncoding(16, max_len=8)
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(module(x), x + sinusoidal_table(5, 16), **SAME)
    assert module.state_dict() == {} and list(module.parameters()) == []
    assert "table" in dict(module.named_buffers())


def test_module_grows_on_demand() -> None:
    module = SinusoidalPositionalEncoding(8, max_len=4)
    x = torch.zeros(1, 11, 8)
    out = module(x)
    assert module.max_len >= 11
    assert max_err(out[0], sinusoidal_reference(torch.arange(11), 8)) < F32_TOL
    module(torch.zeros(1, 12, 8))
    assert module.max_len == 22  # doubles: amortised growth
    ids = torch.tensor([0, 500, 3])
    out = module(torch.zeros(1, 3, 8), position_ids=ids)
    assert module.max_len >= 501
    assert max_err(out[0], sinusoidal_reference(ids, 8)) < F32_TOL


@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(1, 300), min_size=1, max_size=5))
def test_module_any_sequence_of_lengths(lengths: list[int]) -> None:
    module = SinusoidalPositionalEncoding(6, max_len=2)
    for n in lengths:
        assert max_err(module(torch.zeros(1, n, 6))[0], sinusoidal_reference(torch.arange(n), 6)) < F32_TOL


def test_module_follows_dtype_exactly() -> None:
    module = SinusoidalPositionalEncoding(32, max_len=16)
    out = module(torch.zeros(1, 300, 32, dtype=torch.float64))
    assert out.dtype == torch.float64 and module.table.dtype == torch.float64
    assert max_err(out[0], sinusoidal_reference(torch.arange(300), 32)) < 1e-13
    bf = module(torch.zeros(2, 10, 32, dtype=torch.bfloat16))
    assert bf.dtype == torch.bfloat16
    # .double() casts the buffer; the module must rebuild it instead of trusting the cast
    module = SinusoidalPositionalEncoding(32, max_len=50000).double()
    ids = torch.tensor([49999])
    out = module(torch.zeros(1, 1, 32, dtype=torch.float64), position_ids=ids)
    assert max_err(out[0], sinusoidal_reference(ids, 32)) < 1e-10  # float32 would be ~1e-7


def test_module_follows_device() -> None:
    module = SinusoidalPositionalEncoding(8, max_len=4)
    out = module(torch.zeros(2, 6, 8, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 6, 8)
    assert module.table.device.type == "meta"
    assert sinusoidal_table(3, 8, device="meta").device.type == "meta"


def test_module_batch_position_ids_and_layout() -> None:
    module = SinusoidalPositionalEncoding(10, layout="concatenated", frequencies="endpoint")
    ids = torch.tensor([[0, 1, 2], [7, 8, 9]])
    out = module(torch.zeros(2, 3, 10), position_ids=ids)
    expected = sinusoidal_reference(ids, 10, layout="concatenated", frequencies="endpoint")
    assert max_err(out, expected) < F32_TOL


def test_module_dropout_only_in_training() -> None:
    module = SinusoidalPositionalEncoding(8, dropout=0.5)
    x = torch.ones(4, 16, 8)
    module.eval()
    assert torch.allclose(module(x), x + sinusoidal_table(16, 8), **SAME)
    module.train()
    torch.manual_seed(0)
    assert (module(x) == 0).any()


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: sinusoidal_table(0, 8), ValueError, "seq_len"),
        (lambda: sinusoidal_table(2.5, 8), TypeError, "seq_len"),
        (lambda: sinusoidal_table(True, 8), TypeError, "seq_len"),
        (lambda: sinusoidal_table(None, 8), ValueError, "seq_len"),
        (lambda: sinusoidal_table(4, 7), ValueError, "got 7"),
        (lambda: sinusoidal_table(4, 0), ValueError, "d_model"),
        (lambda: sinusoidal_table(4, 8, base=0.0), ValueError, "base"),
        (lambda: sinusoidal_table(4, 8, base=float("nan")), ValueError, "base"),
        (lambda: sinusoidal_table(4, 8, dtype=torch.int64), ValueError, "dtype"),
        (lambda: sinusoidal_table(4, 8, layout="paper"), ValueError, "layout"),
        (lambda: sinusoidal_table(4, 8, frequencies="fairseq"), ValueError, "frequencies"),
        (lambda: sinusoidal_table(4, 7, odd="zero"), ValueError, "odd"),
        (lambda: sinusoidal_table(4, 8, offset=-1), ValueError, "offset"),
        (lambda: sinusoidal_table(None, 8, positions=[0, -3]), ValueError, "positions"),
        (lambda: sinusoidal_table(None, 8, positions=[0.5]), TypeError, "positions"),
        (lambda: sinusoidal_table(3, 8, positions=[0, 1]), ValueError, "seq_len=3"),
        (lambda: sinusoidal_table(None, 8, positions=[0, 1], offset=2), ValueError, "offset"),
        (lambda: rotation_matrix(1.5, 8), TypeError, "k"),
        (lambda: rotation_matrix(1, 9), ValueError, "got 9"),
        (lambda: offset_dot_product([0.5], 8), TypeError, "offsets"),
        (lambda: exact_integer_limit(torch.int32), ValueError, "dtype"),
        (lambda: SinusoidalPositionalEncoding(8, max_len=0), ValueError, "max_len"),
        (lambda: SinusoidalPositionalEncoding(8, dropout=1.5), ValueError, "dropout"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.zeros(2, 3, 6)), ValueError, "d_model=8"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.zeros(3, 8)), ValueError, "(batch, seq_len"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.zeros(1, 3, 8, dtype=torch.long)), TypeError, "floating"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.zeros(1, 3, 8), position_ids=torch.arange(4)), ValueError,
         "position_ids"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.zeros(1, 2, 8), position_ids=torch.tensor([0, -1])),
         ValueError, "position_ids"),
    ],
)
def test_clear_errors(call, error, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_unvalidated_recipe_fails_like_the_tutorials_on_odd_widths() -> None:
    with pytest.raises(ValueError, match="d_model"):
        float32_recipe_table(10, 7)
    with pytest.raises(RuntimeError):
        float32_recipe_table(10, 7, validate=False)
    assert torch.equal(float32_recipe_table(10, 8, validate=False), float32_recipe_table(10, 8))
