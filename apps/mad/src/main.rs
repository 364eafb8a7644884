fn main() {
    eprintln!("mad: not built yet");
    std::process::exit(2);
}
