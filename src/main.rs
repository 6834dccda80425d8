fn main() {
    std::process::exit(pfsck::cli::main());
}
