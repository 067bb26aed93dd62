"""Triangle-mesh colliders on the CPU: contact law, distinct contacts, swept test, motions, resume."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trimesh

from engine.backends import make_backend
from engine.bake import BakeProgress, bake
from engine.cache import read_history
from engine.colliders import (Collider, ColliderSet, DeformMotion, RigidMotionAnalytic, RigidMotionKeyframes,
                              euler_rotation, load_colliders)
from engine.colliders import kernels
from engine.errors import MochiError
from engine.model import Domain, Gravity, Material, Physics
from engine.packing.bvh import build_bvh
from engine.packing.queries import winding_numbers
from engine.preset import load_preset, parse_preset
from engine.scene import setup_from_arrays, setup_from_preset

PRESETS = Path(__file__).resolve().parents[2] / "presets"
ALL_SIDES = ("-x", "+x", "-y", "+y", "-z", "+z")


def grid_plane(size: float, cells: int, *, height: float = 0.0):
    """A square of side ``size`` in the xz plane at y = ``height``, 2·cells² triangles."""
    xs = np.linspace(-size / 2, size / 2, cells + 1)
    x, z = np.meshgrid(xs, xs, indexing="ij")
    vertices = np.stack([x.ravel(), np.full(x.size, height), z.ravel()], axis=1)
    index = np.arange(x.size).reshape(cells + 1, cells + 1)
    a, b, c, d = (index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel())
    return vertices, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def make_scene(positions, radius, colliders, *, velocities=None, gravity=(0.0, -9.81, 0.0), lo=(-1, -1, -1),
               hi=(1, 1, 1), open_sides=(), friction=0.5, restitution=0.5, stiffness=1.0e4, dt=None, fps=25.0,
               friction_model="spring", rotation=True, rolling_friction=0.0):
    material = Material(name="m", density=2500.0, restitution=restitution, friction=friction,
                        rolling_friction=rolling_friction)
    positions = np.asarray(positions, np.float32).reshape(-1, 3)
    radius = np.broadcast_to(np.asarray(radius, np.float32), (len(positions),)).copy()
    return setup_from_arrays(positions=positions, radius=radius, velocities=velocities, materials=(material,),
                             domain=Domain(lo=tuple(lo), hi=tuple(hi), open_sides=tuple(open_sides),
                                           wall_restitution=restitution, wall_friction=friction),
                             gravity=Gravity(vector=tuple(gravity)), stiffness=stiffness, dt=dt, fps=fps,
                             colliders=ColliderSet(tuple(colliders)), friction_model=friction_model,
                             rotation=rotation, integrator="verlet" if rotation else "euler")


def run(setup, seconds: float, backend: str = "cpu"):
    backend = make_backend(backend, setup.model)
    backend.set_state(setup.state)
    backend.step(int(round(seconds / setup.model.physics.dt)))
    return backend.get_state()


def lattice(lo, hi, spacing, rng, jitter=0.05):
    axes = [np.arange(a + spacing / 2, b - spacing / 2 + 1e-9, spacing) for a, b in zip(lo, hi)]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    return points + rng.uniform(-jitter, jitter, points.shape) * spacing


# --- contact law and distinct contacts ------------------------------------------------------------------


@pytest.mark.parametrize("angle, slides", [(20.0, False), (35.0, True)])
def test_ball_on_tilted_plane_slides_only_beyond_friction_angle(angle, slides):
    """μ = 0.5 (friction angle 26.6°): the tangential spring holds the ball at 20°, it slides at 35°
    (a ball that does not rotate: a block)."""
    vertices, triangles = grid_plane(2.0, 8)
    tilt = euler_rotation((0.0, 0.0, angle))
    plane = Collider("plane", vertices @ tilt.T, triangles, thickness=0.002, restitution=0.5, friction=0.5)
    normal = tilt @ np.array([0.0, 1.0, 0.0])
    start = normal * 0.011  # r + thickness/2: just touching
    setup = make_scene(start, 0.01, [plane], lo=(-2, -2, -2), hi=(2, 2, 2), rotation=False)
    t = 0.5
    end = run(setup, t).positions[0].astype(np.float64)
    travel = float(np.linalg.norm(end - start))
    a = math.radians(angle)
    expected = 0.5 * 9.81 * (math.sin(a) - 0.5 * math.cos(a)) * t * t
    if slides:
        assert travel == pytest.approx(expected, rel=0.05)
    else:
        assert travel < 1e-3
    assert float(end @ normal) == pytest.approx(0.011, abs=5e-4)  # resting on the shell, not in it


def test_ball_rolls_down_a_tilted_mesh_at_five_sevenths_g_sin_theta():
    """A rotating ball on a mesh slope (μ = 0.5 > 2/7 tan 20°) rolls without slipping: a = 5/7 g sinθ."""
    angle = 20.0
    vertices, triangles = grid_plane(2.0, 8)
    tilt = euler_rotation((0.0, 0.0, angle))
    plane = Collider("plane", vertices @ tilt.T, triangles, thickness=0.002, restitution=0.5, friction=0.5)
    normal = tilt @ np.array([0.0, 1.0, 0.0])
    start = normal * 0.011
    setup = make_scene(start, 0.01, [plane], lo=(-2, -2, -2), hi=(2, 2, 2))
    t = 0.5
    travel = float(np.linalg.norm(run(setup, t).positions[0].astype(np.float64) - start))
    assert travel == pytest.approx(0.5 * 5.0 / 7.0 * 9.81 * math.sin(math.radians(angle)) * t * t, rel=0.03)


def _single_force(collider, position, radius=0.01, velocity=(0.0, 0.0, 0.0)):
    colliders = ColliderSet((collider,))
    physics = Physics(materials=(Material(friction=0.0),), stiffness=1.0e4, dt=1e-4)
    force = np.zeros((1, 3))
    colliders.add_forces(0.0, np.array([position], np.float32), np.array([velocity], np.float32),
                         np.array([radius], np.float32), np.array([0.01], np.float32), np.zeros(1, np.int32),
                         np.ones(1, np.uint8), force, physics)
    return force[0], int(colliders._counts[0, 0])


@pytest.mark.parametrize("where", [(0.0, 0.0), (0.0625, 0.0), (0.031, 0.017), (0.0625, 0.0625)])
def test_flat_surface_force_does_not_depend_on_tessellation(where):
    """A ball pressed into a plane feels one contact of k·overlap whether it sits over a vertex, an
    edge or a face, on a plane of 2 or of 512 triangles (no double counting at shared edges)."""
    point = (where[0], 0.008, where[1])
    for cells in (1, 16):
        force, contacts = _single_force(Collider("plane", *grid_plane(1.0, cells)), point)
        assert contacts == 1
        np.testing.assert_allclose(force, [0.0, 1.0e4 * 0.002, 0.0], atol=1e-4)  # float32 centre


def test_concave_corner_gives_two_contacts_and_convex_edge_one():
    """Stairs: in the inner corner (floor meets riser) a ball touches both faces; over an outer edge
    it touches the edge once, pushed along the diagonal."""
    stairs = trimesh.load(PRESETS / "meshes" / "stairs.obj", force="mesh", process=False)
    collider = Collider("stairs", stairs.vertices, stairs.faces)
    # Inner corner at x = 0.12, y = 0.32 (top of step 2 meets the riser of step 1).
    force, contacts = _single_force(collider, (0.128, 0.328, 0.2))
    assert contacts == 2
    np.testing.assert_allclose(force, [1.0e4 * 0.002, 1.0e4 * 0.002, 0.0], atol=1e-4)
    # Outer edge of the top step (x = 0.12, y = 0.4), ball diagonally outside it.
    offset = 0.008 / math.sqrt(2.0)
    force, contacts = _single_force(collider, (0.12 + offset, 0.4 + offset, 0.2))
    assert contacts == 1
    np.testing.assert_allclose(force, [1.0e4 * 0.002 / math.sqrt(2.0)] * 2 + [0.0], atol=1e-4)


def test_tree_query_matches_brute_force_after_deformation(rng):
    """Forces through the refit BVH equal, bit for bit, those of a one-leaf 'tree' holding every triangle."""
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.2)
    twisted = sphere.vertices.copy()
    angle = 12.0 * twisted[:, 1]  # twist about y: refit boxes grow, the tree gets rebuilt
    twisted[:, 0], twisted[:, 2] = (np.cos(angle) * sphere.vertices[:, 0] - np.sin(angle) * sphere.vertices[:, 2],
                                    np.sin(angle) * sphere.vertices[:, 0] + np.cos(angle) * sphere.vertices[:, 2])
    motion = DeformMotion(times=[0.0, 1.0], vertices=np.stack([sphere.vertices, twisted]))
    collider = Collider("twisted", sphere.vertices, sphere.faces, thickness=0.004, motion=motion)
    colliders = ColliderSet((collider,))
    runtime = colliders._runtime[0]
    for t in np.linspace(0.0, 1.0, 6):
        runtime.advance(float(t))
    assert runtime.tree.rebuilds >= 2
    directions = rng.normal(size=(4000, 3))
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    points = (directions * rng.uniform(0.17, 0.23, (4000, 1))).astype(np.float32)
    n = len(points)
    args = (points, rng.normal(size=(n, 3)).astype(np.float32), np.full(n, 0.01, np.float32),
            np.full(n, 0.01, np.float32), np.zeros(n, np.int32), np.ones(n, np.uint8))

    def forces(tree_arrays):
        force = np.zeros((n, 3))
        springs = np.zeros((n, kernels.MAX_CONTACTS, 6))
        kernels.collider_forces(*args, force, runtime.vertices, runtime.velocities, collider.triangles, *tree_arrays,
                                0.002, np.array([0.3]), np.array([0.5]), np.zeros(1), np.zeros(1), 1.0e4, np.zeros((0, 3)), True, 1e-4,
                                springs, np.zeros((n, kernels.MAX_CONTACTS, 3)), np.zeros(n, np.int8), 0.0, np.full(n, -1.0), np.zeros((n, 3)),
                                np.zeros(n), np.zeros((0, 3), np.float32), np.zeros((0, 3)), False)
        return force

    t = len(collider.triangles)
    one_leaf = (np.arange(t), runtime.vertices.min(axis=0)[None], runtime.vertices.max(axis=0)[None],
                np.array([-1]), np.array([0]), np.array([t]))
    fast = forces(runtime.tree.arrays())
    assert np.count_nonzero(fast.any(axis=1)) > 1000
    assert np.array_equal(fast, forces(one_leaf))


def test_clearance_skip_changes_nothing():
    """Grains far from a collider skip the tree until they (or it) may have come within reach; the
    result is bit-identical to querying every grain every step."""
    setup = _resume_scene()

    def advance(forget_clearance: bool):
        backend = make_backend("cpu", setup.model)
        backend.set_state(setup.state)
        for _ in range(150):
            if forget_clearance:
                setup.model.colliders._clearance[:] = -1.0
            backend.step(1)
        return backend.get_state()

    skipping, querying = advance(False), advance(True)
    assert np.array_equal(skipping.positions, querying.positions)
    assert np.array_equal(skipping.velocities, querying.velocities)


# --- swept test ------------------------------------------------------------------------------------


def throw_scene(shape, thickness, rng, friction_model="spring"):
    """200 grains at 20–50 m/s with a soft spring and a coarse step (they travel 1–2.5 radii per
    step, so contact forces alone let them through), 130 thrown at a closed mesh from outside and 70
    about inside it. Returns the setup and a check of the final state (also used by tests/gpu)."""
    mesh = (trimesh.creation.box(extents=(0.6, 0.6, 0.6)).subdivide() if shape == "box"
            else trimesh.creation.icosphere(subdivisions=2, radius=0.35))
    collider = Collider(shape, mesh.vertices, mesh.faces, thickness=thickness, restitution=0.5)
    outer, inner = 130, 70
    direction = rng.normal(size=(outer, 3))
    start_out = direction / np.linalg.norm(direction, axis=1)[:, None]
    aim = rng.uniform(-0.2, 0.2, (outer, 3)) - start_out
    v_out = aim / np.linalg.norm(aim, axis=1)[:, None] * rng.uniform(20, 50, (outer, 1))
    start_in = rng.uniform(-0.18, 0.18, (inner, 3))
    v_in = rng.normal(size=(inner, 3))
    v_in *= rng.uniform(20, 50, (inner, 1)) / np.linalg.norm(v_in, axis=1)[:, None]
    setup = make_scene(np.concatenate([start_out, start_in]), 0.01, [collider],
                       velocities=np.concatenate([v_out, v_in]).astype(np.float32), gravity=(0, 0, 0),
                       lo=(-1.5,) * 3, hi=(1.5,) * 3, open_sides=ALL_SIDES, stiffness=1.0e4, dt=5e-4, fps=50,
                       friction_model=friction_model)

    def check(state, swept_corrections):
        inside = winding_numbers(build_bvh(mesh.vertices, mesh.faces), state.positions) > 0.5
        assert not inside[:outer].any(), f"{int(inside[:outer].sum())} thrown grains got inside"
        assert inside[outer:].all(), f"{int((~inside[outer:]).sum())} grains escaped"
        assert swept_corrections > outer  # the sweep did the work

    return setup, check


@pytest.mark.parametrize("shape, thickness", [("box", 0.0), ("sphere", 0.004)])
def test_fast_throws_never_pass_through_a_closed_collider(shape, thickness, rng):
    """Thrown at the mesh from outside they stay out, thrown about inside they stay in."""
    setup, check = throw_scene(shape, thickness, rng)
    check(run(setup, 0.1), setup.model.colliders.swept_corrections)


# --- motions ----------------------------------------------------------------------------------------


def paddle_scene(rng, friction_model="spring"):
    """A paddle spinning about the vertical axis in a pile; returns the setup and a check that it
    drags the grains around with it (also used by tests/gpu)."""
    vertices, triangles = grid_plane(1.0, 2)
    # Unit square in xz → a 0.2 × 0.05 blade in the xy plane, spinning about y through the origin.
    blade = np.stack([vertices[:, 0] * 0.2, (vertices[:, 2] + 0.5) * 0.05 + 0.004, np.zeros(len(vertices))], 1)
    omega = 6.0
    paddle = Collider("paddle", blade, triangles, thickness=0.004, friction=0.5,
                      motion=RigidMotionAnalytic(np.eye(3), (0, 0, 0), (0, 0, 0), (0, omega, 0), (0, 0, 0)))
    grains = lattice((-0.12, 0.0, -0.12), (0.12, 0.07, 0.12), 0.0125, rng)
    grains = grains[np.abs(grains[:, 2]) > 0.012]
    setup = make_scene(grains, 0.005, [paddle], lo=(-0.13, 0.0, -0.13), hi=(0.13, 0.3, 0.13), stiffness=2.0e3,
                       friction=0.4, friction_model=friction_model)

    def check(state):
        x, v = state.positions.astype(np.float64), state.velocities.astype(np.float64)
        swirl = x[:, 2] * v[:, 0] - x[:, 0] * v[:, 2]  # (x × v)_y: positive turning with the paddle
        reach = np.hypot(x[:, 0], x[:, 2]) < 0.1
        assert swirl[reach].mean() > 0.1 * omega * (np.hypot(x[reach, 0], x[reach, 2]) ** 2).mean()
        assert np.isfinite(x).all()

    return setup, check


def test_rotating_paddle_stirs_a_pile(rng):
    setup, check = paddle_scene(rng)
    check(run(setup, 0.4))


@pytest.mark.parametrize("rotation", [False, True])
def test_moving_belt_drags_a_grain_to_its_speed(rotation):
    """The surface velocity enters the contact: a grain resting on a plane sliding at 0.5 m/s (a
    conveyor belt) is dragged up to the belt's speed by friction alone; a grain that rotates ends
    rolling on it, at 2/7 of its speed (angular momentum about the contact point stays 0: m v R = I ω,
    with v + ω R = belt speed)."""
    vertices, triangles = grid_plane(2.0, 4)
    belt = Collider("belt", vertices, triangles, thickness=0.002, friction=0.5,
                    motion=RigidMotionAnalytic(np.eye(3), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0.5, 0, 0)))
    setup = make_scene([0.0, 0.0109, 0.0], 0.01, [belt], lo=(-2, -1, -2), hi=(2, 1, 2), rotation=rotation)
    state = run(setup, 0.3)
    speed = 0.5 * 2.0 / 7.0 if rotation else 0.5
    np.testing.assert_allclose(state.velocities[0], [speed, 0.0, 0.0], atol=2e-3)
    assert state.positions[0, 1] == pytest.approx(0.011, abs=5e-4)


def bowl_scene(rng, friction_model="spring"):
    """Grains dropped into a hemisphere without a lid (the bowl_pour preset's mesh at 2/3 scale), from
    either side of its open shell; the domain floor is far below. Returns the setup and a check that
    they settle in it (also used by tests/gpu)."""
    mesh = trimesh.load(PRESETS / "meshes" / "bowl.obj", force="mesh", process=False)
    radius = 0.1
    bowl = Collider("bowl", mesh.vertices * (radius / 0.15), mesh.faces, thickness=0.003, friction=0.5)
    grains = lattice((-0.05, -0.06, -0.05), (0.05, 0.06, 0.05), 0.0125, rng)
    grains = grains[(np.linalg.norm(grains, axis=1) < radius - 0.01) | (grains[:, 1] > 0.0)]
    setup = make_scene(grains, 0.005, [bowl], lo=(-0.3, -0.5, -0.3), hi=(0.3, 0.3, 0.3), stiffness=2.0e3,
                       friction_model=friction_model)

    def check(state):
        distance = np.linalg.norm(state.positions.astype(np.float64), axis=1)
        assert distance.max() < radius - 0.005 + 1e-3  # all inside the bowl, resting on its inner side
        assert state.positions[:, 1].max() < 0.0  # below the rim: nothing piled above it
        # Settled; without static friction ('damper') the pile keeps slumping slowly in the bowl.
        assert np.abs(state.velocities).max() < (0.2 if friction_model == "spring" else 1.0)

    return setup, check


def test_open_bowl_holds_grains(rng):
    setup, check = bowl_scene(rng)
    check(run(setup, 0.6))


def lift_scene(rng, friction_model="spring"):
    """A plane whose vertices rise by 6 cm over 0.3 s under a layer of grains; returns the setup and
    a check that it lifted them all (also used by tests/gpu)."""
    vertices, triangles = grid_plane(0.3, 6)
    risen = vertices + [0.0, 0.06, 0.0]
    floor = Collider("lift", vertices, triangles, thickness=0.002,
                     motion=DeformMotion(times=[0.1, 0.4], vertices=np.stack([vertices, risen])))
    grains = lattice((-0.1, 0.01, -0.1), (0.1, 0.05, 0.1), 0.0125, rng)
    # Grains that do not rotate: spheres rolling freely (colliders have no rolling resistance yet) roll
    # off the plate's edges as the layer settles.
    setup = make_scene(grains, 0.005, [floor], lo=(-0.2, -0.2, -0.2), hi=(0.2, 0.4, 0.2), stiffness=2.0e3,
                       friction_model=friction_model, rotation=False)

    def check(state):
        y = state.positions[:, 1]
        assert y.min() > 0.06 + 0.005  # every grain above the risen plane, none left behind below it
        assert np.abs(state.velocities).max() < 0.5  # and at rest on it

    return setup, check


def test_deforming_plane_pushes_grains_up(rng):
    setup, check = lift_scene(rng)
    check(run(setup, 0.5))


@pytest.mark.parametrize("scene", ["bowl", "lift"])
def test_damper_friction_model_holds_grains_too(scene, rng):
    """The history-free friction model (the one the GPU backends run) passes the same checks."""
    setup, check = (bowl_scene if scene == "bowl" else lift_scene)(rng, friction_model="damper")
    check(run(setup, 0.6 if scene == "bowl" else 0.5))


# --- errors, storage, resume, presets ----------------------------------------------------------------


def test_bad_colliders_raise_one_sentence(tmp_path):
    vertices, triangles = grid_plane(1.0, 1)
    with pytest.raises(MochiError, match="has no faces"):
        Collider("empty", vertices, np.zeros((0, 3), np.int64))
    bad = vertices.copy()
    bad[2, 1] = np.nan
    with pytest.raises(MochiError, match="NaN or infinite coordinate at vertex 2"):
        Collider("nan", bad, triangles)
    with pytest.raises(MochiError, match="index outside"):
        Collider("index", vertices, triangles + 10)
    with pytest.raises(MochiError, match="restitution"):
        Collider("e", vertices, triangles, restitution=0.0)
    with pytest.raises(MochiError, match="vertices per key"):
        Collider("deform", vertices, triangles, motion=DeformMotion([0.0, 1.0], np.zeros((2, 7, 3))))
    with pytest.raises(MochiError, match="strictly increasing"):
        RigidMotionKeyframes([0.0, 0.0], np.zeros((2, 3)), np.stack([np.eye(3)] * 2))
    with pytest.raises(MochiError, match="rotation"):
        RigidMotionKeyframes([0.0, 1.0], np.zeros((2, 3)), np.stack([np.eye(3), 2 * np.eye(3)]))
    empty = tmp_path / "empty.obj"
    empty.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    preset = {"emitters": [{"type": "box", "count": 1, "radius": 0.01}],
              "colliders": [{"type": "mesh", "path": "missing.obj"}]}
    with pytest.raises(MochiError, match="missing.obj' does not exist"):
        setup_from_preset(parse_preset(preset, str(tmp_path / "p.toml")))
    preset["colliders"][0]["path"] = "empty.obj"
    with pytest.raises(MochiError, match="has no faces"):
        setup_from_preset(parse_preset(preset, str(tmp_path / "p.toml")))
    preset["colliders"][0].update(velocity=[1, 0, 0], keyframes=[{"time": 0.0}])
    with pytest.raises(MochiError, match="both keyframes and velocity"):
        parse_preset(preset, str(tmp_path / "p.toml"))
    preset["colliders"][0] = {"type": "mesh", "path": "empty.obj", "thickness": -1}
    with pytest.raises(MochiError, match=r"\[\[colliders\]\] #1 thickness"):
        parse_preset(preset, str(tmp_path / "p.toml"))


def _resume_scene():
    rng = np.random.default_rng(5)
    floor_v, floor_t = grid_plane(0.3, 4)
    risen = floor_v + [0.0, 0.03, 0.0]
    floor = Collider("floor", floor_v, floor_t, thickness=0.002,
                     motion=DeformMotion([0.0, 1.0], np.stack([floor_v, risen])))
    blade_v, blade_t = grid_plane(1.0, 2)
    blade = np.stack([blade_v[:, 0] * 0.16, (blade_v[:, 2] + 0.5) * 0.04 + 0.006, np.zeros(len(blade_v))], 1)
    paddle = Collider("paddle", blade, blade_t, thickness=0.004,
                      motion=RigidMotionAnalytic(np.eye(3), (0, 0, 0), (0, 0, 0), (0, 5.0, 0), (0, 0, 0)))
    wall_v, wall_t = grid_plane(0.2, 2)
    wall = Collider("wall", wall_v @ euler_rotation((0, 0, 90)).T, wall_t, thickness=0.002,
                    motion=RigidMotionKeyframes([0.0, 0.1, 0.3], [[0.11, 0.1, 0], [0.1, 0.1, 0], [0.09, 0.1, 0.0]],
                                                [euler_rotation((0, a, 0)) for a in (0, 5, 10)]))
    grains = lattice((-0.1, 0.0, -0.1), (0.08, 0.05, 0.1), 0.0125, rng)  # bottom layer on the floor
    grains = grains[np.abs(grains[:, 2]) > 0.012]
    return make_scene(grains, 0.005, [floor, paddle, wall], lo=(-0.15, -0.05, -0.15), hi=(0.15, 0.3, 0.15),
                      stiffness=2.0e3, fps=50)


def test_resume_with_colliders_is_bit_identical(tmp_path):
    full = tmp_path / "full"
    bake(_resume_scene(), full, frames=6)
    part = tmp_path / "part"
    progress = BakeProgress()

    def cancel_after_frame_3(p):
        if p.frames_done == 3:
            p.request_cancel()

    bake(_resume_scene(), part, frames=6, progress=progress, on_frame=cancel_after_frame_3)
    assert progress.cancelled
    history = read_history(part, 3)
    assert len(history["collider_particle"]) > 50 and np.abs(history["collider_spring"]).max() > 0
    bake(None, part, frames=6, resume=True)  # everything, colliders included, from the cache
    frames = sorted(p.name for p in full.glob("frame_*.ply"))
    assert len(frames) == 6
    for name in frames:
        assert (part / name).read_bytes() == (full / name).read_bytes(), name


def test_colliders_round_trip_through_the_cache(tmp_path):
    original = _resume_scene().model.colliders
    original.save(tmp_path)
    loaded = load_colliders(tmp_path)
    assert [c.kind for c in loaded.colliders] == ["deforming", "rigid_analytic", "rigid_keyframes"]
    for a, b in zip(original.colliders, loaded.colliders):
        assert (a.name, a.thickness, a.restitution, a.friction) == (b.name, b.thickness, b.restitution, b.friction)
        for t in (0.0, 0.05, 0.2, 0.7):
            for x, y in zip(a.vertices_at(t), b.vertices_at(t)):
                assert np.array_equal(x, y)


def test_rigid_keyframes_velocity_is_the_derivative_of_position():
    vertices, triangles = grid_plane(0.2, 2)
    motion = RigidMotionKeyframes([0.0, 0.5], [[0, 0, 0], [0.1, 0.2, 0.0]],
                                  [euler_rotation((0, 0, 0)), euler_rotation((30, 40, 50))])
    collider = Collider("k", vertices, triangles, motion=motion)
    t, h = 0.2, 1e-6
    velocity = collider.vertices_at(t)[1]
    numeric = (collider.vertices_at(t + h)[0] - collider.vertices_at(t - h)[0]) / (2 * h)
    np.testing.assert_allclose(velocity, numeric, atol=1e-6)


def test_presets_with_colliders_load():
    bowl = load_preset(PRESETS / "bowl_pour.toml")
    assert [c.name for c in bowl.colliders] == ["bowl"]
    stairs = setup_from_preset(load_preset(PRESETS / "bunnies_stairs.toml"), particles=300)
    assert [c.kind for c in stairs.model.colliders.colliders] == ["static"]


@pytest.mark.parametrize("x,z", [(0.0, 0.013), (0.0, 0.0), (0.05, 0.05), (-0.05, 0.02)])
def test_throw_through_a_shared_edge_or_vertex_is_caught(x, z):
    """Segments crossing exactly an edge (or vertex) shared by two triangles must still be caught.

    The plane's edges lie on x = 0, z = 0 and on the cells' diagonals (x = z), so these throws cross
    edges and vertices, where a test with strict barycentric bounds on both triangles misses.
    """
    vertices, triangles = grid_plane(0.2, 4)
    plane = Collider("plane", vertices, triangles, thickness=0.0)
    setup = make_scene([[x, 0.02, z]], 0.005, [plane], velocities=[[0.0, -40.0, 0.0]], gravity=(0, 0, 0),
                       lo=(-1, -1, -1), hi=(1, 1, 1), stiffness=50.0, dt=1e-3)
    state = run(setup, 0.02)
    assert state.positions[0, 1] > 0.0, "the grain went through the plane"


@pytest.mark.parametrize("collapsed", ["a=b", "a=c", "b=c"])
def test_collapsed_triangle_gives_a_finite_contact(collapsed):
    """A triangle with two corners at one point (a welded or collapsing mesh) is the segment between
    the other two: a grain pressed onto that segment's middle feels k·overlap along y, not NaN."""
    a, b, c = np.array([-0.1, 0.0, 0.0]), np.array([0.1, 0.0, 0.0]), np.array([0.0, 0.0, 0.1])
    corners = {"a=b": (a, a, b), "a=c": (a, b, a), "b=c": (a, b, b)}[collapsed]
    # A proper triangle far away keeps the mesh valid; only the collapsed one is within reach.
    far = [np.array([1.0, 1.0, 1.0]), np.array([1.1, 1.0, 1.0]), np.array([1.0, 1.0, 1.1])]
    vertices = np.array([*corners, *far])
    collider = Collider("collapsed", vertices, np.array([[0, 1, 2], [3, 4, 5]]))
    force, contacts = _single_force(collider, (0.03, 0.008, 0.0))
    assert contacts == 1
    np.testing.assert_allclose(force, [0.0, 1.0e4 * 0.002, 0.0], atol=1e-4)
