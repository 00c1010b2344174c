//! Small typed views of the Python objects the walk reads through the C API.
//!
//! Each wrapper is a pointer whose type was checked by the caller; its
//! methods read what the C encoder of `json` reads, the way it reads it.
use pyo3::ffi;

/// An owned reference, released on drop.
pub(crate) struct Owned(pub(crate) *mut ffi::PyObject);

impl Owned {
    /// Take a new reference to a borrowed pointer.
    ///
    /// # Safety
    /// `p` must be a live object and the GIL held.
    pub(crate) unsafe fn borrowed(p: *mut ffi::PyObject) -> Self {
        ffi::Py_IncRef(p);
        Owned(p)
    }

    /// Wrap a new reference; `None` (error set) when null.
    pub(crate) fn new(p: *mut ffi::PyObject) -> Option<Self> {
        (!p.is_null()).then_some(Owned(p))
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: we own one reference and hold the GIL for the whole walk.
        unsafe { ffi::Py_DecRef(self.0) }
    }
}

/// Ask the CPU to start loading an object's header and the first bytes of
/// its payload; walking a large document is dominated by these loads.
#[inline(always)]
pub(crate) fn prefetch(p: *mut ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = p.cast::<i8>().cast_const();
        _mm_prefetch::<_MM_HINT_T0>(p);
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A sequence read by index: item `i` borrowed, or null past the end.
pub(crate) trait Items: Copy {
    fn ptr(self) -> *mut ffi::PyObject;
    fn is_empty(self) -> bool;
    /// # Safety
    /// The GIL must be held and the object alive.
    unsafe fn item(self, i: ffi::Py_ssize_t) -> *mut ffi::PyObject;
}

/// A `list` (or a subclass iterating as one), read live: its size is read
/// again for every item, as the C encoder does.
#[derive(Clone, Copy)]
pub(crate) struct List(pub(crate) *mut ffi::PyObject);

impl Items for List {
    fn ptr(self) -> *mut ffi::PyObject {
        self.0
    }
    fn is_empty(self) -> bool {
        // SAFETY: a live list (checked by the caller), GIL held.
        unsafe { ffi::PyList_Size(self.0) == 0 }
    }
    #[inline(always)]
    unsafe fn item(self, i: ffi::Py_ssize_t) -> *mut ffi::PyObject {
        if i < ffi::PyList_Size(self.0) {
            ffi::PyList_GetItem(self.0, i)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// A `tuple` (or a subclass iterating as one): a fixed size.
#[derive(Clone, Copy)]
pub(crate) struct Tuple(pub(crate) *mut ffi::PyObject, pub(crate) ffi::Py_ssize_t);

impl Tuple {
    /// # Safety
    /// `p` must be a live tuple and the GIL held.
    pub(crate) unsafe fn new(p: *mut ffi::PyObject) -> Self {
        Tuple(p, ffi::PyTuple_Size(p))
    }
}

impl Items for Tuple {
    fn ptr(self) -> *mut ffi::PyObject {
        self.0
    }
    fn is_empty(self) -> bool {
        self.1 == 0
    }
    #[inline(always)]
    unsafe fn item(self, i: ffi::Py_ssize_t) -> *mut ffi::PyObject {
        if i < self.1 {
            ffi::PyTuple_GetItem(self.0, i)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// An exact `dict`, iterated over its own storage.
#[derive(Clone, Copy)]
pub(crate) struct Dict(pub(crate) *mut ffi::PyObject);

impl Dict {
    pub(crate) fn is_empty(self) -> bool {
        // SAFETY: a live dict (checked by the caller), GIL held.
        unsafe { ffi::PyDict_Size(self.0) == 0 }
    }

    /// The member after position `pos` (borrowed key and value), advancing it.
    ///
    /// # Safety
    /// The GIL must be held and the dict alive.
    #[inline(always)]
    pub(crate) unsafe fn next(
        self,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
        (ffi::PyDict_Next(self.0, pos, &mut k, &mut v) != 0).then_some((k, v))
    }
}

/// Whether `tp` (a subclass of `base`) iterates its own way: `json` then
/// writes what iterating yields, not the stored items.
///
/// # Safety
/// Both must be live type objects and the GIL held.
pub(crate) unsafe fn own_iter(tp: *mut ffi::PyTypeObject, base: *mut ffi::PyTypeObject) -> bool {
    ffi::PyType_GetSlot(tp, ffi::Py_tp_iter) != ffi::PyType_GetSlot(base, ffi::Py_tp_iter)
}
