//! The workers' allocator: mimalloc, asked for plain blocks whenever a plain block is aligned
//! enough.
//!
//! The `mimalloc` crate's allocator passes every request through `mi_malloc_aligned`. Its fast
//! path only serves a request from a page that already has a free block; otherwise, for any
//! block size that is not a power of two, it over-allocates by the alignment and takes the slow
//! path. Most of a worker's allocations are such sizes at alignment 8, which every mimalloc
//! block already has, so they are asked for as plain blocks here.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc aligns every block of 16 bytes or more to 16, and every block to 8 (its
/// `MI_MAX_ALIGN_SIZE` and word size), as the system allocator does.
const PLAIN_ALIGN: usize = 16;

/// True when a plain block of `size` bytes is aligned to `align`: a block is at least `size`
/// bytes, so with `align <= size` a request of 16-byte alignment gets a block of 16 bytes or
/// more.
fn plain(align: usize, size: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

/// A worker's global allocator (see the module's comment):
/// `#[global_allocator] static ALLOC: captain_hook::Allocator = captain_hook::Allocator;`.
pub struct Allocator;

// SAFETY: each method forwards to the mimalloc function with the same contract as the
// `GlobalAlloc` method, and asks for the alignment the layout needs, either explicitly or
// through `plain`, whose condition mimalloc's block layout guarantees.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl; `ptr` came from mimalloc.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size and alignment a Rust layout can ask for up to 4 KiB gets a block aligned as
    /// asked, through both paths, and keeps its bytes across a realloc.
    #[test]
    fn blocks_are_aligned_as_asked() {
        let a = Allocator;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (align..=4096).step_by(align) {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; every block is freed once, by this allocator.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xab, size);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0, "zeroed size {size} align {align}");
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, layout);
                    let grown = a.realloc(p, layout, size * 3);
                    assert_eq!(
                        grown as usize % align,
                        0,
                        "realloc size {size} align {align}"
                    );
                    assert!(
                        std::slice::from_raw_parts(grown, size)
                            .iter()
                            .all(|&b| b == 0xab)
                    );
                    a.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                }
            }
        }
    }
}
