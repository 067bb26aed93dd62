// The slab test the host builds use to emulate an OptiX traversal (collider_host.cpp and
// optix_emulated/optix.h): which primitive boxes a ray segment meets.
#pragma once

// The segment origin + s·direction, s in [0, tmax], meets the box (lo xyz, hi xyz) (slab test, in double).
static inline bool segment_meets_box(const double* origin, const double* direction, double tmax, const float* box) {
    double enter = 0.0, leave = tmax;
    for (int axis = 0; axis < 3; ++axis) {
        const double lo = box[axis], hi = box[3 + axis];
        if (direction[axis] == 0.0) {
            if (origin[axis] < lo || origin[axis] > hi) return false;
            continue;
        }
        double t0 = (lo - origin[axis]) / direction[axis], t1 = (hi - origin[axis]) / direction[axis];
        if (t0 > t1) {
            const double swap = t0;
            t0 = t1;
            t1 = swap;
        }
        enter = t0 > enter ? t0 : enter;
        leave = t1 < leave ? t1 : leave;
        if (enter > leave) return false;
    }
    return true;
}
