#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// The example host's own shader: the logits of a small linear layer,
// z = W x_r (W: classes x features, one input row x_r per row r), and their
// softmax in the same dispatch through vksoftmax/softmax.glsl: the logits
// are computed where the include loads them and never stored. Class j of
// row r is masked out (-inf) where j % 7 == r % 7, as a host's mask would
// be: masked classes come out exactly 0 (log-softmax: -inf).
layout(local_size_x = 64) in;
// true: each subgroup takes rows (vksm_softmax_subgroup_row); false: the
// workgroup takes each row (vksm_softmax_workgroup_row).
layout(constant_id = 0) const bool SUBGROUP_ROWS = false;
// true: the linear layer alone, its logits stored into the output (the
// unfused baseline of fused_timing.c, which then records vksoftmax on them).
layout(constant_id = 1) const bool LOGITS_ONLY = false;
// true: the logits are the linear layer's; false: a cheap producer, the
// host's scale and per-class bias on scores it already holds (x: rows x
// classes, w: one bias per class), where fusing saves the most.
layout(constant_id = 2) const bool LINEAR_LAYER = true;
// true: the row kept in registers (vksm_softmax_*_row_cached); false: the
// two-pass row functions, each logit computed twice.
layout(constant_id = 3) const bool ROW_CACHED = true;
layout(std430, binding = 0) readonly buffer Weights { float w[]; };  // classes x features
layout(std430, binding = 1) readonly buffer Inputs { float x[]; };   // rows x features
layout(std430, binding = 2) writeonly buffer Outputs { float y[]; }; // rows x classes
layout(push_constant) uniform Params { uint rows, classes, features, log_softmax; } p;

float logit(uint row, uint j) {
    if (j % 7u == row % 7u) return uintBitsToFloat(0xff800000u);  // masked: -inf
    if (!LINEAR_LAYER) return 0.5 * x[row * p.classes + j] + w[j];
    float z = 0.0;
    for (uint k = 0u; k < p.features; ++k) z += w[j * p.features + k] * x[row * p.features + k];
    return z;
}

// Each logit is computed once and kept in registers (up to 32 per
// invocation: rows of 1000 fit 64 invocations, or a subgroup of 32).
#define VKSM_ROW_CACHE 32
#define VKSM_LOAD(row, i) logit(row, i)
#define VKSM_STORE(row, i, v) y[(row) * p.classes + (i)] = (v)
// T = 1 (VKSM_INV_T's default): log-softmax outputs need no guard against
// x - m overflowing.
#define VKSM_LOG_SHIFT_GUARD false
#include "vksoftmax/softmax.glsl"

void main() {
    if (LOGITS_ONLY) {
        for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x)
            for (uint j = gl_LocalInvocationIndex; j < p.classes; j += gl_WorkGroupSize.x) y[row * p.classes + j] = logit(row, j);
        return;
    }
    bool log_softmax = p.log_softmax != 0u;
    if (SUBGROUP_ROWS) {
        for (uint row = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID; row < p.rows;
             row += gl_NumWorkGroups.x * gl_NumSubgroups)
            if (ROW_CACHED) vksm_softmax_subgroup_row_cached(row, p.classes, log_softmax);
            else vksm_softmax_subgroup_row(row, p.classes, log_softmax);
    } else {
        for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x)
            if (ROW_CACHED) vksm_softmax_workgroup_row_cached(row, p.classes, log_softmax);
            else vksm_softmax_workgroup_row(row, p.classes, log_softmax);
    }
}
