#version 460
// Triangle meshes pulled from a storage buffer (three vertices per triangle, no index
// buffer).
struct Vertex {
    vec3 pos;
    uint color;  // RGBA8, R low
    vec3 normal;
    float pad;
};
layout(set = 0, binding = 0) readonly buffer Vertices { Vertex vertices[]; };
layout(push_constant) uniform Push { mat4 view; mat4 proj; };

layout(location = 0) out vec3 v_normal;
layout(location = 1) flat out uint v_color;

void main() {
    Vertex v = vertices[gl_VertexIndex];
    v_normal = mat3(view) * v.normal;
    v_color = v.color;
    gl_Position = proj * view * vec4(v.pos, 1.0);
}
