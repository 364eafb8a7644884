fn main() {
    eprintln!("smoe: not built yet");
    std::process::exit(2);
}
