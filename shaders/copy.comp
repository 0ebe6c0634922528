#version 450
// The bandwidth ceiling the benchmark reports against: a grid-stride copy
// with 16-byte loads and stores, the best a compute shader moves memory.
// Same descriptor layout and push constants as softmax.comp (rows = vec4 count).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { vec4 x[]; };
layout(std430, binding = 1) writeonly buffer Out { vec4 y[]; };
layout(push_constant) uniform Params { uint count; } pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) y[i] = x[i];
}
