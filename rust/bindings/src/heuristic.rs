//! `HeuristicTally`: the SDK's base token heuristic (text chars/4, JSON chars/2,
//! binary content 0) over message blocks, in one native pass.
//!
//! The context manager measures the whole conversation on every model call,
//! block by block and as a total. The walk over messages and blocks is this
//! layer's (it reads Python objects); the JSON lengths come from the `json`
//! walker and the arithmetic from `offload_core::tokens`.
//!
//! Only the shapes messages have in practice are read here: exact dicts and
//! lists, exact `str` texts. Anything else (a subclass, a missing `content`,
//! a text that is not a `str`) makes a method return `None`, and the caller
//! counts in Python, where the SDK's exact behaviour, errors included, is
//! reproduced. A JSON value that `json.dumps` rejects with `TypeError` or
//! `ValueError` counts 0, as in the SDK.
//!
//! Counts of blocks that carry JSON (`toolUse`, `toolResult`) are remembered
//! by the block's identity until `clear()`: the tally holds a reference to
//! each, so an address cannot be reused meanwhile. A block changed in place
//! keeps its old count until then; the caller clears when the conversation
//! may have changed that way.
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use offload_core::tokens::{heuristic_count, heuristic_json_count};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use crate::json::{compact_len, AddrHasher};

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
    /// A shape left to the Python heuristic.
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

/// The chars/4 count of an exact `str`.
fn text_count(obj: &Bound<'_, PyAny>) -> Count {
    // SAFETY: reading the type and length of a live object with the GIL held.
    unsafe {
        if ffi::Py_TYPE(obj.as_ptr()) != &raw mut ffi::PyUnicode_Type {
            return Err(Miss::Shape);
        }
        let n = ffi::PyUnicode_GetLength(obj.as_ptr());
        if n < 0 {
            return Err(Miss::Error(PyErr::fetch(obj.py())));
        }
        Ok(heuristic_count(n as usize))
    }
}

/// The chars/2 count of a JSON value (0 for what `json.dumps` rejects).
fn json_count(obj: &Bound<'_, PyAny>) -> Count {
    let py = obj.py();
    // SAFETY: `obj` is held alive by the caller and the GIL is held.
    match unsafe { compact_len(py, obj.as_ptr()) } {
        Ok(n) => Ok(heuristic_json_count(n)),
        Err(e) if e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py) => {
            Ok(0)
        }
        Err(e) => Err(Miss::Error(e)),
    }
}

/// `d["text"]` (or another text key) of an exact dict, counted when present.
fn text_member(d: &Bound<'_, PyAny>, key: &Py<PyString>) -> Count {
    match get(d, key)? {
        Some(text) => text_count(&text),
        None => Ok(0),
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

/// The sum of the `"text"` counts of a list of exact dicts.
fn text_items(list: &Bound<'_, PyAny>, k: &Keys) -> Count {
    let mut total = 0;
    for item in list_items(list)? {
        if !is_exact_dict(&item) {
            return Err(Miss::Shape);
        }
        total += text_member(&item, &k.text)?;
    }
    Ok(total)
}

/// The SDK's heuristic count of one block, and whether it carries JSON. The
/// order of the checks does not matter: each part is a term of a sum, and any
/// error leaves the whole count to Python or raises.
fn block_count(block: &Bound<'_, PyAny>) -> Result<(usize, bool), Miss> {
    if !is_exact_dict(block) {
        return Err(Miss::Shape);
    }
    let k = keys(block.py());
    let text = get(block, &k.text)?;
    let mut total = match &text {
        Some(text) => text_count(text)?,
        None => 0,
    };
    if text.is_some() && block.len().unwrap_or(0) == 1 {
        return Ok((total, false));
    }
    let mut has_json = false;
    if let Some(tool_use) = get_dict(block, &k.tool_use)? {
        has_json = true;
        total += text_member(&tool_use, &k.name)?;
        total += match get(&tool_use, &k.input)? {
            Some(input) => json_count(&input)?,
            // A call without input counts as `{}`: two characters.
            None => heuristic_json_count(2),
        };
    }
    if let Some(tool_result) = get_dict(block, &k.tool_result)? {
        has_json = true;
        if let Some(content) = get(&tool_result, &k.content)? {
            for item in list_items(&content)? {
                if !is_exact_dict(&item) {
                    return Err(Miss::Shape);
                }
                total += text_member(&item, &k.text)?;
                if let Some(json) = get(&item, &k.json)? {
                    total += json_count(&json)?;
                }
            }
        }
    }
    if let Some(reasoning) = get_dict(block, &k.reasoning_content)? {
        if let Some(reasoning_text) = get_dict(&reasoning, &k.reasoning_text)? {
            total += text_member(&reasoning_text, &k.text)?;
        }
    }
    if let Some(guard) = get_dict(block, &k.guard_content)? {
        if let Some(guard_text) = get_dict(&guard, &k.text)? {
            total += text_member(&guard_text, &k.text)?;
        }
    }
    if let Some(citations) = get_dict(block, &k.citations_content)? {
        if let Some(content) = get(&citations, &k.content)? {
            total += text_items(&content, k)?;
        }
    }
    Ok((total, has_json))
}

/// Counts of message blocks by the SDK's base heuristic, remembered per block.
#[pyclass(module = "strands_offload._native")]
#[derive(Default)]
pub struct HeuristicTally {
    /// Block address -> (the block, held so the address stays its; its count).
    known: HashMap<usize, (Py<PyAny>, usize), BuildHasherDefault<AddrHasher>>,
}

impl HeuristicTally {
    /// The count of `block`, from memory when it carries JSON and was seen.
    fn count(&mut self, block: &Bound<'_, PyAny>) -> Count {
        if let Some((_, n)) = self.known.get(&(block.as_ptr() as usize)) {
            return Ok(*n);
        }
        let (n, has_json) = block_count(block)?;
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
}

/// `Ok(None)` for a shape left to Python, the error for a Python error.
fn settle<T>(result: Result<T, Miss>) -> PyResult<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(Miss::Shape) => Ok(None),
        Err(Miss::Error(e)) => Err(e),
    }
}

#[pymethods]
impl HeuristicTally {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// The heuristic count of one content block, or `None` when its shape is left to Python.
    fn block(&mut self, block: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        settle(self.count(block))
    }

    /// The heuristic count of a list of messages (their blocks only), or `None`
    /// when some shape is left to Python.
    fn messages(&mut self, messages: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let mut total = 0;
        let walked = self.walk(messages, |_, sum, _| total += sum);
        settle(walked.map(|()| total))
    }

    /// Indices of the messages with a block counting more than `floor`, or
    /// `None` when some shape is left to Python.
    fn over(&mut self, messages: &Bound<'_, PyAny>, floor: usize) -> PyResult<Option<Vec<usize>>> {
        let mut found = Vec::new();
        let walked = self.walk(messages, |index, _, largest| {
            if largest > floor {
                found.push(index);
            }
        });
        settle(walked.map(|()| found))
    }

    /// Forget every remembered count.
    fn clear(&mut self) {
        self.known.clear();
    }

    /// How many block counts are remembered.
    fn __len__(&self) -> usize {
        self.known.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HeuristicTally>()?;
    Ok(())
}
