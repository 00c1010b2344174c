//! Python face of the grep core: `TextIndex`, `Matcher`, `search`.
use offload_core::grep::{self, CharRun, GrepError, LineSpan, MatcherSpec, Query};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{detach_checked, grep_error};

/// Bytes that live inside an immutable Python object (`bytes`, or the UTF-8 form
/// CPython caches inside a `str`), kept alive by holding a reference to it.
struct PyHeldBytes {
    _owner: Py<PyAny>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pointed-to buffer belongs to an immutable Python object (a `bytes`
// object's storage, or the UTF-8 cache of a `str`, which is never freed or changed
// while the string lives); `_owner` keeps that object alive for as long as this
// value exists, and nothing ever writes through the pointer.
unsafe impl Send for PyHeldBytes {}
unsafe impl Sync for PyHeldBytes {}

impl AsRef<[u8]> for PyHeldBytes {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: see the `Send`/`Sync` note: valid, immutable, alive while `self` is.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl PyHeldBytes {
    fn from_bytes(b: &Bound<'_, PyBytes>) -> Self {
        Self::from_bytes_at(b, 0)
    }

    /// Holds `b[offset:]` without copying it (`offset` already checked against the length).
    fn from_bytes_at(b: &Bound<'_, PyBytes>, offset: usize) -> Self {
        let s = &b.as_bytes()[offset..];
        PyHeldBytes {
            _owner: b.clone().into_any().unbind(),
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }
}

/// A text (str or UTF-8 bytes) held once with its line index.
#[pyclass(frozen, module = "strands_offload._native")]
pub struct TextIndex {
    inner: grep::TextIndex<PyHeldBytes>,
}

#[pymethods]
impl TextIndex {
    /// `offset` skips a header at the start of `bytes` (a storage frame) without a copy.
    #[new]
    #[pyo3(signature = (data, offset = 0))]
    fn new(py: Python<'_>, data: &Bound<'_, PyAny>, offset: usize) -> PyResult<Self> {
        if offset != 0 {
            let b = data
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err("offset is only accepted with bytes"))?;
            if offset > b.as_bytes().len() {
                return Err(PyValueError::new_err(format!(
                    "offset {offset} is past the end of the data ({} bytes)",
                    b.as_bytes().len()
                )));
            }
            let held = PyHeldBytes::from_bytes_at(b, offset);
            return match detach_checked(py, || grep::TextIndex::new(held))? {
                Ok(inner) => Ok(TextIndex { inner }),
                Err(err) => {
                    // Python's own UnicodeDecodeError, with positions inside the content.
                    let content = PyBytes::new(py, &b.as_bytes()[offset..]);
                    content.call_method1("decode", ("utf-8", "strict"))?;
                    Err(grep_error(err))
                }
            };
        }
        if let Ok(s) = data.cast::<PyString>() {
            match s.to_str() {
                Ok(text) => {
                    let held = PyHeldBytes {
                        _owner: s.clone().into_any().unbind(),
                        ptr: text.as_ptr(),
                        len: text.len(),
                    };
                    let inner =
                        detach_checked(py, || grep::TextIndex::new(held))?.map_err(grep_error)?;
                    Ok(TextIndex { inner })
                }
                Err(_) => {
                    // Lone surrogates: keep them, encoded as their own 3-byte sequences.
                    let encoded = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
                    let held = PyHeldBytes::from_bytes(encoded.cast::<PyBytes>()?);
                    let inner = detach_checked(py, || grep::TextIndex::from_wtf8(held))?
                        .map_err(grep_error)?;
                    Ok(TextIndex { inner })
                }
            }
        } else if let Ok(b) = data.cast::<PyBytes>() {
            let held = PyHeldBytes::from_bytes(b);
            match detach_checked(py, || grep::TextIndex::new(held))? {
                Ok(inner) => Ok(TextIndex { inner }),
                Err(err) => {
                    // Let Python raise its own UnicodeDecodeError (same class, message, offsets).
                    b.call_method1("decode", ("utf-8", "strict"))?;
                    Err(grep_error(err))
                }
            }
        } else {
            Err(PyTypeError::new_err(format!(
                "text must be str or bytes, not {}",
                data.get_type().name()?
            )))
        }
    }

    /// Number of lines, as `len(text.split("\n"))`.
    #[getter]
    fn line_count(&self) -> usize {
        self.inner.line_count()
    }

    /// Whether the text is empty.
    #[getter]
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Whether the text is pure ASCII.
    #[getter]
    fn is_ascii(&self) -> bool {
        self.inner.is_ascii()
    }

    /// Length in bytes of the longest line (a bound on its length in characters).
    #[getter]
    fn longest_line_bytes(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.longest_line_bytes())
    }

    /// Size of the held UTF-8 (or WTF-8) text in bytes.
    #[getter]
    fn byte_length(&self) -> usize {
        self.inner.bytes().len()
    }
}

/// A compiled pattern: a literal or a translated regular expression.
#[pyclass(frozen, module = "strands_offload._native")]
pub struct Matcher {
    // Boxed: SIMD searchers need 32-byte alignment, more than Python's allocator
    // guarantees for the object that holds a pyclass value.
    inner: Box<grep::Matcher>,
}

#[pymethods]
impl Matcher {
    /// A literal needle (UTF-8, or WTF-8 for lone surrogates).
    #[staticmethod]
    fn literal(needle: &[u8]) -> PyResult<Self> {
        let inner =
            grep::Matcher::compile(MatcherSpec::Literal(needle.to_vec())).map_err(grep_error)?;
        Ok(Matcher {
            inner: Box::new(inner),
        })
    }

    /// Lines holding `min` consecutive characters of a set (sorted disjoint inclusive
    /// code point ranges): a counted repeat of one character class.
    #[staticmethod]
    #[pyo3(signature = (ranges, min, surrogate_exact))]
    fn run(ranges: Vec<(u32, u32)>, min: usize, surrogate_exact: bool) -> PyResult<Self> {
        let spec = MatcherSpec::Run(CharRun {
            ranges,
            min,
            surrogate_exact,
        });
        let inner = grep::Matcher::compile(spec).map_err(grep_error)?;
        Ok(Matcher {
            inner: Box::new(inner),
        })
    }

    /// A translated regular expression: `strands_offload._pattern.Translation`
    /// (any object with its attributes).
    #[staticmethod]
    fn regex(py: Python<'_>, translation: RegexTranslation) -> PyResult<Self> {
        let spec = MatcherSpec::Regex {
            linear: translation.linear,
            linear_needs_ascii_text: translation.linear_needs_ascii_text,
            backtracking: translation.backtracking,
            prefilter: translation.prefilter,
            surrogate_exact: translation.surrogate_exact,
            min_chars: translation.min_chars,
        };
        let inner = detach_checked(py, || grep::Matcher::compile(spec))?.map_err(grep_error)?;
        Ok(Matcher {
            inner: Box::new(inner),
        })
    }
}

/// The attributes of a `Translation` (see `strands_offload._pattern`), read by name.
#[derive(FromPyObject)]
struct RegexTranslation {
    #[pyo3(attribute)]
    linear: Option<String>,
    #[pyo3(attribute)]
    linear_needs_ascii_text: bool,
    #[pyo3(attribute)]
    backtracking: String,
    #[pyo3(attribute)]
    prefilter: String,
    #[pyo3(attribute)]
    surrogate_exact: bool,
    #[pyo3(attribute)]
    min_chars: usize,
}

/// Runs one grep or page request and returns the formatted output.
#[pyfunction]
#[pyo3(signature = (index, pattern, matcher, line_span, context_lines, max_chars))]
fn search(
    py: Python<'_>,
    index: &Bound<'_, TextIndex>,
    pattern: Option<&[u8]>,
    matcher: Option<&Bound<'_, Matcher>>,
    line_span: Option<(usize, usize, String)>,
    context_lines: i64,
    max_chars: i64,
) -> PyResult<Py<PyAny>> {
    let index = index.get();
    let matcher = matcher.map(|m| m.get());
    let pattern = match (pattern, matcher) {
        (Some(p), Some(m)) => Some((p, &*m.inner)),
        (None, _) => None,
        (Some(_), None) => return Err(PyTypeError::new_err("a pattern needs a matcher")),
    };
    let span = line_span.as_ref().map(|(first, last, label)| LineSpan {
        first: *first,
        last: *last,
        label,
    });
    let query = Query {
        pattern,
        line_span: span,
        context_lines,
        max_chars,
    };
    let out = detach_checked(py, || grep::search(&index.inner, &query))?.map_err(grep_error)?;
    into_text(py, out)
}

/// Runs one grep of the whole of a UTF-8 `bytes` text not indexed yet: the search
/// follows the indexing read (see `offload_core::grep::search_fresh`).
#[pyfunction]
#[pyo3(signature = (data, pattern, matcher, context_lines, max_chars))]
fn search_bytes(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    pattern: &[u8],
    matcher: &Bound<'_, Matcher>,
    context_lines: i64,
    max_chars: i64,
) -> PyResult<Py<PyAny>> {
    let bytes = data.as_bytes();
    let query = Query {
        pattern: Some((pattern, &*matcher.get().inner)),
        line_span: None,
        context_lines,
        max_chars,
    };
    match detach_checked(py, || grep::search_fresh(bytes, &query))? {
        Ok(out) => into_text(py, out),
        Err(err @ GrepError::InvalidUtf8 { .. }) => {
            // Python's own UnicodeDecodeError (same class, message, offsets).
            data.call_method1("decode", ("utf-8", "strict"))?;
            Err(grep_error(err))
        }
        Err(err) => Err(grep_error(err)),
    }
}

/// The core's output as `str` (WTF-8 from lone surrogates decoded back to them).
fn into_text(py: Python<'_>, out: Vec<u8>) -> PyResult<Py<PyAny>> {
    match String::from_utf8(out) {
        Ok(s) => Ok(crate::fallible::new_str(py, &s)?.into_any().unbind()),
        Err(e) => {
            let bytes = crate::fallible::new_bytes(py, e.as_bytes())?;
            Ok(bytes
                .call_method1("decode", ("utf-8", "surrogatepass"))?
                .unbind())
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TextIndex>()?;
    m.add_class::<Matcher>()?;
    m.add_function(wrap_pyfunction!(search, m)?)?;
    m.add_function(wrap_pyfunction!(search_bytes, m)?)?;
    Ok(())
}
