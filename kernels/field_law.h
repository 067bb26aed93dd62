// The force fields of engine/fields.py on the GPU, written once for every GPU path: the acceleration
// [m/s²] the position- and velocity-dependent fields of the packed table (engine.fields.pack_fields:
// vortex, sampled, Blender's Force, Wind and Turbulence) give a grain, with Blender's spherical falloff
// and its Z-direction gate, and the turbulence noise. The float64 twin is engine/backends/cpu_fields.py.
// One source, two languages, as kernels/contact_law.h:
//   CUDA C++ — kernels/dem_math.cuh includes it (the grid and OptiX backends' update, through
//     kernels/dem_integrate.cuh; the host build of tests/engine/native/field_host.cpp too); the table is
//     DemParams::field_table / field_grid / field_count;
//   Slang — kernels/rt_dem_step.slang includes it (the rt backend's update); the table is the global
//     buffers g_field_table (float, F × 16) and g_field_grid (float) and the uniform g_field_count,
//     declared below and bound by engine/backends/rt_backend.py.
// It is written in the subset the two languages share; the differences are the macros and helpers below:
// FIELD_SOURCE, the type of the first parameter that carries the table (CUDA: the DemParams; Slang: an
// empty FieldSource, the table being global); FIELD_COUNT(P), FIELD_ROW(P, f) (a FieldRow: in CUDA a
// pointer to the row, in Slang a row index whose subscript reads the buffer) and FIELD_GRID(P, index)
// read it; field_uint, field_float3 and the square root, |x|, power and floor of each language; and
// FIELD_FORCEINLINE / FIELD_INLINE, each CUDA function's own qualifier. Booleans are written as
// comparisons (x != 0), which Slang asks for and C++ reads as it read the integers.
// In CUDA nothing here may be regrouped: the float32 kernels compile with NVRTC's default contraction, so
// the shape of each expression decides which multiply-adds the GPU fuses, and a change must leave the
// kernels' PTX as it was (scripts/check_law_ptx.py). Slang makes no such promise (SPIR-V drivers may
// contract and round sqrt, division and pow within a few ulps): tests/engine/test_rt_fields.py holds the
// rt backend to the CPU's float64 fields within float32 rounding. Included, not compiled on its own.
#pragma once

#if defined(__SLANG__)
#define FIELD_FORCEINLINE [ForceInline]
#define FIELD_INLINE
typealias field_uint = uint;

uniform StructuredBuffer<float> g_field_table;  // (F, 16) rows, engine.fields.pack_fields layout (local frame)
uniform StructuredBuffer<float> g_field_grid;   // sampled fields' vectors (at least one element)
uniform uint g_field_count;                     // F: rows of g_field_table

/// One row of g_field_table: row[k] is its k-th entry.
struct FieldRow {
    int base;  // index of the row's first entry in g_field_table
    __init(int first) { base = first; }
    __subscript(int k)->float { get { return g_field_table[base + k]; } }
};

/// The table's stand-in for CUDA's DemParams: the table itself is global.
struct FieldSource {};

#define FIELD_SOURCE FieldSource
#define FIELD_COUNT(P) ((int)g_field_count)
#define FIELD_ROW(P, f) FieldRow(16 * (f))
#define FIELD_GRID(P, index) g_field_grid[index]

FIELD_FORCEINLINE float3 field_float3(float x, float y, float z) { return float3(x, y, z); }
FIELD_FORCEINLINE float field_sqrt(float x) { return sqrt(x); }
FIELD_FORCEINLINE float field_abs(float x) { return abs(x); }
FIELD_FORCEINLINE float field_pow(float x, float y) { return pow(x, y); }
FIELD_FORCEINLINE float field_floor(float x) { return floor(x); }
#else
#include "dem_params.h"

#define FIELD_FORCEINLINE __device__ __forceinline__
#define FIELD_INLINE __device__ inline
typedef unsigned int field_uint;
typedef const float* FieldRow;

#define FIELD_SOURCE const DemParams&
#define FIELD_COUNT(P) (P).field_count
#define FIELD_ROW(P, f) ((P).field_table + 16 * (f))
#define FIELD_GRID(P, index) (P).field_grid[index]

FIELD_FORCEINLINE float3 field_float3(float x, float y, float z) { return make_float3(x, y, z); }
FIELD_FORCEINLINE float field_sqrt(float x) { return sqrtf(x); }
FIELD_FORCEINLINE float field_abs(float x) { return fabsf(x); }
FIELD_FORCEINLINE float field_pow(float x, float y) { return powf(x, y); }
FIELD_FORCEINLINE float field_floor(float x) { return floorf(x); }
#endif

// Everything below is the fields' law itself, in both languages.

// Turbulence noise of engine/backends/cpu_fields.py: 32-bit lattice hash, improved-Perlin gradients,
// three octaves normalised by 4/7 (Blender's turbulence of depth 2).
FIELD_FORCEINLINE field_uint dem_lattice_hash(int ix, int iy, int iz, int seed) {
    field_uint h = (field_uint)seed * 0x9E3779B1u;
    h ^= (field_uint)ix * 0x85EBCA77u;
    h ^= (field_uint)iy * 0xC2B2AE3Du;
    h ^= (field_uint)iz * 0x27D4EB2Fu;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    h ^= h >> 16;
    return h;
}

FIELD_FORCEINLINE float dem_noise_gradient(field_uint h, float x, float y, float z) {
    const int k = (int)(h & 15u);
    const float u = k < 8 ? x : y;
    const float v = k < 4 ? y : ((k == 12 || k == 14) ? x : z);
    return ((k & 1) != 0 ? -u : u) + ((k & 2) != 0 ? -v : v);
}

FIELD_FORCEINLINE float dem_noise_fade(float t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }

FIELD_INLINE float dem_gradient_noise(float x, float y, float z, int seed) {
    const float fx = field_floor(x), fy = field_floor(y), fz = field_floor(z);
    const int ix = (int)fx, iy = (int)fy, iz = (int)fz;
    x -= fx;
    y -= fy;
    z -= fz;
    const float u = dem_noise_fade(x), v = dem_noise_fade(y), w = dem_noise_fade(z);
    float total = 0.0f;
    for (int corner = 0; corner < 8; ++corner) {
        const int di = corner >> 2, dj = (corner >> 1) & 1, dk = corner & 1;
        const float g = dem_noise_gradient(dem_lattice_hash(ix + di, iy + dj, iz + dk, seed), x - di, y - dj, z - dk);
        total += (di != 0 ? u : 1.0f - u) * (dj != 0 ? v : 1.0f - v) * (dk != 0 ? w : 1.0f - w) * g;
    }
    return total;
}

FIELD_INLINE float dem_turbulence(float x, float y, float z, int seed) {
    float total = 0.0f, amplitude = 1.0f, scale = 1.0f;
    for (int octave = 0; octave < 3; ++octave) {
        total += amplitude * dem_gradient_noise(x * scale, y * scale, z * scale, seed);
        amplitude *= 0.5f;
        scale *= 2.0f;
    }
    return total * (4.0f / 7.0f);
}

// Blender's spherical falloff with its Z-direction gate, for the row of a centred field at offset r.
FIELD_INLINE float dem_field_falloff(FieldRow row, float rx, float ry, float rz, bool vortex) {
    const float ux = row[4], uy = row[5], uz = row[6];
    const float along = rx * ux + ry * uy + rz * uz;
    const float side = row[13];
    if ((side > 0.0f && along < 0.0f) || (side < 0.0f && along > 0.0f)) return 0.0f;
    float d;
    if (row[12] > 0.5f) {
        if (vortex) {
            const float px = rx - along * ux, py = ry - along * uy, pz = rz - along * uz;
            d = field_sqrt(px * px + py * py + pz * pz);
        } else {
            d = field_abs(along);
        }
    } else {
        d = field_sqrt(rx * rx + ry * ry + rz * rz);
    }
    if (row[11] > 0.0f && d > row[11]) return 0.0f;
    if (d < row[10] || row[9] == 0.0f) return 1.0f;
    return field_pow(1.0f + d - row[10], -row[9]);
}

// The fields of the table at position (x, y, z) [m] for velocity (vx, vy, vz) [m/s], in [m/s²]
// (layout in engine/fields.py, the float64 twin in engine/backends/cpu_fields.py).
FIELD_INLINE float3 dem_field_acceleration(FIELD_SOURCE P, float x, float y, float z, float vx, float vy, float vz) {
    float3 a = field_float3(0.0f, 0.0f, 0.0f);
    for (int f = 0; f < FIELD_COUNT(P); ++f) {
        FieldRow row = FIELD_ROW(P, f);
        const int kind = (int)row[0];
        if (kind == 3) {  // sampled, trilinear
            const int offset = (int)row[1];
            const int nx = (int)row[2], ny = (int)row[3], nz = (int)row[4];
            const float u = (x - row[5]) / (row[8] - row[5]) * (float)(nx - 1);
            const float v = (y - row[6]) / (row[9] - row[6]) * (float)(ny - 1);
            const float w = (z - row[7]) / (row[10] - row[7]) * (float)(nz - 1);
            if (!(u >= 0.0f && v >= 0.0f && w >= 0.0f && u <= nx - 1 && v <= ny - 1 && w <= nz - 1)) continue;
            const int i0 = min((int)u, nx - 2), j0 = min((int)v, ny - 2), k0 = min((int)w, nz - 2);
            const float fu = u - i0, fv = v - j0, fw = w - k0;
            for (int corner = 0; corner < 8; ++corner) {
                const int di = corner >> 2, dj = (corner >> 1) & 1, dk = corner & 1;
                const float weight = (di != 0 ? fu : 1.0f - fu) * (dj != 0 ? fv : 1.0f - fv) *
                                     (dk != 0 ? fw : 1.0f - fw) * row[11];
                const int base = offset + (((i0 + di) * ny + (j0 + dj)) * nz + (k0 + dk)) * 3;
                a.x += weight * FIELD_GRID(P, base);
                a.y += weight * FIELD_GRID(P, base + 1);
                a.z += weight * FIELD_GRID(P, base + 2);
            }
            continue;
        }
        if (kind < 2 || kind > 6) continue;
        float rx = x - row[1], ry = y - row[2], rz = z - row[3];
        const float ux = row[4], uy = row[5], uz = row[6];
        const float falloff = dem_field_falloff(row, rx, ry, rz, kind == 2);
        if (falloff == 0.0f) continue;
        const float s = row[7] * falloff;
        if (kind == 2) {  // vortex
            const int profile = (int)row[15];
            const float cx = uy * rz - uz * ry, cy = uz * rx - ux * rz, cz = ux * ry - uy * rx;  // axis × r
            if (profile == 2) {  // Blender's plane vortex
                a.x += s * s * (uy * cz - uz * cy) + s * cx - vx;
                a.y += s * s * (uz * cx - ux * cz) + s * cy - vy;
                a.z += s * s * (ux * cy - uy * cx) + s * cz - vz;
            } else {
                const float rho = field_sqrt(cx * cx + cy * cy + cz * cz);
                if (rho > 0.0f) {
                    float scale;
                    if (profile == 1) {
                        scale = s * field_sqrt(rx * rx + ry * ry + rz * rz) / rho;
                    } else {
                        const float core = row[8];
                        scale = s * (rho < core ? rho / core : core / rho) / rho;
                    }
                    a.x += scale * cx;
                    a.y += scale * cy;
                    a.z += scale * cz;
                }
            }
        } else if (kind == 4) {  // force
            if (row[12] > 0.5f) {
                const float along = rx * ux + ry * uy + rz * uz;
                rx = along * ux;
                ry = along * uy;
                rz = along * uz;
            }
            const float length = field_sqrt(rx * rx + ry * ry + rz * rz);
            if (length > 0.0f) {
                a.x += s * rx / length;
                a.y += s * ry / length;
                a.z += s * rz / length;
            }
        } else if (kind == 5) {  // wind
            a.x += s * ux;
            a.y += s * uy;
            a.z += s * uz;
        } else {  // turbulence
            const float size = row[8];
            const int seed = (int)row[15];
            const float qx = rx / size, qy = ry / size, qz = rz / size;
            a.x += s * dem_turbulence(qx, qy, qz, 3 * seed);
            a.y += s * dem_turbulence(qy, qz, qx, 3 * seed + 1);
            a.z += s * dem_turbulence(qz, qx, qy, 3 * seed + 2);
        }
        const float flow = row[14] * falloff;
        if (flow != 0.0f) {
            a.x -= flow * vx;
            a.y -= flow * vy;
            a.z -= flow * vz;
        }
    }
    return a;
}
