"""Wedges: one preset baked once per combination of varied settings, each into its own cache folder.

``mochi wedge PRESET --vary friction=0.3,0.5,0.7 --vary seed=1..4 --out DIR`` makes the 3 × 4 = 12
variants of the preset (the last --vary changes fastest), bakes each into DIR/friction-0.3_seed-1/ and
so on through ``engine.bake.bake`` (one call per folder: the bake itself guards its folder), up to
``jobs`` at a time in separate processes (``engine.wedge_workers``: none outlives the wedge), and records
them in DIR/wedge.json. A variant's settings are applied to the preset's TOML document and validated by
the preset parser, so a bad value gets the same one-sentence error as in a preset file, before anything
is baked.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from .cache import read_manifest
from .errors import MochiError
from .preset import Preset, parse_preset, preset_inputs, read_preset_document

WEDGE_MANIFEST = "wedge.json"
#: Most combinations one wedge may have: each is a bake, so more is a typo (seed=1..1000000), and the
#: count is refused before any list of values or combinations is built.
MAX_VARIANTS = 10_000
#: Longest file name most file systems take [bytes].
NAME_MAX_BYTES = 255


@dataclass(frozen=True)
class WedgeSetting:
    """A preset setting a wedge can vary.

    Attributes:
        table: Preset table ('scene', 'time', 'domain' ...); 'materials' sets every material.
        key: Key in that table.
        integer: Values must be integers (seeds, step counts).
        help: What it is, with its unit.
    """

    table: str
    key: str
    integer: bool
    help: str


SETTINGS = {
    "friction": WedgeSetting("materials", "friction", False, "Coulomb friction of every material (grain–grain)"),
    "restitution": WedgeSetting("materials", "restitution", False, "restitution of every material, from 0.001 to 1"),
    "density": WedgeSetting("materials", "density", False, "density of every material [kg/m³]"),
    "wall_friction": WedgeSetting("domain", "wall_friction", False, "friction against the domain walls"),
    "wall_restitution": WedgeSetting("domain", "wall_restitution", False, "restitution against the walls"),
    "seed": WedgeSetting("scene", "seed", True, "random seed of the emitters"),
    "stiffness": WedgeSetting("time", "stiffness", False, "contact stiffness [N/m]"),
    "dt": WedgeSetting("time", "dt", False, "time step [s]"),
    "substeps": WedgeSetting("time", "substeps", True, "steps per frame"),
}


@dataclass(frozen=True)
class WedgeAxis:
    """One --vary: a setting and the values it takes, in order."""

    name: str
    values: tuple[float | int, ...]


def parse_vary(text: str) -> WedgeAxis:
    """Parse 'NAME=V1,V2,...' or 'NAME=A..B' (integers A to B inclusive).

    Raises:
        MochiError: unknown setting, no values, a value that is not a number, or a bad range.
    """
    name, sep, values_text = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise MochiError(f"--vary '{text}' must look like NAME=1,2,3 or NAME=1..4.")
    setting = SETTINGS.get(name)
    if setting is None:
        raise MochiError(f"--vary: unknown setting '{name}'; a wedge can vary {', '.join(SETTINGS)}.")
    values_text = values_text.strip()
    if ".." in values_text:
        low, _, high = values_text.partition("..")
        try:
            low_value, high_value = int(low), int(high)
        except ValueError:
            raise MochiError(f"--vary {name}: the range '{values_text}' must be two integers, A..B.") from None
        if high_value < low_value:
            raise MochiError(f"--vary {name}: the range '{values_text}' is empty ({high_value} < {low_value}).")
        if high_value - low_value + 1 > MAX_VARIANTS:
            raise MochiError(f"--vary {name}: the range '{values_text}' has {high_value - low_value + 1:,} values; a "
                             f"wedge bakes at most {MAX_VARIANTS:,} variants.")
        values = tuple(range(low_value, high_value + 1))
    else:
        parts = values_text.split(",")
        if len(parts) > MAX_VARIANTS:
            raise MochiError(f"--vary {name} lists {len(parts):,} values; a wedge bakes at most {MAX_VARIANTS:,} "
                             "variants.")
        values = tuple(_number(name, part.strip(), setting.integer) for part in parts)
    if not values:
        raise MochiError(f"--vary {name} has no values.")
    if len(set(values)) != len(values):
        raise MochiError(f"--vary {name} lists a value twice.")
    return WedgeAxis(name, values)


def _number(name: str, text: str, integer: bool) -> float | int:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise MochiError(f"--vary {name}: '{text}' is not {kind}.") from None
    if not math.isfinite(value):
        raise MochiError(f"--vary {name}: '{text}' is not a finite number.")
    return value


def _format_value(value: float | int) -> str:
    """The shortest text that reads back as ``value`` (0.3, 0.3000001, 1e-05): two values never print
    alike, so two variants never share a folder or a label."""
    if isinstance(value, int):
        return str(value)
    short = f"{value:g}"  # '0.3', '-1', '1e-05' when exact; else every digit repr needs
    return short if float(short) == value else repr(float(value))


@dataclass(frozen=True)
class WedgeVariant:
    """One combination.

    Attributes:
        index: 1-based position in the wedge (the order of ``expand``).
        values: Setting name → value.
        folder: Its cache folder.
    """

    index: int
    values: dict
    folder: Path

    @property
    def label(self) -> str:
        """'friction=0.3 seed=1', for titles and logs."""
        return " ".join(f"{name}={_format_value(value)}" for name, value in self.values.items())


def folder_name(values: dict) -> str:
    """Cache folder name of a combination: 'friction-0.3_seed-1' (no characters a shell or Blender
    path field would trip over)."""
    return "_".join(f"{name}-{_format_value(value)}" for name, value in values.items())


def expand(axes: list[WedgeAxis], out: str | os.PathLike) -> list[WedgeVariant]:
    """Every combination of ``axes`` (the last axis changes fastest), with its folder under ``out``.

    Raises:
        MochiError: no axes, or a setting varied twice.
    """
    if not axes:
        raise MochiError("A wedge needs at least one --vary NAME=VALUES.")
    names = [axis.name for axis in axes]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise MochiError(f"--vary {twice[0]} is given twice; list all its values in one --vary.")
    total = math.prod(len(axis.values) for axis in axes)
    if total > MAX_VARIANTS:
        raise MochiError(f"This wedge has {total:,} combinations; a wedge bakes at most {MAX_VARIANTS:,} variants.")
    out = Path(out)
    variants = []
    folders: dict[str, int] = {}
    for index, combination in enumerate(itertools.product(*(axis.values for axis in axes)), start=1):
        values = dict(zip(names, combination))
        name = folder_name(values)
        if len(name.encode("utf-8")) > NAME_MAX_BYTES:
            raise MochiError(f"The folder name of combination {index} ('{name[:40]}…') is longer than "
                             f"{NAME_MAX_BYTES} bytes; vary fewer settings or use shorter values.")
        if name in folders:  # cannot happen with exact values, but two bakes must never share a folder
            raise MochiError(f"Combinations {folders[name]} and {index} would share the folder '{name}'.")
        folders[name] = index
        variants.append(WedgeVariant(index, values, out / name))
    return variants


def variant_preset(document: dict, source: str, values: dict) -> Preset:
    """The preset of one variant: ``values`` written into the TOML document, then validated.

    Raises:
        MochiError: a value the preset schema refuses (named as '<source> [wedge friction=...]: ...').
    """
    data = json.loads(json.dumps(document))  # a deep copy of plain TOML data
    for name, value in values.items():
        setting = SETTINGS[name]
        if setting.table == "materials":
            materials = data.setdefault("materials", [{}])
            for material in materials:
                material[setting.key] = value
        else:
            table = data.setdefault(setting.table, {})
            table[setting.key] = value
            if setting.key in ("dt", "substeps"):  # a preset gives one of the two
                table.pop("substeps" if setting.key == "dt" else "dt", None)
    label = " ".join(f"{n}={_format_value(v)}" for n, v in values.items())
    return parse_preset(data, f"{source} [wedge {label}]")


def check_folders(variants: list[WedgeVariant], *, resume: bool, overwrite: bool) -> None:
    """Refuse, before baking anything, a variant folder that holds anything but Mochi's own files, or a
    bake that neither ``resume`` nor ``overwrite`` allows touching (``engine.bake.check_bake_folder``).

    Raises:
        MochiError: naming the folder and what is wrong with it.
    """
    from .bake import check_bake_folder

    for variant in variants:
        try:
            check_bake_folder(variant.folder, overwrite=overwrite or resume, resume=False)
        except MochiError as exc:
            if "already holds a bake" in str(exc):
                manifest = read_manifest(variant.folder)
                raise MochiError(f"'{variant.folder}' already holds a bake of {manifest['frames_completed']} frames; "
                                 "use --resume to continue the wedge or --overwrite to bake it again.") from None
            raise


@dataclass
class VariantResult:
    """How one variant's bake ended.

    Attributes:
        index: The variant's index.
        frames_done: Last complete frame in its folder.
        seconds: Wall time of its bake [s].
        backend: Backend used, as the bake describes it.
        error: The bake's one-sentence failure, or None.
    """

    index: int
    frames_done: int = 0
    seconds: float = 0.0
    backend: str = ""
    error: str | None = None


@dataclass(frozen=True)
class WedgeBakeOptions:
    """Settings shared by every variant's bake (``rt_device``: the device kind for rt or auto, or None)."""

    frames: int | None = None
    particles: int | None = None
    backend: str = "cpu"
    resume: bool = False
    overwrite: bool = False
    rt_device: str | None = None


def bake_variant(preset_path: str, variant: WedgeVariant, options: WedgeBakeOptions) -> VariantResult:
    """Bake one variant into its folder (in the calling process). A MochiError becomes ``error``."""
    from .bake import bake
    from .scene import setup_from_preset

    began = time.perf_counter()
    result = VariantResult(variant.index)
    try:
        preset = variant_preset(read_preset_document(preset_path), preset_path, variant.values)
        manifest = read_manifest(variant.folder) if variant.folder.is_dir() else None
        resuming = options.resume and manifest is not None and manifest.get("frames_completed", 0) >= 1
        setup = None if resuming else setup_from_preset(preset, particles=options.particles)
        progress = bake(setup, variant.folder, frames=preset.frames if options.frames is None else options.frames, backend=options.backend,
                        # --resume continues the variants that have a bake and starts the others (a
                        # farm task retried, or run for the first time, does the right thing either way).
                        resume=resuming, overwrite=options.overwrite,
                        info={"preset": str(Path(preset_path).resolve()), "up_axis": preset.up_axis,
                              "particles_requested": options.particles, "wedge": variant.values},
                        inputs=preset_inputs(preset, particles=options.particles), rt_device=options.rt_device)
        result.frames_done, result.backend = progress.frames_done, progress.backend_name
    except MochiError as exc:
        result.error = str(exc)
        try:
            manifest = read_manifest(variant.folder) if variant.folder.is_dir() else None
        except MochiError:  # a damaged manifest: its error is the one already reported
            manifest = None
        result.frames_done = int(manifest.get("frames_completed", 0)) if manifest else 0
    result.seconds = time.perf_counter() - began
    return result


# --- parallel bakes (the worker processes: engine.wedge_workers) --------------------------------

def plan_parallelism(variant_count: int, *, backend: str, jobs: int | None, gpus: int | None) -> tuple[int, int]:
    """(parallel bakes, numba threads per bake).

    CPU: ``jobs`` bakes at once (default: as many as cores, at most one per variant), the cores shared
    out between them. GPU backends: one bake per GPU (``gpus``, default 1), each process seeing only
    its own device.

    Raises:
        MochiError: jobs or gpus below 1.
    """
    cores = os.cpu_count() or 1
    if jobs is not None and jobs < 1:
        raise MochiError(f"--jobs must be at least 1, not {jobs}.")
    if gpus is not None and gpus < 1:
        raise MochiError(f"--gpus must be at least 1, not {gpus}.")
    if backend in ("cuda", "optix"):
        return min(variant_count, gpus or 1), 1
    parallel = min(variant_count, jobs or cores)
    return parallel, max(1, cores // parallel)


def bake_wedge(preset_path: str, variants: list[WedgeVariant], options: WedgeBakeOptions, *,
               jobs: int | None = None, gpus: int | None = None,
               on_result: Callable[[WedgeVariant, VariantResult], None] | None = None) -> list[VariantResult]:
    """Bake ``variants``, several at a time in worker processes (one alone runs in this process).

    Returns:
        One result per variant, in variant order; failures are in their ``error``.
    """
    parallel, threads = plan_parallelism(len(variants), backend=options.backend, jobs=jobs, gpus=gpus)
    results: dict[int, VariantResult] = {}
    if parallel == 1:
        for variant in variants:
            results[variant.index] = bake_variant(preset_path, variant, options)
            if on_result:
                on_result(variant, results[variant.index])
        return [results[v.index] for v in variants]
    from .wedge_workers import run_in_workers

    def report(variant: WedgeVariant, result: VariantResult) -> None:
        results[variant.index] = result
        if on_result:
            on_result(variant, result)

    run_in_workers(partial(bake_variant, preset_path, options=options), variants, parallel=parallel,
                   threads=threads, gpu=options.backend in ("cuda", "optix"), on_result=report)
    return [results[v.index] for v in variants]


@dataclass
class WedgeRecord:
    """DIR/wedge.json: what the wedge is and how each variant's bake went."""

    preset: str
    axes: list[WedgeAxis]
    variants: list[WedgeVariant]
    results: dict[int, VariantResult] = field(default_factory=dict)

    def to_json(self) -> dict:
        rows = []
        for variant in self.variants:
            result = self.results.get(variant.index)
            rows.append({"index": variant.index, "values": variant.values, "folder": variant.folder.name,
                         "frames_done": result.frames_done if result else None,
                         "seconds": round(result.seconds, 3) if result else None,
                         "backend": result.backend if result else None,
                         "error": result.error if result else None})
        return {"format": "mochi-wedge", "format_version": 1, "preset": self.preset,
                "vary": {axis.name: list(axis.values) for axis in self.axes}, "variants": rows}

    def write(self, out: Path, plan) -> Path:
        """Write DIR/wedge.json through ``plan`` (an ``engine.output_files.OutputPlan`` naming it: replaced
        only when Mochi can prove it wrote it, or with --overwrite)."""
        document = json.dumps(self.to_json(), indent=2).encode("utf-8")
        return plan.write(out / WEDGE_MANIFEST, lambda handle: handle.write(document))
