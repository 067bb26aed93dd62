"""The rt backend's rigid bodies (clumps, ``engine.bonds.Clumps``) on the host: their static data and body
state on the device, the per-clump kernel, and their state across resumes.

The members gather their forces as loose grains do (``rt_step_forces``; two grains of one clump never
touch, as on the CPU) and ``rt_step_integrate`` moves them and stores each one's F/m + g + a_f and τ/I in
``g_acc`` / ``g_alpha`` (with Euler too). Then ``rt_clump_step`` (kernels/rt_clumps.slang: one thread per
clump, members in their fixed order) sums them, moves the body, and sets the members' centres,
orientations, velocities and spins from it, as the CPU backend's ``clump_step`` does, in double, with its
phases: 0 sums only (Verlet's priming), 1 an Euler step, 2 and 3 Verlet's halves. The step is
kernels/clump_law.h, the CUDA kernels' own source (their ``dem_clump_step_one``).

In double where the device has float64 shaders (Vulkan, D3D12, CUDA; lavapipe too), as the CPU and the
CUDA kernels keep the bodies: a body state in float32 rounds its centre, momentum and orientation every
step, where the CPU keeps float64 (docs/rt.md: 2 to 30 times farther from the CPU after 100 steps). Metal
has no float64, and rigid bodies are refused there.

The body state is the CUDA kernels' row (``engine.backends.gpu_params.clump_bodies``: centre in the local
frame, as the CPU backend and the CUDA kernels keep it, velocity, angular momentum, orientation, force and
torque sums) and travels in the history under the CPU backend's keys (``CLUMP_HISTORY``, float64), so an rt
history resumes bit for bit and a CPU history resumes on rt exactly, far from the origin too.
"""

from __future__ import annotations

import numpy as np

from ..errors import MochiError
from ..model import Model
from ..state import State
from .gpu_params import CLUMP_HISTORY, clump_bodies, model_clumps
from .rt_device import RtDevice

KERNEL_SOURCE = "rt_clumps.slang"
#: Doubles in one body row (kernels/clump_layout.h DEM_CLUMP_BODY).
BODY_ROW = 19


class RtClumps:
    """A model's rigid clumps on an rt device (none: ``count`` 0, one-row buffers, nothing dispatched).

    Args:
        rt: The open device.
        model: The static model; its ``clumps``.
        origin: The backend's local origin [m], float64 (3,) (bodies' and members' centres are local).

    Raises:
        MochiError: Clumps on a device without float64 shaders (Metal).
    """

    def __init__(self, rt: RtDevice, model: Model, origin: np.ndarray):
        self.rt = rt
        self.model = model
        self.clumps = model_clumps(model)
        self.count = 0 if self.clumps is None else self.clumps.count
        n = model.particle_count
        clump_of = np.full(max(n, 1), -1, np.int32)
        if self.count == 0:
            self._clump_of = rt.buffer(clump_of)
            return
        spy = __import__("slangpy")
        if not rt.device.has_feature(spy.Feature.double):
            raise MochiError(f"The rt backend moves rigid bodies in float64, which this device ({rt.adapter}, "
                             f"{rt.kind}) lacks in its shaders; use --backend cpu, or make every rigid body glued.")
        c = self.clumps
        clump_of[:n] = c.clump
        self._clump_of = rt.buffer(clump_of)
        self.origin = np.asarray(origin, np.float64)
        self._buffers = {
            "g_clump_start": rt.buffer(c.start.astype(np.uint32)),
            "g_clump_members": rt.buffer(c.members.astype(np.uint32)),
            "g_clump_offset": rt.buffer(np.ascontiguousarray(c.offset, np.float64).reshape(-1)),
            "g_clump_mass": rt.buffer(np.ascontiguousarray(c.mass, np.float64)),
            "g_clump_inertia_inv": rt.buffer(np.ascontiguousarray(c.inertia_inv, np.float64).reshape(-1)),
            "g_clump_dt": rt.buffer(np.array([float(model.physics.dt)], np.float64))}  # the CPU's float64 dt
        self._body = rt.buffer(np.zeros(BODY_ROW * self.count, np.float64), write=True)
        self._kernel = rt.compute_kernel(KERNEL_SOURCE, "rt_clump_step")

    def bindings(self) -> dict:
        """What ``rt_step_forces`` and ``rt_step_integrate`` read: the clump of each grain (−1: none) and
        the clump count (0: no accelerations stored with Euler)."""
        return {"g_clump_of": self._clump_of, "g_clump_count": self.count}

    def from_state(self, state: State) -> None:
        """Each body from its members in ``state`` (float32 world arrays, as the backend holds them):
        centre of mass (local), momentum, angular momentum, orientation identity, as the CPU backend starts."""
        if self.count:
            body = clump_bodies(self.model, state)
            body[:, CLUMP_HISTORY["clump_centre"]] -= self.origin
            self._body.copy_from_numpy(body.reshape(-1))

    def step(self, phase: int, grains: dict) -> None:
        """Move every body and set its members (phase 0–3, module docstring); ``grains``: the backend's
        buffers g_pos, g_vel, g_omega, g_quat, g_acc, g_alpha. Waits for the device."""
        if self.count == 0:
            return
        self._kernel.dispatch(thread_count=[self.count, 1, 1],
                              vars={**grains, **self._buffers, "g_clump_body": self._body,
                                    "g_clump_count": self.count, "g_clump_phase": int(phase)})
        self.rt.device.wait_for_idle()

    def to_history(self) -> dict[str, np.ndarray]:
        """The body state under the CPU backend's keys, float64; empty without clumps."""
        if self.count == 0:
            return {}
        body = self._body.to_numpy().view(np.float64)[: BODY_ROW * self.count].reshape(self.count, BODY_ROW)
        return {name: np.ascontiguousarray(body[:, columns]) for name, columns in CLUMP_HISTORY.items()}

    def from_history(self, history: dict[str, np.ndarray]) -> None:
        """Restore ``to_history``'s arrays (any backend's); without them the state's bodies stay."""
        if self.count == 0 or "clump_centre" not in history:
            return
        body = np.zeros((self.count, BODY_ROW), np.float64)
        for name, columns in CLUMP_HISTORY.items():
            body[:, columns] = np.asarray(history[name], np.float64).reshape(body[:, columns].shape)
        self._body.copy_from_numpy(body.reshape(-1))
