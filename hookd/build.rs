//! Links the host as a position-dependent executable on Linux.
//!
//! Why: every cold start runs the client, then the host, then a worker, one after the other.
//! A position-independent executable makes the loader apply each relative relocation (some
//! 13,000 here, 28,000 in the worker) on every start, touching and copying the pages they sit
//! in. Linking at fixed addresses removes that work. The cost: these two executables' own code
//! is not address-randomised (their libraries, heap and stack still are).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
