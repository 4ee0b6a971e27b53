"""Tests for posenc.tasks: labels, seeding, and that the tasks need positions."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.tasks import (
    IGNORE_INDEX,
    CopyOffsetTask,
    ReverseTask,
    available_tasks,
    bag_of_tokens_accuracy,
    fixed_dataset,
    make_generator,
    make_task,
    token_accuracy,
)

FAST = settings(max_examples=30, deadline=None)


def test_registry() -> None:
    assert available_tasks() == ["copy_offset", "reverse"]
    assert isinstance(make_task("copy_offset", offset=3), CopyOffsetTask)
    assert make_task("reverse", n_symbols=8).vocab_size == 8


def test_copy_offset_known_answer() -> None:
    task = CopyOffsetTask(n_symbols=10, offset=2)
    tokens = torch.tensor([[3, 1, 4, 1, 5, 9]])
    assert task.labels(tokens).tolist() == [[IGNORE_INDEX, IGNORE_INDEX, 3, 1, 4, 1]]


def test_reverse_known_answer() -> None:
    assert ReverseTask(10).labels(torch.tensor([[3, 1, 4, 1, 5]])).tolist() == [[5, 1, 4, 1, 3]]


@FAST
@given(st.integers(1, 5), st.integers(6, 40), st.integers(0, 10_000))
def test_copy_offset_rule_at_any_length(offset: int, seq_len: int, seed: int) -> None:
    task = CopyOffsetTask(n_symbols=7, offset=offset)
    tokens, targets = task.sample(3, seq_len, make_generator(seed))
    assert tokens.shape == targets.shape == (3, seq_len)
    assert tokens.dtype == targets.dtype == torch.long
    assert 0 <= int(tokens.min()) and int(tokens.max()) < 7
    assert torch.all(targets[:, :offset] == IGNORE_INDEX)
    assert torch.equal(targets[:, offset:], tokens[:, : seq_len - offset])


def test_same_seed_same_data_different_seed_different_data() -> None:
    task = CopyOffsetTask()
    a = task.sample(4, 12, make_generator(1))
    b = task.sample(4, 12, make_generator(1))
    c = task.sample(4, 12, make_generator(2))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    assert torch.equal(fixed_dataset(task, 5, 12, seed=3)[0], fixed_dataset(task, 5, 12, seed=3)[0])


@pytest.mark.parametrize("name", ["copy_offset", "reverse"])
def test_position_blind_guessing_is_near_chance(name: str) -> None:
    """The best a bag-of-tokens predictor can do (most frequent symbol) is far from solving
    the task: with 16 symbols and 16 positions, chance is 1/16 = 0.0625."""
    task = make_task(name)
    acc = bag_of_tokens_accuracy(task, 16, n_examples=2000, seed=0)
    assert 0.0625 < acc < 0.2


def test_permuting_a_sequence_changes_its_labels() -> None:
    """Same bag of tokens, different labels: no function of the bag alone can be right for both."""
    tokens = torch.tensor([[0, 1, 2, 3, 4, 5]])
    shuffled = tokens[:, torch.tensor([5, 3, 1, 0, 2, 4])]
    for task in (CopyOffsetTask(8, 1), ReverseTask(8)):
        assert not torch.equal(task.labels(tokens)[:, 1:], task.labels(shuffled)[:, 1:])


def test_token_accuracy_ignores_unlabelled_positions() -> None:
    targets = torch.tensor([[IGNORE_INDEX, 1, 2, 3]])
    assert token_accuracy(torch.tensor([[9, 1, 2, 0]]), targets) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="no labelled"):
        token_accuracy(torch.zeros(1, 2, dtype=torch.long), torch.full((1, 2), IGNORE_INDEX))


def test_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="seq_len must be >= 3"):
        CopyOffsetTask(offset=2).sample(2, 2)
    with pytest.raises(ValueError, match="name must be one of"):
        make_task("sort")
    with pytest.raises(ValueError, match="bad options"):
        make_task("reverse", offset=2)
    with pytest.raises(ValueError, match="offset"):
        CopyOffsetTask(offset=0)
    with pytest.raises(ValueError, match="seed"):
        make_generator(-1)
