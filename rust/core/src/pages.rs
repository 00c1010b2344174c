//! Fresh memory faulted in ahead of the code that writes it.
//!
//! A large output written into a fresh mapping costs the kernel one page
//! fault per 4 KiB, each zeroing and accounting a page: for a 13 MB JSON text
//! about a fifth of the whole write. [`prefault`] asks for a range of pages in
//! one call (`MADV_POPULATE_WRITE`, Linux 5.14+), which spares the trap per
//! page; [`Faulter`] goes further and makes that call from a second thread,
//! a little ahead of the writer, so that on a machine with a core to spare
//! the writer finds its pages ready and the kernel's work is off its path.
//!
//! Both are hints: they never change the memory's contents, and where they
//! are unavailable (another OS, an old kernel, one core, a thread that cannot
//! start) the writer faults its pages in as it always would.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod os {
    use std::ffi::{c_int, c_long, c_void};
    use std::sync::atomic::{AtomicUsize, Ordering};

    extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        fn mincore(addr: *mut c_void, len: usize, vec: *mut u8) -> c_int;
        fn sysconf(name: c_int) -> c_long;
        fn getpid() -> c_int;
    }
    const MADV_POPULATE_WRITE: c_int = 23;
    const SC_PAGESIZE: c_int = 30;

    /// The page size, or `None` if the system reports none that makes sense.
    pub fn page_size() -> Option<usize> {
        static PAGE: AtomicUsize = AtomicUsize::new(0);
        let mut page = PAGE.load(Ordering::Relaxed);
        if page == 0 {
            // SAFETY: sysconf has no preconditions.
            page = usize::try_from(unsafe { sysconf(SC_PAGESIZE) }).unwrap_or(0);
            if !page.is_power_of_two() {
                return None;
            }
            PAGE.store(page, Ordering::Relaxed);
        }
        Some(page)
    }

    /// Whether the page at `page` (aligned) is backed.
    ///
    /// # Safety
    /// The page must belong to a live mapping of the caller.
    pub unsafe fn resident(page: usize, size: usize) -> bool {
        let mut flag = 0u8;
        mincore(page as *mut c_void, size, &mut flag) == 0 && flag & 1 == 1
    }

    /// Fault in the pages `[first, last)` (aligned) for writing; `false` if refused.
    ///
    /// # Safety
    /// The pages must belong to a live mapping of the caller.
    pub unsafe fn populate(first: usize, last: usize) -> bool {
        madvise(first as *mut c_void, last - first, MADV_POPULATE_WRITE) == 0
    }

    pub fn process_id() -> i32 {
        // SAFETY: getpid has no preconditions.
        unsafe { getpid() }
    }

    pub const AVAILABLE: bool = true;
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod os {
    pub fn page_size() -> Option<usize> {
        None
    }
    pub unsafe fn resident(_page: usize, _size: usize) -> bool {
        true
    }
    pub unsafe fn populate(_first: usize, _last: usize) -> bool {
        false
    }
    pub fn process_id() -> i32 {
        0
    }
    pub const AVAILABLE: bool = false;
}

/// The whole pages of `[start, end)`: from the page holding `start` to the
/// last page that ends inside the range, so that every page named holds
/// bytes of the range (and so belongs to the caller's allocation).
fn pages_of(start: *mut u8, end: *mut u8) -> Option<(usize, usize, usize)> {
    let page = os::page_size()?;
    let first = start as usize & !(page - 1);
    let last = end as usize & !(page - 1);
    (last > first).then_some((first, last, page))
}

/// Fault in, for writing, the pages of `[start, end)` (see [`pages_of`]),
/// unless the last of them is already backed.
///
/// Memory an allocator hands out again is mostly still backed, and populating
/// backed pages still costs a walk of them: where the range's last page is
/// there, so (nearly always) is the rest.
///
/// # Safety
/// `[start, end)` must lie inside one live allocation of the caller.
pub unsafe fn prefault(start: *mut u8, end: *mut u8) {
    if let Some((first, last, page)) = pages_of(start, end) {
        if !os::resident(last - page, page) {
            os::populate(first, last);
        }
    }
}

/// Whether the page holding `at` is backed (`true` where that cannot be told).
///
/// # Safety
/// `at` must point into a live allocation of the caller.
pub unsafe fn is_backed(at: *mut u8) -> bool {
    match os::page_size() {
        Some(page) => os::resident(at as usize & !(page - 1), page),
        None => true,
    }
}

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Pages populated per call of the helper thread: small enough that stopping
/// it waits little, large enough that the calls are few.
const CHUNK: usize = 256 << 10;

/// What the writer and its helper share.
struct Shared {
    /// Set when the helper must stop (the buffer is about to move or be freed).
    stop: AtomicBool,
    /// The address the writer has reached.
    written: AtomicUsize,
}

/// A thread faulting in one buffer's pages ahead of its writer, never more
/// than a set distance ahead (pages faulted in past the end of what is
/// written are memory held for nothing until the buffer is trimmed).
///
/// Dropping it stops the thread and waits for it, which takes at most one
/// [`CHUNK`]'s population: the buffer must not move or be freed before.
pub struct Faulter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process that started the thread (a forked child has no such thread).
    owner: i32,
}

impl Faulter {
    /// Start faulting in `[start, end)` for writing, at most `ahead` bytes past
    /// the writer (at `start` now; see [`Faulter::progress`]). `None` where
    /// it cannot help or cannot start: no page population on this system, a
    /// single core, a range of less than two chunks, no thread to be had.
    ///
    /// # Safety
    /// `[start, end)` must lie inside one live allocation of the caller,
    /// which must not move or be freed before the `Faulter` is dropped.
    pub unsafe fn start(start: *mut u8, end: *mut u8, ahead: usize) -> Option<Faulter> {
        if !os::AVAILABLE || !crate::helper::spare_core() {
            return None;
        }
        let (first, last, _) = pages_of(start, end)?;
        if last - first < 2 * CHUNK {
            return None;
        }
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            written: AtomicUsize::new(start as usize),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("strands-offload-prefault".into())
            .stack_size(64 << 10)
            .spawn(move || run(&theirs, first, last, ahead))
            .ok()?;
        Some(Faulter {
            shared,
            thread: Some(thread),
            owner: os::process_id(),
        })
    }

    /// Tell the helper the writer has reached `at`.
    pub fn progress(&self, at: *mut u8) {
        self.shared.written.store(at as usize, Ordering::Release);
        if let Some(thread) = &self.thread {
            thread.thread().unpark();
        }
    }
}

/// The helper's loop: populate chunk after chunk, waiting while it is
/// `ahead` bytes past the writer, until the range ends, it is told to stop,
/// or the kernel refuses.
fn run(shared: &Shared, first: usize, last: usize, ahead: usize) {
    let mut at = first;
    while at < last && !shared.stop.load(Ordering::Acquire) {
        if at >= shared.written.load(Ordering::Acquire).saturating_add(ahead) {
            // Woken by the writer's next progress, or by the stop; the timeout
            // only bounds a wake-up missed between the load and the park.
            std::thread::park_timeout(Duration::from_millis(2));
            continue;
        }
        let upto = last.min(at + CHUNK);
        // SAFETY: the range lies in the writer's allocation, which stays in
        // place until the writer has stopped and joined this thread.
        if !unsafe { os::populate(at, upto) } {
            return;
        }
        at = upto;
    }
}

impl Drop for Faulter {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            if os::process_id() == self.owner {
                thread.thread().unpark();
                // The helper does not panic; a join error would only mean it had ended.
                let _ = thread.join();
            }
            // In a forked child the thread does not exist: nothing to wait for.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh anonymous mapping of `len` bytes (a large zeroed allocation
    /// comes straight from the kernel, its pages not yet backed).
    fn fresh(len: usize) -> Vec<u8> {
        vec![0u8; len]
    }

    #[test]
    fn prefault_backs_the_pages_and_keeps_the_contents() {
        let mut buf = fresh(4 << 20);
        let range = buf.as_mut_ptr_range();
        unsafe { prefault(range.start, range.end) };
        assert!(buf.iter().all(|&b| b == 0));
        if os::AVAILABLE {
            let page = os::page_size().unwrap();
            let inside = buf.as_mut_ptr().wrapping_add(2 * page + 7);
            assert!(unsafe { is_backed(inside) });
        }
    }

    #[test]
    fn the_helper_follows_the_writer_and_stops_on_drop() {
        let len = 8 << 20;
        let mut buf = fresh(len);
        let start = buf.as_mut_ptr();
        let faulter = unsafe { Faulter::start(start, start.wrapping_add(len), 1 << 20) };
        for offset in (0..len).step_by(64 << 10) {
            buf[offset..offset + 64].fill(7);
            if let Some(f) = &faulter {
                f.progress(start.wrapping_add(offset));
            }
        }
        drop(faulter);
        // Every byte written is there; every other is still zero.
        for (offset, chunk) in buf.chunks(64 << 10).enumerate() {
            assert!(chunk[..64].iter().all(|&b| b == 7), "chunk {offset}");
            assert!(chunk[64..].iter().all(|&b| b == 0), "chunk {offset}");
        }
    }

    /// An anonymous private mapping, straight from the kernel: none of its pages backed yet
    /// (a large `Vec` may come from a heap whose pages an earlier test already backed).
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    struct Mapping {
        start: *mut u8,
        len: usize,
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    impl Mapping {
        fn new(len: usize) -> Mapping {
            use std::ffi::{c_int, c_long, c_void};
            extern "C" {
                fn mmap(
                    addr: *mut c_void,
                    len: usize,
                    prot: c_int,
                    flags: c_int,
                    fd: c_int,
                    offset: c_long,
                ) -> *mut c_void;
            }
            const PROT_READ_WRITE: c_int = 0x1 | 0x2;
            const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
            // SAFETY: a new anonymous mapping; failure is checked below.
            let start = unsafe {
                mmap(
                    std::ptr::null_mut(),
                    len,
                    PROT_READ_WRITE,
                    MAP_PRIVATE_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert!(start as isize != -1, "mmap failed");
            Mapping {
                start: start.cast(),
                len,
            }
        }
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    impl Drop for Mapping {
        fn drop(&mut self) {
            extern "C" {
                fn munmap(addr: *mut std::ffi::c_void, len: usize) -> std::ffi::c_int;
            }
            // SAFETY: our own mapping, no longer used.
            unsafe { munmap(self.start.cast(), self.len) };
        }
    }

    /// Whether this kernel populates pages on request (an emulator, such as qemu's user mode,
    /// may accept the call and do nothing).
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    fn populating_works() -> bool {
        let page = os::page_size().unwrap();
        let map = Mapping::new(4 * page);
        unsafe { prefault(map.start, map.start.wrapping_add(4 * page)) };
        unsafe { is_backed(map.start.wrapping_add(page)) }
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    #[test]
    fn the_helper_stays_within_its_distance() {
        if !crate::helper::spare_core() || !populating_works() {
            return;
        }
        let len = 16 << 20;
        let map = Mapping::new(len);
        let start = map.start;
        let page = os::page_size().unwrap();
        let far = start.wrapping_add((4 << 20) + page);
        assert!(!unsafe { is_backed(far) }, "a fresh mapping is not backed");
        let faulter = unsafe { Faulter::start(start, start.wrapping_add(len), 1 << 20) }
            .expect("a helper on a machine with a spare core");
        // Give the helper time to run as far as it may, then stop it.
        std::thread::sleep(Duration::from_millis(50));
        drop(faulter);
        let near = start.wrapping_add(512 << 10);
        assert!(
            unsafe { is_backed(near) },
            "the pages just ahead are faulted in"
        );
        assert!(
            !unsafe { is_backed(far) },
            "nothing beyond the distance plus a chunk"
        );
        // SAFETY: the mapping's bytes, readable and now unshared.
        let bytes = unsafe { std::slice::from_raw_parts(start, len) };
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn small_ranges_start_no_thread() {
        let mut buf = fresh(CHUNK);
        let range = buf.as_mut_ptr_range();
        assert!(unsafe { Faulter::start(range.start, range.end, 1 << 20) }.is_none());
    }
}
