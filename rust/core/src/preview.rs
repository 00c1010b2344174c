//! Head / tail / head_tail previews of a text, cut on token boundaries.
//!
//! Two families of cuts:
//!
//! * Heuristic: the reference's chars/4 rule, cut at `tokens * 4` code points
//!   ([`heuristic_bounds`]); pure arithmetic on code-point counts.
//! * Exact: cuts on the BPE token boundaries of an encoding. The head cut keeps the
//!   longest prefix made of the first `k <= n` tokens whose bytes end on a character
//!   boundary (a token can end inside a multi-byte character; such a cut point is
//!   skipped, never split). The tail cut is the mirror image: the longest suffix made
//!   of the last `k <= n` tokens that starts on a character boundary.
//!
//! Exact cuts of a large text only look at a window near the end they keep. The
//! window functions here take that window and say whether it was enough
//! ([`None`] asks the caller for a larger window). A window is only trusted up to a
//! *safe split*: a position where every tiktoken pre-tokenizer piece is known to end,
//! whatever follows, and where cutting the text there does not change how the pieces
//! before it are split. So the cut equals the cut computed on the whole text.

use crate::tokens::{encode_piece, Bpe, Pieces};

/// Which part(s) of a text a preview keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Head,
    Tail,
    HeadTail,
}

impl Mode {
    /// Parses `"head"`, `"tail"` or `"head_tail"`.
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "head" => Some(Mode::Head),
            "tail" => Some(Mode::Tail),
            "head_tail" => Some(Mode::HeadTail),
            _ => None,
        }
    }
}

/// A preview as two offsets into the text: keep `[0, head_end)` and `[tail_start, total)`.
///
/// When the whole text fits the budget, `head_end == tail_start == total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub head_end: usize,
    pub tail_start: usize,
}

impl Bounds {
    /// The bounds that keep all of a text of `total` units.
    pub fn whole(total: usize) -> Bounds {
        Bounds {
            head_end: total,
            tail_start: total,
        }
    }
}

/// Splits a budget between head and tail: `int(budget * share)` for the head, as
/// Python computes it (float product, truncated), the rest for the tail.
pub fn split_budget(budget: usize, head_share: f64) -> (usize, usize) {
    let head = ((budget as f64) * head_share) as usize;
    let head = head.min(budget);
    (head, budget - head)
}

/// The heuristic cuts, in code points, for a text of `total` code points.
///
/// The budget is `tokens * 4` code points. A text that fits is kept whole; otherwise
/// head keeps the first `budget` code points, tail the last `budget`, and head_tail
/// splits the budget with [`split_budget`].
pub fn heuristic_bounds(total: usize, tokens: usize, mode: Mode, head_share: f64) -> Bounds {
    let budget = tokens.saturating_mul(crate::tokens::CHARS_PER_TOKEN);
    if total <= budget {
        return Bounds::whole(total);
    }
    let (head, tail) = match mode {
        Mode::Head => (budget, 0),
        Mode::Tail => (0, budget),
        Mode::HeadTail => split_budget(budget, head_share),
    };
    Bounds {
        head_end: head,
        tail_start: total - tail,
    }
}

/// Characters after which a letter-run piece always ends and where truncation is harmless.
const AFTER_LETTER: &[char] = &[
    ' ', ',', '.', ';', ':', '!', '?', '(', ')', '"', '\u{3001}', '\u{3002}', '\u{FF0C}',
    '\u{FF01}', '\u{FF1F}', '\u{FF1A}', '\u{FF1B}',
];

/// Letters of scripts that are letters (`\p{L}`) in every Unicode version and never marks.
fn plain_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c,
            '\u{4E00}'..='\u{9FA5}'      // CJK unified ideographs (Unicode 1.1 block)
            | '\u{3041}'..='\u{3096}'    // hiragana
            | '\u{30A1}'..='\u{30FA}'    // katakana
            | '\u{AC00}'..='\u{D7A3}') // hangul syllables
}

/// Whether byte offset `b` of `text` is a safe split (see the module docs).
///
/// Two conservative rules, sound for both cl100k_base and o200k_base:
/// * after `\n` and before an ASCII letter or digit: a piece holding a newline only
///   continues with whitespace (or `/` in o200k), and no piece starting with an
///   optional prefix may take the newline as its prefix;
/// * after a plain letter and before a space or common punctuation: a letter run
///   (with o200k's optional contraction, which needs an apostrophe) ends there.
pub fn is_safe_split(text: &str, b: usize) -> bool {
    if b == 0 || b >= text.len() || !text.is_char_boundary(b) {
        return false;
    }
    let (Some(prev), Some(next)) = (text[..b].chars().next_back(), text[b..].chars().next()) else {
        return false;
    };
    (prev == '\n' && next.is_ascii_alphanumeric())
        || (plain_letter(prev) && AFTER_LETTER.contains(&next))
}

/// The last safe split of `text`, if any.
pub fn last_safe_split(text: &str) -> Option<usize> {
    text.char_indices()
        .rev()
        .map(|(i, _)| i)
        .find(|&i| is_safe_split(text, i))
}

/// The first safe split of `text`, if any.
pub fn first_safe_split(text: &str) -> Option<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .find(|&i| is_safe_split(text, i))
}

/// Byte end offsets of the first `want` tokens of a text, from a window at its start.
///
/// `window` is a prefix of the text, `whole` says it is the whole text. Returns fewer
/// than `want` ends only when the whole text has fewer tokens; returns `None` when the
/// window is too small to tell.
pub fn leading_token_ends(window: &str, whole: bool, bpe: Bpe, want: usize) -> Option<Vec<usize>> {
    let region = if whole {
        window
    } else {
        &window[..last_safe_split(window)?]
    };
    let tok = bpe.tokenizer();
    let mut ends = crate::alloc::vec_with_capacity(want.min(1 << 16));
    let mut offset = 0usize;
    'pieces: for piece in Pieces::new(region, bpe) {
        for id in encode_piece(piece, bpe) {
            if ends.len() == want {
                break 'pieces;
            }
            offset += tok.bpe.token_len(id);
            crate::alloc::push(&mut ends, offset);
        }
        if ends.len() == want {
            break;
        }
    }
    if ends.len() < want && !whole {
        return None;
    }
    Some(ends)
}

/// Byte start offsets (relative to `window`) of the last `want` tokens of a text,
/// nearest to the end first, from a window at its end.
///
/// `window` is a suffix of the text, `whole` says it is the whole text. Same contract
/// as [`leading_token_ends`].
pub fn trailing_token_starts(
    window: &str,
    whole: bool,
    bpe: Bpe,
    want: usize,
) -> Option<Vec<usize>> {
    let start = if whole { 0 } else { first_safe_split(window)? };
    let tok = bpe.tokenizer();
    let mut lens: Vec<usize> = Vec::new();
    for piece in Pieces::new(&window[start..], bpe) {
        crate::alloc::extend_iter(
            &mut lens,
            encode_piece(piece, bpe)
                .into_iter()
                .map(|id| tok.bpe.token_len(id)),
        );
    }
    if lens.len() < want && !whole {
        return None;
    }
    let mut starts = crate::alloc::vec_with_capacity(want.min(lens.len()));
    let mut pos = window.len();
    for len in lens.iter().rev().take(want) {
        pos -= len;
        starts.push(pos);
    }
    Some(starts)
}

/// Byte end of the head cut of at most `n` tokens, given the token ends from
/// [`leading_token_ends`]: the largest `k <= n` whose end is a character boundary.
pub fn head_cut(text: &str, ends: &[usize], n: usize) -> usize {
    ends.iter()
        .take(n)
        .rev()
        .copied()
        .find(|&e| text.is_char_boundary(e))
        .unwrap_or(0)
}

/// Byte start of the tail cut of at most `n` tokens, given the token starts from
/// [`trailing_token_starts`]: the smallest start among the last `k <= n` tokens that is a
/// character boundary.
pub fn tail_cut(text: &str, starts: &[usize], n: usize) -> usize {
    starts
        .iter()
        .take(n)
        .rev()
        .copied()
        .find(|&s| text.is_char_boundary(s))
        .unwrap_or(text.len())
}

/// A text read one window at a time: a string held elsewhere (by Python, say)
/// and converted to UTF-8 only where the preview looks.
///
/// Positions are in the source's own units (code points for a Python `str`).
pub trait TextSource {
    /// A window's text.
    type Window: Window;
    /// What reading a window can fail with.
    type Error;

    /// Length of the whole text, in units.
    fn units(&self) -> usize;

    /// The text between unit positions `start` and `end`.
    fn window(&self, start: usize, end: usize) -> Result<Self::Window, Self::Error>;
}

/// One window of a [`TextSource`].
pub trait Window {
    /// The window as UTF-8.
    fn text(&self) -> &str;

    /// Units of the source spanned by the first `bytes` bytes of [`Window::text`]
    /// (`bytes` is a character boundary).
    fn units_before(&self, bytes: usize) -> usize;
}

/// A Rust string as a source counted in code points.
impl TextSource for str {
    type Window = String;
    type Error = std::convert::Infallible;

    fn units(&self) -> usize {
        self.chars().count()
    }

    fn window(&self, start: usize, end: usize) -> Result<String, Self::Error> {
        Ok(self.chars().skip(start).take(end - start).collect())
    }
}

impl Window for String {
    fn text(&self) -> &str {
        self
    }

    fn units_before(&self, bytes: usize) -> usize {
        self[..bytes].chars().count()
    }
}

/// First window size, in units, for work that needs about `tokens` tokens.
fn first_window(tokens: usize) -> usize {
    tokens.saturating_mul(8).saturating_add(1024)
}

/// Runs `f` on growing windows at the start (or end) of `source` until it answers.
///
/// `f` gets the window, whether it is the whole text, and the window's start in units.
/// A whole-text window always gets an answer (the window functions never ask for
/// more than the whole text), so the loop ends.
fn with_windows<S: TextSource + ?Sized, T>(
    source: &S,
    at_end: bool,
    tokens: usize,
    f: impl Fn(&S::Window, bool, usize) -> Option<T>,
) -> Result<T, S::Error> {
    let total = source.units();
    let mut size = first_window(tokens);
    loop {
        let whole = size >= total;
        let (start, end) = match (whole, at_end) {
            (true, _) => (0, total),
            (false, true) => (total - size, total),
            (false, false) => (0, size),
        };
        let window = source.window(start, end)?;
        if let Some(answer) = f(&window, whole, start) {
            return Ok(answer);
        }
        size = if whole {
            usize::MAX
        } else {
            size.saturating_mul(2)
        };
    }
}

/// Tokens of `source`, read from windows at its start: the exact count when it is
/// at most `limit`, otherwise some number above `limit`, so the cost follows the
/// limit, not the text (see [`crate::tokens::count_with_limit`]).
pub fn count_with_limit<S: TextSource + ?Sized>(
    source: &S,
    bpe: Bpe,
    limit: usize,
) -> Result<usize, S::Error> {
    let longest = crate::tokens::longest_token_bytes(bpe);
    with_windows(source, false, limit, |window, whole, _| {
        let text = window.text();
        // The window starts the text: more bytes than `limit` of the longest
        // tokens can hold means more than `limit` tokens, whatever follows.
        if text.len() > limit.saturating_mul(longest) {
            return Some(limit.saturating_add(1));
        }
        let region = if whole {
            text
        } else {
            &text[..last_safe_split(text)?]
        };
        let n = crate::tokens::count_with_limit(region, bpe, limit);
        (n > limit || whole).then_some(n)
    })
}

/// Exact preview bounds, in the source's units: head and tail cut on BPE token
/// boundaries of `bpe`, reading only windows at the ends of the text they keep.
pub fn exact_bounds<S: TextSource + ?Sized>(
    source: &S,
    bpe: Bpe,
    tokens: usize,
    mode: Mode,
    head_share: f64,
) -> Result<Bounds, S::Error> {
    let total = source.units();
    let (head_budget, tail_budget) = match mode {
        Mode::Head => (tokens, 0),
        Mode::Tail => (0, tokens),
        Mode::HeadTail => split_budget(tokens, head_share),
    };
    // The first tokens + 1 tokens tell whether the text fits, and give the head cut.
    let want = tokens.saturating_add(1);
    let head = with_windows(source, false, want, |window, whole, start| {
        let text = window.text();
        let ends = leading_token_ends(text, whole, bpe, want)?;
        if ends.len() <= tokens {
            return Some(None);
        }
        Some(Some(
            start + window.units_before(head_cut(text, &ends, head_budget)),
        ))
    })?;
    let Some(head_end) = head else {
        return Ok(Bounds::whole(total));
    };
    let tail_start = if tail_budget == 0 {
        total
    } else {
        with_windows(source, true, tail_budget, |window, whole, start| {
            let text = window.text();
            let starts = trailing_token_starts(text, whole, bpe, tail_budget)?;
            Some(start + window.units_before(tail_cut(text, &starts, tail_budget)))
        })?
    };
    Ok(Bounds {
        head_end,
        tail_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{count, encode};

    fn exact(text: &str, bpe: Bpe, n: usize, mode: Mode) -> Bounds {
        match exact_bounds(text, bpe, n, mode, 0.6) {
            Ok(bounds) => bounds,
            Err(never) => match never {},
        }
    }

    /// The cuts computed on the whole text at once, in code points: the oracle
    /// for the windowed reads of [`exact_bounds`].
    fn whole_text_bounds(text: &str, bpe: Bpe, n: usize, mode: Mode) -> Bounds {
        let chars_before = |b: usize| text[..b].chars().count();
        let total = text.chars().count();
        let ends = leading_token_ends(text, true, bpe, n + 1).unwrap_or_default();
        if ends.len() <= n {
            return Bounds::whole(total);
        }
        let (head, tail) = match mode {
            Mode::Head => (n, 0),
            Mode::Tail => (0, n),
            Mode::HeadTail => split_budget(n, 0.6),
        };
        let tail_start = if tail == 0 {
            total
        } else {
            let starts = trailing_token_starts(text, true, bpe, tail).unwrap_or_default();
            chars_before(tail_cut(text, &starts, tail))
        };
        Bounds {
            head_end: chars_before(head_cut(text, &ends, head)),
            tail_start,
        }
    }

    /// On a text many times the first window, windowed cuts equal whole-text cuts.
    #[test]
    fn windowed_cuts_equal_whole_text_cuts() {
        let text = SAMPLE.repeat(200);
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            for n in [0, 1, 5, 40, 333, 2000] {
                for mode in [Mode::Head, Mode::Tail, Mode::HeadTail] {
                    assert_eq!(
                        exact(&text, bpe, n, mode),
                        whole_text_bounds(&text, bpe, n, mode),
                        "{bpe:?} {n} {mode:?}"
                    );
                }
            }
        }
    }

    const SAMPLE: &str = "The quick brown fox, 42 times.\nIt jumped over 世界。 and 🎉🎉 again!\n\
        Final line with trailing words and émojis 🎉 here.";

    #[test]
    fn heuristic_matches_reference_formulas() {
        // preview_chars = 40; head_chars = int(40 * 0.6) = 24; tail_chars = 16
        assert_eq!(
            heuristic_bounds(100, 10, Mode::HeadTail, 0.6),
            Bounds {
                head_end: 24,
                tail_start: 84
            }
        );
        assert_eq!(
            heuristic_bounds(40, 10, Mode::HeadTail, 0.6),
            Bounds::whole(40)
        );
        assert_eq!(heuristic_bounds(41, 10, Mode::Head, 0.6).head_end, 40);
        assert_eq!(heuristic_bounds(41, 10, Mode::Tail, 0.6).tail_start, 1);
        assert_eq!(
            heuristic_bounds(41, 0, Mode::HeadTail, 0.6),
            Bounds {
                head_end: 0,
                tail_start: 41
            }
        );
    }

    #[test]
    fn exact_head_is_a_token_prefix() {
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let ids = encode(SAMPLE, bpe);
            let chars = SAMPLE.chars().count();
            for n in 0..ids.len() + 2 {
                let b = exact(SAMPLE, bpe, n, Mode::Head);
                let head: String = SAMPLE.chars().take(b.head_end).collect();
                assert!(count(&head, bpe) <= n);
                if n < ids.len() {
                    assert_eq!(b.tail_start, chars);
                } else {
                    assert_eq!(b, Bounds::whole(chars));
                }
            }
        }
    }

    #[test]
    fn windows_agree_with_whole_text() {
        let text = SAMPLE.repeat(30);
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let all = leading_token_ends(&text, true, bpe, usize::MAX).unwrap_or_default();
            for cut in (1..text.len())
                .filter(|&c| text.is_char_boundary(c))
                .step_by(37)
            {
                if let Some(ends) = leading_token_ends(&text[..cut], false, bpe, 20) {
                    assert_eq!(ends[..], all[..ends.len()]);
                }
                if let Some(starts) = trailing_token_starts(&text[cut..], false, bpe, 20) {
                    let whole = trailing_token_starts(&text, true, bpe, 20).unwrap_or_default();
                    let shifted: Vec<usize> = starts.iter().map(|s| s + cut).collect();
                    assert_eq!(shifted, whole);
                }
            }
        }
    }

    #[test]
    fn cuts_never_split_a_character() {
        let text = "🎉".repeat(50);
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            for n in 0..20 {
                // Positions are code points, so a cut can only fall between characters;
                // each kept part must hold no more tokens than its budget.
                let b = exact(&text, bpe, n, Mode::HeadTail);
                let (head, tail) = split_budget(n, 0.6);
                assert!(b.head_end <= b.tail_start);
                assert!(count(&"🎉".repeat(b.head_end), bpe) <= head);
                assert!(count(&"🎉".repeat(50 - b.tail_start), bpe) <= tail);
            }
        }
    }
}
