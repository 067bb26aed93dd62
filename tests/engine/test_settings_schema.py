"""The material, surface and model settings exist once (engine.settings_schema): every reader, writer and
engine object follows the schema, old files stay readable, and a new material setting costs one edit."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from engine.colliders import Collider
from engine.digest import digest
from engine.errors import MochiError
from engine.model import Domain, Material, Physics
from engine.preset import parse_preset
from engine.preset_colliders import ColliderSpec
from engine.settings_doc import settings_markdown
from engine.settings_schema import (COLLIDER, GRAIN, MODEL_SETTINGS, SURFACE_SETTINGS, SURFACES, WALL, attribute,
                                    model_tables, model_values, settings_for, surface_values)

REPO = Path(__file__).resolve().parents[2]
EMITTER = {"type": "box", "count": 2, "radius": 0.05}


def _inside(setting) -> float:
    """A value within the setting's bounds that is not its default."""
    high = setting.high if setting.high is not None else setting.low + 10.0
    value = setting.low + 0.37 * (high - setting.low)
    return value if value != setting.default else value * 0.5


def _document(tmp_path, *, material=None, domain=None, collider=None) -> dict:
    document = {"materials": [{"name": "m", **(material or {})}], "emitters": [EMITTER]}
    if domain is not None:
        document["domain"] = domain
    if collider is not None:
        mesh = tmp_path / "tri.obj"
        mesh.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        document["colliders"] = [{"type": "mesh", "path": str(mesh), **collider}]
    return document


@pytest.mark.parametrize("cls, surface", [(Material, GRAIN), (Domain, WALL), (Collider, COLLIDER),
                                          (ColliderSpec, COLLIDER)])
def test_engine_objects_have_one_field_per_setting_with_the_schema_default(cls, surface):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for setting in settings_for(surface):
        field = fields[attribute(setting, surface)]
        assert field.default == setting.default and field.metadata["setting"] is setting


def test_every_setting_is_read_from_a_preset_on_each_of_its_surfaces(tmp_path):
    grains = {s.key: _inside(s) for s in settings_for(GRAIN)}
    walls = {attribute(s, WALL): _inside(s) for s in settings_for(WALL)}
    surface = {s.key: _inside(s) for s in settings_for(COLLIDER)}
    preset = parse_preset(_document(tmp_path, material=grains, domain=walls, collider=surface), "p.toml")
    assert {k: v for k, v in preset.materials[0].items() if k != "name"} == grains
    assert surface_values(preset, WALL) == walls
    assert surface_values(preset.colliders[0], COLLIDER) == surface
    # ... and written back by the preset writer's tables unchanged.
    assert surface_values(Material(**preset.materials[0]), GRAIN) == grains


@pytest.mark.parametrize("setting", SURFACE_SETTINGS, ids=lambda s: s.key)
def test_a_value_out_of_bounds_is_one_sentence_naming_table_and_key(setting, tmp_path):
    surface = next(s for s in SURFACES if s in setting.surfaces)
    low_text = f"{'>' if setting.low_open else '≥'} {setting.low:g}"
    bounds = [(setting.low, f"must be {low_text}, not")] if setting.low_open else []  # an open bound itself
    for bad, words in (*bounds, (setting.low - 1.0, f"must be {low_text}, not"),
                       ("high", "must be a number, not 'high'"), (True, "must be a number, not True"),
                       (10**400, "must be a number")):
        table = {setting.key: bad}
        document = (_document(tmp_path, material=table) if surface == GRAIN else
                    _document(tmp_path, domain={attribute(setting, WALL): bad}) if surface == WALL else
                    _document(tmp_path, collider=table))
        with pytest.raises(MochiError) as caught:
            parse_preset(document, "p.toml")
        sentence = str(caught.value)
        assert sentence.startswith("p.toml: [") and f"{attribute(setting, surface)} {words}" in sentence, sentence
        assert sentence.endswith(".") and "\n" not in sentence and len(sentence) < 200
    if setting.high is not None:
        with pytest.raises(MochiError, match=re.escape(f"must be ≤ {setting.high:g}, not")):
            parse_preset(_document(tmp_path, material={setting.key: setting.high * 2}) if surface == GRAIN else
                         _document(tmp_path, domain={attribute(setting, WALL): setting.high * 2}) if surface == WALL
                         else _document(tmp_path, collider={setting.key: setting.high * 2}), "p.toml")


def test_colliders_check_their_surface_against_the_same_bounds():
    triangle = dict(vertices=np.eye(3), triangles=np.array([[0, 1, 2]]))
    for setting in settings_for(COLLIDER):
        Collider(name="c", **triangle, **{setting.key: _inside(setting)})
        with pytest.raises(MochiError, match=f"'c' {setting.key} must be a number"):
            Collider(name="c", **triangle, **{setting.key: setting.low - 1.0})


def test_old_manifests_and_collider_files_stay_readable(tmp_path):
    """A manifest written before a setting existed reads it as its default; and the fingerprint of a
    physics is the one the engine computed before the schema (so resumes of existing bakes continue)."""
    physics = Physics(domain=Domain(lo=(0, 0, 0), hi=(1, 2, 3), wall_friction=0.2, wall_cohesion=3.0),
                      materials=(Material(name="m", friction=0.1, youngs_modulus=1e8),))
    assert digest(physics) == "b4a6277d78f4f390ddcced913f62acdbfdeaed174b5f54d8b5974dbbb3ea9782"
    old = physics.to_json()
    for entry in old["materials"]:
        entry.pop("youngs_modulus"), entry.pop("poisson_ratio")
    old["domain"].pop("wall_cohesion")
    back = Physics.from_json(json.loads(json.dumps(old)))
    assert back.materials[0].youngs_modulus == 5.0e6 and back.domain.wall_cohesion == 0.0
    assert back.materials[0].friction == 0.1


def test_shipped_presets_keep_their_fingerprints():
    """What a bake of three shipped presets is made from (the cache's fingerprint) as the engine computed
    it before the schema existed: a cache baked from them before resumes after."""
    from engine.preset import load_preset, preset_inputs

    before = {"sand_pile": "dd175555e86141c49dc1bf5e2949099dd1e73aeb8eb7d5878fe40d2b7c2daab4",
              "bowl_pour": "5b836107808acfad088397c75ca4ae72247c77a7422625017ef67b586bb418a3",
              "bunny_glued_weak": "99436cdebe84f386570b68785c041d2951d15fda285fed00775d0acb49944784"}
    for name, value in before.items():
        assert digest(preset_inputs(load_preset(REPO / "presets" / f"{name}.toml"), particles=None)) == value, name


def test_a_new_material_setting_is_one_edit(tmp_path):
    """Add one Setting to the schema (in a child Python, before the engine is imported) and it is read
    from presets, looks and collider tables, carried by Material, Domain and Collider, checked, and
    written by the preset tables: nothing else had to change."""
    mesh = tmp_path / "tri.obj"
    mesh.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        from engine import settings_schema as schema
        schema.SURFACE_SETTINGS += (schema.Setting("squish", "Squish", 0.25, "", "How much a grain squishes",
                                                   "How much {{surface}} squishes", high=1.0),)
        from engine.colliders import Collider
        from engine.errors import MochiError
        from engine.model import Domain, Material
        from engine.preset import parse_preset
        document = {{"materials": [{{"name": "m", "squish": 0.5}}], "domain": {{"wall_squish": 0.75}},
                    "emitters": [{{"type": "box", "count": 2, "radius": 0.05}}],
                    "colliders": [{{"type": "mesh", "path": {str(mesh)!r}, "squish": 0.125}}]}}
        preset = parse_preset(document, "p.toml")
        out = {{"material": Material(**preset.materials[0]).squish, "wall": preset.wall_squish,
               "domain_default": Domain().wall_squish, "spec": preset.colliders[0].squish,
               "table": schema.surface_values(Material(squish=0.5), "grain")["squish"]}}
        document["materials"][0]["squish"] = 2.0
        try:
            parse_preset(document, "p.toml")
        except MochiError as exc:
            out["refused"] = str(exc)
        try:
            Collider(name="c", vertices=np.eye(3), triangles=np.array([[0, 1, 2]]), squish=-1.0)
        except MochiError as exc:
            out["collider_refused"] = str(exc)
        print(json.dumps(out))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["material"] == 0.5 and out["wall"] == 0.75 and out["spec"] == 0.125 and out["table"] == 0.5
    assert out["domain_default"] == 0.25
    assert out["refused"] == "p.toml: [[materials]] #1 squish must be ≤ 1, not 2.0."
    assert out["collider_refused"] == "The collider 'c' squish must be a number in [0, 1], not -1.0."


def test_a_new_source_setting_is_one_edit(tmp_path):
    """A Setting of a source (how it is packed or held together), added in a child Python, is read from a
    preset's emitters and a look's top level, carried by EmitterSpec and Look, checked in one sentence."""
    script = textwrap.dedent("""
        import json
        from engine import settings_schema as schema
        schema.SOURCE_SETTINGS += (schema.Setting("fluff", "Fluff", 0.25, "", "How fluffy a source packs",
                                                  high=1.0, surfaces=(schema.SOURCE,)),)
        from engine.errors import MochiError
        from engine.looks import _read
        from engine.preset import parse_preset
        document = {"materials": [{"name": "m"}],
                    "emitters": [{"type": "box", "count": 2, "radius": 0.05, "fluff": 0.5}, {"type": "box", "count": 2,
                                  "radius": 0.05}]}
        preset = parse_preset(document, "p.toml")
        out = {"emitter": preset.emitters[0].fluff, "default": preset.emitters[1].fluff}
        document["emitters"][0]["fluff"] = -1
        try:
            parse_preset(document, "p.toml")
        except MochiError as exc:
            out["refused"] = str(exc)
        import pathlib, sys
        look = pathlib.Path(sys.argv[1])
        look.write_text('label = "L"\\ndescription = "d"\\nradius = 0.01\\nfluff = 0.75\\n[material]\\n')
        out["look"] = _read(look)[1].fluff
        print(json.dumps(out))
    """)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "fluffy.toml")], cwd=REPO,
                            capture_output=True, text=True, timeout=300,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.splitlines()[-1])
    assert (out["emitter"], out["default"], out["look"]) == (0.5, 0.25, 0.75)
    assert out["refused"] == "p.toml: [[emitters]] #1 fluff must be ≥ 0, not -1."


def test_the_settings_page_is_generated_from_the_schema():
    """docs/settings.md, which the README sends preset authors to, is the schema's own table
    (`python scripts/settings_doc.py` rewrites it)."""
    assert (REPO / "docs" / "settings.md").read_text(encoding="utf-8") == settings_markdown()


def _other_value(setting):
    """A valid value of a model setting that is not its default."""
    if setting.choices:
        return next(c.key for c in setting.choices if c.key != setting.default)
    if setting.type is bool:
        return not setting.default
    return setting.default + 3


def test_every_model_setting_is_read_from_its_table_and_carried_by_preset_and_physics(tmp_path):
    tables = {}
    for m in MODEL_SETTINGS:
        tables.setdefault(m.table, {})[m.toml_key] = _other_value(m)
    preset = parse_preset({**_document(tmp_path), **tables}, "p.toml")
    assert model_values(preset) == {m.key: _other_value(m) for m in MODEL_SETTINGS}
    assert model_tables(preset) == tables  # the writer's tables read back the same
    fields = {f.name: f for f in dataclasses.fields(Physics)}
    for m in MODEL_SETTINGS:
        assert fields[m.key].default == m.default and getattr(parse_preset(_document(tmp_path), "p.toml"),
                                                               m.key) == m.default


@pytest.mark.parametrize("setting", MODEL_SETTINGS, ids=lambda m: m.key)
def test_a_bad_model_setting_is_one_sentence(setting, tmp_path):
    bad = ["shaky", 1, 1.5, True] if setting.choices else [1, "yes"] if setting.type is bool else \
        [1.5, "ten", True, setting.low - 1]
    for value in bad:
        with pytest.raises(MochiError) as caught:
            parse_preset({**_document(tmp_path), setting.table: {setting.toml_key: value}}, "p.toml")
        sentence = str(caught.value)
        assert sentence.startswith(f"p.toml: [{setting.table}] {setting.toml_key} must be "), sentence
        assert sentence.endswith(".") and "\n" not in sentence


def test_every_number_has_a_finite_closed_range_and_refuses_what_is_not_a_number():
    """Issue 39: no setting is bounded by 'any' or '> 0' alone (a subnormal or 1e308 reached the physics and
    divided by zero): each has a largest value, and a smallest that is a number it takes itself."""
    from engine.settings_schema import NUMBER_LIMIT, _all_settings

    for setting in _all_settings():
        assert setting.high is not None or setting.integer, setting.key
        assert setting.low is not None and not setting.low_open, setting.key
        assert -NUMBER_LIMIT <= setting.lowest < setting.highest <= NUMBER_LIMIT or setting.integer, setting.key
        number = int if setting.integer else float
        assert setting.allows(number(setting.lowest)) and setting.allows(number(setting.highest)), setting.key
        assert setting.integer or setting.allows(setting.default), setting.key
        for bad in (float("nan"), float("inf"), -float("inf"), True, "1", None, 10**400):
            assert not setting.allows(bad), (setting.key, bad)
        if setting.lowest > 0:  # a positive quantity: below its floor, not only at zero, is refused
            assert not setting.allows(setting.lowest / 2) and not setting.allows(5e-324), setting.key
