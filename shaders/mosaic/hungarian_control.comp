#version 460
// Hungarian method: the state machine's transitions, one invocation, at two points of each
// recorded tick (prime passes, [dual update], [augment, cover]; the prime pass makes its own,
// in its last workgroup):
//   after the dual update: -> prime;
//   after the covers (first stars, or an augmentation): m stars (one a row) -> done; else
//     -> prime.
#include "hungarian_common.glsl"

layout(local_size_x = 1) in;

layout(push_constant) uniform Push {
    uint m;
    uint point;
};

const uint AFTER_DUAL = 1u;
const uint AFTER_COVER = 2u;

void main() {
    uint mode = ctl.mode;
    if (point == AFTER_DUAL && mode == MODE_DUAL) {
        ctl.mode = MODE_PRIME;
        ctl.found = 0u;
    } else if (point == AFTER_COVER && (mode == MODE_START || mode == MODE_AUGMENT)) {
        ctl.mode = ctl.matches == m ? MODE_DONE : MODE_PRIME;
        ctl.matches = 0u;
        ctl.found = 0u;
        ctl.free_row = 0u;
    }
}
