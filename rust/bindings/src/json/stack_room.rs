//! How much of the current thread's native stack is left.
//!
//! The walk recurses once per open container, and a frame is about a
//! kilobyte in release builds (more in debug builds, less after some
//! inlining changes): a fixed depth limit can only be right for one build and
//! one stack size. Python's recursion limit does not bound the native stack
//! either: a caller may raise it to a million, and a thread started with
//! `threading.stack_size(64 * 1024)` has far less room than the main thread.
//! So deep walks ask the thread itself where its stack ends.
use std::cell::Cell;

/// Room kept free below the deepest container: Python code the walk calls
/// (`items()`, `__iter__`, the error path) and the caller's own frames after
/// the walk returns run in it.
const MARGIN: usize = 256 * 1024;

thread_local! {
    /// The stack's lowest usable address and its size, read once per thread.
    static BOUNDS: Cell<Option<Option<(usize, usize)>>> = const { Cell::new(None) };
}

/// Lowest address and size of this thread's stack, as the C library reports.
#[cfg(target_os = "linux")]
fn read_bounds() -> Option<(usize, usize)> {
    // SAFETY: `attr` is initialised by `pthread_getattr_np` before it is read
    // and destroyed exactly once; both out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (got == 0 && !addr.is_null() && size > 0).then_some((addr as usize, size))
    }
}

#[cfg(not(target_os = "linux"))]
fn read_bounds() -> Option<(usize, usize)> {
    None
}

fn bounds() -> Option<(usize, usize)> {
    BOUNDS.with(|cell| match cell.get() {
        Some(known) => known,
        None => {
            let read = read_bounds();
            cell.set(Some(read));
            read
        }
    })
}

/// False when the stack below the caller's frame is nearer its end than the
/// margin (a quarter of the stack for small thread stacks). True where the
/// bounds cannot be read: the depth limit alone then applies.
#[inline(never)]
pub(crate) fn has_room() -> bool {
    let Some((low, size)) = bounds() else {
        return true;
    };
    let marker = 0u8;
    // The address of a local in this (non-inlined) frame: the stack grows
    // down on every target we build for.
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    let margin = MARGIN.min(size / 4);
    here.saturating_sub(low) > margin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shallow_frame_has_room() {
        assert!(has_room());
    }

    #[test]
    fn a_small_thread_runs_out_before_its_end() {
        // Recurse on a 512 KiB thread until `has_room` says stop: it must say
        // so (the thread would crash otherwise), past the first levels.
        fn dive(level: usize) -> usize {
            let pad = std::hint::black_box([0u8; 4096]);
            if !has_room() {
                return level;
            }
            // Not a tail call: the pad is read after the call returns.
            dive(level + 1) + usize::from(pad[level % 4096])
        }
        let levels = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(|| dive(0))
            .unwrap()
            .join()
            .unwrap();
        assert!((16..128).contains(&levels), "{levels}");
    }
}
