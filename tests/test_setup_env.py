"""The set-up (``make setup``, ``tools/setup_env.py``): the lock file, CPU-only torch, where torch comes from.

These read the files and the set-up's helpers; ``make test`` itself runs the set-up from a
fresh clone, and the last test checks what it installed.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

from tools import setup_env

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.\-\[\]]+)==(?P<version>[^\s;]+)\s*(;\s*(?P<marker>.+))?$")


def direct_pins() -> list[tuple[str, str, str | None]]:
    """``(name, version, marker)`` of every requirement line of requirements.txt."""
    pins = []
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        assert match, f"requirements.txt: {line!r} is not pinned exactly (name==version [; marker])"
        pins.append((match["name"].lower(), match["version"], match["marker"]))
    return pins


def locked() -> dict[str, list[str]]:
    """Lowercased name -> the exact versions the lock holds for it (one per platform marker)."""
    versions: dict[str, list[str]] = {}
    for head in setup_env.lock_entries():
        name, _, rest = head.partition("==")
        versions.setdefault(name.lower(), []).append(rest.split(";")[0].strip())
    return versions


def test_every_direct_dependency_is_pinned_exactly_and_torch_is_the_cpu_build_on_linux() -> None:
    pins = direct_pins()
    torch = {(version, marker) for name, version, marker in pins if name == "torch"}
    assert torch == {("2.13.0+cpu", 'sys_platform == "linux"'), ("2.13.0", 'sys_platform != "linux"')}, torch
    assert not [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("-e")], (
        "posenc is installed by the set-up itself (editable), not from requirements.txt")


def test_the_lock_holds_every_direct_pin_at_its_version() -> None:
    lock = locked()
    missing = [(name, version) for name, version, _ in direct_pins() if version not in lock.get(name, [])]
    assert not missing, f"requirements.lock is stale (run `make lock`): {missing}"


def test_every_locked_package_has_a_hash_and_none_is_a_cuda_package() -> None:
    entries = setup_env.lock_entries()
    assert len(entries) > 100, "the lock should hold every package, transitive ones included"
    unhashed = [head for head, rest in entries.items() if not any(part.startswith("--hash=sha256:") for part in rest)]
    assert not unhashed, f"lock entries without a hash: {unhashed}"
    cuda = [head for head in entries if re.match(r"(nvidia-|triton|cuda-)", head)]
    assert not cuda, f"CUDA packages in the lock (torch should be the CPU build on Linux): {cuda}"


def test_torch_line_per_platform() -> None:
    linux, mac = setup_env.torch_requirement("linux"), setup_env.torch_requirement("darwin")
    assert setup_env.torch_requirement("linux", "aarch64") == "torch==2.13.0+cpu"  # no hash of that wheel here
    assert linux.startswith("torch==2.13.0+cpu --hash=sha256:") and ";" not in linux
    assert mac.startswith("torch==2.13.0 --hash=sha256:") and mac.count("--hash") > 1
    assert setup_env.torch_requirement("win32") == mac


def test_torch_comes_from_a_configured_local_folder_or_pytorchs_cpu_index(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    wheel = f"torch-2.13.0+cpu-{tag}-{tag}-manylinux_2_28_{setup_env.platform.machine().lower()}.whl"
    (tmp_path / wheel).write_bytes(b"")
    monkeypatch.setattr(setup_env, "configured_wheel_folders", lambda: [tmp_path])
    assert setup_env.torch_source("linux") == ["--find-links", str(tmp_path), "--no-index"]
    monkeypatch.setattr(setup_env, "configured_wheel_folders", lambda: [])
    assert setup_env.torch_source("linux") == ["--index-url", "https://download.pytorch.org/whl/cpu"]
    assert setup_env.torch_source("darwin") == []  # PyPI's macOS and Windows wheels are CPU builds


def test_pip_configuration_is_read_for_wheel_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_FIND_LINKS", f"{tmp_path} file:///no/such/folder")
    assert tmp_path in setup_env.configured_wheel_folders()


@pytest.mark.skipif(sys.platform != "linux", reason="the +cpu build is Linux's; other platforms take PyPI's torch")
def test_this_environment_has_the_cpu_build_of_torch() -> None:
    assert importlib.metadata.version("torch") == "2.13.0+cpu"
    cuda = [d.metadata["Name"] for d in importlib.metadata.distributions() if d.metadata["Name"].startswith("nvidia-")]
    assert not cuda, cuda
