//! `memcpy`, `memmove`, `memcmp` and `bcmp` for the static musl binaries (x86-64 only; empty
//! elsewhere).
//!
//! musl's x86-64 `memcpy` copies with `rep movsq` plus byte loops, and its `memcmp` (which its
//! `bcmp` calls) compares a byte at a time. A worker evaluating an event makes a few hundred
//! short copies and comparisons, and with musl's versions the engine took 1.5x glibc's time per
//! event: a third of it in `memcpy` (issue 15's note). Here copies are one `rep movsb`, which
//! CPUs with fast short string moves (FSRM, ERMS) run at full speed (on older ones it starts up
//! about as slowly as musl's own `rep movsq`; measured only on an FSRM machine), and
//! comparisons go eight bytes at a time.
//!
//! A binary links these by naming the crate (`use capt_hook_mem as _;`): its definitions come
//! before libc in the link, so the linker never takes musl's. `memmove` must come with `memcpy`:
//! musl's `memmove` object calls a helper in its `memcpy` object, which would bring musl's
//! `memcpy` back as a duplicate. Other targets' libc is left alone; the functions below are
//! compiled and tested everywhere.
//!
//! No loop here may be turned back into a call to the function it implements, hence
//! `no_builtins`.

#![cfg(target_arch = "x86_64")]
#![no_builtins]
#![allow(unsafe_code)]

/// Copies `n` bytes from `src` to `dst`, front to back.
///
/// # Safety
/// As `memcpy`, or `memmove` when `dst` lies before `src`: both ranges valid for `n` bytes.
#[inline]
pub unsafe fn copy_forward(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's ranges; the direction flag is clear at every call (the ABI's rule).
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        );
    }
}

/// Copies `n` bytes from `src` to `dst`, back to front, for a `dst` that overlaps the end of
/// `src`.
///
/// # Safety
/// Both ranges valid for `n` bytes.
#[inline]
pub unsafe fn copy_backward(dst: *mut u8, src: *const u8, n: usize) {
    if n == 0 {
        return;
    }
    // SAFETY: the caller's ranges, walked from their last bytes down; the direction flag is
    // cleared again before returning, as the ABI requires.
    unsafe {
        core::arch::asm!(
            "std",
            "rep movsb",
            "cld",
            inout("rcx") n => _,
            inout("rdi") dst.add(n - 1) => _,
            inout("rsi") src.add(n - 1) => _,
            options(nostack)
        );
    }
}

/// `memmove`: a forward copy unless `dst` starts inside `src`.
///
/// # Safety
/// Both ranges valid for `n` bytes.
#[inline]
pub unsafe fn move_bytes(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: forwarded; `dst - src >= n` (wrapping) means no byte is read after it is written.
    unsafe {
        if (dst as usize).wrapping_sub(src as usize) >= n {
            copy_forward(dst, src, n);
        } else {
            copy_backward(dst, src, n);
        }
    }
}

/// `memcmp`: the sign of the first differing byte, as unsigned bytes; 0 when equal.
///
/// # Safety
/// Both ranges valid for reads of `n` bytes.
#[inline]
pub unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    // SAFETY: every read is inside the caller's ranges (`i + 8 <= n`, then `i < n`).
    unsafe {
        while i + 8 <= n {
            let (x, y) = (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            );
            if x != y {
                // Big-endian order makes the first differing byte the most significant.
                return if u64::from_be(x) < u64::from_be(y) {
                    -1
                } else {
                    1
                };
            }
            i += 8;
        }
        while i < n {
            let (x, y) = (*a.add(i), *b.add(i));
            if x != y {
                return i32::from(x) - i32::from(y);
            }
            i += 1;
        }
    }
    0
}

/// `bcmp`: 0 when equal, non-zero otherwise (`compare`, whose ordering only costs a byte swap
/// at the first differing word).
///
/// # Safety
/// Both ranges valid for reads of `n` bytes.
#[inline]
pub unsafe fn differ(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's ranges.
    unsafe { compare(a, b, n) }
}

/// The C symbols, only where they replace musl's.
#[cfg(all(target_env = "musl", target_arch = "x86_64"))]
mod exported {
    /// # Safety
    /// C's `memcpy` contract.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: C's contract, which `copy_forward` needs.
        unsafe { super::copy_forward(dst, src, n) };
        dst
    }

    /// # Safety
    /// C's `memmove` contract.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        // SAFETY: C's contract.
        unsafe { super::move_bytes(dst, src, n) };
        dst
    }

    /// # Safety
    /// C's `memcmp` contract.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: C's contract.
        unsafe { super::compare(a, b, n) }
    }

    /// # Safety
    /// C's `bcmp` contract.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: C's contract.
        unsafe { super::differ(a, b, n) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ at every position, so a misplaced byte shows.
    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn copies_every_length_and_alignment() {
        for n in 0..80 {
            for offset in 0..9 {
                let src = pattern(n + offset, 7);
                let mut dst = vec![0u8; n + 16];
                // SAFETY: both ranges are inside their vectors.
                unsafe { copy_forward(dst.as_mut_ptr().add(3), src.as_ptr().add(offset), n) };
                assert_eq!(
                    &dst[3..3 + n],
                    &src[offset..offset + n],
                    "n={n} offset={offset}"
                );
                assert!(dst[..3].iter().chain(&dst[3 + n..]).all(|&b| b == 0));
            }
        }
        let big = pattern(1 << 16, 3);
        let mut out = vec![0u8; big.len()];
        // SAFETY: equal lengths.
        unsafe { copy_forward(out.as_mut_ptr(), big.as_ptr(), big.len()) };
        assert_eq!(out, big);
    }

    #[test]
    fn moves_overlapping_ranges_both_ways() {
        for n in 0..40 {
            for shift in 0..12usize {
                let start = pattern(64, 1);
                // Destination after the source (a backward copy is needed), then before it.
                let mut buf = start.clone();
                // SAFETY: `shift + n <= 52 < 64`.
                unsafe { move_bytes(buf.as_mut_ptr().add(shift), buf.as_ptr(), n) };
                let mut want = start.clone();
                want.copy_within(0..n, shift);
                assert_eq!(buf, want, "forward overlap n={n} shift={shift}");

                let mut buf = start.clone();
                // SAFETY: as above.
                unsafe { move_bytes(buf.as_mut_ptr(), buf.as_ptr().add(shift), n) };
                let mut want = start;
                want.copy_within(shift..shift + n, 0);
                assert_eq!(buf, want, "backward overlap n={n} shift={shift}");
            }
        }
    }

    #[test]
    fn compares_as_unsigned_bytes_at_the_first_difference() {
        for n in 0..40 {
            let a = pattern(n, 9);
            // SAFETY: same lengths throughout.
            unsafe {
                assert_eq!(compare(a.as_ptr(), a.as_ptr(), n), 0);
                assert_eq!(differ(a.as_ptr(), a.as_ptr(), n), 0);
            }
            for at in 0..n {
                for (x, y) in [(0x01u8, 0xffu8), (0xff, 0x01), (0x7f, 0x80)] {
                    let (mut l, mut r) = (a.clone(), a.clone());
                    l[at] = x;
                    r[at] = y;
                    // A later difference the other way must not decide it.
                    if at + 1 < n {
                        l[n - 1] = y;
                        r[n - 1] = x;
                    }
                    let want = l.cmp(&r) as i32;
                    // SAFETY: same lengths.
                    let (got, diff) = unsafe {
                        (
                            compare(l.as_ptr(), r.as_ptr(), n),
                            differ(l.as_ptr(), r.as_ptr(), n),
                        )
                    };
                    assert_eq!(got.signum(), want, "n={n} at={at} {x:#x} vs {y:#x}");
                    assert_ne!(diff, 0);
                }
            }
        }
    }
}
