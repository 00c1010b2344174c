//! A `bytes` object the writer fills in place.
//!
//! The text is written straight into the `bytes` object that is returned,
//! grown (and finally trimmed) with `_PyBytes_Resize`, as the fastest
//! serialisers do: no second buffer, no copy at the end, and a peak memory of
//! about the output itself. `_PyBytes_Resize` is outside the limited API
//! (it has no replacement there before 3.15's `PyBytesWriter`), but it is
//! exported by every CPython this package supports; it is the one such
//! function used here.
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

/// A `bytes` object under construction: `len` bytes written, room for `cap`.
pub(crate) struct BytesOut {
    obj: *mut ffi::PyObject,
    data: *mut u8,
    len: usize,
    cap: usize,
}

impl BytesOut {
    /// An empty buffer; the GIL must be held while it lives.
    pub(crate) fn new(_py: Python<'_>) -> PyResult<Self> {
        let mut out = BytesOut {
            obj: std::ptr::null_mut(),
            data: std::ptr::null_mut(),
            len: 0,
            cap: 0,
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
        Ok(out)
    }

    /// Resize the object to `size` bytes. Out of memory ends the process, as
    /// it does for a growing `Vec`.
    fn resize(&mut self, size: usize) {
        // SAFETY: `obj` is ours alone (never shared before `finish`), which is
        // what `_PyBytes_Resize` requires; on failure it frees the object.
        unsafe {
            if _PyBytes_Resize(&mut self.obj, size as ffi::Py_ssize_t) != 0 {
                self.obj = std::ptr::null_mut();
                let layout = std::alloc::Layout::array::<u8>(size.max(1))
                    .unwrap_or(std::alloc::Layout::new::<u8>());
                std::alloc::handle_alloc_error(layout);
            }
            self.data = ffi::PyBytes_AsString(self.obj).cast();
        }
        self.cap = size;
    }

    /// The finished `bytes`, trimmed to what was written.
    pub(crate) fn finish<'py>(mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        if self.len != self.cap {
            self.resize(self.len);
        }
        let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
        // SAFETY: a valid bytes object whose one reference we hand over.
        unsafe { Bound::from_owned_ptr(py, obj).cast_into_unchecked::<PyBytes>() }
    }
}

impl ByteBuf for BytesOut {
    #[inline(always)]
    fn room(&mut self, n: usize) -> *mut u8 {
        if self.cap - self.len < n {
            self.resize((self.cap * 2).max(self.len + n));
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
