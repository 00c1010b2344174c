//! `BlockMeter`: one walk that measures message blocks and tool results, with
//! the counter as a parameter (the SDK's chars/4 text and chars/2 JSON
//! heuristic, or exact BPE tokens, optionally stopping at a limit).
//!
//! The context manager measures every block on every model call, the
//! offloader a tool result before deciding to offload it, the accelerated
//! `Model.count_tokens` whole conversations: all three read blocks here. What
//! counts and how is `offload_core::meter`'s policy; this layer is its
//! [`Tree`] over Python objects (the JSON text comes from the `json` walker,
//! exact counts from `offload_core::tokens`), and remembers counts by identity.
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
use offload_core::meter::{self, Key, Miss, Tree};
use offload_core::tokens::{heuristic_json_count, Bpe, Encoding};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString};

use crate::counter::TokenCounter;
use crate::errors::detach_checked;
use crate::json::{
    compact_len, compact_len_exact, compact_text, dumps_utf8_measured, recycle, AddrHasher,
};
use crate::tokens::{count_str, count_utf8, substring};

/// The indent of the stored form (`json.dumps(value, indent=2)`).
const STORED_INDENT: &[u8] = b"  ";

/// The keys the policy reads, interned once, indexed by `Key as usize`.
type Keys = [Py<PyString>; Key::ALL.len()];

fn keys(py: Python<'_>) -> &Keys {
    static KEYS: PyOnceLock<Keys> = PyOnceLock::new();
    KEYS.get_or_init(py, || {
        Key::ALL.map(|key| PyString::intern(py, key.name()).unbind())
    })
}

type Count = meter::Count<PyErr>;

fn is_exact_dict(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: reading the type of a live object.
    unsafe { ffi::Py_TYPE(obj.as_ptr()) == &raw mut ffi::PyDict_Type }
}

fn is_exact_list(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: reading the type of a live object.
    unsafe { ffi::Py_TYPE(obj.as_ptr()) == &raw mut ffi::PyList_Type }
}

/// `d[key]` of an exact dict (a new reference), `None` when absent.
fn get<'py>(
    d: &Bound<'py, PyAny>,
    key: &Py<PyString>,
) -> Result<Option<Bound<'py, PyAny>>, Miss<PyErr>> {
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

/// Whether `e` is what the SDK's JSON measure turns into 0.
fn rejected_json(py: Python<'_>, e: &PyErr) -> bool {
    e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py)
}

/// Whether `obj` is an exact `str`.
fn is_exact_str(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: reading the type of a live object.
    unsafe { ffi::Py_TYPE(obj.as_ptr()) == &raw mut ffi::PyUnicode_Type }
}

/// The policy's view of Python objects: exact dicts are maps, exact lists
/// lists, exact `str`s texts.
#[derive(Clone, Copy)]
struct PyTree<'py> {
    py: Python<'py>,
    keys: &'py Keys,
    /// See [`BlockMeter::exact_json`].
    exact_json: bool,
}

impl<'py> Tree for PyTree<'py> {
    type Node = Bound<'py, PyAny>;
    type Error = PyErr;

    #[inline]
    fn is_map(&self, node: &Self::Node) -> bool {
        is_exact_dict(node)
    }

    #[inline]
    fn member(&self, map: &Self::Node, key: Key) -> Result<Option<Self::Node>, Miss<PyErr>> {
        get(map, &self.keys[key as usize])
    }

    #[inline]
    fn map_len(&self, map: &Self::Node) -> usize {
        // SAFETY: the policy asks this of exact dicts only (`is_map`).
        unsafe { ffi::PyDict_Size(map.as_ptr()).max(0) as usize }
    }

    /// The size is re-read at each step: Python code run by the JSON walker
    /// (a dict subclass's `items()`) could change the list.
    #[inline]
    fn for_each_item<F>(&self, list: &Self::Node, mut each: F) -> Result<(), Miss<PyErr>>
    where
        F: FnMut(Self::Node) -> Result<bool, Miss<PyErr>>,
    {
        if !is_exact_list(list) {
            return Err(Miss::Shape);
        }
        let mut i: ffi::Py_ssize_t = 0;
        loop {
            // SAFETY: `list` is a live exact list, the GIL is held, and the
            // borrowed item becomes a new reference at once.
            let item = unsafe {
                if i >= ffi::PyList_Size(list.as_ptr()) {
                    return Ok(());
                }
                Bound::from_borrowed_ptr(self.py, ffi::PyList_GetItem(list.as_ptr(), i))
            };
            i += 1;
            if !each(item)? {
                return Ok(());
            }
        }
    }

    #[inline]
    fn text_chars(&self, text: &Self::Node) -> Count {
        if !is_exact_str(text) {
            return Err(Miss::Shape);
        }
        // SAFETY: a live str.
        let n = unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) };
        if n < 0 {
            return Err(Miss::Error(PyErr::fetch(self.py)));
        }
        Ok(n as usize)
    }

    fn text_tokens(&self, text: &Self::Node, bpe: Bpe, limit: Option<usize>) -> Count {
        if !is_exact_str(text) {
            return Err(Miss::Shape);
        }
        // SAFETY: checked to be an exact str just above.
        Ok(count_str(
            unsafe { text.cast_unchecked::<PyString>() },
            bpe,
            limit,
        )?)
    }

    fn json_chars(&self, value: &Self::Node) -> Result<Option<usize>, Miss<PyErr>> {
        let py = self.py;
        if self.exact_json {
            // SAFETY: `value` is held alive by the caller and the GIL is held.
            match unsafe { compact_len_exact(py, value.as_ptr()) } {
                Ok(Some(n)) => Ok(Some(n)),
                Err(e) if rejected_json(py, &e) => Ok(None),
                // A subclass, or json's own recursion budget to apply.
                Ok(None) | Err(_) => Err(Miss::Shape),
            }
        } else {
            // SAFETY: as above.
            match unsafe { compact_len(py, value.as_ptr()) } {
                Ok(n) => Ok(Some(n)),
                Err(e) if rejected_json(py, &e) => Ok(None),
                Err(e) => Err(Miss::Error(e)),
            }
        }
    }

    fn json_tokens(&self, value: &Self::Node, bpe: Bpe) -> Result<Option<usize>, Miss<PyErr>> {
        let py = self.py;
        // SAFETY: `value` is held alive by the caller and the GIL is held.
        match unsafe { compact_text(py, value.as_ptr()) } {
            Ok(text) => {
                // The writer's single-line output is ASCII.
                let n = count_utf8(py, std::str::from_utf8(&text).unwrap_or(""), bpe, None);
                recycle(text);
                Ok(Some(n?))
            }
            Err(e) if rejected_json(py, &e) => Ok(None),
            Err(e) => Err(Miss::Error(e)),
        }
    }

    fn empty_map(&self) -> Self::Node {
        PyDict::new(self.py).into_any()
    }
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
    /// The policy's view of Python objects, with this meter's JSON rule.
    fn tree<'py>(&self, py: Python<'py>) -> PyTree<'py> {
        PyTree {
            py,
            keys: keys(py),
            exact_json: self.exact_json,
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
    ) -> Result<Option<usize>, Miss<PyErr>> {
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
    fn count<'py>(&mut self, tree: &PyTree<'py>, block: &Bound<'py, PyAny>) -> Count {
        if let Some((_, n)) = self.known.get(&(block.as_ptr() as usize)) {
            return Ok(*n);
        }
        let (n, has_json) = meter::block(tree, self.counter, block)?;
        // Blocks without JSON cost no more to count than to look up.
        if has_json {
            self.known
                .insert(block.as_ptr() as usize, (block.clone().unbind(), n));
        }
        Ok(n)
    }

    /// Call `each(index, sum, largest)` with the block counts of every message.
    fn walk(
        &mut self,
        messages: &Bound<'_, PyAny>,
        each: impl FnMut(usize, usize, usize),
    ) -> Result<(), Miss<PyErr>> {
        let tree = self.tree(messages.py());
        meter::messages(&tree, messages, |block| self.count(&tree, block), each)
    }

    /// Tokens of a tool result's content: its texts and JSON values.
    fn result_count(
        &mut self,
        content: &Bound<'_, PyAny>,
        limit: Option<usize>,
        sample: Option<usize>,
    ) -> Count {
        let tree = self.tree(content.py());
        let counter = self.counter;
        let text_count = |text: &Bound<'_, PyAny>, left| match counter {
            Encoding::Bpe(bpe) if limit.is_none() && sample.is_some() => {
                if !is_exact_str(text) {
                    return Err(Miss::Shape);
                }
                // SAFETY: checked to be an exact str just above.
                let text = unsafe { text.cast_unchecked::<PyString>() };
                Ok(sampled_text(text, bpe, sample)?)
            }
            _ => meter::text(&tree, counter, text, left),
        };
        meter::result(&tree, content, limit, text_count, |value, left| {
            self.stored_json(value, left, sample)
        })
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
            Ok(meter::scaled(ends, text.len(), half))
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
            Ok(meter::scaled(ends, units, half))
        }
        _ => count_str(text, bpe, None),
    }
}

/// `Ok(None)` for a shape left to the SDK's walk, the error for a Python error.
fn settle<T>(result: Result<T, Miss<PyErr>>) -> PyResult<Option<T>> {
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
        let tree = self.tree(block.py());
        let counted = self.count(&tree, block);
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
