"""``experiments.grids`` (``make grids``): resumable, parallel regeneration of the stored grids.

Every test that trains uses a tiny grid (a few steps of a one-layer model, temporary
folders), never the real grids; the real grids are only listed (no training).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from posenc.checkpoint import load_checkpoint
from posenc.results import RunResult, load_results
from posenc.train import TrainConfig, train

from experiments import grids

ROOT = Path(__file__).resolve().parents[1]

TINY = TrainConfig(task="copy_offset", seq_len=8, steps=4, batch_size=4, d_model=16, n_heads=2, n_layers=1,
                   eval_examples=8, log_every=2)


def tiny_grid() -> grids.Grid:
    """Three runs, listed cheapest first (the runner starts the dearest first), one table job and one
    weights job (a checkpoint written next to the grid)."""
    runs = [replace(TINY, seed=0), replace(TINY, seed=1),
            replace(TINY, scheme="learned", position_options={"init": "bert"}, steps=6)]

    def meta(results: list[Any], context: dict[str, Any]) -> dict[str, Any]:
        return {"command": "test", "n_runs": len(results), "tables": context["tables"], "cached": context["cached"]}

    table = grids.Job(replace(TINY, scheme="learned", position_options={"init": "bert"}), table_rows=5)
    weights = grids.Job(replace(TINY, scheme="rope", causal=True), keep_weights=True)
    return grids.Grid("tiny", "tiny_grid.json", lambda: list(runs), meta, lambda: [table],
                      checkpoints=lambda: {"tiny_model.safetensors": weights})


def without_time(result: RunResult) -> dict[str, Any]:
    """Everything a run computes; wall time is the one field that may differ between runs."""
    data = result.to_dict()
    del data["wall_time_s"]
    return data


def cache_mtimes(folder: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in sorted(folder.glob("*.json"))}


@pytest.fixture(scope="module")
def sequential(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, grids.Report]:
    """The tiny grid made once in this process (jobs=1): (cache folder, data folder, report)."""
    base = tmp_path_factory.mktemp("sequential")
    report = grids.regenerate([tiny_grid()], jobs=1, cache_dir=base / "cache", data_dir=base / "data", progress=False)
    return base / "cache", base / "data", report


# -- keys -----------------------------------------------------------------------------------------
def test_description_key_is_the_sha256_of_the_sorted_json() -> None:
    description = {"table_rows": None, "kind": "run", "config": {"seed": 0}}
    text = '{"config": {"seed": 0}, "kind": "run", "table_rows": null}'  # sorted keys, written out by hand
    assert grids.description_key(description) == hashlib.sha256(text.encode()).hexdigest()[:20]
    # Pinned: a change of the key function would silently orphan every cached run.
    assert grids.description_key(description) == "a299090b288de29d0ba0"
    job = grids.Job(TINY)
    assert grids.job_key(job) == grids.description_key({"kind": "run", "config": TINY.to_dict(), "table_rows": None})


def test_job_key_separates_what_differs_and_ignores_option_order() -> None:
    a = replace(TINY, scheme="hybrid-hierarchical", position_options={"segment_len": 4, "n_segments": 16})
    b = replace(TINY, scheme="hybrid-hierarchical", position_options={"n_segments": 16, "segment_len": 4})
    assert grids.job_key(grids.Job(a)) == grids.job_key(grids.Job(b))
    keys = {grids.job_key(grids.Job(TINY)), grids.job_key(grids.Job(replace(TINY, seed=1))),
            grids.job_key(grids.Job(TINY, table_rows=8)), grids.job_key(grids.Job(TINY, table_rows=9)),
            grids.job_key(grids.Job(TINY, keep_weights=True))}
    assert len(keys) == 5
    with pytest.raises(ValueError, match="either a table .* or the weights"):
        grids.Job(TINY, table_rows=8, keep_weights=True)


# -- a tiny grid ----------------------------------------------------------------------------------
def test_runs_complete_and_the_grid_file_loads_in_grid_order(sequential: tuple[Path, Path, grids.Report]) -> None:
    cache, data, report = sequential
    assert (report.planned, report.cached, report.trained, report.redone) == (5, 0, 5, [])
    assert len(list(cache.glob("*.json"))) == 5 and not list(cache.glob("*.tmp"))
    results, meta = load_results(data / "tiny_grid.json")
    # File order is the grid's order, although the dearest run (6 steps) was trained first.
    assert [r.config for r in results] == [c.to_dict() for c in tiny_grid().runs()]
    assert [r.seed for r in results] == [0, 1, 0]
    assert meta["n_runs"] == 3 and meta["cached"] == 0
    (table,) = meta["tables"]
    assert table["scheme"] == "learned" and len(table["table"]) == 5 and len(table["table"][0]) == 16
    assert report.written == [data / "tiny_grid.json", data / "tiny_model.safetensors"]


def test_the_checkpoint_is_the_model_training_gives(sequential: tuple[Path, Path, grids.Report]) -> None:
    _, data, _ = sequential
    (job,) = tiny_grid().checkpoints().values()
    model, config = load_checkpoint(data / "tiny_model.safetensors")
    trained, _ = train(job.config)
    assert config == job.config
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), trained.state_dict().values(), strict=True))


def test_a_second_invocation_trains_nothing(sequential: tuple[Path, Path, grids.Report],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache, data, _ = sequential
    before = cache_mtimes(cache)
    first = load_results(data / "tiny_grid.json")

    def no_training(*args: Any) -> None:
        raise AssertionError("a cached run was trained again")

    monkeypatch.setattr(grids, "execute", no_training)
    report = grids.regenerate([tiny_grid()], jobs=1, cache_dir=cache, data_dir=data, progress=False)
    assert (report.cached, report.trained) == (5, 0)
    assert cache_mtimes(cache) == before  # no cache file rewritten
    again = load_results(data / "tiny_grid.json")
    assert [r.to_dict() for r in again[0]] == [r.to_dict() for r in first[0]]  # wall times come from the cache too
    assert again[1]["tables"] == first[1]["tables"] and again[1]["cached"] == 5


def test_cached_runs_equal_plain_sequential_training(sequential: tuple[Path, Path, grids.Report]) -> None:
    _, data, _ = sequential
    stored, meta = load_results(data / "tiny_grid.json")
    direct = [train(config)[1] for config in tiny_grid().runs()]
    assert [without_time(r) for r in stored] == [without_time(r) for r in direct]
    # Not vacuous: two seeds of one config differ.
    assert stored[0].history != stored[1].history


def test_parallel_equals_sequential_exactly(sequential: tuple[Path, Path, grids.Report], tmp_path: Path) -> None:
    _, data, _ = sequential
    report = grids.regenerate([tiny_grid()], jobs=2, cache_dir=tmp_path / "cache", data_dir=tmp_path, progress=False)
    assert report.trained == 5
    assert (tmp_path / "tiny_model.safetensors").read_bytes() == (data / "tiny_model.safetensors").read_bytes()
    sequential_results, sequential_meta = load_results(data / "tiny_grid.json")
    parallel_results, parallel_meta = load_results(tmp_path / "tiny_grid.json")
    assert [without_time(r) for r in parallel_results] == [without_time(r) for r in sequential_results]
    assert parallel_meta["tables"] == sequential_meta["tables"]


def test_a_corrupt_cache_file_is_reported_and_redone(sequential: tuple[Path, Path, grids.Report],
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache, data, _ = sequential
    copy = tmp_path / "cache"
    copy.mkdir()
    for path in cache.glob("*.json"):
        (copy / path.name).write_text(path.read_text())
    grid = tiny_grid()
    truncated = grids.cache_path(copy, grids.Job(grid.runs()[0]))
    truncated.write_text(truncated.read_text()[:100])  # an interrupted copy, say
    edited = grids.cache_path(copy, grids.Job(grid.runs()[1]))
    entry = json.loads(edited.read_text())
    entry["job"]["config"]["seed"] = 7  # holds another run than its name says
    edited.write_text(json.dumps(entry))
    report = grids.regenerate([grid], jobs=1, cache_dir=copy, data_dir=tmp_path, progress=False)
    assert (report.cached, report.trained, len(report.redone)) == (3, 2, 2)
    assert str(truncated) in report.redone[0] and "not readable JSON" in report.redone[0]
    assert str(edited) in report.redone[1] and "another job" in report.redone[1]
    assert "deleted, running it again" in capsys.readouterr().err
    redone, _ = load_results(tmp_path / "tiny_grid.json")
    stored, _ = load_results(data / "tiny_grid.json")
    assert [without_time(r) for r in redone] == [without_time(r) for r in stored]


def test_read_cached_rejects_other_formats_and_missing_results(tmp_path: Path) -> None:
    job = grids.Job(TINY)
    path = grids.cache_path(tmp_path, job)
    assert grids.read_cached(tmp_path, job) is None
    path.write_text(json.dumps({"format": 0, "job": job.describe()}))
    with pytest.raises(grids.CorruptCacheError, match="format 0"):
        grids.read_cached(tmp_path, job)
    path.write_text(json.dumps({"format": grids.CACHE_FORMAT, "job": job.describe(), "result": {"seed": 0}}))
    with pytest.raises(grids.CorruptCacheError, match="no valid run result"):
        grids.read_cached(tmp_path, job)
    weights_job = grids.Job(TINY, keep_weights=True)
    result = train(TINY)[1].to_dict()
    grids.cache_path(tmp_path, weights_job).write_text(
        json.dumps({"format": grids.CACHE_FORMAT, "job": weights_job.describe(), "result": result}))
    with pytest.raises(grids.CorruptCacheError, match="lacks the trained weights"):
        grids.read_cached(tmp_path, weights_job)


def test_jobs_must_be_a_positive_integer(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="jobs must be a positive number of worker processes, got 0"):
        grids.regenerate([tiny_grid()], jobs=0, cache_dir=tmp_path, data_dir=tmp_path, progress=False)


def test_dry_run_lists_runs_and_cached_count(sequential: tuple[Path, Path, grids.Report], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    cache, data, _ = sequential
    monkeypatch.setattr(grids, "default_grids", lambda: {"tiny": tiny_grid()})
    before = cache_mtimes(cache)
    assert grids.main(["--dry-run", "--cache", str(cache), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "tiny -> tiny_grid.json: 5 runs (1 of them keep a trained table, 1 the trained model), 5 cached" in out
    assert "the stored file holds the same 3 runs in the same order" in out
    assert out.count("[cached]") == 5 and "total: 5 distinct runs, 5 cached, 0 to run" in out
    assert "+weights" in out
    assert cache_mtimes(cache) == before
    assert grids.main(["--dry-run", "--cache", str(tmp_path / "empty"), "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("[to run]") == 5 and "no stored file" in out


# -- the real grids (listed, not trained) ------------------------------------------------------------
def test_the_real_grids_list_the_stored_runs_in_order() -> None:
    """Each stored file's runs are planned, in the file's order (new schemes may add runs to ch6)."""
    for grid in grids.default_grids().values():
        stored = [json.dumps(r.config, sort_keys=True) for r in load_results(ROOT / "book" / "data" / grid.filename)[0]]
        planned = [json.dumps(c.to_dict(), sort_keys=True) for c in grid.runs()]
        kept = [text for text in planned if text in set(stored)]
        assert kept == stored, grid.name
        if grid.name != "ch6":  # ch6 trains every registered scheme; the others list theirs
            assert planned == stored, grid.name
    extra = grids.default_grids()["ch8_ch10"]
    assert [(j.config.scheme, j.table_rows) for j in extra.tables()] == [
        ("learned", 64), ("learned", 64), ("hybrid-scaled-sinusoid", 64), ("hybrid-factored", 64),
        ("hybrid-hierarchical", 64)]
    checkpoints = {name: grid.checkpoints() for name, grid in grids.default_grids().items() if grid.checkpoints()}
    assert list(checkpoints) == ["ch7", "rope_scaling", "realistic_scaling"]
    for grid_checkpoints in checkpoints.values():
        for filename, job in grid_checkpoints.items():
            assert (ROOT / "book" / "data" / filename).is_file() and job.keep_weights


def test_the_command_writes_the_grid_and_prints_the_total_time(sequential: tuple[Path, Path, grids.Report],
                                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    cache, _, _ = sequential
    monkeypatch.setattr(grids, "default_grids", lambda: {"tiny": tiny_grid(), "other": tiny_grid()})
    assert grids.main(["--grid", "tiny", "--jobs", "1", "--cache", str(cache), "--data", str(tmp_path),
                       "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'tiny_grid.json'}" in out and f"wrote {tmp_path / 'tiny_model.safetensors'}" in out
    assert "done: 5 runs (5 from the cache, 0 trained, 0 corrupt cache files redone) on 1 process(es) in" in out
    assert load_results(tmp_path / "tiny_grid.json")[1]["cached"] == 5
    with pytest.raises(SystemExit):
        grids.main(["--jobs", "0", "--dry-run"])
    assert "--jobs must be at least 1, got 0" in capsys.readouterr().err


def test_the_realistic_regime_holds_yarns_premise() -> None:
    """Chapter 11's realistic grid is planned only where each of YaRN's zones holds >= 10 % of the pairs."""
    from experiments import configs

    assert configs.check_realistic_premise() == {"index": (4, 12, 16), "rotations": (4, 12, 16)}
    with pytest.raises(ValueError, match=r"d_head=16 at train_len=16: YaRN's zones with ramp='index' hold "
                                         r"\(1, 0, 7\) of 8 pairs; each needs >= 10%"):
        configs.check_realistic_premise(d_head=16, train_len=16)  # chapter 11's toy regime
    runs = [config for config, _ in configs.realistic_scaling_configs()]
    assert {(c.seq_len, c.d_model // c.n_heads, c.bos_token, c.finetune_len) for c in runs} == {(512, 64, True, 1024)}


def test_the_realistic_matrix_gives_every_scheme_its_premises() -> None:
    """Chapter 7's realistic grids: heads of width 64 at 512 tokens with an anchor for every scheme,
    the table's workarounds and a table at the tokens' scale, partial rotation; ALiBi, whose slopes
    need several heads, only with eight, the model's width unchanged."""
    from experiments import configs
    from posenc.relative import alibi_slopes
    from posenc.results import scheme_label

    for grid, tasks in (("realistic", {"copy_offset", "marker_recall"}), ("realistic_passkey", {"passkey"}),
                        ("realistic_text", {"text"})):
        runs = [config for config, _ in configs.GRIDS[grid]()]
        assert {c.task for c in runs} == tasks, grid
        assert all(c.seq_len == 512 and c.bos_token and c.eval_lengths == (1024, 2048) for c in runs), grid
        assert {c.d_model // c.n_heads for c in runs if c.scheme != "alibi"} == {64}, grid
        assert all(c.eval_extrapolations for c in runs if c.scheme == "learned"), grid
        assert all(c.n_heads == configs.REALISTIC_ALIBI_HEADS and c.d_model == 64 for c in runs if c.scheme == "alibi"), grid
        assert all(c.eval_examples == configs.REALISTIC_ALIBI_EVAL_EXAMPLES for c in runs if c.n_heads > 1), grid
    matrix = [config for config, _ in configs.realistic_configs()]
    assert {str(c.position_options) for c in matrix if c.scheme == "rope"} == {
        "{}", *(str(options) for options in configs.PARTIAL_ROPE)}
    assert {str(c.position_options) for c in matrix if c.scheme == "learned"} == {
        "{'init': 'bert'}", str(configs.REALISTIC_TABLE)}
    assert {c.task for c in matrix if c.scheme == "alibi"} == {"copy_offset", "marker_recall"}
    assert all(n == configs.SUITE_SEEDS for _, n in configs.realistic_configs())
    # every cell has the two rates; the one more rate goes exactly where REALISTIC_EXTRA names the cell
    rates: dict[tuple[str, str], set[float]] = {}
    for c in matrix:
        label = scheme_label(c.scheme, c.position_options) + (f" [{c.n_heads} heads]" if c.n_heads > 1 else "")
        rates.setdefault((c.task, label), set()).add(c.lr)
    for (task, label), lrs in rates.items():
        extra = {configs.REALISTIC_EXTRA_LR} if label in configs.REALISTIC_EXTRA[task] else set()
        assert lrs == {*configs.REALISTIC_LRS, *extra}, (task, label)
    assert all(label in {lab for _, lab in rates} for names in configs.REALISTIC_EXTRA.values() for label in names)
    # one head would hold only ALiBi's flattest slope; eight heads span 1/2 ... 1/256
    assert alibi_slopes(1).tolist() == [2 ** -8]
    assert alibi_slopes(configs.REALISTIC_ALIBI_HEADS).tolist() == [2.0 ** -k for k in range(1, 9)]
    text = [config for config, _ in configs.realistic_text_configs()]
    assert {c.rope_scalings for c in text if c.scheme == "rope" and not c.position_options} == {
        configs.REALISTIC_TEXT_SCALINGS}
    assert all(c.min_seq_len is None and c.curriculum_steps is None for c in text)
    # the text arm: three rates and two seeds for every scheme (p-RoPE, best at the top rate, one more),
    # p-RoPE beside full RoPE, ALiBi (the slowest runs) first; the schemes that learn slowly (no positions,
    # the table at the tokens' scale) train three times as long in the second grid, the sinusoid in both
    def rates_by_label(runs: list[Any]) -> dict[str, set[float]]:
        by_label: dict[str, set[float]] = {}
        for c in runs:
            by_label.setdefault(scheme_label(c.scheme, c.position_options), set()).add(c.lr)
        return by_label

    text_cells = rates_by_label(text)
    assert set(text_cells) == {"sinusoidal", "rope", "rope [ladder=truncated, partial=0.25]", "alibi", "t5_bias"}
    for label, lrs in text_cells.items():
        extra = {configs.REALISTIC_TEXT_EXTRA_LR} if label in configs.REALISTIC_TEXT_EXTRA else set()
        assert lrs == {*configs.REALISTIC_TEXT_LRS, *extra}, label
    long_text = [config for config, _ in configs.realistic_text_long_configs()]
    assert rates_by_label(long_text) == {label: set(configs.REALISTIC_TEXT_LRS)
                                         for label in ("none", "sinusoidal", "learned (normal)")}
    assert {c.steps for c in long_text} == {3 * configs.REALISTIC_TEXT_STEPS}
    assert all(n == configs.REALISTIC_TEXT_SEEDS == 2 for _, n in
               (*configs.realistic_text_configs(), *configs.realistic_text_long_configs()))
    assert text[0].scheme == "alibi" and {c.batch_size for c in text} == {configs.REALISTIC_TEXT_BATCH}
    assert [c.rope_scalings for c in text if c.scheme == "rope" and c.position_options] == [()] * 4
