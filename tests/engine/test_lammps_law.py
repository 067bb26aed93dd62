"""engine.lammps.law maps Mochi's law onto LAMMPS' pair granular exactly, refuses what it cannot map in one
sentence, and `mochi export-lammps` keeps to its folder; with Debian's LAMMPS installed, Hertz impacts run
there end as in Mochi."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from engine.cli.main import main
from engine.contact_law import contact_coefficients, damping_ratio, effective_moduli
from engine.errors import MochiError
from engine.fields import ForceField
from engine.lammps.deck import export_deck
from engine.lammps.law import hertz_coeffs, hooke_coeffs, resolve_law, tsuji_alpha
from engine.model import Body, Domain, Gravity, Material
from engine.scene import setup_from_arrays

from .lammps_peer import lmp_or_skip, run_deck


def _lammps_contact(words: list[str], m_eff: float, r_eff: float, overlap: float) -> tuple[float, ...]:
    """(k_n, γ_n, k_t, γ_t) as LAMMPS 29 Sep 2021 evaluates ``pair_coeff`` words (pair_granular.cpp: knfac,
    damp_normal_prefactor, k_tangential, damp_tangential) for one contact."""
    model, kn, e_in, damping = words[0], float(words[1]), float(words[2]), words[4]
    a = math.sqrt(r_eff * overlap)
    knfac = kn * a if model == "hertz" else kn
    prefactor = {"tsuji": tsuji_alpha(e_in) * math.sqrt(m_eff * knfac), "velocity": e_in}[damping]
    t = words.index("tangential")
    kt, x_gamma = float(words[t + 2]), float(words[t + 3])
    if words[t + 1] == "mindlin":
        kt *= a
    return knfac, prefactor, kt, x_gamma * prefactor


@pytest.mark.parametrize("e", [0.2, 0.5, 0.9, 1.0])
def test_the_coefficients_are_mochis_contact(e):
    beta, m_eff, r_eff, overlap = damping_ratio(e), 2.3e-3, 3.1e-3, 4.0e-5
    mochi = contact_coefficients(1.5e4, beta, m_eff)
    assert _lammps_contact(hooke_coeffs(1.5e4, beta, friction=0.4).split(), m_eff, r_eff, overlap) \
        == pytest.approx(mochi, rel=1e-12, abs=1e-15)
    youngs, shear = effective_moduli(5e6, 0.3, 2e7, 0.25)
    mochi = contact_coefficients(youngs, beta, m_eff, shear_modulus=shear, r_eff=r_eff, overlap=overlap)
    assert _lammps_contact(hertz_coeffs(youngs, shear, beta, friction=0.4).split(), m_eff, r_eff, overlap) \
        == pytest.approx(mochi, rel=1e-12, abs=1e-15)


def test_a_damping_tsuji_cannot_reach_is_refused():
    with pytest.raises(MochiError, match="cannot damp this scene's contacts"):
        resolve_law(_scene(contact_normal="hertz", stiffness=None, material=dict(restitution=0.1),
                           domain=dict(wall_restitution=0.1)).model)


def _scene(**changes):
    """One grain in a 0.2 m box with friction and LAMMPS' cap, changed by ``changes``."""
    material = dict(name="g", density=2500.0, restitution=0.5, friction=0.3)
    material.update(changes.pop("material", {}))
    domain = dict(lo=(0.0, 0.0, 0.0), hi=(0.2, 0.2, 0.2), wall_restitution=0.5, wall_friction=0.3)
    domain.update(changes.pop("domain", {}))
    kwargs = dict(positions=np.array([[0.1, 0.05, 0.1]], np.float32), radius=np.array([0.01], np.float32),
                  materials=(Material(**material),), domain=Domain(**domain), gravity=Gravity(vector=(0, -9.81, 0)),
                  dt=1e-5, stiffness=1e4, fps=100.0, friction_cap="absolute")
    kwargs.update(changes)
    return setup_from_arrays(**kwargs)


@pytest.mark.parametrize("changes,named", [
    (dict(material=dict(cohesion=5e5)), "cohesion"),
    (dict(friction_cap="clipped"), "friction cap 'clipped'"),
    (dict(friction_cap="spring"), "friction cap 'spring'"),
    (dict(integrator="euler"), "'euler' integrator"),
    (dict(gravity=Gravity(vector=(0, -9.81, 0), rotation_axis=(0, 0, 1), rotation_rate=1.0)), "rotating gravity"),
    (dict(fields=(ForceField(kind="uniform", vector=(1.0, 0.0, 0.0)),)), "force fields (uniform)"),
    (dict(bodies=(Body(object_id=0, kind="rigid"),)), "glued or rigid bodies"),
    (dict(contact_normal="hertz", stiffness=None, material=dict(rolling_friction=0.1)),
     "rolling resistance with Hertz"),
])
def test_what_lammps_cannot_run_is_refused_naming_it(changes, named, tmp_path):
    setup = _scene(**changes)
    with pytest.raises(MochiError, match="LAMMPS cannot run") as refused:
        export_deck(tmp_path / "deck", setup.model, setup.state, frames=3, source={})
    assert named in str(refused.value) and "\n" not in str(refused.value)
    assert not (tmp_path / "deck").exists()  # refused before anything is written


def test_the_full_law_maps_and_the_benchmarks_may_keep_mochis_cap():
    law = resolve_law(_scene(material=dict(rolling_friction=0.1), domain=dict(wall_rolling_friction=0.1)).model)
    words = law.pair_coeffs[(1, 1)].split()
    assert words[words.index("rolling") + 1] == "sds" and law.rotation
    assert len(law.wall_coeffs) == 1 and law.dt == 1e-5
    resolve_law(_scene(friction_cap="clipped").model, exact=False)  # what benchmarks/physics_peers.py compares


def test_several_materials_get_a_pair_coeff_per_type_pair_and_walls_per_type(tmp_path):
    setup = _scene(positions=np.array([[0.05, 0.05, 0.05], [0.15, 0.05, 0.15]], np.float32),
                   radius=np.array([0.01, 0.012], np.float32), material_index=np.array([0, 1]),
                   materials=(Material(name="a", restitution=0.5, friction=0.3),
                              Material(name="b", density=1000.0, restitution=0.8, friction=0.1)))
    export_deck(tmp_path / "deck", setup.model, setup.state, frames=3, source={})
    script = (tmp_path / "deck" / "in.mochi").read_text()
    assert [line.split()[1:3] for line in script.splitlines() if line.startswith("pair_coeff")] == \
        [["1", "1"], ["1", "2"], ["2", "2"]]
    assert "group type2 type 2" in script and "fix wall_y_type2 type2 wall/gran granular" in script
    assert "linear_history" in script
    if shutil.which("lmp"):  # LAMMPS reads it: each grain falls (30 ms, no contact) and keeps its material
        from engine.cache import read_frame
        from engine.lammps.importer import import_dumps

        run_deck(tmp_path / "deck")
        import_dumps(sorted((tmp_path / "deck" / "dumps").glob("*.lammpstrj")), tmp_path / "cache")
        last = read_frame(tmp_path / "cache", 3)
        assert list(last["material"]) == [0, 1]
        assert np.allclose(last["y"], 0.05 - 0.5 * 9.81 * 0.02 ** 2, atol=1e-6)


def _sentence(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("mochi: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_the_cli_refuses_presets_lammps_cannot_run(tmp_path, capsys):
    assert main(["export-lammps", "presets/bowl_pour.toml", str(tmp_path / "a"), "--particles", "200"]) == 2
    assert "mesh colliders" in _sentence(capsys)
    assert main(["export-lammps", "presets/sand_pile.toml", str(tmp_path / "b"), "--particles", "200"]) == 2
    assert "friction_cap = \"absolute\"" in _sentence(capsys)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_export_keeps_to_its_folder(tmp_path, capsys):
    setup = _scene()
    deck = tmp_path / "deck"
    export_deck(deck, setup.model, setup.state, frames=3, source={"scene": "pile\nrun 1000000"})
    assert "\nrun 1000000" not in (deck / "in.mochi").read_text()  # a name stays on its comment line
    with pytest.raises(MochiError, match="already holds a LAMMPS export"):
        export_deck(deck, setup.model, setup.state, frames=3, source={})
    export_deck(deck, setup.model, setup.state, frames=4, source={}, overwrite=True)
    assert "run 3000\n" in (deck / "in.mochi").read_text()
    (deck / "in.mochi").write_text("# edited by hand\n")
    with pytest.raises(MochiError, match="'in.mochi', which is not a file of a Mochi export"):
        export_deck(deck, setup.model, setup.state, frames=3, source={}, overwrite=True)
    assert (deck / "in.mochi").read_text() == "# edited by hand\n"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.mochi").write_text("not Mochi's")
    with pytest.raises(MochiError, match="'data.mochi', which is not a file of a Mochi export"):
        export_deck(mine, setup.model, setup.state, frames=3, source={}, overwrite=True)
    assert (mine / "data.mochi").read_text() == "not Mochi's"


def test_a_grain_leaving_through_an_open_side_is_inactive_as_in_mochi(tmp_path):
    """The +x side is open: LAMMPS' box ends there and loses the grain, the import keeps it inactive where it
    was last dumped, as Mochi deactivates it; the grain that stays is active in both."""
    from engine.backends.cpu import BackendCpu
    from engine.cache import read_frame
    from engine.lammps.importer import import_dumps

    lmp_or_skip()
    setup = _scene(positions=np.array([[0.1, 0.0099, 0.1], [0.15, 0.1, 0.1]], np.float32),
                   radius=np.array([0.01, 0.01], np.float32), velocities=np.array([[0, 0, 0], [3.0, 0, 0]], np.float32),
                   domain=dict(open_sides=("+x",)), gravity=Gravity(vector=(0.0, 0.0, 0.0)))
    export_deck(tmp_path / "deck", setup.model, setup.state, frames=4, source={})
    script = (tmp_path / "deck" / "in.mochi").read_text()
    assert "xplane 0.0 NULL" in script and "lost ignore" in script
    run_deck(tmp_path / "deck")
    import_dumps(sorted((tmp_path / "deck" / "dumps").glob("*.lammpstrj")), tmp_path / "cache")
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(3 * setup.model.physics.steps_per_frame)
    assert list(backend.get_state().active) == [1, 0]
    assert list(read_frame(tmp_path / "cache", 2)["active"]) == [1, 1]  # x = 0.18 m at 10 ms
    last = read_frame(tmp_path / "cache", 4)
    assert list(last["active"]) == [1, 0]
    assert 0.18 <= last["x"][1] <= 0.2 and last["vx"][1] == 0.0  # at rest where it was last dumped


def _hertz_pair_and_floor(**changes):
    """Two grains meeting head-on in the air and one hitting the floor obliquely, Hertz–Mindlin, e = 0.7,
    μ = 0.3 (LAMMPS' cap), no gravity: 10 ms, every impact over."""
    return setup_from_arrays(
        positions=np.array([[0.05, 0.1, 0.1], [0.0725, 0.1, 0.1], [0.15, 0.0102, 0.1]], np.float32),
        radius=np.array([0.01, 0.012, 0.01], np.float32),
        velocities=np.array([[0.5, 0, 0], [-0.5, 0, 0], [0.5, -1.0, 0.0]], np.float32),
        materials=(Material(name="g", density=2500.0, restitution=0.7, friction=0.3, youngs_modulus=5e6,
                            poisson_ratio=0.3),),
        domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.2, 0.2, 0.2), wall_restitution=0.7, wall_friction=0.3,
                      wall_youngs_modulus=5e6, wall_poisson_ratio=0.3),
        gravity=Gravity(vector=(0.0, 0.0, 0.0)), dt=2e-6, fps=200.0, contact_normal="hertz",
        friction_cap="absolute", **changes)


def test_hertz_impacts_in_lammps_end_as_in_mochi(tmp_path):
    """Head-on restitution and the normal rebound of Hertz–Mindlin impacts agree within 0.1% (docs/physics.md's
    target against LIGGGHTS was 1%); the oblique impact's tangential rebound and spin within 8% (measured
    +5.1% and −7.5%; at 0.2 m/s still +3.2%: LAMMPS' walls take the full radius as the arm where Mochi takes
    r − δ/2, and keep a turned spring's length, the conventions table; not analysed further)."""
    from engine.backends.cpu import BackendCpu
    from engine.lammps.importer import import_dumps
    from engine.cache import read_frame

    lmp_or_skip()
    setup = _hertz_pair_and_floor()
    frames = 3
    export_deck(tmp_path / "deck", setup.model, setup.state, frames=frames, source={"scene": "impacts"})
    run_deck(tmp_path / "deck")
    import_dumps(sorted((tmp_path / "deck" / "dumps").glob("*.lammpstrj")), tmp_path / "cache")
    lammps = read_frame(tmp_path / "cache", frames)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step((frames - 1) * setup.model.physics.steps_per_frame)
    mochi = backend.get_state()
    v = np.column_stack([lammps["vx"], lammps["vy"], lammps["vz"]]).astype(np.float64)
    w = np.column_stack([lammps["wx"], lammps["wy"], lammps["wz"]]).astype(np.float64)
    assert v[0, 0] < 0 < v[1, 0] and v[2, 1] > 0  # every impact is over
    assert v[:2] == pytest.approx(mochi.velocities[:2].astype(np.float64), rel=1e-3, abs=1e-6)
    assert v[2, 1] == pytest.approx(float(mochi.velocities[2, 1]), rel=1e-3)
    # The oblique rebound differs by the conventions of docs/physics.md's table (measured +5.1% and -7.5%).
    assert v[2, 0] == pytest.approx(float(mochi.velocities[2, 0]), rel=0.08)
    assert w[2, 2] == pytest.approx(float(mochi.angular_velocities[2, 2]), rel=0.08)
