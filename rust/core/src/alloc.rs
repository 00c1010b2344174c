//! Allocation failure as an unwind instead of an abort.
//!
//! A growing `Vec` ends the process when the allocator refuses it. The buffers
//! whose size follows the caller's input (JSON text, grep output, token ids)
//! grow through these helpers instead (the JSON writers and parsers, the JSONPath
//! document index and selections, grep, the token encoder and decoder, preview
//! windows): a refusal unwinds with an
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

/// `v.extend(items)`, each item growing through [`reserve`] (the lower size
/// hint is reserved first).
#[inline]
pub fn extend_iter<T>(v: &mut Vec<T>, items: impl IntoIterator<Item = T>) {
    let items = items.into_iter();
    reserve(v, items.size_hint().0);
    for item in items {
        push(v, item);
    }
}

/// `String::with_capacity(n)`, unwinding with [`OutOfMemory`] when refused.
pub fn string_with_capacity(n: usize) -> String {
    let mut s = String::new();
    reserve_str(&mut s, n);
    s
}

/// `s.reserve(additional)`, unwinding with [`OutOfMemory`] when refused.
#[inline]
pub fn reserve_str(s: &mut String, additional: usize) {
    if s.capacity() - s.len() < additional && s.try_reserve(additional).is_err() {
        out_of_memory(additional);
    }
}

/// `s.push_str(t)`, growing through [`reserve_str`].
#[inline]
pub fn push_str(s: &mut String, t: &str) {
    reserve_str(s, t.len());
    s.push_str(t);
}

/// `s.push(c)`, growing through [`reserve_str`].
#[inline]
pub fn push_char(s: &mut String, c: char) {
    reserve_str(s, c.len_utf8());
    s.push(c);
}

/// A copy of `items`, unwinding with [`OutOfMemory`] when refused.
pub fn to_vec<T: Copy>(items: &[T]) -> Vec<T> {
    let mut v = vec_with_capacity(items.len());
    v.extend_from_slice(items);
    v
}

/// Unwind with [`OutOfMemory`] unless `bytes` more bytes could be had now.
///
/// For code that is not ours (a crate's encoder) whose buffers follow its
/// input: asking for about what it will need first turns a refusal that would
/// abort inside it into an unwind here. Best effort: the memory is given back
/// before the call, so it only shows there was room a moment ago.
pub fn ensure_room(bytes: usize) {
    let mut probe: Vec<u8> = Vec::new();
    if probe.try_reserve_exact(bytes).is_err() {
        out_of_memory(bytes);
    }
    // An allocation nothing reads may be removed by the optimizer: show it the
    // pointer so the request is really made.
    std::hint::black_box(probe.as_mut_ptr());
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
        extend_iter(&mut v, b"ef".iter().copied());
        assert_eq!(catch_out_of_memory(|| v.len()), Ok(6));
        let mut s = string_with_capacity(2);
        push_str(&mut s, "ab");
        push_char(&mut s, '\u{e9}');
        assert_eq!(s, "ab\u{e9}");
        assert_eq!(to_vec(&[1, 2]), vec![1, 2]);
        ensure_room(1 << 20);
        assert_eq!(
            catch_out_of_memory(|| ensure_room(usize::MAX / 2)),
            Err(OutOfMemory {
                bytes: usize::MAX / 2
            })
        );
        assert!(catch_out_of_memory(|| string_with_capacity(usize::MAX / 2)).is_err());
        let other = std::panic::catch_unwind(|| {
            catch_out_of_memory(|| std::panic::resume_unwind(Box::new("not ours")))
        });
        assert!(other.is_err());
    }
}
