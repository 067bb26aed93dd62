// Launch-parameter structs shared by the host (engine/backends/gpu_params.py mirrors them as numpy
// dtypes; tests/engine/test_kernels_compile.py checks sizes and offsets) and every kernel in kernels/.
//
// Particles live in "slot" order on the device: the backends reorder them along a Morton curve at
// rebuilds and keep slot_to_model to hand states back in the model's order.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <vector_types.h>
#endif

// Springs a particle's row holds (DemParams::springs).
#ifndef DEM_SPRING_SLOTS
#define DEM_SPRING_SLOTS 16
#endif

// Bits of DemParams::info[slot].
#define DEM_INFO_ACTIVE 1u
#define DEM_INFO_MATERIAL_SHIFT 8

// The layout of a row of DemParams::clump_body (DEM_CLUMP_*), shared with the Slang kernels.
#include "clump_layout.h"

// DemParams::integrator.
#define DEM_INTEGRATOR_EULER 0   // semi-implicit Euler: v ← v + a dt, x ← x + v dt (the paper's)
#define DEM_INTEGRATOR_VERLET 1  // velocity Verlet, LAMMPS fix nve/sphere order (two half-kicks)

// Entries of DemParams::diag (int32), written by the integrator, read by get_state().
#define DEM_DIAG_FIRST_NAN_STEP 0   // first step (1-based, after the update) with a NaN; INT_MAX if none
#define DEM_DIAG_FIRST_FAST_STEP 1  // first step with a speed above the limit; INT_MAX if none
#define DEM_DIAG_MAX_SPEED2 2       // largest speed² seen, as the bits of a non-negative float
#define DEM_DIAG_SPRING_OVERFLOW 3  // contacts whose spring did not fit in their owner's row (kept none)
#define DEM_DIAG_COUNT 4

// Everything the contact, field and integration code reads; uploaded once per set_state.
struct DemParams {
    float4* pos;                // (n,) x, y, z [m], w = radius [m]
    float4* vel;                // (n,) vx, vy, vz [m/s], w = mass [kg]
    float4* force;              // (n,) contact force fx, fy, fz [N], w unused
    unsigned int* info;         // (n,) DEM_INFO_ACTIVE | material << DEM_INFO_MATERIAL_SHIFT
    const float* beta;          // (M, M) normal damping ratio per material pair
    const float* mu;            // (M, M) friction coefficient per material pair
    const float* wall_beta;     // (M,)
    const float* wall_mu;       // (M,)
    const float* field_table;   // (F, 16) engine.fields.pack_fields layout
    const float* field_grid;    // sampled fields' vectors
    int* diag;                  // (DEM_DIAG_COUNT,)
    double lo[3];               // domain lower corner [m]
    double hi[3];               // domain upper corner [m]
    float stiffness;            // [N/m]
    float dt;                   // [s]
    float speed_limit2;         // [m²/s²]
    int particle_count;
    int material_count;
    int field_count;
    int wall_mask;              // bit s set when side s (engine.model.SIDES order) has a wall
    float cell_size;            // grid cell edge [m] (CUDA grid backend)
    float inv_cell_size;        // [1/m]
    unsigned int table_mask;    // bucket count − 1 = 2^(grid_bits_x + grid_bits_y + grid_bits_z) − 1
    unsigned int grid_bits_x;   // bits of a cell's bucket along x (cells repeat every 2^grid_bits_x)
    unsigned int grid_bits_y;
    unsigned int grid_bits_z;
    // Tangential springs (friction_model 'spring'), kept by model index so that reordering the slots
    // never moves them. A pair's spring lives in its owner's row (dem_owns: the smaller sphere, the
    // smaller model index on ties), as seen from the owner.
    float4* springs;            // (2, n, DEM_SPRING_SLOTS): xyz [m], w = partner's model index as int bits
                                // (−1 ends a row); the step reads half *spring_parity, writes the other
    float4* wall_springs;       // (n, 6) spring of each wall side [m], w unused; zero without contact
    const int* slot_to_model;   // (n,) model index of every slot
    int* spring_parity;         // (1,) flipped after every step's contact forces
    int spring_model;           // 1: tangential spring with history; 0: history-free damper
    float tangential_ratio;     // k_t / k (engine.contact_law.TANGENTIAL_STIFFNESS_RATIO)
    // Rotation, rolling resistance, cohesion and velocity Verlet (issue 16; docs/physics.md). With
    // rotation 0, integrator 0 and no rolling or cohesion the kernels run the non-rotating law exactly
    // as before (the paper's model), and none of these arrays is read.
    float4* omega;              // (n,) angular velocity ωx, ωy, ωz [rad/s], w = moment of inertia 2/5 m r² [kg m²]
    float4* torque;             // (n,) contact torque [N m], w unused (written with the forces)
    float4* orientation;        // (n,) unit quaternion (w, x, y, z) in x, y, z, w
    float4* accel;              // (n,) Verlet: acceleration of the last force evaluation [m/s²], w unused
    float4* alpha;              // (n,) Verlet: angular acceleration of the last evaluation [rad/s²], w unused
    float4* rolling;            // (2, n, DEM_SPRING_SLOTS) rolling history ξ_r [m] of the pair whose spring
                                // has the same index in springs (the same from both sides), w unused
    float4* wall_rolling;       // (n, 6) rolling history of each wall side [m], w unused
    const float* rolling_mu;    // (M, M) rolling friction coefficient per material pair
    const float* cohesion;      // (M, M) cohesion energy density per material pair [Pa]
    const float* wall_rolling_mu;  // (M,)
    const float* wall_cohesion;    // (M,) [Pa]
    const float* history_dt;    // (1,) time step of the histories' update in this pass [s]: dt, or 0 in the
                                // pass that primes velocity Verlet's accelerations (as the CPU backend)
    // Glue bonds (engine.bonds; parallel bonds that break for good), by model index like the springs.
    const int* model_to_slot;   // (n,) slot of every model index (the inverse of slot_to_model)
    const int* bond_start;      // (n + 1,) each model index's entries in bond_other and bond_index
    const int* bond_other;      // (2B,) the other grain (model index) of each entry (engine.bonds.bond_rows)
    const int* bond_index;      // (2B,) the bond of each entry
    const int2* bond_pairs;     // (B,) (i, j) model indices, i < j (engine.bonds.Bonds.pairs)
    const double* bond_props;   // (B, 4) rest length d0 [m], area A_b [m²], k_bn [N/m³], strength σ_b [Pa]
    float4* bond_state;         // (2, B) shear ξ_b [m] as seen from pair i in xyz, w = 1 intact, 0 broken; a
                                // step reads half *spring_parity, and grain i of each pair writes the other
    // Rigid clumps (engine.bonds.Clumps), by model index; body state in double as the CPU keeps it.
    const int* clump_of;        // (n,) clump of each model index, −1 for none
    const int* clump_start;     // (C + 1,) each clump's members in clump_members
    const int* clump_members;   // (M,) model indices
    const double* clump_offset; // (n, 3) member offset from its clump's centre of mass, body frame [m]
    const double* clump_mass;   // (C,) [kg]
    const double* clump_inertia_inv;  // (C, 3, 3) inverse inertia tensor about the centre, body frame
    double* clump_body;         // (C, DEM_CLUMP_BODY): centre X [m], velocity V [m/s], angular momentum L
                                // [kg m²/s], orientation q (w, x, y, z), force and torque sums of the last pass
    int rotation;               // 1: grains rotate (torques, ω, orientations); 0: the paper's model
    int integrator;             // DEM_INTEGRATOR_EULER or DEM_INTEGRATOR_VERLET
    int rolling_model;          // 1: some pair or wall has rolling friction (rolling history kept)
    int cohesion_model;         // 1: some pair or wall has cohesion
    int bond_count;             // B, 0 without glue bonds
    int clump_count;            // C, 0 without rigid clumps
};

// OptiX launch parameters (kernels/optix_dem.cu, pipelineLaunchParamsVariableName "params").
struct OptixDemParams {
    DemParams dem;
    unsigned long long handle;  // OptixTraversableHandle of the GAS
    int2* pairs;                // mode 1: contact pairs out (slots)
    unsigned int* pair_count;   // mode 1: pairs found (may exceed pair_capacity)
    unsigned int pair_capacity;
    int mode;                   // 0: accumulate contact forces, 1: list contact pairs
    float ray_tmax;             // length of the point rays [m]
    int pad;
};

// One triangle-mesh collider on the device (kernels/colliders.cu; engine/backends/gpu_colliders.py).
// The tree is engine.packing.bvh's flat layout, built and refit on the host (engine.colliders.tree)
// and uploaded with the vertices whenever the collider moves.
struct ColliderParams {
    const double* vertices;         // (V, 3) world positions at the current time [m]
    const double* vertex_velocity;  // (V, 3) [m/s]
    const double* displacement;     // (V, 3) motion over the last step [m] (swept test)
    const int* triangles;           // (T, 3) vertex indices
    const int* order;               // (T,) triangles in leaf order
    const double* box_lo;           // (nodes, 3) node boxes [m]
    const double* box_hi;           // (nodes, 3)
    const int* left;                // (nodes,) first child (the second follows it), −1 at a leaf
    const int* start;               // (nodes,) a leaf's first entry in order
    const int* count;               // (nodes,) a leaf's triangle count
    const double* beta;             // (M,) damping ratio of each material against this collider
    const double* mu;               // (M,) friction coefficient
    const double* restitution;      // (M,) restitution (swept test)
    const float4* old_pos;          // (n,) centres before the step, w = radius (swept test)
    unsigned int* corrections;      // swept-test corrections so far (one counter)
    // Tangential and rolling springs of the contacts with this collider (friction_model 'spring', or
    // rolling resistance), by model index (DemParams::slot_to_model) so that reordering the slots never
    // moves them; each grain's row is read and written by its own thread only. Null without either.
    double* springs;                // (n, COLLIDER_MAX_CONTACTS, 6) ξ (0–2) and ξ_r (3–5) of each slot [m]
    double* normals;                // (n, COLLIDER_MAX_CONTACTS, 3) unit normal it was last used with
    int* contact_count;             // (n,) slots in use
    const double* roll;             // (M,) rolling coefficient μ_r (zero without rotation)
    const double* cohesion;         // (M,) SJKR cohesion c [Pa]
    double half_thickness;          // thickness / 2 [m]
    double stiffness;               // normal stiffness k [N/m], in double as the CPU reference uses it
    double dt;                      // time step [s] (the springs' integration), in double as the CPU
    double tangential_ratio;        // k_t / k (engine.contact_law.TANGENTIAL_STIFFNESS_RATIO)
    int spring_model;               // 1: tangential springs with history; 0: history-free 'damper'
    int rolling_model;              // 1: some μ_r > 0 (rolling springs kept in springs[3..5] of a slot)
};

// OptiX launch parameters of the collider program (kernels/optix_colliders.cu, "params"): one launch
// per collider and phase, over every slot.
struct OptixColliderParams {
    DemParams dem;
    ColliderParams collider;
    unsigned long long handle;  // GAS of the collider's triangles as custom primitives (widened boxes)
    double* force_sum;          // (n, 3) mode 0: each collider's force sum is added here [N]
    float ray_tmax;             // length of the point rays [m]
    int mode;                   // 0: contact forces, 1: swept test
    double* torque_sum;         // (n, 3) mode 0 with rotation: each collider's torque sum is added here [N m]
};
