//! Token counting, encode/decode and preview bounds for Python.
//!
//! Strings that hold lone surrogates are not valid UTF-8; they are rebuilt the way
//! tiktoken does it (see `offload_core::tokens::from_surrogatepass`). Offsets handed
//! back to Python are code points of the ORIGINAL string, so Python can slice it.
use offload_core::preview::{self, Mode};
use offload_core::tokens::{self, Bpe, Encoding, Repaired};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::counter::TokenCounter;
use crate::errors::{detach_checked, memory_error, token_error};

/// A Python string as UTF-8: borrowed when it is valid, repaired when it has surrogates.
pub(crate) enum Utf8<'a> {
    Borrowed(&'a str),
    Repaired(Repaired),
}

impl Utf8<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Utf8::Borrowed(s) => s,
            Utf8::Repaired(r) => &r.text,
        }
    }
}

pub(crate) fn utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Utf8<'a>> {
    match s.to_str() {
        Ok(t) => Ok(Utf8::Borrowed(t)),
        Err(_) => {
            // The C codec, not `s.encode`: a str subclass may override its methods.
            // SAFETY: a live str; the result is a new reference or NULL with an error set.
            let encoded = unsafe {
                Bound::from_owned_ptr_or_err(
                    s.py(),
                    ffi::PyUnicode_AsEncodedString(
                        s.as_ptr(),
                        c"utf-8".as_ptr(),
                        c"surrogatepass".as_ptr(),
                    ),
                )?
            };
            let bytes = encoded.cast::<PyBytes>()?;
            // The repaired copy is as long as the text: a refusal is MemoryError.
            offload_core::alloc::catch_out_of_memory(|| {
                tokens::from_surrogatepass(bytes.as_bytes())
            })
            .map(Utf8::Repaired)
            .map_err(memory_error)
        }
    }
}

/// A Python string as a preview source: windows are sliced and converted
/// with the GIL taken back for each (the BPE work runs without it). Length and
/// slices come from the string's own data, never from a subclass's `__len__`
/// or `__getitem__`, so a limited count reads what an unlimited one reads.
pub(crate) struct PyText {
    text: Py<PyString>,
    units: usize,
}

impl PyText {
    pub(crate) fn new(text: &Bound<'_, PyString>) -> PyResult<Self> {
        // SAFETY: a live str.
        let units = unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) };
        if units < 0 {
            return Err(PyErr::fetch(text.py()));
        }
        Ok(PyText {
            text: text.clone().unbind(),
            units: units as usize,
        })
    }
}

/// One window of a [`PyText`], as owned UTF-8 (repaired if it held surrogates).
pub(crate) enum PyWindow {
    Plain(String),
    Repaired(Repaired),
}

impl preview::Window for PyWindow {
    fn text(&self) -> &str {
        match self {
            PyWindow::Plain(s) => s,
            PyWindow::Repaired(r) => &r.text,
        }
    }

    fn units_before(&self, bytes: usize) -> usize {
        let chars = self.text()[..bytes].chars().count();
        match self {
            PyWindow::Plain(_) => chars,
            PyWindow::Repaired(r) => r.original_offset(chars),
        }
    }
}

impl preview::TextSource for PyText {
    type Window = PyWindow;
    type Error = PyErr;

    fn units(&self) -> usize {
        self.units
    }

    fn window(&self, start: usize, end: usize) -> PyResult<PyWindow> {
        Python::attach(|py| owned_window(&substring(self.text.bind(py), start, end)?))
    }
}

/// Code points `start..end` of a `str` (which must lie within it), read from
/// the string's own data, never through a subclass's `__getitem__`.
pub(crate) fn substring<'py>(
    text: &Bound<'py, PyString>,
    start: usize,
    end: usize,
) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: a live str; the result is a new str or NULL with an error set.
    unsafe {
        Ok(Bound::from_owned_ptr_or_err(
            text.py(),
            ffi::PyUnicode_Substring(
                text.as_ptr(),
                start as ffi::Py_ssize_t,
                end as ffi::Py_ssize_t,
            ),
        )?
        .cast_into_unchecked::<PyString>())
    }
}

/// A window's text as owned UTF-8, repaired if it holds surrogates.
pub(crate) fn owned_window(window: &Bound<'_, PyString>) -> PyResult<PyWindow> {
    Ok(match utf8(window)? {
        Utf8::Borrowed(s) => {
            let mut owned = String::new();
            if owned.try_reserve_exact(s.len()).is_err() {
                offload_core::alloc::out_of_memory(s.len());
            }
            owned.push_str(s);
            PyWindow::Plain(owned)
        }
        Utf8::Repaired(r) => PyWindow::Repaired(r),
    })
}

/// Counts the tokens of `text`.
///
/// An exact counter counts as tiktoken's `encode_ordinary` does, the heuristic one
/// ceil(code points / 4). With `limit`,
/// counting stops once the count passes it and `limit + 1` is returned, so the cost
/// follows the limit, not the text. Lone surrogates count like tiktoken counts them
/// (as U+FFFD; a high+low pair as the character it encodes); the heuristic counts code
/// points as `len()` does.
#[pyfunction]
#[pyo3(signature = (text, encoding, *, limit = None))]
fn count_tokens(
    text: &Bound<'_, PyString>,
    encoding: &Bound<'_, TokenCounter>,
    limit: Option<i64>,
) -> PyResult<usize> {
    let enc = encoding.get().encoding();
    let limit = match limit {
        Some(l) if l < 0 => return Err(PyValueError::new_err("limit must be non-negative")),
        Some(l) => Some(usize::try_from(l).unwrap_or(usize::MAX)),
        None => None,
    };
    let bpe = match enc {
        Encoding::Heuristic => {
            let n = tokens::heuristic_count(text.len()?);
            return Ok(match limit {
                Some(l) if n > l => l.saturating_add(1),
                _ => n,
            });
        }
        Encoding::Bpe(bpe) => bpe,
    };
    count_str(text, bpe, limit)
}

/// Texts longer than this many bytes are counted with the GIL released.
const DETACH_ABOVE: usize = 64 * 1024;

/// Exact tokens of UTF-8 `text`, stopping past `limit` when given; a long
/// text is counted with the GIL released.
pub(crate) fn count_utf8(
    py: Python<'_>,
    text: &str,
    bpe: Bpe,
    limit: Option<usize>,
) -> PyResult<usize> {
    let count = || match limit {
        Some(limit) => tokens::count_with_limit(text, bpe, limit),
        None => tokens::count(text, bpe),
    };
    if text.len() > DETACH_ABOVE {
        detach_checked(py, count)
    } else {
        offload_core::alloc::catch_out_of_memory(count).map_err(memory_error)
    }
}

/// Exact tokens of a Python string. With `limit`, windows are read from the
/// start only as far as the limit needs (the cost follows the limit, and a
/// long text is never converted whole); otherwise it is converted once.
pub(crate) fn count_str(
    text: &Bound<'_, PyString>,
    bpe: Bpe,
    limit: Option<usize>,
) -> PyResult<usize> {
    let py = text.py();
    match limit {
        None => count_utf8(py, utf8(text)?.as_str(), bpe, None),
        Some(limit) => {
            let source = PyText::new(text)?;
            detach_checked(py, || preview::count_with_limit(&source, bpe, limit))?
        }
    }
}

/// Test helper: the exact count of `text` cut into about `parts` parts, each counted on
/// its own thread whatever the text's length (`count_tokens` only splits long texts).
#[pyfunction]
#[pyo3(signature = (text, encoding, parts))]
fn _count_tokens_in_parts(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    encoding: &Bound<'_, TokenCounter>,
    parts: usize,
) -> PyResult<usize> {
    let bpe = encoding.get().bpe()?;
    let utf = utf8(text)?;
    let s = utf.as_str();
    detach_checked(py, || tokens::count_in_parts(s, bpe, parts))
}

/// Bench helper: the `bpe-openai` crate's own count, without our pre-tokenizer.
/// Only in builds with the `bench` feature.
#[cfg(feature = "bench")]
#[pyfunction]
#[pyo3(signature = (text, encoding))]
fn _count_tokens_bpe_openai(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    encoding: &Bound<'_, TokenCounter>,
) -> PyResult<usize> {
    let bpe = encoding.get().bpe()?;
    let utf = utf8(text)?;
    let s = utf.as_str();
    detach_checked(py, || tokens::count_bpe_openai(s, bpe))
}

/// Counts the tokens of every text of an iterable, in parallel with the GIL released.
#[pyfunction]
#[pyo3(signature = (texts, encoding))]
fn count_tokens_batch(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    encoding: &Bound<'_, TokenCounter>,
) -> PyResult<Vec<usize>> {
    let enc = encoding.get().encoding();
    if texts.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "texts must be an iterable of str, not a single str",
        ));
    }
    let mut items: Vec<Bound<'_, PyString>> = Vec::new();
    for item in texts.try_iter()? {
        let item = item?;
        items.push(item.cast_into::<PyString>().map_err(PyErr::from)?);
    }
    let bpe = match enc {
        Encoding::Heuristic => {
            return items
                .iter()
                .map(|s| Ok(tokens::heuristic_count(s.len()?)))
                .collect();
        }
        Encoding::Bpe(bpe) => bpe,
    };
    let converted: Vec<Utf8<'_>> = items.iter().map(utf8).collect::<PyResult<_>>()?;
    let strs: Vec<&str> = converted.iter().map(Utf8::as_str).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    detach_checked(py, || tokens::count_batch(&strs, bpe, threads))
}

/// Token ids of `text`, the same as tiktoken's `encode_ordinary` (special tokens are
/// plain text); the heuristic counter has no ids (`ValueError`).
#[pyfunction]
#[pyo3(signature = (text, encoding))]
fn encode<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    encoding: &Bound<'_, TokenCounter>,
) -> PyResult<Bound<'py, PyList>> {
    let bpe = encoding.get().bpe()?;
    let utf = utf8(text)?;
    let s = utf.as_str();
    let ids = detach_checked(py, || tokens::encode(s, bpe))?;
    id_list(py, &ids)
}

/// A list of token ids; failing to allocate it is `MemoryError`, never a panic.
fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
    // SAFETY: a fresh list of `len` empty slots, each filled exactly once below
    // (PyList_SetItem steals the new int's reference) before it is handed out.
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(ids.len() as ffi::Py_ssize_t))?;
        for (i, &id) in ids.iter().enumerate() {
            let item = ffi::PyLong_FromUnsignedLong(id.into());
            if item.is_null() {
                return Err(PyErr::fetch(py));
            }
            ffi::PyList_SetItem(list.as_ptr(), i as ffi::Py_ssize_t, item);
        }
        Ok(list.cast_into_unchecked::<PyList>())
    }
}

/// Text of token ids, like tiktoken's `decode`: byte sequences that are not valid
/// UTF-8 become U+FFFD as `bytes.decode(errors="replace")` does; special token ids
/// decode to their names; an unknown id raises KeyError.
#[pyfunction]
#[pyo3(signature = (tokens, encoding))]
fn decode<'py>(
    py: Python<'py>,
    tokens: Vec<u32>,
    encoding: &Bound<'_, TokenCounter>,
) -> PyResult<Bound<'py, PyString>> {
    let bpe = encoding.get().bpe()?;
    let text = detach_checked(py, || tokens::decode(&tokens, bpe))?.map_err(token_error)?;
    crate::fallible::new_str(py, &text)
}

/// Preview cut points, in code points of the original string.
///
/// `mode` is "head", "tail" or "head_tail" (the head gets `int(tokens * head_share)`
/// of the budget). The heuristic counter cuts at `tokens * 4` code points like the reference;
/// exact encodings cut on token boundaries, never inside a character, and only read
/// windows at the ends of the text they keep.
///
/// Returns `(head_end, tail_start, total, token_count)`: keep `text[:head_end]` and
/// `text[tail_start:]`; `head_end == tail_start == total` means the text fits whole.
/// `token_count` is the heuristic count for the heuristic counter, the exact count when `count`
/// is true, else `None`.
#[pyfunction]
#[pyo3(signature = (text, tokens, *, mode, encoding, head_share, count))]
fn preview_bounds(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    tokens: i64,
    mode: &str,
    encoding: &Bound<'_, TokenCounter>,
    head_share: f64,
    count: bool,
) -> PyResult<(usize, usize, usize, Option<usize>)> {
    let enc = encoding.get().encoding();
    let mode = Mode::parse(mode).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown mode {mode:?}; valid modes are: head, tail, head_tail"
        ))
    })?;
    if tokens < 0 {
        return Err(PyValueError::new_err("tokens must be non-negative"));
    }
    if !(0.0..=1.0).contains(&head_share) {
        return Err(PyValueError::new_err("head_share must be between 0 and 1"));
    }
    let n = usize::try_from(tokens).unwrap_or(usize::MAX);
    let total = text.len()?;
    let bpe = match enc {
        Encoding::Heuristic => {
            let b = preview::heuristic_bounds(total, n, mode, head_share);
            return Ok((
                b.head_end,
                b.tail_start,
                total,
                Some(tokens::heuristic_count(total)),
            ));
        }
        Encoding::Bpe(bpe) => bpe,
    };
    let token_count = if count {
        let utf = utf8(text)?;
        let s = utf.as_str();
        Some(detach_checked(py, || tokens::count(s, bpe))?)
    } else {
        None
    };
    let source = PyText::new(text)?;
    let b = detach_checked(py, || {
        preview::exact_bounds(&source, bpe, n, mode, head_share)
    })??;
    Ok((b.head_end, b.tail_start, total, token_count))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens_batch, m)?)?;
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(preview_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(_count_tokens_in_parts, m)?)?;
    #[cfg(feature = "bench")]
    m.add_function(wrap_pyfunction!(_count_tokens_bpe_openai, m)?)?;
    Ok(())
}
