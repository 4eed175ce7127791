//! Links the worker as a position-dependent executable on Linux (why, and what it costs: `hookd/build.rs`).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        // Why: a PIE of this size carries ~28,000 relative relocations that the loader applies,
        // page by page, on every start; fixed addresses cut the worker's start-up CPU by a
        // third (measured in issue 15's note).
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
