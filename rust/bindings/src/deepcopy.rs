//! `copy.deepcopy` for conversation data, with the standard library's
//! semantics: exact dicts, lists and tuples are copied here; exact str,
//! bytes, int, float, bool and None are shared (as `deepcopy` shares these
//! immutable values); every other value is handed to the `copy.deepcopy`
//! the caller gives, with the memo of the copy in progress.
//!
//! The memo follows `deepcopy`'s: a dict or list is remembered before its
//! members are copied (so a container that holds itself is copied once), a
//! tuple only when one of its items changed (one whose items all come back
//! unchanged is returned itself), and every remembered original is held for
//! the rest of the copy so that no address is reused meanwhile. While no
//! Python code has run the memo is a native map; before the first value is
//! handed to Python it becomes a real memo dict (`id(original)` to copy, the
//! originals kept alive in a list under `id(memo)`), and stays one, so that a
//! value's own `__deepcopy__` sees, and adds to, what was copied so far.
//!
//! Containers nested deeper than [`MAX_DEPTH`] levels are handed to Python
//! as well: the native stack stays small, and Python's copy gives up with
//! `RecursionError` where it would.
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::json::objects::{Dict, Items, List, Tuple};
use crate::json::AddrHasher;

/// Nesting levels copied natively before the rest of a branch goes to Python.
const MAX_DEPTH: usize = 128;

/// An owned reference, released on drop.
struct Ref(*mut ffi::PyObject);

impl Ref {
    /// A new reference to a live object.
    ///
    /// # Safety
    /// `p` must be a live object and the GIL held.
    unsafe fn to(p: *mut ffi::PyObject) -> Self {
        ffi::Py_IncRef(p);
        Ref(p)
    }

    /// Take a new reference returned by the C API; the pending error when null.
    fn take(py: Python<'_>, p: *mut ffi::PyObject) -> PyResult<Self> {
        if p.is_null() {
            Err(PyErr::fetch(py))
        } else {
            Ok(Ref(p))
        }
    }

    fn into_ptr(self) -> *mut ffi::PyObject {
        let p = self.0;
        std::mem::forget(self);
        p
    }
}

impl Drop for Ref {
    fn drop(&mut self) {
        // SAFETY: one reference owned; the GIL is held while a copy runs.
        unsafe { ffi::Py_DecRef(self.0) }
    }
}

type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

struct Copier<'py> {
    py: Python<'py>,
    /// `copy.deepcopy` (or what the caller gave in its place).
    fallback: *mut ffi::PyObject,
    /// The memo while no Python code has run: address -> (original, copy).
    native: AddrMap<(Ref, Ref)>,
    /// The memo as a Python dict, from the first value handed to Python on.
    memo: Option<Ref>,
    /// Values handed to Python so far (a dict being copied may have changed).
    python_calls: u64,
}

fn check(py: Python<'_>, status: std::os::raw::c_int) -> PyResult<()> {
    if status < 0 {
        Err(PyErr::fetch(py))
    } else {
        Ok(())
    }
}

impl<'py> Copier<'py> {
    /// The Python memo, made from the native one the first time.
    unsafe fn python_memo(&mut self) -> PyResult<*mut ffi::PyObject> {
        if let Some(memo) = &self.memo {
            return Ok(memo.0);
        }
        let py = self.py;
        let memo = Ref::take(py, ffi::PyDict_New())?;
        if !self.native.is_empty() {
            let keep = Ref::take(py, ffi::PyList_New(0))?;
            for (addr, (original, copy)) in self.native.drain() {
                let key = Ref::take(py, ffi::PyLong_FromVoidPtr(addr as *mut std::ffi::c_void))?;
                check(py, ffi::PyDict_SetItem(memo.0, key.0, copy.0))?;
                check(py, ffi::PyList_Append(keep.0, original.0))?;
            }
            let key = Ref::take(py, ffi::PyLong_FromVoidPtr(memo.0.cast()))?;
            check(py, ffi::PyDict_SetItem(memo.0, key.0, keep.0))?;
        }
        let p = memo.0;
        self.memo = Some(memo);
        Ok(p)
    }

    /// The copy already made of `obj`, if any.
    unsafe fn recall(&mut self, obj: *mut ffi::PyObject) -> PyResult<Option<Ref>> {
        match &self.memo {
            None => Ok(self
                .native
                .get(&(obj as usize))
                .map(|(_, copy)| Ref::to(copy.0))),
            Some(memo) => {
                let key = Ref::take(self.py, ffi::PyLong_FromVoidPtr(obj.cast()))?;
                let found = ffi::PyDict_GetItemWithError(memo.0, key.0);
                if found.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        return Err(PyErr::fetch(self.py));
                    }
                    return Ok(None);
                }
                Ok(Some(Ref::to(found)))
            }
        }
    }

    /// Remember `copy` as the copy of `obj` (and keep `obj` alive).
    unsafe fn remember(&mut self, obj: *mut ffi::PyObject, copy: &Ref) -> PyResult<()> {
        let py = self.py;
        match &self.memo {
            None => {
                self.native
                    .insert(obj as usize, (Ref::to(obj), Ref::to(copy.0)));
                Ok(())
            }
            Some(memo) => {
                let memo = memo.0;
                let key = Ref::take(py, ffi::PyLong_FromVoidPtr(obj.cast()))?;
                check(py, ffi::PyDict_SetItem(memo, key.0, copy.0))?;
                // deepcopy's keep-alive list, under id(memo).
                let own = Ref::take(py, ffi::PyLong_FromVoidPtr(memo.cast()))?;
                let keep = ffi::PyDict_GetItemWithError(memo, own.0);
                if keep.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        return Err(PyErr::fetch(py));
                    }
                    let keep = Ref::take(py, ffi::PyList_New(0))?;
                    check(py, ffi::PyList_Append(keep.0, obj))?;
                    return check(py, ffi::PyDict_SetItem(memo, own.0, keep.0));
                }
                let keep = Ref::to(keep);
                let append = pyo3::intern!(py, "append").as_ptr();
                let done = ffi::PyObject_CallMethodObjArgs(
                    keep.0,
                    append,
                    obj,
                    std::ptr::null_mut::<ffi::PyObject>(),
                );
                Ref::take(py, done).map(drop)
            }
        }
    }

    /// `copy.deepcopy(obj, memo)` in Python.
    unsafe fn in_python(&mut self, obj: *mut ffi::PyObject) -> PyResult<Ref> {
        let memo = self.python_memo()?;
        self.python_calls += 1;
        let copy = ffi::PyObject_CallFunctionObjArgs(
            self.fallback,
            obj,
            memo,
            std::ptr::null_mut::<ffi::PyObject>(),
        );
        Ref::take(self.py, copy)
    }

    /// The deep copy of `obj` (a live object).
    unsafe fn copy(&mut self, obj: *mut ffi::PyObject, depth: usize) -> PyResult<Ref> {
        let tp = ffi::Py_TYPE(obj);
        if tp == &raw mut ffi::PyUnicode_Type
            || tp == &raw mut ffi::PyLong_Type
            || tp == &raw mut ffi::PyFloat_Type
            || tp == &raw mut ffi::PyBool_Type
            || tp == &raw mut ffi::PyBytes_Type
            || obj == ffi::Py_None()
        {
            return Ok(Ref::to(obj));
        }
        let container = tp == &raw mut ffi::PyDict_Type
            || tp == &raw mut ffi::PyList_Type
            || tp == &raw mut ffi::PyTuple_Type;
        if !container || depth >= MAX_DEPTH {
            return self.in_python(obj);
        }
        if let Some(copy) = self.recall(obj)? {
            return Ok(copy);
        }
        if tp == &raw mut ffi::PyDict_Type {
            self.dict(obj, depth)
        } else if tp == &raw mut ffi::PyList_Type {
            self.list(obj, depth)
        } else {
            self.tuple(obj, depth)
        }
    }

    unsafe fn dict(&mut self, obj: *mut ffi::PyObject, depth: usize) -> PyResult<Ref> {
        let py = self.py;
        let copy = Ref::take(py, ffi::PyDict_New())?;
        self.remember(obj, &copy)?;
        let dict = Dict::new(obj);
        let size = ffi::PyDict_Size(obj);
        let calls = self.python_calls;
        let mut pos: ffi::Py_ssize_t = 0;
        while let Some((key, value)) = dict.next(&mut pos) {
            // Held: Python code run by the copies may remove them from the dict.
            let (key, value) = (Ref::to(key), Ref::to(value));
            let key = self.copy(key.0, depth + 1)?;
            let value = self.copy(value.0, depth + 1)?;
            check(py, ffi::PyDict_SetItem(copy.0, key.0, value.0))?;
            if self.python_calls != calls && ffi::PyDict_Size(obj) != size {
                return Err(PyRuntimeError::new_err(
                    "dictionary changed size during iteration",
                ));
            }
        }
        Ok(copy)
    }

    unsafe fn list(&mut self, obj: *mut ffi::PyObject, depth: usize) -> PyResult<Ref> {
        let py = self.py;
        let copy = Ref::take(py, ffi::PyList_New(0))?;
        self.remember(obj, &copy)?;
        let list = List::new(obj);
        let mut i: ffi::Py_ssize_t = 0;
        loop {
            // Read afresh each time: Python code may have changed the list (as a
            // list iterator does, the items present at each step are copied).
            let item = list.item(i);
            if item.is_null() {
                return Ok(copy);
            }
            let item = Ref::to(item);
            let item_copy = self.copy(item.0, depth + 1)?;
            check(py, ffi::PyList_Append(copy.0, item_copy.0))?;
            i += 1;
        }
    }

    unsafe fn tuple(&mut self, obj: *mut ffi::PyObject, depth: usize) -> PyResult<Ref> {
        let py = self.py;
        let tuple = Tuple::new(obj);
        let size = ffi::PyTuple_Size(obj);
        let mut items = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut changed = false;
        for i in 0..size {
            // A tuple holds its items for as long as it lives (the caller holds it).
            let item = tuple.item(i);
            let item_copy = self.copy(item, depth + 1)?;
            changed |= item_copy.0 != item;
            items.push(item_copy);
        }
        // The tuple may have been copied meanwhile, through a container in it
        // that holds it.
        if let Some(copy) = self.recall(obj)? {
            return Ok(copy);
        }
        if !changed {
            return Ok(Ref::to(obj));
        }
        let copy = Ref::take(py, ffi::PyTuple_New(size))?;
        for (i, item) in items.into_iter().enumerate() {
            // Steals the reference; a fresh tuple of `size` slots.
            ffi::PyTuple_SetItem(copy.0, i as ffi::Py_ssize_t, item.into_ptr());
        }
        self.remember(obj, &copy)?;
        Ok(copy)
    }
}

/// `copy.deepcopy(obj)`: dicts, lists and tuples copied natively, the
/// immutable scalars shared, anything else (and containers nested deeper than
/// 128 levels) given to `fallback(value, memo)` with the memo so far.
#[pyfunction]
fn _deep_copy(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    fallback: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let mut copier = Copier {
        py,
        fallback: fallback.as_ptr(),
        native: AddrMap::default(),
        memo: None,
        python_calls: 0,
    };
    // SAFETY: `obj` and `fallback` are live for the call and the GIL is held.
    unsafe {
        let copy = copier.copy(obj.as_ptr(), 0)?;
        Ok(Bound::from_owned_ptr(py, copy.into_ptr()).unbind())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_deep_copy, m)?)?;
    Ok(())
}
