#version 460
// Impostor spheres: one instance per point, drawn as a camera-facing quad (two triangles,
// six vertices) through the sphere's centre; points.frag ray-casts the sphere inside it.
layout(set = 0, binding = 0) readonly buffer Points { vec4 points[]; };  // xyz centre, w radius
layout(set = 0, binding = 1) readonly buffer Colors { uint colors[]; };  // RGBA8, R low
layout(push_constant) uniform Push { mat4 view; mat4 proj; };

layout(location = 0) out vec3 v_pos;
layout(location = 1) flat out vec3 v_center;
layout(location = 2) flat out float v_radius;
layout(location = 3) flat out uint v_color;

const vec2 CORNERS[6] = vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1), vec2(-1, -1), vec2(1, 1), vec2(-1, 1));

void main() {
    vec4 point = points[gl_InstanceIndex];
    vec3 center = (view * vec4(point.xyz, 1.0)).xyz;
    // Under perspective the silhouette is wider than the radius at the centre plane; the
    // 1.5x margin covers it for spheres more than about 1.2 radii from the eye.
    vec3 pos = center + vec3(CORNERS[gl_VertexIndex] * point.w * 1.5, 0.0);
    v_pos = pos;
    v_center = center;
    v_radius = point.w;
    v_color = colors[gl_InstanceIndex];
    gl_Position = proj * vec4(pos, 1.0);
}
