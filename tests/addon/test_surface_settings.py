"""The Blender properties of materials, walls, collider surfaces and a source's packing and body are
engine.settings_schema's: same defaults, bounds, words, and every value reaches the engine objects and a
saved preset."""

from __future__ import annotations

import bpy
import pytest

from .conftest import REPO, mochi_module


def _schema():
    return mochi_module("engine.settings_schema")


def _inside(setting) -> float:
    """A value within the setting's bounds that is not its default (as a float32 property stores it)."""
    high = setting.high if setting.high is not None else setting.low + 10.0
    value = setting.low + 0.37 * (high - setting.low)
    return value if value != setting.default else value * 0.5


@pytest.mark.parametrize("surface", ["grain", "wall", "collider", "source", "time", "field"])
def test_every_setting_is_a_blender_property_with_the_schema_words_and_bounds(mochi, surface):
    schema = _schema()
    holder = bpy.types.Scene if surface in ("time", "field") else bpy.types.Object
    properties = holder.bl_rna.properties["mochi"].fixed_type.properties
    if surface == "field":  # an item of Scene.mochi.fields
        properties = properties["fields"].fixed_type.properties
    for choice in schema.choices_for(surface, blender_only=True):
        prop = properties[choice.blender]
        assert (prop.name, prop.description, prop.default) == (choice.label, choice.tooltip, choice.default.upper())
        assert [(i.identifier, i.name, i.description) for i in prop.enum_items] == \
            [(c.key.upper(), c.label, c.tooltip) for c in choice.choices]
    assert all(schema.blender_name(s, surface) not in properties
               for s in schema.settings_for(surface) if not s.in_blender)
    for setting in schema.settings_for(surface, blender_only=True):
        prop = properties[schema.blender_name(setting, surface)]
        assert prop.type == ("INT" if setting.integer else "FLOAT")
        assert prop.name == schema.label(setting, surface)
        assert prop.description == schema.tooltip(setting, surface)
        default = setting.default if setting.blender_default is None else setting.blender_default
        assert prop.default == pytest.approx(default, rel=1e-6)
        if setting.low is not None:
            assert prop.hard_min == pytest.approx(setting.ui_min if setting.low_open else setting.low, rel=1e-6)
        if setting.high is not None:
            assert prop.hard_max == pytest.approx(setting.high, rel=1e-6)
        assert (prop.soft_min, prop.soft_max) == pytest.approx(setting.soft, rel=1e-6)


def test_every_value_set_in_blender_reaches_the_engine_and_the_preset(small_scene, tmp_path):
    schema = _schema()
    snapshot, settings_module = mochi_module("addon.snapshot"), mochi_module("addon.settings")
    export = mochi_module("addon.preset_export")
    bpy.ops.mesh.primitive_plane_add(size=1.5, location=(0.0, 0.0, 0.3))
    bpy.context.object.mochi.role = "COLLIDER"
    chosen = {}
    for obj in small_scene.objects:
        surface = {"SOURCE": "grain", "DOMAIN": "wall", "COLLIDER": "collider"}.get(obj.mochi.role)
        if surface is None:
            continue
        for setting in schema.settings_for(surface):
            setattr(obj.mochi, schema.blender_name(setting, surface), _inside(setting))
        # What Blender stored (float32), by engine attribute.
        chosen[surface] = {schema.attribute(s, surface): getattr(obj.mochi, schema.blender_name(s, surface))
                           for s in schema.settings_for(surface)}
    settings = snapshot.scene_blender_to_settings(bpy.context)
    assert schema.surface_values(settings.sources[0].material(), "grain") == chosen["grain"]
    assert schema.surface_values(settings.domain.domain(), "wall") == chosen["wall"]
    engine_collider = settings_module.collider_settings_to_engine(settings.colliders[0])
    assert schema.surface_values(engine_collider, "collider") == chosen["collider"]
    document, _ = export.settings_to_preset(settings, name="all")
    assert {k: v for k, v in document["materials"][0].items() if k != "name"} == chosen["grain"]
    assert {k: document["domain"][k] for k in chosen["wall"]} == chosen["wall"]
    assert {k: document["colliders"][0][k] for k in chosen["collider"]} == chosen["collider"]


def test_the_model_settings_are_blender_properties_that_reach_the_bake_and_the_preset(small_scene, tmp_path):
    """Contact law, friction, rotation, integrator, rebuild interval and seed: the schema's words and
    items in Blender; a value set there is in the bake's settings, the physics and a saved preset, and
    applying that preset to a fresh scene sets it back."""
    schema = _schema()
    snapshot, settings_module = mochi_module("addon.snapshot"), mochi_module("addon.settings")
    export, presets = mochi_module("addon.preset_export"), mochi_module("addon.operators.presets")
    properties = bpy.types.Scene.bl_rna.properties["mochi"].fixed_type.properties
    chosen = {}
    for m in schema.model_settings(blender_only=True):
        prop = properties[m.blender]
        assert (prop.name, prop.description) == (m.label, m.tooltip)
        if m.choices:
            assert [(i.identifier, i.name, i.description) for i in prop.enum_items] == \
                [(c.key.upper(), c.label, c.tooltip) for c in m.choices]
            value = next(c.key for c in m.choices if c.key != m.default)
        else:
            assert prop.default == m.default
            value = (not m.default) if m.type is bool else m.default + 3
        if m.key != "contact_normal":  # Hertz–Mindlin would refuse the scene's given stiffness here
            setattr(small_scene.mochi, m.blender, schema.to_blender(m, value))
            chosen[m.key] = value
    settings = snapshot.scene_blender_to_settings(bpy.context)
    assert {k: getattr(settings.simulation, k) for k in chosen} == chosen
    physics = settings_module.setup_from_settings(settings).model.physics
    assert {k: getattr(physics, k) for k in chosen} == chosen
    document, _ = export.settings_to_preset(settings, name="model")
    for key, value in chosen.items():
        m = schema.model_setting(key)
        assert document[m.table][m.toml_key] == value
    saved = presets.save_scene_preset(bpy.context, tmp_path / "model.toml", name="model")
    for m in schema.model_settings(blender_only=True):  # back to the defaults, then the preset
        setattr(small_scene.mochi, m.blender, schema.to_blender(m, m.default))
    presets.apply_preset(mochi_module("engine.preset").load_preset(saved), small_scene, None)
    assert {k: schema.from_blender(schema.model_setting(k), getattr(small_scene.mochi, schema.model_setting(k).blender))
            for k in chosen} == chosen


def test_a_sources_packing_and_body_reach_the_bake_and_the_preset_and_come_back(small_scene, tmp_path):
    """Small ratio, body and glue set on a source: in its bake settings, the engine's glued body, a saved
    preset's emitter; applying that preset to the reset source sets them back."""
    schema = _schema()
    snapshot, settings_module = mochi_module("addon.snapshot"), mochi_module("addon.settings")
    presets = mochi_module("addon.operators.presets")
    sources = [obj for obj in small_scene.objects if obj.mochi.role == "SOURCE"]
    # Smaller small grains than 0.75 would need a shorter time step than the scene's 20 substeps.
    picked = {"small_ratio": 0.75, "glue_strength": 3.0e4}
    for source in sources:  # both alike: a preset applies its first emitter to the active source
        for setting in schema.settings_for("source", blender_only=True):
            setattr(source.mochi, setting.key, picked.get(setting.key, _inside(setting)))
        source.mochi.body = "GLUED"
    chosen = {s.key: getattr(sources[0].mochi, s.key) for s in schema.settings_for("source", blender_only=True)}
    chosen["body"] = "glued"
    settings = snapshot.scene_blender_to_settings(bpy.context)
    assert [schema.surface_values(s, "source", blender_only=True) for s in settings.sources] == [chosen] * 2
    bodies = settings_module.setup_from_settings(settings).model.physics.bodies
    assert [(b.kind, b.glue_strength) for b in bodies] == [("glued", chosen["glue_strength"])] * 2
    assert bodies[0].glue_stiffness == schema.setting("glue_stiffness").default  # Blender has no property for it
    saved = presets.save_scene_preset(bpy.context, tmp_path / "source.toml", name="source")
    emitter = mochi_module("engine.preset").load_preset(saved).emitters[0]
    assert schema.surface_values(emitter, "source", blender_only=True) == chosen
    for setting in schema.settings_for("source", blender_only=True):
        setattr(sources[0].mochi, setting.key, setting.default)
    sources[0].mochi.body = "LOOSE"
    presets.apply_preset(mochi_module("engine.preset").load_preset(saved), small_scene, sources[0])
    assert mochi_module("addon.properties.schema").blender_values(sources[0].mochi, "source") == chosen
    # A preset whose first emitter is a box packs no mesh: the source keeps its small ratio, takes the body.
    presets.apply_preset(mochi_module("engine.preset").load_preset(REPO / "presets" / "sand_pile.toml"),
                         small_scene, sources[0])
    assert (sources[0].mochi.small_ratio, sources[0].mochi.body) == (chosen["small_ratio"], "LOOSE")


def test_the_time_settings_set_by_hand_reach_the_bake_and_the_preset_and_come_back(small_scene, tmp_path):
    """A fixed time step and a given stiffness: in the bake settings and a saved preset's [time] (substeps
    left out, as a preset gives one of the two); applied to the reset scene, back with their switches."""
    schema = _schema()
    snapshot, presets = mochi_module("addon.snapshot"), mochi_module("addon.operators.presets")
    s = small_scene.mochi
    s.timestep_mode, s.dt, s.use_auto_stiffness, s.stiffness = "FIXED", 2.5e-4, False, 5.0e4
    chosen = {"dt": s.dt, "substeps": None, "stiffness": s.stiffness}
    settings = snapshot.scene_blender_to_settings(bpy.context)
    assert schema.surface_values(settings.simulation, "time") == chosen
    saved = presets.save_scene_preset(bpy.context, tmp_path / "time.toml", name="time")
    preset = mochi_module("engine.preset").load_preset(saved)
    assert schema.surface_values(preset, "time") == chosen
    s.timestep_mode, s.dt, s.use_auto_stiffness, s.stiffness = "AUTO", 1.0e-4, True, 1.0e3
    presets.apply_preset(preset, small_scene, None)
    assert (s.timestep_mode, s.use_auto_stiffness) == ("FIXED", False)
    assert schema.surface_values(snapshot.scene_blender_to_settings(bpy.context).simulation, "time") == chosen
