"""Add-on preferences: which backends run here, and how to add the optional GPU packages.

The CPU path ships inside the extension as wheels (issue 7). The GPU packages are large and optional.
CuPy and pyoptix are driver-specific: the preferences show the exact command that installs them into
this extension's own user folder with Blender's Python, and the user runs it. slangpy (the ray-traced
backend, any vendor) is one wheel for every GPU: a button installs it there with Blender's Python in a
background process (addon/package_install.py), after saying how large the download is, and clears the
backend probes so the Backend menu shows it at once. Nothing is downloaded without that click.
"""

from __future__ import annotations

import importlib.util
import sys

import bpy

from ..engine.backends.rt_device import SLANGPY_DOWNLOAD_MB
from .grain_budget import DEFAULT_CONFIRM_GRAINS
from .modal_timer import PollingModal
from .package_install import PackageInstall, missing_pip_sentence, pip_install_command

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


#: slangpy's own dependencies (module → pip name), installed only where Blender lacks them. numpy is not
#: among them: Blender ships it, and a second numpy in the extension's folder would shadow Blender's.
SLANGPY_DEPENDENCIES = {"typing_extensions": "typing_extensions"}


def slangpy_install_command(target: str) -> list[str]:
    """The command installing the tested slangpy (pyproject.toml's ``rt`` extra) into ``target``: slangpy
    and the dependencies Blender's Python lacks, nothing else (``--no-deps``: never numpy)."""
    from ..engine.backends.rt_device import SLANGPY_REQUIREMENT

    missing = [pip for module, pip in SLANGPY_DEPENDENCIES.items() if importlib.util.find_spec(module) is None]
    return pip_install_command([SLANGPY_REQUIREMENT, *missing], target, no_deps=True)


def slangpy_label() -> str:
    """'slangpy 0.43.1', as the sentences name it."""
    from ..engine.backends.rt_device import SLANGPY_REQUIREMENT

    return SLANGPY_REQUIREMENT.replace("==", " ")


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


#: The running (or last finished, until its end is reported) slangpy install; one at a time.
_install: PackageInstall | None = None
#: Seconds between two looks at the install.
TIMER_STEP = 0.25


def _redraw(context) -> None:
    for window in context.window_manager.windows:
        for area in window.screen.areas:
            area.tag_redraw()


class MOCHI_OT_install_slangpy(PollingModal, bpy.types.Operator):
    """Install slangpy for the ray-traced GPU backend (a background pip run)"""

    bl_idname = "mochi.install_slangpy"
    bl_label = "Install slangpy"
    bl_description = (f"Download slangpy (about {SLANGPY_DOWNLOAD_MB} MB: it carries the Slang compiler) and "
                      "install it into Mochi's own user folder with Blender's Python, for the ray-traced GPU "
                      "backend (AMD, Intel, Apple and NVIDIA GPUs); Blender keeps working while it installs")
    bl_options = {"INTERNAL"}

    def execute(self, context):
        global _install
        if _install is not None and not _install.finished:
            self.report({"ERROR"}, f"{slangpy_label()} is being installed already; wait for it to finish.")
            return {"CANCELLED"}
        folder = extra_site_packages()
        if folder is None:
            self.report({"ERROR"}, "Mochi has no extension user folder to install slangpy into (it is not installed "
                        "as an extension): install Mochi from its .zip with Edit › Preferences › Get Extensions › "
                        "Install from Disk.")
            return {"CANCELLED"}
        no_pip = missing_pip_sentence(slangpy_label())
        if no_pip is not None:
            self.report({"ERROR"}, no_pip)
            return {"CANCELLED"}
        _install = PackageInstall(slangpy_install_command(folder), slangpy_label()).start()
        if context.window is None:  # background Blender: nothing to keep drawing, so wait
            _install.join()
            return self._finish(context, _install, folder)
        self._folder = folder
        self._start_timer(context, TIMER_STEP)
        _redraw(context)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        job = _install
        if not job.finished:
            if context.workspace is not None:
                context.workspace.status_text_set(f"Mochi: installing {job.what}: {job.status or 'starting pip'}")
            _redraw(context)
            return {"PASS_THROUGH"}
        self._stop_timer(context)
        return self._finish(context, job, self._folder)

    def _finish(self, context, job: PackageInstall, folder: str):
        from ..engine.backends.select import clear_probe_cache, probe_rt
        from .backend_probe import quiet_native_output

        if context.window is not None:
            _redraw(context)
        if job.error is not None:
            self.report({"ERROR"}, job.error)
            return {"CANCELLED"}
        if folder not in sys.path:
            sys.path.append(folder)
        clear_probe_cache()  # the Backend menu and this panel look again
        with quiet_native_output():
            probe = probe_rt()
        if probe.available:
            self.report({"INFO"}, f"{job.what} is installed; the ray-traced backend runs on {probe.text}.")
        else:
            self.report({"WARNING"}, f"{job.what} is installed, but the ray-traced backend cannot start: "
                        f"{probe.text.rstrip('.')}.")
        return {"FINISHED"}

    def cancel(self, context):
        """Blender ends the operator (window closed, file loaded): stop pip too."""
        self._stop_timer(context)
        if _install is not None:
            _install.cancel()


def _draw_rt_install(row) -> None:
    """The install button, or the running install's status, under the rt backend's reason."""
    if _install is not None and not _install.finished:
        row.label(text=f"Installing {_install.what}: {_install.status or 'starting pip'}", icon="TIME")
    elif importlib.util.find_spec("slangpy") is None:
        row.operator(MOCHI_OT_install_slangpy.bl_idname,
                     text=f"Install slangpy (~{SLANGPY_DOWNLOAD_MB} MB download)", icon="IMPORT")


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
        from .backend_probe import backend_availability

        probes = backend_availability()
        layout = self.layout
        layout.prop(self, "confirm_minutes", text="Ask Before Bakes Longer Than (min)")
        layout.prop(self, "confirm_grains", text="Ask Before More Grains Than")
        missing = missing_cpu_modules()
        if missing:
            layout.label(text="Missing: " + ", ".join(missing) + " (install the zip built with its wheels)",
                         icon="ERROR")
        box = layout.box()
        box.label(text="Simulation backends")
        for name, text in probes.found.items():
            box.label(text=f"{name}: {text}", icon="CHECKMARK")
        for name, reason in probes.missing.items():
            # The reason gets the box's whole width (Blender cuts a label short in its middle), the button its
            # own indented row below.
            box.label(text=f"{name}: {reason}", icon="CANCEL")
            row = box.row()
            row.separator(factor=2.5)
            if name in GPU_PACKAGES:
                row.operator(MOCHI_OT_copy_install_command.bl_idname, text="Copy Install Command").backend = name
            elif name == "rt":
                _draw_rt_install(row)


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


CLASSES = (MOCHI_OT_copy_install_command, MOCHI_OT_install_slangpy, MochiPreferences)


def register():
    folder = extra_site_packages()
    if folder and folder not in sys.path:
        sys.path.append(folder)  # where the copied command installs CuPy/pyoptix, and the button slangpy
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    if _install is not None and not _install.finished:
        _install.cancel()  # pip must not go on writing into the folder of a disabled extension
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    folder = extra_site_packages()
    if folder in sys.path:
        sys.path.remove(folder)
