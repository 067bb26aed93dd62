"""docs/benchmarks.md's GPU section is generated from results files only (benchmarks/make_gpu_doc.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import make_gpu_doc  # noqa: E402


def test_committed_page_equals_its_results_files():
    page = make_gpu_doc.DOC.read_text(encoding="utf-8")
    assert make_gpu_doc.with_section(page, make_gpu_doc.generated_section()) == page, \
        "docs/benchmarks.md is out of date: run python benchmarks/make_gpu_doc.py"


def test_no_gpu_figure_without_a_results_file():
    page = make_gpu_doc.DOC.read_text(encoding="utf-8")
    gpu = page[page.index("## GPU"):page.index(make_gpu_doc.END)]
    if not list(make_gpu_doc.RESULTS.glob("gpu_*.json")):
        assert "ms/step" not in gpu and "0.318 ms" not in page and "6.2×" not in page  # an old figure never measured
        assert make_gpu_doc.NO_RESULTS in gpu


@pytest.mark.slow
def test_section_renders_a_real_bench_gpu_file(tmp_path):
    """bench_gpu.py run for real (cpu backend and the Taichi cpu peer at a few hundred grains) writes a
    file the generator turns into the table of that run."""
    out = tmp_path / "gpu_test_cpu.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--backends", "cpu",
                             "--presets", "freefall@400", "--steps", "3", "--warmup", "1", "--repeats", "1",
                             "--cpu-steps", "3", "--taichi-arch", "cpu", "--out", str(out)],
                            capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    doc = json.loads(out.read_text())
    section = make_gpu_doc.generated_section(tmp_path)
    assert "### gpu_test_cpu.json" in section and doc["command"] in section
    (row,) = [r for r in doc["rows"] if r["backend"] == "cpu"]
    assert f"| {row['scene']} | 400 | 0 | cpu | {row['ms_per_step']:.3f} |" in section
    page = make_gpu_doc.with_section(make_gpu_doc.DOC.read_text(encoding="utf-8"), section)
    assert page.count(make_gpu_doc.BEGIN) == 1 and "### gpu_test_cpu.json" in page
