"""Plots of the GPU benchmark results (JSON written by benchmarks/bench_gpu.py), PNG with matplotlib.

- ``gpu_ms_per_step.png``: left, ms per step against particle count for the paper's freefall, each
  backend and the Taichi peer (solid: from the initial state; dashed: from the state at the end of
  the preset's frames); right, every scene at about 1M particles, backend against peer.
- ``gpu_rebuild_sweep.png``: build, detect, update and total ms per step against the rebuild
  interval (the paper's Fig. 10).

    python benchmarks/plot_gpu.py benchmarks/results/h100_bench.json --out docs/img
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"cuda": "tab:blue", "optix": "tab:green", "cpu": "tab:gray", "taichi-cuda": "tab:red",
           "taichi-cpu": "tab:orange"}


def load(paths: list[str]) -> dict:
    """Rows, sweep and device of every file, concatenated (device from the first)."""
    merged = {"rows": [], "sweep": [], "device": None}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        merged["rows"] += doc.get("rows", [])
        merged["sweep"] += doc.get("sweep", [])
        merged["device"] = merged["device"] or doc.get("device")
    return merged


def _peer(row: dict) -> bool:
    return row["backend"].startswith("taichi")


def _label(row: dict) -> str:
    if _peer(row):
        return f"Taichi {row['backend'].split('-', 1)[1].upper()} peer" + (
            " (spring)" if row.get("taichi_friction_model") == "spring" else "")
    return f"Mochi {row['backend']}"


def device_title(device: dict | None) -> str:
    if not device:
        return ""
    smi = (device.get("nvidia_smi") or "").split(",")
    return f"{smi[0].strip()}, driver {smi[1].strip()}" if len(smi) > 1 else ""


def plot_scaling(doc: dict, out: Path) -> Path:
    rows = [r for r in doc["rows"] if r.get("taichi_friction_model") != "spring"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.4]})
    freefall = [r for r in rows if r["scene"] == "Freefall"]
    for backend in sorted({r["backend"] for r in freefall}):
        for late in (False, True):
            series = sorted((r for r in freefall if r["backend"] == backend and (r["start_step"] > 0) == late),
                            key=lambda r: r["particles"])
            if not series:
                continue
            left.plot([r["particles"] for r in series], [r["ms_per_step"] for r in series],
                      marker="o", linestyle="--" if late else "-", color=COLOURS.get(backend, "black"),
                      label=_label(series[0]) + (" (landed state)" if late else ""))
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("particles")
    left.set_ylabel("ms per step")
    left.set_title("Freefall: ms per step against particle count")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)

    # Every scene at its ~1M size: grouped bars, initial state and landed state.
    bars = [r for r in rows if 900_000 <= r["particles"] <= 1_200_000]
    groups = []
    for r in bars:
        key = (r["scene"], r["start_step"] > 0)
        if key not in groups:
            groups.append(key)
    backends = sorted({r["backend"] for r in bars}, key=lambda b: (_peer({"backend": b}), b))
    width = 0.8 / max(len(backends), 1)
    for index, backend in enumerate(backends):
        xs, ys = [], []
        for g, (scene, late) in enumerate(groups):
            match = [r for r in bars if r["backend"] == backend and r["scene"] == scene and (r["start_step"] > 0) == late]
            if match:
                xs.append(g + (index - (len(backends) - 1) / 2) * width)
                ys.append(match[0]["ms_per_step"])
        right.bar(xs, ys, width, color=COLOURS.get(backend, "black"),
                  label=_label({"backend": backend}))
    right.set_xticks(range(len(groups)))
    right.set_xticklabels([f"{scene}\n{'landed' if late else 'start'}" for scene, late in groups], fontsize=7,
                          rotation=30, ha="right")
    right.set_yscale("log")
    right.set_ylabel("ms per step")
    right.set_title("Every paper scene at about 1M particles")
    right.grid(True, axis="y", which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.suptitle(device_title(doc["device"]), fontsize=9)
    fig.tight_layout()
    path = out / "gpu_ms_per_step.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_sweep(doc: dict, out: Path) -> Path | None:
    sweep = sorted(doc["sweep"], key=lambda r: r["rebuild_interval"])
    if not sweep:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    xs = [r["rebuild_interval"] for r in sweep]
    for key, label, style in (("build_ms", "build (grid + Morton reorder)", "o-"), ("detect_ms", "detect", "s-"),
                              ("update_ms", "update", "^-"), ("ms_per_step", "total", "k*--")):
        ax.plot(xs, [r[key] for r in sweep], style, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("rebuild interval (steps between Morton reorders)")
    ax.set_ylabel("ms per step")
    first = sweep[0]
    ax.set_title(f"{first['scene']}, {first['particles']:,} particles, {first['backend']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.suptitle(device_title(doc["device"]), fontsize=9)
    fig.tight_layout()
    path = out / "gpu_rebuild_sweep.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="files written by bench_gpu.py")
    parser.add_argument("--out", default="docs/img", help="folder of the PNG files")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = load(args.json)
    for path in (plot_scaling(doc, out), plot_sweep(doc, out)):
        if path:
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
