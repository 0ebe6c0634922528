#version 450
// The example host's own work before the softmax: logits x[i] = 6 sin(0.731 i) + (i % 5).
layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer X { float x[]; };
layout(push_constant) uniform P { uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) x[i] = 6.0 * sin(0.731 * float(i)) + float(i % 5u);
}
