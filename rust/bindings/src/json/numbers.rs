//! Reading exact `int` and `float` values in place.
//!
//! `PyLong_AsLongLongAndOverflow` and `PyFloat_AsDouble` are calls into the
//! interpreter with their own type checks and error paths; a number-heavy
//! document makes millions of them. An exact `float` keeps its double right
//! behind the object header, and an exact `int` of up to two 30-bit digits
//! (below 2^60 in magnitude: nearly every int in real data) keeps its sign and
//! digits in a header whose layout differs by version family: a signed digit
//! count before CPython 3.12, a tag of count and sign bits from 3.12. Neither
//! layout is part of the stable ABI, so each is used only on the versions
//! whose layout we know, and only once a probe at import has read known
//! values back as the API does. Larger ints, subclasses and every other
//! interpreter go through the API.
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;

/// `PyFloatObject` (every supported version, default build).
#[repr(C)]
struct FloatLayout {
    refcnt: ffi::Py_ssize_t,
    ty: *mut ffi::PyTypeObject,
    value: f64,
}

/// The start of `PyLongObject`: the header, a size word (`ob_size` before
/// 3.12, `lv_tag` from 3.12) and the first two 30-bit digits.
#[repr(C)]
struct LongHead {
    refcnt: ffi::Py_ssize_t,
    ty: *mut ffi::PyTypeObject,
    size: isize,
    digits: [u32; 2],
}

/// Bits of a digit (`PyLong_SHIFT` of the default 64-bit builds).
const DIGIT_BITS: u32 = 30;
/// From 3.12, `lv_tag` holds the digit count above its low three bits ...
const TAG_COUNT_SHIFT: u32 = 3;
/// ... and the sign in the lowest two: 0 positive, 1 zero, 2 negative.
const TAG_SIGN_MASK: usize = 0b11;
const TAG_NEGATIVE: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntLayout {
    /// 3.10-3.11: `ob_size` is the digit count, negative for negative values.
    SignedSize,
    /// 3.12-3.13: `lv_tag`, see the masks above.
    Tagged,
}

#[derive(Debug, Clone, Copy)]
struct Layouts {
    int: Option<IntLayout>,
    float: bool,
}

static LAYOUTS: OnceLock<Layouts> = OnceLock::new();

/// Decide once, at import, which numbers are read in place.
pub(crate) fn init(py: Python<'_>) {
    LAYOUTS.get_or_init(|| probe(py));
}

/// Whether exact ints and floats are read in place on this interpreter.
pub(crate) fn reads_in_place() -> bool {
    matches!(
        LAYOUTS.get(),
        Some(Layouts {
            int: Some(_),
            float: true
        })
    )
}

fn probe(py: Python<'_>) -> Layouts {
    let none = Layouts {
        int: None,
        float: false,
    };
    if !cfg!(all(target_pointer_width = "64", target_endian = "little")) {
        return none;
    }
    let version = py.version_info();
    let candidate = match (version.major, version.minor) {
        (3, 10 | 11) => IntLayout::SignedSize,
        (3, 12 | 13) => IntLayout::Tagged,
        _ => return none,
    };
    let ints: [i64; 12] = [
        0,
        1,
        -1,
        7,
        -300,
        (1 << 30) - 1,
        1 << 30,
        -(1 << 30),
        (1 << 60) - 1,
        -((1 << 60) - 1),
        1 << 60,
        i64::MIN,
    ];
    // Two digits or fewer are read; the rest is the API's.
    let int_ok = all_read_back(&ints, ffi::PyLong_FromLongLong, |v, obj| {
        // SAFETY: a live int (see `all_read_back`).
        unsafe { small_int_with(candidate, obj) == (v.unsigned_abs() < 1 << 60).then_some(v) }
    });
    let floats = [0.0, -0.0, 1.5, -2.5e-300, 1.7976931348623157e308, f64::NAN];
    let float_ok = all_read_back(&floats, ffi::PyFloat_FromDouble, |v: f64, obj| {
        // SAFETY: a live float (see `all_read_back`).
        unsafe { (*obj.cast::<FloatLayout>()).value.to_bits() == v.to_bits() }
    });
    Layouts {
        int: int_ok.then_some(candidate),
        float: float_ok,
    }
}

/// Whether each of `values`, made into an object by `make`, reads back as
/// `agrees` says; a value that cannot be made fails the probe.
fn all_read_back<T: Copy>(
    values: &[T],
    make: unsafe extern "C" fn(T) -> *mut ffi::PyObject,
    agrees: impl Fn(T, *mut ffi::PyObject) -> bool,
) -> bool {
    values.iter().all(|&v| {
        // SAFETY: the GIL is held (import time); the new object is alive
        // while `agrees` reads it and released after.
        unsafe {
            let obj = make(v);
            if obj.is_null() {
                ffi::PyErr_Clear();
                return false;
            }
            let ok = agrees(v, obj);
            ffi::Py_DecRef(obj);
            ok
        }
    })
}

/// The value of an int of at most two digits, read by `layout`.
///
/// # Safety
/// `obj` must be a live int; the GIL held.
#[inline(always)]
unsafe fn small_int_with(layout: IntLayout, obj: *mut ffi::PyObject) -> Option<i64> {
    let head = obj.cast::<LongHead>().cast_const();
    let size = (*head).size;
    let (count, negative) = match layout {
        IntLayout::SignedSize => (size.unsigned_abs(), size < 0),
        IntLayout::Tagged => {
            let tag = size as usize;
            (tag >> TAG_COUNT_SHIFT, tag & TAG_SIGN_MASK == TAG_NEGATIVE)
        }
    };
    // Digits past the count are not the object's: read only those it has.
    let digits = (&raw const (*head).digits).cast::<u32>();
    let magnitude = match count {
        0 => 0,
        1 => u64::from(*digits),
        2 => u64::from(*digits) | u64::from(*digits.add(1)) << DIGIT_BITS,
        _ => return None,
    } as i64;
    Some(if negative { -magnitude } else { magnitude })
}

/// The value of an exact `int` below 2^60 in magnitude, read in place;
/// `None` when it is larger or ints are not read in place here.
///
/// # Safety
/// `obj` must be a live object of exact type `int`; the GIL held.
#[inline(always)]
pub(crate) unsafe fn exact_int(obj: *mut ffi::PyObject) -> Option<i64> {
    debug_assert!(ffi::PyLong_CheckExact(obj) != 0);
    let layout = LAYOUTS.get()?.int?;
    small_int_with(layout, obj)
}

/// The value of an exact `float`, read in place when known to be safe.
///
/// # Safety
/// `obj` must be a live object of exact type `float`; the GIL held.
#[inline(always)]
pub(crate) unsafe fn exact_float(obj: *mut ffi::PyObject) -> Option<f64> {
    debug_assert!(ffi::PyFloat_CheckExact(obj) != 0);
    match LAYOUTS.get() {
        Some(Layouts { float: true, .. }) => Some((*obj.cast::<FloatLayout>()).value),
        _ => None,
    }
}
