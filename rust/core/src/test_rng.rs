//! A seeded xorshift64 for the generated test inputs: the same cases on every run.

/// Successive xorshift64 values from `seed` (not zero).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
