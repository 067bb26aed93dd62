"""The wheel a user installs with pip carries the kernels and presets, and the engine finds them there."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``pip wheel .`` of this checkout's files (as ``pip install .`` builds it), from a copy so that the
    build leaves nothing in the checkout."""
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (found,) = out.glob("mochi_dem-*.whl")
    return found


def _tracked(folder: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True, check=True)
    return [line for line in listed.stdout.splitlines() if line]


def test_wheel_carries_every_kernel_and_preset(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = _tracked("kernels") + _tracked("presets")
    assert any(p.endswith(".cu") for p in expected) and any(p.endswith(".toml") for p in expected)
    missing = [p for p in expected if f"engine/{p}" not in names]
    assert not missing, f"not in the wheel: {missing}"


def test_installed_engine_reads_its_own_kernels(wheel, tmp_path):
    """Install the wheel into a folder and import the engine from there, away from the checkout."""
    target = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
                             str(wheel)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import engine\n"
        "from engine.backends.gpu_toolchain import KERNEL_DIR, kernel_source\n"
        "from engine.resources import data_dir\n"
        "assert engine.__file__.startswith(sys.argv[1]), engine.__file__\n"
        "assert str(KERNEL_DIR).startswith(sys.argv[1]), KERNEL_DIR\n"
        "assert 'struct DemParams' in kernel_source('optix_dem.cu')\n"
        "assert (data_dir('presets') / 'sand_pile.toml').is_file() and str(data_dir('presets')).startswith(sys.argv[1])\n"
        "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", probe, str(target.resolve())], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
