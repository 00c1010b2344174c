//! The walk: one writer per Python type, each reading its objects through the
//! typed views of [`super::objects`], feeding the core's [`JsonWriter`].
//!
//! Type rules (those of `json.dumps` with its defaults): values are str, int,
//! float (and subclasses, by their built-in value), True/False/None,
//! list/tuple (and subclasses, read by index as the C encoder does) and dict
//! (exact dicts read directly, subclasses through `items()`); keys are str,
//! float, True/False/None and int. Python code runs only for dict subclasses
//! and on error paths.
use std::ffi::c_int;

use offload_core::json::{JsonWriter, KeyCache, Sink};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::errors::{bad_key, not_serializable};
use super::guard::OpenPath;
use super::objects::{own_iter, prefetch, Dict, Items, List, Owned, Tuple};
use super::text::text_of;

/// Items fetched (and prefetched) at a time from a container.
const BATCH: usize = 8;

pub(crate) struct Walker<'py, 'p, S: Sink> {
    py: Python<'py>,
    pub(crate) w: JsonWriter<S>,
    path: &'p OpenPath,
    /// Bumped whenever the walk runs Python code that could mutate objects it
    /// holds borrowed pointers to (see [`Walker::items`]).
    python_calls: u64,
    /// The `indent` argument as given, to reproduce key errors exactly.
    indent_arg: Option<Bound<'py, PyAny>>,
    /// Set when the walk met a value only `json` itself writes the way `json`
    /// does (a list or tuple subclass with its own `__iter__`): the caller
    /// then hands the whole call to `json.dumps`.
    pub(crate) needs_json: bool,
    /// Finished texts of `str` keys met before, by address: an address names
    /// the same immutable string while no Python code has run (nothing the
    /// walk holds is freed meanwhile), so the cache's epoch is `python_calls`.
    keys: KeyCache,
}

impl<'py, 'p, S: Sink> Walker<'py, 'p, S> {
    pub(crate) fn new(
        py: Python<'py>,
        w: JsonWriter<S>,
        path: &'p OpenPath,
        indent_arg: Option<Bound<'py, PyAny>>,
    ) -> Self {
        Walker {
            py,
            w,
            path,
            python_calls: 0,
            indent_arg,
            needs_json: false,
            keys: KeyCache::default(),
        }
    }

    /// Write any JSON-able value.
    ///
    /// # Safety
    /// `obj` must be a live object and the GIL held for the whole walk.
    pub(crate) unsafe fn value(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let tp = ffi::Py_TYPE(obj);
        // Exact built-in types first: the common case, no flag lookups.
        if tp == &raw mut ffi::PyUnicode_Type {
            return self.string(obj);
        }
        if tp == &raw mut ffi::PyLong_Type {
            return self.int(obj, false);
        }
        if tp == &raw mut ffi::PyFloat_Type {
            return self.float(obj, false);
        }
        if tp == &raw mut ffi::PyDict_Type {
            return self.dict(Dict(obj));
        }
        if tp == &raw mut ffi::PyList_Type {
            return self.array(List::new(obj));
        }
        if obj == ffi::Py_None() {
            self.w.null();
            return Ok(());
        }
        if obj == ffi::Py_True() || obj == ffi::Py_False() {
            self.w.boolean(obj == ffi::Py_True());
            return Ok(());
        }
        if tp == &raw mut ffi::PyTuple_Type {
            return self.array(Tuple::new(obj));
        }
        // Subclasses, in the order `json` tests them.
        if ffi::PyUnicode_Check(obj) != 0 {
            return self.string(obj);
        }
        if ffi::PyLong_Check(obj) != 0 {
            return self.int(obj, false);
        }
        if ffi::PyFloat_Check(obj) != 0 {
            return self.float(obj, false);
        }
        if ffi::PyList_Check(obj) != 0 {
            if own_iter(tp, &raw mut ffi::PyList_Type) {
                return Err(self.hand_to_json());
            }
            return self.array(List::new(obj));
        }
        if ffi::PyTuple_Check(obj) != 0 {
            if own_iter(tp, &raw mut ffi::PyTuple_Type) {
                return Err(self.hand_to_json());
            }
            return self.array(Tuple::new(obj));
        }
        if ffi::PyDict_Check(obj) != 0 {
            return self.dict_subclass(obj);
        }
        Err(not_serializable(self.py, obj))
    }

    /// Stop the walk: `json.dumps` must write this call (see `needs_json`).
    fn hand_to_json(&mut self) -> PyErr {
        self.needs_json = true;
        PyValueError::new_err("handed to json.dumps")
    }

    unsafe fn string(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let text = text_of(self.py, obj)?;
        self.w.string_units(text.units());
        Ok(())
    }

    /// Write an int's decimal text, quoted when it is a key.
    unsafe fn int(&mut self, obj: *mut ffi::PyObject, key: bool) -> PyResult<()> {
        let mut overflow: c_int = 0;
        let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
        if overflow == 0 {
            if v == -1 && !ffi::PyErr_Occurred().is_null() {
                return Err(PyErr::fetch(self.py));
            }
            if key {
                self.w.int_key(v);
            } else {
                self.w.int(v);
            }
            return Ok(());
        }
        // Beyond 64 bits: `int`'s own decimal formatting.
        let text =
            Owned::new(ffi::PyNumber_ToBase(obj, 10)).ok_or_else(|| PyErr::fetch(self.py))?;
        let mut size: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(text.0, &mut size);
        if data.is_null() {
            return Err(PyErr::fetch(self.py));
        }
        let digits = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
        if key {
            self.w.quoted_raw(digits);
        } else {
            self.w.raw(digits);
        }
        Ok(())
    }

    /// Write a float's repr, quoted when it is a key.
    unsafe fn float(&mut self, obj: *mut ffi::PyObject, key: bool) -> PyResult<()> {
        let v = ffi::PyFloat_AsDouble(obj);
        if v == -1.0 && !ffi::PyErr_Occurred().is_null() {
            return Err(PyErr::fetch(self.py));
        }
        if key {
            self.w.float_key(v);
        } else {
            self.w.float(v);
        }
        Ok(())
    }

    /// Write a dict key as `json` converts it, then `": "`.
    unsafe fn key(&mut self, key: *mut ffi::PyObject) -> PyResult<()> {
        if ffi::Py_TYPE(key) == &raw mut ffi::PyUnicode_Type {
            return self.exact_str_key(key);
        }
        if ffi::PyUnicode_Check(key) != 0 {
            self.string(key)?;
        } else if ffi::PyFloat_Check(key) != 0 {
            self.float(key, true)?;
        } else if key == ffi::Py_True() {
            self.w.quoted_raw(b"true");
        } else if key == ffi::Py_False() {
            self.w.quoted_raw(b"false");
        } else if key == ffi::Py_None() {
            self.w.quoted_raw(b"null");
        } else if ffi::PyLong_Check(key) != 0 {
            self.int(key, true)?;
        } else {
            return Err(bad_key(self.py, key, self.indent_arg.as_ref()));
        }
        self.w.colon();
        Ok(())
    }

    /// A key of exact type `str`, with its `": "`: from the key cache when met
    /// before in this dump, otherwise written (and cached once the cache is set up).
    unsafe fn exact_str_key(&mut self, key: *mut ffi::PyObject) -> PyResult<()> {
        let addr = key as usize;
        self.keys.sync(self.python_calls);
        if let Some(entry) = self.keys.get(addr) {
            self.w.raw(entry);
            return Ok(());
        }
        let text = text_of(self.py, key)?;
        let w = &mut self.w;
        if !(self.keys.wants() && self.keys.put(addr, text.units(), |entry| w.raw(entry))) {
            self.w.string_units(text.units());
            self.w.colon();
        }
        Ok(())
    }

    /// A list or tuple.
    unsafe fn array(&mut self, seq: impl Items) -> PyResult<()> {
        if seq.is_empty() {
            self.w.empty_array();
            return Ok(());
        }
        let path = self.path;
        let open = path.enter(self.py, seq.ptr())?;
        self.w.begin_array();
        self.items(seq)?;
        drop(open);
        self.w.end_array();
        Ok(())
    }

    /// Write the items of a list or tuple.
    ///
    /// Items are fetched a batch at a time and their headers prefetched, so
    /// the memory loads of scattered objects overlap. Borrowed pointers of a
    /// batch are only trusted while no Python code has run; if some did (a
    /// dict subclass's `items()`), the rest of the batch is fetched again.
    unsafe fn items(&mut self, seq: impl Items) -> PyResult<()> {
        let mut batch = [std::ptr::null_mut::<ffi::PyObject>(); BATCH];
        let mut next: ffi::Py_ssize_t = 0;
        loop {
            let mut n = 0;
            while n < BATCH {
                let item = seq.item(next + n as ffi::Py_ssize_t);
                if item.is_null() {
                    break;
                }
                prefetch(item);
                batch[n] = item;
                n += 1;
            }
            if n == 0 {
                return Ok(());
            }
            for &item in &batch[..n] {
                let calls = self.python_calls;
                self.w.item(next == 0);
                self.value(item)?;
                next += 1;
                if self.python_calls != calls {
                    break;
                }
            }
        }
    }

    /// An exact dict: its storage read directly (batched like [`Walker::items`]).
    unsafe fn dict(&mut self, dict: Dict) -> PyResult<()> {
        if dict.is_empty() {
            self.w.empty_object();
            return Ok(());
        }
        let path = self.path;
        let open = path.enter(self.py, dict.0)?;
        self.w.begin_object();
        self.members(dict)?;
        drop(open);
        self.w.end_object();
        Ok(())
    }

    unsafe fn members(&mut self, dict: Dict) -> PyResult<()> {
        let null = std::ptr::null_mut::<ffi::PyObject>();
        let mut keys = [null; BATCH];
        let mut values = [null; BATCH];
        // `resume[j]` is the iteration position just after member `j`.
        let mut resume: [ffi::Py_ssize_t; BATCH] = [0; BATCH];
        let mut pos: ffi::Py_ssize_t = 0;
        let mut first = true;
        loop {
            let mut n = 0;
            while n < BATCH {
                let Some((k, v)) = dict.next(&mut pos) else {
                    break;
                };
                prefetch(v);
                keys[n] = k;
                values[n] = v;
                resume[n] = pos;
                n += 1;
            }
            if n == 0 {
                return Ok(());
            }
            for j in 0..n {
                let calls = self.python_calls;
                self.w.item(first);
                first = false;
                self.key(keys[j])?;
                self.value(values[j])?;
                if self.python_calls != calls {
                    // The dict may have changed: continue from the live table.
                    pos = resume[j];
                    break;
                }
            }
        }
    }

    /// A dict subclass: its `items()` decide the members and their order.
    unsafe fn dict_subclass(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        if Dict(obj).is_empty() {
            self.w.empty_object();
            return Ok(());
        }
        let path = self.path;
        let open = path.enter(self.py, obj)?;
        self.python_calls += 1;
        let result = self.subclass_members(obj);
        drop(open);
        self.python_calls += 1;
        result?;
        self.w.end_object();
        Ok(())
    }

    unsafe fn subclass_members(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let fetch = |py| PyErr::fetch(py);
        let items = Owned::new(ffi::PyMapping_Items(obj)).ok_or_else(|| fetch(self.py))?;
        let iter = Owned::new(ffi::PyObject_GetIter(items.0)).ok_or_else(|| fetch(self.py))?;
        self.w.begin_object();
        let mut first = true;
        loop {
            let Some(pair) = Owned::new(ffi::PyIter_Next(iter.0)) else {
                if !ffi::PyErr_Occurred().is_null() {
                    return Err(fetch(self.py));
                }
                return Ok(());
            };
            if ffi::PyTuple_Check(pair.0) == 0 || ffi::PyTuple_Size(pair.0) != 2 {
                return Err(PyValueError::new_err("items must return 2-tuples"));
            }
            let k = ffi::PyTuple_GetItem(pair.0, 0);
            let v = ffi::PyTuple_GetItem(pair.0, 1);
            self.w.item(first);
            first = false;
            self.key(k)?;
            self.value(v)?;
        }
    }
}
