"""Regenerate every stored grid in ``book/data`` with one command: ``make grids``.

    make grids                                   # every grid, all cores
    make grids GRIDS_ARGS="--grid ch6 --jobs 1"  # one grid, one process
    make grids GRIDS_ARGS="--dry-run"            # list the runs and how many are cached

(``make grids`` runs ``python -m experiments`` from the repository root.) The grids
themselves are defined in :mod:`experiments.configs`. This runner is the only one:

* **Resumable.** Every finished run is written at once to its own JSON file in the cache
  folder (default ``experiments/.cache/runs``, git-ignored), named by a hash of its
  configuration (:func:`job_key`). A second invocation skips every run whose file exists,
  so an interrupted regeneration loses at most the runs in progress. The cache keys on the
  configuration only: after a change to the training code, delete the folder (or pass
  ``--cache`` a fresh one), or stale runs are reused.
* **Corrupt cache files are redone.** A cache file that is not valid JSON, lacks a field,
  or holds another configuration than its name says (a hand edit, a disk error) is
  reported on stderr with its path and the reason, deleted, and its run trained again.
  Files are written to a temporary name and renamed, so an interrupted write leaves no
  half file behind.
* **Parallel.** Runs go to ``joblib.Parallel(n_jobs=--jobs)`` (default: every core); each
  worker runs torch on one thread (``posenc.runtime.single_thread``: the models are tiny,
  and extra threads only contend). Training is seeded and deterministic, so a run's
  metrics, history and extras are bit-identical whichever process trains it and in
  whatever order (``tests/test_experiments.py`` checks this); only ``wall_time_s`` differs.
* At the end each grid file is written from the cached runs, in the grid's own order and
  in the format the chapters read (``posenc.results.save_results``), and the total time
  is printed.
* **Trained models.** A grid may also keep a trained model that a chapter looks inside
  (``configs.CHECKPOINTS``; chapter 11's ``rope_scaling_model.safetensors``). Its job
  trains the run like any other and stores the weights in the cache entry; the file is
  written next to the grid (``posenc.checkpoint``). The same model always gives the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from experiments import configs
from posenc.runtime import kernel_setting, pin_cpu_kernels

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "book" / "data"
CACHE = HERE / ".cache" / "runs"
#: Version of the cache files' layout; a file of another version is redone.
CACHE_FORMAT = 1
#: The note every stored grid carries about its wall times.
WALL_TIME_NOTE = "wall times were measured on a shared 2-core machine and are inflated by other work"


# -- jobs and their cache files -----------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """One unit of work: train ``config``; with ``table_rows``, also keep its trained position table;
    with ``keep_weights``, the whole trained model.

    Attributes:
        config: a ``posenc.train.TrainConfig`` (seed included).
        table_rows: ``None`` for an ordinary run; else the number of table rows to store
            (chapter 8 reads the tables of the chapter 6 hybrids).
        keep_weights: store the trained model as a checkpoint (``posenc.checkpoint``; chapter
            11 looks inside one of its models).
    """

    config: Any
    table_rows: int | None = None
    keep_weights: bool = False

    def __post_init__(self) -> None:
        if self.keep_weights and self.table_rows is not None:
            raise ValueError("a job keeps either a table (table_rows) or the weights (keep_weights), not both")

    @property
    def kind(self) -> str:
        """``"run"``, ``"table"`` or ``"weights"``."""
        return "weights" if self.keep_weights else "run" if self.table_rows is None else "table"

    def describe(self) -> dict[str, Any]:
        """The JSON description the key hashes and the cache file repeats (to detect mismatches)."""
        return {"kind": self.kind, "config": self.config.to_dict(), "table_rows": self.table_rows}

    def label(self) -> str:
        """A short readable name, e.g. ``"learned (bert) seed=2 n_train=64"``."""
        from posenc.results import scheme_label

        c = self.config
        text = f"{scheme_label(c.scheme, c.position_options, c.combine)} seed={c.seed}"
        extras = [("task", c.task, "copy_offset"), ("lr", c.lr, 3e-3), ("n_train", c.n_train_examples, None),
                  ("token_std", c.token_init_std, 1.0), ("steps", c.steps, 600), ("bos", c.bos_token, False)]
        text += "".join(f" {name}={value}" for name, value, default in extras if value != default)
        return text + {"run": "", "table": f" +table[{self.table_rows}]", "weights": " +weights"}[self.kind]


def description_key(description: dict[str, Any]) -> str:
    """The first 20 hex digits of SHA-256 of ``json.dumps(description, sort_keys=True)``.

    Stable across processes and Python versions (unlike ``hash``), so a rerun finds the file;
    key order inside the description does not matter.
    """
    text = json.dumps(description, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def job_key(job: Job) -> str:
    """A job's stable name: :func:`description_key` of :meth:`Job.describe` (its config, kind, table rows).

    A new ``TrainConfig`` field changes every config's description, hence every key: the
    cache then starts afresh, as it should (the runs would differ in their config).
    """
    return description_key(job.describe())


def cache_path(cache_dir: Path, job: Job) -> Path:
    """Where a job's finished result is stored."""
    return Path(cache_dir) / f"{job_key(job)}.json"


class CorruptCacheError(ValueError):
    """A cache file that cannot be used (the message names the file and the reason)."""


def read_cached(cache_dir: Path, job: Job) -> dict[str, Any] | None:
    """The stored entry of ``job``, or ``None`` if it has not run.

    Raises:
        CorruptCacheError: the file exists but is unreadable, of another format, or holds
            another job than its name says.
    """
    from posenc.results import RunResult

    path = cache_path(cache_dir, job)
    if not path.exists():
        return None
    try:
        entry = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptCacheError(f"cache file {path} is not readable JSON ({error})") from error
    if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
        found = entry.get("format") if isinstance(entry, dict) else type(entry).__name__
        raise CorruptCacheError(f"cache file {path} has format {found!r}; expected {CACHE_FORMAT}")
    if entry.get("job") != job.describe():
        raise CorruptCacheError(f"cache file {path} holds another job than its name says (edited or damaged)")
    try:
        RunResult.from_dict(entry["result"])
    except (KeyError, TypeError, ValueError) as error:
        raise CorruptCacheError(f"cache file {path} has no valid run result ({error!r})") from error
    if job.table_rows is not None and not isinstance(entry.get("table"), dict):
        raise CorruptCacheError(f"cache file {path} lacks the trained table its job asks for")
    if job.keep_weights and not isinstance(entry.get("weights"), str):
        raise CorruptCacheError(f"cache file {path} lacks the trained weights its job asks for")
    return entry


def _write_atomic(path: Path, payload: dict[str, Any]) -> None:
    # Write then rename: a crash mid-write leaves a stray .tmp file, never a half-written entry.
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(payload) + "\n")
    os.replace(temporary, path)


def execute(job: Job, cache_dir: str | Path) -> tuple[str, dict[str, Any]]:
    """Train one job (in a joblib worker or in process) and store its cache file at once.

    Returns:
        ``(key, entry)``: the entry holds ``"result"`` (``RunResult.to_dict()``) and, for a
        table job, ``"table"`` (see :func:`experiments.configs.table_entry`), for a weights job
        ``"weights"`` (the checkpoint file of ``posenc.checkpoint``, base64).
    """
    import torch

    from posenc.runtime import pin_cpu_kernels, single_thread
    from posenc.train import train

    pin_cpu_kernels()  # workers inherit the parent's setting; this covers a run in the parent process
    torch.set_num_threads(1)  # the worker's own setting (train also runs inside single_thread)
    with single_thread():
        model, result = train(job.config)
        entry: dict[str, Any] = {"format": CACHE_FORMAT, "job": job.describe(), "torch": torch.__version__,
                                 "result": result.to_dict()}
        if job.table_rows is not None:
            entry["table"] = configs.table_entry(model, result, job.table_rows)
        if job.keep_weights:
            from posenc.checkpoint import checkpoint_bytes

            entry["weights"] = base64.b64encode(checkpoint_bytes(model, job.config)).decode("ascii")
    _write_atomic(cache_path(Path(cache_dir), job), entry)
    return job_key(job), entry


# -- the grids ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid:
    """One stored grid file and how to make it.

    Attributes:
        name: what ``--grid`` selects, e.g. ``"ch6"``.
        filename: the file in the data folder, e.g. ``"ch6_grid.json"``.
        runs: the grid's runs in file order (configs with their seeds).
        meta: the file's metadata from ``(results, context)``; ``context`` holds
            ``elapsed_s``, ``jobs``, ``cached``, ``tables`` and ``data_dir``.
        tables: jobs whose trained tables go into the metadata (their runs are not in the file).
        checkpoints: weights jobs by file name: each trained model is written to that file in
            the data folder, next to the grid (their runs are not in the grid file).
    """

    name: str
    filename: str
    runs: Callable[[], list[Any]]
    meta: Callable[[list[Any], dict[str, Any]], dict[str, Any]]
    tables: Callable[[], list[Job]] = field(default=lambda: [])
    checkpoints: Callable[[], dict[str, Job]] = field(default=lambda: {})

    def jobs(self) -> list[Job]:
        """The run jobs in file order, then the table jobs, then the weights jobs."""
        return [Job(config) for config in self.runs()] + list(self.tables()) + list(self.checkpoints().values())


def grid_command(name: str) -> str:
    """The command that regenerates one stored grid (what every file's ``meta["command"]`` says)."""
    return f'make grids GRIDS_ARGS="--grid {name}"'


def _chapter_grid(name: str) -> Grid:
    """A grid of :data:`experiments.configs.GRIDS`: every cell with its own number of seeds (and its checkpoints)."""

    def checkpoints() -> dict[str, Job]:
        return {filename: Job(config, keep_weights=True)
                for filename, config in configs.CHECKPOINTS.get(name, lambda: {})().items()}

    def runs() -> list[Any]:
        return [replace(config, seed=seed) for config, n in configs.GRIDS[name]() for seed in range(n)]

    def meta(results: list[Any], context: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {
            "command": grid_command(name),
            "seeds_per_cell": sorted({n for _, n in configs.GRIDS[name]()}),
            "n_runs": len(results),
            "total_wall_time_s": context["elapsed_s"],
            "jobs": context["jobs"],
            "torch": torch.__version__,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "kernels": kernel_setting(),
            "note": WALL_TIME_NOTE,
            "runs_from_cache": context["cached"],
        }

    return Grid(name, f"{name}_grid.json", runs, meta, checkpoints=checkpoints)


def _extra_grid() -> Grid:
    """Chapters 8 and 10 (:func:`experiments.configs.extra_configs`): extra runs plus five trained tables."""

    def runs() -> list[Any]:
        return [replace(config, seed=seed) for config, seeds in configs.extra_configs() for seed in seeds]

    def tables() -> list[Job]:
        _, ch7 = configs.bases()
        rows = max(ch7.eval_lengths)
        return [Job(config, table_rows=rows) for config in configs.table_configs()]

    def meta(results: list[Any], context: dict[str, Any]) -> dict[str, Any]:
        import torch

        _warn_if_tables_differ(context["tables"], Path(context["data_dir"]) / "ch6_grid.json")
        return {
            "command": grid_command("ch8_ch10"),
            "kernels": kernel_setting(),
            "n_runs": len(results),
            "tables": context["tables"],
            "total_wall_time_s": round(context["elapsed_s"], 1),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "note": WALL_TIME_NOTE,
            "runs_from_cache": context["cached"],
        }

    return Grid("ch8_ch10", "ch8_ch10_extra.json", runs, meta, tables)


def _warn_if_tables_differ(tables: list[dict[str, Any]], ch6_file: Path) -> None:
    # The tables are the seed-0 chapter 6 runs trained again: their accuracy should match that file's.
    from posenc.results import load_results, select

    if not ch6_file.exists():
        return
    stored = {(r.config["scheme"], json.dumps(r.config["position_options"], sort_keys=True)): r.metrics["accuracy"]
              for r in select(load_results(ch6_file)[0], seed=0, n_train_examples=None, combine="add",
                              token_init_std=1.0)}
    for table in tables:
        key = (table["scheme"], json.dumps(table["position_options"], sort_keys=True))
        if key in stored and abs(stored[key] - table["accuracy"]) > 1e-9:
            print(f"warning: table {key} accuracy {table['accuracy']} differs from {ch6_file.name}'s {stored[key]}",
                  file=sys.stderr)


def default_grids() -> dict[str, Grid]:
    """Every stored grid of the book, by ``--grid`` name, in the order they are written."""
    return {"ch6": _chapter_grid("ch6"), "ch7": _chapter_grid("ch7"), "ch8_ch10": _extra_grid(),
            "suite": _chapter_grid("suite"), "encoder": _chapter_grid("encoder"),
            "encoder_suite": _chapter_grid("encoder_suite"), "ch6_suite": _chapter_grid("ch6_suite"),
            "rope_scaling": _chapter_grid("rope_scaling"),
            "ch7_arms": _chapter_grid("ch7_arms"), "scale": _chapter_grid("scale"),
            "hybrid_suite": _chapter_grid("hybrid_suite"), "realistic_scaling": _chapter_grid("realistic_scaling"),
            "realistic": _chapter_grid("realistic"), "realistic_passkey": _chapter_grid("realistic_passkey"),
            "realistic_text": _chapter_grid("realistic_text"), "realistic_text_long": _chapter_grid("realistic_text_long")}


# -- running ------------------------------------------------------------------------------------
@dataclass
class Report:
    """What one invocation did."""

    planned: int = 0  #: distinct jobs of the selected grids
    cached: int = 0  #: jobs found finished in the cache
    trained: int = 0  #: jobs trained by this invocation
    redone: list[str] = field(default_factory=list)  #: corrupt cache files reported and trained again
    written: list[Path] = field(default_factory=list)  #: grid files written
    elapsed_s: float = 0.0


def _unique(jobs: Sequence[Job]) -> dict[str, Job]:
    # Two grids may share a run: it is trained once (same key, same cache file).
    return {job_key(job): job for job in jobs}


def plan(
    grids: Sequence[Grid], cache_dir: Path, *, delete_corrupt: bool = True
) -> tuple[dict[str, Job], dict[str, dict[str, Any]], list[str]]:
    """Every distinct job, the cached entries, and the corrupt cache files.

    Args:
        delete_corrupt: delete corrupt files so their runs are trained again (``False``
            for ``--dry-run``, which changes nothing).

    Returns:
        ``(jobs by key, cached entries by key, messages about corrupt files)``.
    """
    jobs = _unique([job for grid in grids for job in grid.jobs()])
    cached: dict[str, dict[str, Any]] = {}
    corrupt: list[str] = []
    for key, job in jobs.items():
        try:
            entry = read_cached(cache_dir, job)
        except CorruptCacheError as error:
            corrupt.append(str(error))
            if delete_corrupt:
                cache_path(cache_dir, job).unlink(missing_ok=True)
            continue
        if entry is not None:
            cached[key] = entry
    return jobs, cached, corrupt


def _cost(job: Job) -> int:
    # Longest first keeps both cores busy to the end. Steps times test lengths is a fair guess, times
    # the heads: each head has its own attention map (ALiBi's eight heads train about seven times
    # slower than one head of the same model width).
    config = job.config
    return config.steps * (1 + len(config.eval_lengths)) * (1 + len(config.eval_extrapolations)) * config.n_heads


def _run(todo: list[Job], cache_dir: Path, jobs: int, progress: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """Train ``todo`` on ``jobs`` processes; yield ``(key, entry)`` as each finishes (any order)."""
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    ordered = sorted(todo, key=_cost, reverse=True)
    parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
    finished = parallel(delayed(execute)(job, str(cache_dir)) for job in ordered)
    with tqdm(total=len(ordered), desc="runs", unit="run", disable=not progress, file=sys.stderr) as bar:
        for key, entry in finished:
            bar.set_postfix_str(f"{Job(_config_of(entry)).label()} acc={entry['result']['metrics']['accuracy']:.3f}")
            bar.update(1)
            yield key, entry


def _config_of(entry: dict[str, Any]) -> Any:
    from posenc.train import TrainConfig

    return TrainConfig.from_dict(entry["job"]["config"])


def _write_grid(
    grid: Grid, entries: dict[str, dict[str, Any]], data_dir: Path, context: dict[str, Any]
) -> list[Path]:
    """Write the grid file and its checkpoints; returns their paths."""
    from posenc.results import RunResult, save_results

    results = [RunResult.from_dict(entries[job_key(Job(config))]["result"]) for config in grid.runs()]
    tables = [entries[job_key(job)]["table"] for job in grid.tables()]
    meta = grid.meta(results, {**context, "tables": tables, "data_dir": data_dir})
    written = [save_results(results, Path(data_dir) / grid.filename, meta=meta)]
    for filename, job in grid.checkpoints().items():
        path = Path(data_dir) / filename
        path.write_bytes(base64.b64decode(entries[job_key(job)]["weights"]))
        written.append(path)
    return written


def regenerate(
    grids: Sequence[Grid],
    *,
    jobs: int | None = None,
    cache_dir: str | Path = CACHE,
    data_dir: str | Path = DATA,
    progress: bool = True,
) -> Report:
    """Run every job of ``grids`` not yet cached, then write each grid file from the cache.

    Args:
        grids: the grids to make (see :func:`default_grids`).
        jobs: worker processes for ``joblib.Parallel`` (default: every core; 1 trains in this process).
        cache_dir: one JSON file per finished job.
        data_dir: where the grid files are written.
        progress: a tqdm bar over finished runs (on stderr).

    Returns:
        A :class:`Report`. Corrupt cache files are listed in ``report.redone`` (and on stderr).
    """
    start = time.perf_counter()
    n_jobs = _check_jobs(jobs)
    cache_dir, data_dir = Path(cache_dir), Path(data_dir)
    planned, entries, redone = plan(grids, cache_dir)
    for message in redone:
        print(f"{message}: deleted, running it again", file=sys.stderr)
    report = Report(planned=len(planned), cached=len(entries), redone=redone)
    todo = [job for key, job in planned.items() if key not in entries]
    trained = {job_key(job) for job in todo}
    if todo:
        # Workers inherit the environment: no OpenMP thread pool to fight over on a small machine,
        # and the matrix kernels every stored run was made with (posenc.runtime.pin_cpu_kernels).
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        pin_cpu_kernels()
        for key, entry in _run(todo, cache_dir, n_jobs, progress):
            entries[key] = entry
            report.trained += 1
    report.elapsed_s = time.perf_counter() - start
    for grid in grids:
        cached = sum(job_key(job) not in trained for job in grid.jobs())
        context = {"elapsed_s": report.elapsed_s, "jobs": n_jobs, "cached": cached}
        report.written.extend(_write_grid(grid, entries, data_dir, context))
    report.elapsed_s = time.perf_counter() - start
    return report


def _check_jobs(jobs: int | None) -> int:
    if jobs is None:
        return os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive number of worker processes, got {jobs!r}")
    return jobs


def dry_run(
    grids: Sequence[Grid], cache_dir: str | Path = CACHE, data_dir: str | Path = DATA, *, list_runs: bool = True
) -> Report:
    """Print every run of ``grids``, whether it is cached, and how the plan compares with the stored file.

    Trains nothing, writes nothing, deletes nothing.
    """
    cache_dir = Path(cache_dir)
    planned, entries, redone = plan(grids, cache_dir, delete_corrupt=False)
    for grid in grids:
        grid_jobs = grid.jobs()
        done = sum(job_key(job) in entries for job in grid_jobs)
        print(f"{grid.name} -> {grid.filename}: {len(grid_jobs)} runs "
              f"({len(grid.tables())} of them keep a trained table, {len(grid.checkpoints())} the trained model), "
              f"{done} cached")
        print(f"  {_compare_with_stored(grid, Path(data_dir) / grid.filename)}")
        if list_runs:
            for job in grid_jobs:
                print(f"  [{'cached' if job_key(job) in entries else 'to run'}] {job.label()}  {job_key(job)}")
    for message in redone:
        print(f"{message}: would be deleted and run again")
    print(f"total: {len(planned)} distinct runs, {len(entries)} cached, {len(planned) - len(entries)} to run "
          f"(cache: {cache_dir})")
    return Report(planned=len(planned), cached=len(entries), redone=redone)


def _compare_with_stored(grid: Grid, path: Path) -> str:
    """One line: does the planned grid list the same runs, in the same order, as the stored file?"""
    from posenc.results import load_results

    if not path.exists():
        return f"no stored file at {path}"
    stored = [json.dumps(r.config, sort_keys=True) for r in load_results(path)[0]]
    planned = [json.dumps(config.to_dict(), sort_keys=True) for config in grid.runs()]
    if planned == stored:
        return f"the stored file holds the same {len(stored)} runs in the same order"
    new, gone = set(planned) - set(stored), set(stored) - set(planned)
    names = sorted({json.loads(text)["scheme"] for text in new})
    return (f"the stored file holds {len(stored)} runs; {len(new)} planned runs are new (schemes {names}), "
            f"{len(gone)} stored runs are no longer planned")


def main(argv: list[str] | None = None) -> int:
    grids = default_grids()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", action="append", choices=list(grids), metavar="NAME",
                        help=f"a grid to make, any of {list(grids)}; repeat for several (default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: every core, here %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and how many are cached; train nothing")
    parser.add_argument("--cache", type=Path, default=CACHE, help="folder of finished runs (default: %(default)s)")
    parser.add_argument("--data", type=Path, default=DATA, help="where grid files are written (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    chosen = [grids[name] for name in dict.fromkeys(args.grid or list(grids))]
    if args.dry_run:
        dry_run(chosen, args.cache, args.data)
        return 0
    report = regenerate(chosen, jobs=args.jobs, cache_dir=args.cache, data_dir=args.data,
                        progress=not args.no_progress)
    for path in report.written:
        print(f"wrote {path}")
    print(f"done: {report.planned} runs ({report.cached} from the cache, {report.trained} trained, "
          f"{len(report.redone)} corrupt cache files redone) on {args.jobs} process(es) in {report.elapsed_s:.0f} s")
    return 0
