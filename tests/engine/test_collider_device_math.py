"""The GPU collider code (kernels/collider_math.cuh), compiled for the host with nvcc, against the CPU
reference (engine.colliders.kernels) on the same grains: the same contacts, forces and swept-test
corrections, bit for bit.

This runs the very per-grain functions the CUDA kernels of kernels/colliders.cu call, with launch
structs filled through the host mirrors the GPU launcher uses (engine.backends.gpu_colliders), so the
geometry, the contact law, the candidate bookkeeping and the struct layout are all checked here without
a GPU; only the launch itself needs one (tests/gpu/test_gpu_colliders.py).
"""

from __future__ import annotations

import copy
import ctypes
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import trimesh

from engine.backends.gpu_colliders import collider_defines, fill_collider_params, tree_arrays_int32
from engine.backends.gpu_params import COLLIDER_PARAMS_DTYPE, DEM_PARAMS_DTYPE, INFO_MATERIAL_SHIFT
from engine.backends.gpu_toolchain import KERNEL_DIR
from engine.colliders import Collider, ColliderSet, DeformMotion, RigidMotionAnalytic
from engine.colliders import kernels as k
from engine.colliders.collider import load_collider_mesh

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
HARNESS = Path(__file__).resolve().parent / "native" / "collider_host.cpp"
MESHES = Path(__file__).resolve().parents[2] / "presets" / "meshes"


@pytest.fixture(scope="module")
def host_library(tmp_path_factory):
    """kernels/collider_math.cuh built for the host as a shared library (no fused multiply-adds, as
    the launcher asks NVRTC with --fmad=false)."""
    if NVCC is None:  # imported by test files without a skip mark of their own
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("collider_host") / "collider_host.so"
    result = subprocess.run(
        [NVCC, "-x", "c++", "-std=c++17", "-O2", "-shared", "-Xcompiler", "-fPIC,-ffp-contract=off,-Wall,-Werror",
         f"-I{KERNEL_DIR}", *(f"-D{d}" for d in collider_defines()), "-o", str(out), str(HARNESS)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    library = ctypes.CDLL(str(out))
    library.collider_forces_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    library.collider_forces_host.restype = None
    library.collider_force_sums_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    library.collider_force_sums_host.restype = None
    library.collider_triangle_aabbs_host.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_void_p]
    library.collider_triangle_aabbs_host.restype = None
    library.collider_force_sums_optix_host.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_void_p]
    library.collider_force_sums_optix_host.restype = None
    library.collider_sweep_optix_host.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
    library.collider_sweep_optix_host.restype = ctypes.c_int
    library.collider_sweep_host.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double]
    library.collider_sweep_host.restype = ctypes.c_int
    return library


class Grains:
    """Grains in the device layout (float4 pos/vel/force, uint32 info) and in the CPU reference's."""

    def __init__(self, positions, velocities, radius, material, mass):
        self.positions = np.ascontiguousarray(positions, np.float32)
        self.velocities = np.ascontiguousarray(velocities, np.float32)
        self.radius = np.ascontiguousarray(radius, np.float32)
        self.material = np.ascontiguousarray(material, np.int32)
        self.mass = np.ascontiguousarray(mass, np.float32)
        self.active = np.ones(len(positions), np.uint8)
        self.active[::17] = 0  # a few inactive grains, which both sides must leave alone

    def device_arrays(self):
        n = len(self.positions)
        pos = np.zeros((n, 4), np.float32)
        pos[:, :3], pos[:, 3] = self.positions, self.radius
        vel = np.zeros((n, 4), np.float32)
        vel[:, :3], vel[:, 3] = self.velocities, self.mass
        info = (self.active.astype(np.uint32) | (self.material.astype(np.uint32) << INFO_MATERIAL_SHIFT))
        return pos, vel, np.zeros((n, 4), np.float32), info


def dem_params(pos, vel, force, info):
    params = np.zeros(1, DEM_PARAMS_DTYPE)
    for name, array in (("pos", pos), ("vel", vel), ("force", force), ("info", info)):
        params[0][name] = array.ctypes.data
    params[0]["particle_count"] = len(pos)
    return params


def collider_params(runtime, displacement, beta, mu, restitution, old_pos, half_thickness, stiffness, *, roll=None,
                    cohesion=None):
    """A ColliderParams record over host arrays (kept alive in the returned dict); μ_r and c (M,) zero
    unless given."""
    arrays = {"vertices": np.ascontiguousarray(runtime.vertices, np.float64),
              "vertex_velocity": np.ascontiguousarray(runtime.velocities, np.float64),
              "displacement": np.ascontiguousarray(displacement, np.float64),
              "triangles": np.ascontiguousarray(runtime.collider.triangles, np.int32),
              **tree_arrays_int32(runtime.tree),
              "beta": np.ascontiguousarray(beta, np.float64), "mu": np.ascontiguousarray(mu, np.float64),
              "restitution": np.ascontiguousarray(restitution, np.float64), "old_pos": old_pos,
              "corrections": np.zeros(1, np.uint32),
              "roll": np.ascontiguousarray(np.zeros_like(beta) if roll is None else roll, np.float64),
              "cohesion": np.ascontiguousarray(np.zeros_like(beta) if cohesion is None else cohesion, np.float64)}
    params = np.zeros(1, COLLIDER_PARAMS_DTYPE)
    fill_collider_params(params[0], arrays, pointer=lambda a: a.ctypes.data, half_thickness=half_thickness,
                         stiffness=stiffness)
    return params, arrays


def grains_near_surface(vertices, triangles, count, rng, radius_range, *, spread):
    """Grains scattered about random surface points (within ``spread`` of the surface, both sides)."""
    mesh = trimesh.Trimesh(vertices, triangles, process=False)
    points, faces = trimesh.sample.sample_surface(mesh, count, seed=int(rng.integers(1 << 31)))
    normals = mesh.face_normals[faces]
    offsets = rng.uniform(-spread, spread, count)[:, None] * normals + rng.normal(0, spread / 3, (count, 3))
    radius = rng.uniform(*radius_range, count)
    velocities = rng.normal(0.0, 0.5, (count, 3))
    material = rng.integers(0, 2, count)
    mass = 2500.0 * 4.0 / 3.0 * np.pi * radius ** 3
    return Grains(points + offsets, velocities, radius, material, mass)


def stairs():
    return load_collider_mesh(MESHES / "stairs.obj")


def bowl():
    return load_collider_mesh(MESHES / "bowl.obj")


def fine_plane():
    """A plane of tiny triangles: far more than MAX_CANDIDATES of them within a grain's reach."""
    xs = np.linspace(-0.2, 0.2, 81)
    x, z = np.meshgrid(xs, xs, indexing="ij")
    vertices = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], axis=1)
    index = np.arange(x.size).reshape(81, 81)
    a, b, c, d = (index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel())
    return vertices, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


SCENES = {
    # name: (mesh, thickness, grain radius range, spread about the surface)
    "stairs (concave creases)": (stairs, 0.004, (0.01, 0.03), 0.04),
    "bowl (open mesh, both sides)": (bowl, 0.0, (0.005, 0.02), 0.03),
    "fine plane (candidate overflow)": (fine_plane, 0.002, (0.02, 0.04), 0.04),
}


def tables(collider):
    # Two materials against the collider, as ColliderSet.material_tables averages them.
    beta = np.array([0.35, 0.12]) + 0.01 * collider.restitution
    mu = np.array([0.6, 0.25]) + 0.5 * collider.friction
    restitution = np.array([0.3, 0.8])
    return beta, mu, restitution


@pytest.mark.parametrize("scene", SCENES)
def test_forces_equal_cpu_reference(host_library, scene):
    make_mesh, thickness, radius_range, spread = SCENES[scene]
    vertices, triangles = make_mesh()
    collider = Collider(name=scene, vertices=vertices, triangles=triangles, thickness=thickness)
    (runtime,) = ColliderSet((collider,)).advance(0.0)
    rng = np.random.default_rng(11)
    grains = grains_near_surface(runtime.vertices, triangles, 3000, rng, radius_range, spread=spread)
    beta, mu, restitution = tables(collider)
    stiffness = 2.0e4

    n = len(grains.positions)
    reference = np.zeros((n, 3))
    shape = (n, k.MAX_CONTACTS, 3)
    counts = np.zeros(n, np.int8)
    k.collider_forces(grains.positions, grains.velocities, grains.radius, grains.mass, grains.material, grains.active,
                      reference, runtime.vertices, runtime.velocities, triangles, *runtime.tree.arrays(),
                      0.5 * thickness, beta, mu, np.zeros(2), np.zeros(2), stiffness, np.zeros((0, 3)), False, 1e-4,
                      np.zeros((n, k.MAX_CONTACTS, 6)), np.zeros(shape), counts,
                      0.0, np.full(n, -1.0), np.zeros((n, 3)), np.zeros(n), np.zeros((0, 3), np.float32),
                      np.zeros((0, 3)), False)

    pos, vel, force, info = grains.device_arrays()
    params = dem_params(pos, vel, force, info)
    cparams, keep = collider_params(runtime, np.zeros_like(runtime.vertices), beta, mu, restitution, pos,
                                    0.5 * thickness, stiffness)
    sums = np.zeros((n, 3))
    host_library.collider_force_sums_host(params.ctypes.data, cparams.ctypes.data, sums.ctypes.data)
    host_library.collider_forces_host(params.ctypes.data, cparams.ctypes.data, 1)

    assert np.array_equal(sums, reference)  # the double sums, to the bit
    assert np.array_equal(force[:, :3], reference.astype(np.float32))  # and what the kernel adds to P.force

    # The OptiX path: triangles offered in another order, culled by their widened float32 boxes.
    aabb = triangle_aabbs(host_library, cparams, len(triangles), float(grains.radius.max()) + 0.5 * thickness)
    optix_sums = np.zeros((n, 3))
    host_library.collider_force_sums_optix_host(params.ctypes.data, cparams.ctypes.data, aabb.ctypes.data,
                                                len(triangles), optix_sums.ctypes.data)
    assert np.array_equal(optix_sums, reference)
    assert not force[grains.active == 0].any()
    touching = np.count_nonzero(counts)
    assert touching > 300, "the scene must have many contacts to compare"
    if scene.startswith("stairs"):
        assert (counts >= 2).sum() > 10, "grains in the creases touch two faces"


def moving_colliders():
    """(name, collider): a rigid paddle turning fast and a sheet bulging up (deforming)."""
    paddle_vertices = np.array([[-0.2, -0.1, 0.0], [0.2, -0.1, 0.0], [0.2, 0.1, 0.0], [-0.2, 0.1, 0.0]])
    quad = np.array([[0, 1, 2], [0, 2, 3]])
    paddle = Collider(name="paddle", vertices=paddle_vertices, triangles=quad, thickness=0.002,
                      motion=RigidMotionAnalytic(rotation0=np.eye(3), translation0=np.zeros(3), pivot=np.zeros(3),
                                                 angular_velocity=np.array([0.0, 40.0, 0.0]), velocity=np.zeros(3)))
    sheet_vertices, sheet_triangles = fine_plane()
    times = np.array([0.0, 1.0])
    bulge = np.exp(-((sheet_vertices[:, 0] ** 2 + sheet_vertices[:, 2] ** 2) / 0.01))
    keys = np.stack([sheet_vertices, sheet_vertices + np.outer(bulge, [0.0, 3.0, 0.0])])
    sheet = Collider(name="sheet", vertices=sheet_vertices, triangles=sheet_triangles,
                     motion=DeformMotion(times=times, vertices=keys))
    return [("rigid paddle", paddle), ("deforming sheet", sheet)]


@pytest.mark.parametrize("index", [0, 1], ids=[name for name, _ in moving_colliders()])
def test_sweep_equals_cpu_reference(host_library, index):
    _, collider = moving_colliders()[index]
    dt = 2e-3
    colliders = ColliderSet((collider,))
    colliders.advance(0.1)
    (runtime,) = colliders.advance(0.1 + dt)
    displacement, displacement_max = runtime.displacement()
    assert displacement_max > 0.0
    rng = np.random.default_rng(5)
    n = 4000
    # Grains on both sides of the surface, each moving through it or alongside it during the step.
    start = grains_near_surface(runtime.previous, collider.triangles, n, rng, (0.004, 0.01), spread=0.03)
    step = rng.normal(0.0, 0.02, (n, 3))
    old_positions = start.positions.copy()
    grains = Grains(old_positions + step, start.velocities, start.radius, start.material, start.mass)
    beta, mu, restitution = tables(collider)
    half_thickness = 0.5 * collider.thickness

    ref_pos = grains.positions.copy()
    ref_vel = grains.velocities.copy()
    corrected_ref = k.sweep(old_positions, ref_pos, ref_vel, grains.radius, grains.material, grains.active,
                            runtime.vertices, displacement, runtime.velocities, collider.triangles,
                            *runtime.tree.arrays(), displacement_max, half_thickness, restitution, 0.0,
                            np.full(n, -1.0), np.zeros((n, 3)), np.zeros(n))

    pos, vel, force, info = grains.device_arrays()
    old_pos = pos.copy()
    old_pos[:, :3] = old_positions
    params = dem_params(pos, vel, force, info)
    cparams, keep = collider_params(runtime, displacement, beta, mu, restitution, old_pos, half_thickness, 1.0)
    corrected = host_library.collider_sweep_host(params.ctypes.data, cparams.ctypes.data, displacement_max)

    assert corrected == corrected_ref > 100
    assert np.array_equal(pos[:, :3], ref_pos)
    assert np.array_equal(vel[:, :3], ref_vel)
    moved = np.any(pos[:, :3] != grains.positions, axis=1)
    assert not moved[grains.active == 0].any()

    # The OptiX path: rays along the paths against the triangles' boxes widened by the motion only.
    pos, vel, force, info = grains.device_arrays()
    params = dem_params(pos, vel, force, info)
    cparams, keep = collider_params(runtime, displacement, beta, mu, restitution, old_pos, half_thickness, 1.0)
    aabb = triangle_aabbs(host_library, cparams, len(collider.triangles), displacement_max)
    corrected = host_library.collider_sweep_optix_host(params.ctypes.data, cparams.ctypes.data, aabb.ctypes.data,
                                                       len(collider.triangles))
    assert corrected == corrected_ref
    assert np.array_equal(pos[:, :3], ref_pos) and np.array_equal(vel[:, :3], ref_vel)


def triangle_aabbs(library, cparams, triangle_count, inflate):
    """The OptiX proxies of kernels/colliders.cu collider_triangle_aabbs, float32 (T, 6)."""
    aabb = np.zeros((triangle_count, 6), np.float32)
    library.collider_triangle_aabbs_host(cparams.ctypes.data, triangle_count, inflate, aabb.ctypes.data)
    return aabb


@pytest.mark.parametrize("inflate", [0.0, 1e-3, 0.02])
def test_triangle_boxes_hold_every_point_within_reach(host_library, inflate):
    """Points on the triangles (far from the origin too) pushed out by just under ``inflate`` in any
    direction lie inside the float32 boxes: the OptiX traversal cannot cull a candidate."""
    rng = np.random.default_rng(2)
    vertices, triangles = stairs()
    vertices = vertices + np.array([1000.0, -200.0, 30.0])  # float32 rounding is coarse out here
    collider = Collider("far stairs", vertices, triangles)
    (runtime,) = ColliderSet((collider,)).advance(0.0)
    cparams, keep = collider_params(runtime, np.zeros_like(vertices), np.zeros(1), np.zeros(1), np.zeros(1),
                                    np.zeros((1, 4), np.float32), 0.0, 1.0)
    aabb = triangle_aabbs(host_library, cparams, len(triangles), inflate).astype(np.float64)
    t = rng.integers(0, len(triangles), 20000)
    weights = rng.dirichlet((1.0, 1.0, 1.0), len(t))
    points = np.einsum("ij,ijk->ik", weights, vertices[triangles[t]])
    direction = rng.normal(size=points.shape)
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    corners = rng.integers(0, 2, len(t)).astype(bool)  # half of them from the corners themselves
    points[corners] = vertices[triangles[t[corners], 0]]
    points += direction * inflate * (1.0 - 1e-9)
    assert ((points >= aabb[t, :3]) & (points <= aabb[t, 3:])).all()


# --- the launcher (engine.backends.gpu_colliders) on the host build ----------------------------------


class HostArray(np.ndarray):
    """A numpy array with the CuPy ndarray members the launcher uses: ``set`` (same shape and dtype,
    as CuPy requires), ``get`` and ``data.ptr``."""

    def set(self, value):
        value = np.asarray(value)
        assert value.shape == self.shape and value.dtype == self.dtype, (value.shape, value.dtype, self.shape)
        np.copyto(self, value)

    def get(self):
        return np.array(self)

    @property
    def data(self):
        return SimpleNamespace(ptr=self.ctypes.data)


class HostCupy:
    """The part of the CuPy module the launcher calls, on host memory."""

    float32, float64, int32, uint32, uint8 = np.float32, np.float64, np.int32, np.uint32, np.uint8

    @staticmethod
    def zeros(shape, dtype):
        return np.zeros(shape, dtype).view(HostArray)

    @staticmethod
    def asarray(value, dtype=None):
        return np.array(value, dtype=dtype, copy=True, order="C").view(HostArray)


class HostModule:
    """``raw_module('colliders.cu')`` whose kernels run the host build over every slot."""

    def __init__(self, library):
        self.library = library

    def get_function(self, name):
        library = self.library

        def launch(grid, block, args):
            assert grid[0] * block[0] >= args[0].view(DEM_PARAMS_DTYPE)[0]["particle_count"]
            if name == "collider_forces":
                assert isinstance(args[2], np.int32)
                library.collider_forces_host(args[0].data.ptr, args[1].data.ptr, int(args[2]))
            else:
                assert isinstance(args[2], np.float64)  # a double kernel argument must be passed as one
                library.collider_sweep_host(args[0].data.ptr, args[1].data.ptr, float(args[2]))

        return launch


class HostParticles:
    """The members of ``gpu_runtime.DeviceParticles`` the launcher reads, on host memory."""

    def __init__(self, model, grains: Grains):
        self.cp = HostCupy
        self.model = model
        self.particle_count = len(grains.positions)
        pos, vel, force, info = grains.device_arrays()
        self.pos, self.vel, self.force, self.info = (a.view(HostArray) for a in (pos, vel, force, info))
        self.params = dem_params(self.pos, self.vel, self.force, self.info).view(np.uint8).view(HostArray)


def launcher_scene(name):
    """Colliders and grains about them: a static staircase with a fast paddle, or a bulging sheet."""
    from engine.model import Material, Physics

    rng = np.random.default_rng(3)
    if name == "stairs + paddle":
        paddle = moving_colliders()[0][1]
        paddle = Collider("paddle", paddle.vertices + [0.25, 0.25, 0.2], paddle.triangles, thickness=0.002,
                          friction=0.3, motion=RigidMotionAnalytic(np.eye(3), np.zeros(3), np.array([0.25, 0.25, 0.2]),
                                                                   np.array([0.0, 30.0, 0.0]), np.zeros(3)))
        stair_vertices, stair_triangles = stairs()
        colliders = ColliderSet((Collider("stairs", stair_vertices, stair_triangles, thickness=0.004, friction=0.6),
                                 paddle))
        grains = grains_near_surface(stair_vertices, stair_triangles, 1500, rng, (0.008, 0.015), spread=0.03)
        near_paddle = grains_near_surface(paddle.vertices, paddle.triangles, 500, rng, (0.008, 0.015), spread=0.03)
        grains = Grains(np.concatenate([grains.positions, near_paddle.positions]),
                        np.concatenate([grains.velocities, near_paddle.velocities]) * 4.0,
                        np.concatenate([grains.radius, near_paddle.radius]),
                        np.concatenate([grains.material, near_paddle.material]),
                        np.concatenate([grains.mass, near_paddle.mass]))
    elif name == "bulging sheet":
        sheet = moving_colliders()[1][1]
        colliders = ColliderSet((sheet,))
        grains = grains_near_surface(sheet.vertices, sheet.triangles, 2000, rng, (0.004, 0.01), spread=0.02)
    else:  # every vertex travels to another's place: the refit tree degrades and is rebuilt in a new order
        vertices, triangles = fine_plane()
        scrambled = vertices[rng.permutation(len(vertices))]
        sheet = Collider("scrambling sheet", vertices, triangles, thickness=0.002,
                         motion=DeformMotion(times=np.array([0.0, 0.05]), vertices=np.stack([vertices, scrambled])))
        colliders = ColliderSet((sheet,))
        grains = grains_near_surface(sheet.vertices, sheet.triangles, 2000, rng, (0.004, 0.01), spread=0.02)
        grains.velocities *= 20.0  # ~10 m/s: a radius per step, so some cross the sheet between contacts
    physics = Physics(materials=(Material(restitution=0.3, friction=0.6), Material(restitution=0.8, friction=0.2)),
                      friction_model="damper", stiffness=200.0, dt=5e-4)  # dt·sqrt(k/m) < 0.3: stable
    return colliders, grains, physics


@pytest.mark.parametrize("cohesive", [False, True], ids=["", "cohesive"])
@pytest.mark.parametrize("scene", ["stairs + paddle", "bulging sheet", "scrambling sheet"])
def test_launcher_steps_like_the_cpu_hooks(host_library, monkeypatch, scene, cohesive):
    """DeviceColliders, its uploads and its step hooks, with CuPy's arrays and launches replaced by host
    memory and the host build: over 120 steps of moving colliders (tree refits and rebuilds, a reset
    halfway as after set_state) it gives the CPU hooks' forces, corrections and states to the bit; also
    with SJKR cohesion against the colliders (per collider and material, without rotation: the full law
    with ω = 0)."""
    import dataclasses

    from engine.backends import gpu_colliders

    launched = []

    def host_raw_module(name, *, defines=(), options=()):
        launched.append((name, defines, options))
        return HostModule(host_library)

    monkeypatch.setattr(gpu_colliders, "raw_module", host_raw_module)
    colliders, grains, physics = launcher_scene(scene)
    if cohesive:  # c per collider; material 1 keeps none, so both laws run side by side
        colliders = ColliderSet(tuple(dataclasses.replace(c, cohesion=5.0e3 * (index + 1))
                                      for index, c in enumerate(colliders.colliders)))
        physics = dataclasses.replace(physics, materials=(dataclasses.replace(physics.materials[0], cohesion=1.0e4),
                                                          physics.materials[1]))
        assert colliders.surface_tables(physics)[1].any()
    model = SimpleNamespace(physics=physics, colliders=colliders)
    particles = HostParticles(model, grains)
    device = gpu_colliders.DeviceColliders.for_model(particles)
    assert launched == [("colliders.cu", collider_defines(), gpu_colliders.COLLIDER_OPTIONS)]

    reference = colliders.fresh_copy()
    pos, vel = grains.positions.copy(), grains.velocities.copy()
    dt = physics.dt
    gravity = np.array([0.0, -9.81, 0.0])
    contacts = corrections = 0
    first_trees = [copy.deepcopy(r.tree) for r in reference.advance(0.0) if r.collider.moving]
    for step in range(120):
        if step == 60:  # a new state uploaded: both forget the colliders' motion
            trees = [r.tree for r in reference.advance(step * dt) if r.collider.moving]
            rebuilds = max(tree.rebuilds for tree in trees)
            reordered = any(not np.array_equal(tree.order, first.order) for tree, first in zip(trees, first_trees))
            reference.reset_history()
            device.reset()
        force = np.zeros((len(pos), 3))
        reference.add_forces(step * dt, pos, vel, grains.radius, grains.mass, grains.material, grains.active, force,
                             physics)
        particles.force[:] = 0.0
        device.add_forces(step)
        assert np.isfinite(force).all()
        assert np.array_equal(particles.force[:, :3], force.astype(np.float32)), f"forces differ at step {step}"
        contacts += int(np.count_nonzero(force.any(axis=1)))
        device.remember_positions()
        old = pos.copy()
        live = grains.active.astype(bool)[:, None]
        vel = np.where(live, vel + (force / grains.mass[:, None] + gravity) * dt, vel).astype(np.float32)
        pos = np.where(live, pos + vel.astype(np.float64) * dt, pos).astype(np.float32)
        particles.pos[:, :3] = pos
        particles.vel[:, :3] = vel
        before = reference.swept_corrections
        reference.after_integrate((step + 1) * dt, old, pos, vel, grains.radius, grains.active, physics)
        device.sweep(step + 1)
        assert np.array_equal(particles.pos[:, :3], pos) and np.array_equal(particles.vel[:, :3], vel), step
        corrections += reference.swept_corrections - before
    assert device.swept_corrections == reference.swept_corrections == corrections
    assert contacts > 1000 and corrections > 0, (contacts, corrections)
    if scene == "scrambling sheet":
        assert rebuilds > 1 and reordered, "the scene must exercise a tree rebuild that reorders the triangles"
