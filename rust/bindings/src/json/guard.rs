//! The containers open on the path being written: circular references and
//! depth, with a guard per open container that closes it when dropped, on
//! every way out of the container's walk (errors included).
use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::exceptions::{PyRecursionError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

use super::objects::Owned;
use super::stack_room;

/// Nesting depth at which the walk gives up even if Python's recursion limit
/// was raised further.
const MAX_DEPTH: usize = 10_000;

/// From this depth on, each container entered first checks that the thread's
/// native stack has room left (see [`stack_room`]); shallower documents never
/// pay for the check.
const CHECK_STACK_FROM: usize = 64;

/// Up to this many open containers, the circular-reference check scans the
/// path; deeper paths also keep a hash set.
const LINEAR_PATH: usize = 16;

/// A hasher for pointer-sized keys (addresses are already well spread).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The open containers, outermost first. Each holds a reference: items are
/// read borrowed, and a container's Python code (a dict subclass's `items()`)
/// could otherwise drop one that is still being written.
#[derive(Default)]
pub(crate) struct OpenPath {
    stack: RefCell<Vec<Owned>>,
    deep: RefCell<HashSet<usize, BuildHasherDefault<AddrHasher>>>,
}

/// One container open on the path; dropping it closes the container.
pub(crate) struct Entered<'p> {
    path: &'p OpenPath,
}

impl OpenPath {
    /// Open `obj`: refuse a container already open (a cycle) and nesting past
    /// Python's recursion limit, [`MAX_DEPTH`] or the native stack's room.
    ///
    /// # Safety
    /// `obj` must be a live object and the GIL held until the guard drops.
    pub(crate) unsafe fn enter(
        &self,
        py: Python<'_>,
        obj: *mut ffi::PyObject,
    ) -> PyResult<Entered<'_>> {
        let addr = obj as usize;
        let mut stack = self.stack.borrow_mut();
        if stack.len() < LINEAR_PATH {
            if stack.iter().any(|o| o.0 as usize == addr) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        } else {
            let mut deep = self.deep.borrow_mut();
            if deep.is_empty() {
                deep.extend(stack.iter().map(|o| o.0 as usize));
            }
            if !deep.insert(addr) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        }
        let depth = stack.len();
        if depth >= MAX_DEPTH || (depth >= CHECK_STACK_FROM && !stack_room::has_room()) {
            self.forget_deep(addr, stack.len());
            return Err(PyRecursionError::new_err(
                "maximum recursion depth exceeded while encoding a JSON object",
            ));
        }
        if ffi::Py_EnterRecursiveCall(c" while encoding a JSON object".as_ptr()) != 0 {
            self.forget_deep(addr, stack.len());
            return Err(PyErr::fetch(py));
        }
        stack.push(Owned::borrowed(obj));
        Ok(Entered { path: self })
    }

    /// Take `addr` out of the hash set (kept only for paths deeper than
    /// [`LINEAR_PATH`]); `open` is the number of containers still open.
    fn forget_deep(&self, addr: usize, open: usize) {
        let mut deep = self.deep.borrow_mut();
        if !deep.is_empty() {
            deep.remove(&addr);
            if open < LINEAR_PATH {
                deep.clear();
            }
        }
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        // SAFETY: `enter` succeeded, so CPython's recursion counter was bumped
        // for this container; the GIL is held for the whole walk.
        unsafe { ffi::Py_LeaveRecursiveCall() };
        let closed = self.path.stack.borrow_mut().pop();
        if let Some(closed) = closed {
            let open = self.path.stack.borrow().len();
            self.path.forget_deep(closed.0 as usize, open);
            // `closed` drops here, releasing the path's reference.
        }
    }
}
