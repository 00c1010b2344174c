//! The containers open on the path being written: circular references and
//! depth, with a guard per open container that closes it when dropped, on
//! every way out of the container's walk (errors included).
use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::exceptions::{PyRecursionError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

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

/// The open containers, outermost first.
///
/// Items are read borrowed, so Python code run during the walk (a dict
/// subclass's `items()`, say) could drop a container still being written.
/// Before any such code runs, the walker calls [`OpenPath::hold_open`], which
/// takes a reference to every open container not yet held; they are released
/// as they close. A walk that runs no Python code (every document of exact
/// built-in types) takes no reference at all: while no Python code runs,
/// nothing but the walk itself could release an object.
///
/// CPython's recursion counter (`Py_EnterRecursiveCall`, which decides where
/// `json` raises `RecursionError`) is bumped once per level the first time the
/// walk reaches that level, and not dropped as containers close: it stands at
/// the deepest level reached so far, so it fails at the same container as
/// `json`'s per-container count would, for a call per level instead of two
/// per container. Before Python code runs, and when the walk ends, it is
/// brought back down to the open containers ([`OpenPath::settle`]), so that
/// code sees the count `json` would give it.
#[derive(Default)]
pub(crate) struct OpenPath {
    stack: RefCell<Open>,
    deep: RefCell<HashSet<usize, BuildHasherDefault<AddrHasher>>>,
}

#[derive(Default)]
struct Open {
    containers: Vec<*mut ffi::PyObject>,
    /// The first `held` containers have a reference taken by `hold_open`.
    held: usize,
    /// Levels counted by `Py_EnterRecursiveCall` and not yet left: at least
    /// the open containers, more after deeper ones closed.
    counted: usize,
}

/// One container open on the path; dropping it closes the container.
pub(crate) struct Entered<'p> {
    path: &'p OpenPath,
}

impl OpenPath {
    /// Open `obj`: refuse a container already open (a cycle) and nesting past
    /// Python's recursion limit, [`MAX_DEPTH`] or the native stack's room.
    ///
    /// The common case, inline: a shallow path, on a level counted before.
    ///
    /// # Safety
    /// `obj` must be a live object and the GIL held until the guard drops.
    #[inline(always)]
    pub(crate) unsafe fn enter(
        &self,
        py: Python<'_>,
        obj: *mut ffi::PyObject,
    ) -> PyResult<Entered<'_>> {
        {
            let mut open = self.stack.borrow_mut();
            let depth = open.containers.len();
            if depth < LINEAR_PATH
                && depth < open.counted
                && depth < open.containers.capacity()
                && !open.containers.contains(&obj)
            {
                // SAFETY: below the capacity (checked above): no reallocation.
                unsafe {
                    open.containers.as_mut_ptr().add(depth).write(obj);
                    open.containers.set_len(depth + 1);
                }
                return Ok(Entered { path: self });
            }
        }
        self.enter_slow(py, obj)
    }

    #[inline(never)]
    unsafe fn enter_slow(&self, py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<Entered<'_>> {
        let addr = obj as usize;
        let mut open = self.stack.borrow_mut();
        let stack = &mut open.containers;
        if stack.len() < LINEAR_PATH {
            if stack.contains(&obj) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        } else {
            let mut deep = self.deep.borrow_mut();
            if deep.is_empty() {
                deep.extend(stack.iter().map(|&o| o as usize));
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
        if depth >= open.counted {
            if ffi::Py_EnterRecursiveCall(c" while encoding a JSON object".as_ptr()) != 0 {
                self.forget_deep(addr, depth);
                return Err(PyErr::fetch(py));
            }
            open.counted = depth + 1;
        }
        open.containers.push(obj);
        Ok(Entered { path: self })
    }

    /// Bring CPython's recursion counter down to the open containers (see
    /// [`OpenPath`]): before Python code runs, and when the walk ends.
    ///
    /// # Safety
    /// The GIL must be held.
    pub(crate) unsafe fn settle(&self) {
        let mut open = self.stack.borrow_mut();
        while open.counted > open.containers.len() {
            ffi::Py_LeaveRecursiveCall();
            open.counted -= 1;
        }
    }

    /// Take a reference to every open container not yet held: the walker
    /// calls this before it runs Python code (and settles the count).
    ///
    /// # Safety
    /// The GIL must be held, and no Python code may have run since the last
    /// call (or since the walk began): the containers opened since then are
    /// alive because nothing could have released them.
    pub(crate) unsafe fn hold_open(&self) {
        self.settle();
        let mut open = self.stack.borrow_mut();
        let from = open.held;
        for &obj in &open.containers[from..] {
            ffi::Py_IncRef(obj);
        }
        open.held = open.containers.len();
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

impl Drop for OpenPath {
    fn drop(&mut self) {
        // SAFETY: the walk that owns the path holds the GIL until it is
        // dropped; every container is closed by then, so this leaves every
        // level counted.
        unsafe { self.settle() }
    }
}

impl Drop for Entered<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        {
            let mut open = self.path.stack.borrow_mut();
            let remaining = open.containers.len().wrapping_sub(1);
            if remaining < open.held || remaining >= LINEAR_PATH - 1 {
                drop(open);
                return self.close_slow();
            }
            // Not held, shallow: nothing to release, no hash set to update.
            // (The recursion count stays: see `OpenPath`.)
            // SAFETY: `remaining` is below the length, so the pop is in bounds.
            unsafe { open.containers.set_len(remaining) };
        }
    }
}

impl Entered<'_> {
    #[inline(never)]
    fn close_slow(&mut self) {
        let mut open = self.path.stack.borrow_mut();
        let Some(closed) = open.containers.pop() else {
            return;
        };
        let remaining = open.containers.len();
        let was_held = remaining < open.held;
        if was_held {
            open.held = remaining;
        }
        drop(open);
        if remaining + 1 >= LINEAR_PATH {
            self.path.forget_deep(closed as usize, remaining);
        }
        if was_held {
            // SAFETY: the reference `hold_open` took. Releasing it may run
            // Python code (a finalizer), but only where Python code already
            // ran while this container was open, which the walker has noted.
            // The recursion count is settled first, as before any Python code.
            unsafe {
                self.path.settle();
                ffi::Py_DecRef(closed);
            }
        }
    }
}
