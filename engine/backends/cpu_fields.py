"""numba evaluation of the position- and velocity-dependent fields of ``engine.fields`` (table layout
there), called per particle by ``engine.backends.cpu_kernels.integrate``. ``kernels/field_law.h``
(``dem_field_acceleration``) is the float32 GPU twin (CUDA and Slang); tests/engine/test_force_fields.py
and tests/engine/test_rt_fields.py hold them to each other.

Float64 arithmetic, except the turbulence noise's lattice hash, which is 32-bit integer arithmetic
(kept in uint64 and masked) so that CPU and GPU pick the same gradients.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernel_options import KERNEL_OPTIONS

_M32 = np.uint64(0xFFFFFFFF)
_H1 = np.uint64(0x9E3779B1)
_H2 = np.uint64(0x85EBCA77)
_H3 = np.uint64(0xC2B2AE3D)
_H4 = np.uint64(0x27D4EB2F)
_F1 = np.uint64(0x7FEB352D)
_F2 = np.uint64(0x846CA68B)
_S15 = np.uint64(15)
_S16 = np.uint64(16)
#: Turbulence octaves (Blender's depth 2: octaves 0, 1, 2) and the normalisation of their sum, 4/7.
OCTAVES = 3
OCTAVE_NORM = 4.0 / 7.0


@njit(**KERNEL_OPTIONS)
def lattice_hash(ix, iy, iz, seed):
    """32-bit hash of an integer lattice point and a seed (a murmur3-style finaliser over a mix)."""
    h = (np.uint64(seed & 0xFFFFFFFF) * _H1) & _M32
    h ^= (np.uint64(ix & 0xFFFFFFFF) * _H2) & _M32
    h ^= (np.uint64(iy & 0xFFFFFFFF) * _H3) & _M32
    h ^= (np.uint64(iz & 0xFFFFFFFF) * _H4) & _M32
    h ^= h >> _S16
    h = (h * _F1) & _M32
    h ^= h >> _S15
    h = (h * _F2) & _M32
    h ^= h >> _S16
    return h


@njit(**KERNEL_OPTIONS)
def _gradient(h, x, y, z):
    """Ken Perlin's improved-noise gradient: one of 12 cube edges, picked by the hash's low 4 bits."""
    k = int(h & np.uint64(15))
    u = x if k < 8 else y
    v = y if k < 4 else (x if (k == 12 or k == 14) else z)
    return (-u if (k & 1) else u) + (-v if (k & 2) else v)


@njit(**KERNEL_OPTIONS)
def _fade(t):
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


@njit(**KERNEL_OPTIONS)
def gradient_noise(x, y, z, seed):
    """Improved Perlin noise at (x, y, z) (lattice hashed instead of permuted), about −1..1."""
    fx, fy, fz = math.floor(x), math.floor(y), math.floor(z)
    ix, iy, iz = int(fx), int(fy), int(fz)
    x, y, z = x - fx, y - fy, z - fz
    u, v, w = _fade(x), _fade(y), _fade(z)
    total = 0.0
    for corner in range(8):
        di, dj, dk = corner >> 2, (corner >> 1) & 1, corner & 1
        g = _gradient(lattice_hash(ix + di, iy + dj, iz + dk, seed), x - di, y - dj, z - dk)
        total += (u if di else 1.0 - u) * (v if dj else 1.0 - v) * (w if dk else 1.0 - w) * g
    return total


@njit(**KERNEL_OPTIONS)
def turbulence(x, y, z, seed):
    """Three octaves of ``gradient_noise`` (Blender's turbulence of depth 2), about −1..1."""
    total = 0.0
    amplitude = 1.0
    scale = 1.0
    for _ in range(OCTAVES):
        total += amplitude * gradient_noise(x * scale, y * scale, z * scale, seed)
        amplitude *= 0.5
        scale *= 2.0
    return total * OCTAVE_NORM


@njit(**KERNEL_OPTIONS)
def _falloff(row, rx, ry, rz, vortex):
    """Blender's spherical falloff of the field in ``row`` at offset r from its centre (layout in
    engine.fields), with its Z-direction gate; also returns the distance d it used [m]."""
    ux, uy, uz = row[4], row[5], row[6]
    along = rx * ux + ry * uy + rz * uz
    side = row[13]
    if (side > 0.0 and along < 0.0) or (side < 0.0 and along > 0.0):
        return 0.0, 0.0
    if row[12] > 0.5:  # plane: distance from the plane, a vortex's from its axis
        if vortex:
            px, py, pz = rx - along * ux, ry - along * uy, rz - along * uz
            d = math.sqrt(px * px + py * py + pz * pz)
        else:
            d = abs(along)
    else:
        d = math.sqrt(rx * rx + ry * ry + rz * rz)
    if row[11] > 0.0 and d > row[11]:
        return 0.0, d
    if d < row[10]:
        return 1.0, d
    if row[9] == 0.0:
        return 1.0, d
    return (1.0 + d - row[10]) ** (-row[9]), d


@njit(**KERNEL_OPTIONS)
def field_acceleration(x, y, z, vx, vy, vz, table, grid):
    """Sum of the table's fields at position (x, y, z) [m] for velocity (vx, vy, vz) [m/s] [m/s²]."""
    ax = ay = az = 0.0
    for f in range(table.shape[0]):
        row = table[f]
        kind = int(row[0])
        if kind == 3:  # sampled, trilinear over nodes spanning lo..hi
            offset = int(row[1])
            nx, ny, nz = int(row[2]), int(row[3]), int(row[4])
            u = (x - row[5]) / (row[8] - row[5]) * (nx - 1)
            v = (y - row[6]) / (row[9] - row[6]) * (ny - 1)
            w = (z - row[7]) / (row[10] - row[7]) * (nz - 1)
            if u < 0.0 or v < 0.0 or w < 0.0 or u > nx - 1 or v > ny - 1 or w > nz - 1:
                continue
            i0 = min(int(u), nx - 2)
            j0 = min(int(v), ny - 2)
            k0 = min(int(w), nz - 2)
            fu, fv, fw = u - i0, v - j0, w - k0
            for corner in range(8):
                di, dj, dk = corner >> 2, (corner >> 1) & 1, corner & 1
                weight = ((fu if di else 1.0 - fu) * (fv if dj else 1.0 - fv) * (fw if dk else 1.0 - fw)
                          * row[11])
                base = offset + (((i0 + di) * ny + (j0 + dj)) * nz + (k0 + dk)) * 3
                ax += weight * grid[base]
                ay += weight * grid[base + 1]
                az += weight * grid[base + 2]
            continue
        if kind < 2 or kind > 6:
            continue
        rx, ry, rz = x - row[1], y - row[2], z - row[3]
        ux, uy, uz = row[4], row[5], row[6]
        falloff, _ = _falloff(row, rx, ry, rz, kind == 2)
        if falloff == 0.0:
            continue
        s = row[7] * falloff
        if kind == 2:  # vortex
            profile = int(row[15])
            cx, cy, cz = uy * rz - uz * ry, uz * rx - ux * rz, ux * ry - uy * rx  # axis × r
            if profile == 2:  # Blender's plane vortex: ω × (ω × r) + ω × r − v, ω = s axis
                ax += s * s * (uy * cz - uz * cy) + s * cx - vx
                ay += s * s * (uz * cx - ux * cz) + s * cy - vy
                az += s * s * (ux * cy - uy * cx) + s * cz - vz
            else:
                rho = math.sqrt(cx * cx + cy * cy + cz * cz)  # |axis × r| is the distance from the axis
                if rho > 0.0:
                    if profile == 1:  # Blender's point vortex: s × |r| along axis × r
                        scale = s * math.sqrt(rx * rx + ry * ry + rz * rz) / rho
                    else:
                        core = row[8]
                        scale = s * (rho / core if rho < core else core / rho) / rho
                    ax += scale * cx
                    ay += scale * cy
                    az += scale * cz
        elif kind == 4:  # force: along the offset from the centre (the plane's normal when plane-shaped)
            if row[12] > 0.5:
                along = rx * ux + ry * uy + rz * uz
                rx, ry, rz = along * ux, along * uy, along * uz
            length = math.sqrt(rx * rx + ry * ry + rz * rz)
            if length > 0.0:
                ax += s * rx / length
                ay += s * ry / length
                az += s * rz / length
        elif kind == 5:  # wind: along the axis
            ax += s * ux
            ay += s * uy
            az += s * uz
        else:  # turbulence: three noise components of the offset in units of the noise size
            size = row[8]
            seed = int(row[15])
            qx, qy, qz = rx / size, ry / size, rz / size
            ax += s * turbulence(qx, qy, qz, 3 * seed)
            ay += s * turbulence(qy, qz, qx, 3 * seed + 1)
            az += s * turbulence(qz, qx, qy, 3 * seed + 2)
        flow = row[14] * falloff
        if flow != 0.0:
            ax -= flow * vx
            ay -= flow * vy
            az -= flow * vz
    return ax, ay, az
