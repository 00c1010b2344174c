//! A `bytes` object the writer fills in place.
//!
//! The text is written straight into the `bytes` object that is returned,
//! grown (and finally trimmed) with `_PyBytes_Resize`, as the fastest
//! serialisers do: no second buffer, no copy at the end, and a peak memory of
//! about the output itself. `_PyBytes_Resize` is outside the limited API
//! (it has no replacement there before 3.15's `PyBytesWriter`), but it is
//! exported by every CPython this package supports; it is the one such
//! function used here.
//!
//! Large outputs: most of the cost beyond the writing itself is the kernel
//! handing out fresh pages, one page fault per 4 KiB written, plus the copies
//! a doubling buffer makes when the allocator moves it (with glibc, a 10 MB
//! dump ends up copying 8 MB from the heap into a fresh mapping and faulting
//! in every page of it). So once the buffer passes [`JUMP_AT`] it is moved
//! once into a [`JUMP_TO`] allocation (only the pages written are ever
//! backed; the trim at the end gives the rest back), and on Linux the pages
//! just ahead of the writer are faulted in a window at a time with
//! `MADV_POPULATE_WRITE`, which costs the kernel's page allocation without a
//! fault per page. Neither changes anything outside this buffer: no
//! allocator setting, no flag left on memory that outlives it.
//!
//! A refused growth unwinds with the core's `OutOfMemory` (the writer's
//! `room` has no error path); the walk catches it and raises `MemoryError`.
use std::ffi::c_int;

use offload_core::json::ByteBuf;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

extern "C" {
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> c_int;
}

/// First capacity: large enough that most small dumps never grow.
const FIRST: usize = 4096;

/// When the buffer would grow to this size it moves once into a [`JUMP_TO`] allocation
/// and pages are faulted in ahead of the writer.
const JUMP_AT: usize = 1 << 20;

/// The capacity taken at [`JUMP_AT`]. Below glibc's largest dynamic mmap
/// threshold (32 MiB), so that a heap with that much free, already-backed
/// memory can still serve it; otherwise it is a fresh mapping, which later
/// growth extends without copying.
const JUMP_TO: usize = 16 << 20;

/// Bytes faulted in ahead of the writer at a time.
const WINDOW: usize = 512 << 10;

/// A `bytes` object under construction: `len` bytes written, room for `cap`,
/// of which the first `ready` may be written without another look (`ready`
/// stops short of `cap` where pages are still to be faulted in).
pub(crate) struct BytesOut {
    obj: *mut ffi::PyObject,
    data: *mut u8,
    len: usize,
    cap: usize,
    ready: usize,
}

impl BytesOut {
    /// An empty buffer; the GIL must be held while it lives.
    pub(crate) fn new(_py: Python<'_>) -> PyResult<Self> {
        let mut out = BytesOut {
            obj: std::ptr::null_mut(),
            data: std::ptr::null_mut(),
            len: 0,
            cap: 0,
            ready: 0,
        };
        // SAFETY: a fresh, unshared bytes object of FIRST bytes.
        unsafe {
            out.obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), FIRST as ffi::Py_ssize_t);
            if out.obj.is_null() {
                return Err(PyErr::fetch(_py));
            }
            out.data = ffi::PyBytes_AsString(out.obj).cast();
        }
        out.cap = FIRST;
        out.ready = FIRST;
        Ok(out)
    }

    /// Resize the object to `size` bytes; `false` (the object freed, the
    /// error cleared) when it cannot be.
    fn resize(&mut self, size: usize) -> bool {
        // SAFETY: `obj` is ours alone (never shared before `finish`), which is
        // what `_PyBytes_Resize` requires; on failure it frees the object and
        // sets MemoryError, which the caller reports its own way.
        unsafe {
            if _PyBytes_Resize(&mut self.obj, size as ffi::Py_ssize_t) != 0 {
                self.obj = std::ptr::null_mut();
                ffi::PyErr_Clear();
                return false;
            }
            self.data = ffi::PyBytes_AsString(self.obj).cast();
        }
        self.cap = size;
        self.ready = size;
        true
    }

    /// Move the `len` bytes written into a fresh object of `size` bytes;
    /// `false` (nothing changed) if it cannot be allocated.
    fn move_to(&mut self, size: usize) -> bool {
        // SAFETY: a fresh, unshared object; `len` bytes of ours are copied
        // into it before our reference to the old one is dropped (GIL held).
        unsafe {
            let new = ffi::PyBytes_FromStringAndSize(std::ptr::null(), size as ffi::Py_ssize_t);
            if new.is_null() {
                ffi::PyErr_Clear();
                return false;
            }
            let data: *mut u8 = ffi::PyBytes_AsString(new).cast();
            prefault(data, data.add(self.len));
            std::ptr::copy_nonoverlapping(self.data, data, self.len);
            ffi::Py_DecRef(self.obj);
            self.obj = new;
            self.data = data;
        }
        self.cap = size;
        self.ready = size;
        true
    }

    /// Make room for `n` more bytes: grow if needed, then, for a large
    /// buffer, fault in the pages the writer reaches next.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, n: usize) {
        let need = self.len + n;
        if need > self.cap {
            let want = (self.cap * 2).max(need);
            let moved = self.cap < JUMP_TO && want >= JUMP_AT && self.move_to(want.max(JUMP_TO));
            if !moved && !self.resize(want) {
                // The walk catches this and raises MemoryError.
                offload_core::alloc::out_of_memory(want);
            }
        }
        if self.cap >= JUMP_AT {
            self.ready = self.cap.min(need.max(self.len + WINDOW));
            // SAFETY: `len <= ready <= cap`, inside the object's buffer.
            unsafe { prefault(self.data.add(self.len), self.data.add(self.ready)) };
        }
    }

    /// The finished `bytes`, trimmed to what was written.
    pub(crate) fn finish<'py>(mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        if self.len != self.cap && !self.resize(self.len) {
            return Err(crate::errors::memory_error(
                offload_core::alloc::OutOfMemory { bytes: self.len },
            ));
        }
        let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        // SAFETY: a valid bytes object whose one reference we hand over.
        Ok(unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<PyBytes>() })
    }
}

/// Fault in, for writing, the pages of `[start, end)`: from the page holding
/// `start` to the last page that ends inside the range, so every page touched
/// holds bytes of the range (and belongs to the same allocation). A hint
/// only: its contents do not change, and failure (a kernel before 5.14, say)
/// leaves the pages to be faulted in on first write as usual.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn prefault(start: *mut u8, end: *mut u8) {
    use std::sync::atomic::{AtomicUsize, Ordering};

    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: c_int) -> c_int;
        fn sysconf(name: c_int) -> std::ffi::c_long;
    }
    const MADV_POPULATE_WRITE: c_int = 23;
    const SC_PAGESIZE: c_int = 30;
    static PAGE: AtomicUsize = AtomicUsize::new(0);

    let mut page = PAGE.load(Ordering::Relaxed);
    if page == 0 {
        // SAFETY: sysconf has no preconditions.
        page = usize::try_from(unsafe { sysconf(SC_PAGESIZE) }).unwrap_or(0);
        if !page.is_power_of_two() {
            return;
        }
        PAGE.store(page, Ordering::Relaxed);
    }
    let first = start as usize & !(page - 1);
    let last = end as usize & !(page - 1);
    if last > first {
        // SAFETY: the pages lie in the caller's allocation (see above), and
        // MADV_POPULATE_WRITE does not change their contents.
        unsafe {
            madvise(
                first as *mut std::ffi::c_void,
                last - first,
                MADV_POPULATE_WRITE,
            )
        };
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn prefault(_start: *mut u8, _end: *mut u8) {}

impl ByteBuf for BytesOut {
    #[inline(always)]
    fn room(&mut self, n: usize) -> *mut u8 {
        if self.ready - self.len < n {
            self.make_room(n);
        }
        // SAFETY: `len <= cap`, inside the object's buffer.
        unsafe { self.data.add(self.len) }
    }

    #[inline(always)]
    unsafe fn commit(&mut self, n: usize) {
        self.len += n;
    }

    #[inline(always)]
    fn filled(&self) -> usize {
        self.len
    }
}

impl Drop for BytesOut {
    fn drop(&mut self) {
        if !self.obj.is_null() {
            // SAFETY: our own reference to an unfinished object (GIL held).
            unsafe { ffi::Py_DecRef(self.obj) }
        }
    }
}
