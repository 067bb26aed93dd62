"""The GPU contact law on the portable ray-traced path's device (slangpy; kernels/rt_contact_forces.slang).

The law is kernels/contact_law.h, the one source the CUDA kernels, the OptiX programs and this Slang
kernel include, in float32. ``RtContactLaw.forces`` evaluates it over a batch of contacts described the
way a contact pass sees them (a normal, an overlap, a relative velocity, …), one device thread per
contact, and returns forces, updated histories and torques. It is the first piece of the `rt` path's
force phase; tests/engine/test_rt_law.py checks it against the float64 reference of
engine/contact_law.py.

slangpy is imported only through ``open_rt_device``, so ``import engine`` works without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MochiError
from .rt_device import RtDevice

KERNEL_SOURCE = "rt_contact_forces.slang"
#: Entry point of each form of the law (ContactLaw::Paper, ContactLaw::Full in contact_law.h).
ENTRIES = {"paper": "contact_forces_paper", "full": "contact_forces_full"}


@dataclass
class ContactForces:
    """What the law returns for a batch of n contacts (float32; torque fields zero for the paper's form).

    Attributes:
        force: Force on i [N], shape (n, 3) (on j: its negative).
        spring: Updated tangential springs ξ [m] as seen from i, shape (n, 3); None for the damper.
        rolling: Updated rolling histories ξ_r [m], shape (n, 3) (unchanged where μ_r = 0); None without.
        n_x_ft: n × F_t [N], shape (n, 3), F_t the tangential force on i.
        n_x_fr: n × F_r [N], shape (n, 3), F_r the rolling resistance of i.
        torque_i: Torque on i [N m], shape (n, 3): −R_i n × F_t + R_eff n × F_r.
        torque_j: Torque on j [N m], shape (n, 3): −R_j n × F_t − R_eff n × F_r.
    """

    force: np.ndarray
    spring: np.ndarray | None
    rolling: np.ndarray | None
    n_x_ft: np.ndarray
    n_x_fr: np.ndarray
    torque_i: np.ndarray
    torque_j: np.ndarray


def _rows(values, count: int, name: str, *, width: int = 3) -> np.ndarray:
    """``values`` as float32 of shape (count, width), a scalar broadcast to every contact."""
    array = np.asarray(values, np.float64)
    if array.ndim == 0 and width == 1:
        array = np.full(count, float(array))
    expected = (count,) if width == 1 else (count, width)
    if array.shape != expected:
        raise MochiError(f"The contact batch's {name} has shape {array.shape}; {expected} was expected.")
    return array.astype(np.float32).reshape(count, width)


class RtContactLaw:
    """The contact law compiled for one slangpy device (both forms, compiled once).

    Args:
        rt: The device (``engine.backends.rt_device.open_rt_device``).
    """

    def __init__(self, rt: RtDevice):
        self.rt = rt
        self._kernels = {law: rt.compute_kernel(KERNEL_SOURCE, entry) for law, entry in ENTRIES.items()}

    def _input(self, rows: np.ndarray):
        return self.rt.buffer(rows)

    def _output(self, rows: np.ndarray):
        return self.rt.buffer(rows, write=True)

    def forces(self, *, law: str, normal, overlap, velocity, m_eff, stiffness, beta, mu, spring=None, dt=0.0,
               tangential_ratio: float, arm_i=0.0, arm_j=0.0, omega_i=None, omega_j=None, r_eff=0.0, mu_r=0.0,
               cohesion=0.0, rolling=None) -> ContactForces:
        """Evaluate the law for n contacts on the device.

        Per-contact values are arrays of shape (n,) or (n, 3); a scalar given for an (n,) value stands
        for the same value at every contact. Everything is rounded to float32, as the CUDA kernels take it.

        Args:
            law: 'paper' (the Mochi paper's model) or 'full' (rotation, rolling resistance, cohesion).
            normal: Unit normals n from j to i, shape (n, 3).
            overlap: Overlaps δ ≥ 0 [m], shape (n,).
            velocity: Relative velocities v_i − v_j [m/s], shape (n, 3).
            m_eff: Effective masses m_i m_j / (m_i + m_j) [kg] (wall: m_i), shape (n,).
            stiffness: Normal stiffness k [N/m].
            beta: Damping ratios β (engine.contact_law.damping_ratio).
            mu: Friction coefficients μ.
            spring: Tangential springs ξ [m] as seen from i before the step, shape (n, 3), for friction
                model 'spring'; None for 'damper'.
            dt: Time step [s] over which the histories stretch.
            tangential_ratio: k_t / k (engine.contact_law.TANGENTIAL_STIFFNESS_RATIO).
            arm_i, arm_j: Arms R = r − δ/2 from each centre to the contact point [m] (wall: R_j = 0).
            omega_i, omega_j: Angular velocities [rad/s], shape (n, 3); None for zero (wall: ω_j = 0).
            r_eff: Rolling radii r_i r_j / (r_i + r_j) [m] (wall: r_i).
            mu_r: Rolling friction coefficients μ_r (rolling resistance acts where μ_r > 0 and ``rolling``
                is given).
            cohesion: SJKR cohesive forces c·A [N], ≥ 0 (engine.contact_law.contact_area).
            rolling: Rolling histories ξ_r [m] before the step, shape (n, 3); None keeps none.

        Returns:
            ``ContactForces``.

        Raises:
            MochiError: an unknown law or arrays of the wrong shape.
        """
        if law not in ENTRIES:
            raise MochiError(f"Unknown contact law '{law}': choose one of {', '.join(ENTRIES)}.")
        normal = np.asarray(normal, np.float64)
        if normal.ndim != 2 or normal.shape[1] != 3:
            raise MochiError(f"The contact batch's normal has shape {normal.shape}; (n, 3) was expected.")
        count = normal.shape[0]
        zeros = np.zeros((count, 3))
        columns = {name: _rows(value, count, name, width=1) for name, value in (
            ("overlap", overlap), ("m_eff", m_eff), ("stiffness", stiffness), ("beta", beta), ("mu", mu),
            ("arm_i", arm_i), ("arm_j", arm_j), ("r_eff", r_eff), ("mu_r", mu_r), ("cohesion", cohesion))}
        vectors = {name: _rows(zeros if value is None else value, count, name) for name, value in (
            ("normal", normal), ("velocity", velocity), ("omega_i", omega_i), ("omega_j", omega_j),
            ("spring", spring), ("rolling", rolling))}
        if count == 0:
            empty = np.zeros((0, 3), np.float32)
            return ContactForces(empty, None if spring is None else empty, None if rolling is None else empty,
                                 empty, empty, empty, empty)

        def quad(xyz, w=None):  # float4 rows: xyz and w (0 where the kernel reads no w)
            return np.concatenate([xyz, np.zeros((count, 1), np.float32) if w is None else w], axis=1)

        c = columns
        spring_rows = self._output(quad(vectors["spring"]))
        rolling_rows = self._output(quad(vectors["rolling"]))
        force_rows = self._output(np.zeros((count, 4), np.float32))
        arm_rows = self._output(np.zeros((2 * count, 4), np.float32))
        torque_rows = self._output(np.zeros((2 * count, 4), np.float32))
        bindings = {
            "g_normal_overlap": self._input(quad(vectors["normal"], c["overlap"])),
            "g_velocity_mass": self._input(quad(vectors["velocity"], c["m_eff"])),
            "g_material": self._input(np.concatenate([c["stiffness"], c["beta"], c["mu"], c["mu_r"]], axis=1)),
            "g_arms": self._input(np.concatenate([c["arm_i"], c["arm_j"], c["r_eff"], c["cohesion"]], axis=1)),
            "g_omega_i": self._input(quad(vectors["omega_i"])),
            "g_omega_j": self._input(quad(vectors["omega_j"])),
            "g_spring": spring_rows, "g_rolling": rolling_rows, "g_force": force_rows,
            "g_torque_arms": arm_rows, "g_torques": torque_rows, "g_count": count,
            "g_spring_model": int(spring is not None), "g_rolling_model": int(rolling is not None),
            "g_dt": float(dt), "g_tangential_ratio": float(tangential_ratio)}
        self._kernels[law].dispatch(thread_count=[count, 1, 1], vars=bindings)
        self.rt.device.wait_for_idle()

        def read(buffer, rows):
            return buffer.to_numpy().view(np.float32)[: 4 * rows].reshape(rows, 4)[:, :3].copy()

        arms, torques = read(arm_rows, 2 * count), read(torque_rows, 2 * count)
        return ContactForces(force=read(force_rows, count),
                             spring=None if spring is None else read(spring_rows, count),
                             rolling=None if rolling is None else read(rolling_rows, count),
                             n_x_ft=arms[0::2], n_x_fr=arms[1::2], torque_i=torques[0::2], torque_j=torques[1::2])
