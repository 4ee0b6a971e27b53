"""What shipped models do with positions: a sourced table, as data.

Each :class:`ModelRow` states, for one model (or family), its release, its position scheme,
RoPE base, long-context scaling, context length, the layers without position encoding and the
share of each head that rotates. ``sources`` are keys of the book's bibliography
(``book/references.bib``); ``provenance`` says which source gives which value, and where
a value could not be read in any source the row says so ("not read") instead of guessing.

The table is dated once, :data:`AS_OF`: it describes the sources as they were read then.
Hugging Face configuration files change after release (Llama 3.2's scaling factor, Llama 4
Scout's, Mixtral's window were all corrected on the Hub), so a row describes the configs and
reference code it cites, not every copy of the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from posenc.checks import check_instance, check_text, check_text_sequence

__all__ = ["AS_OF", "COLUMNS", "NOT_READ", "ModelRow", "ROWS", "rows_table", "markdown_table", "provenance_markdown"]

#: When the sources of :data:`ROWS` were read.
AS_OF = "November 2026"
#: The table's columns, in order (the last one holds the citations).
COLUMNS: tuple[str, ...] = ("Model", "Released", "Position scheme", "Base θ", "Scaling", "Context",
                            "Layers without positions", "Share rotated", "Source")
_TICK = chr(96)  # a backtick (MyST roles)
#: What a cell says when no source read gives the value.
NOT_READ = "not read"


@dataclass(frozen=True)
class ModelRow:
    """One model of the landscape table (strings as the table shows them; Markdown allowed).

    Attributes:
        model, released, scheme, base, scaling, context, position_free, partial: the cells.
        sources: bibliography keys, at least one.
        provenance: which source gives which value (shown below the table).
    """

    model: str
    released: str
    scheme: str
    base: str
    scaling: str
    context: str
    position_free: str
    partial: str
    sources: tuple[str, ...]
    provenance: str

    def __post_init__(self) -> None:
        for name in ("model", "released", "scheme", "base", "scaling", "context", "position_free", "partial",
                     "provenance"):
            value = check_text(name, getattr(self, name))
            if not value.strip():
                row = self.model if self.model.strip() else "a row"
                raise ValueError(f"{row}: {name} is empty, got {value!r} (write {NOT_READ!r} if no source gives it)")
        sources = check_text_sequence("sources", self.sources, empty=False)
        if not sources:
            raise ValueError(f"{self.model}: sources must hold at least one source (a bibliography key), got "
                             f"{self.sources!r}: every row needs one")
        object.__setattr__(self, "sources", sources)

    def cells(self) -> list[str]:
        """The row's cells in :data:`COLUMNS` order, with the sources as one MyST citation."""
        citation = "{cite:p}" + _TICK + ",".join(self.sources) + _TICK
        return [self.model, self.released, self.scheme, self.base, self.scaling, self.context, self.position_free,
                self.partial, citation]


_TF = "transformers2026source"  # the installed transformers 5.23: model configurations and RoPE code

ROWS: tuple[ModelRow, ...] = (
    ModelRow("BERT", "2018", "learned absolute table", "—", "none: the table has 512 rows", "512", "—", "—",
             ("devlin2019bert",), "Devlin et al. (2019)."),
    ModelRow("GPT-2", "2019", "learned absolute table", "—", "none: the table has 1,024 rows", "1,024", "—", "—",
             ("radford2019language",), "Radford et al. (2019)."),
    ModelRow("T5", "2019", "learned relative bias per head: 32 buckets, logarithmic up to offset 128", "—",
             "relative buckets impose no table limit", "pre-trained on 512", "—", "—",
             ("raffel2020exploring",), "Raffel et al. (2020)."),
    ModelRow("BLOOM", "2022", "ALiBi", "—", "ALiBi", "2,048 (training)", "—", "—",
             ("bigscience2022bloom", "press2022train"), "BigScience (2022)."),
    ModelRow("MPT-7B", "2023", "ALiBi", "—", "ALiBi; the StoryWriter fine-tune runs at 65K+", "2,048", "—", "—",
             ("mosaicml2023mpt",), "MosaicML's release post."),
    ModelRow("Mistral 7B v0.1", "Oct 2023", "RoPE, sliding window of 4,096 in every layer", "10,000", "none",
             "window 4,096 per layer (32 layers reach ≈ 131K)", "none", "1",
             ("jiang2023mistral",), "Jiang et al. (2023)."),
    ModelRow("Mixtral 8x7B", "Jan 2024 (paper)", "RoPE", "1,000,000", "none", "32K", "none", "1",
             ("jiang2024mixtral", _TF),
             "Context: Jiang et al. (2024). Base: transformers' `MixtralConfig` (`default_theta`)."),
    ModelRow("Phi-3-mini-128k", "Apr 2024 (report)", "RoPE", "10,000",
             "`longrope`: 48 short and 48 long factors, switched at 4,096 positions", "128K (131,072)", "none", "1",
             ("abdin2024phi3", _TF),
             "Report: Abdin et al. (2024). Scaling, factor lists and lengths: the model's `config.json` "
             "(microsoft/Phi-3-mini-128k-instruct) as transformers' `Phi3Config` reads it; base: `Phi3Config`."),
    ModelRow("DeepSeek-V2", "May 2024", "multi-head latent attention, RoPE decoupled onto a 64-dim slice", "10,000",
             NOT_READ, "128K", "none", "64 of 192 query/key dims",
             ("deepseek2024v2", "deepseek2024v3code"),
             "Release and context: DeepSeek-V2's README (6 May 2024, 128k). Dimensions: its configuration in "
             "DeepSeek-V3's repository (`config_236B.json`: `qk_rope_head_dim` 64, `qk_nope_head_dim` 128); base: "
             "the reference code's default. Its YaRN settings were not read in a primary source."),
    ModelRow("Llama 3.1", "Jul 2024", "RoPE", "500,000",
             "`llama3`: factor 8, low 1, high 4, from 8,192", "128K", "none", "1",
             ("grattafiori2024llama3", "metallama2024scale"),
             "Release and context: the model card in meta-llama/llama-models (23 July 2024); base: its "
             "`args.py`; factor 8 for 3.1: llama-models issue 241."),
    ModelRow("Gemma 2", "Jul 2024 (report)", "RoPE; local (sliding window 4,096) and global layers alternate",
             "10,000", "none", "8,192", "none", "1",
             ("gemma2024gemma2", _TF), "Report: Gemma Team (2024); window, pattern, base, length: `Gemma2Config`."),
    ModelRow("Qwen2.5 7B–72B", "Sep 2024", "RoPE", "1,000,000",
             "YaRN factor 4 from 32,768, added by the user for long inputs (static)",
             "32,768; 131,072 with YaRN", "none", "1",
             ("qwen2024qwen25", "qwen2025qwen3docs"),
             "Qwen Team (2024); release date: the Qwen repository's news (19 Sep 2024)."),
    ModelRow("Llama 3.2 1B/3B", "Oct 2024 (model card)", "RoPE", "500,000",
             "`llama3`: factor **32**, low 1, high 4, from 8,192", "128K", "none", "1",
             ("metallama2024scale", "tinyvllm2026llama3"),
             "Factor 32 (a post-release fix of the Hub config): llama-models issues 166 and 241; the config's "
             "values are quoted in jmaczan/tiny-vllm pull request 1."),
    ModelRow("ModernBERT", "Dec 2024", "RoPE; global attention every third layer, local (128-token windows) in the others",
             "160,000 global; 10,000 local", "a larger base on the global layers only", "8,192", "none", "1",
             ("warner2024modernbert",), "Warner et al. (2024)."),
    ModelRow("Command R7B", "Dec 2024", "RoPE in three of four layers (sliding window 4,096); the fourth attends "
             "globally without positions", NOT_READ, "none", "128K", "every 4th layer (the global ones)", "1",
             ("cohere2024r7b", _TF),
             "Hugging Face's `cohere2` documentation (released 13 Dec 2024); `Cohere2Attention` rotates only "
             "when the layer has a sliding window. The base of the released config was not read."),
    ModelRow("DeepSeek-V3", "Dec 2024", "multi-head latent attention, RoPE decoupled onto a 64-dim slice",
             "10,000", "YaRN factor 40 from 4,096, β 32/1; its temperature (mscale 1) on the softmax scale",
             "128K", "none", "64 of 192 query/key dims",
             ("deepseek2024v3", "deepseek2024v3code"),
             "Reference code `inference/model.py` and `configs/config_671B.json` in deepseek-ai/DeepSeek-V3; "
             "context: its README; date: the report (arXiv 2412.19437)."),
    ModelRow("Gemma 3 4B/12B/27B", "Mar 2025", "RoPE; five local layers (window 1,024) per global layer",
             "1,000,000 global; 10,000 local", "linear (PI) factor 8, global layers only", "128K (1B: 32K)", "none",
             "1", ("gemma2025gemma3", "mlxvlm2026gemma3"),
             "Gemma Team (2025); global-only scaling: Blaizzy/mlx-vlm pull request 1709."),
    ModelRow("Llama 4 Scout", "Apr 2025", "iRoPE: RoPE with chunked local attention (8,192) in three of four layers",
             "500,000", "`llama3`: factor 16, low = high = 1 (a step, no ramp), from 8,192", "10M",
             "every 4th layer (global attention; an optional query temperature that grows with position)", "1",
             ("meta2025llama4", "metallama2025models"),
             "meta-llama/llama-models `models/llama4` (`args.py`, `model.py`, model card of 5 April 2025)."),
    ModelRow("Llama 4 Maverick", "Apr 2025", "iRoPE, as Scout", "500,000", "none", "1M",
             "every 4th layer", "1", ("meta2025llama4", "metallama2025models"),
             "As Scout; \"only Llama-4-Scout uses scaled rope\" (`args.py`)."),
    ModelRow("Qwen3", "Apr 2025", "RoPE", NOT_READ,
             "YaRN factor 4 from 32,768, added by the user (static)", "32,768; 131,072 with YaRN", "none", "1",
             ("qwen2025qwen3docs",),
             "QwenLM/Qwen3 README (29 Apr 2025) and documentation (vLLM and transformers pages). The base of the "
             "released configs was not read."),
    ModelRow("SmolLM3 3B", "Jul 2025", "RoPE in three of four layers", NOT_READ,
             "YaRN to 128K (the model card: factor 2 from 65,536)", "65,536; 128K with YaRN",
             "every 4th layer", "1", ("huggingface2025smollm3", "huggingface2025smollm3card"),
             "Hugging Face's release post (8 Jul 2025: 'NoPE and using YaRN'); the model card's YaRN block. "
             "The base of the released config was not read."),
    ModelRow("GLM-4.5", "Jul 2025", "RoPE on half of each head", NOT_READ, "none", "131,072", "none", "0.5",
             ("zai2025glm45", _TF),
             "Release: Hugging Face's `glm4_moe` documentation (28 Jul 2025); share rotated and length: "
             "`Glm4MoeConfig` (documented for zai-org/GLM-4.5)."),
    ModelRow("gpt-oss 20B/120B", "Aug 2025", "RoPE; 128-token sliding windows in every other layer; a learned "
             "sink logit per head", "150,000", "YaRN factor 32 from 4,096, β 32/1, ramp not rounded (`truncate: false`)",
             "131,072", "none", "1", ("openai2025gptoss", _TF),
             "openai/gpt-oss reference `gpt_oss/torch/model.py` (first commit 5 Aug 2025); `GptOssConfig`."),
    ModelRow("Qwen3-Next 80B-A3B", "Sep 2025", "linear attention (Gated DeltaNet) in three of four layers; "
             "gated full attention with RoPE in the fourth", NOT_READ, "none", NOT_READ,
             "the three linear-attention layers of every four", "0.25 (of the full-attention heads)",
             ("qwen2025qwen3next", _TF),
             "Release: the Qwen3-Next collection on Hugging Face (Sep 2025); layer pattern and share: "
             "`Qwen3NextConfig` (documented for Qwen/Qwen3-Next-80B-A3B-Instruct)."),
    ModelRow("Gemma 4", "Apr 2026", "sliding-window layers: RoPE; global layers: `proportional` (p-RoPE)",
             "10,000 local; 1,000,000 global", "none", NOT_READ, "none", "0.25 of the global layers' pairs",
             ("gemma2026gemma4rope", _TF),
             "`Gemma4Config` (documented for google/gemma-4-e2b-it) and vLLM's `gemma4_rope`; release month: "
             "support for the model in inference libraries from early April 2026."),
    ModelRow("DeepSeek-V4 Flash", "2026", "sliding-window layers with RoPE; compressed-attention layers with RoPE "
             "of their own", "10,000 sliding; 160,000 compressed", "YaRN factor 16 on the compressed layers only",
             "1,048,576", "none", "64 of 512 query/key dims (the trailing slice)",
             (_TF,),
             "`DeepseekV4Config` in transformers 5.23 (documented for deepseek-ai/DeepSeek-V4-Flash-Base), "
             "including its note that YaRN factor 16 applies only to the compressed layers."),
)


def _check_rows(rows: Any) -> list[ModelRow]:
    """``rows`` as a list of :class:`ModelRow` (a TypeError naming ``rows`` or the first entry that is not one)."""
    if isinstance(rows, str | bytes | ModelRow) or not isinstance(rows, Iterable):
        raise TypeError(f"rows must be a sequence of ModelRow (e.g. ROWS), got {rows!r:.80} of type "
                        f"{type(rows).__name__}")
    listed = list(rows)
    for index, row in enumerate(listed):
        check_instance(f"rows[{index}]", row, ModelRow, what="a posenc.landscape.ModelRow")
    return listed


def rows_table(rows: tuple[ModelRow, ...] = ROWS) -> tuple[list[str], list[list[str]]]:
    """``(headers, cells)`` of the landscape table, in the order of ``rows``."""
    return list(COLUMNS), [row.cells() for row in _check_rows(rows)]


def _cell(text: str) -> str:
    if "|" in text or "\n" in text:
        raise ValueError(f"a table cell cannot hold '|' or a line break: {text!r}")
    return text


def markdown_table(rows: tuple[ModelRow, ...] = ROWS) -> str:
    """The table as MyST Markdown (a pipe table whose last column cites), for a notebook's ``Markdown`` output."""
    headers, cells = rows_table(rows)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in cells]
    return "\n".join(lines)


def provenance_markdown(rows: tuple[ModelRow, ...] = ROWS) -> str:
    """Which source gives which value, one bullet per row, as MyST Markdown."""
    return "\n".join(f"- **{row.model}**: {row.provenance}" for row in _check_rows(rows))
