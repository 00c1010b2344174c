//! Pre-tokenizer: splits text into the pieces tiktoken's regex would match.
//!
//! Most text is ASCII, and for ASCII the regex of each encoding reduces to a few
//! character classes. A hand-written scanner handles a piece whenever every byte it
//! has to look at (the piece and the character that decides where it ends) is ASCII;
//! anything else goes to the `bpe-openai` pre-tokenizer, a DFA-based rewrite of
//! tiktoken's regex, for that one piece. Both produce the same pieces; the tests check
//! the result against tiktoken on generated and real text.
//!
//! The regexes, for reference (leftmost-first alternation):
//!
//! * cl100k_base: `'(?i:s|t|re|ve|m|ll|d)`, `[^\r\n\p{L}\p{N}]?\p{L}+`, `\p{N}{1,3}`,
//!   ` ?[^\s\p{L}\p{N}]+[\r\n]*`, `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`.
//! * o200k_base: letters are split into an upper-case run followed by a lower-case run
//!   (with an optional contraction suffix) instead of one letter run, there is no
//!   stand-alone contraction, and the punctuation run may end with `[\r\n/]*`.

use bpe_openai::Tokenizer;

use super::Bpe;

#[inline]
fn is_space(b: u8) -> bool {
    // ASCII members of Unicode White_Space (what the regex's `\s` means).
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

#[inline]
fn is_punct(b: u8) -> bool {
    // ASCII characters outside `\s`, `\p{L}` and `\p{N}` (control characters included).
    b < 0x80 && !is_space(b) && !b.is_ascii_alphanumeric()
}

#[inline]
fn is_newline(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// Length of a case-insensitive contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`,
/// `'d`) at `at` (which holds the apostrophe): `Some(0)` when there is none, `None`
/// when a non-ASCII byte would have to be inspected (case folding reaches beyond ASCII).
#[inline]
fn contraction(b: &[u8], at: usize) -> Option<usize> {
    let Some(&c1) = b.get(at + 1) else {
        return Some(0);
    };
    if c1 >= 0x80 {
        return None;
    }
    let l1 = c1.to_ascii_lowercase();
    if matches!(l1, b's' | b't' | b'm' | b'd') {
        return Some(2);
    }
    if !matches!(l1, b'r' | b'v' | b'l') {
        return Some(0);
    }
    let Some(&c2) = b.get(at + 2) else {
        return Some(0);
    };
    if c2 >= 0x80 {
        return None;
    }
    let l2 = c2.to_ascii_lowercase();
    let hit = matches!((l1, l2), (b'r', b'e') | (b'v', b'e') | (b'l', b'l'));
    Some(if hit { 3 } else { 0 })
}

/// Length (3) of the character at `i` when it is one of the common letters of CJK text,
/// all `\p{Lo}` and so in both of o200k's letter classes: CJK unified ideographs
/// U+4E00..=U+9FA5, hiragana U+3041..=U+3096, katakana U+30A1..=U+30FA and Hangul
/// syllables U+AC00..=U+D7A3 (assigned since Unicode 2.0). Zero for anything else.
#[inline]
fn cjk_letter_len(b: &[u8], i: usize) -> usize {
    let Some(&[b0, b1, b2]) = b.get(i..i + 3) else {
        return 0;
    };
    if b0 & 0xF0 != 0xE0 {
        return 0;
    }
    let cp = (u32::from(b0 & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F);
    if matches!(cp, 0x4E00..=0x9FA5 | 0x3041..=0x3096 | 0x30A1..=0x30FA | 0xAC00..=0xD7A3) {
        3
    } else {
        0
    }
}

/// Length of the character at `i` when it is common CJK punctuation or an emoji-block
/// symbol, all outside `\s`, `\p{L}`, `\p{N}` and `\p{M}` in every Unicode version (so in
/// the regex's punctuation class); zero for anything else:
///
/// * CJK punctuation (`\p{P}`): 、 。 「 」 『 』 （ ） ， ！ ： ； ？;
/// * symbols (`\p{So}`, `\p{Sk}`, or unassigned in their blocks, which is `\p{Cn}`):
///   U+2600..=U+26FF, U+2700..=U+2775 and U+2794..=U+27BF (not the dingbat digits
///   U+2776..=U+2793, which are `\p{N}`), regional indicators U+1F1E6..=U+1F1FF, and
///   U+1F300..=U+1F64F, U+1F680..=U+1F6FF, U+1F900..=U+1F9FF, U+1FA70..=U+1FAFF
///   (pictographs, faces, skin-tone modifiers, transport, supplemental symbols);
/// * the zero-width joiner U+200D (`\p{Cf}`) of emoji sequences.
///
/// The variation selectors (U+FE0F) are `\p{M}`, a letter class of o200k: not here.
#[inline]
fn cjk_punct_len(b: &[u8], i: usize) -> usize {
    match b.get(i..i + 3) {
        Some([0xE3, 0x80, 0x81 | 0x82 | 0x8C..=0x8F]) => 3,
        Some([0xEF, 0xBC, 0x81 | 0x88 | 0x89 | 0x8C | 0x9A | 0x9B | 0x9F]) => 3,
        Some([0xE2, 0x80, 0x8D]) => 3,
        Some(&[0xE2, b1 @ 0x98..=0x9E, b2]) => {
            let cp = 0x2000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F);
            if matches!(cp, 0x2600..=0x2775 | 0x2794..=0x27BF) {
                3
            } else {
                0
            }
        }
        Some(&[0xF0, 0x9F, b2]) => match b.get(i + 3) {
            Some(&b3) => {
                let cp = 0x1F000 | (u32::from(b2 & 0x3F) << 6) | u32::from(b3 & 0x3F);
                let symbol = matches!(
                    cp,
                    0x1F1E6..=0x1F1FF
                        | 0x1F300..=0x1F64F
                        | 0x1F680..=0x1F6FF
                        | 0x1F900..=0x1F9FF
                        | 0x1FA70..=0x1FAFF
                );
                if symbol {
                    4
                } else {
                    0
                }
            }
            None => 0,
        },
        _ => 0,
    }
}

/// Whether the scanner can classify the character at `i` (or `i` is the end).
#[inline]
fn is_known(b: &[u8], i: usize) -> bool {
    i >= b.len() || b[i] < 0x80 || cjk_letter_len(b, i) > 0 || cjk_punct_len(b, i) > 0
}

/// Length of the punctuation character (outside `\s`, `\p{L}`, `\p{N}`) at `i`, or 0.
#[inline]
fn punct_len(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(&c) if c < 0x80 => usize::from(is_punct(c)),
        Some(_) => cjk_punct_len(b, i),
        None => 0,
    }
}

/// End of the run of ASCII lower-case letters (`alpha`: of any case) from `i`.
///
/// Eight bytes at a time where eight remain: a byte is in the run when its top bit is
/// clear and its low seven bits (with bit 5 set for `alpha`, which folds upper case onto
/// lower case and nothing else onto `a..=z`) lie in `0x61..=0x7A`; adding `0x1F` and
/// `0x05` to bytes of at most `0x7F` sets their top bits exactly for `>= 0x61` and
/// `>= 0x7B`, without carries between bytes.
#[inline]
fn ascii_run(b: &[u8], mut i: usize, alpha: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x80 * ONES;
    let n = b.len();
    if i < n && b[i] >= 0x80 {
        return i; // a CJK letter, in letter runs of CJK text: no load of eight bytes
    }
    while i + 8 <= n {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        let x = u64::from_le_bytes(w);
        let folded = if alpha { x | (0x20 * ONES) } else { x };
        let low = folded & (0x7F * ONES);
        let in_run = (low + 0x1F * ONES) & !(low + 0x05 * ONES) & !x & HIGH;
        let out = !in_run & HIGH;
        if out != 0 {
            return i + (out.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && (b[i].is_ascii_lowercase() || (alpha && b[i].is_ascii_uppercase())) {
        i += 1;
    }
    i
}

/// End of o200k's letter run starting at `start` (no letter: `start`), or `None` when a
/// character the scanner does not know ([`is_known`]) would have to be classified.
///
/// The regex tries `[U]*[L]+` before `[U]+[L]*`, where U holds upper-case letters and L
/// lower-case ones and both hold `\p{Lo}`. The greedy `[U]*` gives back characters until
/// `[L]+` can start: right after the U-run if a lower-case letter follows, else at the
/// run's last CJK letter (which then ends the piece, as an upper-case letter or the end
/// of the run follows it); with neither, the second alternative takes the U-run.
fn o200k_letters(b: &[u8], start: usize) -> Option<usize> {
    let n = b.len();
    let mut e = start;
    let mut last_cjk = None;
    loop {
        if e < n && b[e].is_ascii_uppercase() {
            e += 1;
        } else if cjk_letter_len(b, e) > 0 {
            last_cjk = Some(e);
            e += 3;
        } else {
            break;
        }
    }
    if !is_known(b, e) {
        return None;
    }
    if e < n && b[e].is_ascii_lowercase() {
        loop {
            e = ascii_run(b, e, false);
            if cjk_letter_len(b, e) > 0 {
                e += 3;
            } else {
                break;
            }
        }
        if !is_known(b, e) {
            return None;
        }
        return Some(e);
    }
    Some(last_cjk.map_or(e, |k| k + 3))
}

/// End of the piece starting at `pos`, if it can be decided from ASCII bytes and the
/// common CJK letters and punctuation alone.
fn scan_ascii(b: &[u8], pos: usize, o200k: bool) -> Option<usize> {
    let n = b.len();
    let c = b[pos];
    let unknown_at = |i: usize| !is_known(b, i);
    let is_letter = |i: usize| (i < n && b[i].is_ascii_alphabetic()) || cjk_letter_len(b, i) > 0;

    // cl100k: stand-alone contraction.
    if !o200k && c == b'\'' {
        let len = contraction(b, pos)?;
        if len > 0 {
            return Some(pos + len);
        }
    }

    // Letters, with an optional leading character that is not a newline, letter or digit.
    let prefix_len = if c < 0x80 {
        usize::from(!is_newline(c) && !c.is_ascii_digit())
    } else {
        cjk_punct_len(b, pos)
    };
    let letters = if is_letter(pos) {
        Some(pos)
    } else if prefix_len > 0 {
        if is_letter(pos + prefix_len) {
            Some(pos + prefix_len)
        } else if unknown_at(pos + prefix_len) {
            return None;
        } else {
            None
        }
    } else {
        None
    };
    if let Some(start) = letters {
        let mut e = if o200k {
            o200k_letters(b, start)?
        } else {
            let mut e = start;
            loop {
                e = ascii_run(b, e, true);
                if cjk_letter_len(b, e) > 0 {
                    e += 3;
                } else {
                    break;
                }
            }
            if unknown_at(e) {
                return None;
            }
            e
        };
        if o200k && e < n && b[e] == b'\'' {
            e += contraction(b, e)?;
        }
        return Some(e);
    }
    if unknown_at(pos) {
        return None;
    }

    // Up to three digits.
    if c.is_ascii_digit() {
        let mut e = pos + 1;
        while e < n && e < pos + 3 && b[e].is_ascii_digit() {
            e += 1;
        }
        if e < pos + 3 && unknown_at(e) {
            return None;
        }
        return Some(e);
    }

    // Punctuation run, with an optional leading space and trailing newlines (and `/`).
    let p0 = if c == b' ' { pos + 1 } else { pos };
    if unknown_at(p0) {
        return None;
    }
    if punct_len(b, p0) > 0 {
        let mut e = p0;
        loop {
            let len = punct_len(b, e);
            if len == 0 {
                break;
            }
            e += len;
        }
        if unknown_at(e) {
            return None;
        }
        while e < n && (is_newline(b[e]) || (o200k && b[e] == b'/')) {
            e += 1;
        }
        return Some(e);
    }

    // Whitespace: up to the last newline of the run; else the run minus its last
    // character when something follows (that character may start the next piece).
    let mut e = pos;
    let mut last_newline = None;
    while e < n && is_space(b[e]) {
        if is_newline(b[e]) {
            last_newline = Some(e);
        }
        e += 1;
    }
    if unknown_at(e) {
        return None;
    }
    if let Some(j) = last_newline {
        return Some(j + 1);
    }
    if e == n || e - pos == 1 {
        return Some(e);
    }
    Some(e - 1)
}

/// Iterator over the pre-tokenizer pieces of a text.
pub struct Pieces<'a> {
    text: &'a str,
    pos: usize,
    o200k: bool,
    tok: &'static Tokenizer,
}

impl<'a> Pieces<'a> {
    pub fn new(text: &'a str, bpe: Bpe) -> Pieces<'a> {
        Pieces::starting_at(text, 0, bpe)
    }

    /// Pieces of `text` from byte `start` on, which must be a piece boundary of the
    /// whole text (the match at a position depends only on the text after it). Pieces
    /// near the end still see the rest of `text`, so no lookahead is cut short.
    pub fn starting_at(text: &'a str, start: usize, bpe: Bpe) -> Pieces<'a> {
        Pieces {
            text,
            pos: start,
            o200k: bpe == Bpe::O200kBase,
            tok: bpe.tokenizer(),
        }
    }

    /// Byte offset where the next piece starts.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let b = self.text.as_bytes();
        let pos = self.pos;
        if pos >= b.len() {
            return None;
        }
        let fast = if is_known(b, pos) {
            scan_ascii(b, pos, self.o200k)
        } else {
            None
        };
        let end = match fast {
            Some(e) => e,
            None => {
                let rest = &self.text[pos..];
                let len = self.tok.split(rest).next().map_or(0, str::len);
                // The regex always matches at least one character; never stall.
                let len = if len == 0 {
                    rest.chars().next().map_or(rest.len(), char::len_utf8)
                } else {
                    len
                };
                pos + len
            }
        };
        self.pos = end;
        Some(&self.text[pos..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regex_pieces(text: &str, bpe: Bpe) -> Vec<&str> {
        bpe.tokenizer().split(text).collect()
    }

    #[test]
    fn ascii_scanner_agrees_with_regex() {
        let samples = [
            "Hello, world! It's 2026-11-30 and they'LL say \"don't\" 12345 times.\n\n  x  \ty",
            "fn main() {\n    let x = a/b//c;\r\n\t// comment\n}\n   \n",
            "HTTPServer camelCase ABC'S don'T 'sx 're '\n' ' ",
            "  \n\n  \x0b\x0c end   ",
            "a  b   c\t\td\n \ne \r\n\r\n f",
            "./\n/x ?/\r\n//\n",
            "'",
            "''",
            "'l",
            "'LLx",
            " '",
            "x'",
            "\x00\x01\x1f abc",
        ];
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            for s in samples {
                let ours: Vec<&str> = Pieces::new(s, bpe).collect();
                assert_eq!(ours, regex_pieces(s, bpe), "{bpe:?} {s:?}");
            }
        }
    }

    /// Random strings over a small alphabet that hits every branch of the scanner.
    #[test]
    fn random_text_agrees_with_regex() {
        const ALPHABET: &[&str] = &[
            "a",
            "Z",
            "q",
            "S",
            "'",
            "s",
            "L",
            "l",
            "e",
            "v",
            "r",
            "1",
            "2",
            " ",
            " ",
            "\t",
            "\n",
            "\r",
            "\x0b",
            ".",
            "/",
            "-",
            "_",
            "(",
            "\x1f",
            "\u{e9}",
            "\u{a0}",
            "\u{663}",
            "\u{4e16}",
            "\u{9fa5}",
            "\u{3042}",
            "\u{30a2}",
            "\u{30fc}",
            "\u{ac00}",
            "\u{d7a3}",
            "\u{3002}",
            "\u{3001}",
            "\u{300c}",
            "\u{300f}",
            "\u{ff0c}",
            "\u{ff1f}",
            "\u{ff08}",
            "\u{3003}",
            "\u{301}",
            "\u{17f}",
            "\u{1f389}",
            "\u{85}",
            "\u{3000}",
            // Emoji-block symbols and their neighbours that are numbers or marks.
            "\u{200d}",
            "\u{1f3fd}",
            "\u{2764}",
            "\u{fe0f}",
            "\u{1f1ef}",
            "\u{2776}",
            "\u{1f100}",
            "\u{1faff}",
            "\u{1f6ff}",
        ];
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let s: String = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
                let ours: Vec<&str> = Pieces::new(&s, bpe).collect();
                assert_eq!(ours, regex_pieces(&s, bpe), "{bpe:?} {s:?}");
            }
        }
    }

    #[test]
    fn ascii_runs_match_a_byte_loop() {
        let mut next = crate::test_rng::xorshift(0x1234_5678_9abc_def1);
        for _ in 0..50_000 {
            let len = (next() % 24) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 4 {
                    0 => b'a' + (next() % 26) as u8,
                    1 => b'A' + (next() % 26) as u8,
                    2 => [
                        b'@', b'[', b'`', b'{', b'_', b'~', 0x7F, 0x80, 0xC1, 0xE1, 0xFA, b' ',
                    ][(next() % 12) as usize],
                    _ => (next() % 256) as u8,
                })
                .collect();
            for start in 0..=len {
                for alpha in [false, true] {
                    let mut e = start;
                    while e < len
                        && (bytes[e].is_ascii_lowercase()
                            || (alpha && bytes[e].is_ascii_uppercase()))
                    {
                        e += 1;
                    }
                    assert_eq!(
                        ascii_run(&bytes, start, alpha),
                        e,
                        "{bytes:?} {start} {alpha}"
                    );
                }
            }
        }
    }

    #[test]
    fn mixed_text_falls_back_per_piece() {
        let s = "caf\u{e9} na\u{ef}ve \u{4e16}\u{754c} x\u{a0}y 1\u{663}2 's\u{17f} \u{1f389}!\n";
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let ours: Vec<&str> = Pieces::new(s, bpe).collect();
            assert_eq!(ours, regex_pieces(s, bpe), "{bpe:?}");
        }
    }
}
