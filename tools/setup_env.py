"""Set up ``.venv`` from the lock file (``make setup``), or write the lock file (``make lock``).

Runs with the system ``python3`` and the standard library only (nothing is installed yet).

``requirements.txt`` names the direct dependencies, each pinned exactly; ``requirements.lock``
is every package they pull in, pinned exactly with its hashes (written by ``uv pip compile``
for CPython 3.11 on every platform). Set-up:

1. **uv.** The ``uv`` on ``PATH`` if there is one; else a fresh venv gets the pinned ``uv``
   from PyPI (one small wheel). If uv cannot be had, pip does the same steps, slower.
2. **torch, CPU-only.** On Linux, PyPI's ``torch`` is the CUDA build (gigabytes of
   ``nvidia-*`` packages); the lock pins ``torch==...+cpu`` there, which comes from
   PyTorch's own CPU wheel index, used for torch alone (``--no-deps``). A local wheel folder
   that pip is configured with (``pip config``: ``find-links``, or ``PIP_FIND_LINKS``) and
   that holds that wheel is used instead of the network. macOS and Windows take PyPI's
   torch, which is a CPU build there.
3. **Everything else** from PyPI with ``uv pip sync`` (hashes checked; packages not in the
   lock are removed, torch from step 2 is kept), then the book's own package ``posenc``,
   editable.

    python3 -m tools.setup_env            # set up .venv (what make setup runs)
    python3 -m tools.setup_env --lock     # write requirements.lock from requirements.txt
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
LOCK = ROOT / "requirements.lock"
#: PyTorch's index of CPU-only wheels (the ``+cpu`` builds).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: The Python the lock is made for (``--python-version`` of ``uv pip compile``).
LOCK_PYTHON = "3.11"


def run(command: list[str], **options: object) -> None:
    """Run a command, echoing it; a failure stops the set-up with its exit status."""
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT, **options)  # type: ignore[call-overload]


def pinned_version(package: str, requirements: Path = REQUIREMENTS) -> str:
    """The exact version ``requirements.txt`` pins for ``package`` (the first ``name==version`` line)."""
    pattern = re.compile(rf"^{re.escape(package)}==([^\s;#]+)", flags=re.IGNORECASE | re.MULTILINE)
    match = pattern.search(requirements.read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"{requirements.name} does not pin {package} (expected a line '{package}==<version>')")
    return match.group(1)


def lock_entries(lock: Path = LOCK) -> dict[str, list[str]]:
    """The lock's requirements as ``{first line: [continuation lines]}``, e.g. ``"torch==2.13.0+cpu ; ..."``."""
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lock.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith((" ", "\t")):
            if current is not None:
                current.append(line.strip().rstrip("\\").strip())
            continue
        current = []
        entries[line.rstrip("\\").strip()] = current
    return entries


def torch_requirement(system: str, machine: str = "x86_64", lock: Path = LOCK) -> str:
    """The lock's torch line for ``system`` (``"linux"``, ``"darwin"``, ``"win32"``), hashes included,
    as one requirement line for ``uv pip install -r``.

    On Linux the ``+cpu`` wheel comes from PyTorch's index, which the machines that write the
    lock cannot reach: its hash is the x86-64 wheel's (the wheel those machines install), so
    on another Linux processor (aarch64) torch is pinned by its exact version only.
    """
    for head, rest in lock_entries(lock).items():
        if not head.startswith("torch=="):
            continue
        version = head.split(";")[0].strip()
        local = "+cpu" in version
        if local == (system == "linux"):
            if system == "linux" and machine not in ("x86_64", "amd64"):
                print(f"torch: the lock has no hash of the {machine} CPU wheel; installing {version} by version")
                return version
            return " ".join([version, *rest])
    raise SystemExit(f"{lock.name} has no torch line for {system}: run `make lock`")


def configured_wheel_folders() -> list[Path]:
    """Local folders pip is configured to find wheels in (``PIP_FIND_LINKS`` and ``pip config``'s ``find-links``)."""
    values = [os.environ.get("PIP_FIND_LINKS", "")]
    try:
        listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                 check=False).stdout
    except OSError:
        listing = ""
    values += [value.strip("'\"") for key, _, value in (line.partition("=") for line in listing.splitlines())
               if key.endswith("find-links")]
    folders = []
    for value in values:
        for item in value.split():
            path = Path(item.removeprefix("file://"))
            if path.is_dir() and path not in folders:
                folders.append(path)
    return folders


def local_torch_folder(version: str) -> Path | None:
    """A configured wheel folder holding ``torch-<version>`` for this Python and processor, or None."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    machine = platform.machine().lower()
    filename = f"torch-{version}-{tag}-{tag}-"
    for folder in configured_wheel_folders():
        if any(p.name.startswith(filename) and machine in p.name for p in folder.glob("torch-*.whl")):
            return folder
    return None


def find_uv(venv_dir: Path) -> str | None:
    """The uv to use: on PATH, else installed into the venv from PyPI (the pinned version); None if neither."""
    on_path = shutil.which("uv")
    if on_path:
        return on_path
    in_venv = venv_dir / "bin" / "uv"
    if not in_venv.exists():
        try:
            run([str(venv_dir / "bin" / "python"), "-m", "pip", "install", "--quiet",
                 f"uv=={pinned_version('uv')}"])
        except subprocess.CalledProcessError:
            print("could not install uv from PyPI: setting up with pip instead (slower)", file=sys.stderr)
            return None
    return str(in_venv)


def torch_source(system: str) -> list[str]:
    """Where torch comes from: a local CPU wheel folder, PyTorch's CPU index (Linux), or PyPI."""
    if system != "linux":
        return []
    folder = local_torch_folder(pinned_version("torch"))
    if folder is not None:
        print(f"torch: the CPU wheel in the local folder {folder} (from pip's configuration)")
        return ["--find-links", str(folder), "--no-index"]
    print(f"torch: the CPU-only build from PyTorch's index {TORCH_CPU_INDEX}")
    return ["--index-url", TORCH_CPU_INDEX]


def create_venv(venv_dir: Path) -> None:
    """A venv with CPython 3.11, the Python the lock is made for: this one, or ``python3.11`` on PATH."""
    if sys.version_info[:2] == (3, 11):
        print(f"+ python -m venv {venv_dir}", flush=True)
        venv.create(venv_dir, with_pip=True)
        return
    other = shutil.which("python3.11")
    if other is None:
        raise SystemExit(f"the lock (requirements.lock) is made for CPython {LOCK_PYTHON}, found "
                         f"{platform.python_version()} and no python3.11 on PATH: install Python {LOCK_PYTHON} "
                         f"(or run `make PYTHON=/path/to/python3.11 book`)")
    run([other, "-m", "venv", str(venv_dir)])


def set_up(venv_dir: Path) -> None:
    """Create ``venv_dir`` if needed and install the lock into it (see the module docstring)."""
    if not (venv_dir / "bin" / "python").exists():
        create_venv(venv_dir)
    python = str(venv_dir / "bin" / "python")
    system = sys.platform
    torch_line = torch_requirement(system, platform.machine().lower())
    torch_file = venv_dir / "torch-requirement.txt"
    torch_file.write_text(torch_line + "\n", encoding="utf-8")
    uv = find_uv(venv_dir)
    if uv is not None:
        run([uv, "pip", "install", "--python", python, "--no-deps", *torch_source(system), "-r", str(torch_file)])
        run([uv, "pip", "sync", "--python", python, str(LOCK)])
        run([uv, "pip", "install", "--python", python, "--no-deps", "-e", "."])
    else:
        pip = [python, "-m", "pip", "install", "--quiet"]
        run([*pip, "--no-deps", *torch_source(system), "-r", str(torch_file)])
        run([*pip, "--no-deps", "--require-hashes", "-r", str(LOCK)])
        run([*pip, "--no-deps", "--no-build-isolation", "-e", "."])


def write_lock() -> None:
    """Resolve ``requirements.txt`` for CPython 3.11 on every platform and write ``requirements.lock``."""
    uv = shutil.which("uv") or str(ROOT / ".venv" / "bin" / "uv")
    folder = local_torch_folder(pinned_version("torch"))
    source = ["--find-links", str(folder)] if folder else ["--index", TORCH_CPU_INDEX,
                                                          "--index-strategy", "unsafe-best-match"]
    run([uv, "pip", "compile", str(REQUIREMENTS.name), "--universal", "--python-version", LOCK_PYTHON,
         "--generate-hashes", "--custom-compile-command", "make lock", "--quiet", *source, "-o", LOCK.name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv", help="the environment to set up")
    parser.add_argument("--lock", action="store_true", help="write requirements.lock instead of setting up")
    args = parser.parse_args(argv)
    if args.lock:
        write_lock()
    else:
        set_up(args.venv.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
