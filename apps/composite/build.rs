fn main() {
    shader_build::compile_dir("composite");
}
