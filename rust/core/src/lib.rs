//! The hot path of strands-offload, in plain Rust (no Python types).
//!
//! Every length, offset and slice here is counted in Unicode code points,
//! because that is what Python's `str` counts and what the reference measures.

pub mod alloc;
pub mod arch;
pub mod grep;
pub mod helper;
pub mod json;
pub mod jsonpath;
pub mod keyword;
pub mod media;
pub mod meter;
pub mod pages;
pub mod preview;
pub mod rank;
pub mod relevance;
mod swar;
#[cfg(test)]
mod test_rng;
pub mod tokens;
