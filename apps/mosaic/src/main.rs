fn main() {
    eprintln!("mosaic: not built yet");
    std::process::exit(2);
}
