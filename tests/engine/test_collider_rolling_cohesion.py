"""Rolling resistance and SJKR cohesion against mesh colliders, checked against physics and against the
walls, which have had them all along: a grain on a 10° mesh slope holds where μ_r > tan θ and rolls
at 5/7 g (sin θ − μ_r cos θ) where μ_r < tan θ; a cohesive grain hangs under a mesh ceiling against a
pull below c π (δ*/2)² and falls above it; in every case the mesh gives the wall's trajectory. A bake
with rolling, cohesive, moving colliders resumes bit for bit, and an old cache (3-column collider
springs, collider JSON without the new keys) still loads.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.backends import make_backend
from engine.bake import BakeProgress, bake
from engine.cache import read_history
from engine.colliders import Collider, ColliderSet, RigidMotionAnalytic, load_colliders
from engine.errors import MochiError
from engine.model import Domain, Gravity, Material
from engine.preset import parse_preset
from engine.scene import setup_from_arrays

from .test_colliders import grid_plane, lattice

R = 0.01           # grain radius [m]
STIFFNESS = 1.0e4  # [N/m]
DT = 1.0e-4        # [s]
THETA = math.radians(10.0)
G = 9.81
MASS = 2500.0 * 4.0 / 3.0 * math.pi * R ** 3
CEILING = 0.5      # height of the ceiling, wall or mesh [m]


def _setup(position, gravity, *, surface: str, floor: bool, rolling_friction=0.0, cohesion=0.0):
    """One grain touching a floor (y = 0) or a ceiling (y = CEILING) that is a wall of the box or a mesh
    collider with the same μ, e, μ_r and c as the grain (so every mix gives those values)."""
    material = Material(name="m", density=2500.0, restitution=0.3, friction=0.5, rolling_friction=rolling_friction,
                        cohesion=cohesion)
    height = 0.0 if floor else CEILING
    if surface == "wall":
        lo, hi = (-1.0, 0.0 if floor else -1.0, -1.0), (1.0, 1.0 if floor else CEILING, 1.0)
        colliders = None
    else:  # the box far away: only the mesh is touched
        lo, hi = (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)
        vertices, triangles = grid_plane(2.0, 4, height=height)
        colliders = ColliderSet((Collider("plane", vertices, triangles, restitution=0.3, friction=0.5,
                                          rolling_friction=rolling_friction, cohesion=cohesion),))
    domain = Domain(lo=lo, hi=hi, wall_restitution=0.3, wall_friction=0.5, wall_rolling_friction=rolling_friction,
                    wall_cohesion=cohesion)
    return setup_from_arrays(positions=np.array([position], np.float32), radius=np.array([R], np.float32),
                             materials=(material,), domain=domain, gravity=Gravity(vector=tuple(gravity)),
                             stiffness=STIFFNESS, dt=DT, colliders=colliders, rotation=True, integrator="verlet")


def _cpu(model):
    return make_backend("cpu", model)


def _slope(surface: str, rolling_friction: float, steps: int = 3000, every: int = 10, *, make=_cpu):
    """A grain resting on a 10° slope (gravity tilted by θ); its times [s] and x [m] every ``every`` steps
    on the backend ``make(model)`` returns."""
    rest = MASS * G * math.cos(THETA) / STIFFNESS  # resting overlap
    setup = _setup((0.0, R - rest, 0.0), (G * math.sin(THETA), -G * math.cos(THETA), 0.0), surface=surface,
                   floor=True, rolling_friction=rolling_friction)
    backend = make(setup.model)
    backend.set_state(setup.state)
    t, x = [], []
    for _ in range(steps // every):
        backend.step(every)
        state = backend.get_state()
        t.append(state.step * DT)
        x.append(float(state.positions[0, 0]))
    return np.array(t), np.array(x)


@pytest.mark.parametrize("surface", ["mesh", "wall"])
def test_rolling_resistance_below_the_slope_rolls_at_five_sevenths_g_sin_minus_mu_r_cos(surface):
    mu_r = 0.5 * math.tan(THETA)
    t, x = _slope(surface, mu_r)
    late = t > 0.02
    acceleration = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    # m a = m g sinθ − F, (2/5) m r² α = F r − μ_r N r, a = α r  ⇒  a = 5/7 g (sinθ − μ_r cosθ).
    assert acceleration == pytest.approx(5.0 / 7.0 * G * (math.sin(THETA) - mu_r * math.cos(THETA)), rel=0.02)
    # and without it the grain rolls faster: 5/7 g sinθ
    t, x = _slope(surface, 0.0)
    free = 2.0 * np.polyfit(t[t > 0.02], x[t > 0.02], 2)[0]
    assert free == pytest.approx(5.0 / 7.0 * G * math.sin(THETA), rel=0.02)


@pytest.mark.parametrize("surface", ["mesh", "wall"])
def test_rolling_resistance_above_the_slope_holds_the_grain(surface):
    t, x = _slope(surface, 1.5 * math.tan(THETA))
    held = x[t > 0.1]
    assert np.abs(held - held[0]).max() < 1e-3 * R  # at rest once the springs have settled
    assert abs(x[-1]) < 0.01 * R


@pytest.mark.parametrize("mu_r", [0.5 * math.tan(THETA), 1.5 * math.tan(THETA)])
def test_mesh_slope_gives_the_walls_trajectory(mu_r):
    """Mesh and wall: the same law through the same call, so the same path to rounding (the wall's μ_r
    table is float32, the collider's float64: 2 nm apart after 3 cm of rolling; equal where it holds)."""
    _, x_mesh = _slope("mesh", mu_r)
    _, x_wall = _slope("wall", mu_r)
    np.testing.assert_allclose(x_mesh, x_wall, rtol=0.0, atol=1e-6 * R)


def _hanging_grain(surface: str, pull_fraction: float, *, make=_cpu) -> float:
    """A grain stuck under a ceiling by SJKR cohesion, pulled down by gravity; its depth below the
    ceiling [m] after 0.1 s.

    With the linear spring the net normal force is f(δ) = kδ − cπ(2Rδ − δ²): for c > k/(2πR) it has an
    attractive well, the grain rests at δ* = 2R − k/(πc), and the largest pull it resists is
    cπ(δ*/2)² (at δ = δ*/2), as in tests/engine/test_rotation.py on a wall floor.
    """
    c = 2.0e5
    depth = 2.0 * R - STIFFNESS / (math.pi * c)
    strongest = c * math.pi * (0.5 * depth) ** 2
    setup = _setup((0.0, CEILING - (R - depth), 0.0), (0.0, -pull_fraction * strongest / MASS, 0.0),
                   surface=surface, floor=False, cohesion=c)
    backend = make(setup.model)
    backend.set_state(setup.state)
    backend.step(1000)
    return CEILING - float(backend.get_state().positions[0, 1])


@pytest.mark.parametrize("surface", ["mesh", "wall"])
def test_cohesion_holds_a_grain_under_a_ceiling_below_its_strength_and_lets_go_above(surface):
    assert _hanging_grain(surface, 0.3) < R  # still in contact after 0.1 s
    assert _hanging_grain(surface, 1.5) > R + 0.05  # pulled off and gone


def test_mesh_ceiling_holds_where_the_wall_holds():
    assert _hanging_grain("mesh", 0.3) == pytest.approx(_hanging_grain("wall", 0.3), abs=1e-6 * R)


def test_rotation_off_keeps_cohesion_against_a_mesh():
    """Cohesion needs no rotation (the wall's law runs with ω = 0): a non-rotating grain hangs too."""
    c = 2.0e5
    depth = 2.0 * R - STIFFNESS / (math.pi * c)
    strongest = c * math.pi * (0.5 * depth) ** 2
    for surface in ("mesh", "wall"):
        setup = _setup((0.0, CEILING - (R - depth), 0.0), (0.0, -0.3 * strongest / MASS, 0.0), surface=surface,
                       floor=False, cohesion=c)
        physics = setup.model.physics
        assert physics.rotation  # _setup rotates; the model below does not
        from dataclasses import replace

        model = replace(setup.model, physics=replace(physics, rotation=False, integrator="euler"))
        backend = make_backend("cpu", model)
        backend.set_state(setup.state)
        backend.step(1000)
        assert CEILING - float(backend.get_state().positions[0, 1]) < R, surface


# --- resume and old caches -----------------------------------------------------------------------------


def _sticky_scene():
    """Grains on a static, rolling-resistant, cohesive floor stirred by a turning cohesive paddle."""
    rng = np.random.default_rng(9)
    floor_v, floor_t = grid_plane(0.3, 4)
    floor = Collider("floor", floor_v, floor_t, thickness=0.002, rolling_friction=0.3, cohesion=2.0e4)
    blade_v, blade_t = grid_plane(1.0, 2)
    blade = np.stack([blade_v[:, 0] * 0.16, (blade_v[:, 2] + 0.5) * 0.04 + 0.006, np.zeros(len(blade_v))], 1)
    paddle = Collider("paddle", blade, blade_t, thickness=0.004, rolling_friction=0.1, cohesion=1.0e4,
                      motion=RigidMotionAnalytic(np.eye(3), (0, 0, 0), (0, 0, 0), (0, 5.0, 0), (0, 0, 0)))
    grains = lattice((-0.1, 0.0, -0.1), (0.08, 0.05, 0.1), 0.0125, rng)
    grains = grains[np.abs(grains[:, 2]) > 0.012]
    material = Material(name="m", density=2500.0, restitution=0.5, friction=0.5, rolling_friction=0.2,
                        cohesion=3.0e4)
    return setup_from_arrays(positions=grains.astype(np.float32), radius=np.full(len(grains), 0.005, np.float32),
                             materials=(material,), domain=Domain(lo=(-0.15, -0.05, -0.15), hi=(0.15, 0.3, 0.15)),
                             gravity=Gravity(vector=(0.0, -9.81, 0.0)), stiffness=2.0e3, fps=50,
                             colliders=ColliderSet((floor, paddle)), rotation=True, integrator="verlet")


def test_resume_with_rolling_cohesive_colliders_is_bit_identical(tmp_path):
    full = tmp_path / "full"
    bake(_sticky_scene(), full, frames=6)
    part = tmp_path / "part"
    progress = BakeProgress()

    def cancel_after_frame_3(p):
        if p.frames_done == 3:
            p.request_cancel()

    bake(_sticky_scene(), part, frames=6, progress=progress, on_frame=cancel_after_frame_3)
    assert progress.cancelled
    history = read_history(part, 3)
    springs = history["collider_spring"]
    assert springs.shape[1:] == (springs.shape[1], 6)
    assert np.abs(springs[..., 3:]).max() > 0  # rolling springs against the colliders are saved
    bake(None, part, frames=6, resume=True)
    frames = sorted(p.name for p in full.glob("frame_*.ply"))
    assert len(frames) == 6
    for name in frames:
        assert (part / name).read_bytes() == (full / name).read_bytes(), name


def test_old_three_column_collider_history_loads_with_zero_rolling_springs():
    colliders = _sticky_scene().model.colliders
    n = 5
    springs = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3) + 1.0
    old = {"collider_index": np.array([0, 1], np.int32), "collider_particle": np.array([1, 3], np.int32),
           "collider_count": np.array([2, 1], np.int8), "collider_spring": springs,
           "collider_normal": np.ones((2, 4, 3))}
    colliders.set_history(old)
    colliders._ensure_arrays(n)
    assert np.array_equal(colliders._springs[0, 1, :, :3], springs[0])
    assert np.array_equal(colliders._springs[1, 3, :, :3], springs[1])
    assert not colliders._springs[..., 3:].any()
    saved = colliders.get_history()["collider_spring"]
    assert saved.shape == (2, 4, 6) and np.array_equal(saved[..., :3], springs)


def test_collider_surface_keys_round_trip_and_old_files_load(tmp_path):
    original = _sticky_scene().model.colliders
    original.save(tmp_path)
    loaded = load_colliders(tmp_path)
    assert [(c.rolling_friction, c.cohesion) for c in loaded.colliders] == [(0.3, 2.0e4), (0.1, 1.0e4)]
    path = tmp_path / "colliders" / "colliders.json"
    document = json.loads(path.read_text())
    for entry in document["colliders"]:
        del entry["rolling_friction"], entry["cohesion"]
    path.write_text(json.dumps(document))
    assert [(c.rolling_friction, c.cohesion) for c in load_colliders(tmp_path).colliders] == [(0.0, 0.0)] * 2


def test_collider_surface_mixes_as_the_walls_do():
    """μ_r the mean of grain and surface, c the smaller; μ_r zero without rotation."""
    setup = _sticky_scene()
    physics = setup.model.physics
    roll, cohesion = setup.model.colliders.surface_tables(physics)
    np.testing.assert_allclose(roll, [[0.25], [0.15]], rtol=1e-15)
    np.testing.assert_array_equal(cohesion, [[2.0e4], [1.0e4]])
    from dataclasses import replace

    roll, _ = setup.model.colliders.surface_tables(replace(physics, rotation=False))
    assert not roll.any()


@pytest.mark.parametrize("key", ["rolling_friction", "cohesion"])
def test_bad_collider_surface_keys_raise_one_sentence(tmp_path, key):
    preset = {"emitters": [{"type": "box", "count": 1, "radius": 0.01}],
              "colliders": [{"type": "mesh", "path": "plane.obj", key: -0.1}]}
    with pytest.raises(MochiError, match=rf"\[\[colliders\]\] #1 {key} must be ≥ 0"):
        parse_preset(preset, str(tmp_path / "p.toml"))
    preset["colliders"][0][key] = "sticky"
    with pytest.raises(MochiError, match=rf"\[\[colliders\]\] #1 {key} must be a number"):
        parse_preset(preset, str(tmp_path / "p.toml"))
    vertices, triangles = grid_plane(1.0, 1)
    with pytest.raises(MochiError, match=f"'c' {key} must be a number ≥ 0"):
        Collider("c", vertices, triangles, **{key: -1.0})
    preset["colliders"][0][key] = 0.2
    spec = parse_preset(preset, str(tmp_path / "p.toml")).colliders[0]
    assert getattr(spec, key) == 0.2


@pytest.mark.parametrize("ratio", [0.5, 1.25])
def test_collider_cohesion_note_names_the_threshold_and_the_depth_grains_settle_at(ratio):
    """Below k/(2π r) a collider's stickiness only softens contacts (the note says so and the grain does
    not sink); above it, a grain in zero gravity settles at the depth the note predicts, 2 (1 − k/(2π c r))
    of a radius."""
    c = ratio * STIFFNESS / (2.0 * math.pi * R)
    setup = _setup((0.0, 0.99 * R, 0.0), (0.0, 0.0, 0.0), surface="mesh", floor=True, cohesion=c)
    [note] = [n for n in setup.notes if "collider 'plane'" in n]
    backend = make_backend("cpu", setup.model)
    backend.set_state(setup.state)
    backend.step(20_000)
    overlap = (R - float(backend.get_state().positions[0, 1])) / R
    if ratio < 1.0:
        assert "only softens" in note
        assert overlap < 0.05 * 0.01  # the 1% start is pushed out to nothing
    else:
        predicted = 2.0 * (1.0 - 1.0 / ratio)
        assert f"{predicted:.0%}" in note
        assert overlap == pytest.approx(predicted, rel=0.02)


def test_collider_stickiness_on_a_material_without_any_is_named():
    from engine.contact_law import surface_cohesion_notes

    materials = (Material(name="dry", cohesion=0.0), Material(name="wet", cohesion=5.0e5))
    notes = surface_cohesion_notes(materials, np.array([0, 1], np.int32), np.full(2, R), STIFFNESS,
                                   [("collider 'bowl'", 3.0e5), ("collider 'plain'", 0.0)])
    assert len(notes) == 2
    assert "does not act on material 'dry'" in notes[0]
    assert "'wet'" in notes[1] and "3e+05 Pa" in notes[1]  # the smaller of the two
