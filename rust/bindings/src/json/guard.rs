//! The containers open on the path being written: circular references and
//! depth.
//!
//! The walker opens a container with [`OpenPath::enter`] and closes it with
//! [`OpenPath::leave`] once its members are written. A walk that fails is
//! abandoned whole, so an error skips the `leave` calls: the path is left as
//! it stood, and dropping it ([`Drop for OpenPath`]) undoes what the open
//! containers still hold. No guard object per container: the common case is
//! a few loads and stores on the walker's own fields.
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

/// The first this many open containers sit in a fixed array, and the
/// circular-reference check scans them; deeper paths also keep a hash set.
const SHALLOW: usize = 16;

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
/// as they close (or when the path is dropped). A walk that runs no Python
/// code (every document of exact built-in types) takes no reference at all:
/// while no Python code runs, nothing but the walk itself could release an
/// object.
///
/// CPython's recursion counter (`Py_EnterRecursiveCall`, which decides where
/// `json` raises `RecursionError`) is bumped once per level the first time the
/// walk reaches that level, and not dropped as containers close: it stands at
/// the deepest level reached so far, so it fails at the same container as
/// `json`'s per-container count would, for a call per level instead of two
/// per container. Before Python code runs, and when the walk ends, it is
/// brought back down to the open containers ([`OpenPath::settle`]), so that
/// code sees the count `json` would give it.
pub(crate) struct OpenPath {
    /// The first [`SHALLOW`] open containers (the first `len` slots are live).
    shallow: [*mut ffi::PyObject; SHALLOW],
    /// The open containers past the first [`SHALLOW`].
    deeper: Vec<*mut ffi::PyObject>,
    /// Every open container, kept (filled on first use) only while the path
    /// is deeper than [`SHALLOW`]; empty otherwise.
    deep_set: HashSet<usize, BuildHasherDefault<AddrHasher>>,
    /// How many containers are open.
    len: usize,
    /// The first `held` containers have a reference taken by `hold_open`.
    held: usize,
    /// Levels counted by `Py_EnterRecursiveCall` and not yet left: at least
    /// the open containers, more after deeper ones closed.
    counted: usize,
    /// `min(counted, SHALLOW)`: a container entered below this depth needs
    /// neither a new count nor the hash set. Kept up to date where `counted`
    /// changes rather than taken in `enter`: computing it there cost the
    /// event records 1-2% in paired rounds.
    fast_below: usize,
}

impl Default for OpenPath {
    fn default() -> Self {
        OpenPath {
            shallow: [std::ptr::null_mut(); SHALLOW],
            deeper: Vec::new(),
            deep_set: HashSet::default(),
            len: 0,
            held: 0,
            counted: 0,
            fast_below: 0,
        }
    }
}

impl OpenPath {
    /// Open `obj`: refuse a container already open (a cycle) and nesting past
    /// Python's recursion limit, [`MAX_DEPTH`] or the native stack's room.
    ///
    /// The common case, inline: a shallow path, on a level counted before.
    ///
    /// # Safety
    /// `obj` must be a live object and the GIL held until the path is dropped.
    #[inline(always)]
    pub(crate) unsafe fn enter(&mut self, py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<()> {
        let depth = self.len;
        if depth < self.fast_below {
            // SAFETY: `fast_below <= SHALLOW`, so `depth` indexes the array.
            let open = self.shallow.get_unchecked(..depth);
            if !open.contains(&obj) {
                *self.shallow.get_unchecked_mut(depth) = obj;
                self.len = depth + 1;
                return Ok(());
            }
        }
        self.enter_slow(py, obj)
    }

    #[inline(never)]
    unsafe fn enter_slow(&mut self, py: Python<'_>, obj: *mut ffi::PyObject) -> PyResult<()> {
        let depth = self.len;
        let addr = obj as usize;
        if depth < SHALLOW {
            if self.shallow[..depth].contains(&obj) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        } else {
            if self.deep_set.is_empty() {
                let open = self.shallow.iter().chain(&self.deeper);
                self.deep_set.extend(open.map(|&o| o as usize));
            }
            if !self.deep_set.insert(addr) {
                return Err(PyValueError::new_err("Circular reference detected"));
            }
        }
        if depth >= MAX_DEPTH || (depth >= CHECK_STACK_FROM && !stack_room::has_room()) {
            self.deep_set.remove(&addr);
            return Err(PyRecursionError::new_err(
                "maximum recursion depth exceeded while encoding a JSON object",
            ));
        }
        if depth >= self.counted {
            if ffi::Py_EnterRecursiveCall(c" while encoding a JSON object".as_ptr()) != 0 {
                self.deep_set.remove(&addr);
                return Err(PyErr::fetch(py));
            }
            self.counted = depth + 1;
            self.fast_below = self.counted.min(SHALLOW);
        }
        if depth < SHALLOW {
            self.shallow[depth] = obj;
        } else {
            offload_core::alloc::push(&mut self.deeper, obj);
        }
        self.len = depth + 1;
        Ok(())
    }

    /// Close the innermost open container, its members written.
    ///
    /// # Safety
    /// The GIL must be held and a container open.
    #[inline(always)]
    pub(crate) unsafe fn leave(&mut self) {
        let remaining = self.len.wrapping_sub(1);
        if remaining < SHALLOW && remaining >= self.held {
            // Not held, shallow: nothing to release, no hash set to update.
            // (The recursion count stays: see `OpenPath`.)
            self.len = remaining;
            return;
        }
        self.leave_slow();
    }

    #[inline(never)]
    unsafe fn leave_slow(&mut self) {
        let Some(remaining) = self.len.checked_sub(1) else {
            return;
        };
        let closed = if remaining < SHALLOW {
            self.shallow[remaining]
        } else {
            self.deeper.pop().unwrap_or(std::ptr::null_mut())
        };
        self.len = remaining;
        if remaining <= SHALLOW {
            self.deep_set.clear();
        } else {
            self.deep_set.remove(&(closed as usize));
        }
        if remaining < self.held {
            self.held = remaining;
            // SAFETY: the reference `hold_open` took. Releasing it may run
            // Python code (a finalizer), but only where Python code already
            // ran while this container was open, which the walker has noted.
            // The recursion count is settled first, as before any Python code.
            self.settle();
            ffi::Py_DecRef(closed);
        }
    }

    /// Bring CPython's recursion counter down to the open containers (see
    /// [`OpenPath`]): before Python code runs, and when the walk ends.
    ///
    /// # Safety
    /// The GIL must be held.
    pub(crate) unsafe fn settle(&mut self) {
        while self.counted > self.len {
            ffi::Py_LeaveRecursiveCall();
            self.counted -= 1;
        }
        self.fast_below = self.counted.min(SHALLOW);
    }

    /// Take a reference to every open container not yet held: the walker
    /// calls this before it runs Python code (and settles the count).
    ///
    /// # Safety
    /// The GIL must be held, and no Python code may have run since the last
    /// call (or since the walk began): the containers opened since then are
    /// alive because nothing could have released them.
    pub(crate) unsafe fn hold_open(&mut self) {
        self.settle();
        for i in self.held..self.len {
            ffi::Py_IncRef(self.at(i));
        }
        self.held = self.len;
    }

    /// Open container `i` (below `len`).
    fn at(&self, i: usize) -> *mut ffi::PyObject {
        if i < SHALLOW {
            self.shallow[i]
        } else {
            self.deeper[i - SHALLOW]
        }
    }
}

impl Drop for OpenPath {
    fn drop(&mut self) {
        // A finished walk closed every container; a failed one left those
        // open when it stopped. Every counted level is left first, then the
        // references `hold_open` took are released, innermost first.
        // SAFETY: the walk that owns the path holds the GIL until it is
        // dropped, and the held containers are alive by those references.
        unsafe {
            self.len = 0;
            self.settle();
            while self.held > 0 {
                self.held -= 1;
                ffi::Py_DecRef(self.at(self.held));
            }
        }
    }
}
