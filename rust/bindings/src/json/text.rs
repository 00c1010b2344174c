//! Reading a `str`'s characters for the writer, in place where possible.
//!
//! CPython keeps a compact string's characters right behind its header, one,
//! two or four bytes each. Reading them there spares the UTF-8 copy that
//! `PyUnicode_AsUTF8AndSize` makes (and caches on the object, for as long as
//! it lives) of every non-ASCII string. That header is not part of the stable
//! ABI, so it is read only on the versions whose layout we know, and only once
//! a probe at import has read known strings of every kind back correctly.
//! Everything else (other versions, `str` subclasses, which are not compact)
//! goes through the public API.
use std::sync::OnceLock;

use offload_core::json::Units;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A string's characters for the writer.
pub(crate) enum Text<'a> {
    /// Read in place (or CPython's cached UTF-8), valid while the string lives.
    Borrowed(Units<'a>),
    /// Copied code points (a string with lone surrogates, through the public API).
    Copied(Ucs4Copy),
}

impl Text<'_> {
    pub(crate) fn units(&self) -> Units<'_> {
        match self {
            Text::Borrowed(units) => *units,
            Text::Copied(copy) => Units::Ucs4(copy.as_slice()),
        }
    }
}

/// A `PyUnicode_AsUCS4Copy` buffer, freed on drop.
pub(crate) struct Ucs4Copy {
    ptr: *mut ffi::Py_UCS4,
    len: usize,
}

impl Ucs4Copy {
    fn as_slice(&self) -> &[u32] {
        // SAFETY: the buffer holds `len` code points and lives until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Ucs4Copy {
    fn drop(&mut self) {
        // SAFETY: allocated by PyUnicode_AsUCS4Copy with PyMem_Malloc.
        unsafe { ffi::PyMem_Free(self.ptr.cast()) }
    }
}

/// Where a compact string keeps its characters, for one CPython version.
#[derive(Debug, Clone, Copy)]
struct CompactLayout {
    /// Offset of the characters of an ASCII string (`sizeof(PyASCIIObject)`).
    ascii_data: usize,
    /// Offset for other strings (`sizeof(PyCompactUnicodeObject)`).
    other_data: usize,
    /// Whether the state has a `ready` bit that must be set (3.10, 3.11).
    ready_bit: bool,
}

/// The fields every known version's `PyASCIIObject` starts with.
#[repr(C)]
struct AsciiHead {
    refcnt: ffi::Py_ssize_t,
    ty: *mut ffi::PyTypeObject,
    length: ffi::Py_ssize_t,
    hash: ffi::Py_hash_t,
    /// The `state` bitfield, read whole (see the masks below).
    state: u32,
}

/// `PyASCIIObject` and `PyCompactUnicodeObject` of CPython 3.10-3.11 (with `wstr`).
#[repr(C)]
struct Ascii310 {
    head: AsciiHead,
    wstr: *mut u32,
}

#[repr(C)]
struct Compact310 {
    ascii: Ascii310,
    utf8_length: ffi::Py_ssize_t,
    utf8: *mut u8,
    wstr_length: ffi::Py_ssize_t,
}

/// `PyASCIIObject` and `PyCompactUnicodeObject` of CPython 3.12-3.13.
#[repr(C)]
struct Ascii312 {
    head: AsciiHead,
}

#[repr(C)]
struct Compact312 {
    ascii: Ascii312,
    utf8_length: ffi::Py_ssize_t,
    utf8: *mut u8,
}

// The sizes CPython's headers give on 64-bit builds; the import probe checks
// the layouts against real strings as well.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(std::mem::size_of::<Ascii310>() == 48 && std::mem::size_of::<Compact310>() == 72);
    assert!(std::mem::size_of::<Ascii312>() == 40 && std::mem::size_of::<Compact312>() == 56);
};

/// Masks of `state`: `interned:2, kind:3, compact:1, ascii:1, ready:1 (<= 3.11)`.
const KIND_SHIFT: u32 = 2;
const KIND_MASK: u32 = 0b111;
const COMPACT: u32 = 1 << 5;
const ASCII: u32 = 1 << 6;
const READY: u32 = 1 << 7;

impl CompactLayout {
    fn for_version(major: u8, minor: u8) -> Option<Self> {
        if !cfg!(all(target_pointer_width = "64", target_endian = "little")) {
            return None;
        }
        match (major, minor) {
            (3, 10 | 11) => Some(CompactLayout {
                ascii_data: std::mem::size_of::<Ascii310>(),
                other_data: std::mem::size_of::<Compact310>(),
                ready_bit: true,
            }),
            (3, 12 | 13) => Some(CompactLayout {
                ascii_data: std::mem::size_of::<Ascii312>(),
                other_data: std::mem::size_of::<Compact312>(),
                ready_bit: false,
            }),
            _ => None,
        }
    }

    /// The characters of a compact string, in place; `None` for others.
    ///
    /// # Safety
    /// `obj` must be a live `str` (or subclass) and the GIL held; the units
    /// borrow the object.
    #[inline(always)]
    unsafe fn units<'a>(self, obj: *mut ffi::PyObject) -> Option<Units<'a>> {
        let base = obj.cast::<u8>().cast_const();
        let head = &*obj.cast::<AsciiHead>().cast_const();
        let state = head.state;
        if state & COMPACT == 0 || (self.ready_bit && state & READY == 0) {
            return None;
        }
        let len = head.length as usize;
        if state & ASCII != 0 {
            let bytes = std::slice::from_raw_parts(base.add(self.ascii_data), len);
            // SAFETY: ASCII is valid UTF-8.
            return Some(Units::Utf8(std::str::from_utf8_unchecked(bytes)));
        }
        let data = base.add(self.other_data);
        match (state >> KIND_SHIFT) & KIND_MASK {
            1 => Some(Units::Latin1(std::slice::from_raw_parts(data, len))),
            2 => Some(Units::Ucs2(std::slice::from_raw_parts(data.cast(), len))),
            4 => Some(Units::Ucs4(std::slice::from_raw_parts(data.cast(), len))),
            _ => None,
        }
    }
}

static LAYOUT: OnceLock<Option<CompactLayout>> = OnceLock::new();

extern "C" {
    /// Outside the limited API, exported by every CPython this package
    /// supports: a new compact string of `size` characters up to `maxchar`.
    pub(crate) fn PyUnicode_New(size: ffi::Py_ssize_t, maxchar: ffi::Py_UCS4)
        -> *mut ffi::PyObject;
}

/// Where a compact ASCII string's characters start, when strings are read in place.
pub(crate) fn ascii_data_offset() -> Option<usize> {
    match LAYOUT.get() {
        Some(Some(layout)) => Some(layout.ascii_data),
        _ => None,
    }
}

/// Decide once, at import, whether strings are read in place.
pub(crate) fn init(py: Python<'_>) {
    LAYOUT.get_or_init(|| probe(py));
}

/// Whether strings are read in place on this interpreter.
pub(crate) fn reads_in_place() -> bool {
    matches!(LAYOUT.get(), Some(Some(_)))
}

/// The known layout, if strings of every kind read back as written.
fn probe(py: Python<'_>) -> Option<CompactLayout> {
    let version = py.version_info();
    let layout = CompactLayout::for_version(version.major, version.minor)?;
    let samples = [
        "",
        "json",
        "café au lait",
        "€ and ✓",
        "rocket 🚀",
        "\u{10ffff}",
    ];
    for sample in samples {
        let string = PyString::new(py, sample);
        // SAFETY: a live str, GIL held; the units are read before `string` drops.
        let units = unsafe { layout.units(string.as_ptr()) }?;
        let got: Vec<u32> = match units {
            Units::Utf8(s) => s.chars().map(u32::from).collect(),
            Units::Latin1(b) => b.iter().map(|&b| u32::from(b)).collect(),
            Units::Ucs2(u) => u.iter().map(|&u| u32::from(u)).collect(),
            Units::Ucs4(u) => u.to_vec(),
        };
        if !got.iter().copied().eq(sample.chars().map(u32::from)) {
            return None;
        }
    }
    // Writing: a string built in place must read back as the text written.
    let sample = b"json in place";
    // SAFETY: a fresh ASCII string of the sample's length, written before it
    // is shared; GIL held.
    let written = unsafe {
        let obj = PyUnicode_New(sample.len() as ffi::Py_ssize_t, 127);
        if obj.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let data = obj.cast::<u8>().add(layout.ascii_data);
        std::ptr::copy_nonoverlapping(sample.as_ptr(), data, sample.len());
        Bound::from_owned_ptr(py, obj).cast_into_unchecked::<PyString>()
    };
    if written.to_str().ok() != Some("json in place") {
        return None;
    }
    Some(layout)
}

/// The characters of a compact `str`, read in place; `None` when they are
/// not (another interpreter version, a string of another form): then
/// [`text_of`] reads them.
///
/// # Safety
/// `obj` must be a live `str` and the GIL held; the units must not outlive it.
#[inline(always)]
pub(crate) unsafe fn units_in_place<'a>(obj: *mut ffi::PyObject) -> Option<Units<'a>> {
    match LAYOUT.get() {
        Some(Some(layout)) => layout.units(obj),
        _ => None,
    }
}

/// The characters of a `str` (or subclass) object.
///
/// # Safety
/// `obj` must be a live `str` and the GIL held; borrowed units must not
/// outlive it.
#[inline(always)]
pub(crate) unsafe fn text_of<'a>(py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<Text<'a>> {
    if let Some(units) = units_in_place(obj) {
        return Ok(Text::Borrowed(units));
    }
    let mut size: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(obj, &mut size);
    if !data.is_null() {
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
        // SAFETY: CPython hands out valid UTF-8 here (it fails on surrogates).
        return Ok(Text::Borrowed(Units::Utf8(std::str::from_utf8_unchecked(
            bytes,
        ))));
    }
    // Lone surrogates cannot be UTF-8: copy the code points instead.
    if ffi::PyErr_ExceptionMatches(ffi::PyExc_UnicodeEncodeError) == 0 {
        return Err(PyErr::fetch(py));
    }
    ffi::PyErr_Clear();
    let len = ffi::PyUnicode_GetLength(obj);
    if len < 0 {
        return Err(PyErr::fetch(py));
    }
    let ptr = ffi::PyUnicode_AsUCS4Copy(obj);
    if ptr.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok(Text::Copied(Ucs4Copy {
        ptr,
        len: len as usize,
    }))
}
