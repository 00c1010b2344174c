//! `BlockMeter`: one walk that measures message blocks and tool results, with
//! the counter as a parameter (the SDK's chars/4 text and chars/2 JSON
//! heuristic, or exact BPE tokens, optionally stopping at a limit).
//!
//! The context manager measures every block on every model call, the
//! offloader a tool result before deciding to offload it, the accelerated
//! `Model.count_tokens` whole conversations: all three read blocks here. The
//! walk over messages and blocks is this layer's (it reads Python objects); the
//! JSON text comes from the `json` walker and the counting from
//! `offload_core::tokens`.
//!
//! Only the shapes messages have in practice are read: exact dicts and lists,
//! exact `str` texts. Anything else (a subclass, a missing `content`, a text
//! that is not a `str`) makes a method return `None`, and the caller measures
//! through the SDK's own walk, errors included. A JSON value that `json.dumps`
//! rejects with `TypeError` or `ValueError` counts 0, as in the SDK.
//!
//! Counts of blocks that carry JSON (`toolUse`, `toolResult`) are remembered
//! by the block's identity until `clear()`: the meter holds a reference to
//! each, so an address cannot be reused meanwhile. The stored (indented) form
//! of a tool result's JSON values is remembered the same way, with its
//! single-line length: a value that is offloaded is walked once, for its
//! count and for storage.
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::{Duration, Instant};

use offload_core::json::compact_from_indented;
use offload_core::tokens::{heuristic_count, heuristic_json_count, Bpe, Encoding};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyInt, PyString};

use crate::counter::TokenCounter;
use crate::errors::detach_checked;
use crate::json::{
    compact_len, compact_len_exact, compact_text, dumps_utf8_measured, recycle, AddrHasher,
};
use crate::tokens::{count_str, count_utf8, substring};

/// The indent of the stored form (`json.dumps(value, indent=2)`).
const STORED_INDENT: &[u8] = b"  ";

/// The keys the heuristic reads, interned once.
struct Keys {
    content: Py<PyString>,
    text: Py<PyString>,
    tool_use: Py<PyString>,
    tool_result: Py<PyString>,
    reasoning_content: Py<PyString>,
    reasoning_text: Py<PyString>,
    guard_content: Py<PyString>,
    citations_content: Py<PyString>,
    name: Py<PyString>,
    input: Py<PyString>,
    json: Py<PyString>,
}

fn keys(py: Python<'_>) -> &Keys {
    static KEYS: PyOnceLock<Keys> = PyOnceLock::new();
    KEYS.get_or_init(py, || {
        let k = |s: &str| PyString::intern(py, s).unbind();
        Keys {
            content: k("content"),
            text: k("text"),
            tool_use: k("toolUse"),
            tool_result: k("toolResult"),
            reasoning_content: k("reasoningContent"),
            reasoning_text: k("reasoningText"),
            guard_content: k("guardContent"),
            citations_content: k("citationsContent"),
            name: k("name"),
            input: k("input"),
            json: k("json"),
        }
    })
}

/// Why a count could not be made natively.
enum Miss {
    /// A shape left to the SDK's walk.
    Shape,
    /// A Python error to raise as is.
    Error(PyErr),
}

impl From<PyErr> for Miss {
    fn from(e: PyErr) -> Self {
        Miss::Error(e)
    }
}

type Count = Result<usize, Miss>;

fn is_exact_dict(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: reading the type of a live object.
    unsafe { ffi::Py_TYPE(obj.as_ptr()) == &raw mut ffi::PyDict_Type }
}

fn is_exact_list(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: reading the type of a live object.
    unsafe { ffi::Py_TYPE(obj.as_ptr()) == &raw mut ffi::PyList_Type }
}

/// `d[key]` of an exact dict (a new reference), `None` when absent.
fn get<'py>(d: &Bound<'py, PyAny>, key: &Py<PyString>) -> Result<Option<Bound<'py, PyAny>>, Miss> {
    let py = d.py();
    // SAFETY: `d` is a live exact dict, `key` a live str, and the GIL is held;
    // the borrowed result is turned into a new reference at once.
    unsafe {
        let v = ffi::PyDict_GetItemWithError(d.as_ptr(), key.as_ptr());
        if v.is_null() {
            if !ffi::PyErr_Occurred().is_null() {
                return Err(Miss::Error(PyErr::fetch(py)));
            }
            return Ok(None);
        }
        Ok(Some(Bound::from_borrowed_ptr(py, v)))
    }
}

/// `d[key]` when present, which must then be an exact dict.
fn get_dict<'py>(
    d: &Bound<'py, PyAny>,
    key: &Py<PyString>,
) -> Result<Option<Bound<'py, PyAny>>, Miss> {
    match get(d, key)? {
        Some(v) if !is_exact_dict(&v) => Err(Miss::Shape),
        found => Ok(found),
    }
}

/// The items of an exact list, each as a new reference. The size is re-read
/// at each step: Python code run by the JSON walker (a dict subclass's
/// `items()`) could change the list.
fn list_items<'py>(
    list: &Bound<'py, PyAny>,
) -> Result<impl Iterator<Item = Bound<'py, PyAny>> + use<'py>, Miss> {
    if !is_exact_list(list) {
        return Err(Miss::Shape);
    }
    let list = list.clone();
    let mut i: ffi::Py_ssize_t = 0;
    Ok(std::iter::from_fn(move || {
        // SAFETY: `list` is a live exact list held by the iterator, the GIL is held,
        // and the borrowed item becomes a new reference at once.
        unsafe {
            if i >= ffi::PyList_Size(list.as_ptr()) {
                return None;
            }
            let item = ffi::PyList_GetItem(list.as_ptr(), i);
            i += 1;
            Some(Bound::from_borrowed_ptr(list.py(), item))
        }
    }))
}

/// Whether `e` is what the SDK's JSON measure turns into 0.
fn rejected_json(py: Python<'_>, e: &PyErr) -> bool {
    e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py)
}

/// A count of a part's two ends of `half` code points each, scaled to the
/// part's `len`, rounded as Python's `round` does (halves to even).
fn scaled(ends: usize, len: usize, half: usize) -> usize {
    (ends as f64 * len as f64 / (2 * half) as f64).round_ties_even() as usize
}

/// A tool result's stored JSON: the stored bytes (after the prefix) and the
/// single-line length.
struct Stored {
    /// The value, held so that its address stays its own.
    _value: Py<PyAny>,
    bytes: Py<PyBytes>,
    compact_len: usize,
}

/// Measures message blocks and tool results with one counter.
#[pyclass(module = "strands_offload._native")]
pub struct BlockMeter {
    counter: Encoding,
    /// Whether a heuristic JSON length is taken only from a value of exact
    /// built-in types (anything else, or any error but the ones the SDK turns
    /// into 0, leaves the block to the SDK's walk): for the drop-in of the
    /// SDK's estimate, whose `json.dumps` must be answered exactly.
    exact_json: bool,
    /// Written before each stored JSON form (a storage frame's header).
    prefix: Vec<u8>,
    /// Block address -> (the block, held so the address stays its; its count).
    known: HashMap<usize, (Py<PyAny>, usize), BuildHasherDefault<AddrHasher>>,
    /// JSON value address -> its stored form.
    stored: HashMap<usize, Stored, BuildHasherDefault<AddrHasher>>,
    /// Time spent counting since the last `take_seconds` (the savings ledger's native time:
    /// kept here, a Python clock around each call would cost more than small calls take).
    busy: Duration,
}

impl BlockMeter {
    /// Tokens of an exact `str`.
    fn text(&self, obj: &Bound<'_, PyAny>, limit: Option<usize>) -> Count {
        // SAFETY: reading the type of a live object.
        if unsafe { ffi::Py_TYPE(obj.as_ptr()) } != &raw mut ffi::PyUnicode_Type {
            return Err(Miss::Shape);
        }
        let text = obj.cast::<PyString>().map_err(PyErr::from)?;
        match self.counter {
            Encoding::Heuristic => {
                // SAFETY: a live str.
                let n = unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) };
                if n < 0 {
                    return Err(Miss::Error(PyErr::fetch(obj.py())));
                }
                Ok(heuristic_count(n as usize))
            }
            Encoding::Bpe(bpe) => Ok(count_str(text, bpe, limit)?),
        }
    }

    /// Tokens of the single-line JSON of a value (0 for what `json.dumps` rejects).
    fn json(&self, obj: &Bound<'_, PyAny>) -> Count {
        let py = obj.py();
        match self.counter {
            Encoding::Heuristic if self.exact_json => {
                // SAFETY: `obj` is held alive by the caller and the GIL is held.
                match unsafe { compact_len_exact(py, obj.as_ptr()) } {
                    Ok(Some(n)) => Ok(heuristic_json_count(n)),
                    Err(e) if rejected_json(py, &e) => Ok(0),
                    // A subclass, or json's own recursion budget to apply.
                    Ok(None) | Err(_) => Err(Miss::Shape),
                }
            }
            Encoding::Heuristic => {
                // SAFETY: as above.
                match unsafe { compact_len(py, obj.as_ptr()) } {
                    Ok(n) => Ok(heuristic_json_count(n)),
                    Err(e) if rejected_json(py, &e) => Ok(0),
                    Err(e) => Err(Miss::Error(e)),
                }
            }
            Encoding::Bpe(bpe) => {
                // SAFETY: as above.
                match unsafe { compact_text(py, obj.as_ptr()) } {
                    Ok(text) => {
                        // The writer's single-line output is ASCII.
                        let n = count_utf8(py, std::str::from_utf8(&text).unwrap_or(""), bpe, None);
                        recycle(text);
                        Ok(n?)
                    }
                    Err(e) if rejected_json(py, &e) => Ok(0),
                    Err(e) => Err(Miss::Error(e)),
                }
            }
        }
    }

    /// The stored form of a JSON value, walked once per value.
    fn stored_form<'py>(&mut self, value: &Bound<'py, PyAny>) -> PyResult<&Stored> {
        let addr = value.as_ptr() as usize;
        if !self.stored.contains_key(&addr) {
            let py = value.py();
            let indent = PyInt::new(py, 2).into_any();
            let (bytes, compact) =
                dumps_utf8_measured(py, value, Some(&indent), &self.prefix, true)?;
            self.stored.insert(
                addr,
                Stored {
                    _value: value.clone().unbind(),
                    bytes: bytes.unbind(),
                    compact_len: compact.unwrap_or_default(),
                },
            );
        }
        Ok(&self.stored[&addr])
    }

    /// Tokens of a tool result's JSON value, from its stored form (walked
    /// once for storage and count); `None` when `json.dumps` rejects it.
    fn stored_json(
        &mut self,
        value: &Bound<'_, PyAny>,
        limit: Option<usize>,
        sample: Option<usize>,
    ) -> Result<Option<usize>, Miss> {
        let py = value.py();
        let counter = self.counter;
        let skip = self.prefix.len();
        let stored = match self.stored_form(value) {
            Ok(stored) => stored,
            Err(e) if rejected_json(py, &e) => return Ok(None),
            Err(e) => return Err(Miss::Error(e)),
        };
        let bpe = match counter {
            Encoding::Heuristic => return Ok(Some(heuristic_json_count(stored.compact_len))),
            Encoding::Bpe(bpe) => bpe,
        };
        let bytes = stored.bytes.bind(py).as_bytes();
        let mut compact = Vec::new();
        detach_checked(py, || {
            compact_from_indented(&bytes[skip..], STORED_INDENT, &mut compact)
        })?;
        // The stored form is ASCII (ensure_ascii), and so is its single-line form.
        let text = std::str::from_utf8(&compact).unwrap_or("");
        Ok(Some(sampled_count(py, text, bpe, limit, sample)?))
    }

    /// The count of `block`, from memory when it carries JSON and was seen.
    fn count(&mut self, block: &Bound<'_, PyAny>) -> Count {
        if let Some((_, n)) = self.known.get(&(block.as_ptr() as usize)) {
            return Ok(*n);
        }
        let (n, has_json) = self.block_count(block)?;
        // Blocks without JSON cost no more to count than to look up.
        if has_json {
            self.known
                .insert(block.as_ptr() as usize, (block.clone().unbind(), n));
        }
        Ok(n)
    }

    /// `d["text"]` (or another text key) of an exact dict, counted when present.
    fn text_member(&self, d: &Bound<'_, PyAny>, key: &Py<PyString>) -> Count {
        match get(d, key)? {
            Some(text) => self.text(&text, None),
            None => Ok(0),
        }
    }

    /// The sum of the `"text"` counts of a list of exact dicts.
    fn text_items(&self, list: &Bound<'_, PyAny>, k: &Keys) -> Count {
        let mut total = 0;
        for item in list_items(list)? {
            if !is_exact_dict(&item) {
                return Err(Miss::Shape);
            }
            total += self.text_member(&item, &k.text)?;
        }
        Ok(total)
    }

    /// The count of one block, and whether it carries JSON. The order of the
    /// checks does not matter: each part is a term of a sum, and any error
    /// leaves the whole count to the SDK's walk or raises.
    fn block_count(&self, block: &Bound<'_, PyAny>) -> Result<(usize, bool), Miss> {
        if !is_exact_dict(block) {
            return Err(Miss::Shape);
        }
        let k = keys(block.py());
        let text = get(block, &k.text)?;
        let mut total = match &text {
            Some(text) => self.text(text, None)?,
            None => 0,
        };
        if text.is_some() && block.len().unwrap_or(0) == 1 {
            return Ok((total, false));
        }
        let mut has_json = false;
        if let Some(tool_use) = get_dict(block, &k.tool_use)? {
            has_json = true;
            total += self.text_member(&tool_use, &k.name)?;
            total += match get(&tool_use, &k.input)? {
                Some(input) => self.json(&input)?,
                // A call without input counts as `{}`.
                None => self.json(&pyo3::types::PyDict::new(block.py()).into_any())?,
            };
        }
        if let Some(tool_result) = get_dict(block, &k.tool_result)? {
            has_json = true;
            if let Some(content) = get(&tool_result, &k.content)? {
                for item in list_items(&content)? {
                    if !is_exact_dict(&item) {
                        return Err(Miss::Shape);
                    }
                    total += self.text_member(&item, &k.text)?;
                    if let Some(json) = get(&item, &k.json)? {
                        total += self.json(&json)?;
                    }
                }
            }
        }
        if let Some(reasoning) = get_dict(block, &k.reasoning_content)? {
            if let Some(reasoning_text) = get_dict(&reasoning, &k.reasoning_text)? {
                total += self.text_member(&reasoning_text, &k.text)?;
            }
        }
        if let Some(guard) = get_dict(block, &k.guard_content)? {
            if let Some(guard_text) = get_dict(&guard, &k.text)? {
                total += self.text_member(&guard_text, &k.text)?;
            }
        }
        if let Some(citations) = get_dict(block, &k.citations_content)? {
            if let Some(content) = get(&citations, &k.content)? {
                total += self.text_items(&content, k)?;
            }
        }
        Ok((total, has_json))
    }

    /// Call `each(index, sum, largest)` with the block counts of every message.
    fn walk(
        &mut self,
        messages: &Bound<'_, PyAny>,
        mut each: impl FnMut(usize, usize, usize),
    ) -> Result<(), Miss> {
        let k = keys(messages.py());
        for (index, message) in list_items(messages)?.enumerate() {
            if !is_exact_dict(&message) {
                return Err(Miss::Shape);
            }
            let Some(content) = get(&message, &k.content)? else {
                return Err(Miss::Shape);
            };
            let (mut sum, mut largest) = (0, 0);
            for block in list_items(&content)? {
                let n = self.count(&block)?;
                sum += n;
                largest = largest.max(n);
            }
            each(index, sum, largest);
        }
        Ok(())
    }

    /// Tokens of a tool result's content: its texts and JSON values.
    fn result_count(
        &mut self,
        content: &Bound<'_, PyAny>,
        limit: Option<usize>,
        sample: Option<usize>,
    ) -> Count {
        let py = content.py();
        let k = keys(py);
        let mut total = 0usize;
        let left = |total: usize| limit.map(|l| l.saturating_sub(total));
        for item in list_items(content)? {
            if !is_exact_dict(&item) {
                return Err(Miss::Shape);
            }
            if let Some(text) = get(&item, &k.text)? {
                total += match self.counter {
                    Encoding::Bpe(bpe) if limit.is_none() && sample.is_some() => {
                        if !text.is_exact_instance_of::<PyString>() {
                            return Err(Miss::Shape);
                        }
                        sampled_text(
                            &text.cast_into::<PyString>().map_err(PyErr::from)?,
                            bpe,
                            sample,
                        )?
                    }
                    _ => self.text(&text, left(total))?,
                };
            }
            if let Some(json) = get(&item, &k.json)? {
                total += self.stored_json(&json, left(total), sample)?.unwrap_or(0);
            }
            if limit.is_some_and(|l| total > l) {
                return Ok(total);
            }
        }
        Ok(total)
    }
}

/// Exact tokens of `text`; with `sample`, a text longer than it (in code
/// points) is counted on its first and last `sample / 2` and scaled to its
/// length, as the offload notice's `~N tokens` is.
fn sampled_count(
    py: Python<'_>,
    text: &str,
    bpe: Bpe,
    limit: Option<usize>,
    sample: Option<usize>,
) -> PyResult<usize> {
    match sample {
        // The single-line JSON is ASCII: bytes are code points.
        Some(sample) if text.len() > sample => {
            let half = sample / 2;
            let ends = count_utf8(py, &text[..half], bpe, None)?
                + count_utf8(py, &text[text.len() - half..], bpe, None)?;
            Ok(scaled(ends, text.len(), half))
        }
        _ => count_utf8(py, text, bpe, limit),
    }
}

/// [`sampled_count`] of a Python string, slicing code points as Python does.
fn sampled_text(text: &Bound<'_, PyString>, bpe: Bpe, sample: Option<usize>) -> PyResult<usize> {
    let py = text.py();
    // SAFETY: a live str.
    let units = unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) };
    if units < 0 {
        return Err(PyErr::fetch(py));
    }
    let units = units as usize;
    let count_slice = |start, end| count_str(&substring(text, start, end)?, bpe, None);
    match sample {
        Some(sample) if units > sample => {
            let half = sample / 2;
            let ends = count_slice(0, half)? + count_slice(units - half, units)?;
            Ok(scaled(ends, units, half))
        }
        _ => count_str(text, bpe, None),
    }
}

/// `Ok(None)` for a shape left to the SDK's walk, the error for a Python error.
fn settle<T>(result: Result<T, Miss>) -> PyResult<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(Miss::Shape) => Ok(None),
        Err(Miss::Error(e)) => Err(e),
    }
}

#[pymethods]
impl BlockMeter {
    /// A meter counting with `counter`; stored JSON forms start with `prefix`.
    /// With `exact_json`, a heuristic JSON length comes only from values of
    /// exact built-in types; other blocks are left to the SDK's walk.
    #[new]
    #[pyo3(
        signature = (counter, *, prefix = b"".as_slice(), exact_json = false),
        text_signature = "(counter, *, prefix=b'', exact_json=False)"
    )]
    fn new(counter: &Bound<'_, TokenCounter>, prefix: &[u8], exact_json: bool) -> Self {
        Self {
            counter: counter.get().encoding(),
            exact_json,
            prefix: prefix.to_vec(),
            known: HashMap::default(),
            stored: HashMap::default(),
            busy: Duration::ZERO,
        }
    }

    /// The count of one content block, or `None` when its shape is left to the SDK's walk.
    fn block(&mut self, block: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let started = Instant::now();
        let counted = self.count(block);
        self.busy += started.elapsed();
        settle(counted)
    }

    /// The count of a list of messages (their blocks only), or `None` when
    /// some shape is left to the SDK's walk.
    fn messages(&mut self, messages: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let started = Instant::now();
        let mut total = 0;
        let walked = self.walk(messages, |_, sum, _| total += sum);
        self.busy += started.elapsed();
        settle(walked.map(|()| total))
    }

    /// Indices of the messages with a block counting more than `floor`, or
    /// `None` when some shape is left to the SDK's walk.
    fn over(&mut self, messages: &Bound<'_, PyAny>, floor: usize) -> PyResult<Option<Vec<usize>>> {
        let started = Instant::now();
        let mut found = Vec::new();
        let walked = self.walk(messages, |index, _, largest| {
            if largest > floor {
                found.push(index);
            }
        });
        self.busy += started.elapsed();
        settle(walked.map(|()| found))
    }

    /// Tokens of a tool result's `content` (its texts and JSON values), or
    /// `None` when some shape is left to the SDK's walk. With `limit`, counting
    /// stops once the total passes it (the answer is then above `limit`, not
    /// the total); with `sample` (exact counters), a text or JSON value longer
    /// than `sample` code points is counted on its two ends and scaled.
    #[pyo3(signature = (content, *, limit = None, sample = None))]
    fn result(
        &mut self,
        content: &Bound<'_, PyAny>,
        limit: Option<usize>,
        sample: Option<usize>,
    ) -> PyResult<Option<usize>> {
        if sample == Some(0) || sample == Some(1) {
            return Err(PyValueError::new_err("sample must be at least 2"));
        }
        settle(self.result_count(content, limit, sample))
    }

    /// `prefix + json.dumps(value, indent=2).encode()`, from the walk that
    /// measured the value (or a new one). Raises what `json.dumps` raises.
    fn stored<'py>(
        &mut self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        Ok(self.stored_form(value)?.bytes.bind(py).clone())
    }

    /// The bytes each stored JSON form starts with.
    #[getter]
    fn prefix<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.prefix)
    }

    /// Seconds spent counting in `block`, `messages` and `over` since the last take.
    fn take_seconds(&mut self) -> f64 {
        std::mem::take(&mut self.busy).as_secs_f64()
    }

    /// Forget every remembered block count and stored form.
    fn clear(&mut self) {
        self.known.clear();
        self.stored.clear();
    }

    /// How many block counts are remembered.
    fn __len__(&self) -> usize {
        self.known.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BlockMeter>()?;
    Ok(())
}
