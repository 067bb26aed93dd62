"""Issue 39 point 6: numbers at the edges. Every physical quantity has a finite range in the one settings
schema, checked before any work with one sentence; positions beyond what float32 can subtract are refused
by ``contacts``, ``bench`` and ``bake`` alike.

Every refusal runs the real CLI in this process (it comes before any packing or stepping) and asks for
exit status 2, one sentence naming the key and no traceback; the engine's own entry points
(``setup_from_arrays``, ``check_physics``) are checked directly where Blender or a resume reaches them.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cache import read_manifest
from engine.cache_integrity import physics_from_manifest
from engine.cli.main import main
from engine.errors import MochiError
from engine.fields import ForceField
from engine.model import Body, Domain, Material, Physics
from engine.ply import write_points
from engine.preset import load_preset
from engine.scene import setup_from_arrays, setup_from_preset
from engine.settings_schema import check_physics
from engine.timestep import MAX_OVERLAP, choose_time_step

from .conftest import ROOT, TINY_PRESET, refused

HERTZ = '\n[contact]\nnormal = "hertz"\n'
TINY_HERTZ = TINY_PRESET.replace("stiffness = 2000.0\n", "") + HERTZ


def _write(tmp_path, text: str):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


def _refused_everywhere(capsys, tmp_path, preset) -> list[str]:
    """The refusals of ``bake`` and ``bench`` of ``preset``; nothing written beside it."""
    sentences = [refused(capsys, "bake", preset, "--out", tmp_path / "c", "--no-estimate"),
                 refused(capsys, "bench", preset, "--steps", "1")]
    assert sorted(p.name for p in tmp_path.iterdir()) == [preset.name]
    return sentences


# --- the tracebacks of the issue -----------------------------------------------------------------------

ISSUE_CASES = {
    "youngs_modulus 1e-300, Hertz": (TINY_HERTZ.replace('name = "grain"', 'name = "grain"\nyoungs_modulus = 1e-300'),
                                     "youngs_modulus must be ≥ 1000, not 1e-300"),
    "wall_youngs_modulus 1e-300, Hertz": (TINY_HERTZ.replace("hi = [0.2, 0.2, 0.2]",
                                                             "hi = [0.2, 0.2, 0.2]\nwall_youngs_modulus = 1e-300"),
                                          "wall_youngs_modulus must be ≥ 1000, not 1e-300"),
    "density 1e-300, Hooke": (TINY_PRESET.replace('name = "grain"', 'name = "grain"\ndensity = 1e-300'),
                              "density must be ≥ 1, not 1e-300"),
    "density 1e-300, Hertz": (TINY_HERTZ.replace('name = "grain"', 'name = "grain"\ndensity = 1e-300'),
                              "density must be ≥ 1, not 1e-300"),
}


@pytest.mark.parametrize("case", sorted(ISSUE_CASES))
def test_the_issue_s_divisions_by_zero_are_refused_before_work(case, tmp_path, capsys):
    text, words = ISSUE_CASES[case]
    for sentence in _refused_everywhere(capsys, tmp_path, _write(tmp_path, text)):
        assert words in sentence, sentence


@pytest.mark.parametrize("material, domain, law, words", [
    (Material(density=1e-300), Domain(), "hooke", "materials[0] density must be ≥ 1"),
    (Material(youngs_modulus=1e-300), Domain(), "hertz", "materials[0] youngs_modulus must be ≥ 1000"),
    (Material(), Domain(wall_youngs_modulus=1e-300), "hertz", "domain wall_youngs_modulus must be ≥ 1000"),
    (Material(restitution=5e-324), Domain(), "hooke", "materials[0] restitution must be ≥ 0.001"),
    (Material(friction=float("nan")), Domain(), "hooke", "materials[0] friction must be a number"),
    (Material(), Domain(wall_friction=float("inf")), "hooke", "domain wall_friction must be a number"),
], ids=["density", "youngs", "wall youngs", "subnormal restitution", "nan friction", "inf wall friction"])
def test_a_scene_from_arrays_is_checked_too(material, domain, law, words):
    """Blender's bake builds its scene from arrays, not from a preset: the same ranges, the same sentence."""
    with pytest.raises(MochiError, match=f"^This scene: {words.replace('[', '.').replace(']', '.')}"):
        setup_from_arrays(positions=np.array([[0.5, 0.5, 0.5]], np.float32), radius=np.array([0.01], np.float32),
                          materials=(material,), domain=domain, contact_normal=law)


# --- edge numbers in a preset ---------------------------------------------------------------------------

#: Where a value goes in the tiny preset: (old text, new text with {v}).
KEYS = {
    "density": ('name = "grain"', 'name = "grain"\ndensity = {v}'),
    "youngs_modulus": ('name = "grain"', 'name = "grain"\nyoungs_modulus = {v}'),
    "restitution": ('name = "grain"', 'name = "grain"\nrestitution = {v}'),
    "friction": ('name = "grain"', 'name = "grain"\nfriction = {v}'),
    "cohesion": ('name = "grain"', 'name = "grain"\ncohesion = {v}'),
    "dt": ("substeps = 40", "dt = {v}"),
    "stiffness": ("stiffness = 2000.0", "stiffness = {v}"),
    "wall_friction": ("hi = [0.2, 0.2, 0.2]", "hi = [0.2, 0.2, 0.2]\nwall_friction = {v}"),
    "glue_strength": ("radius = 0.01", "radius = 0.01\nglue_strength = {v}"),
    "small_ratio": ("radius = 0.01", "radius = 0.01\nsmall_ratio = {v}"),
}
#: TOML spellings of numbers at the edges (and of things that are not numbers).
VALUES = {"subnormal": "5e-324", "1e308": "1e308", "minus zero": "-0.0", "inf": "inf", "minus inf": "-inf",
          "nan": "nan", "huge integer": "9223372036854775807", "bool": "true", "string": '"1e3"'}
#: The edge values a setting takes: -0.0 and a subnormal are ≥ 0 (a frictionless, uncohesive surface).
ACCEPTED = {(key, value) for key in ("friction", "cohesion", "wall_friction") for value in ("minus zero", "subnormal")}


@pytest.mark.parametrize("value", sorted(VALUES))
@pytest.mark.parametrize("key", sorted(KEYS))
def test_an_edge_number_is_refused_naming_the_key_or_taken_as_the_number_it_is(key, value, tmp_path, capsys):
    old, new = KEYS[key]
    preset = _write(tmp_path, TINY_PRESET.replace(old, new.format(v=VALUES[value]), 1))
    if (key, value) in ACCEPTED:
        assert load_preset(preset).name == "Tiny"
        return
    sentence = refused(capsys, "bake", preset, "--out", tmp_path / "c", "--no-estimate")
    assert f" {key} must be " in sentence, sentence
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("vary, words", [
    ("density=0.5,2500", "density must be ≥ 1, not 0.5"),
    ("dt=1e-12", "dt must be ≥ 1e-09"),
    ("stiffness=1e14", "stiffness must be ≤ 1e+13"),
    ("restitution=1e-4,0.5", "restitution must be ≥ 0.001"),
    ("friction=0.5,1000", "friction must be ≤ 100"),
])
def test_a_wedge_value_out_of_range_is_refused_before_any_bake(vary, words, tiny_preset, tmp_path, capsys):
    sentence = refused(capsys, "wedge", tiny_preset, "--vary", vary, "--out", tmp_path / "w", "--no-sheet")
    assert words in sentence, sentence
    assert not (tmp_path / "w").exists()


# --- positions and radii at float32's limits ------------------------------------------------------------

def _state(path, positions, radius):
    positions = np.asarray(positions, np.float32)
    write_points(path, {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                        "radius": np.asarray(radius, np.float32)})
    return path


FAR = {"float32 near 3e38": ([[3.0e38, 0, 0], [3.0e38, 0, 0.01]], "positions must be within ±1e+06 m"),
       "float32 max": ([[0, -np.finfo(np.float32).max, 0], [0, 0, 0]], "positions must be within ±1e+06 m"),
       "just past 1e6": ([[0, 0, 1.0001e6], [0, 0, 0]], "positions must be within ±1e+06 m"),
       "a wide cloud": ([[-9e5, 0, 0], [9e5, 2e6, 0]], "positions must be within ±1e+06 m"),
       "radius 1e-30": ([[0, 0, 0], [1, 0, 0]], "every radius must be positive, from 1e-08 to 1000 m"),
       "radius 1e4": ([[0, 0, 0], [1, 0, 0]], "every radius must be positive, from 1e-08 to 1000 m")}
RADII = {"radius 1e-30": [1e-30, 0.01], "radius 1e4": [0.01, 1e4]}


@pytest.mark.parametrize("case", sorted(FAR))
@pytest.mark.parametrize("command", ["contacts cpu", "contacts brute", "bench --state"])
def test_positions_or_radii_float32_cannot_hold_are_refused(case, command, tiny_preset, tmp_path, capsys):
    positions, words = FAR[case]
    ply = _state(tmp_path / "s.ply", positions, RADII.get(case, [0.01, 0.01]))
    argv = (["contacts", ply, "--out", tmp_path / "o.npy", "--backend", command.split()[1]]
            if command.startswith("contacts") else ["bench", tiny_preset, "--state", ply, "--steps", "1"])
    sentence = refused(capsys, *argv)
    assert "s.ply" in sentence and words in sentence, sentence
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize("backend", ["cpu", "brute"])
def test_positions_at_the_bound_count_the_same_contacts_on_every_backend(backend, tmp_path, capsys):
    """At ±10⁶ m (the bound itself) the cell list and the brute-force oracle agree: 2 touching, 1 apart."""
    ply = _state(tmp_path / "s.ply", [[1.0e6, -1.0e6, 0], [1.0e6 - 0.0625, -1.0e6, 0], [1.0e6 - 1.0, -1.0e6, 0]],
                 [0.05, 0.05, 0.05])
    assert main(["contacts", str(ply), "--out", str(tmp_path / "o.npy"), "--backend", backend]) == 0
    capsys.readouterr()
    assert np.load(tmp_path / "o.npy").tolist() == [1, 1, 0]


def test_a_file_emitter_far_out_is_refused_by_bake(tmp_path, capsys):
    ply = _state(tmp_path / "far.ply", [[3.0e38, 0, 0]], [0.01])
    preset = _write(tmp_path, TINY_PRESET + f'\n[[emitters]]\ntype = "file"\npath = "{ply.as_posix()}"\n')
    sentence = refused(capsys, "bake", preset, "--out", tmp_path / "c", "--no-estimate")
    assert "far.ply" in sentence and "within ±1e+06 m" in sentence
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("radius", ["1e-9", "[1e-9, 0.01]", "[0.01, 5000.0]"])
def test_a_preset_radius_out_of_range_is_refused(radius, tmp_path, capsys):
    preset = _write(tmp_path, TINY_PRESET.replace("radius = 0.01", f"radius = {radius}"))
    assert "radius must be from 1e-08 to 1000 m" in refused(capsys, "bake", preset, "--out", tmp_path / "c")


def test_arrays_far_out_are_refused_as_a_scene():
    with pytest.raises(MochiError, match=r"^This scene: particle 0 is at .*within ±1e\+06 m"):
        setup_from_arrays(positions=np.array([[3.0e38, 0, 0]], np.float32), radius=np.array([0.01], np.float32))


# --- the public check of resolved physics (a resume calls it on the manifest's) ---------------------------

@pytest.mark.parametrize("physics, words", [
    (Physics(materials=(Material(youngs_modulus=1e-300),)), "materials[0] youngs_modulus must be ≥ 1000"),
    (Physics(materials=(Material(), Material(poisson_ratio=float("nan")))), "materials[1] poisson_ratio must be a"),
    (Physics(friction_cap="bogus"), "friction_cap must be one of clipped, absolute, spring, not 'bogus'"),
    (Physics(contact_normal="HERTZ"), "contact_normal must be one of hooke, hertz"),
    (Physics(rotation=1), "rotation must be true or false"),
    (Physics(rebuild_interval=0), "rebuild_interval must be ≥ 1"),
    (Physics(dt=0.0), "dt must be ≥ 1e-09"),
    (Physics(stiffness=1e300), "stiffness must be ≤ 1e+13"),
    (Physics(domain=Domain(lo=(-1e300, 0.0, 0.0))), "domain lo/hi must have components within ±1e+06 m"),
    (Physics(fields=(ForceField(kind="vortex", core_radius=0.0),)), "fields[0] core_radius must be ≥ 1e-06"),
    (Physics(bodies=(Body(kind="glued", glue_strength=0.0),)), "bodies[0] glue_strength must be ≥ 0.001"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_check_physics_names_the_setting(physics, words):
    with pytest.raises(MochiError) as info:
        check_physics(physics, "The physics in 'm.json'")
    assert str(info.value).startswith("The physics in 'm.json': ") and words in str(info.value), str(info.value)


def test_check_physics_takes_numpy_numbers_and_every_preset_s_resolved_physics():
    check_physics(Physics(materials=(Material(density=np.float32(2500.0), friction=np.float64(0.5)),),
                          domain=Domain(lo=tuple(np.zeros(3, np.float32)), hi=tuple(np.ones(3, np.float32))),
                          seed=np.int64(3)), "numpy")
    for path in sorted((ROOT / "presets").glob("*.toml")):
        setup = setup_from_preset(load_preset(path), particles=50)
        check_physics(setup.model.physics, str(path))


def test_check_physics_takes_a_real_bake_s_manifest(tiny_bake):
    manifest = read_manifest(tiny_bake)
    check_physics(physics_from_manifest(manifest, tiny_bake / "manifest.json"), "the tiny bake")


# --- stiffness far too soft: baked, with a note that says grains pass through each other ----------------

def test_a_given_stiffness_overlapping_past_100_percent_bakes_with_a_note():
    """Decided for issue 39: a stiffness the user gives is the user's (the overlap is an estimate from the
    expected impact speed); past 100% the note says grains would pass through each other (README, 'auto'
    stiffness)."""
    choice = choose_time_step(dt=None, stiffness=1.0, substeps=None, fps=25, mass=np.array([1e-3]),
                              radius=np.array([0.01]), impact_speed=3.0)
    assert choice.expected_overlap > 1.0
    (note,) = [n for n in choice.notes if "overlap" in n]
    assert "pass through each other" in note
    softer = choose_time_step(dt=None, stiffness=2e3, substeps=None, fps=25, mass=np.array([1e-3]),
                              radius=np.array([0.01]), impact_speed=3.0)
    assert MAX_OVERLAP < softer.expected_overlap < 1.0
    assert not any("pass through" in n for n in softer.notes)


MESH = (ROOT / "presets" / "bunny.obj").as_posix()


@pytest.mark.parametrize("text, words", [
    (TINY_PRESET.replace("fps = 25", "fps = 1e-300"), "[scene] fps must be ≥ 0.01"),
    (TINY_PRESET.replace("fps = 25", "fps = 0.001"), "[scene] fps must be ≥ 0.01"),
    (TINY_PRESET + f'\n[[emitters]]\ntype = "mesh"\npath = "{MESH}"\ncount = 50\nfit = 5e-324\n', "fit must be ≥ 1e-08"),
    (TINY_PRESET + f'\n[[emitters]]\ntype = "mesh"\npath = "{MESH}"\ncount = 50\nfit = 1e12\n', "fit must be ≤ 1000000"),
], ids=["fps subnormal-ish", "fps 0.001", "fit subnormal", "fit 1e12"])
def test_the_preset_s_other_positive_quantities_have_finite_ranges(text, words, tmp_path, capsys):
    sentence = refused(capsys, "bake", _write(tmp_path, text), "--out", tmp_path / "c", "--no-estimate")
    assert words in sentence, sentence
