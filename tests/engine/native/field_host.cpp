// Host build of dem_field_acceleration (kernels/field_law.h, through kernels/dem_math.cuh) for tests/engine/test_force_fields.py:
// the GPU's float32 field code, run on the CPU, against the numba twin in engine/backends/cpu_fields.py.
#include "cuda_host.h"
#include "dem_math.cuh"

// out (n, 3) [m/s²] at points (n, 6): x, y, z [m], vx, vy, vz [m/s].
extern "C" void dem_field_acceleration_host(const float* table, int field_count, const float* grid,
                                            const float* points, int n, float* out) {
    DemParams P;
    std::memset(&P, 0, sizeof(P));
    P.field_table = table;
    P.field_grid = grid;
    P.field_count = field_count;
    for (int i = 0; i < n; ++i) {
        const float* q = points + 6 * i;
        const float3 a = dem_field_acceleration(P, q[0], q[1], q[2], q[3], q[4], q[5]);
        out[3 * i] = a.x;
        out[3 * i + 1] = a.y;
        out[3 * i + 2] = a.z;
    }
}
