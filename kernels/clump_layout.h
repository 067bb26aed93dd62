// Layout of a rigid body's row of doubles (DemParams::clump_body in CUDA, g_clump_body in Slang; the host
// writes it in engine/backends/gpu_params.py clump_bodies and reads it as CLUMP_HISTORY): centre X [m] (local
// frame), velocity V [m/s], angular momentum L [kg m²/s], orientation q (w, x, y, z), the last pass's force
// [N] and torque [N m] sums. Plain defines, so CUDA C++ (kernels/dem_params.h) and Slang
// (kernels/clump_law.h) include the same file.
#pragma once

#define DEM_CLUMP_CENTRE 0
#define DEM_CLUMP_VELOCITY 3
#define DEM_CLUMP_MOMENTUM 6
#define DEM_CLUMP_ORIENTATION 9
#define DEM_CLUMP_FORCE 13
#define DEM_CLUMP_TORQUE 16
#define DEM_CLUMP_BODY 19
