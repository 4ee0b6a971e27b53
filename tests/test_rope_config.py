"""posenc.rope_config against the installed transformers (5.23): every rope_type the book discusses gives
the same inverse frequencies and attention factor, to float32 rounding; the config reader's errors."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
import torch

from posenc.relative import rope_inverse_frequencies
from posenc.rope_config import (
    ROPE_TYPES,
    check_rope_frequencies,
    frequency_mismatch,
    layer_types,
    rope_settings,
    softmax_scale,
)

#: float32 rounding: transformers computes in float32 (about 6e-8 per operation); the largest relative gap
#: seen over these configs is 3.3e-7 (Llama 3.1's blended pairs).
RTOL = 1e-6

_LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
#: name -> (config dict, seq_len values to compare at). RoPE fields as the named models ship them.
CASES: dict[str, tuple[dict[str, Any], tuple[int | None, ...]]] = {
    "default (Llama 3)": ({"hidden_size": 4096, "num_attention_heads": 32,
                          "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}, (None,)),
    "linear (Gemma 3 global)": ({"hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
                                 "rope_parameters": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}, (None,)),
    "dynamic": ({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
                 "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}}, (None, 2000, 4096, 9000)),
    "yarn (Qwen3 x4)": ({"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
                         "max_position_embeddings": 131072,
                         "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6,
                                             "original_max_position_embeddings": 32768}}, (None,)),
    "yarn (DeepSeek-V3, mscale)": ({"hidden_size": 7168, "num_attention_heads": 128, "head_dim": 64,
                                    "max_position_embeddings": 163840,
                                    "rope_parameters": {"rope_type": "yarn", "factor": 40.0, "rope_theta": 1e4,
                                                        "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,
                                                        "mscale_all_dim": 1.0,
                                                        "original_max_position_embeddings": 4096}}, (None,)),
    "yarn (gpt-oss, not truncated)": ({"hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64,
                                       "max_position_embeddings": 131072,
                                       "rope_parameters": {"rope_type": "yarn", "factor": 32.0, "rope_theta": 150000.0,
                                                           "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                                                           "original_max_position_embeddings": 4096}}, (None,)),
    "llama3 (Llama 3.1)": ({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                            "rope_parameters": {**_LLAMA3, "factor": 8.0}}, (None,)),
    "llama3 (Llama 3.2 1B)": ({"hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
                               "max_position_embeddings": 131072, "rope_parameters": {**_LLAMA3, "factor": 32.0}},
                              (None,)),
    "llama3 (Llama 4 Scout, low = high = 1)": ({"hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                                                "max_position_embeddings": 10485760,
                                                "rope_parameters": {**_LLAMA3, "factor": 16.0, "high_freq_factor": 1.0}},
                                               (None,)),
    "longrope (Phi-3 style)": ({"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
                                "original_max_position_embeddings": 4096,
                                "rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4,
                                                    "short_factor": [1.0 + 0.01 * i for i in range(48)],
                                                    "long_factor": [1.0 + 0.5 * i for i in range(48)]}},
                               (None, 4096, 4097, 20000)),
    "proportional (Gemma 4 global)": ({"hidden_size": 2560, "num_attention_heads": 8, "head_dim": 512,
                                       "rope_parameters": {"rope_type": "proportional", "rope_theta": 1e6,
                                                           "partial_rotary_factor": 0.25}}, (None,)),
    "yarn (the book's realistic regime)": ({"hidden_size": 64, "num_attention_heads": 1, "head_dim": 64,
                                            "max_position_embeddings": 2048,
                                            "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4,
                                                                "original_max_position_embeddings": 512}}, (None,)),
    "yarn on a partial head": ({"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
                                "max_position_embeddings": 131072,
                                "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6,
                                                    "partial_rotary_factor": 0.5,
                                                    "original_max_position_embeddings": 32768}}, (None,)),
}


@pytest.fixture(scope="module")
def transformers_rope() -> Any:
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    assert transformers.__version__ == "5.23.0"

    def compute(config: dict[str, Any], seq_len: int | None) -> tuple[torch.Tensor, float]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Scout's low == high draws a validation warning, as on the Hub
            hf = transformers.LlamaConfig(**config)
        kind = hf.rope_parameters["rope_type"]
        if kind == "default":
            inv, factor = LlamaRotaryEmbedding.compute_default_rope_parameters(hf)
        else:
            inv, factor = ROPE_INIT_FUNCTIONS[kind](hf, None, seq_len=seq_len)
        return inv.double(), float(factor)

    return compute


def test_every_rope_type_is_covered() -> None:
    covered = {rope_settings(config).rope_type for config, _ in CASES.values()}
    assert covered == set(ROPE_TYPES)


@pytest.mark.parametrize("name", list(CASES))
def test_frequencies_and_attention_factor_agree_with_transformers(name: str, transformers_rope: Any) -> None:
    config, lengths = CASES[name]
    settings = rope_settings(config)
    for seq_len in lengths:
        expected, attention = transformers_rope(config, seq_len)
        ours = settings.inverse_frequencies(seq_len=seq_len)
        assert ours.dtype == torch.float64 and ours.shape == expected.shape, (name, seq_len)
        assert torch.allclose(ours, expected, rtol=RTOL, atol=0), (name, seq_len)
        assert settings.attention_scaling == pytest.approx(attention, rel=1e-12), name
        assert check_rope_frequencies(config, expected, seq_len=seq_len).startswith(f"{len(ours)} frequencies")


def test_partial_default_agrees_with_glm(transformers_rope: Any) -> None:
    from transformers import Glm4MoeConfig
    from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeRotaryEmbedding

    config = {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128, "partial_rotary_factor": 0.5,
              "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, _ = Glm4MoeRotaryEmbedding.compute_default_rope_parameters(Glm4MoeConfig(**config))
    ours = rope_settings(config).inverse_frequencies()
    assert ours.shape == (32,) and torch.allclose(ours, expected.double(), rtol=RTOL, atol=0)


def test_nested_layer_types_as_transformers_reads_gemma_3() -> None:
    from transformers import Gemma3TextConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = Gemma3TextConfig(head_dim=256, hidden_size=2560, num_attention_heads=8,
                              rope_scaling={"rope_type": "linear", "factor": 8.0})
    config = {"head_dim": 256, "hidden_size": 2560, "num_attention_heads": 8, "layer_types": list(hf.layer_types),
              "rope_parameters": {key: dict(value) for key, value in hf.rope_parameters.items()}}
    assert set(layer_types(config)) == {"sliding_attention", "full_attention"}
    local, global_ = rope_settings(config, layer_type="sliding_attention"), rope_settings(config, layer_type="full_attention")
    assert (local.rope_type, local.rope_theta) == ("default", 10000.0)
    assert (global_.rope_type, global_.factor, global_.rope_theta) == ("linear", 8.0, 1e6)


def test_old_and_new_keys_read_the_same() -> None:
    new = CASES["llama3 (Llama 3.1)"][0]
    old = {k: v for k, v in new.items() if k != "rope_parameters"}
    old["rope_theta"] = 500000.0
    old["rope_scaling"] = {("type" if k == "rope_type" else k): v for k, v in new["rope_parameters"].items()
                           if k != "rope_theta"}
    assert rope_settings(old) == rope_settings(new)


def test_the_check_names_an_ignored_scaling() -> None:
    config = CASES["llama3 (Llama 3.1)"][0]
    with pytest.raises(AssertionError, match=r"pairs 29–63 of 64 .* scaling was ignored"):
        check_rope_frequencies(config, rope_inverse_frequencies(128, base=500000.0))
    with pytest.raises(AssertionError, match="the rotated width differs"):
        check_rope_frequencies(config, rope_inverse_frequencies(64, base=500000.0))
    wrong = rope_settings(config).inverse_frequencies().clone()
    wrong[3] *= 1.001
    with pytest.raises(AssertionError, match=r"pairs 3 of 64") as error:
        check_rope_frequencies(config, wrong)
    assert "ignored" not in str(error.value)
    assert frequency_mismatch(torch.tensor([1.0, 0.0]), [1.0, 1e-9]) == [1]


def test_softmax_scale_carries_deepseeks_temperature() -> None:
    settings = rope_settings(CASES["yarn (DeepSeek-V3, mscale)"][0])
    assert settings.attention_scaling == 1.0
    assert softmax_scale(192, settings) == pytest.approx(192**-0.5 * (0.1 * math.log(40) + 1) ** 2)
    assert softmax_scale(192) == pytest.approx(192**-0.5)


@pytest.mark.parametrize(("config", "kwargs", "error", "match"), [
    ([1, 2], {}, TypeError, "config must be a dict"),
    ({"num_attention_heads": 4}, {}, ValueError, "'head_dim', or 'hidden_size'"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "xpos"}}, {}, ValueError, "rope_type must be one of"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "linear"}}, {}, ValueError, "needs a 'factor'"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "llama3", "factor": 8.0}}, {}, ValueError,
     "needs 'original_max_position_embeddings'"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "linear", "factor": 2.0}, "rope_scaling": {"factor": 4.0}}, {},
     ValueError, "both 'rope_parameters' and 'rope_scaling'"),
    ({"head_dim": 64, "rope_parameters": "yarn"}, {}, TypeError, r"config\['rope_parameters'\] must be a dict"),
    ({"head_dim": 64, "rope_parameters": {"sliding_attention": {}, "full_attention": {}}}, {}, ValueError,
     "pass layer_type"),
    ({"head_dim": 64, "rope_parameters": {"sliding_attention": {}, "full_attention": {}}},
     {"layer_type": "chunked_attention"}, ValueError, "layer_type must be one of"),
    ({"head_dim": 64}, {"layer_type": "full_attention"}, ValueError, "no nesting"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 1.5}}, {}, ValueError,
     "partial_rotary_factor must be in"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "yarn", "factor": -2.0}, "max_position_embeddings": 8}, {},
     ValueError, "'factor' must be a finite number > 0"),
    ({"head_dim": 64, "rope_parameters": {"rope_type": "yarn", "truncate": "no"}, "max_position_embeddings": 8}, {},
     TypeError, "'truncate' must be true or false"),
])
def test_bad_configs_are_named(config: Any, kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        rope_settings(config, **kwargs)
