"""The GPU kernels' rotating law (issue 16: rotation, rolling resistance, SJKR cohesion, velocity Verlet,
glue bonds),
compiled for the host with nvcc and run one thread at a time, against the float64 reference
(engine.contact_law.contact_response), the CPU colliders (engine.colliders.kernels, bit for bit) and the
CPU backend stepping the same small systems.

Grain pairs run through kernels/grid.cu and kernels/optix_dem.cu (the traversal emulated), walls
through dem_walls_rotating (kernels/dem_integrate.cuh), colliders through kernels/collider_math.cuh;
the step loop is engine.backends.gpu_backend's, driven from here (priming, drift, forces, update).
Only the launches themselves need a GPU (tests/gpu/).
"""

from __future__ import annotations

import ctypes
import dataclasses

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.backends.gpu_params import DIAG_SPRING_OVERFLOW, clump_bodies, rotating_update, rotation_tables
from engine.backends.gpu_springs import SPRING_SLOTS
from engine.backends.gpu_springs import SpringRows, history_from_rows, owns, rows_from_history
from engine.colliders import Collider, ColliderSet
from engine.colliders import kernels as ck
from engine.contact_law import cohesion_tables, contact_response, pair_tables, rolling_tables, wall_tables
from engine.model import Body, Domain, Gravity, Material, Physics, build_model
from engine.state import make_state
from engine.neighbors.brute import brute_force_pairs

from .test_collider_device_math import collider_params, dem_params, grains_near_surface
from .test_collider_device_math import host_library as collider_library  # noqa: F401  (fixture)
from .test_grain_device_math import HostGrains, grid_run, optix_run
from .test_grain_device_math import grain_library, host_library  # noqa: F401  (fixtures of the tests below)

MATERIALS = (Material(friction=0.4, restitution=0.5, rolling_friction=0.1, cohesion=2.0e4),
             Material(friction=0.7, restitution=0.8, rolling_friction=0.3, cohesion=5.0e4))


def _bind(lib) -> None:
    p = ctypes.c_void_p
    f = ctypes.c_float
    for name, args in (("dem_verlet_drift_host", [p, ctypes.c_int]),
                       ("dem_verlet_prime_host", [p, f, f, f, ctypes.c_int]),
                       ("dem_walls_rotating_host", [p, p, p])):
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = None


def _rows(grains: HostGrains, half: int) -> SpringRows:
    """The springs and rolling histories of one half of the host rows."""
    n = grains.model.particle_count
    springs = grains.arrays["springs"][:-1].reshape(2, n, SPRING_SLOTS, 4)[half].copy()
    rolling = grains.arrays["rolling"][:-1].reshape(2, n, SPRING_SLOTS, 4)[half, ..., :3].copy()
    return SpringRows(springs, grains.arrays["wall_springs"][:-1, :3].reshape(n, 6, 3).copy(), rolling,
                      grains.arrays["wall_rolling"][:-1, :3].reshape(n, 6, 3).copy())


def _put_rows(grains: HostGrains, rows: SpringRows, half: int) -> None:
    n = grains.model.particle_count
    grains.arrays["springs"][:-1].reshape(2, n, SPRING_SLOTS, 4)[half] = rows.grains
    grains.arrays["rolling"][:-1].reshape(2, n, SPRING_SLOTS, 4)[half, ..., :3] = rows.rolling
    grains.arrays["spring_parity"][0] = half


def _pair_state(rng):
    n = 900
    positions = rng.uniform(0, 0.5, (n, 3)).astype(np.float32)
    radius = rng.uniform(0.008, 0.025, n).astype(np.float32)
    return positions, radius


def test_pair_law_equals_the_float64_reference(host_library, rng):
    """Forces, torques of both particles, springs and rolling histories of every touching pair, from
    random velocities, angular velocities and histories, on the grid and the OptiX paths."""
    positions, radius = _pair_state(rng)
    n = len(radius)
    velocities = rng.normal(0, 0.3, (n, 3)).astype(np.float32)
    omega = rng.normal(0, 20.0, (n, 3)).astype(np.float32)
    physics = Physics(materials=MATERIALS, domain=Domain(lo=(-1.0,) * 3, hi=(1.5,) * 3), stiffness=1.0e4,
                      dt=1.0e-4, friction_model="spring", rotation=True, integrator="verlet")
    model = build_model(radius, physics, material_index=rng.integers(0, 2, n).astype(np.int32))
    pairs = sorted(brute_force_pairs(positions, radius))
    assert len(pairs) > 300
    i = np.array([p[0] for p in pairs], np.int32)
    j = np.array([p[1] for p in pairs], np.int32)
    # Histories as a bake would have them: ξ in the tangent plane, of about a slip's size.
    springs = rng.normal(0, 2e-5, (len(pairs), 3))
    rolling = rng.normal(0, 2e-5, (len(pairs), 3))
    history = {"pair_i": i, "pair_j": j, "pair_spring": springs, "pair_rolling": rolling,
               "wall_spring": np.zeros((n, 6, 3)), "wall_rolling": np.zeros((n, 6, 3))}
    rows, dropped = rows_from_history(history, model.radius)
    assert dropped == 0

    beta, mu = pair_tables(MATERIALS)
    roll, _ = rolling_tables(MATERIALS, 0.0)
    coh, _ = cohesion_tables(MATERIALS, 0.0)
    x, v, w = (a.astype(np.float64) for a in (positions, velocities, omega))
    force = np.zeros((n, 3))
    torque = np.zeros((n, 3))
    scale_f = np.zeros(n)
    scale_t = np.zeros(n)
    expected_springs = {}
    for p, (a, b) in enumerate(pairs):
        ma, mb = model.material_index[a], model.material_index[b]
        # Histories went through float32 rows, as the kernels read them.
        f, ta, tb, xi, xr = contact_response(
            x[a], x[b], v[a], v[b], w[a], w[b], float(radius[a]), float(radius[b]), float(model.mass[a]),
            float(model.mass[b]), physics.stiffness, float(beta[ma, mb]), float(mu[ma, mb]),
            mu_roll=float(roll[ma, mb]), cohesion=float(coh[ma, mb]),
            spring=springs[p].astype(np.float32), rolling=rolling[p].astype(np.float32), dt=physics.dt)
        force[a] += f
        force[b] -= f
        torque[a] += ta
        torque[b] += tb
        scale_f[[a, b]] += np.abs(f).sum()
        scale_t[[a, b]] += np.abs(ta).sum() + np.abs(tb).sum()
        a_owns = bool(owns(a, radius[a], b, radius[b]))
        expected_springs[(a, b) if a_owns else (b, a)] = (xi if a_owns else -xi, xr)

    grains = HostGrains(model, positions, velocities, np.ones(n, np.uint8))
    grains.arrays["omega"][:, :3] = omega
    _put_rows(grains, rows, 0)
    grid_force, grid_pairs = grid_run(host_library, grains)
    grid_torque = grains.arrays["torque"][:, :3].copy()
    assert grid_pairs == set(pairs)
    grid_rows = _rows(grains, 1)
    assert grains.arrays["diag"][DIAG_SPRING_OVERFLOW] == 0

    _put_rows(grains, rows, 0)
    grains.arrays["torque"][:] = 0.0
    optix_force, optix_pairs, _ = optix_run(host_library, grains, offers=2)
    optix_torque = grains.arrays["torque"][:, :3].copy()
    assert optix_pairs == set(pairs)
    optix_rows = _rows(grains, 1)

    # float32 kernels against the float64 law: a few roundings of each pair's terms.
    assert np.all(np.abs(grid_force - force) <= 2e-5 * scale_f[:, None])
    assert np.all(np.abs(grid_torque - torque) <= 2e-5 * scale_t[:, None])
    assert np.abs(torque).max() > 1e-3 * np.abs(force).max() * radius.min()  # torques are not negligible
    found = history_from_rows(grid_rows)
    assert len(found["pair_i"]) == len(expected_springs)
    xi_scale = max(np.abs(springs).max(), np.abs(rolling).max())
    for a, b, xi, xr in zip(found["pair_i"], found["pair_j"], found["pair_spring"], found["pair_rolling"]):
        want_xi, want_xr = expected_springs[(int(a), int(b))]
        assert np.abs(xi - want_xi).max() <= 1e-4 * xi_scale
        assert np.abs(xr - want_xr).max() <= 1e-4 * xi_scale
    # The OptiX path: the owner's ray resolves each pair once and adds the partner's share.
    assert np.all(np.abs(optix_force - grid_force) <= 1e-5 * (np.abs(grid_force).max(1, keepdims=True) + 1e-30)
                  + 1e-6 * np.abs(grid_force).max())
    assert np.allclose(optix_torque, grid_torque, rtol=1e-4, atol=1e-5 * np.abs(grid_torque).max())
    # The same histories (each row in its own order: the grid's visit order, OptiX's slot order).
    by_pair = [{(int(a), int(b)): (xi, xr) for a, b, xi, xr in zip(h["pair_i"], h["pair_j"], h["pair_spring"],
                                                                    h["pair_rolling"])}
               for h in (history_from_rows(optix_rows), found)]
    assert by_pair[0].keys() == by_pair[1].keys()
    for key, (xi, xr) in by_pair[0].items():
        assert np.abs(xi - by_pair[1][key][0]).max() <= 1e-5 * xi_scale
        assert np.abs(xr - by_pair[1][key][1]).max() <= 1e-5 * xi_scale


def test_wall_law_equals_the_float64_reference(grain_library, rng):
    """Grains pressed into the six walls with random v, ω and histories: forces, torques and wall
    histories as contact_response with the wall as j (m_j = ∞, x_j the foot on the wall)."""
    _bind(grain_library)
    n = 400
    lo, hi = np.zeros(3), np.full(3, 0.2)
    radius = rng.uniform(0.005, 0.01, n).astype(np.float32)
    positions = rng.uniform(0.0, 0.2, (n, 3))
    side = rng.integers(0, 6, n)
    axis = side // 2
    depth = rng.uniform(-0.2, 0.3, n) * radius  # negative: not touching
    for k in range(n):
        positions[k, axis[k]] = (lo if side[k] % 2 == 0 else hi)[axis[k]] + (1 if side[k] % 2 == 0 else -1) * (radius[k] - depth[k])
    positions = positions.astype(np.float32)
    velocities = rng.normal(0, 0.3, (n, 3)).astype(np.float32)
    omega = rng.normal(0, 20.0, (n, 3)).astype(np.float32)
    domain = Domain(lo=tuple(lo), hi=tuple(hi), wall_friction=0.6, wall_restitution=0.4, wall_rolling_friction=0.2,
                    wall_cohesion=3.0e4)
    physics = Physics(materials=MATERIALS, domain=domain, stiffness=1.0e4, dt=1.0e-4, rotation=True)
    model = build_model(radius, physics, material_index=rng.integers(0, 2, n).astype(np.int32))
    grains = HostGrains(model, positions, velocities, np.ones(n, np.uint8))
    grains.arrays["omega"][:, :3] = omega
    wall_springs = rng.normal(0, 2e-5, (n, 6, 3)).astype(np.float32)
    wall_rolling = rng.normal(0, 2e-5, (n, 6, 3)).astype(np.float32)
    grains.arrays["wall_springs"][:-1, :3] = wall_springs.reshape(-1, 3)
    grains.arrays["wall_rolling"][:-1, :3] = wall_rolling.reshape(-1, 3)
    force = np.zeros((n, 3), np.float32)
    torque = np.zeros((n, 3), np.float32)
    grain_library.dem_walls_rotating_host(grains.address, force.ctypes.data, torque.ctypes.data)

    wall_beta, wall_mu = wall_tables(MATERIALS, domain.wall_restitution, domain.wall_friction)
    _, wall_roll = rolling_tables(MATERIALS, domain.wall_rolling_friction)
    _, wall_coh = cohesion_tables(MATERIALS, domain.wall_cohesion)
    touching = 0
    for k in range(n):
        mat = model.material_index[k]
        f_sum, t_sum, scale = np.zeros(3), np.zeros(3), 0.0
        for s in range(6):
            a = s // 2
            foot = positions[k].astype(np.float64)
            foot[a] = (lo if s % 2 == 0 else hi)[a]
            out = contact_response(positions[k], foot, velocities[k], np.zeros(3), omega[k], np.zeros(3),
                                   float(radius[k]), 0.0, float(model.mass[k]), np.inf, physics.stiffness,
                                   float(wall_beta[mat]), float(wall_mu[mat]), mu_roll=float(wall_roll[mat]),
                                   cohesion=float(wall_coh[mat]), spring=wall_springs[k, s], rolling=wall_rolling[k, s],
                                   dt=physics.dt)
            kept_xi = grains.arrays["wall_springs"][6 * k + s, :3]
            kept_xr = grains.arrays["wall_rolling"][6 * k + s, :3]
            if out is None:
                assert not kept_xi.any() and not kept_xr.any()  # a lost contact forgets its histories
                continue
            touching += 1
            f, t, _, xi, xr = out
            f_sum += f
            t_sum += t
            scale += np.abs(f).sum()
            assert np.abs(kept_xi - xi).max() <= 1e-4 * np.abs(wall_springs).max()
            assert np.abs(kept_xr - xr).max() <= 1e-4 * np.abs(wall_rolling).max()
        assert np.all(np.abs(force[k] - f_sum) <= 2e-5 * scale + 1e-30)
        assert np.all(np.abs(torque[k] - t_sum) <= 2e-5 * scale * radius[k] + 1e-30)
    assert touching > n // 2


@pytest.mark.parametrize("law", ["friction", "rolling and cohesion"])
@pytest.mark.parametrize("friction_model", ["spring", "damper"])
def test_collider_torques_equal_the_cpu_reference(collider_library, friction_model, law):
    """With rotation, the collider contacts of kernels/collider_math.cuh (ω in the slip velocity, the
    torque at the arm r − δ/2; with rolling resistance and SJKR cohesion against the collider, the
    rolling springs and the cohesive pull) equal engine.colliders.kernels.collider_forces bit for bit,
    springs included."""
    lib = collider_library
    lib.collider_force_torque_sums_host.argtypes = [ctypes.c_void_p] * 4
    lib.collider_force_torque_sums_host.restype = None
    rng = np.random.default_rng(12)
    vertices = np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1], [0.5, 0.2, 0.5]], np.float64)
    triangles = np.array([[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]], np.int32)
    collider = Collider(name="tent", vertices=vertices, triangles=triangles, thickness=0.004)
    (runtime,) = ColliderSet((collider,)).advance(0.0)
    grains = grains_near_surface(runtime.vertices, triangles, 2000, rng, (0.008, 0.02), spread=0.02)
    n = len(grains.positions)
    omega = rng.normal(0, 30.0, (n, 3)).astype(np.float32)
    beta = np.array([0.4, 0.2])
    mu = np.array([0.6, 0.3])
    rolling = law != "friction"
    # Material 1 has no cohesion against the collider: both laws' branches run side by side.
    roll = np.array([0.15, 0.05]) if rolling else np.zeros(2)
    cohesion = np.array([3.0e5, 0.0]) if rolling else np.zeros(2)
    stiffness, dt = 2.0e4, 1e-4
    spring = friction_model == "spring"
    shape = (n, ck.MAX_CONTACTS, 3)
    springs = np.zeros((n, ck.MAX_CONTACTS, 6))
    normals = np.zeros(shape)
    counts = np.zeros(n, np.int8)
    reference = np.zeros((n, 3))
    reference_torque = np.zeros((n, 3))
    # Two steps, so the second starts from the springs the first kept.
    for _ in range(2):
        reference[:] = 0.0
        reference_torque[:] = 0.0
        ck.collider_forces(grains.positions, grains.velocities, grains.radius, grains.mass, grains.material,
                           grains.active, reference, runtime.vertices, runtime.velocities, triangles,
                           *runtime.tree.arrays(), 0.5 * collider.thickness, beta, mu, roll, cohesion,
                           stiffness, np.zeros((0, 3)), spring, dt, springs, normals, counts, 0.0, np.full(n, -1.0), np.zeros((n, 3)),
                           np.zeros(n), omega, reference_torque, True)

    pos, vel, force, info = grains.device_arrays()
    params = dem_params(pos, vel, force, info)
    omega4 = np.zeros((n, 4), np.float32)
    omega4[:, :3] = omega
    torque4 = np.zeros((n, 4), np.float32)
    params[0]["omega"] = omega4.ctypes.data
    params[0]["torque"] = torque4.ctypes.data
    params[0]["rotation"] = 1
    slot_to_model = np.arange(n, dtype=np.int32)
    params[0]["slot_to_model"] = slot_to_model.ctypes.data
    cparams, keep = collider_params(runtime, np.zeros_like(runtime.vertices), beta, mu, np.array([0.3, 0.8]), pos,
                                    0.5 * collider.thickness, stiffness, roll=roll, cohesion=cohesion)
    device_springs = {"springs": np.zeros((n, ck.MAX_CONTACTS, 6)), "normals": np.zeros(shape),
                      "contact_count": np.zeros(n, np.int32)}
    if spring or rolling:
        for name, array in device_springs.items():
            cparams[0][name] = array.ctypes.data
        cparams[0]["spring_model"] = int(spring)
        cparams[0]["rolling_model"] = int(rolling)
        cparams[0]["dt"] = dt
    sums = np.zeros((n, 3))
    torques = np.zeros((n, 3))
    for _ in range(2):
        lib.collider_force_torque_sums_host(params.ctypes.data, cparams.ctypes.data, sums.ctypes.data,
                                            torques.ctypes.data)
    assert np.count_nonzero(counts) > 300
    assert np.array_equal(sums, reference)
    assert np.array_equal(torques, reference_torque)
    assert np.abs(torques).max() > 0.0
    if rolling:
        assert np.abs(springs[:, :, 3:]).max() > 0.0  # the rolling springs are loaded
    if spring or rolling:
        assert np.array_equal(device_springs["springs"], springs)
    else:  # the kernel's entry point adds both, rounded once, to the float32 force and torque
        lib.collider_forces_host(params.ctypes.data, cparams.ctypes.data, 1)
        assert np.array_equal(force[:, :3], reference.astype(np.float32))
        assert np.array_equal(torque4[:, :3], reference_torque.astype(np.float32))


def _system(rng, integrator, *, count=100, tilt_deg=0.0):
    """A loose heap on the floor of a box, stirred: frictional, rolling-resistant and cohesive."""
    r = 0.005
    side = int(np.ceil(np.sqrt(count / 3)))
    g = np.stack(np.meshgrid(np.arange(side), np.arange(3), np.arange(side), indexing="ij"), -1).reshape(-1, 3)[:count]
    positions = (g * 2 * r * 0.9995 + r * 0.9995).astype(np.float32)
    positions[:, [0, 2]] += 0.02
    positions += rng.normal(0, r * 0.0002, positions.shape).astype(np.float32)
    radius = rng.uniform(0.999 * r, r, count).astype(np.float32)
    tilt = np.deg2rad(tilt_deg)
    materials = (Material(friction=0.5, restitution=0.3, rolling_friction=0.2, cohesion=2.0e3),)
    physics = Physics(materials=materials,
                      domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.2, 0.2, 0.2), wall_friction=0.5, wall_restitution=0.3,
                                    wall_rolling_friction=0.1),
                      gravity=Gravity(vector=(9.81 * np.sin(tilt), -9.81 * np.cos(tilt), 0.0)),
                      stiffness=2.0e4, dt=2.0e-5, rotation=True, integrator=integrator)
    return build_model(radius, physics), positions


class HostStepper:
    """engine.backends.gpu_backend's step loop over the host build: prime (Verlet), then per step drift
    (Verlet), grid or OptiX forces, flip, update."""

    def __init__(self, lib, model, positions, velocities, omega=None, *, path="grid"):
        _bind(lib)
        self.lib = lib
        self.model = model
        self.path = path
        n = model.particle_count
        self.grains = HostGrains(model, positions, velocities, np.ones(n, np.uint8))
        if omega is not None:
            self.grains.arrays["omega"][:, :3] = omega
        self.clumps = getattr(model, "clumps", None) is not None
        if self.clumps:
            state = make_state(positions, velocities)
            if omega is not None:
                state.angular_velocities = omega
            self.grains.arrays["clump_body"][:] = clump_bodies(model, state)
        self.step_index = 0
        self.verlet = model.physics.integrator == "verlet"
        self.primed = False

    def _forces(self):
        self.grains.arrays["torque"][:] = 0.0
        if self.path == "grid":
            grid_run(self.lib, self.grains)
        else:
            optix_run(self.lib, self.grains, offers=1)
        self.grains.arrays["spring_parity"][0] ^= 1

    def _gravity(self, step):
        return self.model.physics.gravity.at(step * self.model.physics.dt).astype(np.float32)

    def step(self, count):
        g = self.grains
        physics = self.model.physics
        for _ in range(count):
            if self.verlet and not self.primed:
                g.arrays["history_dt"][0] = 0.0
                self._forces()
                a = self._gravity(self.step_index)
                self.lib.dem_verlet_prime_host(g.address, float(a[0]), float(a[1]), float(a[2]), self.step_index)
                if self.clumps:
                    self.lib.dem_clump_step_host(g.address, 0)
                g.arrays["history_dt"][0] = physics.dt
                self.primed = True
            if self.verlet:
                self.lib.dem_verlet_drift_host(g.address, self.step_index)
                if self.clumps:
                    self.lib.dem_clump_step_host(g.address, 2)
            self._forces()
            a = self._gravity(self.step_index + (1 if self.verlet else 0))
            # The update kernel DeviceParticles picks.
            update = self.lib.dem_integrate_rotating_host if rotating_update(self.model) else self.lib.dem_integrate_host
            update(g.address, float(a[0]), float(a[1]), float(a[2]), self.step_index)
            if self.clumps:
                self.lib.dem_clump_step_host(g.address, 3 if self.verlet else 1)
            self.step_index += 1
        assert g.arrays["diag"][0] == 2**31 - 1, "NaN on the host GPU path"

    def state(self):
        g = self.grains
        return g.pos[:, :3].copy(), g.vel[:, :3].copy(), g.arrays["omega"][:, :3].copy(), g.arrays["orientation"].copy()


@pytest.mark.parametrize("integrator,path", [("verlet", "grid"), ("euler", "grid"), ("verlet", "optix")])
def test_steps_follow_the_cpu_backend(host_library, integrator, path, rng):
    """A stirred cohesive, rolling-resistant heap stepped 400 times on the host GPU path and on the CPU
    backend: positions, velocities, angular velocities and orientations agree (float32 against float64)."""
    model, positions = _system(rng, integrator)
    n = model.particle_count
    velocities = rng.normal(0, 0.02, (n, 3)).astype(np.float32)
    omega = rng.normal(0, 5.0, (n, 3)).astype(np.float32)
    cpu = BackendCpu(model)
    state = make_state(positions, velocities)
    state.angular_velocities = omega.copy()
    cpu.set_state(state)
    cpu.step(400)
    reference = cpu.get_state()
    host = HostStepper(host_library, model, positions, velocities, omega, path=path)
    host.step(400)
    pos, vel, w, q = host.state()
    r = float(model.radius.max())
    assert np.abs(reference.positions - positions).max() > 0.02 * r, "the heap should move"
    assert np.abs(reference.angular_velocities - omega).max() > 1.0, "the grains should spin up or down"
    assert np.abs(pos - reference.positions).max() < 1e-3 * r
    assert np.abs(vel - reference.velocities).max() < 2e-2 * np.abs(reference.velocities).max()
    assert np.abs(w - reference.angular_velocities).max() < 2e-2 * np.abs(reference.angular_velocities).max()
    assert np.abs(q - reference.orientations).max() < 1e-3
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)


def _ball_on_slope(rolling_friction, tilt_deg, *, friction=0.5):
    r = 0.01
    materials = (Material(friction=friction, restitution=0.3, rolling_friction=rolling_friction),)
    tilt = np.deg2rad(tilt_deg)
    physics = Physics(materials=materials,
                      domain=Domain(lo=(0.0, 0.0, 0.0), hi=(2.0, 0.5, 0.5), wall_friction=friction,
                                    wall_restitution=0.3, wall_rolling_friction=rolling_friction),
                      gravity=Gravity(vector=(9.81 * np.sin(tilt), -9.81 * np.cos(tilt), 0.0)),
                      stiffness=2.0e4, dt=2.0e-5, rotation=True, integrator="verlet")
    model = build_model(np.array([r], np.float32), physics)
    # Resting on the floor at its equilibrium overlap (m g cosθ / k).
    overlap = float(model.mass[0]) * 9.81 * np.cos(tilt) / physics.stiffness
    return model, np.array([[0.1, r - overlap, 0.25]], np.float32)


def test_sphere_rolls_down_a_slope_at_five_sevenths_g_sin(grain_library):
    """Without slip a solid sphere accelerates at 5/7 g sinθ (tan 20° < 7/2 μ); rolling resistance μ_r
    below tan θ slows it to 5/7 g (sinθ − μ_r cosθ) (the capped rolling torque μ_r N r), above it holds
    it."""
    tilt = 20.0
    g_sin = 9.81 * np.sin(np.deg2rad(tilt))
    g_cos = 9.81 * np.cos(np.deg2rad(tilt))
    speeds = {}
    for mu_r in (0.0, 0.1, 0.5):
        model, positions = _ball_on_slope(mu_r, tilt)
        host = HostStepper(grain_library, model, positions, np.zeros((1, 3), np.float32))
        host.step(2500)  # 0.05 s: the contact settles, the spring loads
        _, v0, _, _ = host.state()
        host.step(5000)  # 0.1 s more
        _, v1, w1, _ = host.state()
        speeds[mu_r] = (float(v1[0, 0] - v0[0, 0]) / 0.1, float(v1[0, 0]), float(w1[0, 2]))
    acceleration, v, w = speeds[0.0]
    assert acceleration == pytest.approx(5.0 / 7.0 * g_sin, rel=0.01)
    assert w == pytest.approx(-v / float(model.radius[0]), rel=0.01)  # ω_z = −v/r: rolling, not sliding
    assert abs(speeds[0.5][1]) < 1e-3 * abs(speeds[0.0][1])  # μ_r = 0.5 > tan 20° = 0.36: it stays
    assert speeds[0.1][0] == pytest.approx(5.0 / 7.0 * (g_sin - 0.1 * g_cos), rel=0.01)


def test_paper_model_runs_the_paper_kernels(grain_library, rng):
    """rotation off, Euler, no rolling or cohesion: the update leaves ω, torque and orientation arrays
    untouched and gives the same bits as the rotating law's walls and Euler with ω = 0 give to float32
    rounding (the kernels take the paper's path, checked against the CPU in test_grain_device_*)."""
    model, positions = _system(rng, "euler")
    paper = dataclasses.replace(model.physics, rotation=False, materials=(Material(friction=0.5, restitution=0.3),),
                                domain=dataclasses.replace(model.physics.domain, wall_rolling_friction=0.0))
    model = build_model(model.radius, paper)
    assert not rotation_tables(paper)["cohesion"].any()
    n = model.particle_count
    velocities = rng.normal(0, 0.02, (n, 3)).astype(np.float32)
    host = HostStepper(grain_library, model, positions, velocities)
    before = {name: host.grains.arrays[name].copy() for name in ("omega", "torque", "orientation", "accel", "alpha")}
    host.step(50)
    for name, array in before.items():
        assert np.array_equal(host.grains.arrays[name], array), name
    cpu = BackendCpu(model)
    cpu.set_state(make_state(positions, velocities))
    cpu.step(50)
    assert np.abs(host.state()[0] - cpu.get_state().positions).max() < 1e-4 * float(model.radius.max())


def test_rolling_history_round_trip(rng):
    """The rolling histories travel with the springs through the history format, never negated: a pair
    seen from the other particle has its spring negated and its rolling history as it is."""
    n = 40
    radius = rng.choice([0.01, 0.02], n).astype(np.float32)
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, n, (120, 2)) if a < b})
    i = np.array([p[0] for p in pairs], np.int32)
    j = np.array([p[1] for p in pairs], np.int32)
    spring = rng.normal(0, 1e-4, (len(i), 3))
    rolling = rng.normal(0, 1e-4, (len(i), 3))
    spring[::5] = 0.0  # a pair with only a rolling history is kept too
    history = {"pair_i": i, "pair_j": j, "pair_spring": spring, "pair_rolling": rolling,
               "wall_spring": np.zeros((n, 6, 3)), "wall_rolling": rng.normal(0, 1e-4, (n, 6, 3))}
    rows, dropped = rows_from_history(history, radius)
    assert dropped == 0
    back = history_from_rows(rows)
    i_owns = owns(i, radius[i], j, radius[j])
    expected = {(int(a), int(b)) if o else (int(b), int(a)): (tuple(np.float32(s if o else -s)), tuple(np.float32(r)))
                for a, b, s, r, o in zip(i, j, spring, rolling, i_owns)}
    found = {(int(a), int(b)): (tuple(np.float32(s)), tuple(np.float32(r)))
             for a, b, s, r in zip(back["pair_i"], back["pair_j"], back["pair_spring"], back["pair_rolling"])}
    assert found == expected
    assert np.array_equal(back["wall_rolling"], history["wall_rolling"].astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("path", ["grid", "optix"])
def test_glue_bonds_follow_the_cpu_backend(host_library, path, rng):
    """A stirred glued heap: on both paths the bonded pairs skip their contact, the bonds act, and the
    same bonds break as on the CPU backend."""
    model, positions = _system(rng, "verlet", count=80)
    physics = dataclasses.replace(model.physics, bodies=(Body(object_id=0, kind="glued", glue_strength=1.0e4),))
    model = build_model(model.radius, physics, positions=positions)
    n = model.particle_count
    velocities = rng.normal(0, 0.2, (n, 3)).astype(np.float32)
    omega = rng.normal(0, 5.0, (n, 3)).astype(np.float32)
    cpu = BackendCpu(model)
    state = make_state(positions, velocities)
    state.angular_velocities = omega.copy()
    cpu.set_state(state)
    cpu.step(300)
    reference = cpu.get_state()
    intact = cpu.get_contact_history()["bond_intact"]
    host = HostStepper(host_library, model, positions, velocities, omega, path=path)
    host.step(300)
    b = model.bonds.count
    half = int(host.grains.arrays["spring_parity"][0])
    got = host.grains.arrays["bond_state"][half * b:(half + 1) * b]
    assert 0 < np.count_nonzero(intact == 0) < b // 2
    assert np.array_equal((got[:, 3] != 0).astype(np.uint8), intact)
    assert not got[intact == 0].any()  # broken bonds keep no shear
    pos, _, w, _ = host.state()
    r = float(model.radius.max())
    assert np.abs(pos - reference.positions).max() < 1e-3 * r
    assert np.abs(w - reference.angular_velocities).max() < 2e-2 * np.abs(reference.angular_velocities).max()


@pytest.mark.parametrize("path", ["grid", "optix"])
def test_rigid_clump_follows_the_cpu_backend(host_library, path, rng):
    """A tumbling rigid clump thrown out of a heap, on both contact paths: members never touch each
    other and move as one body, as on the CPU backend."""
    model, positions = _system(rng, "verlet", count=80)
    n = model.particle_count
    object_id = np.zeros(n, np.int32)
    object_id[:20] = 1
    physics = dataclasses.replace(model.physics, bodies=(Body(object_id=1, kind="rigid"),))
    model = build_model(model.radius, physics, object_id=object_id, positions=positions)
    velocities = rng.normal(0, 0.02, (n, 3)).astype(np.float32)
    velocities[:20] += np.float32([0.3, 0.6, -0.2])
    omega = rng.normal(0, 5.0, (n, 3)).astype(np.float32)
    cpu = BackendCpu(model)
    state = make_state(positions, velocities)
    state.angular_velocities = omega.copy()
    cpu.set_state(state)
    cpu.step(300)
    reference = cpu.get_state()
    host = HostStepper(host_library, model, positions, velocities, omega, path=path)
    host.step(300)
    pos, _, w, q = host.state()
    members = model.clumps.members
    r = float(model.radius.max())
    assert np.abs(reference.positions[members] - positions[members]).max() > 0.3 * r
    assert np.abs(pos - reference.positions).max() < 1e-3 * r
    assert np.abs(w - reference.angular_velocities).max() < 2e-2 * np.abs(reference.angular_velocities).max()
    assert np.abs(q[members] - reference.orientations[members]).max() < 1e-4
