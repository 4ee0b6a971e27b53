"""Tests for posenc.registry, the absolute schemes of posenc.schemes, and posenc.models.TinyTransformer."""

from __future__ import annotations

import pytest
import torch

from posenc.learned import INIT_STRATEGIES
from posenc.models import TinyTransformer, reversal_gap
from posenc import registry
from posenc.registry import (
    available_schemes,
    builtin_specs,
    make_position_scheme,
    register_scheme,
    scheme_spec,
    scheme_style,
    unregister_scheme,
)
from posenc.schemes import LearnedScheme, NoPosition, PositionScheme, SinusoidalScheme
from posenc.sinusoidal import sinusoidal_table


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the registry for one test: schemes it registers vanish afterwards."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def _model(**kwargs: object) -> TinyTransformer:
    torch.manual_seed(0)
    defaults: dict[str, object] = dict(d_model=16, n_heads=2, n_layers=1, max_len=8)
    defaults.update(kwargs)
    return TinyTransformer(10, 5, **defaults).eval()  # type: ignore[arg-type]


def test_builtin_schemes_are_registered_first() -> None:
    assert available_schemes()[:3] == ["none", "sinusoidal", "learned"]


def test_register_scheme_and_factory_arguments(own_registry: None) -> None:
    seen: dict[str, object] = {}

    def factory(**kwargs: object) -> PositionScheme:
        seen.update(kwargs)
        return NoPosition()

    register_scheme("test-only-scheme", factory)
    scheme = make_position_scheme("test-only-scheme", d_model=8, n_heads=2, max_len=5, colour="red")
    assert isinstance(scheme, NoPosition)
    assert seen == {"d_model": 8, "n_heads": 2, "max_len": 5, "colour": "red"}
    assert "test-only-scheme" in available_schemes()
    assert scheme_spec("test-only-scheme").variants == ()  # a reader's scheme joins no stored grid
    unregister_scheme("test-only-scheme")
    assert "test-only-scheme" not in available_schemes()
    with pytest.raises(ValueError, match="name must be one of"):
        unregister_scheme("rope")  # built-in schemes stay


def test_a_scheme_is_one_registry_entry() -> None:
    """Colour, line style, marker, grid variants, suite options and model-dependent defaults all
    come from the registry; the capabilities from the class the entry names."""
    specs = {spec.name: spec for spec in builtin_specs()}
    assert list(specs) == available_schemes()
    styles = [scheme_style(name) for name in specs]
    assert len(set(styles)) == len(styles), "two schemes look alike in a figure"
    assert [s.name for s in builtin_specs() if s.scheme_type.supports_scaling] == ["rope"]
    assert [s.name for s in builtin_specs() if s.scheme_type.has_table] == ["learned"]
    assert specs["t5_bias"].options_for(causal=True) == {"bidirectional": False}
    assert specs["t5_bias"].options_for(causal=False, options={"bidirectional": False}) == {"bidirectional": False}
    assert _model(position="t5_bias", causal=True).position.bias.bidirectional is False
    assert _model(position="t5_bias").position.bias.bidirectional is True
    assert scheme_style("no-such-scheme") == ("#666666", "solid", "circle")

def test_factory_must_return_a_scheme(own_registry: None) -> None:
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


def test_hooks_are_called(own_registry: None) -> None:
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


def test_concat_needs_an_additive_scheme_and_sane_widths(own_registry: None) -> None:
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


# -- the anchor token (bos_token) and the reversal property ------------------------------------
def test_anchor_is_off_by_default_and_leaves_every_other_weight_alone() -> None:
    plain, anchored = _model(position="alibi"), _model(position="alibi", bos_token=True)
    assert plain.bos is None and not plain.bos_token
    assert set(anchored.state_dict()) - set(plain.state_dict()) == {"bos"}
    for name, value in plain.state_dict().items():
        assert torch.equal(value, anchored.state_dict()[name]), name  # the anchor is drawn last
    tokens = torch.randint(0, 10, (2, 6), generator=torch.Generator().manual_seed(0))
    assert anchored(tokens).shape == plain(tokens).shape == (2, 6, 5)
    with pytest.raises(TypeError, match="bos_token must be True or False"):
        _model(bos_token=1)


def test_anchor_sits_at_position_zero_and_shifts_the_tokens() -> None:
    model = _model(position="sinusoidal", bos_token=True)
    tokens = torch.tensor([[3, 1, 4]])
    x = model.embed(tokens)
    table = sinusoidal_table(4, 16)
    assert x.shape == (1, 4, 16)
    assert model.bos is not None
    assert torch.allclose(x[0, 0], model.bos + table[0], atol=1e-6)
    assert torch.allclose(x[0, 1:], model.token_embedding(tokens)[0] + table[1:], atol=1e-6)
    shifted = model.embed(tokens, position_ids=torch.tensor([5, 6, 7]))
    assert torch.allclose(shifted[0, 1:], model.token_embedding(tokens)[0] + sinusoidal_table(3, 16, offset=6),
                          atol=1e-6)
    assert torch.allclose(shifted[0, 0], x[0, 0])  # the anchor stays at 0 whatever the token positions


def test_anchor_gets_one_more_table_row() -> None:
    model = _model(position="learned", bos_token=True)
    assert isinstance(model.position, LearnedScheme) and model.position.table_len == 9
    assert model(torch.zeros(1, 8, dtype=torch.long)).shape == (1, 8, 5)  # max_len tokens + the anchor fit
    with pytest.raises(ValueError):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_anchor_with_a_causal_mask_keeps_the_prefix_property() -> None:
    model = _model(position="alibi", causal=True, bos_token=True)
    tokens = torch.randint(0, 10, (1, 6), generator=torch.Generator().manual_seed(2))
    assert torch.allclose(model(tokens[:, :4]), model(tokens)[:, :4], atol=1e-6)


def test_reversal_gap_known_value_on_a_hand_made_model() -> None:
    # A model that copies its position vector into the logits: f(x)[i] = sinusoid(i) (tokens unused),
    # so the gap is max |sinusoid(n-1-i) - sinusoid(i)|, computable from the table alone.
    model = _model(position="sinusoidal", n_layers=1)
    with torch.no_grad():
        model.token_embedding.weight.zero_()
        for p in model.blocks.parameters():
            p.zero_()
        model.norm.weight.fill_(1.0)
        model.norm.bias.zero_()
        model.head.weight.zero_()
        model.head.bias.zero_()
        model.head.weight[0, 1] = 1.0  # logit 0 = LayerNorm(position vector)[1]
    tokens = torch.zeros(1, 4, dtype=torch.long)
    table = torch.nn.functional.layer_norm(sinusoidal_table(4, 16), (16,))[:, 1]
    assert reversal_gap(model, tokens) == pytest.approx(float((table.flip(0) - table).abs().max()), abs=1e-6)
    assert reversal_gap(model, tokens) > 0.1


@pytest.mark.parametrize("position", ["alibi", "none"])
def test_a_distance_only_encoder_cannot_tell_an_input_from_its_reverse(position: str) -> None:
    model = _model(position=position, n_layers=2).train()
    tokens = torch.randint(0, 10, (4, 9), generator=torch.Generator().manual_seed(3))
    assert reversal_gap(model, tokens) < 1e-5
    assert model.training  # restored
    # Consequence: on an input that reads the same both ways, position i and n-1-i get the same logits,
    # so no such model can learn "mark the first token" (the first and last positions always agree).
    palindrome = torch.tensor([[1, 2, 3, 2, 1]])
    out = model.eval()(palindrome)
    assert torch.allclose(out[0, 0], out[0, -1], atol=1e-5)
    assert torch.allclose(out[0], out[0].flip(0), atol=1e-5)


def test_the_anchor_breaks_the_symmetry_of_alibi_but_not_of_no_position() -> None:
    tokens = torch.randint(0, 10, (4, 9), generator=torch.Generator().manual_seed(3))
    assert reversal_gap(_model(position="alibi", bos_token=True), tokens) > 1e-2
    palindrome = torch.tensor([[1, 2, 3, 2, 1]])
    out = _model(position="alibi", bos_token=True)(palindrome)
    assert (out[0, 0] - out[0, -1]).abs().max() > 1e-3
    # Without a distance signal the anchor is just one more token that every position sees alike.
    assert reversal_gap(_model(position="none", bos_token=True), tokens) < 1e-5


@pytest.mark.parametrize(
    "kwargs",
    [dict(position="t5_bias"), dict(position="rope"), dict(position="alibi", causal=True)],
    ids=["t5-bidirectional", "rope", "alibi-causal"],
)
def test_direction_aware_models_have_a_reversal_gap(kwargs: dict[str, object]) -> None:
    tokens = torch.randint(0, 10, (4, 9), generator=torch.Generator().manual_seed(3))
    assert reversal_gap(_model(**kwargs), tokens) > 1e-2


def test_reversal_gap_errors() -> None:
    model = _model(position="alibi")
    with pytest.raises(TypeError, match="model must be a TinyTransformer"):
        reversal_gap(torch.nn.Linear(2, 2), torch.zeros(1, 3, dtype=torch.long))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"tokens must be a tensor of shape \(batch, seq_len\)"):
        reversal_gap(model, torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one token"):
        reversal_gap(model, torch.zeros(1, 0, dtype=torch.long))
