"""Tests for posenc.registry, the absolute schemes of posenc.schemes, and posenc.models.TinyTransformer."""

from __future__ import annotations

import pytest
import torch

from posenc.learned import INIT_STRATEGIES
from posenc.models import TinyTransformer
from posenc.registry import available_schemes, make_position_scheme, register_scheme
from posenc.schemes import LearnedScheme, NoPosition, PositionScheme, SinusoidalScheme
from posenc.sinusoidal import sinusoidal_table


def _model(**kwargs: object) -> TinyTransformer:
    torch.manual_seed(0)
    defaults: dict[str, object] = dict(d_model=16, n_heads=2, n_layers=1, max_len=8)
    defaults.update(kwargs)
    return TinyTransformer(10, 5, **defaults).eval()  # type: ignore[arg-type]


def test_builtin_schemes_are_registered_first() -> None:
    assert available_schemes()[:3] == ["none", "sinusoidal", "learned"]


def test_register_scheme_and_factory_arguments() -> None:
    seen: dict[str, object] = {}

    def factory(**kwargs: object) -> PositionScheme:
        seen.update(kwargs)
        return NoPosition()

    register_scheme("test-only-scheme", factory)
    scheme = make_position_scheme("test-only-scheme", d_model=8, n_heads=2, max_len=5, colour="red")
    assert isinstance(scheme, NoPosition)
    assert seen == {"d_model": 8, "n_heads": 2, "max_len": 5, "colour": "red"}
    assert "test-only-scheme" in available_schemes()


def test_factory_must_return_a_scheme() -> None:
    register_scheme("test-bad-scheme", lambda **_: torch.nn.Identity())
    with pytest.raises(TypeError, match="not a PositionScheme"):
        make_position_scheme("test-bad-scheme", d_model=8, n_heads=2, max_len=5)


def test_unknown_scheme_and_options_are_named() -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        make_position_scheme("fourier", d_model=8, n_heads=2, max_len=4)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['colour'\] for scheme 'learned'"):
        make_position_scheme("learned", d_model=8, n_heads=2, max_len=4, colour="red")
    with pytest.raises(ValueError, match="init must be one of"):
        make_position_scheme("learned", d_model=8, n_heads=2, max_len=4, init="xavier")
    with pytest.raises(ValueError, match="extrapolation must be one of"):
        make_position_scheme("learned", d_model=8, n_heads=2, max_len=4, extrapolation="wrap")


def test_sinusoidal_scheme_adds_the_table_at_any_position() -> None:
    scheme = make_position_scheme("sinusoidal", d_model=8, n_heads=2, max_len=4)
    assert scheme.max_len is None
    x = torch.zeros(1, 3, 8)
    positions = torch.tensor([0, 5, 100])  # far past the initial cache of 4 rows
    assert torch.allclose(scheme.embed(x, positions)[0], sinusoidal_table(101, 8)[positions], atol=1e-6)


def test_learned_scheme_uses_its_table_and_raises_past_it() -> None:
    scheme = make_position_scheme("learned", d_model=8, n_heads=2, max_len=4, init="gpt2")
    assert isinstance(scheme, LearnedScheme) and scheme.max_len == 4 and scheme.table_len == 4
    x = torch.zeros(2, 4, 8)
    assert torch.equal(scheme.embed(x, torch.arange(4))[0], scheme.weight.detach())
    with pytest.raises(ValueError, match="seq_len=6 exceeds max_len=4"):
        scheme.embed(torch.zeros(1, 6, 8), torch.arange(6))
    with pytest.raises(ValueError, match="must be < max_len=4"):
        scheme.embed(torch.zeros(1, 2, 8), torch.tensor([1, 7]))


@pytest.mark.parametrize("init", INIT_STRATEGIES)
def test_learned_inits_reach_the_table(init: str) -> None:
    scheme = make_position_scheme("learned", d_model=8, n_heads=2, max_len=4, init=init)
    assert scheme.embedding.init == init


def test_learned_scheme_with_workaround_accepts_any_position() -> None:
    scheme = make_position_scheme("learned", d_model=4, n_heads=1, max_len=4, extrapolation="clip")
    assert scheme.max_len is None
    out = scheme.embed(torch.zeros(1, 6, 4), torch.arange(6))
    assert torch.equal(out[0, 5], scheme.weight[3].detach())
    scheme.set_extrapolation("modular")
    assert torch.equal(scheme.embed(torch.zeros(1, 6, 4), torch.arange(6))[0, 5], scheme.weight[1].detach())
    scheme.set_extrapolation(None)
    assert scheme.max_len == 4
    # inside the table the workaround changes nothing
    scheme.set_extrapolation("interpolate")
    assert torch.equal(scheme.embed(torch.zeros(1, 4, 4), torch.arange(4))[0], scheme.weight.detach())


def test_tiny_transformer_shapes_and_position_ids() -> None:
    model = _model(position="learned")
    tokens = torch.randint(0, 10, (3, 6))
    assert model(tokens).shape == (3, 6, 5)
    same = model(tokens, position_ids=torch.arange(6))
    assert torch.allclose(model(tokens), same)
    shifted = model(tokens, position_ids=torch.arange(6).expand(3, 6) + 1)
    assert not torch.allclose(model(tokens), shifted)


def test_without_positions_the_encoder_is_permutation_equivariant() -> None:
    model = _model(position="none")
    tokens = torch.randint(0, 10, (1, 7))
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(model(tokens)[:, perm], model(tokens[:, perm]), atol=1e-5)
    with_pos = _model(position="sinusoidal")
    assert not torch.allclose(with_pos(tokens)[:, perm], with_pos(tokens[:, perm]), atol=1e-3)


def test_causal_mask_blocks_the_future() -> None:
    model = _model(position="sinusoidal", causal=True)
    tokens = torch.randint(0, 10, (1, 6))
    changed = tokens.clone()
    changed[0, 4] = (changed[0, 4] + 1) % 10
    out, out_changed = model(tokens), model(changed)
    assert torch.allclose(out[:, :4], out_changed[:, :4], atol=1e-6)
    assert not torch.allclose(out[:, 4:], out_changed[:, 4:])


def test_hooks_are_called() -> None:
    calls: list[str] = []

    class Spy(PositionScheme):
        def rotate(self, q, k, positions):  # type: ignore[no-untyped-def]
            calls.append("rotate")
            return q, k

        def attention_bias(self, positions):  # type: ignore[no-untyped-def]
            calls.append("bias")
            n = positions.shape[-1]
            return torch.zeros(2, n, n)

    register_scheme("test-spy", lambda **_: Spy())
    _model(position="test-spy", n_layers=3)(torch.randint(0, 10, (1, 4)))
    assert calls.count("rotate") == 3 and calls.count("bias") == 1


def test_concat_keeps_width_and_block_parameters() -> None:
    add = _model(position="learned")
    cat = _model(position="learned", combine="concat")
    assert cat.d_pos == 8 and cat.token_embedding.embedding_dim == 8
    assert cat.position.weight.shape == (8, 8)
    blocks = lambda m: sum(p.numel() for p in m.blocks.parameters())  # noqa: E731
    assert blocks(add) == blocks(cat)
    x = cat.embed(torch.randint(0, 10, (2, 5)))
    assert x.shape == (2, 5, 16)
    # the second half of every vector is the position vector alone
    assert torch.allclose(x[0, :, 8:], cat.position.weight[:5].detach())
    assert cat(torch.randint(0, 10, (2, 5))).shape == (2, 5, 5)


def test_concat_needs_an_additive_scheme_and_sane_widths() -> None:
    class Rotating(PositionScheme):
        def rotate(self, q, k, positions):  # type: ignore[no-untyped-def]
            return q, k

    register_scheme("test-rotating", lambda **_: Rotating())
    with pytest.raises(ValueError, match="needs a scheme that adds position vectors"):
        _model(position="test-rotating", combine="concat")
    with pytest.raises(ValueError, match="d_pos must be < d_model"):
        _model(combine="concat", d_pos=16)
    with pytest.raises(ValueError, match="d_pos is only used"):
        _model(d_pos=4)


def test_model_input_errors() -> None:
    model = _model(position="learned")
    with pytest.raises(ValueError, match="seq_len=9 exceeds max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens must be in \[0, 10\)"):
        model(torch.full((1, 3), 10))
    with pytest.raises(ValueError, match="tokens must have shape"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="position_ids must have shape"):
        model(torch.zeros(1, 3, dtype=torch.long), position_ids=torch.arange(4))
    with pytest.raises(ValueError, match="combine must be one of"):
        _model(combine="mix")
    with pytest.raises(ValueError, match="divisible"):
        _model(d_model=15, n_heads=2, position="none")


def test_sinusoidal_cache_grows_and_table_matches() -> None:
    scheme = SinusoidalScheme(8, initial_len=4)
    assert torch.allclose(scheme.table(10), sinusoidal_table(10, 8))
    assert scheme.encoding.max_len >= 10
