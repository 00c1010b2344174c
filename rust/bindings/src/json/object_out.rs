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
//! costs the kernel's page allocation without a fault per page, and the pages
//! past that window by a helper thread where a second core is free (see
//! `offload_core::pages`), stopped before the buffer moves or is handed over.
//! Neither changes anything outside this buffer: no allocator setting, no
//! flag left on memory that outlives it.
//!
//! A refused growth unwinds with the core's `OutOfMemory` (the writer's
//! `room` has no error path); the walk catches it and raises `MemoryError`.
use std::ffi::c_int;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

use offload_core::json::ByteBuf;
use offload_core::pages::{self, Faulter};
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
/// (32 MiB), so that a heap with that much free memory can serve it. At
/// 16 MiB, an output between that and 30 MiB outgrew its reused block on
/// every dump into a fresh mapping and faulted in all its pages anew (a
/// 19 MB float list spent a quarter of its time in the kernel).
const JUMP_TO: usize = 30 << 20;

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
const WINDOW: usize = 256 << 10;

/// How far past the writer a helper thread faults pages in: enough to keep
/// ahead of it (two windows), little enough that the pages faulted in beyond
/// the end of the output (given back at the trim) add little to the peak: at
/// most this and a helper's chunk, about 6% of a 12 MB output (1 MiB ahead
/// made peaks of 1.10x the output; one window ahead left the writer faulting
/// its own pages, a tool-call hook storing 12 MB 20% slower).
const AHEAD: usize = 512 << 10;

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
    /// Faults pages in ahead of the writer from another thread, while one runs.
    faulter: Option<Faulter>,
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
            faulter: None,
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
        // The buffer may move: its helper stops first.
        self.faulter = None;
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
        self.faulter = None;
        // SAFETY: a fresh, unshared object; `len` bytes of ours are copied
        // into it before our reference to the old one is dropped (GIL held).
        unsafe {
            let new = T::make(size);
            if new.is_null() {
                ffi::PyErr_Clear();
                return false;
            }
            let data = T::data(new);
            // The helper (if the pages are fresh) starts past the copy while
            // this thread faults in the copy's own pages.
            let (copied, end) = (data.add(self.len), data.add(size));
            if !pages::is_backed(copied) {
                self.faulter = Faulter::start(copied, end, AHEAD);
            }
            pages::prefault(data, copied);
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
            // SAFETY: `len <= ready <= cap`, inside the object's buffer; the
            // helper is stopped (dropped) before the buffer moves or is freed.
            unsafe {
                let (at, ready) = (self.data.add(self.len), self.data.add(self.ready));
                match &self.faulter {
                    Some(faulter) => faulter.progress(at),
                    // Fresh pages past this window: a helper takes them from
                    // there on while the writer does this window itself.
                    None if self.ready < self.cap && !pages::is_backed(ready) => {
                        self.faulter = Faulter::start(ready, self.data.add(self.cap), AHEAD);
                    }
                    None => {}
                }
                pages::prefault(at, ready);
            }
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
        self.faulter = None;
        let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        // SAFETY: a valid object of the target's type whose one reference we hand over.
        Ok(unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<T::Output>() })
    }
}

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
        self.faulter = None;
        if !self.obj.is_null() {
            // SAFETY: our own reference to an unfinished object (GIL held).
            unsafe { ffi::Py_DecRef(self.obj) }
        }
    }
}
