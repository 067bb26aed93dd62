"""What the rt backend steps today, and the one sentence that refuses everything else.

Issue 28's rt backend steps the Mochi paper's model and more: the linear (Hooke) normal law with Mochi's friction
cap, either friction model (history-free 'damper', or 'spring': tangential springs per contact and per
wall side, static friction), grains that rotate or not (the full law's friction and rolling torques,
rolling springs per contact and per wall side), SJKR cohesion, semi-implicit Euler or velocity Verlet,
glued bodies (breakable glue bonds, engine.backends.rt_bonds), rigid bodies of rotating grains (clumps,
engine.backends.rt_clumps; refused without rotation, as on the CUDA backends), the box walls (open sides
allowed), gravity (constant or rotating), force fields of every kind (uniform and rotating ones added to
gravity, the others per grain by kernels/field_law.h, the CUDA kernels' source), mesh colliders, static or
moving (engine.backends.rt_colliders, the swept test included) and any number of materials.
``check_rt_model`` is called by the backend's constructor, before any device is opened, so a scene the
backend cannot bake is refused before any work, naming what is missing and what to use instead
(issue 28: "whatever the CPU bakes, rt bakes, or it refuses before work naming what it lacks").
"""

from __future__ import annotations

from ..errors import MochiError
from ..model import Model

#: What every refusal ends with: the backends that have the feature.
USE_CPU = "use --backend cpu"


def frictional(physics) -> bool:
    """Whether any contact has friction (without it 'spring' and 'damper' are the same law)."""
    return any(m.friction > 0 for m in physics.materials) or physics.domain.wall_friction > 0


def rt_refusal(model: Model) -> str | None:
    """The sentence refusing ``model`` on the rt backend, or None when the backend can step it.

    Checked in this order: contact law, friction cap and rigid bodies of grains that do not rotate (glued
    and rigid bodies are stepped: engine.backends.rt_bonds, engine.backends.rt_clumps; mesh colliders too:
    engine.backends.rt_colliders, which refuses them on a device without float64 in shaders or inline ray
    queries).
    """
    physics = model.physics
    if physics.contact_normal != "hooke":
        return (f"The rt backend has only the linear (Hooke) contact law, not '{physics.contact_normal}'; "
                f"{USE_CPU}, or set [contact] normal = \"hooke\".")
    if physics.friction_cap != "clipped":
        return (f"The rt backend has only Mochi's friction cap, not '{physics.friction_cap}'; {USE_CPU}, or set "
                "[contact] friction_cap = \"clipped\".")
    if model.clumps is not None and not physics.rotation:  # as the CUDA backends (gpu_params.check_bodies)
        return (f"The rt backend moves rigid bodies only with rotating grains; {USE_CPU}, or turn rotation on.")
    return None


def check_rt_model(model: Model) -> None:
    """Refuse, in one sentence, a model the rt backend cannot step (see ``rt_refusal``).

    Raises:
        MochiError: the first feature of ``model`` that the rt backend lacks.
    """
    sentence = rt_refusal(model)
    if sentence is not None:
        raise MochiError(sentence)
