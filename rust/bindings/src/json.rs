//! `json_dumps` / `json_dumps_len`: walk Python objects straight into the
//! core's JSON writer.
//!
//! Converting the object graph is this layer's job; the formatting (float repr,
//! escaping, separators, indentation) is `offload_core::json`. The walk reads
//! objects through the C API, so it holds the GIL; it never calls Python code
//! for the built-in types, only for dict subclasses (their `items()`, as
//! `json` does) and on error paths.
//!
//! Python type rules followed (those of `json.dumps` with its defaults):
//! values: str, int, float (and their subclasses, by their built-in value),
//! True/False/None, list/tuple (and subclasses, read by index as the C encoder
//! does), dict (exact dicts read directly, subclasses through `items()`);
//! keys: str, float, True/False/None, int.
use std::collections::HashSet;
use std::ffi::c_int;
use std::hash::{BuildHasherDefault, Hasher};

use offload_core::json::{JsonWriter, Layout, LenSink, Sink};
use pyo3::exceptions::{PyRecursionError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};

/// Nesting depth at which the walk gives up even if Python's recursion limit
/// was raised further, so that the native stack can never overflow.
const MAX_DEPTH: usize = 10_000;

/// Up to this many open containers, the circular-reference check scans the
/// path; deeper paths also keep a hash set.
const LINEAR_PATH: usize = 16;

/// A hasher for pointer-sized keys (addresses are already well spread).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Items fetched (and prefetched) at a time from a container.
const BATCH: usize = 8;

/// Ask the CPU to start loading an object's header and the first bytes of
/// its payload; walking a large document is dominated by these loads.
#[inline(always)]
fn prefetch(p: *mut ffi::PyObject) {
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

/// An owned reference, released on drop.
struct Owned(*mut ffi::PyObject);

impl Owned {
    /// Take a new reference to a borrowed pointer.
    unsafe fn borrowed(p: *mut ffi::PyObject) -> Self {
        ffi::Py_IncRef(p);
        Owned(p)
    }

    /// Wrap a new reference; `None` (error set) when null.
    fn new(p: *mut ffi::PyObject) -> Option<Self> {
        if p.is_null() {
            None
        } else {
            Some(Owned(p))
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: we own one reference and hold the GIL for the whole walk.
        unsafe { ffi::Py_DecRef(self.0) }
    }
}

/// The Python error currently set (or a generic one if none is).
fn fetch(py: Python<'_>) -> PyErr {
    PyErr::fetch(py)
}

struct Walker<'py, S: Sink> {
    py: Python<'py>,
    w: JsonWriter<S>,
    /// Containers open on the current path (circular-reference check). Each
    /// holds a reference: items are read borrowed, and only containers can
    /// run Python code (a dict subclass's `items()`) that might drop them.
    path: Vec<Owned>,
    deep: HashSet<usize, BuildHasherDefault<AddrHasher>>,
    /// Bumped whenever the walk runs Python code that could mutate objects
    /// it holds borrowed pointers to (see [`Walker::sequence_items`]).
    python_calls: u64,
    /// The `indent` argument as given, to reproduce key errors exactly.
    indent_arg: Option<Bound<'py, PyAny>>,
    /// Set when the walk met a value only `json` itself can write the way
    /// `json` does (a list or tuple subclass with its own `__iter__`): the
    /// caller then hands the whole call to `json.dumps`.
    needs_json: bool,
}

/// The text of a Python `str` for the walk: UTF-8 when it has no lone
/// surrogate, else its code points.
enum Text<'a> {
    Utf8(&'a str),
    CodePoints(Ucs4),
}

/// A `PyUnicode_AsUCS4Copy` buffer.
struct Ucs4 {
    ptr: *mut ffi::Py_UCS4,
    len: usize,
}

impl Ucs4 {
    fn as_slice(&self) -> &[u32] {
        // SAFETY: the buffer holds `len` code points (plus a NUL) and lives until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Ucs4 {
    fn drop(&mut self) {
        // SAFETY: allocated by PyUnicode_AsUCS4Copy with PyMem_Malloc.
        unsafe { ffi::PyMem_Free(self.ptr.cast()) }
    }
}

/// Read a `str` (or subclass) object's text without copying when possible.
///
/// # Safety
/// `obj` must be a live `str` object and the GIL held; the returned slice
/// borrows the object's cached UTF-8 and must not outlive it.
#[inline(always)]
unsafe fn str_text<'a>(py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<Text<'a>> {
    let mut size: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(obj, &mut size);
    if !data.is_null() {
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
        // SAFETY: CPython hands out valid UTF-8 here (it fails on surrogates).
        return Ok(Text::Utf8(std::str::from_utf8_unchecked(bytes)));
    }
    // Lone surrogates cannot be UTF-8: read the raw code points instead.
    if ffi::PyErr_ExceptionMatches(ffi::PyExc_UnicodeEncodeError) == 0 {
        return Err(fetch(py));
    }
    ffi::PyErr_Clear();
    let len = ffi::PyUnicode_GetLength(obj);
    if len < 0 {
        return Err(fetch(py));
    }
    let ptr = ffi::PyUnicode_AsUCS4Copy(obj);
    if ptr.is_null() {
        return Err(fetch(py));
    }
    Ok(Text::CodePoints(Ucs4 {
        ptr,
        len: len as usize,
    }))
}

/// Decimal text of a Python int (any size), via `int`'s own formatting.
unsafe fn big_int_text(py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<Owned> {
    Owned::new(ffi::PyNumber_ToBase(obj, 10)).ok_or_else(|| fetch(py))
}

impl<'py, S: Sink> Walker<'py, S> {
    fn new(
        py: Python<'py>,
        sink: S,
        layout: Layout,
        indent_arg: Option<Bound<'py, PyAny>>,
    ) -> Self {
        Walker {
            py,
            w: JsonWriter::new(sink, layout),
            path: Vec::new(),
            deep: HashSet::default(),
            python_calls: 0,
            indent_arg,
            needs_json: false,
        }
    }

    /// Enter a container: circular-reference and depth checks.
    unsafe fn enter(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let addr = obj as usize;
        if self.path.len() < LINEAR_PATH {
            if self.path.iter().any(|o| o.0 as usize == addr) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        } else {
            if self.deep.is_empty() {
                self.deep.extend(self.path.iter().map(|o| o.0 as usize));
            }
            if !self.deep.insert(addr) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        }
        if self.path.len() >= MAX_DEPTH {
            return Err(PyRecursionError::new_err(
                "maximum recursion depth exceeded while encoding a JSON object",
            ));
        }
        if ffi::Py_EnterRecursiveCall(c" while encoding a JSON object".as_ptr()) != 0 {
            return Err(fetch(self.py));
        }
        self.path.push(Owned::borrowed(obj));
        Ok(())
    }

    /// Leave the container entered last.
    unsafe fn leave(&mut self) {
        ffi::Py_LeaveRecursiveCall();
        if let Some(open) = self.path.pop() {
            if !self.deep.is_empty() {
                self.deep.remove(&(open.0 as usize));
                if self.path.len() < LINEAR_PATH {
                    self.deep.clear();
                }
            }
        }
    }

    unsafe fn string(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        match str_text(self.py, obj)? {
            Text::Utf8(s) => self.w.string(s),
            Text::CodePoints(cps) => self.w.string_code_points(cps.as_slice().iter().copied()),
        }
        Ok(())
    }

    /// Write an int's decimal text, quoted when it is a key.
    unsafe fn int(&mut self, obj: *mut ffi::PyObject, quoted: bool) -> PyResult<()> {
        let mut overflow: c_int = 0;
        let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
        if overflow == 0 {
            if v == -1 && !ffi::PyErr_Occurred().is_null() {
                return Err(fetch(self.py));
            }
            if quoted {
                self.w.int_key(v);
            } else {
                self.w.int(v);
            }
            return Ok(());
        }
        let text = big_int_text(self.py, obj)?;
        let mut size: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(text.0, &mut size);
        if data.is_null() {
            return Err(fetch(self.py));
        }
        let digits = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
        if quoted {
            self.w.quoted_raw(digits);
        } else {
            self.w.raw(digits);
        }
        Ok(())
    }

    unsafe fn float_value(&mut self, obj: *mut ffi::PyObject) -> PyResult<f64> {
        let v = ffi::PyFloat_AsDouble(obj);
        if v == -1.0 && !ffi::PyErr_Occurred().is_null() {
            return Err(fetch(self.py));
        }
        Ok(v)
    }

    /// Write any JSON-able value.
    unsafe fn value(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let tp = ffi::Py_TYPE(obj);
        // Exact built-in types first: the common case, no flag lookups.
        if tp == &raw mut ffi::PyUnicode_Type {
            return self.string(obj);
        }
        if tp == &raw mut ffi::PyLong_Type {
            return self.int(obj, false);
        }
        if tp == &raw mut ffi::PyFloat_Type {
            let v = self.float_value(obj)?;
            self.w.float(v);
            return Ok(());
        }
        if tp == &raw mut ffi::PyDict_Type {
            return self.dict_exact(obj);
        }
        if tp == &raw mut ffi::PyList_Type {
            return self.list(obj);
        }
        if obj == ffi::Py_None() {
            self.w.null();
            return Ok(());
        }
        if obj == ffi::Py_True() {
            self.w.boolean(true);
            return Ok(());
        }
        if obj == ffi::Py_False() {
            self.w.boolean(false);
            return Ok(());
        }
        if tp == &raw mut ffi::PyTuple_Type {
            return self.tuple(obj);
        }
        // Subclasses, in the order `json` tests them.
        if ffi::PyUnicode_Check(obj) != 0 {
            return self.string(obj);
        }
        if ffi::PyLong_Check(obj) != 0 {
            return self.int(obj, false);
        }
        if ffi::PyFloat_Check(obj) != 0 {
            let v = self.float_value(obj)?;
            self.w.float(v);
            return Ok(());
        }
        if ffi::PyList_Check(obj) != 0 {
            if own_iter(tp, &raw mut ffi::PyList_Type) {
                return Err(self.hand_to_json());
            }
            return self.list(obj);
        }
        if ffi::PyTuple_Check(obj) != 0 {
            if own_iter(tp, &raw mut ffi::PyTuple_Type) {
                return Err(self.hand_to_json());
            }
            return self.tuple(obj);
        }
        if ffi::PyDict_Check(obj) != 0 {
            return self.dict_items(obj);
        }
        Err(self.not_serializable(obj))
    }

    /// Stop the walk: `json.dumps` must write this call (see `needs_json`).
    fn hand_to_json(&mut self) -> PyErr {
        self.needs_json = true;
        PyValueError::new_err("handed to json.dumps")
    }

    /// `TypeError: Object of type X is not JSON serializable`, as `json` words it.
    unsafe fn not_serializable(&self, obj: *mut ffi::PyObject) -> PyErr {
        let any = Bound::from_borrowed_ptr(self.py, obj);
        let name = match any
            .getattr(pyo3::intern!(self.py, "__class__"))
            .and_then(|c| c.getattr(pyo3::intern!(self.py, "__name__")))
            .and_then(|n| n.str())
        {
            Ok(n) => n.to_string_lossy().into_owned(),
            Err(e) => return e,
        };
        PyTypeError::new_err(format!("Object of type {name} is not JSON serializable"))
    }

    /// The error `json.dumps` raises for a key of an unsupported type.
    ///
    /// The compact (C) and indented (Python) encoders name the type
    /// differently (`decimal.Decimal` vs `Decimal`), so ask `json` itself with
    /// a one-key dict in the same layout.
    unsafe fn bad_key(&self, key: *mut ffi::PyObject) -> PyErr {
        let py = self.py;
        let key = Bound::from_borrowed_ptr(py, key);
        let name = || {
            key.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "object".to_owned())
        };
        let fallback = || {
            PyTypeError::new_err(format!(
                "keys must be str, int, float, bool or None, not {}",
                name()
            ))
        };
        let probe = || -> PyResult<Option<PyErr>> {
            let one = PyDict::new(py);
            one.set_item(&key, py.None())?;
            let kwargs = PyDict::new(py);
            if let Some(indent) = &self.indent_arg {
                kwargs.set_item("indent", indent)?;
            }
            Ok(json_module(py)?
                .call_method("dumps", (one,), Some(&kwargs))
                .err())
        };
        match probe() {
            Ok(Some(err)) if err.is_instance_of::<PyTypeError>(py) => err,
            _ => fallback(),
        }
    }

    /// Write a dict key as `json` converts it, then `": "`.
    unsafe fn key(&mut self, key: *mut ffi::PyObject) -> PyResult<()> {
        let tp = ffi::Py_TYPE(key);
        if tp == &raw mut ffi::PyUnicode_Type || ffi::PyUnicode_Check(key) != 0 {
            self.string(key)?;
        } else if ffi::PyFloat_Check(key) != 0 {
            let v = self.float_value(key)?;
            self.w.float_key(v);
        } else if key == ffi::Py_True() {
            self.w.quoted_raw(b"true");
        } else if key == ffi::Py_False() {
            self.w.quoted_raw(b"false");
        } else if key == ffi::Py_None() {
            self.w.quoted_raw(b"null");
        } else if ffi::PyLong_Check(key) != 0 {
            self.int(key, true)?;
        } else {
            return Err(self.bad_key(key));
        }
        self.w.colon();
        Ok(())
    }

    unsafe fn list(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        if ffi::PyList_Size(obj) == 0 {
            self.w.empty_array();
            return Ok(());
        }
        self.enter(obj)?;
        self.w.begin_array();
        let result = self.sequence_items(obj, |seq, i| {
            // Re-read the size: the list is read live, as the C encoder does.
            if i < ffi::PyList_Size(seq) {
                ffi::PyList_GetItem(seq, i)
            } else {
                std::ptr::null_mut()
            }
        });
        self.leave();
        result?;
        self.w.end_array();
        Ok(())
    }

    unsafe fn tuple(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let n = ffi::PyTuple_Size(obj);
        if n == 0 {
            self.w.empty_array();
            return Ok(());
        }
        self.enter(obj)?;
        self.w.begin_array();
        let result = self.sequence_items(obj, |seq, i| {
            if i < n {
                ffi::PyTuple_GetItem(seq, i)
            } else {
                std::ptr::null_mut()
            }
        });
        self.leave();
        result?;
        self.w.end_array();
        Ok(())
    }

    /// Write the items of a list or tuple; `get(seq, i)` is item `i`
    /// (borrowed) or null past the end.
    ///
    /// Items are fetched a batch at a time and their headers prefetched, so
    /// the memory loads of scattered objects overlap. Borrowed pointers of a
    /// batch are only trusted while no Python code has run; if some did (a
    /// dict subclass's `items()`), the rest of the batch is fetched again.
    unsafe fn sequence_items(
        &mut self,
        seq: *mut ffi::PyObject,
        get: impl Fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject,
    ) -> PyResult<()> {
        let mut batch = [std::ptr::null_mut::<ffi::PyObject>(); BATCH];
        let mut next: ffi::Py_ssize_t = 0;
        loop {
            let mut n = 0;
            while n < BATCH {
                let item = get(seq, next + n as ffi::Py_ssize_t);
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

    /// An exact dict: iterate its storage directly (batched like
    /// [`Walker::sequence_items`]).
    unsafe fn dict_exact(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        if ffi::PyDict_Size(obj) == 0 {
            self.w.empty_object();
            return Ok(());
        }
        self.enter(obj)?;
        self.w.begin_object();
        let result = self.dict_exact_members(obj);
        self.leave();
        result?;
        self.w.end_object();
        Ok(())
    }

    unsafe fn dict_exact_members(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let null = std::ptr::null_mut::<ffi::PyObject>();
        let mut keys = [null; BATCH];
        let mut values = [null; BATCH];
        // `resume[j]` is the iteration position just after member `j`.
        let mut resume: [ffi::Py_ssize_t; BATCH] = [0; BATCH];
        let mut pos: ffi::Py_ssize_t = 0;
        let mut first = true;
        loop {
            let mut n = 0;
            let (mut k, mut v) = (null, null);
            while n < BATCH && ffi::PyDict_Next(obj, &mut pos, &mut k, &mut v) != 0 {
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
    unsafe fn dict_items(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        if ffi::PyDict_Size(obj) == 0 {
            self.w.empty_object();
            return Ok(());
        }
        self.enter(obj)?;
        self.python_calls += 1;
        let result = self.dict_items_body(obj);
        self.leave();
        self.python_calls += 1;
        result?;
        self.w.end_object();
        Ok(())
    }

    unsafe fn dict_items_body(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
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

/// Whether `tp` (a subclass of `base`) iterates its own way: `json` then
/// writes what iterating yields, not the stored items.
///
/// # Safety
/// Both must be live type objects and the GIL held.
unsafe fn own_iter(tp: *mut ffi::PyTypeObject, base: *mut ffi::PyTypeObject) -> bool {
    ffi::PyType_GetSlot(tp, ffi::Py_tp_iter) != ffi::PyType_GetSlot(base, ffi::Py_tp_iter)
}

/// `json.dumps(obj, indent=indent)` itself, for the values the walk hands over.
fn dumps_in_python<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyString>> {
    let kwargs = pyo3::types::PyDict::new(py);
    if let Some(indent) = indent {
        kwargs.set_item("indent", indent)?;
    }
    let text = json_module(py)?
        .getattr("dumps")?
        .call((obj,), Some(&kwargs))?;
    Ok(text.cast_into::<PyString>()?)
}

/// The `json` module, imported once.
fn json_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static JSON: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    JSON.get_or_try_init(py, || py.import("json").map(Bound::unbind))
        .map(|m| m.bind(py))
}

/// Turn `indent` into a layout the way `json` does (`" " * indent` unless a str).
fn layout_for(indent: Option<&Bound<'_, PyAny>>) -> PyResult<Layout> {
    let Some(indent) = indent else {
        return Ok(Layout::Compact);
    };
    if indent.is_none() {
        return Ok(Layout::Compact);
    }
    let text = if let Ok(s) = indent.cast::<PyString>() {
        s.clone()
    } else {
        let spaces = PyString::new(indent.py(), " ").mul(indent)?;
        spaces.cast_into::<PyString>()?
    };
    Ok(Layout::Indent(text.to_str()?.as_bytes().to_vec()))
}

/// Serialize `obj` exactly as `json.dumps(obj, indent=indent)` does.
///
/// Covers `json.dumps` with its other options at their defaults
/// (`ensure_ascii=True`, `allow_nan=True`, default separators, no `default`
/// hook, no `sort_keys`). `indent` may be None, an int or a str, as in `json`.
/// Unsupported keys and values and circular references raise the same
/// exception type and message as `json.dumps`; nesting deeper than Python's
/// recursion limit (or 10,000 levels) raises `RecursionError`.
///
/// A list or tuple subclass with its own `__iter__` anywhere in `obj` hands
/// the whole call to `json.dumps` (which writes what iterating yields); dict
/// subclasses are written through their `items()`, as `json` does.
///
/// Known differences, all in contrived cases: the indented form accepts
/// nesting up to the recursion limit, where `json`'s pure-Python indented
/// encoder may give up somewhat earlier; a dict changed by Python code while
/// it is being written (only a dict subclass's `items()` can run such code)
/// is read as it is then, not as a snapshot.
#[pyfunction]
#[pyo3(signature = (obj, *, indent=None))]
fn json_dumps<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyString>> {
    dump_then(py, obj, indent, |out| text_from_buffer(py, out))
}

/// `json_dumps(obj, indent=indent).encode("utf-8")`, without the `str` in between.
#[pyfunction]
#[pyo3(signature = (obj, *, indent=None))]
fn json_dumps_utf8<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    dump_then(py, obj, indent, |out| Ok(PyBytes::new(py, out)))
}

/// Dump `obj` into the reusable buffer and hand the text to `finish`.
fn dump_then<'py, R>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
    finish: impl FnOnce(&[u8]) -> PyResult<R>,
) -> PyResult<R> {
    let layout = layout_for(indent)?;
    let indent_arg = indent.filter(|i| !i.is_none()).cloned();
    let buffer = SPARE_BUFFER.with(|b| b.take());
    let mut walker = Walker::new(py, buffer, layout, indent_arg);
    // SAFETY: `obj` is a live object and the GIL is held for the whole walk.
    let walked = unsafe { walker.value(obj.as_ptr()) };
    let needs_json = walker.needs_json;
    let mut out = walker.w.into_sink();
    let result = match walked {
        Ok(()) => finish(&out),
        Err(_) if needs_json => {
            let text = dumps_in_python(py, obj, indent)?;
            finish(text.to_str()?.as_bytes())
        }
        Err(error) => Err(error),
    };
    if out.capacity() <= MAX_SPARE_BUFFER {
        out.clear();
        SPARE_BUFFER.with(|b| b.replace(out));
    }
    result
}

/// Keep at most this much output buffer around between calls.
const MAX_SPARE_BUFFER: usize = 32 << 20;

thread_local! {
    /// The last call's output buffer, reused so that large dumps do not pay
    /// for fresh pages (and regrowth) every time.
    static SPARE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A `str` from the writer's output.
fn text_from_buffer<'py>(py: Python<'py>, out: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the buffer holds ASCII plus the UTF-8 of the indent string, so
    // CPython's UTF-8 decoder accepts it; a null result is turned into an error.
    unsafe {
        let p = ffi::PyUnicode_FromStringAndSize(out.as_ptr().cast(), out.len() as ffi::Py_ssize_t);
        Bound::from_owned_ptr_or_err(py, p).map(|b| b.cast_into_unchecked::<PyString>())
    }
}

/// Length of `json.dumps(obj)` (single-line, default separators) without
/// building the text. Raises what `json.dumps(obj)` would raise.
#[pyfunction]
fn json_dumps_len(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    // SAFETY: `obj` is a live object and the GIL is held.
    unsafe { compact_len(py, obj.as_ptr()) }
}

/// Length of `json.dumps(obj)` for a borrowed object pointer.
///
/// # Safety
/// `obj` must be a live object and the GIL held for the whole call.
pub(crate) unsafe fn compact_len(py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<usize> {
    let mut walker = Walker::new(py, LenSink::default(), Layout::Compact, None);
    match walker.value(obj) {
        Ok(()) => Ok(walker.w.sink().len),
        Err(_) if walker.needs_json => {
            let obj = Bound::from_borrowed_ptr(py, obj);
            Ok(dumps_in_python(py, &obj, None)?.len()?)
        }
        Err(error) => Err(error),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(json_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(json_dumps_len, m)?)?;
    m.add_function(wrap_pyfunction!(json_dumps_utf8, m)?)?;
    Ok(())
}
