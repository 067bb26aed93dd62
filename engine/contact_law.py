"""The contact law shared by every backend: linear spring-dashpot with Coulomb friction.

For particles i and j with centres x, velocities v, radii r and masses m (walls: m_j = ∞, v_j = 0):

    d      = |x_i − x_j|,  n = (x_i − x_j)/d  (unit, from j to i; (1, 0, 0) when d = 0)
    δ      = r_i + r_j − d                       overlap [m]; contact when δ ≥ 0
    m_eff  = m_i m_j / (m_i + m_j)               [kg]
    v_n    = (v_i − v_j)·n                       negative while approaching [m/s]
    v_t    = (v_i − v_j) − v_n n
    f_n    = k δ − γ_n v_n,   γ_n = 2 β sqrt(m_eff k),  β = −ln e / sqrt(π² + ln² e)
    F_n    = f_n n

Tangential force, friction_model 'spring' (default; Cundall & Strack 1979, as in LIGGGHTS'
tangential_history): an elastic displacement ξ per contact, born at 0 when the pair starts touching,

    ξ      ← ξ − (ξ·n) n + v_t dt                (kept in the current tangent plane)
    F_t    = −k_t ξ − γ_t v_t,   k_t = 2/7 k,  γ_t = 2 β sqrt(m_eff k_t)
    if |F_t| > μ max(f_n, 0):  F_t ← μ max(f_n, 0) F_t/|F_t|,  ξ ← −(F_t + γ_t v_t)/k_t  (sliding)

friction_model 'damper' (history-free, the form a stateless ray-traced pass can evaluate):

    F_t    = −min(γ_d |v_t|, μ max(f_n, 0)) v_t/|v_t|,  γ_d = 2 sqrt(m_eff k)

force on i = F_n + F_t, force on j = −(F_n + F_t). The normal part is the linear spring-dashpot of
Cundall & Strack (1979) with β chosen so an isolated collision restitutes with exactly e (Schwager &
Pöschel, Phys. Rev. E 78, 051304, 2008). The spring gives static friction (a block on a slope below
the friction angle does not move, piles stay); the damper creeps at about g·sinθ/(2ω) on slopes.
Particles do not rotate (as in the paper).

Pair properties come from the two materials: e and μ are averaged. ``pair_tables`` precomputes β and
μ for every material pair so kernels only do a table look-up.
"""

from __future__ import annotations

import math

import numpy as np

from .model import Material

#: k_t / k of the tangential spring (2/7, Hertz–Mindlin's ratio for a Poisson ratio near 0.25).
TANGENTIAL_STIFFNESS_RATIO = 2.0 / 7.0


def damping_ratio(restitution: float) -> float:
    """β(e) of the normal dashpot, so an isolated collision restitutes with ``restitution``."""
    e = min(max(restitution, 1e-6), 1.0)
    log_e = math.log(e)
    return -log_e / math.sqrt(math.pi ** 2 + log_e ** 2)


def pair_tables(materials: tuple[Material, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Normal damping ratios β and friction coefficients μ per material pair.

    Returns:
        (beta float32 (M, M), mu float32 (M, M)) with M = len(materials), symmetric.
    """
    count = len(materials)
    beta = np.zeros((count, count), np.float32)
    mu = np.zeros((count, count), np.float32)
    for a, ma in enumerate(materials):
        for b, mb in enumerate(materials):
            beta[a, b] = damping_ratio(0.5 * (ma.restitution + mb.restitution))
            mu[a, b] = 0.5 * (ma.friction + mb.friction)
    return beta, mu


def wall_tables(materials: tuple[Material, ...], wall_restitution: float,
                wall_friction: float) -> tuple[np.ndarray, np.ndarray]:
    """β and μ of each material against the walls, float32 (M,) each (averaged as for pairs)."""
    beta = np.array([damping_ratio(0.5 * (m.restitution + wall_restitution)) for m in materials], np.float32)
    mu = np.array([0.5 * (m.friction + wall_friction) for m in materials], np.float32)
    return beta, mu


def contact_force(xi, xj, vi, vj, ri, rj, mi, mj, stiffness, beta, mu, *, spring=None, dt=0.0):
    """Reference (float64, numpy) force on i from j, or None when they do not touch.

    A readable twin of the kernels for tests and documentation; ``mj = inf`` is a wall.

    Args:
        spring: Tangential displacement ξ [m] (3,) for friction_model 'spring', None for 'damper'.
        dt: Time step [s] (spring model only).

    Returns:
        force (3,) [N] for the damper, (force, new ξ) for the spring; None without contact.
    """
    xi, xj, vi, vj = (np.asarray(a, np.float64) for a in (xi, xj, vi, vj))
    delta_x = xi - xj
    dist = float(np.linalg.norm(delta_x))
    overlap = ri + rj - dist
    if overlap < 0:
        return None
    normal = delta_x / dist if dist > 0 else np.array([1.0, 0.0, 0.0])
    m_eff = mi if math.isinf(mj) else mi * mj / (mi + mj)
    root = math.sqrt(m_eff * stiffness)
    v_rel = vi - vj
    v_n = float(v_rel @ normal)
    f_n = stiffness * overlap - 2.0 * beta * root * v_n
    v_t = v_rel - v_n * normal
    cap = mu * max(f_n, 0.0)
    if spring is not None:
        k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
        g_t = 2.0 * beta * math.sqrt(m_eff * k_t)
        xi_t = np.asarray(spring, np.float64)
        xi_t = xi_t - (xi_t @ normal) * normal + v_t * dt
        f_t = -k_t * xi_t - g_t * v_t
        magnitude = float(np.linalg.norm(f_t))
        if magnitude > cap:
            f_t = f_t * (cap / magnitude)
            xi_t = -(f_t + g_t * v_t) / k_t
        return f_n * normal + f_t, xi_t
    force = f_n * normal
    speed_t = float(np.linalg.norm(v_t))
    if speed_t > 0:
        force -= min(2.0 * root * speed_t, cap) * v_t / speed_t
    return force
