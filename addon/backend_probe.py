"""Which backends can run here, asked quietly, and what an artist can do about one that cannot.

The engine's probes (``engine.backends.select``) open a device of each kind once per session. Opening one
that is absent is how the probe learns it is absent, and the graphics libraries say so on the console
in red ("[ERROR] (rhi) layer: Failed to initialize CUDA driver API") even when another kind opens
fine: after slangpy was installed every start of Blender printed such lines. The probes run with the
process's console output set aside; what they found is shown in the Backend menu, the Simulation panel
and the preferences, and the console stays quiet unless something failed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass

#: Where each optional backend's one action lives (the preferences hold the install buttons).
_ACTION = {"rt": "Install slangpy in Preferences › Add-ons › Mochi",
           "cuda": "Copy the install command in Preferences › Add-ons › Mochi",
           "optix": "Copy the install command in Preferences › Add-ons › Mochi"}


@contextmanager
def quiet_native_output():
    """Send what native libraries print (file descriptors 1 and 2) to a scratch file for the block; yields
    that file (read it to show the output after all), or None where the console cannot be set aside."""
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # no console (a Windows Blender started without one)
        yield None
        return
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield sink
        finally:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


@dataclass(frozen=True)
class BackendAvailability:
    """What the probes found.

    Attributes:
        found: Backend name → what it runs on, for those that can start here.
        missing: Backend name → why it cannot start here (one sentence).
        software_rt: The rt backend runs on a software device only (Automatic never picks it).
    """

    found: dict
    missing: dict
    software_rt: bool


def backend_availability() -> BackendAvailability:
    """The probes' results (cached by the engine for the session), the first time with the console quiet."""
    from ..engine.backends.select import available_backends, probe_rt, unavailable_backends

    def ask() -> BackendAvailability:
        found = available_backends()
        return BackendAvailability(found, unavailable_backends(), "rt" in found and not probe_rt().hardware)

    if probe_rt.cache_info().currsize:  # probed already (the panel draws often): nothing opens a device
        return ask()
    with quiet_native_output():
        return ask()


def unavailable_sentence(name: str, reason: str) -> tuple[str, str]:
    """(why, the one thing to do) for a backend that cannot start here, in an artist's words: never a pip
    command to type, but the one place in Blender that installs what is missing, or another backend."""
    if name == "rt" and "slangpy" in reason and "not installed" in reason:
        return "The ray-traced backend needs slangpy, which is not installed.", _ACTION["rt"] + "."
    if name in {"cuda", "optix"} and "CuPy" in reason and "importing it failed" in reason:
        return "The NVIDIA backends need CuPy, which is not installed.", _ACTION[name] + "."
    return reason.rstrip(".") + ".", "Choose Automatic or CPU."
