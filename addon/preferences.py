"""Add-on preferences: which backends run here, and how to add the optional GPU packages.

The CPU path ships inside the extension as wheels (issue 7). The GPU packages (CuPy, pyoptix) are
large and driver-specific, so they are optional: the preferences show, for each missing backend, the
exact command that installs them into this extension's own user folder with Blender's Python. The
add-on never downloads anything itself; the user runs the command.
"""

from __future__ import annotations

import importlib.util
import sys

import bpy

from .grain_budget import DEFAULT_CONFIRM_GRAINS

#: Packages each optional backend needs (pip names).
GPU_PACKAGES = {"cuda": ("cupy-cuda12x",), "optix": ("cupy-cuda12x", "pyoptix-contrib")}
#: Modules the CPU path needs; the extension zip bundles them.
CPU_MODULES = ("filelock", "numba", "plyfile", "scipy", "trimesh")

ROOT_PACKAGE = __package__.rsplit(".", 1)[0]


def extra_site_packages() -> str | None:
    """The extension's own folder for optional packages (removed with the extension), or None
    outside an installed extension."""
    try:
        return bpy.utils.extension_path_user(ROOT_PACKAGE, path="site-packages", create=True)
    except ValueError:
        return None


def install_command(backend: str) -> str:
    """Shell command that installs ``backend``'s packages into ``extra_site_packages()``."""
    target = extra_site_packages() or "<extension user folder>/site-packages"
    # Inside Blender (2.91+) sys.executable is Blender's own Python.
    return f'"{sys.executable}" -m pip install --target "{target}" ' + " ".join(GPU_PACKAGES[backend])


def missing_cpu_modules() -> list[str]:
    """CPU-path modules that cannot be imported (an extension zip built without its wheels)."""
    return [name for name in CPU_MODULES if importlib.util.find_spec(name) is None]


class MOCHI_OT_copy_install_command(bpy.types.Operator):
    """Copy the command that installs this backend's packages into Mochi's user folder"""

    bl_idname = "mochi.copy_install_command"
    bl_label = "Copy Install Command"
    bl_options = {"INTERNAL"}

    backend: bpy.props.StringProperty(name="Backend", description="Backend whose packages to install")

    def execute(self, context):
        if self.backend not in GPU_PACKAGES:
            self.report({"ERROR"}, f"Unknown backend '{self.backend}'.")
            return {"CANCELLED"}
        context.window_manager.clipboard = install_command(self.backend)
        self.report({"INFO"}, "Install command copied; run it in a terminal, then restart Blender.")
        return {"FINISHED"}


class MochiPreferences(bpy.types.AddonPreferences):
    bl_idname = ROOT_PACKAGE

    confirm_minutes: bpy.props.FloatProperty(
        name="Ask Before Bakes Longer Than",
        description="A bake started from the Bake button whose measured estimate is longer than this waits "
                    "for you to confirm it, in minutes (0: never ask)",
        default=30.0, min=0.0, soft_max=600.0)
    confirm_grains: bpy.props.IntProperty(
        name="Ask Before More Grains Than",
        description="Pack and Bake ask first when the sources' volumes at their radius predict more grains "
                    "than this, showing the count, the memory and the time they need (0: never ask)",
        default=DEFAULT_CONFIRM_GRAINS, min=0, soft_max=20_000_000)

    def draw(self, _context):
        from ..engine.backends.select import available_backends, unavailable_backends

        layout = self.layout
        layout.prop(self, "confirm_minutes", text="Ask Before Bakes Longer Than (min)")
        layout.prop(self, "confirm_grains", text="Ask Before More Grains Than")
        missing = missing_cpu_modules()
        if missing:
            layout.label(text="Missing: " + ", ".join(missing) + " (install the zip built with its wheels)",
                         icon="ERROR")
        box = layout.box()
        box.label(text="Simulation backends")
        for name, text in available_backends().items():
            box.label(text=f"{name}: {text}", icon="CHECKMARK")
        for name, reason in unavailable_backends().items():
            row = box.row()
            row.label(text=f"{name}: {reason}", icon="CANCEL")
            if name in GPU_PACKAGES:
                row.operator(MOCHI_OT_copy_install_command.bl_idname, text="Copy Install Command").backend = name


def confirm_seconds(context) -> float | None:
    """The preference as seconds, or None when bakes never wait for a confirmation."""
    addon = context.preferences.addons.get(ROOT_PACKAGE)
    minutes = addon.preferences.confirm_minutes if addon is not None and addon.preferences is not None else 30.0
    return 60.0 * minutes if minutes > 0 else None


def confirm_grain_budget(context) -> int | None:
    """The grain count above which Pack and Bake ask first, or None when they never ask."""
    addon = context.preferences.addons.get(ROOT_PACKAGE)
    grains = addon.preferences.confirm_grains if addon is not None and addon.preferences is not None \
        else DEFAULT_CONFIRM_GRAINS
    return int(grains) if grains > 0 else None


CLASSES = (MOCHI_OT_copy_install_command, MochiPreferences)


def register():
    folder = extra_site_packages()
    if folder and folder not in sys.path:
        sys.path.append(folder)  # where the copied command installs CuPy/pyoptix
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    folder = extra_site_packages()
    if folder in sys.path:
        sys.path.remove(folder)
