//! The gpusight binary: everything lives in the library; this only hands over to it.

fn main() {
    std::process::exit(gpusight::run::main());
}
