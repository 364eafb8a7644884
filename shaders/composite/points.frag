#version 460
// Ray-casts the impostor sphere: the eye is at the view-space origin, the ray goes through
// this fragment's point on the quad; misses are discarded, hits write the sphere's depth and
// a diffuse-lit colour (opaque).
layout(push_constant) uniform Push { mat4 view; mat4 proj; };

layout(location = 0) in vec3 v_pos;
layout(location = 1) flat in vec3 v_center;
layout(location = 2) flat in float v_radius;
layout(location = 3) flat in uint v_color;
layout(location = 0) out vec4 out_color;

void main() {
    vec3 dir = normalize(v_pos);
    float b = dot(dir, v_center);
    float disc = b * b - (dot(v_center, v_center) - v_radius * v_radius);
    if (disc < 0.0) discard;
    vec3 hit = (b - sqrt(disc)) * dir;
    vec3 normal = (hit - v_center) / v_radius;
    vec4 clip = proj * vec4(hit, 1.0);
    gl_FragDepth = clip.z / clip.w;
    float light = 0.3 + 0.7 * max(dot(normal, normalize(vec3(-0.4, 0.5, 0.8))), 0.0);
    out_color = vec4(unpackUnorm4x8(v_color).rgb * light, 1.0);
}
