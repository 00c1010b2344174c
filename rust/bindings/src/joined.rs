//! Texts joined by newlines as one preview source, never joined whole.
//!
//! The offloader previews the start of a tool result's blocks joined by
//! newlines; a block is a `str` or a `memoryview` of stored JSON (ASCII, so
//! its bytes are its code points). Handing the core a source lets its window
//! growth decide how much to read, with its guard against a cut inside the
//! last pre-tokenizer piece; only the windows it asks for are built.
use offload_core::preview::{self, Mode};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyMemoryView, PySlice, PyString};

use crate::counter::TokenCounter;
use crate::errors::detach_checked;
use crate::tokens::{owned_window, substring, PyWindow};

struct Joined {
    /// Each part with its length in code points.
    parts: Vec<(Py<PyAny>, usize)>,
    units: usize,
}

impl Joined {
    fn new(parts: &Bound<'_, PyList>) -> PyResult<Self> {
        let mut held = Vec::with_capacity(parts.len());
        let mut units = 0usize;
        for (i, part) in parts.iter().enumerate() {
            let len = if part.is_exact_instance_of::<PyString>() {
                // SAFETY: a live str.
                let n = unsafe { ffi::PyUnicode_GetLength(part.as_ptr()) };
                if n < 0 {
                    return Err(PyErr::fetch(part.py()));
                }
                n as usize
            } else if part.is_exact_instance_of::<PyMemoryView>() {
                part.len()?
            } else {
                return Err(PyTypeError::new_err(format!(
                    "parts must be str or memoryview, got {} at index {i}",
                    part.get_type().name()?
                )));
            };
            units += usize::from(i > 0) + len;
            held.push((part.unbind(), len));
        }
        Ok(Joined { parts: held, units })
    }

    /// Code points `start..end` of part `part`, as a str.
    fn slice<'py>(
        py: Python<'py>,
        part: &Py<PyAny>,
        start: usize,
        end: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let part = part.bind(py);
        if let Ok(text) = part.cast_exact::<PyString>() {
            return Ok(substring(text, start, end)?.into_any());
        }
        let bytes = part.get_item(PySlice::new(py, start as isize, end as isize, 1))?;
        // SAFETY: a live buffer object; the result is a new reference or NULL
        // with an error set (a byte over 0x7f is an error, never a guess).
        unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyUnicode_FromEncodedObject(
                    bytes.as_ptr(),
                    c"ascii".as_ptr(),
                    c"strict".as_ptr(),
                ),
            )
        }
    }
}

impl preview::TextSource for Joined {
    type Window = PyWindow;
    type Error = PyErr;

    fn units(&self) -> usize {
        self.units
    }

    fn window(&self, start: usize, end: usize) -> PyResult<PyWindow> {
        Python::attach(|py| {
            let pieces = PyList::empty(py);
            let mut offset = 0usize;
            for (i, (part, len)) in self.parts.iter().enumerate() {
                if i > 0 {
                    // The separator sits at `offset`.
                    if (start..end).contains(&offset) {
                        pieces.append("\n")?;
                    }
                    offset += 1;
                }
                let (from, to) = (start.max(offset), end.min(offset + len));
                if from < to {
                    pieces.append(Self::slice(py, part, from - offset, to - offset)?)?;
                }
                offset += len;
                if offset >= end {
                    break;
                }
            }
            let window = PyString::new(py, "").call_method1("join", (pieces,))?;
            owned_window(window.cast::<PyString>()?)
        })
    }
}

/// Where the head preview of `parts` joined by newlines ends: the code point
/// count of the longest start that holds `tokens` tokens of `encoding` without
/// cutting a token, or the joined length when everything fits. The same as
/// `preview_bounds("\n".join(parts), tokens, mode="head", encoding=encoding)[0]`,
/// without joining the parts. A `memoryview` part must hold ASCII.
#[pyfunction]
#[pyo3(signature = (parts, tokens, *, encoding))]
fn joined_head_end(
    py: Python<'_>,
    parts: &Bound<'_, PyList>,
    tokens: usize,
    encoding: &Bound<'_, TokenCounter>,
) -> PyResult<usize> {
    let bpe = encoding.get().bpe()?;
    let source = Joined::new(parts)?;
    let bounds = detach_checked(py, || {
        preview::exact_bounds(&source, bpe, tokens, Mode::Head, 1.0)
    })??;
    Ok(bounds.head_end)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(joined_head_end, m)?)?;
    Ok(())
}
