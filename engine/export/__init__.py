"""Exports of a bake cache to the formats other pipelines read (USD: engine.export.usd).

Alembic is written by Blender's own exporter from the playback object (addon/operators/export.py),
since the engine never imports bpy.
"""
