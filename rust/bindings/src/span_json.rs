//! The JSON text strands' tracer puts in span events (its `serialize`:
//! `json.dumps(value, ensure_ascii=False)` after its encoder's pass over the
//! value), for the values whose text is known without running Python code.
//!
//! The encoder's pass keeps dicts and lists (rebuilt), writes bytes as the
//! string `"<replaced>"` (they fail its per-value `json.dumps` probe) and
//! keeps every other plain value as it is. Here that is: exact dicts, lists
//! and tuples; exact str, int (64-bit), float, bool and None; exact bytes
//! outside a tuple as `"<replaced>"`. Dict keys are exact str, int, float,
//! bool or None. Anything else, a container inside `max_depth` others, or a
//! string holding a lone surrogate declines the value: the caller
//! then runs the tracer's own code, which gives its own text or error.
//!
//! The writing is the core's [`JsonWriter`] over a sink that escapes the way
//! `ensure_ascii=False` does: quotes, backslashes and control characters
//! only; everything else is written as UTF-8.
use offload_core::json::{JsonWriter, Layout, Sink, Units};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::json::objects::{Dict, Items, List, Tuple};
use crate::json::text::{text_of, units_in_place};

/// A sink that collects the text as UTF-8, escaping as `ensure_ascii=False`.
#[derive(Default)]
struct Utf8Text {
    buf: Vec<u8>,
    /// A lone surrogate was met: the text cannot be UTF-8.
    surrogate: bool,
}

/// A sink that writes nothing (a check that the value would be written).
#[derive(Default)]
struct Nowhere {
    surrogate: bool,
}

/// Whether an ASCII byte must be escaped inside a JSON string.
#[inline(always)]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

fn push_escape(buf: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => buf.extend_from_slice(b"\\\""),
        b'\\' => buf.extend_from_slice(b"\\\\"),
        b'\n' => buf.extend_from_slice(b"\\n"),
        b'\r' => buf.extend_from_slice(b"\\r"),
        b'\t' => buf.extend_from_slice(b"\\t"),
        0x08 => buf.extend_from_slice(b"\\b"),
        0x0c => buf.extend_from_slice(b"\\f"),
        _ => buf.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

/// Bytes that are ASCII or whole UTF-8 sequences: runs copied, escapes written.
fn push_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if needs_escape(b) {
            buf.extend_from_slice(&bytes[start..i]);
            push_escape(buf, b);
            start = i + 1;
        }
    }
    buf.extend_from_slice(&bytes[start..]);
}

/// Code points one at a time; false when one is a lone surrogate.
fn push_code_points(buf: &mut Vec<u8>, units: impl Iterator<Item = u32>) -> bool {
    let mut utf8 = [0u8; 4];
    for unit in units {
        if unit < 0x80 {
            let b = unit as u8;
            if needs_escape(b) {
                push_escape(buf, b);
            } else {
                buf.push(b);
            }
        } else {
            match char::from_u32(unit) {
                Some(c) => buf.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes()),
                None => return false,
            }
        }
    }
    true
}

impl Sink for Utf8Text {
    fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    fn quoted(&mut self, text: Units<'_>) {
        self.buf.push(b'"');
        match text {
            Units::Utf8(s) => push_bytes(&mut self.buf, s.as_bytes()),
            Units::Latin1(b) if b.is_ascii() => push_bytes(&mut self.buf, b),
            Units::Latin1(b) => {
                push_code_points(&mut self.buf, b.iter().map(|&u| u32::from(u)));
            }
            Units::Ucs2(u) => {
                if !push_code_points(&mut self.buf, u.iter().map(|&u| u32::from(u))) {
                    self.surrogate = true;
                }
            }
            Units::Ucs4(u) => {
                if !push_code_points(&mut self.buf, u.iter().copied()) {
                    self.surrogate = true;
                }
            }
        }
        self.buf.push(b'"');
    }

    fn written(&self) -> usize {
        self.buf.len()
    }
}

fn has_surrogate(text: Units<'_>) -> bool {
    match text {
        Units::Utf8(_) | Units::Latin1(_) => false,
        Units::Ucs2(u) => u.iter().any(|&u| (0xD800..0xE000).contains(&u)),
        Units::Ucs4(u) => u.iter().any(|&u| (0xD800..0xE000).contains(&u)),
    }
}

impl Sink for Nowhere {
    fn raw(&mut self, _bytes: &[u8]) {}

    fn byte(&mut self, _b: u8) {}

    fn quoted(&mut self, text: Units<'_>) {
        if has_surrogate(text) {
            self.surrogate = true;
        }
    }

    fn written(&self) -> usize {
        0
    }
}

/// What a sink tells after the walk.
trait Checked: Sink {
    fn surrogate(&self) -> bool;
}

impl Checked for Utf8Text {
    fn surrogate(&self) -> bool {
        self.surrogate
    }
}

impl Checked for Nowhere {
    fn surrogate(&self) -> bool {
        self.surrogate
    }
}

/// Why a value was not written: the tracer's own code must answer.
enum Stop {
    Decline,
    Python(PyErr),
}

impl From<PyErr> for Stop {
    fn from(err: PyErr) -> Self {
        Stop::Python(err)
    }
}

struct SpanWalk<'py, S: Sink> {
    py: Python<'py>,
    w: JsonWriter<S>,
    max_depth: usize,
}

impl<S: Checked> SpanWalk<'_, S> {
    /// Write one value. No Python code runs: only exact built-in types are read.
    ///
    /// # Safety
    /// `obj` must be a live object and the GIL held.
    unsafe fn value(
        &mut self,
        obj: *mut ffi::PyObject,
        depth: usize,
        in_tuple: bool,
    ) -> Result<(), Stop> {
        let tp = ffi::Py_TYPE(obj);
        if tp == &raw mut ffi::PyUnicode_Type {
            return self.string(obj);
        }
        if tp == &raw mut ffi::PyLong_Type {
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
            if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
                ffi::PyErr_Clear();
                return Err(Stop::Decline);
            }
            self.w.int(v);
            return Ok(());
        }
        if tp == &raw mut ffi::PyFloat_Type {
            self.w.float(ffi::PyFloat_AsDouble(obj));
            return Ok(());
        }
        if obj == ffi::Py_None() {
            self.w.null();
            return Ok(());
        }
        if obj == ffi::Py_True() || obj == ffi::Py_False() {
            self.w.boolean(obj == ffi::Py_True());
            return Ok(());
        }
        if tp == &raw mut ffi::PyBytes_Type && !in_tuple {
            self.w.string("<replaced>");
            return Ok(());
        }
        let dict = tp == &raw mut ffi::PyDict_Type;
        let list = tp == &raw mut ffi::PyList_Type;
        let tuple = tp == &raw mut ffi::PyTuple_Type;
        if !(dict || list || tuple) || depth >= self.max_depth {
            return Err(Stop::Decline);
        }
        if dict {
            return self.dict(Dict::new(obj), depth + 1, in_tuple);
        }
        if list {
            return self.array(List::new(obj), depth + 1, in_tuple);
        }
        self.array(Tuple::new(obj), depth + 1, true)
    }

    unsafe fn string(&mut self, obj: *mut ffi::PyObject) -> Result<(), Stop> {
        match units_in_place(obj) {
            Some(units) => self.w.string_units(units),
            None => {
                let text = text_of(self.py, obj)?;
                self.w.string_units(text.units());
            }
        }
        Ok(())
    }

    unsafe fn array(&mut self, seq: impl Items, depth: usize, in_tuple: bool) -> Result<(), Stop> {
        if seq.is_empty() {
            self.w.empty_array();
            return Ok(());
        }
        self.w.begin_array();
        let mut i = 0;
        loop {
            let item = seq.item(i);
            if item.is_null() {
                break;
            }
            self.w.item(i == 0);
            self.value(item, depth, in_tuple)?;
            i += 1;
        }
        self.w.end_array();
        Ok(())
    }

    unsafe fn dict(&mut self, dict: Dict, depth: usize, in_tuple: bool) -> Result<(), Stop> {
        if dict.is_empty() {
            self.w.empty_object();
            return Ok(());
        }
        self.w.begin_object();
        let mut pos: ffi::Py_ssize_t = 0;
        let mut first = true;
        while let Some((key, value)) = dict.next(&mut pos) {
            self.w.item(first);
            first = false;
            self.key(key)?;
            self.value(value, depth, in_tuple)?;
        }
        self.w.end_object();
        Ok(())
    }

    /// A key as `json` converts it, then `": "`.
    unsafe fn key(&mut self, key: *mut ffi::PyObject) -> Result<(), Stop> {
        let tp = ffi::Py_TYPE(key);
        if tp == &raw mut ffi::PyUnicode_Type {
            self.string(key)?;
        } else if tp == &raw mut ffi::PyLong_Type {
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(key, &mut overflow);
            if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
                ffi::PyErr_Clear();
                return Err(Stop::Decline);
            }
            self.w.int_key(v);
        } else if tp == &raw mut ffi::PyFloat_Type {
            self.w.float_key(ffi::PyFloat_AsDouble(key));
        } else if key == ffi::Py_True() {
            self.w.quoted_raw(b"true");
        } else if key == ffi::Py_False() {
            self.w.quoted_raw(b"false");
        } else if key == ffi::Py_None() {
            self.w.quoted_raw(b"null");
        } else {
            return Err(Stop::Decline);
        }
        self.w.colon();
        Ok(())
    }
}

/// Walk `obj` into `sink`: the sink, or `None` when the tracer must answer.
///
/// # Safety
/// `obj` must be a live object and the GIL held.
unsafe fn walk<S: Checked>(
    py: Python<'_>,
    obj: *mut ffi::PyObject,
    sink: S,
    max_depth: usize,
) -> PyResult<Option<S>> {
    let mut walk = SpanWalk {
        py,
        w: JsonWriter::new(sink, Layout::Compact),
        max_depth,
    };
    match walk.value(obj, 0, false) {
        Ok(()) => {
            let sink = walk.w.into_sink();
            Ok((!sink.surrogate()).then_some(sink))
        }
        Err(Stop::Decline) => Ok(None),
        Err(Stop::Python(err)) => Err(err),
    }
}

fn text<'py>(py: Python<'py>, utf8: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the sink wrote valid UTF-8 (code points, never surrogates); a
    // null result is turned into the pending error.
    unsafe {
        let p =
            ffi::PyUnicode_FromStringAndSize(utf8.as_ptr().cast(), utf8.len() as ffi::Py_ssize_t);
        Bound::from_owned_ptr_or_err(py, p).map(|b| b.cast_into_unchecked::<PyString>())
    }
}

/// The tracer's `serialize(obj)` text, or None when its own code must answer.
#[pyfunction]
#[pyo3(signature = (obj, *, max_depth))]
fn _span_json<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    max_depth: usize,
) -> PyResult<Option<Bound<'py, PyString>>> {
    // SAFETY: `obj` is live for the call and the GIL is held.
    match unsafe { walk(py, obj.as_ptr(), Utf8Text::default(), max_depth)? } {
        Some(sink) => text(py, &sink.buf).map(Some),
        None => Ok(None),
    }
}

/// Whether `_span_json(obj)` gives a text (the tracer's `serialize` then
/// succeeds), without writing it.
#[pyfunction]
#[pyo3(signature = (obj, *, max_depth))]
fn _span_json_ok(py: Python<'_>, obj: &Bound<'_, PyAny>, max_depth: usize) -> PyResult<bool> {
    // SAFETY: `obj` is live for the call and the GIL is held.
    Ok(unsafe { walk(py, obj.as_ptr(), Nowhere::default(), max_depth)? }.is_some())
}

/// Look `key` up in an exact dict: borrowed value, or null when missing.
unsafe fn lookup(
    py: Python<'_>,
    dict: *mut ffi::PyObject,
    key: &Bound<'_, PyString>,
) -> PyResult<*mut ffi::PyObject> {
    let found = ffi::PyDict_GetItemWithError(dict, key.as_ptr());
    if found.is_null() && !ffi::PyErr_Occurred().is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok(found)
}

/// The per-message events of the tracer's legacy conventions, for the
/// longest prefix of `messages` whose events are known here, and the length
/// of that prefix. For each message of the prefix from index `write_from` on
/// (when `write`): the event name, the redaction policy's attribute name and
/// the content's text; the messages before `write_from` are only checked. A
/// message that is not an exact dict with a str role and a list of exact
/// dicts as content, or whose content declines, ends the prefix.
#[pyfunction]
#[pyo3(signature = (messages, *, write, max_depth, write_from=0))]
fn _span_message_events<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    write: bool,
    max_depth: usize,
    write_from: usize,
) -> PyResult<(Bound<'py, PyList>, usize)> {
    let events = PyList::empty(py);
    if !messages.is_exact_instance_of::<PyList>() {
        return Ok((events, 0));
    }
    let role_key = pyo3::intern!(py, "role");
    let content_key = pyo3::intern!(py, "content");
    let tool_result_key = pyo3::intern!(py, "toolResult");
    let output = pyo3::intern!(py, "gen_ai.output.messages");
    let input = pyo3::intern!(py, "gen_ai.input.messages");
    let tool_message = pyo3::intern!(py, "gen_ai.tool.message");
    let mut sink = Utf8Text::default();
    let mut done = 0usize;
    // SAFETY: the GIL is held; every pointer read is checked for its exact
    // type first, and no Python code runs until the event is built (only
    // exact built-in types are read), so borrowed items stay alive.
    unsafe {
        let list = List::new(messages.as_ptr());
        loop {
            let message = list.item(done as ffi::Py_ssize_t);
            if message.is_null() || ffi::Py_TYPE(message) != &raw mut ffi::PyDict_Type {
                break;
            }
            let role = lookup(py, message, role_key)?;
            let content = lookup(py, message, content_key)?;
            if role.is_null()
                || content.is_null()
                || ffi::Py_TYPE(role) != &raw mut ffi::PyUnicode_Type
                || ffi::Py_TYPE(content) != &raw mut ffi::PyList_Type
            {
                break;
            }
            let blocks = List::new(content);
            let mut tool_result = false;
            let mut plain = true;
            let mut i = 0;
            loop {
                let block = blocks.item(i);
                if block.is_null() {
                    break;
                }
                if ffi::Py_TYPE(block) != &raw mut ffi::PyDict_Type {
                    plain = false;
                    break;
                }
                tool_result |= ffi::PyDict_Contains(block, tool_result_key.as_ptr()) == 1;
                i += 1;
            }
            if !plain {
                break;
            }
            if !write || done < write_from {
                if walk(py, content, Nowhere::default(), max_depth)?.is_none() {
                    break;
                }
                done += 1;
                continue;
            }
            let text = {
                sink.buf.clear();
                sink.surrogate = false;
                match walk(py, content, sink, max_depth)? {
                    Some(written) => {
                        sink = written;
                        text(py, &sink.buf)?
                    }
                    None => break,
                }
            };
            let role = Bound::from_borrowed_ptr(py, role).cast_into_unchecked::<PyString>();
            let Ok(role) = role.to_str() else {
                break; // lone surrogates: the tracer's own code answers
            };
            let name = if tool_result {
                tool_message.clone()
            } else {
                PyString::new(py, &format!("gen_ai.{role}.message"))
            };
            let policy = if role == "assistant" { output } else { input };
            let event = PyTuple::new(
                py,
                [name.into_any(), policy.clone().into_any(), text.into_any()],
            )?;
            events.append(event)?;
            done += 1;
        }
    }
    Ok((events, done))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_span_json, m)?)?;
    m.add_function(wrap_pyfunction!(_span_json_ok, m)?)?;
    m.add_function(wrap_pyfunction!(_span_message_events, m)?)?;
    Ok(())
}
