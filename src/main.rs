//! The `tao-k8s` command: parse the command line, run, map the outcome to an exit code.

mod cli;

// Lint and render build a spanned tree of many small strings and vectors and drop it per
// document: allocation is a quarter of a lint's instructions with the system allocator.
#[global_allocator]
static ALLOCATOR: Allocator = Allocator;

/// mimalloc, asked for plain blocks where their alignment serves: `mi_malloc` returns blocks
/// aligned to 16 bytes from 16 bytes on (8 below), as `malloc` must, so a layout of at most
/// that alignment and no smaller than it takes the unaligned path, which is half the
/// instructions of `mi_malloc_aligned` (the `mimalloc` crate calls the aligned functions for
/// every layout). Other layouts go to the aligned functions, as the crate sends them.
struct Allocator;

/// The alignment every `mi_malloc` block of at least this size has (`MI_MAX_ALIGN_SIZE`).
const PLAIN_ALIGN: usize = 16;

fn plain(layout: std::alloc::Layout) -> bool {
    layout.align() <= PLAIN_ALIGN && layout.align() <= layout.size()
}

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks of both
// kinds); a block is handed out only with the alignment its layout asks for (see `plain`).
unsafe impl std::alloc::GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: FFI calls with a non-zero size (GlobalAlloc's contract).
        unsafe {
            if plain(layout) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: as `alloc`.
        unsafe {
            if plain(layout) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator, hence from mimalloc.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        use libmimalloc_sys as mi;
        // SAFETY: `ptr` came from this allocator; the new layout has `layout`'s alignment.
        unsafe {
            match std::alloc::Layout::from_size_align(size, layout.align()) {
                Ok(new) if plain(new) => mi::mi_realloc(ptr.cast(), size).cast(),
                _ => mi::mi_realloc_aligned(ptr.cast(), size, layout.align()).cast(),
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    cli::run()
}
