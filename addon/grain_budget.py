"""Checks before work: how many grains the sources will give at their radius, what they will cost, and
whether Pack or Bake asks first.

Everything here reads the meshes' volumes (``addon.operators.pack.estimated_sphere_count``) and the
scene's settings; nothing packs, so the check takes milliseconds even for a scale that would give
millions of grains. The memory per grain comes from the engine's own arrays (``engine.budget``); the
time is a count-based figure only when the steps per frame are fixed, since 'auto' chooses them from
the packed grains (Bake measures the real time before it steps).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Default of the preference "Ask Before More Grains Than": a million grains keep half a gigabyte of
#: state and springs and step for hours on a CPU; below it a mistyped radius is rarely the cause.
DEFAULT_CONFIRM_GRAINS = 1_000_000
#: Objects named in a dialog before "and N more".
NAMED_OBJECTS = 3


@dataclass(frozen=True)
class GrainForecast:
    """The predicted cost of baking some sources, before packing them.

    Attributes:
        counts: (object name, predicted grains) per source, largest first.
        steps_per_frame: Steps per frame the scene fixes (dt or substeps), or None for 'auto'.
        frames: Frames the bake steps after its first [frames].
    """

    counts: tuple[tuple[str, int], ...]
    steps_per_frame: int | None
    frames: int

    @property
    def particle_count(self) -> int:
        return sum(count for _, count in self.counts)

    @property
    def memory_bytes(self) -> int:
        """State and contact history of the grains in a settled pile [bytes] (``engine.budget.grain_bytes``)."""
        from ..engine.budget import grain_bytes

        return grain_bytes(self.particle_count)

    @property
    def rough_seconds(self) -> float | None:
        """A count-based bake time on the CPU [s], or None when the steps per frame are 'auto'."""
        from ..engine.budget import rough_bake_seconds

        if self.steps_per_frame is None:
            return None
        return rough_bake_seconds(self.particle_count, self.steps_per_frame * max(self.frames, 0))


def scene_steps_per_frame(scene) -> int | None:
    """Steps per frame the scene's Mochi settings fix (Fixed dt or Substeps), or None for 'auto'."""
    from ..engine.timestep import fixed_steps_per_frame

    s = scene.mochi
    fps = scene.render.fps / scene.render.fps_base
    if s.timestep_mode == "FIXED":
        return fixed_steps_per_frame(fps=fps, dt=s.dt)
    if s.timestep_mode == "SUBSTEPS":
        return fixed_steps_per_frame(fps=fps, substeps=s.substeps)
    return None


def forecast_sources(context, objects) -> GrainForecast:
    """Predict the grains of ``objects`` (sources, at their radius or count) for the scene's frame range.

    Raises:
        MochiError: an object that is not a mesh (as Pack and Bake say it).
    """
    from .operators.pack import estimated_sphere_count
    from .snapshot import source_blender_to_settings

    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    return scene_forecast(scene, [(obj.name, estimated_sphere_count(source_blender_to_settings(
        obj, context, frame_start=scene.mochi.frame_start, fps=fps))) for obj in objects])


def scene_forecast(scene, counts) -> GrainForecast:
    """The forecast of (object name, grains) ``counts`` (predicted or packed) over the scene's frames."""
    return GrainForecast(counts=tuple(sorted(counts, key=lambda item: -item[1])),
                         steps_per_frame=scene_steps_per_frame(scene),
                         frames=max(scene.mochi.frame_count() - 1, 0))


def format_bytes(count: float) -> str:
    """``count`` bytes as '512 MB' or '3.2 GB' (decimal units, as Blender's own statistics)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}" if count < 10 * size else f"{count / size:.0f} {unit}"
    return f"{int(count)} B"


def format_duration(seconds: float) -> str:
    """``seconds`` as 'under a second', '40 s', '12 min', '3.5 h' or '2.1 days'."""
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def time_sentence(forecast: GrainForecast) -> str:
    """The time part of a message: a rough figure for fixed steps, else where the real one comes from."""
    seconds = forecast.rough_seconds
    if seconds is None:
        return "the bake time is measured when you press Bake (the time step is automatic)"
    roughly = "" if seconds < 1 else "roughly "
    return (f"a bake of {forecast.frames:,} frames at {forecast.steps_per_frame:,} steps each takes {roughly}"
            f"{format_duration(seconds)} on a CPU")


def named(counts) -> str:
    """'Cube' (1,200,000), 'Suzanne' (800,000) and 2 more: the largest sources first."""
    shown = ", ".join(f"'{name}' ({count:,})" for name, count in counts[:NAMED_OBJECTS])
    rest = len(counts) - NAMED_OBJECTS
    return shown + (f" and {rest} more" if rest > 0 else "")


def grain_confirmation(forecast: GrainForecast, budget: int | None) -> str | None:
    """The dialog's message when ``forecast`` exceeds ``budget`` grains (None: never ask), else None."""
    count = forecast.particle_count
    if budget is None or count <= budget:
        return None
    return (f"About {count:,} grains from {named(forecast.counts)}, over the budget of {budget:,}: they "
            f"need about {format_bytes(forecast.memory_bytes)} of memory for their state and contact springs, "
            f"and {time_sentence(forecast)}. A larger radius gives fewer grains.")
