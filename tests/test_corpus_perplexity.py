"""posenc.corpus (the real-text snapshot) and posenc.perplexity (bits per byte against the length read)."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import torch

from posenc.corpus import SPLITS, corpus_path, load_documents, split_bytes, verify_corpus
from posenc.perplexity import ScoredBytes, length_scores, ngram_bits, scored_bytes, sliding_stride
from posenc.tasks import make_generator, make_task


def test_the_snapshot_matches_its_checksum_and_its_manifest() -> None:
    path = corpus_path()
    manifest = json.loads(path.with_name("python_docs.json").read_text())
    assert verify_corpus() == manifest["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    documents = load_documents()
    for split in SPLITS:
        ours = [d for d in documents if d.split == split]
        assert len(ours) == manifest["splits"][split]["documents"] > 0
        assert sum(len(d.text.encode()) for d in ours) == manifest["splits"][split]["bytes"]
    assert "PSF LICENSE AGREEMENT" in path.with_name("python_docs_LICENSE.txt").read_text()


def test_every_document_is_in_exactly_one_split_and_splits_share_no_text() -> None:
    documents = load_documents()
    paths = [d.path for d in documents]
    assert len(paths) == len(set(paths))
    assert {d.split for d in documents} == set(SPLITS)
    train = {d.text for d in documents if d.split == "train"}
    assert not train & {d.text for d in documents if d.split != "train"}
    assert split_bytes("test").numel() > 100_000


def test_the_text_task_predicts_the_next_byte_of_its_split() -> None:
    task = make_task("text")
    tokens, targets = task.sample(3, 50, make_generator(0))
    assert tokens.shape == targets.shape == (3, 50) and torch.equal(tokens[:, 1:], targets[:, :-1])
    test = task.for_split("test")
    assert test.options() == {"split": "test", "corpus": "python_docs"} and task.for_split("train").options() == task.options()
    window = bytes(test.sample(1, 40, make_generator(1))[0][0].tolist())
    assert window in bytes(split_bytes("test").tolist())
    with pytest.raises(ValueError, match="split must be one of"):
        make_task("text", split="dev")


class Uniform(torch.nn.Module):
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*tokens.shape, 256)


class NextIsPlusOne(torch.nn.Module):
    """Puts (almost) all probability on byte + 1: perfect on a stream 0, 1, 2, ..."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return 50.0 * torch.nn.functional.one_hot((tokens + 1) % 256, 256).float()


def test_bits_per_byte_on_hand_made_streams() -> None:
    stream = torch.arange(1000) % 256
    assert scored_bytes(Uniform(), stream, 64).mean() == pytest.approx(8.0)  # log2(256)
    assert scored_bytes(NextIsPlusOne(), stream, 64).mean() < 1e-15
    read = length_scores(Uniform(), stream, 128, train_len=64, n_bytes=999)
    assert read.scores == pytest.approx({"bpb": 8.0, "bpb_slide": 8.0, "bpb_new": 8.0})
    assert read.profile == pytest.approx((8.0, 8.0)) and read.bucket == 64
    assert "bpb_new" not in length_scores(Uniform(), stream, 64, train_len=64, n_bytes=999).scores
    assert set(length_scores(Uniform(), stream, 128, train_len=64, n_bytes=999, sliding=False).scores) == {"bpb", "bpb_new"}


class KnowsTheStart(torch.nn.Module):
    """Perfect on a stream 0, 1, 2, ... at the first 32 offsets of a window, uniform after them."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        logits = NextIsPlusOne()(tokens)
        logits[:, 32:] = 0.0
        return logits


def test_the_profile_is_the_loss_at_each_stretch_of_offsets() -> None:
    stream = torch.arange(1000) % 256
    chunks = scored_bytes(KnowsTheStart(), stream, 100, mode="chunks")
    # offsets 0-31 cost nothing, 32-99 cost 8 bits: stretches of 16 -> 0, 0, 8, 8, 8, 8, 8 (the last holds 96-99)
    assert chunks.profile(16) == pytest.approx((0, 0, 8, 8, 8, 8, 8), abs=1e-12)
    assert chunks.profile(64) == pytest.approx((4.0, 8.0), abs=1e-12)  # 32 free of 64, then all 8
    read = length_scores(KnowsTheStart(), stream, 100, train_len=50, n_bytes=999, bucket=16)
    assert read.profile == chunks.profile(16) and read.scores["bpb_new"] == pytest.approx(8.0)
    with pytest.raises(ValueError, match="no scored byte sits at offsets 0 to 15"):
        ScoredBytes(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([40, 41])).profile(16)
    with pytest.raises(ValueError, match="bucket must be"):
        chunks.profile(0)


def test_each_byte_is_scored_once_with_the_context_the_mode_promises() -> None:
    stream = torch.arange(1001) % 7
    chunks = scored_bytes(Uniform(), stream, 100, mode="chunks")
    assert chunks.offsets.numel() == 1000 and torch.equal(chunks.offsets, torch.arange(1000) % 100)
    sliding = scored_bytes(Uniform(), stream, 100, mode="sliding", stride=25)
    # the first window scores its 100 bytes, each later one its last 25: (1000 - 100) / 25 = 36 more windows
    assert sliding.offsets.numel() == 100 + 36 * 25
    assert int((sliding.offsets[100:] < 75).sum()) == 0  # every later byte has at least 75 bytes of context
    assert chunks.mean(from_offset=50) == pytest.approx(math.log2(256))
    # by default the step is sliding_stride: a quarter of the window, so 75 bytes of context at 100
    assert sliding_stride(100) == 25 and sliding_stride(512) == 128 and sliding_stride(3) == 1
    default = scored_bytes(Uniform(), stream, 100, mode="sliding")
    assert torch.equal(default.offsets, sliding.offsets)


def test_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="length must be"):
        sliding_stride(0)
    with pytest.raises(ValueError, match="mode must be one of"):
        scored_bytes(Uniform(), torch.arange(100), 10, mode="windows")
    with pytest.raises(ValueError, match="stride must be <= length"):
        scored_bytes(Uniform(), torch.arange(100), 10, mode="sliding", stride=20)
    with pytest.raises(ValueError, match="more than length=10 bytes"):
        scored_bytes(Uniform(), torch.arange(10), 10)
    with pytest.raises(ValueError, match="no scored byte sits at an offset >= 50"):
        scored_bytes(Uniform(), torch.arange(100), 10).mean(from_offset=50)


def test_counting_models_on_hand_made_streams() -> None:
    cycle = torch.arange(4).repeat(250)  # 0 1 2 3 0 1 2 3 ...
    # unigram: four bytes equally often; with add-one smoothing over 256 values, p = 251 / (1000 + 256)
    assert ngram_bits(cycle, cycle, 0) == pytest.approx(-math.log2(251 / 1256))
    # bigram: the next byte is certain; after add-one, p = 251 / (250 + 256) for the 999 pairs
    assert ngram_bits(cycle, cycle, 1) == pytest.approx(-math.log2(251 / 506), rel=1e-3)
    assert ngram_bits(cycle, cycle, 1, smoothing=1e-9) == pytest.approx(0.0, abs=1e-6)
    assert ngram_bits(cycle, cycle, 2, smoothing=1e-9) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="order must be 0, 1 or 2"):
        ngram_bits(cycle, cycle, 3)
    with pytest.raises(ValueError, match="test must hold more than order=1 bytes"):
        ngram_bits(cycle, torch.tensor([1]), 1)
    with pytest.raises(ValueError, match="smoothing must be"):
        ngram_bits(cycle, cycle, 1, smoothing=0.0)


def test_on_the_corpus_more_context_reads_better() -> None:
    train, test = split_bytes("train"), split_bytes("test")
    unigram, bigram, trigram = (ngram_bits(train, test, order) for order in (0, 1, 2))
    assert 7.0 > unigram > bigram > trigram > 2.0
