"""Checks before work: how many grains the sources will give at their radius, what they will cost, and
whether Pack or Bake asks first.

Everything here reads the meshes' volumes (``addon.operators.pack.estimated_sphere_count``) and the
scene's settings; nothing packs, so the check takes milliseconds even for a scale that would give
millions of grains. The memory per grain comes from the engine's own arrays (``engine.budget``); the
time is a count-based figure (``engine.estimate.work_seconds``: the grain-steps at the cost per grain-step
the last measurement in this session found, or one measured in Blender's window) over the steps per frame the scene
fixes, or that 'auto' will choose for these grain sizes and the fall to the domain's floor
(``engine.timestep.steps_per_frame_before_packing``). Bake measures the real time before it steps.
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
        steps_per_frame: Steps per frame the scene fixes (dt or substeps) or 'auto' will choose, or None
            when they cannot be told before packing (no domain, a source sized by count).
        frames: Frames the bake steps after its first [frames].
        steps_automatic: The steps per frame are 'auto''s expected choice, not the scene's setting.
    """

    counts: tuple[tuple[str, int], ...]
    steps_per_frame: int | None
    frames: int
    steps_automatic: bool = False

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
        """A count-based bake time on the CPU [s] (``engine.estimate.work_seconds``), or None when the steps
        per frame are unknown."""
        from ..engine.estimate import work_seconds

        if self.steps_per_frame is None:
            return None
        return work_seconds(self.particle_count, self.steps_per_frame * max(self.frames, 0))


def scene_steps_per_frame(scene, sources=()) -> tuple[int | None, bool]:
    """Steps per frame of the scene's Mochi settings for ``sources`` (``addon.settings.SourceSettings``),
    and whether 'auto' chose them: (None, True) when 'auto' cannot choose before packing."""
    from ..engine.timestep import fixed_steps_per_frame

    s = scene.mochi
    fps = scene.render.fps / scene.render.fps_base
    if s.timestep_mode == "FIXED":
        return fixed_steps_per_frame(fps=fps, dt=s.dt), False
    if s.timestep_mode == "SUBSTEPS":
        return fixed_steps_per_frame(fps=fps, substeps=s.substeps), False
    return automatic_steps_per_frame(scene, sources), True


def automatic_steps_per_frame(scene, sources) -> int | None:
    """The steps per frame 'auto' will choose for ``sources``, with the stiffness the scene sets or
    'auto' (with Hertz–Mindlin, the sources' and walls' Young's moduli): each source's grain sizes and
    material, falling as a block from its lowest point to the domain's wall along gravity (as engine.scene
    counts a packed object; colliders and fields left out), at its initial speed. None without one domain,
    or with a source sized by its count."""
    import numpy as np

    from ..engine.errors import MochiError
    from ..engine.model import Domain
    from ..engine.packing.mesh import place_vertices
    from ..engine.scene import fall_to_walls
    from ..engine.timestep import steps_per_frame_before_packing
    from .snapshot import domain_blender_to_settings

    domains = [o for o in scene.objects if o.mochi.role == "DOMAIN"]
    if len(domains) != 1 or not sources or any(source.radius is None for source in sources):
        return None
    s = scene.mochi
    try:
        domain = domain_blender_to_settings(domains[0])
    except MochiError:
        return None
    box = Domain(lo=domain.lo, hi=domain.hi)
    lo, hi = np.asarray(domain.lo), np.asarray(domain.hi)
    g = np.asarray(s.gravity, np.float64)
    g_norm = float(np.linalg.norm(g))
    radius, density, youngs, poisson, fall, speed = [], [], [], [], 0.0, 0.0
    for source in sources:
        sizes = {float(source.radius), float(source.radius) * float(source.small_ratio)}
        radius += sorted(sizes)
        density += [float(source.density)] * len(sizes)
        youngs += [float(source.youngs_modulus)] * len(sizes)
        poisson += [float(source.poisson_ratio)] * len(sizes)
        points = place_vertices(source.vertices, transform=source.matrix_world).astype(np.float64)
        reach = float(np.linalg.norm(points - np.asarray(source.pivot), axis=1).max()) if len(points) else 0.0
        speed = max(speed, float(np.linalg.norm(source.linear_velocity))
                    + float(np.linalg.norm(source.angular_velocity)) * reach)
        if g_norm > 0.0 and len(points):  # a packed block lands with its lowest grain
            fall = max(fall, float(fall_to_walls(points, g / g_norm, box).min()))
    turning = s.use_rotating_gravity and s.gravity_rate != 0.0
    size = hi - lo
    if turning:  # gravity can point anywhere: the domain's largest side, as engine.scene takes it
        fall = float(size.max())
    column = float(size.max()) if turning or g_norm == 0.0 else float(np.abs(g / g_norm) @ size)
    restitution = max([float(source.restitution) for source in sources] + [float(domain.wall_restitution)])
    hertz = s.contact_law == "HERTZ"  # the moduli set the stiffness then, as the snapshot passes it
    law = dict(youngs_modulus=youngs, poisson_ratio=poisson,
               wall_moduli=(float(domain.wall_youngs_modulus), float(domain.wall_poisson_ratio))) if hertz else {}
    try:
        return steps_per_frame_before_packing(
            fps=scene.render.fps / scene.render.fps_base, dt=None, substeps=None,
            stiffness=None if s.use_auto_stiffness or hertz else s.stiffness, radius=radius, density=density,
            restitution=restitution, fall_height=fall, initial_speed=speed, gravity=g_norm, column_height=column,
            **law)
    except MochiError:
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
    sources = [source_blender_to_settings(obj, context, frame_start=scene.mochi.frame_start, fps=fps)
               for obj in objects]
    return scene_forecast(scene, [(source.name, estimated_sphere_count(source)) for source in sources], sources)


def scene_forecast(scene, counts, sources=()) -> GrainForecast:
    """The forecast of (object name, grains) ``counts`` (predicted or packed) over the scene's frames;
    ``sources`` (their ``SourceSettings``) let 'auto' steps be told."""
    steps, automatic = scene_steps_per_frame(scene, sources)
    return GrainForecast(counts=tuple(sorted(counts, key=lambda item: -item[1])), steps_per_frame=steps,
                         frames=max(scene.mochi.frame_count() - 1, 0), steps_automatic=automatic)


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
    days = seconds / 86400
    return f"{days:.1f} days" if days < 10 else f"{days:,.0f} days"


def time_sentence(forecast: GrainForecast) -> str:
    """The time part of a message: a rough figure, or where the real one comes from."""
    seconds = forecast.rough_seconds
    if seconds is None:
        return "the bake time is measured when you press Bake"
    from ..engine.estimate import grain_step_seconds

    about = "about " if forecast.steps_automatic else ""
    roughly = "" if seconds < 1 else "roughly "
    basis = "this session's last measurement" if grain_step_seconds()[1] else "a typical pile"
    return (f"a bake of {forecast.frames:,} frames at {about}{forecast.steps_per_frame:,} steps each takes "
            f"{roughly}{format_duration(seconds)} on a CPU (from the grain count at {basis}'s speed; "
            "measured after Pack)")


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
