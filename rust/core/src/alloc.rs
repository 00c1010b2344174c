//! Allocation failure as an unwind instead of an abort.
//!
//! A growing `Vec` ends the process when the allocator refuses it. The buffers
//! whose size follows the caller's input (JSON text, grep output, token ids)
//! grow through these helpers instead: a refusal unwinds with an
//! [`OutOfMemory`] payload, which the binding layer catches at its boundary
//! and reports the way its host reports memory exhaustion (Python's
//! `MemoryError`). Unwinding, not a `Result`, keeps the writers' hot paths free
//! of error checks; `resume_unwind` skips the panic hook, so nothing is printed.

/// The payload of an allocation failure: how many bytes were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory {
    pub bytes: usize,
}

/// Unwind with an [`OutOfMemory`] payload.
#[cold]
#[inline(never)]
pub fn out_of_memory(bytes: usize) -> ! {
    std::panic::resume_unwind(Box::new(OutOfMemory { bytes }))
}

/// `v.reserve(additional)`, unwinding with [`OutOfMemory`] when refused.
#[inline]
pub fn reserve<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() < additional {
        grow(v, additional);
    }
}

#[cold]
#[inline(never)]
fn grow<T>(v: &mut Vec<T>, additional: usize) {
    if v.try_reserve(additional).is_err() {
        out_of_memory(additional.saturating_mul(std::mem::size_of::<T>()));
    }
}

/// `Vec::with_capacity(n)`, unwinding with [`OutOfMemory`] when refused.
pub fn vec_with_capacity<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    reserve(&mut v, n);
    v
}

/// `v.push(item)`, growing through [`reserve`].
#[inline]
pub fn push<T>(v: &mut Vec<T>, item: T) {
    reserve(v, 1);
    v.push(item);
}

/// `v.extend_from_slice(s)`, growing through [`reserve`].
#[inline]
pub fn extend<T: Copy>(v: &mut Vec<T>, s: &[T]) {
    reserve(v, s.len());
    v.extend_from_slice(s);
}

/// Run `f`; `Err` with the payload when it unwound with [`OutOfMemory`]. Any
/// other unwind goes on.
pub fn catch_out_of_memory<T>(f: impl FnOnce() -> T) -> Result<T, OutOfMemory> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => Ok(v),
        Err(payload) => match payload.downcast::<OutOfMemory>() {
            Ok(oom) => Err(*oom),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_reservation_unwinds_with_its_size() {
        let got = catch_out_of_memory(|| {
            let mut v: Vec<u64> = Vec::new();
            reserve(&mut v, usize::MAX / 16);
            v.len()
        });
        assert_eq!(
            got,
            Err(OutOfMemory {
                bytes: (usize::MAX / 16) * 8
            })
        );
    }

    #[test]
    fn granted_reservations_and_other_panics_pass_through() {
        let mut v = vec_with_capacity::<u8>(10);
        extend(&mut v, b"abc");
        push(&mut v, b'd');
        assert_eq!(catch_out_of_memory(|| v.len()), Ok(4));
        let other = std::panic::catch_unwind(|| {
            catch_out_of_memory(|| std::panic::resume_unwind(Box::new("not ours")))
        });
        assert!(other.is_err());
    }
}
