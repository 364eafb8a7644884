fn main() {
    eprintln!("lightfield: not built yet");
    std::process::exit(2);
}
