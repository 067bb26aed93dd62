"""Every difference between the Blender lines Mochi supports, and nowhere else.

Supported lines (each runs the whole add-on test suite, see docs/blender.md):
  4.5 LTS (Python 3.11)  no Format String node: the frame path is built with Join Strings; Import PLY
                         drops a vertex property called 'id' (playback keys grains by their row, in
                         the node tree itself, where 'id' is missing)
  5.0     (Python 3.11)  Format String node; materials and worlds are always node based
  5.2 LTS (Python 3.13)  geometry-nodes modifier inputs are RNA properties, no longer ID properties;
                         the Random Value node has only the sockets of its data type
Before 4.5 there is no Import PLY geometry node, so a cache cannot be played back; the manifest asks
for 4.5 and :func:`has_import_ply_node` turns a missing node into one sentence all the same.

Each difference is detected by the feature, not by the version number, so a line in between (5.1)
takes whichever path it has.
"""

from __future__ import annotations

import bpy


def has_import_ply_node() -> bool:
    """Whether geometry nodes can read a PLY file (the 'Import PLY' node, Blender 4.5 and newer)."""
    return hasattr(bpy.types, "GeometryNodeImportPLY")


def has_format_string_node() -> bool:
    """Whether the 'Format String' function node exists (Blender 5.0 and newer)."""
    return hasattr(bpy.types, "FunctionNodeFormatString")


def needs_use_nodes() -> bool:
    """Whether a material or world must be switched to nodes (before 5.0; from 5.0 they always are)."""
    return bpy.app.version < (5, 0, 0)


def node_socket(sockets, name: str):
    """The socket called ``name`` that the node uses now: up to 5.1 nodes such as Random Value keep a
    socket per data type under one name and disable the others; 5.2 keeps only the active ones."""
    for socket in sockets:
        if socket.name == name and socket.enabled:
            return socket
    raise KeyError(f"no enabled socket '{name}'")


def _input_identifier(modifier: bpy.types.NodesModifier, name: str) -> str:
    return modifier.node_group.interface.items_tree[name].identifier


def _rna_input(modifier: bpy.types.NodesModifier, identifier: str):
    """Blender 5.2+: ``modifier.properties.inputs.<identifier>`` (has ``.value``); None before."""
    interface = getattr(modifier, "properties", None)
    if interface is None or not hasattr(interface, "inputs"):
        return None
    return getattr(interface.inputs, identifier)


def modifier_input_get(modifier: bpy.types.NodesModifier, name: str):
    """The value of the node-group input called ``name`` on a geometry-nodes modifier (None if unset)."""
    identifier = _input_identifier(modifier, name)
    rna_input = _rna_input(modifier, identifier)
    if rna_input is not None:
        return rna_input.value
    return modifier.get(identifier)  # up to 5.1: ID properties keyed by the socket identifier


def modifier_input_set(modifier: bpy.types.NodesModifier, name: str, value) -> None:
    """Set the node-group input called ``name`` on a geometry-nodes modifier."""
    identifier = _input_identifier(modifier, name)
    rna_input = _rna_input(modifier, identifier)
    if rna_input is not None:
        rna_input.value = value
    else:
        modifier[identifier] = value


def register_cli_command(name: str, function):
    """``bpy.utils.register_cli_command`` (Blender 4.2+); None where it is missing."""
    register = getattr(bpy.utils, "register_cli_command", None)
    return register(name, function) if register is not None else None


def has_alembic_exporter() -> bool:
    """Whether this Blender build has Alembic (distribution builds may leave it out, e.g. Debian's 5.2)."""
    return "alembic_export" in dir(bpy.ops.wm)


def has_usd() -> bool:
    """Whether this Blender build has USD's Python modules (pxr); Debian's 5.2 build has none."""
    import importlib.util

    return importlib.util.find_spec("pxr") is not None
