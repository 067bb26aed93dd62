"""The CUDA grid backend's Python (engine/backends/cuda_grid.py, gpu_backend.py, gpu_runtime.py) driving
the host build of its kernels: the whole step loop of the rotating law — velocity Verlet's priming pass,
drift, forces, update, Morton reorders that carry ω, orientations and accelerations — state and
history transfer, and a resume from the contact history, without a GPU.

CuPy is replaced by numpy arrays with the members the backend uses (``HostCupy``); the kernels of
kernels/grid.cu and the per-slot update of kernels/dem_integrate.cuh run through the host build of
tests/engine/test_grain_device_math.py. The deterministic bucket sort and the Morton keys of
kernels/dem_common.cu (shared memory and warp shuffles, no host build) are done here in numpy with the
same results: a stable sort by the same keys. Only the launches themselves need a GPU (tests/gpu/).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from engine.backends import cuda_grid, gpu_runtime
from engine.backends.cpu import BackendCpu
from engine.errors import MochiError
from engine.state import make_state

from .test_collider_device_math import HostArray
from .test_collider_device_math import host_library as collider_library  # noqa: F401  (fixture)
from .test_grain_device_math import grain_library  # noqa: F401  (the fixture the tests below take)
from .test_grain_device_rotation import _bind, _system


def _host_cupy() -> types.ModuleType:
    """The part of CuPy the GPU backends call, on numpy arrays (``HostArray``: set, get, data.ptr)."""
    cp = types.ModuleType("cupy")
    for name in ("float32", "float64", "int32", "uint32", "uint8", "uint64"):
        setattr(cp, name, getattr(np, name))
    cp.__version__ = "host"
    cp.zeros = lambda shape, dtype=np.float64: np.zeros(shape, dtype).view(HostArray)
    cp.empty = lambda shape, dtype=np.float64: np.zeros(shape, dtype).view(HostArray)
    cp.full = lambda shape, value, dtype=None: np.full(shape, value, dtype).view(HostArray)
    cp.arange = lambda n, dtype=None: np.arange(n, dtype=dtype).view(HostArray)
    cp.empty_like = lambda a: np.zeros_like(a).view(HostArray)
    cp.asarray = lambda a, dtype=None: np.array(a, dtype=dtype, copy=True, order="C").view(HostArray)

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    cp.cuda = types.SimpleNamespace(Event=Event, get_elapsed_time=lambda start, end: 0.0)
    return cp


def _pointer(value):
    return value.ctypes.data if isinstance(value, np.ndarray) else value


class HostKernels:
    """``raw_module('dem_common.cu' | 'grid.cu')``: each kernel by name, run on the host."""

    def __init__(self, library):
        self.lib = library

    def get_function(self, name):
        lib = self.lib

        def params_of(args):
            return np.asarray(args[0]).view(gpu_runtime.DEM_PARAMS_DTYPE)[0]

        def launch(grid, block, args):
            if name in ("dem_integrate", "dem_integrate_rotating"):
                getattr(lib, f"{name}_host")(_pointer(args[0]), *(float(a) for a in args[1:4]), int(args[4]))
            elif name == "dem_verlet_drift":
                lib.dem_verlet_drift_host(_pointer(args[0]), int(args[1]))
            elif name == "dem_verlet_prime":
                lib.dem_verlet_prime_host(_pointer(args[0]), *(float(a) for a in args[1:4]), int(args[4]))
            elif name == "dem_clump_step":
                lib.dem_clump_step_host(_pointer(args[0]), int(args[1]))
            elif name == "dem_flip_spring_parity":
                args[0][0] ^= 1
            elif name == "dem_morton_keys":
                params, bits, key = params_of(args), int(args[1]), args[2]
                morton_keys(params, bits, key)
            elif name in ("gather_float4", "gather_u32"):
                src, order, n, dst = args
                dst[:int(n)] = src[order[:int(n)]]
            elif name == "bucket_count":
                key, n, count, rank = args
                for i in range(int(n)):  # the device's ranks come from atomics: any order is allowed
                    rank[i] = count[key[i]]
                    count[key[i]] += 1
            elif name == "scan_blocks":
                count, n, out, block_sum = args
                out[1:int(n) + 1] = np.cumsum(count[:int(n)])
                block_sum[:] = 0
            elif name in ("scan_block_sums", "add_block_offsets"):
                pass  # scan_blocks above already scanned the whole array
            elif name == "bucket_scatter":
                key, n, start, rank, sorted_ = args
                sorted_[start[key[:int(n)]] + rank[:int(n)]] = np.arange(int(n))
            elif name == "bucket_order":
                start, buckets, sorted_ = args
                for b in np.flatnonzero(np.diff(start[:int(buckets) + 1]) > 1):
                    sorted_[start[b]:start[b + 1]] = np.sort(sorted_[start[b]:start[b + 1]])
            elif name == "grid_keys":
                lib.grid_keys_host(_pointer(args[0]), _pointer(args[1]))
            elif name == "grid_gather_sorted":
                lib.grid_gather_sorted_host(*(_pointer(a) for a in args))
            elif name in ("grid_forces", "grid_forces_rotating"):
                getattr(lib, f"{name}_host")(*(_pointer(a) for a in args))
            elif name == "grid_pairs":
                lib.grid_pairs_host(*(_pointer(a) for a in args[:6]), int(args[6]))
            else:
                raise AssertionError(f"kernel {name} has no host version here")

        return launch


def morton_keys(params, bits: int, key) -> None:
    """dem_morton_keys of kernels/dem_common.cu in numpy (float32 scaling as the kernel)."""
    n = int(params["particle_count"])
    pos = np.ctypeslib.as_array(ctypes_pointer(params["pos"], np.float32), (n, 4))
    info = np.ctypeslib.as_array(ctypes_pointer(params["info"], np.uint32), (n,))
    top = np.float32((1 << bits) - 1)
    q = []
    for axis in range(3):
        u = (pos[:, axis].astype(np.float64) - params["lo"][axis]) / (params["hi"][axis] - params["lo"][axis])
        q.append(np.minimum(np.maximum(u.astype(np.float32) * (top + np.float32(1)), 0), top).astype(np.uint32))

    def spread(v):
        v = v & 0x3FF
        v = (v | (v << 16)) & 0x030000FF
        v = (v | (v << 8)) & 0x0300F00F
        v = (v | (v << 4)) & 0x030C30C3
        return (v | (v << 2)) & 0x09249249

    keys = (spread(q[0]) << 2) | (spread(q[1]) << 1) | spread(q[2])
    key[:n] = np.where(info & 1, keys, 1 << (3 * bits))


def ctypes_pointer(address, dtype):
    import ctypes

    return ctypes.cast(int(address), ctypes.POINTER(np.ctypeslib.as_ctypes_type(dtype)))


@pytest.fixture
def host_backend(grain_library, monkeypatch):
    """A factory of ``BackendCudaGrid`` over the host kernels."""
    _bind(grain_library)
    cp = _host_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    kernels = HostKernels(grain_library)
    monkeypatch.setattr(gpu_runtime, "raw_module", lambda name, **options: kernels)
    monkeypatch.setattr(cuda_grid, "raw_module", lambda name, **options: kernels)
    monkeypatch.setattr(cuda_grid, "import_cupy", lambda: cp)
    return cuda_grid.BackendCudaGrid


def _stirred(rng, integrator):
    model, positions = _system(rng, integrator, count=80)
    n = model.particle_count
    state = make_state(positions, rng.normal(0, 0.02, (n, 3)).astype(np.float32))
    state.angular_velocities = rng.normal(0, 5.0, (n, 3)).astype(np.float32)
    return model, state


@pytest.mark.parametrize("integrator", ["verlet", "euler"])
def test_backend_steps_like_the_cpu_backend(host_backend, integrator, rng):
    """300 steps with rotation, rolling resistance and cohesion (rebuilds every 10 steps reorder the
    slots): states, ω and orientations as the CPU backend's, history in the CPU's format."""
    model, state = _stirred(rng, integrator)
    gpu = host_backend(model)
    gpu.set_state(state)
    gpu.step(300)
    got = gpu.get_state()
    cpu = BackendCpu(model)
    cpu.set_state(state)
    cpu.step(300)
    want = cpu.get_state()
    r = float(model.radius.max())
    assert got.step == want.step == 300
    assert np.abs(want.positions - state.positions).max() > 0.02 * r
    assert np.abs(got.positions - want.positions).max() < 1e-3 * r
    assert np.abs(got.angular_velocities - want.angular_velocities).max() < 1e-2 * np.abs(want.angular_velocities).max()
    assert np.abs(got.orientations - want.orientations).max() < 1e-3
    history, reference = gpu.get_contact_history(), cpu.get_contact_history()
    assert ("acceleration" in history) == ("acceleration" in reference) == (integrator == "verlet")
    assert set(reference) <= set(history)
    if integrator == "verlet":
        scale = np.abs(reference["acceleration"]).max()
        assert np.abs(history["acceleration"] - reference["acceleration"]).max() < 1e-2 * scale
        assert np.abs(history["wall_rolling"]).max() > 0  # the heap rolls on the floor


def test_spring_overflow_on_the_device_stops_the_bake(host_backend, rng):
    """The kernels count the contacts whose spring found its grain's row full (they would slide
    history-free); the next download reads the counter and refuses in one sentence."""
    model, state = _stirred(rng, "verlet")
    gpu = host_backend(model)
    gpu.set_state(state)
    gpu.step(5)
    gpu.get_state()  # nothing overflowed
    gpu.particles.diag[gpu_runtime.DIAG_SPRING_OVERFLOW] = 3  # what the kernels' atomicAdd leaves
    with pytest.raises(MochiError, match=r"^3 contact spring\(s\) between steps 5 and 5 did not fit in the 16 "):
        gpu.get_state()


def test_backend_resumes_from_its_history_bit_for_bit(host_backend, rng):
    """Steps 0–300 in one go (a frame boundary at 150) or resumed at 150 from the state and contact
    history (springs, rolling histories, Verlet accelerations): the same bits."""
    model, state = _stirred(rng, "verlet")
    straight = host_backend(model)
    straight.set_state(state)
    straight.step(150)
    straight.begin_frame()
    middle, history = straight.get_state(), straight.get_contact_history()
    straight.step(150)
    resumed = host_backend(model)
    resumed.set_state(middle)
    resumed.set_contact_history(history)
    assert resumed.particles.primed
    resumed.step(150)
    a, b = straight.get_state(), resumed.get_state()
    for name in ("positions", "velocities", "angular_velocities", "orientations", "active"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _glued(rng, integrator, strength):
    """The stirred heap as one glued body: bonds between all touching grains, some of which break."""
    import dataclasses

    from engine.model import Body, build_model

    model, state = _stirred(rng, integrator)
    state.velocities = (state.velocities * 10.0).astype(np.float32)  # hard enough to break the weaker bonds
    physics = dataclasses.replace(model.physics, bodies=(Body(object_id=0, kind="glued", glue_strength=strength),))
    return build_model(model.radius, physics, positions=state.positions), state


@pytest.mark.parametrize("integrator", ["verlet", "euler"])
def test_glued_body_follows_the_cpu_backend(host_backend, integrator, rng):
    """Glue bonds on the host GPU path: bonded pairs skip the contact, bonds pull and shear, the stressed
    ones break for good, as on the CPU backend (the same bonds break, at about the same steps)."""
    model, state = _glued(rng, integrator, strength=1.0e4)
    assert model.bonds.count > 100
    gpu = host_backend(model)
    gpu.set_state(state)
    cpu = BackendCpu(model)
    cpu.set_state(state)
    for _ in range(3):
        gpu.step(100)
        cpu.step(100)
        got, want = gpu.get_state(), cpu.get_state()
        history, reference = gpu.get_contact_history(), cpu.get_contact_history()
        assert np.array_equal(history["bond_intact"], reference["bond_intact"])
        assert np.array_equal(got.bonds, want.bonds)
    r = float(model.radius.max())
    assert 0 < np.count_nonzero(reference["bond_intact"] == 0) < model.bonds.count // 2, "some bonds break"
    assert np.abs(got.positions - want.positions).max() < 1e-3 * r
    scale = np.abs(reference["bond_shear"]).max()
    assert scale > 0 and np.abs(history["bond_shear"] - reference["bond_shear"]).max() < 1e-2 * scale


def test_glued_body_resumes_bit_for_bit(host_backend, rng):
    model, state = _glued(rng, "verlet", strength=1.0e4)
    straight = host_backend(model)
    straight.set_state(state)
    straight.step(150)
    straight.begin_frame()
    middle, history = straight.get_state(), straight.get_contact_history()
    straight.step(150)
    resumed = host_backend(model)
    resumed.set_state(middle)
    resumed.set_contact_history(history)
    resumed.step(150)
    a, b = straight.get_state(), resumed.get_state()
    for name in ("positions", "velocities", "angular_velocities", "orientations", "bonds"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.count_nonzero(straight.get_contact_history()["bond_intact"] == 0) > 0


def test_backends_refuse_what_they_cannot_simulate(host_backend, rng):
    """Rigid bodies of grains that do not rotate (the kernels then compute no torques) and unknown
    integrators are refused in one sentence rather than baked wrong."""
    import dataclasses

    from engine.model import Body, build_model

    model, state = _stirred(rng, "verlet")
    rigid = dataclasses.replace(model.physics, bodies=(Body(object_id=0, kind="rigid"),), rotation=False)
    clumped = build_model(model.radius, rigid, positions=state.positions)
    assert clumped.clumps is not None and clumped.clumps.count == 1
    with pytest.raises(MochiError, match="Rigid bodies on the GPU need rotating grains"):
        host_backend(clumped)
    with pytest.raises(MochiError, match="integrators"):
        host_backend(build_model(model.radius, dataclasses.replace(model.physics, integrator="rk4")))


@pytest.mark.parametrize("integrator", ["verlet", "euler"])
def test_backend_with_a_mesh_collider_steps_like_the_cpu(host_backend, collider_library, monkeypatch, integrator):
    """Grains poured into the bowl collider with rotation: the collider hooks of the step loop (forces
    and torques, swept test) in velocity Verlet's order or Euler's, as on the CPU backend."""
    import dataclasses

    from engine.backends import gpu_colliders
    from engine.model import build_model

    from .test_collider_device_springs import HostModule
    from .test_colliders import bowl_scene

    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(collider_library))
    setup, _ = bowl_scene(np.random.default_rng(4))
    physics = dataclasses.replace(setup.model.physics, rotation=True, integrator=integrator)
    model = build_model(setup.model.radius, physics, colliders=setup.model.colliders)
    state = setup.state.copy()
    state.angular_velocities = np.random.default_rng(5).normal(0, 5.0, state.positions.shape).astype(np.float32)
    # 600 steps (0.11 s): the grains have just reached the bowl. The pour is chaotic: two CPU runs whose
    # grains start 0.1 µm apart differ here by 4 % of a radius and by 13 % of the largest spin (grains
    # hitting the shell spin up to ~150 rad/s), and by several radii 900 steps later.
    steps = 600
    gpu = host_backend(model)
    gpu.set_state(state)
    gpu.step(steps)
    cpu = BackendCpu(model)
    cpu.set_state(state)
    cpu.step(steps)
    got, want = gpu.get_state(), cpu.get_state()
    touching = np.count_nonzero(cpu.get_contact_history()["collider_index"] >= 0)
    assert touching > 20, "grains must rest on the bowl"
    r = float(model.radius.max())
    assert np.abs(got.positions - want.positions).max() < 2e-2 * r
    assert np.abs(got.angular_velocities - want.angular_velocities).max() < 0.1 * np.abs(want.angular_velocities).max()


@pytest.mark.parametrize("far", [False, True], ids=["near", "far"])
@pytest.mark.parametrize("integrator", ["verlet", "euler"])
def test_rigid_clump_follows_the_cpu_backend(host_backend, integrator, far, rng):
    """A rigid clump of 20 grains in a stirred heap: its members never touch each other, move as one
    body (summed forces and torques, body-frame inertia, quaternion), as on the CPU backend; a resume
    from the history carries the bodies bit for bit. Also with the box 70 m from the origin, where the
    kernels compute around a local origin (engine.local_origin) and the bodies' centres must too."""
    import dataclasses

    from engine.model import Body, build_model

    model, state = _stirred(rng, integrator)
    if far:
        shift = np.array([50.0, 0.0, -50.0])
        domain = model.physics.domain
        moved = dataclasses.replace(domain, lo=tuple(np.add(domain.lo, shift)), hi=tuple(np.add(domain.hi, shift)))
        model = build_model(model.radius, dataclasses.replace(model.physics, domain=moved))
        state.positions = (state.positions.astype(np.float64) + shift).astype(np.float32)
    n = model.particle_count
    object_id = np.zeros(n, np.int32)
    object_id[:20] = 1
    state.velocities[:20] += np.float32([0.3, 0.6, -0.2])  # thrown up out of the heap, tumbling
    physics = dataclasses.replace(model.physics, bodies=(Body(object_id=1, kind="rigid"),))
    model = build_model(model.radius, physics, object_id=object_id, positions=state.positions)
    assert model.clumps.count == 1
    gpu = host_backend(model)
    gpu.set_state(state)
    cpu = BackendCpu(model)
    cpu.set_state(state)
    gpu.step(150)
    cpu.step(150)
    gpu.begin_frame()
    middle, history = gpu.get_state(), gpu.get_contact_history()
    gpu.step(150)
    cpu.step(150)
    got, want = gpu.get_state(), cpu.get_state()
    r = float(model.radius.max())
    # Positions are float32 in the world: 70 m away their step is 4e-6 m, and both backends round there.
    ulp = float(np.spacing(np.abs(state.positions).max()))
    members = model.clumps.members
    assert np.abs(want.positions[members] - state.positions[members]).max() > 0.3 * r
    assert np.abs(want.orientations[members[0]] - (1, 0, 0, 0)).max() > 1e-3
    assert np.abs(got.positions - want.positions).max() < max(1e-3 * r, 4 * ulp)
    # Far away the world float32 positions both backends start from and write round at 4e-6 m, a tenth of
    # the heap's overlaps, so the spins part more (measured 2.6 % of the largest there, 1 % near).
    spin = 5e-2 if far else 2e-2
    assert np.abs(got.angular_velocities - want.angular_velocities).max() < spin * np.abs(want.angular_velocities).max()
    # The members keep their distances: one rigid body.
    d0 = np.linalg.norm(state.positions[members, None] - state.positions[None, members], axis=2)
    d1 = np.linalg.norm(got.positions[members, None] - got.positions[None, members], axis=2)
    assert np.abs(d1 - d0).max() < max(1e-5 * r * 100, 8 * ulp)
    assert np.allclose(got.orientations[members], got.orientations[members[0]])
    reference = cpu.get_contact_history()
    mine = gpu.get_contact_history()
    assert np.abs(mine["clump_centre"] - reference["clump_centre"]).max() < 1e-3 * r
    resumed = host_backend(model)
    resumed.set_state(middle)
    resumed.set_contact_history(history)
    resumed.step(150)
    again = resumed.get_state()
    for name in ("positions", "velocities", "angular_velocities", "orientations"):
        assert np.array_equal(getattr(again, name), getattr(got, name)), name


def test_mesh_slope_and_ceiling_hold_and_roll_as_on_the_cpu(host_backend, collider_library, monkeypatch):
    """Rolling resistance and cohesion against a mesh collider through the whole GPU step loop (grain
    kernels, collider launcher, kernels/collider_math.cuh): on a 10° mesh slope the grain holds with
    μ_r > tan θ and rolls at 5/7 g (sin θ − μ_r cos θ) with μ_r < tan θ; under a mesh ceiling it hangs
    against 0.3 of the cohesive strength and falls at 1.5 of it: as on the CPU backend."""
    import math

    from engine.backends import gpu_colliders

    from .test_collider_device_springs import HostModule
    from .test_collider_rolling_cohesion import G, R, THETA, _hanging_grain, _slope

    monkeypatch.setattr(gpu_colliders, "raw_module", lambda name, **options: HostModule(collider_library))
    mu_r = 0.5 * math.tan(THETA)
    t, x = _slope("mesh", mu_r, make=host_backend)
    late = t > 0.02
    acceleration = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    assert acceleration == pytest.approx(5.0 / 7.0 * G * (math.sin(THETA) - mu_r * math.cos(THETA)), rel=0.02)
    _, x_cpu = _slope("mesh", mu_r)
    assert np.abs(x - x_cpu).max() < 1e-3 * R  # float32 grain kernels: close, not to the bit
    t, x = _slope("mesh", 1.5 * math.tan(THETA), make=host_backend)
    held = x[t > 0.1]
    assert np.abs(held - held[0]).max() < 1e-3 * R
    assert _hanging_grain("mesh", 0.3, make=host_backend) < R
    assert _hanging_grain("mesh", 1.5, make=host_backend) > R + 0.05
