"""Static friction against mesh colliders on the GPU backends, run on the host: the launcher
(engine.backends.gpu_colliders) over the host build of kernels/collider_math.cuh, with the CUDA kernel
or the OptiX programs' traversal emulated, stepped with friction_model 'spring' beside the CPU
reference's hooks (engine.colliders.ColliderSet): forces, tangential springs, normals, slot counts and
grain states agree to the bit over 100 steps of a static bowl, a turning paddle and deforming sheets,
with the device slots reordered as Morton reorders do and a resume from the CPU's history halfway.
Also: inactive grains and lost contacts forget their springs, a CPU backend's whole history resumes
through ``BackendGpu.set_contact_history`` and comes back unchanged, the device copy of the colliders
keeps the local origin, and only unknown friction models are refused.

Only the launches need a GPU (tests/gpu/test_gpu_colliders.py, test_gpu_bakes.py).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from engine.backends import gpu_colliders
from engine.backends.gpu_params import DEM_PARAMS_DTYPE, check_friction_model
from engine.colliders import Collider, ColliderSet
from engine.colliders.collider_set import SPRING_HISTORY_KEYS
from engine.errors import MochiError
from engine.model import Material, Physics

from .test_collider_device_math import (Grains, HostArray, HostModule, HostParticles, bowl, grains_near_surface,
                                        launcher_scene, triangle_aabbs)
from .test_collider_device_math import host_library  # noqa: F401  (the fixture the tests below take)

STEPS = 100
RESUME_STEP = 50
PERMUTE_EVERY = 7


def spring_scene(name):
    """(colliders, grains, physics) with friction_model 'spring'."""
    if name == "static bowl":
        rng = np.random.default_rng(8)
        vertices, triangles = bowl()
        colliders = ColliderSet((Collider("bowl", vertices, triangles, thickness=0.003, friction=0.5),))
        grains = grains_near_surface(vertices, triangles, 2000, rng, (0.004, 0.01), spread=0.012)
        grains.velocities *= 0.1  # slow: many grains rest or roll on the shell, their springs loaded
        physics = Physics(materials=(Material(restitution=0.3, friction=0.6), Material(restitution=0.8, friction=0.2)),
                          stiffness=200.0, dt=5e-4)
    else:
        colliders, grains, physics = launcher_scene(name)
    return colliders, grains, dataclasses.replace(physics, friction_model="spring")


class PermutedParticles(HostParticles):
    """Host particles whose slots hold the model's grains in the order ``slot_to_model``, as after a
    Morton reorder (the collider springs live by model index and must not move)."""

    def __init__(self, model, grains: Grains):
        super().__init__(model, grains)
        self.slot_to_model = np.arange(self.particle_count, dtype=np.int32).view(HostArray)
        self.params.view(DEM_PARAMS_DTYPE)[0]["slot_to_model"] = self.slot_to_model.ctypes.data
        self.model_info = np.array(self.info)
        self.model_mass_radius = (np.array(self.vel[:, 3]), np.array(self.pos[:, 3]))

    def permute(self, order) -> None:
        self.slot_to_model[:] = order
        self.info[:] = self.model_info[order]
        self.vel[:, 3] = self.model_mass_radius[0][order]
        self.pos[:, 3] = self.model_mass_radius[1][order]

    def put(self, pos, vel) -> None:
        """Model-order positions and velocities (n, 3) into the slots."""
        self.pos[:, :3] = pos[self.slot_to_model]
        self.vel[:, :3] = vel[self.slot_to_model]

    def take(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Slot forces, positions and velocities back in model order."""
        out = [np.empty((self.particle_count, 3), a.dtype) for a in (self.force, self.pos, self.vel)]
        for array, slots in zip(out, (self.force, self.pos, self.vel)):
            array[self.slot_to_model] = slots[:, :3]
        return tuple(out)


def optix_add_forces(library, device, step: int) -> None:
    """``OptixColliders.add_forces`` with the traversal emulated: per collider, the triangles' widened
    boxes, a point ray per slot (collider_resolve in __raygen__collider), the double sums added once."""
    runtimes = device._advance(step)
    particles = device.particles
    n = particles.particle_count
    radius_max = float(particles.pos[:, 3].max())
    total = np.zeros((n, 3))
    for mesh, runtime in zip(device.meshes, runtimes):
        triangles = runtime.collider.triangles
        inflate = max(radius_max + 0.5 * runtime.collider.thickness, mesh.displacement_max)
        aabb = triangle_aabbs(library, mesh.host_params, len(triangles), inflate)
        sums = np.zeros((n, 3))
        library.collider_force_sums_optix_host(particles.params.data.ptr, mesh.host_params.ctypes.data,
                                               aabb.ctypes.data, len(triangles), sums.ctypes.data)
        total += sums
    live = (np.asarray(particles.info) & 1).astype(bool)
    force = particles.force[:, :3].astype(np.float64) + total
    particles.force[live, :3] = force[live].astype(np.float32)


def assert_same_history(device_history: dict, cpu_history: dict, step: int) -> None:
    for name in (*SPRING_HISTORY_KEYS, *(key for key in cpu_history if key.startswith("collider_tree_"))):
        assert name in device_history, (name, step)
        a, b = np.asarray(device_history[name]), np.asarray(cpu_history[name])
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{name} differs at step {step}"


@pytest.mark.parametrize("path", ["cuda", "optix"])
@pytest.mark.parametrize("scene", ["static bowl", "stairs + paddle", "bulging sheet", "scrambling sheet"])
def test_spring_friction_steps_like_the_cpu_hooks(host_library, monkeypatch, scene, path):
    """100 steps with friction_model 'spring': forces, springs and states equal the CPU hooks' to the
    bit, through slot reorders, tree rebuilds and a resume from the CPU's history at step 50."""
    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(host_library))
    colliders, grains, physics = spring_scene(scene)
    model = SimpleNamespace(physics=physics, colliders=colliders, particle_count=len(grains.positions))
    particles = PermutedParticles(model, grains)
    device = gpu_colliders.DeviceColliders.for_model(particles)
    assert all(mesh.springs_on for mesh in device.meshes)
    assert particles.params.view(DEM_PARAMS_DTYPE)[0]["slot_to_model"] != 0

    reference = colliders.fresh_copy()
    damper = dataclasses.replace(physics, friction_model="damper")
    pos, vel = grains.positions.copy(), grains.velocities.copy()
    dt = physics.dt
    gravity = np.array([0.0, -9.81, 0.0])
    rng = np.random.default_rng(1)
    inherited = spring_differs = 0
    for step in range(STEPS):
        if step == RESUME_STEP:  # a resumed bake: a fresh device object from the CPU's history
            history = reference.get_history()
            assert len(history["collider_index"]) > 0
            device = gpu_colliders.DeviceColliders.for_model(particles)
            device.reset()
            device.set_history(history)
            assert_same_history(device.get_history(), history, step)
        if step % PERMUTE_EVERY == 3:
            particles.permute(rng.permutation(len(pos)).astype(np.int32))
        particles.put(pos, vel)
        force = np.zeros((len(pos), 3))
        reference.add_forces(step * dt, pos, vel, grains.radius, grains.mass, grains.material, grains.active, force,
                             physics)
        particles.force[:] = 0.0
        if path == "cuda":
            device.add_forces(step)
        else:
            optix_add_forces(host_library, device, step)
        device_force, _, _ = particles.take()
        assert np.isfinite(force).all()
        assert np.array_equal(device_force, force.astype(np.float32)), f"forces differ at step {step}"
        if step % 10 == 9:
            assert_same_history(device.get_history(), reference.get_history(), step)
            # The same contacts without history would push otherwise: the springs matter here.
            free = np.zeros_like(force)
            colliders.fresh_copy().add_forces(step * dt, pos, vel, grains.radius, grains.mass, grains.material,
                                              grains.active, free, damper)
            spring_differs += int(np.count_nonzero(np.any(free != force, axis=1)))
            inherited += int(np.count_nonzero(np.any(reference.get_history()["collider_spring"] != 0.0, axis=2)))
        device.remember_positions()
        old = pos.copy()
        live = grains.active.astype(bool)[:, None]
        vel = np.where(live, vel + (force / grains.mass[:, None] + gravity) * dt, vel).astype(np.float32)
        pos = np.where(live, pos + vel.astype(np.float64) * dt, pos).astype(np.float32)
        particles.put(pos, vel)
        reference.after_integrate((step + 1) * dt, old, pos, vel, grains.radius, grains.active, physics)
        device.sweep(step + 1)
        _, device_pos, device_vel = particles.take()
        assert np.array_equal(device_pos, pos) and np.array_equal(device_vel, vel), f"states differ at step {step}"
    assert_same_history(device.get_history(), reference.get_history(), STEPS)
    assert inherited > 200 and spring_differs > 200, (inherited, spring_differs)


def test_inactive_grains_and_lost_contacts_keep_no_springs(host_library, monkeypatch):
    """A grain that leaves the collider or becomes inactive forgets its springs (kernels._clear_slots)."""
    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(host_library))
    colliders, grains, physics = spring_scene("static bowl")
    model = SimpleNamespace(physics=physics, colliders=colliders, particle_count=len(grains.positions))
    particles = PermutedParticles(model, grains)
    device = gpu_colliders.DeviceColliders.for_model(particles)
    particles.put(grains.positions, grains.velocities)
    device.add_forces(0)
    counts = device.meshes[0].arrays["contact_count"]
    touching = np.flatnonzero(counts)
    assert len(touching) > 100
    # Half of them switched off, the other half moved far from the bowl.
    off, away = touching[::2], touching[1::2]
    particles.model_info[off] &= ~np.uint32(1)
    particles.permute(np.arange(len(counts), dtype=np.int32)[::-1].copy())
    pos = grains.positions.copy()
    pos[away] += np.float32(5.0)
    particles.put(pos, grains.velocities)
    device.add_forces(1)
    assert not counts[touching].any()
    assert not device.meshes[0].arrays["springs"][touching].any()
    assert not device.meshes[0].arrays["normals"][touching].any()


def test_gpu_backends_refuse_only_unknown_friction_models():
    """'spring' (now with springs against mesh colliders too) and 'damper' run; anything else is
    refused in one sentence."""
    physics = Physics(materials=(Material(friction=0.5),))
    check_friction_model(physics)
    check_friction_model(dataclasses.replace(physics, friction_model="damper"))
    with pytest.raises(MochiError, match="know the friction models 'spring' and 'damper', not 'sticky'"):
        check_friction_model(dataclasses.replace(physics, friction_model="sticky"))


def test_device_colliders_keep_the_local_origin(host_library, monkeypatch):
    """The device's own copy of the colliders (ColliderSet.fresh_copy) keeps the local origin the
    backend gave the model's colliders, so a scene far from the world origin has its vertices in the
    grains' frame on the GPU too."""
    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(host_library))
    colliders, grains, physics = spring_scene("stairs + paddle")
    colliders.set_origin([1000.0, -64.0, 0.5])
    model = SimpleNamespace(physics=physics, colliders=colliders, particle_count=len(grains.positions))
    device = gpu_colliders.DeviceColliders.for_model(PermutedParticles(model, grains))
    for mine, theirs in zip(device.set.advance(0.25), colliders.advance(0.25)):
        assert np.array_equal(mine.vertices, theirs.vertices) and mine.vertices[:, 0].max() < 0.0


def test_backend_history_carries_the_collider_springs(host_library, monkeypatch):
    """BackendGpu.get/set_contact_history over the host launcher: a CPU backend's history (grain, wall
    and collider springs) restored on the GPU side hands its collider springs back unchanged, and the
    next contact forces equal those of the CPU resumed from the same history."""
    from engine.backends import make_backend
    from engine.backends.gpu_backend import BackendGpu

    from .test_colliders import bowl_scene

    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(host_library))
    setup, _ = bowl_scene(np.random.default_rng(4), friction_model="spring")
    model = setup.model
    cpu = make_backend("cpu", model)
    cpu.set_state(setup.state)
    cpu.step(int(round(0.3 / model.physics.dt)))
    state = cpu.get_state()
    history = cpu.get_contact_history()
    assert len(history["collider_index"]) > 20 and np.abs(history["collider_spring"]).max() > 0.0

    grains = Grains(state.positions, state.velocities, model.radius, model.material_index, model.mass)
    grains.active[:] = state.active
    particles = PermutedParticles(SimpleNamespace(physics=model.physics, colliders=model.colliders,
                                                  particle_count=model.particle_count), grains)
    gpu = SimpleNamespace(particles=SimpleNamespace(rows_on=False, particle_count=model.particle_count,
                                                    get_verlet=dict, set_verlet=lambda history: None,
                                                    get_bonds=dict, set_bonds=lambda history: None,
                                                    get_clumps=dict, set_clumps=lambda history: None),
                          colliders=gpu_colliders.DeviceColliders.for_model(particles), model=model)
    BackendGpu.set_contact_history(gpu, history)
    back = BackendGpu.get_contact_history(gpu)
    assert_same_history(back, history, 0)

    step = int(state.step)
    resumed = model.colliders.fresh_copy()
    resumed.set_history(history)
    force = np.zeros((model.particle_count, 3))
    resumed.add_forces(step * model.physics.dt, state.positions, state.velocities, model.radius, model.mass,
                       model.material_index, state.active, force, model.physics)
    particles.put(state.positions, state.velocities)
    particles.force[:] = 0.0
    gpu.colliders.add_forces(step)
    assert np.array_equal(particles.take()[0], force.astype(np.float32))
    assert_same_history(gpu.colliders.get_history(), resumed.get_history(), step)


@pytest.mark.parametrize("rotation, friction_model, rolling_on", [(True, "damper", True), (False, "damper", False),
                                                                  (True, "spring", True)])
def test_rolling_colliders_keep_rolling_springs_on_the_device(host_library, monkeypatch, rotation, friction_model,
                                                              rolling_on):
    """A collider with μ_r > 0 and rotating grains keeps history rows (6 doubles a slot: ξ, ξ_r) even with
    the 'damper' friction model, and its μ_r and c go up per material mixed as against a wall; without
    rotation μ_r is off (it acts through ω only) and a damper keeps no rows."""
    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(host_library))
    colliders, grains, physics = spring_scene("static bowl")
    colliders = ColliderSet((dataclasses.replace(colliders.colliders[0], rolling_friction=0.3, cohesion=2.0e4),))
    physics = dataclasses.replace(physics, friction_model=friction_model, rotation=rotation,
                                  materials=(dataclasses.replace(physics.materials[0], rolling_friction=0.1,
                                                                 cohesion=5.0e4), physics.materials[1]))
    model = SimpleNamespace(physics=physics, colliders=colliders, particle_count=len(grains.positions))
    (mesh,) = gpu_colliders.DeviceColliders.for_model(PermutedParticles(model, grains)).meshes
    record = mesh.host_params[0]
    assert record["rolling_model"] == int(rolling_on)
    assert record["spring_model"] == int(friction_model == "spring")
    assert mesh.springs_on == (rolling_on or friction_model == "spring")
    if mesh.springs_on:
        assert mesh.arrays["springs"].shape == (len(grains.positions), 4, 6)
    np.testing.assert_allclose(mesh.arrays["roll"], [0.2, 0.15] if rotation else [0.0, 0.0], rtol=1e-15)
    assert np.array_equal(mesh.arrays["cohesion"], [2.0e4, 0.0])
