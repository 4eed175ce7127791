//! `hook run <Event> [--async]`.
//!
//! `#![no_main]`: Claude Code starts this binary for every event, and std's `main` wrapper
//! costs a run more than the event's own work in it did (a signal stack mapped and unmapped,
//! a dozen syscalls, pages touched; see `start.rs` and docs/runtime.md "Speed"). The C
//! runtime (musl's, or glibc's) still starts us, so std works as usual; what of std's start-up
//! the client needs is done in [`capt_hook_client::start`].

#![no_main]

#[global_allocator]
static ALLOC: capt_hook_client::alloc::Allocator = capt_hook_client::alloc::Allocator;

/// The C entry point the C runtime calls.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
extern "C" fn main(argc: i32, argv: *const *const std::ffi::c_char) -> i32 {
    capt_hook_client::start::open_std_fds();
    // SAFETY: the C runtime passes argc valid NUL-terminated strings in argv.
    let args = unsafe { capt_hook_client::start::args(argc, argv) };
    // A panic must not unwind out of an `extern "C"` function (that aborts): it ends the
    // client with std's own status for one, after the panic message.
    std::panic::catch_unwind(|| capt_hook_client::run::exit_code(&args)).map_or(101, i32::from)
}
