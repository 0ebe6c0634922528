#version 450
#extension GL_GOOGLE_include_directive : require
// The bandwidth ceilings the benchmark reports against: a grid-stride pass
// with 16-byte accesses, the best a compute shader moves memory. MODE says
// which: a copy (the ceiling of every case), or, beside it, reads alone or
// writes alone. Where a memory's reads and writes share one bandwidth (the
// H200's HBM from 32 MB on: bench/NOTES.md, v54), the two add up to the
// copy, and a row read whole before its first output is written loses
// nothing to that order.
// Same descriptor layout and push constants as softmax.comp (rows = vec4
// count).
#include "specialization_ids.h"

layout(local_size_x_id = SPEC_ID_WORKGROUP_SIZE) in;
const uint MODE_COPY = 0u, MODE_READ = 1u, MODE_WRITE = 2u;
layout(constant_id = SPEC_ID_COPY_MODE) const uint MODE = MODE_COPY;
layout(std430, binding = 0) readonly buffer In { vec4 x[]; };
layout(std430, binding = 1) writeonly buffer Out { vec4 y[]; };
// never: a word the OR of the input's words never equals (MODE_READ).
layout(push_constant) uniform Params { uint count; uint never; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint seen = 0u;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) {
        if (MODE == MODE_COPY) {
            y[i] = x[i];
        } else if (MODE == MODE_READ) {
            uvec4 b = floatBitsToUint(x[i]);
            seen |= b.x | b.y | b.z | b.w;
        } else {
            // Not zeros, nor one value: some memory systems move those faster.
            y[i] = vec4(uintBitsToFloat(i ^ 0x3f9e0419u));
        }
    }
    // A store no run takes, so that the reads are kept.
    if (MODE == MODE_READ && seen == pc.never) y[gl_GlobalInvocationID.x] = vec4(0.0);
}
