#version 460
// Two-sided diffuse lighting of mesh triangles (OBJ windings vary), opaque.
layout(location = 0) in vec3 v_normal;
layout(location = 1) flat in uint v_color;
layout(location = 0) out vec4 out_color;

void main() {
    float len = length(v_normal);
    vec3 n = len > 0.0 ? v_normal / len : vec3(0.0, 0.0, 1.0);
    float light = 0.3 + 0.7 * abs(dot(n, normalize(vec3(-0.4, 0.5, 0.8))));
    out_color = vec4(unpackUnorm4x8(v_color).rgb * light, 1.0);
}
