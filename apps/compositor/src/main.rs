fn main() {
    eprintln!("composite: not built yet");
    std::process::exit(2);
}
