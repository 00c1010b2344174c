//! Grep and line-range retrieval over stored text.
//!
//! The pieces, one file each:
//! - [`index`]: a text held once with the byte offsets of its `"\n"` separators, so
//!   repeated searches and pages of the same content never split it again;
//! - [`matcher`]: how a line is tested (literal, linear regex over the whole buffer,
//!   or bounded backtracking line by line);
//! - `fresh`: a search of text not indexed yet, following the indexing read;
//! - [`format`]: the numbered body and the character budget;
//! - [`request`]: one grep or page request (scope, matching lines, visible windows),
//!   producing the reference's output byte for byte.
//!
//! Text is UTF-8, or "WTF-8" when a Python `str` carried lone surrogates (each one
//! encoded as its own 3-byte sequence). Every length that reaches the output is
//! counted in code points, never in bytes.

mod census;
pub mod format;
mod fresh;
pub mod index;
pub mod matcher;
mod parts;
pub mod request;
#[cfg(any(fast_x86_64, fast_aarch64))]
mod slice_vec;

pub use index::TextIndex;
pub use matcher::{BufferSearch, CharRun, Matcher, MatcherSpec};
pub use request::{search, search_fresh, LineSpan, Query};

use std::fmt;

/// Everything that can go wrong while searching or paging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrepError {
    /// The bytes handed in are not UTF-8 (`valid_up_to` bytes were).
    InvalidUtf8 { valid_up_to: usize },
    /// A translated pattern that neither engine could compile.
    Compile(String),
    /// A translated pattern whose compiled program exceeds the engines' size limit.
    TooBig(String),
    /// The backtracking engine gave up on one line.
    BacktrackLimit { line: usize },
    /// The backtracking engine ran out of total time on this text.
    TimeLimit { seconds: u64 },
    /// The pattern treats a lone surrogate differently from U+FFFD, which the
    /// text (a Python `str` with lone surrogates) would need.
    SurrogateAmbiguous,
}

impl fmt::Display for GrepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrepError::InvalidUtf8 { valid_up_to } => {
                write!(f, "text is not valid UTF-8 (first bad byte at offset {valid_up_to})")
            }
            GrepError::Compile(msg) => write!(f, "pattern cannot be compiled: {msg}"),
            GrepError::TooBig(msg) => write!(
                f,
                "pattern is too large for the native engines on this content ({msg}); \
                 use smaller counted repeats"
            ),
            GrepError::BacktrackLimit { line } => write!(
                f,
                "pattern needs too much backtracking (look-around or back-reference) on line {line}; \
                 simplify the pattern"
            ),
            GrepError::TimeLimit { seconds } => write!(
                f,
                "pattern with look-around or back-references took more than {seconds}s on this \
                 content; simplify the pattern"
            ),
            GrepError::SurrogateAmbiguous => f.write_str(
                "pattern cannot be matched exactly against text that contains lone surrogates \
                 (it distinguishes them from U+FFFD)",
            ),
        }
    }
}

impl std::error::Error for GrepError {}
