//! `json_dumps` and friends: walk Python objects straight into the core's
//! JSON writer.
//!
//! Converting the object graph is this layer's job (`walker`, over the typed
//! views of `objects` and `text`, with the open-container guard of `guard`);
//! the formatting (float repr, escaping, separators, indentation) is
//! `offload_core::json`. The walk reads objects through the C API, so it
//! holds the GIL.
use offload_core::json::{JsonWriter, Layout, LenSink, Sink};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

mod errors;
mod guard;
mod numbers;
mod object_out;
pub(crate) mod objects;
mod stack_room;
pub(crate) mod text;
mod walker;

pub(crate) use guard::AddrHasher;

use errors::dumps_in_python;
use object_out::{BytesOut, StrOut};
use walker::{WalkError, Walker};

/// Turn `indent` into a layout the way `json` does (`" " * indent` unless a str).
fn layout_for(indent: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Layout>> {
    let Some(indent) = indent.filter(|i| !i.is_none()) else {
        return Ok(Some(Layout::Compact));
    };
    let text = match indent.cast::<PyString>() {
        Ok(s) => s.clone(),
        Err(_) => PyString::new(indent.py(), " ")
            .mul(indent)?
            .cast_into::<PyString>()?,
    };
    // An indent holding a lone surrogate makes text that is not UTF-8:
    // `json.dumps` writes that call (`None`).
    let Ok(text) = text.to_str() else {
        return Ok(None);
    };
    // The copy is as long as the indent the caller chose: a refusal is MemoryError.
    offload_core::alloc::catch_out_of_memory(|| offload_core::alloc::to_vec(text.as_bytes()))
        .map(|t| Some(Layout::Indent(t)))
        .map_err(crate::errors::memory_error)
}

/// What a finished walk gives: the sink and the single-line length.
struct Walked<S> {
    sink: S,
    /// Length of the compact text, when the walk could tell it.
    compact_len: Option<usize>,
    /// Whether the text is ASCII: it always is (ensure_ascii) unless the
    /// indent string is not.
    ascii: bool,
}

/// Walk `obj` into `sink` with `indent`'s layout.
///
/// `Ok(None)` means `json.dumps` must write this call (an indent that is not
/// UTF-8, or [`WalkError::HandToJson`]): the caller hands the call over.
fn walk<S: Sink>(
    py: Python<'_>,
    obj: *mut ffi::PyObject,
    indent: Option<&Bound<'_, PyAny>>,
    sink: S,
    exact_types_only: bool,
) -> PyResult<Option<Walked<S>>> {
    let Some(layout) = layout_for(indent)? else {
        return Ok(None);
    };
    let ascii = match &layout {
        Layout::Compact => true,
        Layout::Indent(text) => text.is_ascii(),
    };
    let indent_arg = indent.filter(|i| !i.is_none()).cloned();
    let mut walker = Walker::new(
        py,
        JsonWriter::new(sink, layout),
        indent_arg,
        exact_types_only,
    );
    // SAFETY: `obj` is a live object and the GIL is held for the whole walk.
    // A buffer that cannot grow unwinds out of the writer (see
    // `offload_core::alloc`); the walker's references (open containers held,
    // cached keys) are released when it is dropped, on every way out.
    let walked = offload_core::alloc::catch_out_of_memory(|| unsafe { walker.value(obj) })
        .map_err(crate::errors::memory_error)?;
    match walked {
        Ok(()) => {
            let compact_len = (!walker.layout_dependent).then(|| walker.w.compact_len());
            Ok(Some(Walked {
                sink: walker.w.into_sink(),
                compact_len,
                ascii,
            }))
        }
        Err(WalkError::HandToJson) => Ok(None),
        Err(WalkError::Python(error)) => Err(*error),
    }
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
    match dumps_text(py, obj, indent, false)? {
        Some(text) => Ok(text),
        None => dumps_in_python(py, obj, indent),
    }
}

/// `json_dumps(obj, indent=indent)` when every value and key in `obj` is of
/// an exact built-in type, else None (a subclass anywhere, or a value only
/// `json` writes): the caller then asks `json.dumps` itself. For the
/// `json.dumps` stand-in, which must answer exactly as `json` does even
/// where a subclass's own methods would be called.
#[pyfunction]
#[pyo3(signature = (obj, *, indent=None))]
fn _json_dumps_exact<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    dumps_text(py, obj, indent, true)
}

/// `json_dumps_len(obj)` under the rule of [`_json_dumps_exact`].
#[pyfunction]
fn _json_dumps_len_exact(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    // SAFETY: `obj` is a live object and the GIL is held.
    unsafe { compact_len_exact(py, obj.as_ptr()) }
}

/// Whether `indent` makes an ASCII layout (as the default separators and
/// `ensure_ascii` escapes are): None, an int, or an ASCII str. Any other
/// indent takes the general path, which also raises what `json` raises.
fn ascii_layout(indent: Option<&Bound<'_, PyAny>>) -> bool {
    match indent {
        None => true,
        Some(i) if i.is_none() || i.is_exact_instance_of::<pyo3::types::PyInt>() => true,
        Some(i) => i
            .cast_exact::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok().map(str::is_ascii))
            .unwrap_or(false),
    }
}

/// The text of a walk, or None when `json` must write it: written straight
/// into the `str` returned where its layout is known and the text is ASCII,
/// otherwise into the spare buffer and copied.
fn dumps_text<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
    exact_types_only: bool,
) -> PyResult<Option<Bound<'py, PyString>>> {
    if text::ascii_data_offset().is_some() && ascii_layout(indent) {
        let out = StrOut::new(py)?;
        return match walk(py, obj.as_ptr(), indent, out, exact_types_only)? {
            // The walk's own account of its layout has the last word: only
            // ASCII text may stand in a string marked ASCII.
            Some(walked) if walked.ascii => walked.sink.finish(py).map(Some),
            Some(walked) => text_from_buffer(py, walked.sink.filled_bytes()).map(Some),
            None => Ok(None),
        };
    }
    let buffer = SPARE_BUFFER.with(|b| b.take());
    let Some(walked) = walk(py, obj.as_ptr(), indent, buffer, exact_types_only)? else {
        return Ok(None);
    };
    let mut out = walked.sink;
    let text = text_from_buffer(py, &out);
    if out.capacity() <= MAX_SPARE_BUFFER {
        out.clear();
        SPARE_BUFFER.with(|b| b.replace(out));
    }
    text.map(Some)
}

/// `json_dumps(obj, indent=indent).encode("utf-8")`, written straight into
/// the `bytes` object.
#[pyfunction]
#[pyo3(signature = (obj, *, indent=None))]
fn json_dumps_utf8<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    Ok(dumps_utf8_measured(py, obj, indent, b"", false)?.0)
}

/// `(prefix + json_dumps_utf8(obj, indent=indent), json_dumps_len(obj))`
/// from one walk.
///
/// For a caller that stores the indented text and estimates from the
/// single-line length (the offloader), without serialising twice; `prefix`
/// (a storage frame's header, say) is written first into the same `bytes`,
/// so that the stored object needs no second copy.
#[pyfunction]
#[pyo3(signature = (obj, *, indent=None, prefix=b"".as_slice()), text_signature = "(obj, *, indent=None, prefix=b'')")]
fn json_dumps_utf8_with_len<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
    prefix: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, usize)> {
    let (bytes, compact) = dumps_utf8_measured(py, obj, indent, prefix, true)?;
    Ok((bytes, compact.unwrap_or_default()))
}

/// The text's bytes, and (when `measure`) the compact text's length.
pub(crate) fn dumps_utf8_measured<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
    prefix: &[u8],
    measure: bool,
) -> PyResult<(Bound<'py, PyBytes>, Option<usize>)> {
    let mut out = BytesOut::new(py)?;
    offload_core::alloc::catch_out_of_memory(|| out.raw(prefix))
        .map_err(crate::errors::memory_error)?;
    match walk(py, obj.as_ptr(), indent, out, false)? {
        Some(walked) => {
            let compact = match (measure, walked.compact_len) {
                (false, _) => None,
                (true, Some(n)) => Some(n - prefix.len()),
                // A container subclass read the pure-Python encoder's way: the
                // compact text needs a walk of its own.
                (true, None) => Some(unsafe { compact_len(py, obj.as_ptr())? }),
            };
            Ok((walked.sink.finish(py)?, compact))
        }
        None => {
            let text = dumps_in_python(py, obj, indent)?;
            let compact = if measure {
                Some(dumps_in_python(py, obj, None)?.len()?)
            } else {
                None
            };
            let text = text.to_str()?.as_bytes();
            // SAFETY: a fresh bytes object of the joined length, filled before use.
            let joined = unsafe {
                let size = prefix.len() + text.len();
                let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), size as ffi::Py_ssize_t);
                let joined =
                    Bound::from_owned_ptr_or_err(py, obj)?.cast_into_unchecked::<PyBytes>();
                let data: *mut u8 = ffi::PyBytes_AsString(joined.as_ptr()).cast();
                std::ptr::copy_nonoverlapping(prefix.as_ptr(), data, prefix.len());
                std::ptr::copy_nonoverlapping(text.as_ptr(), data.add(prefix.len()), text.len());
                joined
            };
            Ok((joined, compact))
        }
    }
}

/// Keep at most this much `str` output buffer around between calls.
const MAX_SPARE_BUFFER: usize = 32 << 20;

thread_local! {
    /// The last `json_dumps` call's output buffer, reused so that large dumps
    /// do not pay for fresh pages (and regrowth) every time.
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

/// The bytes of `json.dumps(obj)` (single-line, ASCII) for a borrowed object
/// pointer. Raises what `json.dumps(obj)` would raise.
///
/// # Safety
/// `obj` must be a live object and the GIL held for the whole call.
pub(crate) unsafe fn compact_text(py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<Vec<u8>> {
    let sink = SPARE_BUFFER.with(|b| b.take());
    match walk(py, obj, None, sink, false)? {
        Some(walked) => Ok(walked.sink),
        None => {
            let obj = Bound::from_borrowed_ptr(py, obj);
            let text = dumps_in_python(py, &obj, None)?;
            let bytes = text.to_str()?.as_bytes();
            // A copy as long as the dump: a refusal is MemoryError.
            offload_core::alloc::catch_out_of_memory(|| offload_core::alloc::to_vec(bytes))
                .map_err(crate::errors::memory_error)
        }
    }
}

/// Give a buffer from [`compact_text`] back for the next dump to reuse.
pub(crate) fn recycle(mut buffer: Vec<u8>) {
    if buffer.capacity() <= MAX_SPARE_BUFFER {
        buffer.clear();
        SPARE_BUFFER.with(|b| b.replace(buffer));
    }
}

/// [`compact_len`] when every value and key is of an exact built-in type,
/// else `None` (see `_json_dumps_exact`).
///
/// # Safety
/// `obj` must be a live object and the GIL held for the whole call.
pub(crate) unsafe fn compact_len_exact(
    py: Python<'_>,
    obj: *mut ffi::PyObject,
) -> PyResult<Option<usize>> {
    Ok(walk(py, obj, None, LenSink::default(), true)?.map(|walked| walked.sink.len))
}

/// Length of `json.dumps(obj)` for a borrowed object pointer.
///
/// # Safety
/// `obj` must be a live object and the GIL held for the whole call.
pub(crate) unsafe fn compact_len(py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<usize> {
    match walk(py, obj, None, LenSink::default(), false)? {
        Some(walked) => Ok(walked.sink.len),
        None => {
            let obj = Bound::from_borrowed_ptr(py, obj);
            Ok(dumps_in_python(py, &obj, None)?.len()?)
        }
    }
}

/// Whether `str` characters are read in place on this interpreter (see
/// `text`); for tests, which expect it on every supported CPython.
#[pyfunction]
fn _json_reads_str_in_place() -> bool {
    text::reads_in_place()
}

/// Whether list and tuple items, and the members of exact dicts with a
/// combined table, are read from the objects (see `objects`); for tests,
/// which expect it on every supported CPython.
#[pyfunction]
fn _json_reads_items_in_place() -> bool {
    objects::reads_items_in_place() && objects::reads_dicts_in_place()
}

/// Whether exact ints and floats are read from the objects (see `numbers`);
/// for tests, which expect it on every supported CPython.
#[pyfunction]
fn _json_reads_numbers_in_place() -> bool {
    numbers::reads_in_place()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    text::init(m.py());
    objects::init(m.py());
    numbers::init(m.py());
    m.add_function(wrap_pyfunction!(json_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(json_dumps_len, m)?)?;
    m.add_function(wrap_pyfunction!(_json_dumps_exact, m)?)?;
    m.add_function(wrap_pyfunction!(_json_dumps_len_exact, m)?)?;
    m.add_function(wrap_pyfunction!(json_dumps_utf8, m)?)?;
    m.add_function(wrap_pyfunction!(json_dumps_utf8_with_len, m)?)?;
    m.add_function(wrap_pyfunction!(_json_reads_str_in_place, m)?)?;
    m.add_function(wrap_pyfunction!(_json_reads_items_in_place, m)?)?;
    m.add_function(wrap_pyfunction!(_json_reads_numbers_in_place, m)?)?;
    Ok(())
}
