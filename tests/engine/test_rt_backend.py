"""The rt backend (engine/backends/rt_backend.py): the paper's model stepped through slangpy.

Runs on any device with Vulkan ray tracing: in CI that is Mesa's lavapipe (scripts/install_lavapipe.sh),
exact but slow, so the scene is a few hundred grains. Where slangpy or such a device is missing, the
tests that step skip with the reason; the refusals and the registry tests need no device.

Tolerance of the trajectory tests (100 steps, rt against cpu): positions within 1e-6 m, velocities
within 2e-4 m/s. The two backends compute the same law from the same float32 state, the CPU in float64
arithmetic, rt in float32 (kernels/rt_dem_step.slang; Metal has no float64): a contact's overlap
r_i + r_j − |c_i − c_j| rounds at the float32 step of the distance (~2e-9 m on overlaps of ~1e-5 m
here), and x += v dt rounds at the float32 step of the coordinate (up to 1.5e-8 m in this 0.14 m box).
Differences of that size are what the CPU itself makes of a one-step change of its input: started from
positions moved by one float32 step, the CPU ends 100 steps later 1.2e-7 to 1.9e-7 m and 3.6e-5 to
5.5e-5 m/s away from itself. Measured rt − cpu on these scenes: 6e-8 to 3.6e-7 m and 1.3e-5 to 5.1e-5
m/s (top speeds ~1.5 m/s, 4.5 m/s with the open side). The bounds are about three times the largest of
these; physics mistakes are far larger (the walls left out: 1.4e-2 m; friction left out of the grain
pairs: 5e-3 m and 2.1 m/s — both made on purpose in the kernel, and both failed these tests).

Friction model 'spring' (tangential springs) is held to the same bounds, on the same box and on a pile
that static friction holds on a tilted floor (``tilted_pile``). Springs, pair and wall, within 1e-7 m of
the CPU's: a spring integrates the tangential slip, v_t dt per step, so it carries the velocities'
float32 differences (≤ 5e-5 m/s) over ≤ 100 steps of 1e-4 s; measured 1.2e-8 to 2.6e-8 m, on springs of up
to 1e-3 m (box) and 7e-6 m (pile). Springs left out made on purpose failed them: the pair springs not
carried to the next step's rows (box: off by 2.6e-3 m), the wall springs or the pair springs not kept by
the kernel, and springs not restored on a resume (the resume and bake tests).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from engine.backends import BACKEND_NAMES, make_backend, select
from engine.backends.rt_support import check_rt_model, rt_refusal
from engine.errors import MochiError
from engine.model import Body, Domain, Gravity, Material
from engine.neighbors.brute import brute_force_pairs
from engine.scene import setup_from_arrays

#: Tolerances of rt against cpu after 100 steps (see the module docstring).
POSITION_TOLERANCE = 1e-6  # [m]
VELOCITY_TOLERANCE = 2e-4  # [m/s]
SPRING_TOLERANCE = 1e-7  # [m]
STEPS = 100


def two_radius_box(*, gravity=Gravity(vector=(0.0, -9.81, 0.0)), open_sides=(), seed=0, **physics):
    """343 grains of radius 10.5 mm and 7 mm, two materials, jittered on a 20 mm lattice in a 0.14 m box:
    many overlap at the start, those at the sides touch the walls; random velocities of ~0.3 m/s."""
    rng = np.random.default_rng(seed)
    spacing, side = 0.02, 7
    axis = (np.arange(side) + 0.5) * spacing
    positions = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
    positions += rng.uniform(-0.002, 0.002, positions.shape)
    radius = np.where(rng.random(len(positions)) < 0.5, 0.0105, 0.007)
    velocities = rng.normal(0.0, 0.3, positions.shape)
    materials = (Material(name="a", density=2500.0, restitution=0.5, friction=0.4),
                 Material(name="b", density=1200.0, restitution=0.8, friction=0.2))
    size = side * spacing
    domain = Domain(lo=(0.0, 0.0, 0.0), hi=(size, size, size), open_sides=open_sides, wall_restitution=0.6,
                    wall_friction=0.3)
    settings = dict(stiffness=2.0e3, dt=1.0e-4, friction_model="damper", rotation=False, integrator="euler")
    settings.update(physics)
    return setup_from_arrays(positions=positions.astype(np.float32), radius=radius.astype(np.float32),
                             velocities=velocities.astype(np.float32),
                             material_index=(rng.random(len(positions)) < 0.5).astype(np.int32),
                             materials=materials, domain=domain, gravity=gravity, **settings)


def _rt(model, rt_device):
    from engine.backends.rt_backend import BackendRt

    return BackendRt(model, device=rt_device)


def _run(backend, state, steps):
    backend.set_state(state)
    backend.step(steps)
    return backend.get_state()


FRICTION_MODELS = ("damper", "spring")
GRAVITIES = {
    "constant": Gravity(vector=(0.0, -9.81, 0.0)),
    # The paper's rotating-gravity benchmark, turned fast so that 100 steps see it move.
    "rotating": Gravity(vector=(9.81, 0.0, 0.0), rotation_axis=(0.0, 0.0, 1.0), rotation_rate=50.0),
}


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
@pytest.mark.parametrize("gravity", GRAVITIES, ids=list(GRAVITIES))
def test_100_steps_match_the_cpu(rt_device, gravity, friction_model):
    setup = two_radius_box(gravity=GRAVITIES[gravity], friction_model=friction_model)
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert rt.step == cpu.step == STEPS
    moved = np.abs(cpu.positions - setup.state.positions).max()
    assert moved > 100 * POSITION_TOLERANCE  # the grains did move: the comparison means something
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    np.testing.assert_array_equal(rt.active, cpu.active)
    if friction_model == "spring":
        assert_springs_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history())


def test_grains_leave_through_an_open_side_as_on_the_cpu(rt_device):
    """The +x side open and every grain thrown towards it at 3 m/s: the same grains leave on both."""
    setup = two_radius_box(open_sides=("+x",))
    state = dataclasses.replace(setup.state, velocities=setup.state.velocities + np.float32([3.0, 0.0, 0.0]))
    cpu = _run(make_backend("cpu", setup.model), state, STEPS)
    rt = _run(_rt(setup.model, rt_device), state, STEPS)
    assert 0 < int((cpu.active == 0).sum()) < setup.model.particle_count
    np.testing.assert_array_equal(rt.active, cpu.active)
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
def test_a_rerun_gives_the_same_bits(rt_device, friction_model):
    histories = assert_a_rerun_gives_the_same_bits(two_radius_box(friction_model=friction_model), rt_device)
    if friction_model == "damper":
        assert histories[0] is None  # the damper keeps no history


def assert_a_rerun_gives_the_same_bits(setup, rt_device):
    """Two rt runs of STEPS steps from ``setup``: the same state (ω and orientations too) and contact
    history, bit for bit. Returns both histories."""
    runs = [_rt(setup.model, rt_device) for _ in range(2)]
    first, second = (_run(backend, setup.state, STEPS) for backend in runs)
    assert_same_state(first, second)
    histories = [backend.get_contact_history() for backend in runs]
    if histories[0] is not None:
        _assert_same_history(*histories)
    return histories


def assert_same_state(a, b):
    """Two states hold the same bits (positions, velocities, ω, orientations, activity, step)."""
    for name in ("positions", "velocities", "angular_velocities", "orientations", "active"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.step == b.step


def bake_cancelled_and_resumed(setup, tmp_path):
    """``setup`` baked on rt for 3 frames straight, and for 2 frames, cancelled, resumed to 3 from the cache:
    (the straight bake's frame files, the resumed bake's, the contact history cached with frame 2)."""
    from engine.bake import BakeProgress, bake
    from engine.cache import read_history

    bake(setup, tmp_path / "full", frames=3, backend="rt")
    progress = BakeProgress()
    bake(setup, tmp_path / "part", frames=3, backend="rt", progress=progress,
         on_frame=lambda p: p.request_cancel() if p.frames_done == 2 else None)
    assert progress.cancelled
    history = read_history(tmp_path / "part", 2)
    bake(None, tmp_path / "part", frames=3, backend="rt", resume=True)
    straight, resumed = ({p.name: p.read_bytes() for p in sorted((tmp_path / name).glob("frame_*.ply"))}
                         for name in ("full", "part"))
    return straight, resumed, history


def _assert_same_history(a, b):
    """Two contact histories hold the same arrays, bit for bit."""
    assert list(a) == list(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _far(setup, offset):
    """The scene's model and state moved by ``offset`` [m] (the backend then keeps a local origin)."""
    model = setup.model
    domain = dataclasses.replace(model.physics.domain, lo=tuple(np.add(model.physics.domain.lo, offset)),
                                 hi=tuple(np.add(model.physics.domain.hi, offset)))
    model = dataclasses.replace(model, physics=dataclasses.replace(model.physics, domain=domain))
    positions = (setup.state.positions.astype(np.float64) + offset).astype(np.float32)
    return model, dataclasses.replace(setup.state, positions=positions)


def cpu_history_resumed_on_rt(setup, rt_device):
    """(resumed, cpu, halfway, history): the CPU backend stepped STEPS steps from the scene's state, and an rt
    backend that took over halfway from the CPU's state (``halfway``) and contact history (``history``) and
    stepped the other STEPS / 2."""
    cpu = make_backend("cpu", setup.model)
    cpu.set_state(setup.state)
    cpu.step(STEPS // 2)
    halfway, history = cpu.get_state(), cpu.get_contact_history()
    cpu.step(STEPS // 2)
    resumed = _rt(setup.model, rt_device)
    resumed.set_state(halfway)
    resumed.set_contact_history(history)
    resumed.step(STEPS // 2)
    return resumed, cpu, halfway, history


def resume_halfway(model, state, rt_device):
    """(straight, resumed, halfway, history): two rt backends stepped STEPS steps from ``state`` with a
    frame boundary (``begin_frame``) at step 0 and STEPS / 2, as a bake has them; ``resumed`` was built
    halfway from the first half's state (``halfway``) and contact history (``history``, None when the
    backend keeps none)."""
    straight = _rt(model, rt_device)
    straight.set_state(state)
    for _ in range(2):
        straight.begin_frame()
        straight.step(STEPS // 2)
    first, resumed = _rt(model, rt_device), _rt(model, rt_device)
    first.set_state(state)
    first.begin_frame()
    first.step(STEPS // 2)
    halfway = first.get_state()
    resumed.set_state(halfway)
    history = first.get_contact_history()
    if history is not None:
        resumed.set_contact_history(history)
    resumed.begin_frame()
    resumed.step(STEPS // 2)
    return straight, resumed, halfway, history


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
@pytest.mark.parametrize("offset", [(0.0, 0.0, 0.0), (1.0e4, -2.5e3, 7.0e3)], ids=["near", "far"])
def test_a_resume_gives_the_same_bits(rt_device, offset, friction_model):
    """50 steps, get_state and get_contact_history, a new backend from them, 50 more: the 100 straight
    steps' bits, and with springs the same springs. As in a bake, a frame boundary (``begin_frame``) comes
    at step 0 and step 50 on both paths; far from the world origin it rounds the local positions to what
    the frame holds."""
    model, state = _far(two_radius_box(friction_model=friction_model), np.array(offset))
    straight_backend, second, _, history = resume_halfway(model, state, rt_device)
    straight, resumed = straight_backend.get_state(), second.get_state()
    if friction_model == "spring":
        assert len(history["pair_i"]) > 50 and np.abs(history["wall_spring"]).max() > 0.0  # springs to carry
        _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())
    assert resumed.step == straight.step == STEPS
    np.testing.assert_array_equal(resumed.positions, straight.positions)
    np.testing.assert_array_equal(resumed.velocities, straight.velocities)
    np.testing.assert_array_equal(resumed.active, straight.active)


def tilted_pile(*, friction_model="spring"):
    """A pile of 50 grains of radius 10 mm in three square layers (25, 16, 9; each grain on four below),
    placed at rest on the floor with gravity tilted 20° towards +x. Friction μ = 0.5 between grains and
    against the floor exceeds tan 20° = 0.36, so static friction holds the pile: with tangential springs
    it settles and rests within a few hundred steps; the damper resists sliding but never stops it, and
    the pile creeps downhill at ~1.7 mm/s. The third layer needs the pair springs, the floor the wall
    springs."""
    r, spacing = 0.01, 0.021
    rise = np.sqrt((2 * r) ** 2 - 0.5 * spacing ** 2)  # height of a grain above the four it rests on
    layers = [[((x + 0.5 * level) * spacing, r + level * rise, (z + 0.5 * level) * spacing)
               for x in range(5 - level) for z in range(5 - level)] for level in range(3)]
    positions = np.concatenate([np.array(layer) for layer in layers]) + np.array([0.1, 0.0, 0.1])
    tilt = np.radians(20.0)
    material = Material(name="grain", density=2500.0, restitution=0.3, friction=0.5)
    domain = Domain(lo=(0.0, 0.0, 0.0), hi=(0.4, 0.2, 0.3), wall_restitution=0.3, wall_friction=0.5)
    return setup_from_arrays(positions=positions.astype(np.float32), radius=np.full(len(positions), r, np.float32),
                             materials=(material,), domain=domain,
                             gravity=Gravity(vector=(9.81 * np.sin(tilt), -9.81 * np.cos(tilt), 0.0)),
                             stiffness=5.0e4, dt=1.0e-4, friction_model=friction_model, rotation=False,
                             integrator="euler")


def _pair_map(history, key, *, signed):
    """{(i, j): value as seen from i} of a history's per-pair ``key`` ('pair_spring', 'pair_rolling'),
    every pair with i < j; ``signed``: the value flips sign seen from the other grain (a tangential spring;
    a rolling spring does not)."""
    out = {}
    for i, j, value in zip(history["pair_i"].tolist(), history["pair_j"].tolist(), history[key]):
        out[(min(i, j), max(i, j))] = -value if signed and i > j else value
    return out


def assert_springs_close(history, reference, kind="spring"):
    """Pair and wall springs of ``kind`` ('spring': tangential, 'rolling') within SPRING_TOLERANCE (a pair
    missing from one history has 0), the reference's well above the tolerance (so the comparison means
    something)."""
    mine = _pair_map(history, f"pair_{kind}", signed=kind == "spring")
    theirs = _pair_map(reference, f"pair_{kind}", signed=kind == "spring")
    assert len(theirs) > 20
    assert max(np.abs(value).max() for value in theirs.values()) > 20 * SPRING_TOLERANCE
    assert np.abs(reference[f"wall_{kind}"]).max() > 20 * SPRING_TOLERANCE
    zero = np.zeros(3)
    worst = max(np.abs(mine.get(pair, zero) - theirs.get(pair, zero)).max() for pair in set(mine) | set(theirs))
    assert worst <= SPRING_TOLERANCE
    assert np.abs(history[f"wall_{kind}"] - reference[f"wall_{kind}"]).max() <= SPRING_TOLERANCE


def test_a_pile_held_by_static_friction_matches_the_cpu_and_rests(rt_device):
    setup = tilted_pile()
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    # The scene tells the friction models apart: the damper ends far outside the tolerances.
    damper_model = tilted_pile(friction_model="damper").model
    damper = _run(make_backend("cpu", damper_model), setup.state, STEPS)
    assert np.abs(damper.positions - cpu.positions).max() > 5 * POSITION_TOLERANCE
    assert np.abs(damper.velocities - cpu.velocities).max() > 5 * VELOCITY_TOLERANCE
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    assert_springs_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history())
    # 400 steps more: held by its springs the pile rests; the damper lets the same pile creep downhill.
    rt_backend.step(4 * STEPS)
    assert np.linalg.norm(rt_backend.get_state().velocities, axis=1).max() < 1e-5
    creeping = _run(_rt(damper_model, rt_device), setup.state, 5 * STEPS)
    assert creeping.velocities[:, 0].mean() > 1e-3


def test_a_cpu_history_resumes_on_rt(rt_device):
    """50 steps on the CPU, its state and springs to rt, 50 more: within the tolerances of 100 CPU steps
    (not bit for bit: the springs come from float64 and the steps differ in rounding)."""
    rt, cpu, _, _ = cpu_history_resumed_on_rt(tilted_pile(), rt_device)
    assert np.abs(rt.get_state().positions - cpu.get_state().positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.get_state().velocities - cpu.get_state().velocities).max() <= VELOCITY_TOLERANCE
    assert_springs_close(rt.get_contact_history(), cpu.get_contact_history())


def test_the_two_rows_of_a_pair_hold_opposite_springs_bit_for_bit(rt_device):
    """Each thread updates only its own row's spring; the partner's stays the exact negation (what lets
    the history store one spring per pair, engine/backends/rt_springs.py)."""
    setup = two_radius_box(friction_model="spring")
    backend = _rt(setup.model, rt_device)
    _run(backend, setup.state, STEPS)
    keys, springs, count = backend._keys, backend._springs, setup.model.particle_count
    mirror = np.searchsorted(keys, (keys % count) * count + keys // count)
    assert (keys[mirror] == (keys % count) * count + keys // count).all()  # both directions listed
    live = np.any(springs != 0.0, axis=1)
    assert live.sum() > 100
    np.testing.assert_array_equal(springs[mirror], -springs)


def test_a_resume_needs_the_springs(rt_device):
    """The resume above without set_contact_history ends far outside the tolerances (5e-4 m, 0.16 m/s
    measured): the springs carry state that the resume tests check."""
    setup = two_radius_box(friction_model="spring")
    straight = _run(_rt(setup.model, rt_device), setup.state, STEPS)
    first = _rt(setup.model, rt_device)
    second = _run(_rt(setup.model, rt_device), _run(first, setup.state, STEPS // 2), STEPS // 2)
    assert np.abs(second.positions - straight.positions).max() > 100 * POSITION_TOLERANCE
    assert np.abs(second.velocities - straight.velocities).max() > 100 * VELOCITY_TOLERANCE


def test_an_rt_bake_resumes_from_its_cache_bit_for_bit(rt_device, tmp_path):
    """mochi's bake on rt: 3 frames straight, and 2 frames, cancelled, resumed to 3 from the cache (state
    and springs read back from disk): the same frame files, byte for byte. The cache holds the springs in
    the CPU backend's keys."""
    straight, resumed, history = bake_cancelled_and_resumed(tilted_pile(), tmp_path)
    assert sorted(history) == ["pair_i", "pair_j", "pair_spring", "wall_spring"]
    assert len(history["pair_i"]) > 20 and np.abs(history["wall_spring"]).max() > 0.0
    assert len(straight) == 3 and straight == resumed


def test_contact_pairs_equal_the_brute_force_oracle(rt_device):
    setup = two_radius_box()
    backend = _rt(setup.model, rt_device)
    backend.set_state(setup.state)
    for _ in range(2):  # at the start, and after steps (the structure refitted in between)
        state = backend.get_state()
        pairs = backend.contact_pairs()
        expected = brute_force_pairs(state.positions, setup.model.radius)
        assert len(expected) > 100
        assert set(map(tuple, pairs.tolist())) == expected
        assert pairs.dtype == np.int32 and (pairs[:, 0] < pairs[:, 1]).all()
        backend.step(20)


def _changed(**change):
    """The base scene's model with its physics or model fields changed."""
    model = two_radius_box().model
    physics_fields = {f.name for f in dataclasses.fields(model.physics)}
    physics = dataclasses.replace(model.physics, **{k: v for k, v in change.items() if k in physics_fields})
    return dataclasses.replace(model, physics=physics, **{k: v for k, v in change.items() if k not in physics_fields})


def test_runaway_speed_stops_the_run_as_on_the_cpu(rt_device):
    from engine.errors import SimulationDiverged

    model, state = _changed(speed_limit=1.0), two_radius_box().state  # the grains start at up to ~1.2 m/s
    messages = []
    for backend in (make_backend("cpu", model), _rt(model, rt_device)):
        backend.set_state(state)
        with pytest.raises(SimulationDiverged) as info:
            backend.step(5)
        messages.append(str(info.value).split(":")[0])
    assert messages[0] == messages[1] == "Runaway energy at step 1 (t = 0.0001 s)"


REFUSED = {
    "hertz": (dict(contact_normal="hertz"), "linear (Hooke)"),
    "friction cap": (dict(friction_cap="absolute"), "friction cap"),
    "clumps": (dict(clumps=SimpleNamespace(count=1)), "rigid bodies"),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_unsupported_physics_is_refused_in_one_sentence(case):
    change, words = REFUSED[case]
    model = _changed(**change)
    with pytest.raises(MochiError) as info:
        check_rt_model(model)
    sentence = str(info.value)
    assert words in sentence and "--backend cpu" in sentence
    assert sentence.startswith("The rt backend ") and sentence.endswith(".") and "\n" not in sentence
    assert sentence.count(". ") == 0
    with pytest.raises(MochiError, match="^The rt backend "):  # refused by make_backend too, before any device
        make_backend("rt", model)


def test_real_rigid_bodies_are_refused_and_glued_ones_accepted():
    sentence = rt_refusal(two_radius_box(bodies=(Body(object_id=0, kind="rigid"),)).model)
    assert "rigid bodies" in sentence and "glued bodies" not in sentence
    glued = two_radius_box(bodies=(Body(object_id=0, kind="glued"),)).model
    assert glued.bonds.count > 0 and rt_refusal(glued) is None  # engine.backends.rt_bonds


def test_rotation_rolling_resistance_cohesion_and_verlet_are_accepted():
    assert rt_refusal(_changed(rotation=True)) is None
    rolling_cohesive = (Material(name="a", rolling_friction=0.1, cohesion=1.0e3), Material(name="b"))
    assert rt_refusal(_changed(rotation=True, materials=rolling_cohesive)) is None
    assert rt_refusal(_changed(materials=rolling_cohesive)) is None  # cohesion without rotation too
    assert rt_refusal(_changed(integrator="verlet")) is None


def test_spring_friction_without_friction_is_the_damper_and_accepted():
    """With every friction coefficient 0 the two friction models are the same law (as on the CPU)."""
    model = _changed(friction_model="spring", materials=(Material(name="a", friction=0.0),) * 2,
                     domain=Domain(lo=(0, 0, 0), hi=(0.14, 0.14, 0.14), wall_friction=0.0))
    assert rt_refusal(model) is None


def test_make_backend_builds_rt(rt_device):
    backend = make_backend("rt", two_radius_box().model)
    assert backend.name == "rt" and backend.deterministic
    assert backend.describe().startswith("rt (slangpy ")


def test_auto_never_picks_rt_here():
    """Issue 28: 'auto' may pick rt only on hardware ray tracing after a self-check, never on a software
    device such as lavapipe (tests/engine/test_rt_selection.py tests the choice and its self-check)."""
    assert "rt" in BACKEND_NAMES
    if select.probe_rt().hardware:
        pytest.skip("this machine has a hardware ray-tracing device")
    assert select.choose_backend_name(log=lambda line: None) != "rt"
    assert make_backend("auto", two_radius_box().model, log=lambda line: None).name != "rt"


def test_a_device_that_cannot_start_is_one_sentence(monkeypatch):
    """No ray-tracing device (or no slangpy): make_backend('rt') says why in one sentence, before stepping."""
    from engine.backends import rt_backend

    def no_device(kind=None):
        raise RuntimeError("vkCreateInstance failed\nsecond line")

    monkeypatch.setattr(rt_backend, "open_rt_device", no_device)
    with pytest.raises(MochiError) as info:
        make_backend("rt", two_radius_box().model)
    assert str(info.value) == "The rt backend could not start: RuntimeError: vkCreateInstance failed."
