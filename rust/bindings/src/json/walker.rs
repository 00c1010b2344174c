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

use offload_core::json::{JsonWriter, KeyCache, Put, Sink};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::errors::{bad_key, not_serializable};
use super::guard::OpenPath;
use super::numbers::{exact_float, exact_int};
use super::objects::{
    dict_layout, own_iter, prefetch, Dict, DictLayout, Items, List, Owned, Tuple,
};
use super::text::{text_of, units_in_place};

/// How many items or members ahead of the one being written are prefetched.
const AHEAD: usize = 8;

/// Why a walk stopped.
///
/// Two words at most, so that the result of every value written travels in
/// registers (a bare `PyErr` would make each `Walk<()>` a stack round trip).
pub(crate) enum WalkError {
    /// A Python exception, to raise as it is.
    Python(Box<PyErr>),
    /// A value only `json` itself writes the way `json` does (a container
    /// subclass that is true but iterates to nothing, under the pure-Python
    /// encoder, where `json` writes malformed text): the caller hands the
    /// whole call to `json.dumps`.
    HandToJson,
}

impl From<PyErr> for WalkError {
    #[cold]
    fn from(err: PyErr) -> Self {
        WalkError::Python(Box::new(err))
    }
}

pub(crate) type Walk<T> = Result<T, WalkError>;

pub(crate) struct Walker<'py, S: Sink> {
    py: Python<'py>,
    pub(crate) w: JsonWriter<S>,
    path: OpenPath,
    /// Bumped whenever the walk runs Python code that could mutate objects it
    /// holds borrowed pointers to (see [`Walker::items`]).
    python_calls: u64,
    /// The `indent` argument as given, to reproduce key errors exactly.
    indent_arg: Option<Bound<'py, PyAny>>,
    /// Whether `json` writes this call with its pure-Python encoder (an
    /// indent before CPython 3.13), which tests container subclasses for
    /// emptiness by truth value and unpacks any pair `items()` yields; the C
    /// encoder reads their real size and takes only 2-tuples.
    pure_containers: bool,
    /// Set when the pure-Python encoder read a container subclass otherwise
    /// than the C encoder would (its truth value against its size, a pair
    /// that is not a 2-tuple): the compact text then differs in more than layout.
    pub(crate) layout_dependent: bool,
    /// Whether any value or key not of an exact built-in type stops the walk
    /// with [`WalkError::HandToJson`] (see `_json_dumps_exact`).
    exact_types_only: bool,
    /// Finished texts of `str` keys met before, by address. The walk holds a
    /// reference to every key while it is cached, so its address cannot be
    /// reused by another string, whatever Python code runs meanwhile
    /// (`items()`, a finalizer, a weakref callback): an exact `str` is immutable.
    keys: HeldKeys,
    /// How exact dicts are read (looked up once per walk).
    dict_layout: Option<DictLayout>,
}

impl<'py, S: Sink> Walker<'py, S> {
    pub(crate) fn new(
        py: Python<'py>,
        w: JsonWriter<S>,
        indent_arg: Option<Bound<'py, PyAny>>,
        exact_types_only: bool,
    ) -> Self {
        let pure_containers = indent_arg.is_some() && py.version_info() < (3, 13);
        Walker {
            pure_containers,
            exact_types_only,
            layout_dependent: false,
            py,
            w,
            path: OpenPath::default(),
            python_calls: 0,
            indent_arg,
            keys: HeldKeys::default(),
            dict_layout: dict_layout(),
        }
    }

    /// Write any JSON-able value.
    ///
    /// Scalars of exact built-in types are written here, inlined into the
    /// loops over items and members: most values are, and a call per value
    /// (with the frame the general case needs) cost as much as writing it.
    ///
    /// # Safety
    /// `obj` must be a live object and the GIL held for the whole walk.
    #[inline(always)]
    pub(crate) unsafe fn value(&mut self, obj: *mut ffi::PyObject) -> Walk<()> {
        let tp = ffi::Py_TYPE(obj);
        if tp == &raw mut ffi::PyUnicode_Type {
            return self.string(obj);
        }
        if tp == &raw mut ffi::PyLong_Type {
            return match exact_int(obj) {
                Some(v) => {
                    self.w.int(v);
                    Ok(())
                }
                None => self.int(obj, false),
            };
        }
        // `bool` by its type (its only instances are the two singletons):
        // one predictable test, where testing the two addresses mispredicts
        // on every other value of a column of booleans.
        if tp == &raw mut ffi::PyBool_Type {
            self.w.boolean(obj == ffi::Py_True());
            return Ok(());
        }
        if obj == ffi::Py_None() {
            self.w.null();
            return Ok(());
        }
        if tp == &raw mut ffi::PyFloat_Type {
            return match exact_float(obj) {
                Some(v) => {
                    self.w.float(v);
                    Ok(())
                }
                None => self.float(obj, false),
            };
        }
        self.container_or_other(obj)
    }

    /// [`Walker::value`] past the exact scalars: containers, subclasses and
    /// the rest, in `json`'s order.
    ///
    /// # Safety
    /// As [`Walker::value`].
    #[inline(never)]
    unsafe fn container_or_other(&mut self, obj: *mut ffi::PyObject) -> Walk<()> {
        let tp = ffi::Py_TYPE(obj);
        if tp == &raw mut ffi::PyDict_Type {
            return self.dict(Dict::with_layout(obj, self.dict_layout));
        }
        if tp == &raw mut ffi::PyList_Type {
            return self.array(List::new(obj));
        }
        if tp == &raw mut ffi::PyTuple_Type {
            return self.array(Tuple::new(obj));
        }
        if self.exact_types_only {
            return Err(WalkError::HandToJson);
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
            let own = own_iter(tp, &raw mut ffi::PyList_Type);
            return self.array_subclass(obj, own, |o| unsafe { List::new(o) });
        }
        if ffi::PyTuple_Check(obj) != 0 {
            let own = own_iter(tp, &raw mut ffi::PyTuple_Type);
            return self.array_subclass(obj, own, |o| unsafe { Tuple::new(o) });
        }
        if ffi::PyDict_Check(obj) != 0 {
            return self.dict_subclass(obj);
        }
        // Python code (a `__class__` property) may run: settle the count first.
        self.path.settle();
        Err(not_serializable(self.py, obj).into())
    }

    /// A string: read in place, inline (most values and keys written are
    /// strings), or through [`Walker::string_by_api`].
    #[inline(always)]
    unsafe fn string(&mut self, obj: *mut ffi::PyObject) -> Walk<()> {
        match units_in_place(obj) {
            Some(units) => {
                self.w.string_units(units);
                Ok(())
            }
            None => self.string_by_api(obj),
        }
    }

    #[inline(never)]
    unsafe fn string_by_api(&mut self, obj: *mut ffi::PyObject) -> Walk<()> {
        let text = text_of(self.py, obj)?;
        self.w.string_units(text.units());
        Ok(())
    }

    /// Write an int's decimal text, quoted when it is a key.
    unsafe fn int(&mut self, obj: *mut ffi::PyObject, key: bool) -> Walk<()> {
        let mut overflow: c_int = 0;
        let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
        if overflow == 0 {
            if v == -1 && !ffi::PyErr_Occurred().is_null() {
                return Err(PyErr::fetch(self.py).into());
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
            return Err(PyErr::fetch(self.py).into());
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
    unsafe fn float(&mut self, obj: *mut ffi::PyObject, key: bool) -> Walk<()> {
        let v = ffi::PyFloat_AsDouble(obj);
        if v == -1.0 && !ffi::PyErr_Occurred().is_null() {
            return Err(PyErr::fetch(self.py).into());
        }
        if key {
            self.w.float_key(v);
        } else {
            self.w.float(v);
        }
        Ok(())
    }

    /// Write a dict key as `json` converts it, then `": "`.
    ///
    /// A `str` key met before in this dump is written from the key cache
    /// here, inlined into the loop over members; the rest is a call.
    #[inline(always)]
    unsafe fn key(&mut self, key: *mut ffi::PyObject) -> Walk<()> {
        if ffi::Py_TYPE(key) == &raw mut ffi::PyUnicode_Type {
            if let Some((block, n)) = self.keys.0.get_padded(key as usize) {
                self.w.padded(block, n);
                return Ok(());
            }
            return self.exact_str_key(key);
        }
        self.other_key(key)
    }

    /// [`Walker::key`] for keys that are not of exact type `str`.
    #[inline(never)]
    unsafe fn other_key(&mut self, key: *mut ffi::PyObject) -> Walk<()> {
        if self.exact_types_only && !exact_scalar(key) {
            return Err(WalkError::HandToJson);
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
            // Asks `json` itself: settle the recursion count first.
            self.path.settle();
            return Err(bad_key(self.py, key, self.indent_arg.as_ref()).into());
        }
        self.w.colon();
        Ok(())
    }

    /// A key of exact type `str` missing from the key cache, with its `": "`:
    /// written (and cached once the cache is set up).
    #[inline(never)]
    unsafe fn exact_str_key(&mut self, key: *mut ffi::PyObject) -> Walk<()> {
        let addr = key as usize;
        let text = text_of(self.py, key)?;
        let w = &mut self.w;
        let put = if self.keys.0.wants() {
            self.keys.0.put(addr, text.units(), |entry| w.raw(entry))
        } else {
            Put::TooLong
        };
        match put {
            Put::TooLong => {
                self.w.string_units(text.units());
                self.w.colon();
            }
            Put::Written => {}
            Put::Kept { replaced } => {
                ffi::Py_IncRef(key);
                if let Some(old) = replaced {
                    // An exact str: releasing it runs no Python code.
                    ffi::Py_DecRef(old as *mut ffi::PyObject);
                }
            }
        }
        Ok(())
    }

    /// A list or tuple.
    unsafe fn array(&mut self, seq: impl Items) -> Walk<()> {
        if seq.is_empty() {
            self.w.empty_array();
            return Ok(());
        }
        self.path.enter(self.py, seq.ptr())?;
        self.w.begin_array();
        self.items(seq)?;
        self.path.leave();
        self.w.end_array();
        Ok(())
    }

    /// Write the items of a list or tuple.
    ///
    /// Items are read by index from the item array, the headers of the next
    /// [`AHEAD`] prefetched, so the memory loads of scattered objects
    /// overlap. The array and the size are read again after any Python code
    /// ran (a dict subclass's `items()` further down may change the list), as
    /// the C encoder reads them live.
    unsafe fn items(&mut self, seq: impl Items) -> Walk<()> {
        let Some((mut array, mut size)) = seq.in_place() else {
            return self.items_by_api(seq);
        };
        for i in 0..size.min(AHEAD) {
            prefetch(*array.add(i));
        }
        let mut next = 0;
        let mut calls = self.python_calls;
        while next < size {
            let item = *array.add(next);
            if next + AHEAD < size {
                prefetch(*array.add(next + AHEAD));
            }
            self.w.item(next == 0);
            self.value(item)?;
            next += 1;
            if self.python_calls != calls {
                calls = self.python_calls;
                (array, size) = seq.in_place().unwrap_or((array, 0));
            }
        }
        Ok(())
    }

    /// [`Walker::items`] through the C API, item by item.
    #[inline(never)]
    unsafe fn items_by_api(&mut self, seq: impl Items) -> Walk<()> {
        let mut next: ffi::Py_ssize_t = 0;
        loop {
            let item = seq.item(next);
            if item.is_null() {
                return Ok(());
            }
            self.w.item(next == 0);
            self.value(item)?;
            next += 1;
        }
    }

    /// An exact dict: its storage read directly (prefetched like [`Walker::items`]).
    unsafe fn dict(&mut self, dict: Dict) -> Walk<()> {
        if dict.is_empty() {
            self.w.empty_object();
            return Ok(());
        }
        self.path.enter(self.py, dict.ptr())?;
        self.w.begin_object();
        self.members(dict)?;
        self.path.leave();
        self.w.end_object();
        Ok(())
    }

    /// Write the members of an exact dict.
    ///
    /// A combined table is read in place, entry by entry, the values of the
    /// next [`AHEAD`] entries prefetched; its layout is only trusted while no
    /// Python code has run, so after some did (a dict subclass's `items()`
    /// further down), the table is read again and the walk goes on from the
    /// next entry, as `PyDict_Next` would. Other dicts go through the C API.
    unsafe fn members(&mut self, dict: Dict) -> Walk<()> {
        let mut pos: usize = 0;
        let mut first = true;
        'table: while let Some(table) = dict.table() {
            let used = table.used;
            for i in pos..used.min(pos + AHEAD) {
                prefetch_value(table.entry(i).1);
            }
            while pos < used {
                let (key, value) = table.entry(pos);
                pos += 1;
                if pos + AHEAD <= used {
                    prefetch_value(table.entry(pos + AHEAD - 1).1);
                }
                if value.is_null() {
                    continue; // a deleted member
                }
                let calls = self.python_calls;
                self.w.item(first);
                first = false;
                self.key(key)?;
                self.value(value)?;
                if self.python_calls != calls {
                    continue 'table;
                }
            }
            return Ok(());
        }
        let mut pos = pos as ffi::Py_ssize_t;
        while let Some((key, value)) = dict.next(&mut pos) {
            self.w.item(first);
            first = false;
            self.key(key)?;
            self.value(value)?;
        }
        Ok(())
    }

    /// Before Python code runs: every open container gets held (see
    /// [`OpenPath::hold_open`]), and the count that tells the loops over
    /// items and members to read their container again moves on.
    unsafe fn before_python(&mut self) {
        self.path.hold_open();
        self.python_calls += 1;
    }

    /// Under the pure-Python encoder, whether `obj` is false (then written
    /// empty): `json` tests `not obj`, which runs `__bool__` / `__len__`. The C
    /// encoder tests the real size (`real_empty`); an answer that differs makes
    /// the compact text differ in more than layout.
    unsafe fn falsy(&mut self, obj: *mut ffi::PyObject, real_empty: bool) -> Walk<bool> {
        if !self.pure_containers {
            return Ok(false);
        }
        self.before_python();
        let truth = ffi::PyObject_IsTrue(obj);
        self.python_calls += 1;
        let falsy = match truth {
            0 => true,
            1 => false,
            _ => return Err(PyErr::fetch(self.py).into()),
        };
        if falsy != real_empty {
            self.layout_dependent = true;
        }
        Ok(falsy)
    }

    /// A list or tuple subclass. With its own `__iter__`, `json` writes what
    /// iterating it gives (once); otherwise its items, read like the base type's.
    unsafe fn array_subclass<I: Items>(
        &mut self,
        obj: *mut ffi::PyObject,
        own_iter: bool,
        view: impl Fn(*mut ffi::PyObject) -> I,
    ) -> Walk<()> {
        // Its own methods may drop the last other reference to it.
        let _alive = Owned::borrowed(obj);
        // With its own `__iter__`, the C encoder's emptiness is the iteration's:
        // only a true one is read alike by both encoders.
        let real_empty = !own_iter && view(obj).is_empty();
        if self.falsy(obj, real_empty)? {
            self.w.empty_array();
            return Ok(());
        }
        if !own_iter {
            if self.pure_containers && view(obj).is_empty() {
                return Err(WalkError::HandToJson);
            }
            return self.array(view(obj));
        }
        // The pure-Python encoder checks for a cycle before iterating, the C
        // encoder after (when the iteration gave something).
        let early = self.pure_containers;
        if early {
            self.path.enter(self.py, obj)?;
        }
        self.before_python();
        let items = Owned::new(ffi::PySequence_List(obj));
        self.python_calls += 1;
        let items = items.ok_or_else(|| PyErr::fetch(self.py))?;
        let list = List::new(items.0);
        if list.is_empty() {
            if self.pure_containers {
                return Err(WalkError::HandToJson);
            }
            self.w.empty_array();
            return Ok(());
        }
        if !early {
            self.path.enter(self.py, obj)?;
        }
        self.w.begin_array();
        self.items(list)?;
        self.path.leave();
        self.w.end_array();
        Ok(())
    }

    /// A dict subclass: its `items()` decide the members and their order.
    unsafe fn dict_subclass(&mut self, obj: *mut ffi::PyObject) -> Walk<()> {
        // Its own methods may drop the last other reference to it.
        let _alive = Owned::borrowed(obj);
        let real_empty = Dict::new(obj).is_empty();
        if self.falsy(obj, real_empty)? || (!self.pure_containers && real_empty) {
            self.w.empty_object();
            return Ok(());
        }
        self.path.enter(self.py, obj)?;
        self.before_python();
        let written = self.subclass_members(obj)?;
        self.path.leave();
        self.python_calls += 1;
        if !written {
            return Err(WalkError::HandToJson);
        }
        self.w.end_object();
        Ok(())
    }

    /// Write the members `items()` yields; `false` (nothing written) when it
    /// yields none under the pure-Python encoder.
    unsafe fn subclass_members(&mut self, obj: *mut ffi::PyObject) -> Walk<bool> {
        let fetch = |py| PyErr::fetch(py);
        // The pure-Python encoder iterates `obj.items()` itself; the C one lists it first.
        let items = if self.pure_containers {
            ffi::PyObject_CallMethodObjArgs(
                obj,
                pyo3::intern!(self.py, "items").as_ptr(),
                std::ptr::null_mut::<ffi::PyObject>(),
            )
        } else {
            ffi::PyMapping_Items(obj)
        };
        let items = Owned::new(items).ok_or_else(|| fetch(self.py))?;
        let iter = Owned::new(ffi::PyObject_GetIter(items.0)).ok_or_else(|| fetch(self.py))?;
        let mut first = true;
        loop {
            // Values written since the last item may have counted deeper levels.
            self.path.settle();
            let Some(item) = Owned::new(ffi::PyIter_Next(iter.0)) else {
                if !ffi::PyErr_Occurred().is_null() {
                    return Err(fetch(self.py).into());
                }
                if first {
                    if self.pure_containers {
                        return Ok(false);
                    }
                    self.w.begin_object();
                }
                return Ok(true);
            };
            let pair = if ffi::PyTuple_CheckExact(item.0) != 0 && ffi::PyTuple_Size(item.0) == 2 {
                item
            } else if self.pure_containers {
                // The C encoder would refuse this pair: the compact text differs.
                self.layout_dependent = true;
                unpack_pair(self.py, item)?
            } else if ffi::PyTuple_Check(item.0) == 0 || ffi::PyTuple_Size(item.0) != 2 {
                return Err(PyValueError::new_err("items must return 2-tuples").into());
            } else {
                item
            };
            let k = ffi::PyTuple_GetItem(pair.0, 0);
            let v = ffi::PyTuple_GetItem(pair.0, 1);
            if first {
                self.w.begin_object();
            }
            self.w.item(first);
            first = false;
            self.key(k)?;
            self.value(v)?;
        }
    }
}

/// `key, value = item` in Python: any iterable of two, with Python's own
/// errors for anything else. Returns the pair as a 2-tuple.
unsafe fn unpack_pair(py: Python<'_>, item: Owned) -> PyResult<Owned> {
    static UNPACK: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let unpack = UNPACK.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let code = c"def unpack(item):\n    key, value = item\n    return key, value\n";
        let module =
            PyModule::from_code(py, code, c"strands_offload_json_pairs.py", c"_json_pairs")?;
        Ok(module.getattr("unpack")?.unbind())
    })?;
    let pair = ffi::PyObject_CallFunctionObjArgs(
        unpack.as_ptr(),
        item.0,
        std::ptr::null_mut::<ffi::PyObject>(),
    );
    Owned::new(pair).ok_or_else(|| PyErr::fetch(py))
}

/// The key cache with a reference held to every key it caches (see `Walker::keys`).
#[derive(Default)]
struct HeldKeys(KeyCache);

impl Drop for HeldKeys {
    fn drop(&mut self) {
        for addr in self.0.held() {
            // SAFETY: the reference taken when the key was cached (the GIL is
            // held for the walker's life); an exact str runs no Python code
            // when released.
            unsafe { ffi::Py_DecRef(addr as *mut ffi::PyObject) }
        }
    }
}

/// [`prefetch`] for a dict entry's value, which is null for a deleted entry
/// (prefetching address 0 costs a page walk).
#[inline(always)]
fn prefetch_value(value: *mut ffi::PyObject) {
    if !value.is_null() {
        prefetch(value);
    }
}

/// Whether `obj` is an int, float, bool or None of the exact built-in type
/// (the key types other than `str`).
///
/// # Safety
/// `obj` must be a live object.
unsafe fn exact_scalar(obj: *mut ffi::PyObject) -> bool {
    let tp = ffi::Py_TYPE(obj);
    tp == &raw mut ffi::PyLong_Type
        || tp == &raw mut ffi::PyFloat_Type
        || tp == &raw mut ffi::PyBool_Type
        || obj == ffi::Py_None()
}

const _: () = assert!(std::mem::size_of::<Walk<()>>() <= 16);
