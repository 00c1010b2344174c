//! The numbered body of an answer and its character budget.
//!
//! Output is built lazily: once the body is known to exceed the budget, nothing
//! more is formatted, so a listing of a 10 MB text costs time in proportion to the
//! budget (plus the line index, built once per text).

use std::io::Write;

use super::TextIndex;

pub(crate) const EMPTY: &str = "Content is empty (0 lines).";
pub(crate) const TRUNCATED_SEARCH: &str = "output truncated, narrow your search";
pub(crate) const TRUNCATED_RANGE: &str = "output truncated, narrow your range";

fn is_char_start(b: u8) -> bool {
    b & 0xC0 != 0x80
}

fn count_chars(s: &[u8]) -> usize {
    s.iter().filter(|&&b| is_char_start(b)).count()
}

/// Byte length of the first `n` code points of `s` (all of `s` if shorter), and
/// how many code points that is.
fn prefix_chars(s: &[u8], n: usize) -> (usize, usize) {
    if s.len() <= n {
        return (s.len(), count_chars(s));
    }
    let mut seen = 0;
    for (i, &b) in s.iter().enumerate() {
        if is_char_start(b) {
            if seen == n {
                return (i, n);
            }
            seen += 1;
        }
    }
    (s.len(), seen)
}

/// The body under construction, keeping at most `max_chars + 1` code points when
/// the budget is non-negative (enough to know it was exceeded).
pub(crate) struct Body {
    out: Vec<u8>,
    chars: usize,
    keep: Option<usize>,
}

impl Body {
    pub(crate) fn new(max_chars: i64) -> Body {
        let keep = usize::try_from(max_chars).ok().map(|m| m.saturating_add(1));
        Body {
            out: Vec::new(),
            chars: 0,
            keep,
        }
    }

    /// Appends `s`; returns false once the budget is exceeded (stop writing).
    fn push(&mut self, s: &[u8]) -> bool {
        match self.keep {
            None => {
                crate::alloc::extend(&mut self.out, s);
                self.chars += count_chars(s);
                true
            }
            Some(keep) => {
                let room = keep.saturating_sub(self.chars);
                let (bytes, n) = prefix_chars(s, room);
                crate::alloc::extend(&mut self.out, &s[..bytes]);
                self.chars += n;
                self.chars < keep
            }
        }
    }

    /// Applies the budget: cut at the last `"\n"` before code point `max_chars` when
    /// there is one past position 0, else hard at `max_chars`, then the notice.
    pub(crate) fn finish(self, max_chars: i64, notice: &str) -> Vec<u8> {
        let total = self.chars as i64;
        if total <= max_chars {
            return self.out;
        }
        // Python slice semantics for a negative end.
        let end_chars = if max_chars >= 0 {
            max_chars as usize
        } else {
            (total + max_chars).max(0) as usize
        };
        let (end_byte, _) = prefix_chars(&self.out, end_chars);
        let cut = match memchr::memrchr(b'\n', &self.out[..end_byte]) {
            Some(p) if p > 0 => p,
            _ => end_byte,
        };
        let mut out = self.out;
        out.truncate(cut);
        crate::alloc::extend(&mut out, b"\n\n[");
        crate::alloc::extend(&mut out, notice.as_bytes());
        crate::alloc::push(&mut out, b']');
        out
    }
}

pub(crate) fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Writes `{marker} {number right-aligned}| {line}` for each visible line, joined by
/// `"\n"`, with `---` between runs that are not adjacent. `runs` are inclusive,
/// ascending, non-overlapping, non-adjacent line spans; `matched` is ascending;
/// numbers are padded to `width` digits.
pub(crate) fn write_body<S: AsRef<[u8]>>(
    body: &mut Body,
    index: &TextIndex<S>,
    runs: &[(usize, usize)],
    matched: &[usize],
    width: usize,
) {
    if runs.is_empty() {
        return;
    }
    let mut next_match = matched.iter().peekable();
    let mut prefix = Vec::with_capacity(width + 4);
    let mut first = true;
    for &(a, b) in runs {
        if !first && !body.push(b"\n---") {
            return;
        }
        let mut start = index.line_start(a);
        for i in a..=b {
            let end = index.line_end_from(start);
            let line = &index.bytes()[start..end];
            start = end + 1;
            while next_match.next_if(|&&m| m < i).is_some() {}
            let marker = if next_match.peek() == Some(&&i) {
                '>'
            } else {
                ' '
            };
            prefix.clear();
            if !first {
                prefix.push(b'\n');
            }
            first = false;
            // Writing to a Vec cannot fail.
            let _ = write!(prefix, "{marker} {:>width$}| ", i + 1);
            if !body.push(&prefix) || !body.push(line) {
                return;
            }
        }
    }
}

/// The pattern as the header shows it: `"\n"`, `"\r"`, `/` and `]` become spaces,
/// then the first 50 code points.
pub(crate) fn display_pattern(pattern: &[u8]) -> Vec<u8> {
    let (bytes, _) = prefix_chars(pattern, 50);
    pattern[..bytes]
        .iter()
        .map(|&b| match b {
            b'\n' | b'\r' | b'/' | b']' => b' ',
            other => other,
        })
        .collect()
}

/// How many matching lines fill a body of `max_chars`: each is printed as a line of
/// at least five characters (`"> "`, a digit, `"| "`), so lines past this many are
/// never written. All of them for a negative budget (cut from the end).
pub(crate) fn lines_to_fill(max_chars: i64) -> usize {
    usize::try_from(max_chars).map_or(usize::MAX, |m| {
        m.saturating_add(1).div_ceil(5).saturating_add(1)
    })
}
