//! The part of std's start-up the `hook` binary still needs, done by hand: the binary is
//! `#![no_main]` (see its `main.rs` for why), so std's own `main` wrapper does not run.
//!
//! What std's wrapper does and this client goes without: a guard stack for the stack-overflow
//! message (a `mmap`, an `mprotect` and, at exit, a `munmap`, whose TLB flush a virtual machine
//! traps), `SIGPIPE` ignored (the host's socket is written with `MSG_NOSIGNAL` anyway; a
//! stdout whose reader has gone ends the client by the signal instead of exit 1, and nobody is
//! reading that answer either way), naming the main thread. What it keeps: descriptors 0 to 2
//! open ([`open_std_fds`]) and the arguments ([`args`]), which std keeps only when its own
//! `main` ran (on musl).

use std::ffi::{CStr, OsStr};
use std::os::fd::IntoRawFd;
use std::os::unix::ffi::OsStrExt;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// Opens /dev/null on whichever of descriptors 0, 1 and 2 is closed, as std's start-up does.
/// Left closed, the first file or socket the client opens would take its number, and a print
/// meant for stderr would go into the host's socket. One `poll` when all three are open.
pub fn open_std_fds() {
    let std_fds = [
        rustix::stdio::stdin(),
        rustix::stdio::stdout(),
        rustix::stdio::stderr(),
    ];
    let mut fds = std_fds.map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::empty()));
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if poll(&mut fds, Some(&now)).is_err() {
        // poll itself failed (not a closed descriptor, which it reports per entry): nothing
        // is known, and std's start-up would abort here; go on with the descriptors as given.
        return;
    }
    for fd in &fds {
        if fd.revents().contains(PollFlags::NVAL) {
            // open() takes the lowest free number: this one, as the lower ones are open by
            // now. The descriptor stays open for the life of the process.
            if let Ok(null) = rustix::fs::open(
                "/dev/null",
                rustix::fs::OFlags::RDWR,
                rustix::fs::Mode::empty(),
            ) {
                let _ = null.into_raw_fd();
            }
        }
    }
}

/// The arguments after the program name, from C's `argv`; one that is not UTF-8 is replaced
/// lossily (it can only be a usage error: every argument `hook` accepts is ASCII).
///
/// # Safety
///
/// `argv` must point to `argc` valid NUL-terminated strings, as the C runtime passes to `main`.
#[allow(unsafe_code)]
pub unsafe fn args(argc: i32, argv: *const *const std::ffi::c_char) -> Vec<String> {
    let count = usize::try_from(argc).unwrap_or(0);
    (1..count)
        .filter_map(|i| {
            // SAFETY: i < argc, and argv holds argc valid pointers (the caller's contract).
            let arg = unsafe { *argv.add(i) };
            if arg.is_null() {
                return None;
            }
            // SAFETY: a non-null argv entry is a NUL-terminated string (the caller's contract).
            let bytes = unsafe { CStr::from_ptr(arg) }.to_bytes();
            Some(OsStr::from_bytes(bytes).to_string_lossy().into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(unsafe_code)]
    fn args_skip_the_program_name_and_keep_the_rest_in_order() {
        let owned = [c"hook", c"run", c"PreToolUse", c"--async"];
        let argv: Vec<*const std::ffi::c_char> = owned.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: four valid C strings.
        let got = unsafe { args(4, argv.as_ptr()) };
        assert_eq!(got, ["run", "PreToolUse", "--async"]);
        // SAFETY: as above; argc 1 is the program alone, 0 nothing at all.
        assert!(unsafe { args(1, argv.as_ptr()) }.is_empty());
        assert!(unsafe { args(0, argv.as_ptr()) }.is_empty());
    }

    #[test]
    fn open_std_fds_leaves_open_descriptors_as_they_are() {
        use std::os::fd::AsRawFd;
        let before = rustix::fs::fstat(rustix::stdio::stderr()).unwrap();
        open_std_fds();
        let after = rustix::fs::fstat(rustix::stdio::stderr()).unwrap();
        assert_eq!((before.st_dev, before.st_ino), (after.st_dev, after.st_ino));
        // Nothing was left open by it: the next descriptor is the same number as before.
        let probe = std::fs::File::open("/dev/null").unwrap();
        let n = probe.as_raw_fd();
        drop(probe);
        open_std_fds();
        let again = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(again.as_raw_fd(), n);
    }
}
