//! A `bytes` object, or an ASCII `str`, that the writer fills in place.
//!
//! The text is written straight into the object that is returned, grown (and
//! finally trimmed) with `_PyBytes_Resize` or `PyUnicode_Resize`, as the
//! fastest serialisers do: no second buffer, no copy at the end, and a peak
//! memory of about the output itself. `_PyBytes_Resize` is outside the limited
//! API (it has no replacement there before 3.15's `PyBytesWriter`), but it is
//! exported by every CPython this package supports. A `str` is written only
//! where its layout is known (see `text`): JSON with `ensure_ascii` is ASCII,
//! so the object is a compact ASCII string whose characters follow its header.
//!
//! Large outputs: most of the cost beyond the writing itself is the kernel
//! handing out fresh pages, one page fault per 4 KiB written, plus the copies
//! a doubling buffer makes when the allocator moves it (with glibc, a 10 MB
//! dump ends up copying 8 MB from the heap into a fresh mapping and faulting
//! in every page of it). So once the buffer passes [`JUMP_AT`] it is moved
//! once into a large allocation, sized like the largest output so far (see
//! [`jump_size`]: repeated dumps then reuse memory that is still backed);
//! only the pages written are ever backed, and the trim at the end gives the
//! rest back. On Linux the pages just ahead of the writer, where not backed
//! yet, are faulted in a window at a time with `MADV_POPULATE_WRITE`, which
//! costs the kernel's page allocation without a fault per page. Neither
//! changes anything outside this buffer: no allocator setting, no flag left
//! on memory that outlives it.
//!
//! A refused growth unwinds with the core's `OutOfMemory` (the writer's
//! `room` has no error path); the walk catches it and raises `MemoryError`.
use std::ffi::c_int;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

use offload_core::json::ByteBuf;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

extern "C" {
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> c_int;
}

/// The kind of object filled: how it is made, where its bytes are, how it grows.
pub(crate) trait Target {
    /// What the finished object is.
    type Output;
    /// First capacity.
    const FIRST: usize;
    /// A fresh object of `size` bytes (null, with an error set, on failure).
    ///
    /// # Safety
    /// The GIL must be held.
    unsafe fn make(size: usize) -> *mut ffi::PyObject;
    /// Where an object's bytes start.
    ///
    /// # Safety
    /// `obj` must be a live object made by [`Target::make`] or resized here.
    unsafe fn data(obj: *mut ffi::PyObject) -> *mut u8;
    /// Resize the object, which only we reference; on failure it is released
    /// and `*obj` set to null.
    ///
    /// # Safety
    /// As [`Target::data`]; the GIL held.
    unsafe fn resize(obj: &mut *mut ffi::PyObject, size: usize) -> bool;
}

/// A `bytes` object.
pub(crate) struct Bytes;

impl Target for Bytes {
    type Output = PyBytes;
    /// Large enough that most small dumps never grow.
    const FIRST: usize = 4096;
    unsafe fn make(size: usize) -> *mut ffi::PyObject {
        ffi::PyBytes_FromStringAndSize(std::ptr::null(), size as ffi::Py_ssize_t)
    }
    unsafe fn data(obj: *mut ffi::PyObject) -> *mut u8 {
        ffi::PyBytes_AsString(obj).cast()
    }
    unsafe fn resize(obj: &mut *mut ffi::PyObject, size: usize) -> bool {
        // On failure `_PyBytes_Resize` frees the object and nulls the pointer.
        _PyBytes_Resize(obj, size as ffi::Py_ssize_t) == 0
    }
}

/// A compact ASCII `str`, on the interpreters whose layout is known.
pub(crate) struct AsciiStr;

impl Target for AsciiStr {
    type Output = PyString;
    /// Small enough that, with its header, a string starts in CPython's small-object
    /// allocator: most `json.dumps` calls (under `accelerate()`) write a few hundred bytes,
    /// and a string that never leaves that allocator is the cheapest to make and free.
    const FIRST: usize = 400;
    unsafe fn make(size: usize) -> *mut ffi::PyObject {
        super::text::PyUnicode_New(size as ffi::Py_ssize_t, 127)
    }
    unsafe fn data(obj: *mut ffi::PyObject) -> *mut u8 {
        let offset = super::text::ascii_data_offset()
            .expect("StrOut is made only where the str layout is known");
        obj.cast::<u8>().add(offset)
    }
    unsafe fn resize(obj: &mut *mut ffi::PyObject, size: usize) -> bool {
        // A fresh string referenced only here, never hashed nor interned:
        // `PyUnicode_Resize` reallocates it in place. On failure the object is
        // left as it was, so it is released here.
        if ffi::PyUnicode_Resize(obj, size as ffi::Py_ssize_t) == 0 {
            return true;
        }
        ffi::Py_DecRef(*obj);
        *obj = std::ptr::null_mut();
        false
    }
}

/// Fills a `bytes` object.
pub(crate) type BytesOut = ObjectOut<Bytes>;
/// Fills an ASCII `str`.
pub(crate) type StrOut = ObjectOut<AsciiStr>;

/// The least capacity a growing buffer takes.
const GROW_AT_LEAST: usize = 4096;

/// When the buffer would grow to this size it moves once into a [`JUMP_TO`] allocation
/// and pages are faulted in ahead of the writer.
const JUMP_AT: usize = 1 << 20;

/// The capacity taken at [`JUMP_AT`] by the first large output of a process,
/// and the most [`jump_size`] takes. A fresh mapping at first (later growth
/// extends it without copying); below glibc's largest dynamic mmap threshold
/// (32 MiB), so that a heap with that much free memory can serve it.
const JUMP_TO: usize = 16 << 20;

/// The length of the largest output that passed [`JUMP_AT`] so far in this
/// process, at most [`JUMP_TO`] (0 before the first).
static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The capacity a buffer moves to at [`JUMP_AT`], at least `need`.
///
/// Sized like the largest output so far, so that repeated large dumps reuse
/// memory that is already backed: glibc serves a request from a fresh mapping
/// (faulting in every page written, each dump anew) until a freed mapping
/// has raised its threshold past the request, and the mapping freed is our
/// trimmed output. A fixed 16 MiB jump stayed above a 10 MB output's
/// threshold forever; a jump the size of the last such output falls under it.
fn jump_size(need: usize) -> usize {
    match LARGEST.load(Ordering::Relaxed) {
        0 => JUMP_TO,
        largest => largest,
    }
    .max(need)
}

/// The first growth of a buffer past its jump.
const FIRST_STEP: usize = 64 << 10;

/// Bytes faulted in ahead of the writer at a time.
const WINDOW: usize = 512 << 10;

/// How a buffer grows next: see [`ObjectOut::make_room`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Growth {
    /// Below [`JUMP_AT`]: doubling.
    Doubling,
    /// Passed [`JUMP_AT`] (and moved, if it could), not grown since: a [`FIRST_STEP`].
    Jumped,
    /// Grown since the jump: a quarter at a time.
    Quarters,
}

/// An object under construction: `len` bytes written, room for `cap`, of
/// which the first `ready` may be written without another look (`ready` stops
/// short of `cap` where pages are still to be faulted in).
pub(crate) struct ObjectOut<T: Target> {
    obj: *mut ffi::PyObject,
    data: *mut u8,
    len: usize,
    cap: usize,
    ready: usize,
    growth: Growth,
    kind: PhantomData<T>,
}

impl<T: Target> ObjectOut<T> {
    /// An empty buffer; the GIL must be held while it lives.
    pub(crate) fn new(_py: Python<'_>) -> PyResult<Self> {
        let mut out = ObjectOut {
            obj: std::ptr::null_mut(),
            data: std::ptr::null_mut(),
            len: 0,
            cap: 0,
            ready: 0,
            growth: Growth::Doubling,
            kind: PhantomData,
        };
        // SAFETY: a fresh, unshared object of FIRST bytes.
        unsafe {
            out.obj = T::make(T::FIRST);
            if out.obj.is_null() {
                return Err(PyErr::fetch(_py));
            }
            out.data = T::data(out.obj);
        }
        out.cap = T::FIRST;
        out.ready = T::FIRST;
        Ok(out)
    }

    /// Resize the object to `size` bytes; `false` (the object freed, the
    /// error cleared) when it cannot be.
    fn resize(&mut self, size: usize) -> bool {
        // SAFETY: `obj` is ours alone (never shared before `finish`), which is
        // what resizing in place requires; on failure the object is released
        // and MemoryError set, which the caller reports its own way.
        unsafe {
            if !T::resize(&mut self.obj, size) {
                ffi::PyErr_Clear();
                return false;
            }
            self.data = T::data(self.obj);
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
            let new = T::make(size);
            if new.is_null() {
                ffi::PyErr_Clear();
                return false;
            }
            let data = T::data(new);
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
            // A small first string grows straight to a page, then doubles.
            // Past its jump, a buffer sized like the last output usually falls
            // short by no more than the room a last string asks for: its first
            // growth is a small step, which the allocator can make in place
            // (into the free memory after it), and later ones a quarter.
            let want = match self.growth {
                Growth::Doubling => (self.cap * 2).max(need).max(GROW_AT_LEAST),
                Growth::Jumped => (self.cap + FIRST_STEP).max(need),
                Growth::Quarters => (self.cap + self.cap / 4).max(need),
            };
            let jump = self.growth == Growth::Doubling && want >= JUMP_AT;
            self.growth = match self.growth {
                Growth::Doubling if !jump => Growth::Doubling,
                Growth::Doubling => Growth::Jumped,
                _ => Growth::Quarters,
            };
            let moved = jump && self.move_to(jump_size(want));
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

    /// The bytes written so far.
    pub(crate) fn filled_bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of the object's buffer were written.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    /// The finished object, trimmed to what was written.
    pub(crate) fn finish<'py>(mut self, py: Python<'py>) -> PyResult<Bound<'py, T::Output>>
    where
        T::Output: pyo3::PyTypeInfo,
    {
        if self.len >= JUMP_AT {
            LARGEST.fetch_max(self.len.min(JUMP_TO), Ordering::Relaxed);
        }
        if self.len != self.cap && !self.resize(self.len) {
            return Err(crate::errors::memory_error(
                offload_core::alloc::OutOfMemory { bytes: self.len },
            ));
        }
        let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        // SAFETY: a valid object of the target's type whose one reference we hand over.
        Ok(unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<T::Output>() })
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
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: c_int) -> c_int;
        fn mincore(addr: *mut std::ffi::c_void, len: usize, vec: *mut u8) -> c_int;
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
        // Memory the allocator hands out again is mostly still backed, and
        // populating backed pages still costs a walk of them: where the
        // window's last page is there, so (nearly always) is the rest.
        let mut resident = 0u8;
        // SAFETY: one page of the caller's allocation; mincore writes one
        // byte for it into `resident`.
        let probed =
            unsafe { mincore((last - page) as *mut std::ffi::c_void, page, &mut resident) };
        if probed == 0 && resident & 1 == 1 {
            return;
        }
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

impl<T: Target> ByteBuf for ObjectOut<T> {
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

impl<T: Target> Drop for ObjectOut<T> {
    fn drop(&mut self) {
        if !self.obj.is_null() {
            // SAFETY: our own reference to an unfinished object (GIL held).
            unsafe { ffi::Py_DecRef(self.obj) }
        }
    }
}
