#version 460
// Start of a reverse stage (and of a phase change), over max(m, n) invocations: lambda[0] =
// the lowest price of an assigned column (atomicMin on the bits of non-negative floats; the
// host sets it to NONE before), and each assigned row's value w[i] = d[i][c] + price[c] on
// its column c. The reverse rounds keep both up to date from there.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Distances { float d[]; };
layout(set = 0, binding = 1) readonly buffer Prices { float price[]; };
layout(set = 0, binding = 2) readonly buffer Owner { uint owner[]; };
layout(set = 0, binding = 3) readonly buffer Col4Row { uint col4row[]; };
layout(set = 0, binding = 4) writeonly buffer Value { float w[]; };
layout(set = 0, binding = 5) buffer Lambda { uint lambda[2]; };
// The first reverse round's count of columns above lambda, zeroed here for it.
layout(set = 0, binding = 6) writeonly buffer Above { uint above[2]; };
layout(push_constant) uniform Push {
    uint m;
    uint n;
};

const uint NONE = 0xffffffffu;

void main() {
    uint x = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (x == 0u) above[0] = 0u;
    if (x < n && owner[x] != NONE) atomicMin(lambda[0], floatBitsToUint(price[x]));
    uint c = x < m ? col4row[x] : NONE;
    if (c != NONE) {
        precise float value = d[x * n + c] + price[c];
        w[x] = value;
    }
}
