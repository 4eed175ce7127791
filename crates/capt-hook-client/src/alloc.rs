//! The client's allocator: a bump arena in the binary's zeroed data, the system allocator past
//! it.
//!
//! A client lives for one event and allocates a few kilobytes. musl's allocator maps a fresh
//! page for each size class it touches and unmaps it when the class empties, about ten
//! `mmap`/`munmap` calls per run; each `munmap` flushes the TLB, which a virtual machine traps.
//! Serving the event from memory that is never handed back took about a fifth off the
//! client's CPU time per run (issue 15's note). Nothing in the arena is reused (the process
//! exits first); a payload too large for it, and anything after it is full, comes from the
//! system allocator and is freed as usual.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

use static_alloc::Bump;

/// Room for an ordinary event several times over (payload, request, frame, reply).
const ARENA_BYTES: usize = 1 << 20;

static ARENA: Bump<[u8; ARENA_BYTES]> = Bump::uninit();

/// True when `ptr` was handed out by the arena (its storage lies inside the static).
fn in_arena(ptr: *mut u8) -> bool {
    let start = std::ptr::addr_of!(ARENA) as usize;
    (start..start + size_of_val(&ARENA)).contains(&(ptr as usize))
}

/// The `hook` binary's global allocator (see the module's comment).
pub struct Allocator;

// SAFETY: a block is freed or resized by the allocator that made it, told apart by its
// address; the arena never frees (its blocks live until exit), and a block moved out of a full
// arena is copied before the system allocator's block is returned.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on unchanged.
        unsafe {
            let block = GlobalAlloc::alloc(&ARENA, layout);
            if block.is_null() {
                System.alloc(layout)
            } else {
                block
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !in_arena(ptr) {
            // SAFETY: not the arena's, so the system allocator made it with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's block and sizes; a moved block is copied within both sizes.
        unsafe {
            if !in_arena(ptr) {
                return System.realloc(ptr, layout, new_size);
            }
            let block = GlobalAlloc::realloc(&ARENA, ptr, layout, new_size);
            if !block.is_null() {
                return block;
            }
            // The arena is full: the block moves to the system allocator.
            let moved = System.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
            if !moved.is_null() {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
            }
            moved
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills the arena with blocks, then checks that allocation goes on past it, that a block
    /// moved out of the full arena keeps its bytes, and that the system's blocks are freed.
    #[test]
    fn past_a_full_arena_blocks_come_from_the_system_with_their_bytes() {
        let page = Layout::from_size_align(4096, 8).unwrap();
        let a = Allocator;
        let mut from_arena = Vec::new();
        // SAFETY: every block is used within its layout and freed with it.
        unsafe {
            let last = loop {
                let block = a.alloc(page);
                assert!(!block.is_null());
                block.write_bytes(0xa5, page.size());
                if !in_arena(block) {
                    break block;
                }
                from_arena.push(block);
                assert!(
                    from_arena.len() <= ARENA_BYTES / page.size(),
                    "arena never filled"
                );
            };
            assert!(from_arena.len() >= ARENA_BYTES / page.size() - 1);
            // Every arena block is its own: the fill of one never overlaps another.
            for (i, block) in from_arena.iter().enumerate() {
                block.write(i as u8);
            }
            for (i, block) in from_arena.iter().enumerate() {
                assert_eq!(block.read(), i as u8);
            }
            // A block in the full arena grows by moving to the system allocator.
            let grown = a.realloc(from_arena[0], page, 3 * page.size());
            assert!(!grown.is_null() && !in_arena(grown));
            assert_eq!(grown.read(), 0);
            assert_eq!(grown.add(page.size() - 1).read(), 0xa5);
            a.dealloc(grown, Layout::from_size_align(3 * page.size(), 8).unwrap());
            // A system block resizes and frees through the system allocator.
            let bigger = a.realloc(last, page, 2 * page.size());
            assert_eq!(bigger.add(page.size() - 1).read(), 0xa5);
            a.dealloc(bigger, Layout::from_size_align(2 * page.size(), 8).unwrap());
            for block in from_arena.into_iter().skip(1) {
                a.dealloc(block, page);
            }
        }
    }
}
