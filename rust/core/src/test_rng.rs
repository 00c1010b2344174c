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

/// Numbers below a bound from [`xorshift`].
pub(crate) struct Rng(Box<dyn FnMut() -> u64>);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(Box::new(xorshift(seed)))
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((self.0)() % n as u64) as usize
    }
}
