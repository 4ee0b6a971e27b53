"""Tests for posenc.tasks: labels, seeding, and that the tasks need positions."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.tasks import (
    IGNORE_INDEX,
    CopyHalfTask,
    CopyOffsetTask,
    MarkerRecallTask,
    ReverseTask,
    Task,
    available_tasks,
    bag_of_tokens_accuracy,
    fixed_dataset,
    make_generator,
    make_task,
    token_accuracy,
)
from posenc.train import TrainConfig, train

FAST = settings(max_examples=30, deadline=None)


def test_registry() -> None:
    assert available_tasks() == ["copy_offset", "reverse", "marker_recall", "copy_half", "passkey", "text"]
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
    for task in (CopyOffsetTask(8, 1), ReverseTask(8), CopyHalfTask(8)):
        assert not torch.equal(task.labels(tokens)[:, 1:], task.labels(shuffled)[:, 1:])
    # marker_recall: same bag (marker 8 once), the marker moved -> a different answer
    marker = MarkerRecallTask(8)
    assert marker.labels(torch.tensor([[8, 1, 2, 3]])).tolist() == [[IGNORE_INDEX, IGNORE_INDEX, 1, 1]]
    assert marker.labels(torch.tensor([[1, 8, 2, 3]])).tolist() == [[IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX, 2]]


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


# --- the suite's two newer tasks: marker_recall (long-range content) and copy_half (absolute) ---


def test_each_task_names_its_kind_and_whether_a_causal_model_can_solve_it() -> None:
    kinds = {name: (make_task(name).kind, make_task(name).causal_ok) for name in available_tasks()}
    assert kinds == {
        "copy_offset": ("local relative", True),
        "reverse": ("absolute, length-tied", False),
        "marker_recall": ("long-range content", True),
        "copy_half": ("absolute", True),
        "passkey": ("long-range retrieval", True),
        "text": ("language model", True),
    }


@pytest.mark.parametrize("name", ["copy_offset", "reverse", "marker_recall", "copy_half"])
def test_make_task_builds_each_task_by_name_and_its_options_rebuild_it(name: str) -> None:
    task = make_task(name, n_symbols=6)
    assert task.name == name and task.n_outputs == 6
    again = make_task(name, **task.options())
    assert repr(again) == repr(task)
    a = task.sample(3, 9, make_generator(5))
    b = again.sample(3, 9, make_generator(5))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_marker_recall_known_answers() -> None:
    task = MarkerRecallTask(n_symbols=5)  # the marker is id 5
    assert task.marker == 5 and task.vocab_size == 6 and task.n_outputs == 5
    no = IGNORE_INDEX
    assert task.labels(torch.tensor([[1, 5, 3, 2, 0, 4]])).tolist() == [[no, no, no, 3, 3, 3]]
    assert task.labels(torch.tensor([[5, 2, 0, 1]])).tolist() == [[no, no, 2, 2]]
    # the answer is the follower, not the token right before the query
    assert task.labels(torch.tensor([[0, 0, 5, 4, 1, 1, 1]])).tolist() == [[no, no, no, no, 4, 4, 4]]
    # a marker with no position after its follower labels nothing
    assert task.labels(torch.tensor([[1, 5, 2], [1, 2, 5]])).tolist() == [[no, no, no], [no, no, no]]


def test_marker_recall_rejects_rows_without_exactly_one_marker() -> None:
    task = MarkerRecallTask(n_symbols=5)
    with pytest.raises(ValueError, match="exactly once per row; row 1 holds it 0 times"):
        task.labels(torch.tensor([[5, 1, 2], [1, 2, 3]]))
    with pytest.raises(ValueError, match="row 0 holds it 2 times"):
        task.labels(torch.tensor([[5, 5, 2]]))


def test_marker_choices_formula() -> None:
    # max(1, floor(marker_frac * (seq_len - 2)))
    assert MarkerRecallTask().marker_choices(3) == 1
    assert MarkerRecallTask().marker_choices(16) == 7
    assert MarkerRecallTask(marker_frac=1.0).marker_choices(16) == 14
    assert MarkerRecallTask(marker_frac=0.1).marker_choices(16) == 1
    with pytest.raises(ValueError, match="seq_len must be >= 3"):
        MarkerRecallTask().marker_choices(2)


@FAST
@given(st.integers(3, 40), st.floats(0.05, 1.0), st.integers(0, 10_000))
def test_marker_occurs_once_in_its_region_and_is_never_the_answer(seq_len: int, frac: float, seed: int) -> None:
    task = MarkerRecallTask(n_symbols=4, marker_frac=frac)
    tokens, targets = task.sample(16, seq_len, make_generator(seed))
    assert tokens.shape == targets.shape == (16, seq_len)
    assert torch.all((tokens == task.marker).sum(dim=1) == 1)
    p = task.marker_positions(tokens)
    assert int(p.max()) < task.marker_choices(seq_len) <= seq_len - 2
    for row in range(16):
        k = int(p[row])
        assert torch.all(targets[row, : k + 2] == IGNORE_INDEX)
        assert torch.all(targets[row, k + 2 :] == tokens[row, k + 1])
        assert int(tokens[row, k + 1]) != task.marker
    labelled = targets[targets != IGNORE_INDEX]
    assert labelled.numel() > 0 and 0 <= int(labelled.min()) and int(labelled.max()) < task.n_outputs


def test_marker_position_covers_its_whole_region_uniformly() -> None:
    task = MarkerRecallTask(n_symbols=4)  # 16 tokens: the marker is at 0..6
    tokens, _ = task.sample(7000, 16, make_generator(0))
    counts = torch.bincount(task.marker_positions(tokens), minlength=7)
    assert counts.shape == (7,) and int(counts.min()) > 850 and int(counts.max()) < 1150


def test_copy_half_known_answer() -> None:
    tokens = torch.tensor([[3, 1, 4, 1, 5, 9, 2]])
    # i // 2 = 0, 0, 1, 1, 2, 2, 3; position 0 would copy itself and has no label
    assert CopyHalfTask(10).labels(tokens).tolist() == [[IGNORE_INDEX, 3, 1, 1, 4, 4, 1]]


@FAST
@given(st.integers(2, 40), st.integers(0, 10_000))
def test_copy_half_rule_at_any_length(seq_len: int, seed: int) -> None:
    tokens, targets = CopyHalfTask(n_symbols=7).sample(3, seq_len, make_generator(seed))
    assert targets[:, 0].tolist() == [IGNORE_INDEX] * 3
    for i in range(1, seq_len):
        assert torch.equal(targets[:, i], tokens[:, i // 2])


def test_new_tasks_min_len_and_option_errors() -> None:
    with pytest.raises(ValueError, match="seq_len must be >= 3 for task 'marker_recall', got 2"):
        MarkerRecallTask().sample(2, 2)
    with pytest.raises(ValueError, match="seq_len must be >= 2 for task 'copy_half', got 1"):
        CopyHalfTask().sample(2, 1)
    with pytest.raises(ValueError, match=r"marker_frac must be in \(0, 1\], got 1.5"):
        MarkerRecallTask(marker_frac=1.5)
    with pytest.raises(ValueError, match="marker_frac must be a finite number > 0, got 0"):
        MarkerRecallTask(marker_frac=0)
    with pytest.raises(ValueError, match="n_symbols"):
        CopyHalfTask(n_symbols=0)
    with pytest.raises(ValueError, match="n_symbols"):
        MarkerRecallTask(n_symbols=0)
    with pytest.raises(ValueError, match="bad options .* for task 'copy_half'"):
        make_task("copy_half", offset=1)
    with pytest.raises(ValueError, match="bad options .* for task 'marker_recall'"):
        make_task("marker_recall", frac=0.5)


@pytest.mark.parametrize("name", ["marker_recall", "copy_half"])
def test_new_tasks_same_seed_same_data(name: str) -> None:
    task = make_task(name)
    a = task.sample(4, 12, make_generator(1))
    b = task.sample(4, 12, make_generator(1))
    c = task.sample(4, 12, make_generator(2))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


# --- bag-of-tokens ceilings, checked against brute force over every input ---


def _every_input(task: Task, seq_len: int) -> Iterator[tuple[int, ...]]:
    """Every input sequence the task can draw, each exactly as often as it is likely."""
    if isinstance(task, MarkerRecallTask):
        for p in range(task.marker_choices(seq_len)):
            for rest in itertools.product(range(task.n_symbols), repeat=seq_len - 1):
                yield rest[:p] + (task.marker,) + rest[p:]
    else:
        yield from itertools.product(range(task.vocab_size), repeat=seq_len)


def _brute_force_ceiling(task: Task, seq_len: int) -> Fraction:
    """Best accuracy of any rule "multiset -> one guess for every position", by enumeration.

    Pooled accuracy = (sum of correct labels) / (sum of labels) over all equally likely
    inputs; for each multiset the best guess is the output that is the target most often
    over all arrangements with that multiset.
    """
    inputs = torch.tensor(list(_every_input(task, seq_len)))
    targets = task.labels(inputs)
    hits: dict[tuple[int, ...], torch.Tensor] = defaultdict(lambda: torch.zeros(task.n_outputs, dtype=torch.long))
    for row, target in zip(inputs.tolist(), targets, strict=True):
        labelled = target[target != IGNORE_INDEX]
        hits[tuple(sorted(row))] += torch.bincount(labelled, minlength=task.n_outputs)
    best = sum(int(h.max()) for h in hits.values())
    return Fraction(best, int((targets != IGNORE_INDEX).sum()))


def _exact_accuracy_of(guess: torch.Tensor, task: Task, inputs: torch.Tensor) -> Fraction:
    targets = task.labels(inputs)
    labelled = targets != IGNORE_INDEX
    return Fraction(int(((guess == targets) & labelled).sum()), int(labelled.sum()))


CEILING_CASES = [
    (CopyOffsetTask(n_symbols=3, offset=1), 5),
    (ReverseTask(n_symbols=3), 5),
    (CopyHalfTask(n_symbols=3), 6),
    (CopyHalfTask(n_symbols=2), 7),
    (MarkerRecallTask(n_symbols=3), 6),
    (MarkerRecallTask(n_symbols=3, marker_frac=1.0), 6),
]


@pytest.mark.parametrize(("task", "seq_len"), CEILING_CASES, ids=lambda c: repr(c))
def test_each_tasks_bag_guess_reaches_the_brute_force_ceiling(task: Task, seq_len: int) -> None:
    inputs = torch.tensor(list(_every_input(task, seq_len)))
    ceiling = _brute_force_ceiling(task, seq_len)
    assert _exact_accuracy_of(task.bag_ceiling_guess(inputs), task, inputs) == ceiling
    # the check can fail: a worse position-blind rule (always symbol 0) falls short of it
    assert _exact_accuracy_of(torch.zeros_like(inputs), task, inputs) < ceiling
    # and the sampled estimate agrees with the exact value
    assert bag_of_tokens_accuracy(task, seq_len, n_examples=20_000, seed=1) == pytest.approx(float(ceiling), abs=0.012)


def test_bag_ceilings_by_hand() -> None:
    """Two symbols a, b with n_symbols = 4 and one label whose answer is a: the bag {a, b}
    is right if a == b (probability 1/4), else half the time (the guess is one of two):
    1/4 + 3/4 * 1/2 = 5/8."""
    for task, seq_len in ((CopyHalfTask(4), 2), (MarkerRecallTask(4), 3)):
        assert _brute_force_ceiling(task, seq_len) == Fraction(5, 8)
        inputs = torch.tensor(list(_every_input(task, seq_len)))
        assert _exact_accuracy_of(task.bag_ceiling_guess(inputs), task, inputs) == Fraction(5, 8)


def test_marker_recall_ceiling_never_guesses_the_marker() -> None:
    task = MarkerRecallTask(n_symbols=3)
    # all ordinary symbols tie with the marker at one each: the guess is the smallest ordinary one
    guess = task.bag_ceiling_guess(torch.tensor([[3, 2, 1, 0], [2, 2, 3, 0]]))
    assert guess.tolist() == [[0, 0, 0, 0], [2, 2, 2, 2]]


def test_marker_recall_bag_ceiling_uses_only_ordinary_tokens() -> None:
    """The answer is one of the seq_len - 1 ordinary tokens: with two symbols and three
    tokens (marker + 2 ordinary) the ceiling is 1/2 + 1/2 * 1/2 = 3/4, while treating the
    marker as a candidate answer (counting it in the bag, ties to the largest id) is worse."""
    task = MarkerRecallTask(n_symbols=2)
    assert _brute_force_ceiling(task, 3) == Fraction(3, 4)
    inputs = torch.tensor(list(_every_input(task, 3)))
    counts = torch.stack([(inputs == s).sum(dim=1) for s in range(3)], dim=1)
    ties_to_largest = (2 - counts.flip(1).argmax(dim=1, keepdim=True)).expand_as(inputs)
    assert _exact_accuracy_of(ties_to_largest, task, inputs) < Fraction(3, 4)


@pytest.mark.parametrize("name", ["copy_offset", "reverse", "marker_recall", "copy_half"])
def test_tiny_transformer_trains_a_few_steps_on_each_task(name: str) -> None:
    task = make_task(name, n_symbols=4)
    config = TrainConfig(
        task=name,
        task_options={"n_symbols": 4},
        causal=task.causal_ok,
        seq_len=8,
        steps=6,
        batch_size=4,
        d_model=16,
        n_heads=2,
        n_layers=1,
        eval_examples=16,
        eval_lengths=(12,),
        log_every=3,
    )
    model, result = train(config)
    assert model.head.out_features == task.n_outputs
    assert 0.0 <= result.metrics["accuracy"] <= 1.0 and 0.0 <= result.metrics["accuracy@12"] <= 1.0
    assert result.metrics["final_loss"] == result.metrics["final_loss"]  # not NaN


def test_passkey_known_answer_and_depth_anywhere() -> None:
    task = make_task("passkey", n_digits=3, n_filler=4)
    key, query, digit = task.key_marker, task.query_marker, task.first_digit
    tokens = torch.tensor([[0, key, digit + 7, digit + 1, digit + 4, 2, 3, query, digit + 7, digit + 1]])
    targets = task.labels(tokens)
    assert targets.tolist() == [[IGNORE_INDEX] * 7 + [7, 1, 4]]  # at the query and after each digit so far
    tokens, targets = task.sample(512, 40, make_generator(0))
    depths = task.key_positions(tokens)
    assert int(depths.min()) == 0 and int(depths.max()) == 40 - 2 * 3 - 1  # anywhere the key block fits
    assert bool((targets[:, :-3] == IGNORE_INDEX).all()) and bool((targets[:, -3:] >= 0).all())
    assert torch.equal(tokens[:, -3], torch.full((512,), query))
    with pytest.raises(ValueError, match="key marker"):
        task.labels(torch.zeros(1, 10, dtype=torch.long))
    with pytest.raises(TypeError, match="tokens must be"):
        task.key_positions(task.sample(2, 40, make_generator(0)))  # type: ignore[arg-type]  # (tokens, targets)
