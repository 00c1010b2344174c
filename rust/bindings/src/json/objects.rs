//! Small typed views of the Python objects the walk reads through the C API.
//!
//! Each wrapper is a pointer whose type was checked by the caller; its
//! methods read what the C encoder of `json` reads, the way it reads it.
//!
//! The wrappers are made only through `unsafe` constructors, which state the
//! type the pointer must have (and check it in debug builds); their safe
//! methods rely on that alone, with the GIL held for the walk.
//!
//! List and tuple items are read straight from the object (`ob_size` and the
//! item array, the layout behind CPython's own `PyList_GET_ITEM` macros, the
//! same in every supported 3.x, spelled out as [`ListLayout`] and
//! [`TupleLayout`]) once a probe at import has read known objects back
//! correctly; otherwise through `PyList_GetItem` / `PyTuple_GetItem`.
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// `PyVarObject`: the header of lists and tuples (CPython 3.10-3.13, the
/// default build; a free-threaded build has another header and fails the probe).
#[repr(C)]
struct VarHeader {
    refcnt: ffi::Py_ssize_t,
    ty: *mut ffi::PyTypeObject,
    size: ffi::Py_ssize_t,
}

/// `PyListObject`: the header, then a pointer to the item array.
#[repr(C)]
struct ListLayout {
    head: VarHeader,
    items: *mut *mut ffi::PyObject,
    allocated: ffi::Py_ssize_t,
}

/// `PyTupleObject`: the header, then the items themselves.
#[repr(C)]
struct TupleLayout {
    head: VarHeader,
    items: [*mut ffi::PyObject; 0],
}

static DIRECT_ITEMS: OnceLock<bool> = OnceLock::new();

/// Decide once, at import, whether list and tuple items are read directly.
pub(crate) fn init(py: Python<'_>) {
    DIRECT_ITEMS.get_or_init(|| probe(py).unwrap_or(false));
    DICT_LAYOUT.get_or_init(|| {
        probe_dicts(py).unwrap_or_else(|e| {
            drop(e);
            None
        })
    });
}

fn probe(py: Python<'_>) -> PyResult<bool> {
    if !cfg!(target_pointer_width = "64") {
        return Ok(false);
    }
    let items = ["first", "second", "third"];
    let list = PyList::new(py, items)?;
    list.append(py.None())?; // a list that grew: its array was reallocated
    let tuple = PyTuple::new(py, items)?;
    // SAFETY: live objects of the checked types, GIL held.
    let ok = unsafe {
        let list_ok = (0..4)
            .all(|i| direct_item(list.as_ptr(), i, false) == ffi::PyList_GetItem(list.as_ptr(), i))
            && direct_item(list.as_ptr(), 4, false).is_null();
        let tuple_ok = (0..3).all(|i| {
            direct_item(tuple.as_ptr(), i, true) == ffi::PyTuple_GetItem(tuple.as_ptr(), i)
        }) && direct_item(tuple.as_ptr(), 3, true).is_null();
        list_ok && tuple_ok
    };
    Ok(ok)
}

/// The item array and size of a list (`inline == false`) or tuple, read
/// from the object.
///
/// # Safety
/// `p` must be a live list or tuple as said, and the GIL held.
#[inline(always)]
unsafe fn item_array(p: *mut ffi::PyObject, inline: bool) -> (*const *mut ffi::PyObject, usize) {
    let size = (*p.cast::<VarHeader>()).size as usize;
    let array = if inline {
        (&raw const (*p.cast::<TupleLayout>()).items).cast::<*mut ffi::PyObject>()
    } else {
        (*p.cast::<ListLayout>()).items.cast_const()
    };
    (array, size)
}

/// Item `i` of a list (`inline == false`) or tuple, or null past the end.
///
/// # Safety
/// As [`item_array`].
#[inline(always)]
unsafe fn direct_item(
    p: *mut ffi::PyObject,
    i: ffi::Py_ssize_t,
    inline: bool,
) -> *mut ffi::PyObject {
    let (array, size) = item_array(p, inline);
    match usize::try_from(i) {
        Ok(i) if i < size => *array.add(i),
        _ => std::ptr::null_mut(),
    }
}

/// Whether list and tuple items are read from the objects on this interpreter.
pub(crate) fn reads_items_in_place() -> bool {
    matches!(DIRECT_ITEMS.get(), Some(true))
}

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
    offload_core::arch::prefetch_read(p.cast::<u8>().cast_const());
}

/// A sequence read by index: item `i` borrowed, or null past the end.
pub(crate) trait Items: Copy {
    fn ptr(self) -> *mut ffi::PyObject;
    fn is_empty(self) -> bool;
    /// # Safety
    /// The GIL must be held and the object alive.
    unsafe fn item(self, i: ffi::Py_ssize_t) -> *mut ffi::PyObject;
    /// The item array and the size, read in place where items are (see
    /// [`reads_items_in_place`]); valid until Python code runs.
    ///
    /// # Safety
    /// As [`Items::item`].
    unsafe fn in_place(self) -> Option<(*const *mut ffi::PyObject, usize)>;
}

/// A `list` (or a subclass iterating as one), read live: its size is read
/// again for every item, as the C encoder does.
#[derive(Clone, Copy)]
pub(crate) struct List(*mut ffi::PyObject, bool);

impl List {
    /// # Safety
    /// `p` must be a live `list` (or subclass) for as long as the view is used,
    /// and the GIL held.
    pub(crate) unsafe fn new(p: *mut ffi::PyObject) -> Self {
        debug_assert!(ffi::PyList_Check(p) != 0);
        List(p, reads_items_in_place())
    }
}

impl Items for List {
    fn ptr(self) -> *mut ffi::PyObject {
        self.0
    }
    #[inline(always)]
    fn is_empty(self) -> bool {
        // SAFETY: a live list (checked by the caller), GIL held; its size is
        // read in place where its items are (a call into libpython otherwise).
        unsafe {
            if self.1 {
                (*self.0.cast::<VarHeader>()).size == 0
            } else {
                ffi::PyList_Size(self.0) == 0
            }
        }
    }
    #[inline(always)]
    unsafe fn in_place(self) -> Option<(*const *mut ffi::PyObject, usize)> {
        self.1.then(|| item_array(self.0, false))
    }
    #[inline(always)]
    unsafe fn item(self, i: ffi::Py_ssize_t) -> *mut ffi::PyObject {
        if self.1 {
            direct_item(self.0, i, false)
        } else if i < ffi::PyList_Size(self.0) {
            ffi::PyList_GetItem(self.0, i)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// A `tuple` (or a subclass iterating as one): a fixed size.
#[derive(Clone, Copy)]
pub(crate) struct Tuple(*mut ffi::PyObject, ffi::Py_ssize_t, bool);

impl Tuple {
    /// # Safety
    /// `p` must be a live tuple and the GIL held.
    pub(crate) unsafe fn new(p: *mut ffi::PyObject) -> Self {
        debug_assert!(ffi::PyTuple_Check(p) != 0);
        let in_place = reads_items_in_place();
        let size = if in_place {
            (*p.cast::<VarHeader>()).size
        } else {
            ffi::PyTuple_Size(p)
        };
        Tuple(p, size, in_place)
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
    unsafe fn in_place(self) -> Option<(*const *mut ffi::PyObject, usize)> {
        self.2.then(|| item_array(self.0, true))
    }
    #[inline(always)]
    unsafe fn item(self, i: ffi::Py_ssize_t) -> *mut ffi::PyObject {
        if self.2 {
            direct_item(self.0, i, true)
        } else if i < self.1 {
            ffi::PyTuple_GetItem(self.0, i)
        } else {
            std::ptr::null_mut()
        }
    }
}

/// `PyDictObject` (3.10-3.13, default build): the used count, a version or
/// watcher tag, the keys table, and the values array of a split table.
#[repr(C)]
struct DictHead {
    refcnt: ffi::Py_ssize_t,
    ty: *mut ffi::PyTypeObject,
    used: ffi::Py_ssize_t,
    tag: u64,
    keys: *const u8,
    values: *const u8,
}

/// The start of `PyDictKeysObject` in 3.11-3.13 (default build).
#[repr(C)]
struct Keys311 {
    refcnt: ffi::Py_ssize_t,
    log2_size: u8,
    log2_index_bytes: u8,
    kind: u8,
    version: u32,
    usable: ffi::Py_ssize_t,
    nentries: ffi::Py_ssize_t,
}

/// The start of `PyDictKeysObject` in 3.10.
#[repr(C)]
struct Keys310 {
    refcnt: ffi::Py_ssize_t,
    size: ffi::Py_ssize_t,
    lookup: *const u8,
    usable: ffi::Py_ssize_t,
    nentries: ffi::Py_ssize_t,
}

/// `dk_kind` of a table whose keys are not all `str` (entries keep the hash).
const KEYS_GENERAL: u8 = 0;

/// How a combined dict's entries are laid out on this interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DictLayout {
    /// 3.10: indices sized by the table size, entries of hash, key, value.
    V310,
    /// 3.11-3.13: indices of `1 << log2_index_bytes` bytes, entries of key
    /// and value unless the table is general.
    V311,
}

static DICT_LAYOUT: OnceLock<Option<DictLayout>> = OnceLock::new();

/// The entries of a combined table (see [`Table`]).
///
/// # Safety
/// `head` must be a live exact dict with a combined table; GIL held.
#[inline(always)]
unsafe fn entries(layout: DictLayout, head: *const DictHead) -> Table {
    let keys = (*head).keys;
    match layout {
        DictLayout::V311 => {
            let k = keys.cast::<Keys311>();
            let indices = keys.add(std::mem::size_of::<Keys311>());
            let start = indices.add(1usize << (*k).log2_index_bytes);
            let stride = if (*k).kind == KEYS_GENERAL { 3 } else { 2 };
            Table {
                start: start.cast(),
                used: (*k).nentries as usize,
                stride,
            }
        }
        DictLayout::V310 => {
            let k = keys.cast::<Keys310>();
            let size = (*k).size as usize;
            let index_bytes = match size {
                0..=0xff => 1,
                0x100..=0xffff => 2,
                0x1_0000..=0xffff_ffff => 4,
                _ => 8,
            };
            let indices = keys.add(std::mem::size_of::<Keys310>());
            Table {
                start: indices.add(size * index_bytes).cast(),
                used: (*k).nentries as usize,
                stride: 3,
            }
        }
    }
}

fn probe_dicts(py: Python<'_>) -> PyResult<Option<DictLayout>> {
    if !cfg!(all(target_pointer_width = "64", target_endian = "little")) {
        return Ok(None);
    }
    let version = py.version_info();
    let layout = match (version.major, version.minor) {
        (3, 10) => DictLayout::V310,
        (3, 11..=13) => DictLayout::V311,
        _ => return Ok(None),
    };
    // str keys, mixed keys, deletions, and tables with 1- and 2-byte indices
    // (the tests dump tables with 4-byte indices on every supported version).
    let code = c"samples = [\n    {'a': 1, 'b': [2], 'c': None},\n    {1: 'x', 'k': 2.5, None: 0, (1, 2): 3},\n    {str(i): i for i in range(300)},\n    {i: str(i) for i in range(300)},\n]\ngone = {str(i): i for i in range(50)}\nfor i in range(0, 50, 3):\n    del gone[str(i)]\nsamples.append(gone)\n";
    let module = PyModule::from_code(py, code, c"strands_offload_dict_probe.py", c"_dict_probe")?;
    let samples = module.getattr("samples")?;
    for sample in samples.try_iter()? {
        let sample = sample?;
        let p = sample.as_ptr();
        // SAFETY: live exact dicts, GIL held; a split table is not read in place.
        let same = unsafe {
            let head = p.cast::<DictHead>().cast_const();
            if !(*head).values.is_null() || (*head).used != ffi::PyDict_Size(p) {
                return Ok(None);
            }
            let (mut a, mut b) = (0, 0);
            loop {
                let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
                let api = (ffi::PyDict_Next(p, &mut a, &mut k, &mut v) != 0).then_some((k, v));
                let ours = entries(layout, head).next(&mut b);
                if api != ours {
                    break false;
                }
                if api.is_none() {
                    break true;
                }
            }
        };
        if !same {
            return Ok(None);
        }
    }
    Ok(Some(layout))
}

/// Whether exact dicts are read in place on this interpreter.
pub(crate) fn reads_dicts_in_place() -> bool {
    matches!(DICT_LAYOUT.get(), Some(Some(_)))
}

/// How dicts are read on this interpreter: `None` through the C API only.
/// A walk reads this once and hands it to every [`Dict::with_layout`].
pub(crate) fn dict_layout() -> Option<DictLayout> {
    DICT_LAYOUT.get().copied().flatten()
}

/// A `dict` (exact, when iterated over its own storage with [`Dict::next`]).
#[derive(Clone, Copy)]
pub(crate) struct Dict(*mut ffi::PyObject, Option<DictLayout>);

impl Dict {
    /// # Safety
    /// `p` must be a live `dict` (or subclass) for as long as the view is used,
    /// and the GIL held.
    pub(crate) unsafe fn new(p: *mut ffi::PyObject) -> Self {
        Self::with_layout(p, dict_layout())
    }

    /// [`Dict::new`] with the layout [`dict_layout`] gave.
    ///
    /// # Safety
    /// As [`Dict::new`], and `layout` must be what [`dict_layout`] returns.
    #[inline(always)]
    pub(crate) unsafe fn with_layout(p: *mut ffi::PyObject, layout: Option<DictLayout>) -> Self {
        debug_assert!(ffi::PyDict_Check(p) != 0);
        debug_assert!(layout == dict_layout());
        Dict(p, layout)
    }

    pub(crate) fn ptr(self) -> *mut ffi::PyObject {
        self.0
    }

    #[inline(always)]
    pub(crate) fn is_empty(self) -> bool {
        // SAFETY: a live dict or subclass (checked by the caller), GIL held.
        // Its count of members is read in place where the layout is known
        // (the import probe checked it against `PyDict_Size`); a subclass
        // instance starts with the same header.
        unsafe {
            if self.1.is_some() {
                return (*self.0.cast::<DictHead>()).used == 0;
            }
            ffi::PyDict_Size(self.0) == 0
        }
    }

    /// The entries of an exact dict's combined table, read in place; `None`
    /// when they are read through the C API (a split table, or a layout the
    /// import probe did not recognise). Python code may change the dict: the
    /// table is valid only until some runs.
    ///
    /// # Safety
    /// The GIL must be held and the dict, of exact type `dict`, alive.
    #[inline(always)]
    pub(crate) unsafe fn table(self) -> Option<Table> {
        debug_assert!(ffi::PyDict_CheckExact(self.0) != 0);
        let layout = self.1?;
        let head = self.0.cast::<DictHead>().cast_const();
        if !(*head).values.is_null() {
            return None;
        }
        Some(entries(layout, head))
    }

    /// The member after position `pos` (borrowed key and value), advancing
    /// it: read from a combined table in place when its layout is known (the
    /// table is looked up afresh on every call, so a dict changed by Python
    /// code in between is read as it is then, as `PyDict_Next` reads it).
    ///
    /// # Safety
    /// The GIL must be held and the dict, of exact type `dict`, alive.
    #[inline(always)]
    pub(crate) unsafe fn next(
        self,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        if let Some(table) = self.table() {
            return table.next(pos);
        }
        let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
        (ffi::PyDict_Next(self.0, pos, &mut k, &mut v) != 0).then_some((k, v))
    }
}

/// A combined table's entries, read in place (see [`Dict::table`]): where
/// they start, how many slots are used, and the words per entry.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    start: *const *mut ffi::PyObject,
    /// Entry slots in use (members and deleted ones).
    pub(crate) used: usize,
    /// Words per entry: the key is at word `stride - 2`, the value after it.
    stride: usize,
}

impl Table {
    /// Entry `i`'s key and value (null for a deleted entry).
    ///
    /// # Safety
    /// `i < used`, and the table still valid (no Python code run since it was read).
    #[inline(always)]
    pub(crate) unsafe fn entry(self, i: usize) -> (*mut ffi::PyObject, *mut ffi::PyObject) {
        let key = self.start.add(i * self.stride + self.stride - 2);
        (*key, *key.add(1))
    }

    /// The member after position `pos`, skipping deleted entries, advancing
    /// `pos` past it (to `used` at the end) as `PyDict_Next` does.
    ///
    /// # Safety
    /// The table still valid (no Python code run since it was read).
    #[inline(always)]
    unsafe fn next(
        self,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        let mut i = usize::try_from(*pos).ok()?;
        while i < self.used {
            let (key, value) = self.entry(i);
            i += 1;
            if !value.is_null() {
                *pos = i as ffi::Py_ssize_t;
                return Some((key, value));
            }
        }
        *pos = i as ffi::Py_ssize_t;
        None
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
