//! The identities of everything a conversation holds, compared with the last call's in one pass.
//!
//! The context manager keeps state across model calls (the prompt cache's entries, the recipe of
//! persisted reductions, counts) that is valid only while the messages it describes are unchanged.
//! A change may come from outside the pipeline (a tool, user code, a guardrail redaction in place),
//! and such a change replaces an object somewhere: a string, a block, a list. So the trail records,
//! in a pre-order walk of each message, every object the message holds (dict keys and values, list
//! and tuple items, down to strings and numbers) by identity, holding a reference to each so no
//! identity can be reused by a newer object; the next call's walk names the first message whose
//! walk differs. Never a length or a count: `SECRET-123` and `[REDACTED]` have the same length.
//!
//! The walk compares before it records: up to the first difference nothing is allocated or
//! counted, and an object that was a leaf (a string, a number) is compared by address alone (the
//! same object is still a leaf), so only containers are read. From the first difference on, the
//! trail is written again.
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Deeper than this, a message is never taken as unchanged (a cycle, or no JSON of any model).
const MAX_DEPTH: usize = 512;

const LEAF: u8 = 0;
const DICT: u8 = 1;
const LIST: u8 = 2;
const TUPLE: u8 = 3;

#[pyclass(module = "strands_offload._native")]
#[derive(Default)]
pub struct IdentityTrail {
    /// Every object of every message, in walk order (a reference held to each).
    nodes: Vec<Py<PyAny>>,
    /// What each node is: `LEAF`, `DICT`, `LIST` or `TUPLE` (a container's items follow it).
    kinds: Vec<u8>,
    /// Where each message's walk starts in `nodes` (one entry per message, plus the end).
    starts: Vec<usize>,
}

fn kind(object: *mut ffi::PyObject) -> u8 {
    // SAFETY: `object` is a live object (borrowed from a container the GIL holder is reading).
    unsafe {
        if ffi::PyDict_Check(object) != 0 {
            DICT
        } else if ffi::PyList_Check(object) != 0 {
            LIST
        } else if ffi::PyTuple_Check(object) != 0 {
            TUPLE
        } else {
            LEAF
        }
    }
}

/// Calls `visit` with each item of a container of `kind`, in order (dict: key then value). `false`
/// from `visit` stops the walk; the result says whether it ran to the end.
fn items(
    object: *mut ffi::PyObject,
    kind: u8,
    visit: &mut dyn FnMut(*mut ffi::PyObject) -> bool,
) -> bool {
    // SAFETY: borrowed references only, read under the GIL; no Python code runs in between (no
    // comparison, hash or allocation of Python objects), so the containers cannot change. `kind`
    // was read from this very object (the same address, kept alive by the trail or the caller).
    unsafe {
        match kind {
            DICT => {
                let mut position: ffi::Py_ssize_t = 0;
                let mut key: *mut ffi::PyObject = std::ptr::null_mut();
                let mut value: *mut ffi::PyObject = std::ptr::null_mut();
                while ffi::PyDict_Next(object, &mut position, &mut key, &mut value) != 0 {
                    if !visit(key) || !visit(value) {
                        return false;
                    }
                }
            }
            LIST => {
                for index in 0..ffi::PyList_Size(object) {
                    let item = ffi::PyList_GetItem(object, index);
                    if item.is_null() || !visit(item) {
                        return false;
                    }
                }
            }
            TUPLE => {
                for index in 0..ffi::PyTuple_Size(object) {
                    let item = ffi::PyTuple_GetItem(object, index);
                    if item.is_null() || !visit(item) {
                        return false;
                    }
                }
            }
            _ => {}
        }
    }
    true
}

/// How many messages ahead of the one being compared the trail's containers are prefetched.
const PREFETCH_AHEAD: usize = 4;

/// Ask the CPU to bring `object`'s first cache line in (no effect where there is no such hint).
#[inline(always)]
fn prefetch(object: *mut ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(object as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = object;
}

impl IdentityTrail {
    /// Prefetch the containers message `index` held at the last walk (the same objects when it is
    /// unchanged): their reads then overlap with the comparison of the messages before it.
    fn prefetch_message(&self, index: usize) {
        if index + 1 >= self.starts.len() {
            return;
        }
        for at in self.starts[index]..self.starts[index + 1] {
            if self.kinds[at] != LEAF {
                prefetch(self.nodes[at].as_ptr());
            }
        }
    }

    fn known(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether `object` (at `depth`) walks as the trail from `*cursor` on, up to `end`.
    fn matches(
        &self,
        object: *mut ffi::PyObject,
        depth: usize,
        cursor: &mut usize,
        end: usize,
    ) -> bool {
        let at = *cursor;
        if at >= end || depth > MAX_DEPTH || self.nodes[at].as_ptr() != object {
            return false;
        }
        *cursor += 1;
        let kind = self.kinds[at];
        if kind == LEAF {
            return true; // the same object as before, and it was a leaf: it still is
        }
        items(object, kind, &mut |item| {
            self.matches(item, depth + 1, cursor, end)
        })
    }

    fn record(&mut self, py: Python<'_>, object: *mut ffi::PyObject, depth: usize) {
        if depth > MAX_DEPTH {
            // A fresh object: never the same as any other call's, so the message always reads as changed.
            self.nodes.push(PyDict::new(py).into_any().unbind());
            self.kinds.push(LEAF);
            return;
        }
        // SAFETY: `object` is a live borrowed reference; the trail takes a reference of its own.
        self.nodes
            .push(unsafe { Bound::from_borrowed_ptr(py, object) }.unbind());
        let kind = kind(object);
        self.kinds.push(kind);
        if kind != LEAF {
            let mut children: Vec<*mut ffi::PyObject> = Vec::new();
            items(object, kind, &mut |item| {
                children.push(item);
                true
            });
            for child in children {
                self.record(py, child, depth + 1);
            }
        }
    }

    fn rewrite_from(&mut self, messages: &Bound<'_, PyList>, start: usize) {
        let keep = start.min(self.known()).min(messages.len());
        let cut = self.starts.get(keep).copied().unwrap_or(0);
        self.nodes.truncate(cut);
        self.kinds.truncate(cut);
        self.starts.truncate(keep);
        let py = messages.py();
        for message in messages.iter().skip(keep) {
            self.starts.push(self.nodes.len());
            self.record(py, message.as_ptr(), 0);
        }
        self.starts.push(self.nodes.len());
    }
}

#[pymethods]
impl IdentityTrail {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// How many leading messages of `messages` hold exactly the objects the trail remembers (the
    /// index of the first changed, added or removed one); the trail then remembers `messages`.
    fn compare(&mut self, messages: &Bound<'_, PyList>) -> usize {
        let shared = messages.len().min(self.known());
        let mut first = shared;
        for index in 0..PREFETCH_AHEAD.min(shared) {
            self.prefetch_message(index);
        }
        for index in 0..shared {
            if index + PREFETCH_AHEAD < shared {
                self.prefetch_message(index + PREFETCH_AHEAD);
            }
            let mut cursor = self.starts[index];
            let end = self.starts[index + 1];
            // SAFETY: a borrowed item of a list the caller holds, read under the GIL.
            let message =
                unsafe { ffi::PyList_GetItem(messages.as_ptr(), index as ffi::Py_ssize_t) };
            if message.is_null() || !self.matches(message, 0, &mut cursor, end) || cursor != end {
                first = index;
                break;
            }
        }
        if first < self.known() || messages.len() != self.known() {
            self.rewrite_from(messages, first);
        }
        first
    }

    /// Remember `messages` as they are, walking only from message `start` on: the ones before it
    /// are taken as the trail holds them (the caller knows they did not change).
    fn update_from(&mut self, messages: &Bound<'_, PyList>, start: usize) {
        self.rewrite_from(messages, start);
    }

    /// Forget everything: the next comparison finds message 0 changed.
    fn clear(&mut self) {
        self.nodes.clear();
        self.kinds.clear();
        self.starts.clear();
    }

    /// How many messages the trail remembers.
    fn __len__(&self) -> usize {
        self.known()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<IdentityTrail>()?;
    Ok(())
}
