//! JSON text exactly as Python's `json.dumps` writes it with its defaults.
//!
//! Python's defaults are `ensure_ascii=True`, `allow_nan=True`, separators
//! `", "` / `": "` for the single-line form and `","` / `": "` once an indent
//! is given. This module knows nothing about Python objects: a caller walks its
//! own values and drives a [`JsonWriter`], which formats numbers, escapes
//! strings and places separators, newlines and indentation.
//!
//! The writer feeds a [`Sink`]. `Vec<u8>` collects the text; [`LenSink`] only
//! counts it, so the length of a dump is known without building it.
//!
//! Output is ASCII except for a caller-chosen indent string, so the byte length
//! of the single-line form equals its length in code points.

/// Where JSON text goes: a byte buffer, or a counter.
pub trait Sink {
    /// Append raw bytes (already valid JSON text).
    fn raw(&mut self, bytes: &[u8]);

    /// Append one raw byte.
    fn byte(&mut self, b: u8);

    /// Append the ensure_ascii escape of UTF-8 text, without the quotes.
    fn escaped_utf8(&mut self, text: &str);
}

/// A [`Sink`] that only measures: `len` is the byte length written so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LenSink {
    /// Bytes "written" so far.
    pub len: usize,
}

impl Sink for LenSink {
    #[inline]
    fn raw(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
    }

    #[inline]
    fn byte(&mut self, _b: u8) {
        self.len += 1;
    }

    #[inline]
    fn escaped_utf8(&mut self, text: &str) {
        self.len += escaped_len_utf8(text);
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn raw(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.push(b);
    }

    #[inline]
    fn escaped_utf8(&mut self, text: &str) {
        escape_utf8_into(self, text);
    }
}

// ---------------------------------------------------------------------------
// String escaping (ensure_ascii)
// ---------------------------------------------------------------------------

/// Per byte of UTF-8 input: how many output bytes it accounts for.
///
/// Printable ASCII other than `"` and `\` stays as is (1). `"`, `\` and the
/// five controls with a short form take 2 (`\n`). Other controls and DEL take
/// 6 (`\u00XX`). A lead byte of a two- or three-byte sequence stands for one
/// BMP code point, written as `\uXXXX` (6); a four-byte lead stands for an
/// astral code point, written as a surrogate pair (12). Continuation bytes
/// count 0 because their lead byte already paid for the whole character.
static ESCAPED_LEN: [u8; 256] = build_len_table();

const fn build_len_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f | 0x7f => 6,
            0x20..=0x7e => 1,
            0x80..=0xbf => 0,
            0xc0..=0xef => 6,
            _ => 12,
        };
        i += 1;
    }
    t
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Per byte of UTF-8 input: its escaped length minus one (see [`ESCAPED_LEN`]),
/// so that a text's escaped length is its byte length plus the sum of these.
static ESCAPED_EXTRA: [i8; 256] = build_extra_table();

const fn build_extra_table() -> [i8; 256] {
    let mut t = [0i8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = ESCAPED_LEN[i] as i8 - 1;
        i += 1;
    }
    t
}

/// Escaped length minus byte length of up to eight bytes.
#[inline(always)]
fn extra_of(bytes: &[u8]) -> isize {
    bytes
        .iter()
        .map(|&b| isize::from(ESCAPED_EXTRA[usize::from(b)]))
        .sum()
}

/// Length of the ensure_ascii escape of `text`, quotes excluded.
///
/// The text is tested eight bytes at a time; a word that needs no escape (the
/// common case) counts as its length, others byte by byte through a table.
#[inline]
pub fn escaped_len_utf8(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut extra: isize = 0;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        if escape_mask(word_of(chunk)) != 0 {
            extra += extra_of(chunk);
        }
    }
    let tail = words.remainder();
    if !tail.is_empty() && escape_mask(gather(tail)) != 0 {
        extra += extra_of(tail);
    }
    // The extras never take the total below zero: a continuation byte's -1
    // follows its lead byte's +5 or +11.
    bytes.len().wrapping_add_signed(extra)
}

/// A word holding every byte of `short` (1 to 7 bytes), some twice.
///
/// Made of a few fixed-size reads: a loop over a variable number of bytes
/// mispredicts on nearly every short string (keys, ids, words).
#[inline(always)]
fn gather(short: &[u8]) -> u64 {
    let n = short.len();
    if n >= 4 {
        let low = u32::from_le_bytes([short[0], short[1], short[2], short[3]]);
        let high = u32::from_le_bytes([short[n - 4], short[n - 3], short[n - 2], short[n - 1]]);
        u64::from(low) | (u64::from(high) << 32)
    } else {
        let (a, b, c) = (short[0], short[n / 2], short[n - 1]);
        u64::from_le_bytes([a, b, c, a, b, c, a, b])
    }
}

/// The little-endian word of an eight-byte slice.
#[inline(always)]
fn word_of(chunk: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    u64::from_le_bytes(word)
}

#[inline]
fn push_u_escape(out: &mut Vec<u8>, unit: u32) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[((unit >> 12) & 0xf) as usize],
        HEX[((unit >> 8) & 0xf) as usize],
        HEX[((unit >> 4) & 0xf) as usize],
        HEX[(unit & 0xf) as usize],
    ]);
}

/// Write one code point the way ensure_ascii does (no quotes).
///
/// Accepts every value up to U+10FFFF including lone surrogates, which Python
/// strings may hold and `json.dumps` writes as `\udXXX`.
#[inline]
pub fn push_escaped_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0x22 => out.extend_from_slice(b"\\\""),
        0x5c => out.extend_from_slice(b"\\\\"),
        0x0a => out.extend_from_slice(b"\\n"),
        0x0d => out.extend_from_slice(b"\\r"),
        0x09 => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        0x20..=0x7e => out.push(cp as u8),
        0x1_0000.. => {
            let v = cp - 0x1_0000;
            push_u_escape(out, 0xd800 | (v >> 10));
            push_u_escape(out, 0xdc00 | (v & 0x3ff));
        }
        _ => push_u_escape(out, cp),
    }
}

/// Escaped length of one code point (see [`push_escaped_code_point`]).
#[inline]
pub fn escaped_len_code_point(cp: u32) -> usize {
    match cp {
        0..=0x7f => usize::from(ESCAPED_LEN[cp as usize]),
        0x80..=0xffff => 6,
        _ => 12,
    }
}

/// Flags the bytes of the little-endian word `w` that need escaping: a
/// control (`< 0x20`), `"`, `\\`, DEL or any non-ASCII byte (`>= 0x7f`).
///
/// Zero means the whole word is clean. Otherwise the lowest flagged byte is
/// exactly the first byte needing an escape (flags above it may be spurious,
/// from borrows, which is fine: the caller only looks at the lowest one).
#[inline]
fn escape_mask(w: u64) -> u64 {
    use crate::swar::{HIGH, ONES};
    let high = ((w & !HIGH).wrapping_add(ONES) | w) & HIGH;
    crate::swar::string_stops(w) | high
}

/// Index of the first byte at or after `from` that needs escaping, if any.
#[inline]
fn next_escape(bytes: &[u8], mut from: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(from..from + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let m = escape_mask(u64::from_le_bytes(word));
        if m != 0 {
            return Some(from + (m.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    // The short tail: one test of all its bytes, then (rarely) a byte search.
    let tail = bytes.get(from..).unwrap_or(&[]);
    if tail.is_empty() || escape_mask(gather(tail)) == 0 {
        return None;
    }
    tail.iter()
        .position(|&b| ESCAPED_LEN[usize::from(b)] != 1)
        .map(|i| from + i)
}

/// Append the ensure_ascii escape of UTF-8 `text` to `out`, without quotes.
///
/// Clean runs are copied whole; a run of characters that all need escaping
/// (a word of Cyrillic or CJK, say) is escaped in one go, without scanning
/// for the next escape between its characters.
pub fn escape_utf8_into(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let mut start = 0;
    while let Some(mut i) = next_escape(bytes, start) {
        push_plain(out, &bytes[start..i]);
        while let Some(&b) = bytes.get(i) {
            if b < 0x80 {
                if ESCAPED_LEN[usize::from(b)] == 1 {
                    break;
                }
                push_escaped_code_point(out, u32::from(b));
                i += 1;
            } else {
                // `text` is valid UTF-8, so the sequence is complete and well formed.
                let (cp, width) = decode_utf8_at(bytes, i);
                push_escaped_code_point(out, cp);
                i += width;
            }
        }
        start = i;
    }
    push_plain(out, &bytes[start..]);
}

/// Append `run` (bytes that need no escape) to `out`.
///
/// Most runs are short (keys, ids, words between escapes), where a call to
/// `memcpy` costs more than the copy: up to 16 bytes are written as two
/// fixed-size pieces that overlap in the middle, as `memcpy` itself does for
/// small sizes (the buffer is trimmed to the right length in between).
#[inline(always)]
fn push_plain(out: &mut Vec<u8>, run: &[u8]) {
    let n = run.len();
    if n > 16 {
        out.extend_from_slice(run);
        return;
    }
    let start = out.len();
    if n >= 8 {
        out.extend_from_slice(&word_of(&run[..8]).to_le_bytes());
        out.truncate(start + n - 8);
        out.extend_from_slice(&word_of(&run[n - 8..]).to_le_bytes());
    } else if n >= 4 {
        out.extend_from_slice(&[run[0], run[1], run[2], run[3]]);
        out.truncate(start + n - 4);
        out.extend_from_slice(&[run[n - 4], run[n - 3], run[n - 2], run[n - 1]]);
    } else if n > 0 {
        out.extend_from_slice(&[run[0], run[n / 2], run[n - 1]]);
        out.truncate(start + n);
    }
}

/// Decode the UTF-8 sequence starting at `bytes[i]` (a lead byte >= 0x80).
#[inline]
fn decode_utf8_at(bytes: &[u8], i: usize) -> (u32, usize) {
    let cont = |k: usize| u32::from(bytes.get(i + k).copied().unwrap_or(0x80) & 0x3f);
    let b0 = u32::from(bytes[i]);
    if b0 < 0xe0 {
        (((b0 & 0x1f) << 6) | cont(1), 2)
    } else if b0 < 0xf0 {
        (((b0 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            ((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

// ---------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------

/// A small stack buffer for number text.
struct NumBuf {
    buf: [u8; 40],
    len: usize,
}

impl NumBuf {
    fn new() -> Self {
        NumBuf {
            buf: [0; 40],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn push(&mut self, b: u8) {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn extend(&mut self, s: &[u8]) {
        for &b in s {
            self.push(b);
        }
    }

    /// Push the decimal digits of `v`, left-padded with zeros to `width`.
    fn push_digits(&mut self, mut v: u64, width: usize) {
        let mut tmp = [b'0'; 20];
        let mut pos = tmp.len();
        while v >= 100 {
            let pair = (v % 100) as usize * 2;
            v /= 100;
            pos -= 2;
            tmp[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if v >= 10 {
            let pair = v as usize * 2;
            pos -= 2;
            tmp[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            pos -= 1;
            tmp[pos] = b'0' + v as u8;
        }
        let start = pos.min(tmp.len().saturating_sub(width));
        self.extend(&tmp[start..]);
    }
}

/// [`digits_of_ryu`] of a finite, non-negative `x`.
#[cfg(test)]
fn shortest_digits(x: f64, digits: &mut NumBuf) -> i32 {
    let mut ryu_buf = ryu::Buffer::new();
    digits_of_ryu(ryu_buf.format_finite(x).as_bytes(), digits)
}

/// The shortest round-trip decimal digits of a finite, non-negative number,
/// given ryu's text of it, (no leading or trailing zeros) into `digits`;
/// returns the decimal exponent of the first digit (`x = d.ddd * 10^exp`).
/// Zero gives no digits.
fn digits_of_ryu(text: &[u8], digits: &mut NumBuf) -> i32 {
    // Ryu prints the shortest digits that read back as `x`, choosing the one
    // closest to `x` among equally short candidates, as Python's repr does.
    // Its layout (positional or `e` notation) is not Python's, so only the
    // digits and the exponent are taken from it.
    let e_pos = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let mut exp: i32 = 0;
    if let Some(exp_text) = text.get(e_pos + 1..) {
        let (neg, exp_digits) = match exp_text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, exp_text),
        };
        for &d in exp_digits {
            exp = exp * 10 + i32::from(d.wrapping_sub(b'0'));
        }
        if neg {
            exp = -exp;
        }
    }
    let mantissa = &text[..e_pos];
    let int_len = mantissa
        .iter()
        .position(|&b| b == b'.')
        .unwrap_or(mantissa.len()) as i32;
    // Position of the decimal point counted in digits from the first one kept.
    let mut point = int_len + exp;
    let mut leading = true;
    for &b in mantissa {
        if b == b'.' {
            continue;
        }
        if leading && b == b'0' {
            point -= 1;
            continue;
        }
        leading = false;
        digits.push(b);
    }
    while digits.len > 0 && digits.buf[digits.len - 1] == b'0' {
        digits.len -= 1;
    }
    point - 1
}

/// Format `x` as Python's `float.__repr__` does, with JSON's names for the
/// non-finite values (`NaN`, `Infinity`, `-Infinity`).
///
/// Python writes the shortest digit string that reads back as the same
/// double, in positional notation when the decimal exponent is in
/// `-4..16` (`0.0001`, `123.0`, `1234567890123456.0`) and in scientific
/// notation otherwise, with a signed exponent of at least two digits
/// (`1e-05`, `1e+16`, `1.5e+300`).
fn format_float(x: f64) -> NumBuf {
    let mut out = NumBuf::new();
    if x.is_nan() {
        out.extend(b"NaN");
        return out;
    }
    if x.is_infinite() {
        out.extend(if x > 0.0 {
            b"Infinity" as &[u8]
        } else {
            b"-Infinity"
        });
        return out;
    }
    let mut ryu_buf = ryu::Buffer::new();
    format_finite_from_ryu(x, ryu_buf.format_finite(x).as_bytes())
}

/// [`format_float`] of a finite `x`, given ryu's text of it.
fn format_finite_from_ryu(x: f64, ryu_text: &[u8]) -> NumBuf {
    let mut out = NumBuf::new();
    let mut digit_buf = NumBuf::new();
    let unsigned = ryu_text.strip_prefix(b"-").unwrap_or(ryu_text);
    let exp = digits_of_ryu(unsigned, &mut digit_buf);
    let digits = digit_buf.as_bytes();
    if digits.is_empty() {
        // Zero: Python writes `0.0` / `-0.0`.
        out.extend(if x.is_sign_negative() {
            b"-0.0" as &[u8]
        } else {
            b"0.0"
        });
        return out;
    }
    let n = digits.len() as i32;

    if x.is_sign_negative() {
        out.push(b'-');
    }
    if (-4..16).contains(&exp) {
        // Positional: the decimal point falls after `exp + 1` digits.
        let point = exp + 1;
        if point <= 0 {
            out.extend(b"0.");
            for _ in 0..-point {
                out.push(b'0');
            }
            out.extend(digits);
        } else if point >= n {
            out.extend(digits);
            for _ in 0..point - n {
                out.push(b'0');
            }
            out.extend(b".0");
        } else {
            let p = point as usize;
            out.extend(&digits[..p]);
            out.push(b'.');
            out.extend(&digits[p..]);
        }
    } else {
        out.extend(&digits[..1]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        if a >= 100 {
            out.push(b'0' + (a / 100) as u8);
        }
        if a >= 10 {
            out.push(b'0' + (a / 10 % 10) as u8);
        }
        out.push(b'0' + (a % 10) as u8);
    }
    out
}

/// Whether ryu's text of a finite number is already Python's repr.
///
/// Both write the same shortest round-trip digits. Ryu writes them
/// positionally (`123.0`, `0.5`, `0.00012`) while the decimal point falls
/// within 16 digits to the right of the first digit or 5 to the left, Python
/// within 16 to the right or 4 to the left, and positional texts agree
/// character for character. So ryu's text is Python's unless it is in
/// scientific notation (spelt differently: `1e16` vs `1e+16`) or is one of the
/// positional texts Python writes in scientific notation: |x| in [1e-5, 1e-4),
/// `0.0000d...`.
#[inline]
fn ryu_is_python(text: &[u8]) -> bool {
    let unsigned = text.strip_prefix(b"-").unwrap_or(text);
    !unsigned.starts_with(b"0.0000") && memchr::memchr(b'e', unsigned).is_none()
}

/// Powers of ten up to the most fraction digits [`short_decimal`] tries (all exact in f64).
const POW10: [f64; 9] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
/// Powers of ten as integers, for the positional digits.
const POW10_INT: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];
/// 2^51: scaled values stay below it (see [`short_decimal`]).
const TWO_51: f64 = 2_251_799_813_685_248.0;
/// 2^52: adding and subtracting it rounds a value in [0, 2^51) to the nearest integer.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// Python's repr of a finite `x` that is a short decimal: at most eight
/// digits after the point and at least 1e-4 in magnitude (`12.5`, `0.07`,
/// `1200.0`). `None` for any other value.
///
/// This is the common case in real data (prices, ratings, measurements), and
/// the one ryu is slowest at: it derives 17 digits and strips them one by one.
///
/// Why it is exact. Let a = |x|, and k <= 8 with a * 10^k < 2^51. The reals
/// that round to a lie within ulp(a) / 2 <= a * 2^-53 of it, so scaled by
/// 10^k within 0.25 of a * 10^k: at most one integer m is in there, and its
/// decimal m / 10^k reads back as x exactly when the correctly rounded
/// division m / 10^k gives a. The computed product is within 0.125 of the
/// exact one, so rounding it finds that m when it exists. The smallest such
/// k gives the shortest digits (a decimal with more fraction digits has at
/// least as many significant ones, and the same number only across a power of
/// ten, farther from x than the rounding interval reaches), which is what
/// Python's repr writes, in positional form since 1e-4 <= m / 10^k < 1e16.
/// Before trying each k, one test at the largest k rules out the values with
/// no such decimal at all (most values with 17 significant digits): if some
/// k works, the scaled value there is within 1.5 ulp of an integer.
fn short_decimal(x: f64) -> Option<NumBuf> {
    let a = x.abs();
    let mut k_max = POW10.len() - 1;
    while a * POW10[k_max] >= TWO_51 {
        k_max = k_max.checked_sub(1)?;
    }
    let y = a * POW10[k_max];
    if (y - ((y + TWO_52) - TWO_52)).abs() > y * (1.0 / TWO_52) * 4.0 {
        return None;
    }
    let (k, m) = (0..=k_max).find_map(|k| {
        let m = (a * POW10[k] + TWO_52) - TWO_52;
        (m / POW10[k] == a).then_some((k, m as u64))
    })?;
    if k > 4 && m < POW10_INT[k - 4] {
        return None; // below 1e-4: Python writes it in scientific notation
    }
    let mut out = NumBuf::new();
    if x.is_sign_negative() {
        out.push(b'-');
    }
    out.push_digits(m / POW10_INT[k], 1);
    out.push(b'.');
    if k == 0 {
        out.push(b'0');
    } else {
        out.push_digits(m % POW10_INT[k], k);
    }
    Some(out)
}

/// Append Python's float repr of `x` (JSON spelling for NaN and infinities).
pub fn write_float<S: Sink + ?Sized>(sink: &mut S, x: f64) {
    if x.is_finite() {
        if let Some(text) = short_decimal(x) {
            sink.raw(text.as_bytes());
            return;
        }
        let mut buf = ryu::Buffer::new();
        let text = buf.format_finite(x).as_bytes();
        if ryu_is_python(text) {
            sink.raw(text);
        } else {
            sink.raw(format_finite_from_ryu(x, text).as_bytes());
        }
        return;
    }
    sink.raw(format_float(x).as_bytes());
}

/// Python's float repr of `x` as a `String` (JSON spelling for non-finite values).
pub fn float_repr(x: f64) -> String {
    String::from_utf8_lossy(format_float(x).as_bytes()).into_owned()
}

static DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Append the decimal text of `v`.
pub fn write_i64<S: Sink + ?Sized>(sink: &mut S, v: i64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let mut n = v.unsigned_abs();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        pos -= 1;
        buf[pos] = b'0' + n as u8;
    }
    if v < 0 {
        sink.byte(b'-');
    }
    sink.raw(&buf[pos..]);
}

// ---------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------

/// Layout of the dump: Python's `indent=None` or an indent string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Layout {
    /// One line, `", "` between items and `": "` after keys.
    #[default]
    Compact,
    /// One item per line, each level indented by this text; `","` ends items.
    /// An empty text (Python's `indent=0`) still breaks lines.
    Indent(Vec<u8>),
}

impl Layout {
    /// The layout of `json.dumps(..., indent=n)` for an integer `n`
    /// (a negative `n` indents by nothing, as `" " * n` does in Python).
    pub fn spaces(n: i64) -> Self {
        Layout::Indent(vec![b' '; usize::try_from(n).unwrap_or(0)])
    }
}

/// Drives a [`Sink`] with the punctuation and layout of `json.dumps`.
///
/// The caller opens containers, announces each item or key with its position,
/// and writes scalars; the writer adds separators, line breaks and indents.
/// Empty containers are written whole with [`JsonWriter::empty_array`] /
/// [`JsonWriter::empty_object`] (`[]`, `{}` in both layouts).
#[derive(Debug)]
pub struct JsonWriter<S: Sink> {
    sink: S,
    indent: Option<Vec<u8>>,
    /// `"\n"` followed by the indent repeated for the deepest level seen.
    line_start: Vec<u8>,
    depth: usize,
}

impl<S: Sink> JsonWriter<S> {
    /// A writer with the given layout over `sink`.
    pub fn new(sink: S, layout: Layout) -> Self {
        let indent = match layout {
            Layout::Compact => None,
            Layout::Indent(text) => Some(text),
        };
        JsonWriter {
            sink,
            indent,
            line_start: vec![b'\n'],
            depth: 0,
        }
    }

    /// Give back the sink.
    pub fn into_sink(self) -> S {
        self.sink
    }

    /// The sink, for inspection.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Current nesting depth (open containers).
    pub fn depth(&self) -> usize {
        self.depth
    }

    #[inline]
    fn newline(&mut self) {
        if let Some(indent) = &self.indent {
            let want = 1 + indent.len() * self.depth;
            while self.line_start.len() < want {
                self.line_start.extend_from_slice(indent);
            }
            self.sink.raw(&self.line_start[..want]);
        }
    }

    /// Write `[]`.
    pub fn empty_array(&mut self) {
        self.sink.raw(b"[]");
    }

    /// Write `{}`.
    pub fn empty_object(&mut self) {
        self.sink.raw(b"{}");
    }

    /// Open a non-empty array.
    pub fn begin_array(&mut self) {
        self.sink.byte(b'[');
        self.depth += 1;
    }

    /// Close an array opened with [`JsonWriter::begin_array`].
    pub fn end_array(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.newline();
        self.sink.byte(b']');
    }

    /// Open a non-empty object.
    pub fn begin_object(&mut self) {
        self.sink.byte(b'{');
        self.depth += 1;
    }

    /// Close an object opened with [`JsonWriter::begin_object`].
    pub fn end_object(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.newline();
        self.sink.byte(b'}');
    }

    /// Announce an array item or object member; `first` is true for the first.
    #[inline]
    pub fn item(&mut self, first: bool) {
        if !first {
            if self.indent.is_some() {
                self.sink.byte(b',');
            } else {
                self.sink.raw(b", ");
            }
        }
        self.newline();
    }

    /// End a key: write `": "`.
    #[inline]
    pub fn colon(&mut self) {
        self.sink.raw(b": ");
    }

    /// Write `null`.
    pub fn null(&mut self) {
        self.sink.raw(b"null");
    }

    /// Write `true` or `false`.
    pub fn boolean(&mut self, v: bool) {
        self.sink.raw(if v { b"true" } else { b"false" });
    }

    /// Write an integer.
    pub fn int(&mut self, v: i64) {
        write_i64(&mut self.sink, v);
    }

    /// Write a float as Python's repr (`NaN`, `Infinity`, `-Infinity` included).
    pub fn float(&mut self, v: f64) {
        write_float(&mut self.sink, v);
    }

    /// Write number text produced elsewhere (for example a big integer's digits).
    pub fn raw(&mut self, text: &[u8]) {
        self.sink.raw(text);
    }

    /// Write a quoted, escaped string.
    pub fn string(&mut self, text: &str) {
        self.sink.byte(b'"');
        self.sink.escaped_utf8(text);
        self.sink.byte(b'"');
    }

    /// Write a quoted string given as code points, lone surrogates allowed.
    pub fn string_code_points(&mut self, cps: impl IntoIterator<Item = u32>) {
        self.sink.byte(b'"');
        let mut buf = Vec::new();
        for cp in cps {
            buf.clear();
            push_escaped_code_point(&mut buf, cp);
            self.sink.raw(&buf);
        }
        self.sink.byte(b'"');
    }

    /// Write a key that Python writes as the quoted text of a scalar
    /// (`"1"`, `"1.5"`, `"true"`, `"null"`, `"NaN"`).
    pub fn quoted_raw(&mut self, text: &[u8]) {
        self.sink.byte(b'"');
        self.sink.raw(text);
        self.sink.byte(b'"');
    }

    /// Write an integer key (quoted).
    pub fn int_key(&mut self, v: i64) {
        self.sink.byte(b'"');
        write_i64(&mut self.sink, v);
        self.sink.byte(b'"');
    }

    /// Write a float key (quoted float repr).
    pub fn float_key(&mut self, v: f64) {
        self.sink.byte(b'"');
        write_float(&mut self.sink, v);
        self.sink.byte(b'"');
    }
}

// ---------------------------------------------------------------------------
// A plain value tree, for callers (and tests) without their own object model
// ---------------------------------------------------------------------------

/// A JSON value as Python's `json` sees one.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None`.
    Null,
    /// `True` / `False`.
    Bool(bool),
    /// An `int` that fits 64 bits.
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `list` or `tuple`.
    Array(Vec<Value>),
    /// A `dict` with string keys, in insertion order.
    Object(Vec<(String, Value)>),
}

/// Write `value` with the writer.
pub fn write_value<S: Sink>(w: &mut JsonWriter<S>, value: &Value) {
    match value {
        Value::Null => w.null(),
        Value::Bool(b) => w.boolean(*b),
        Value::Int(i) => w.int(*i),
        Value::Float(f) => w.float(*f),
        Value::Str(s) => w.string(s),
        Value::Array(items) if items.is_empty() => w.empty_array(),
        Value::Array(items) => {
            w.begin_array();
            for (i, item) in items.iter().enumerate() {
                w.item(i == 0);
                write_value(w, item);
            }
            w.end_array();
        }
        Value::Object(members) if members.is_empty() => w.empty_object(),
        Value::Object(members) => {
            w.begin_object();
            for (i, (k, v)) in members.iter().enumerate() {
                w.item(i == 0);
                w.string(k);
                w.colon();
                write_value(w, v);
            }
            w.end_object();
        }
    }
}

/// `json.dumps(value, indent=...)` for a [`Value`], as a `String`.
pub fn dumps(value: &Value, layout: Layout) -> String {
    let mut w = JsonWriter::new(Vec::new(), layout);
    write_value(&mut w, value);
    String::from_utf8_lossy(&w.into_sink()).into_owned()
}

/// Length of `json.dumps(value)` (single-line form) without building it.
pub fn dumps_len(value: &Value) -> usize {
    let mut w = JsonWriter::new(LenSink::default(), Layout::Compact);
    write_value(&mut w, value);
    w.into_sink().len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut v = Vec::new();
        escape_utf8_into(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn float_repr_matches_python_examples() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (123.0, "123.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1234567890123456.0, "1234567890123456.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5, "1.5"),
            (-2.5e-7, "-2.5e-07"),
            (1e22, "1e+22"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (2.2250738585072014e-308, "2.2250738585072014e-308"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (3.14159, "3.14159"),
            (100.5, "100.5"),
        ];
        for &(x, want) in cases {
            assert_eq!(float_repr(x), want, "repr of {x:e}");
        }
    }

    /// Shortest digits and exponent from Rust's own `{:e}` (an independent
    /// shortest round-trip formatter), to cross-check the ryu-based path.
    fn std_digits(x: f64) -> (String, i32) {
        let s = format!("{:e}", x);
        let (m, e) = s.split_once('e').unwrap();
        (m.replace('.', ""), e.parse().unwrap())
    }

    #[test]
    fn shortest_digits_agree_with_std() {
        let mut state: u64 = 0x243f_6a88_85a3_08d3;
        for i in 0..200_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = if i % 3 == 0 {
                // Short decimals, the common case in real data.
                (state % 1_000_000) as f64 / 10f64.powi((state >> 40) as i32 % 12)
            } else {
                f64::from_bits(state)
            };
            if !x.is_finite() || x == 0.0 {
                continue;
            }
            let mut d = NumBuf::new();
            let exp = shortest_digits(x.abs(), &mut d);
            let got = (String::from_utf8(d.as_bytes().to_vec()).unwrap(), exp);
            let std = std_digits(x.abs());
            if got != std {
                // Exact ties between two shortest candidates: Python (and ryu)
                // round half to even, Rust's formatter may not. Both candidates
                // must still read back as `x` and be equally short.
                assert_eq!(got.0.len(), std.0.len(), "bits {:x}", x.to_bits());
                assert_eq!(got.1, std.1, "bits {:x}", x.to_bits());
                let ours: f64 = format!("0.{}e{}", got.0, got.1 + 1).parse().unwrap();
                assert_eq!(ours, x.abs(), "bits {:x}", x.to_bits());
                let last = got.0.as_bytes()[got.0.len() - 1];
                assert_eq!(
                    (last - b'0') % 2,
                    0,
                    "tie not rounded to even: {:x}",
                    x.to_bits()
                );
            }
        }
    }

    #[test]
    fn short_decimals_take_the_fast_path_and_match_python() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.25, "1.25"),
            (-12.5, "-12.5"),
            (0.1, "0.1"),
            (0.07, "0.07"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (1200.0, "1200.0"),
            (19.99, "19.99"),
            (4.7, "4.7"),
            (48.856613, "48.856613"),
            (1234567.12345678, "1234567.12345678"),
            (22517998.12, "22517998.12"),
            (1.7e9 + 0.125, "1700000000.125"),
            (2251799813685247.0, "2251799813685247.0"),
        ];
        for &(x, want) in cases {
            let fast = short_decimal(x).unwrap_or_else(|| panic!("{x} missed the fast path"));
            assert_eq!(std::str::from_utf8(fast.as_bytes()).unwrap(), want);
            assert_eq!(float_repr(x), want);
        }
        // Not short, or Python's scientific range: left to the general path.
        for x in [
            0.1 + 0.2,
            1e-5,
            0.00005,
            1e16,
            1.0 / 3.0,
            5e-324,
            2251799813685248.0 + 2.0,
        ] {
            assert!(short_decimal(x).is_none(), "{x}");
        }
    }

    #[test]
    fn ryu_text_is_used_only_where_it_is_python_repr() {
        let mut state: u64 = 0x1319_8a2e_0370_7344;
        let mut check = |x: f64| {
            let mut fast = Vec::new();
            write_float(&mut fast, x);
            assert_eq!(fast, format_float(x).as_bytes(), "bits {:x}", x.to_bits());
            let mut len = LenSink::default();
            write_float(&mut len, x);
            assert_eq!(len.len, fast.len(), "bits {:x}", x.to_bits());
        };
        for i in 0..300_000u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = match i % 4 {
                0 => (state % 100_000_000) as f64 / 10f64.powi((state >> 40) as i32 % 24),
                1 => f64::from_bits(state),
                2 => {
                    ((state >> 11) as f64 / (1u64 << 53) as f64)
                        * 10f64.powi((state % 50) as i32 - 25)
                }
                _ => -((state % 1_000_000) as f64) / 100.0,
            };
            check(x);
        }
        // The edges of Python's positional range, on both sides and both signs.
        for e in -30..30 {
            let p = 10f64.powi(e);
            for x in [
                p,
                p * 0.999_999_999_999_9,
                p * 1.000_000_000_001,
                p * 1.5,
                p - p * 1e-16,
            ] {
                check(x);
                check(-x);
            }
        }
        for x in [
            0.0,
            -0.0,
            1e-5,
            9.999e-5,
            1e-4,
            1e16,
            9.999_999_999_999_998e15,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            check(x);
            check(-x);
        }
    }

    #[test]
    fn swar_scan_matches_table() {
        for b in 0u8..=255 {
            for pos in 0..8 {
                let mut word = [b'a'; 8];
                word[pos] = b;
                let want = ESCAPED_LEN[usize::from(b)] != 1;
                let m = escape_mask(u64::from_le_bytes(word));
                assert_eq!(m != 0, want, "{b:#x}");
                if want {
                    assert_eq!(m.trailing_zeros() / 8, pos as u32, "{b:#x}");
                }
            }
        }
        // Two flagged bytes in one word: the lowest must win.
        assert_eq!(next_escape(b"ab\x01\x00cdefgh", 0), Some(2));
        assert_eq!(next_escape(b"abcdefgh\"", 0), Some(8));
        assert_eq!(next_escape(b"abcdefghij", 0), None);
        let long = "abcdefghijklmnopqrstuvwxyz0123456789 \"x\" é tail";
        assert_eq!(
            esc(long),
            "abcdefghijklmnopqrstuvwxyz0123456789 \\\"x\\\" \\u00e9 tail"
        );
    }

    #[test]
    fn escapes_like_ensure_ascii() {
        assert_eq!(esc("plain"), "plain");
        assert_eq!(esc("a\"b\\c"), "a\\\"b\\\\c");
        assert_eq!(esc("\n\r\t\u{8}\u{c}"), "\\n\\r\\t\\b\\f");
        assert_eq!(esc("\u{0}\u{1f}\u{7f}"), "\\u0000\\u001f\\u007f");
        assert_eq!(esc("é€"), "\\u00e9\\u20ac");
        assert_eq!(esc("😀"), "\\ud83d\\ude00");
        assert_eq!(esc("\u{10ffff}"), "\\udbff\\udfff");
        assert_eq!(esc("\u{abcd}"), "\\uabcd");
    }

    #[test]
    fn escaped_len_agrees_with_escape() {
        for s in [
            "",
            "abc",
            "a\"\\\n\u{1}\u{7f}",
            "é€😀x",
            "日本語テキスト",
            "exactly8",
            "sixteen bytes ok",
            "seventeen bytes!\n",
            "a long clean run of ascii text, then é and 😀 and \"quotes\" late",
            "данные данные",
        ] {
            assert_eq!(escaped_len_utf8(s), esc(s).len(), "{s:?}");
        }
        for cp in [0x22, 0x41, 0x0a, 0x01, 0x7f, 0xe9, 0xd800, 0xffff, 0x1f600] {
            let mut v = Vec::new();
            push_escaped_code_point(&mut v, cp);
            assert_eq!(escaped_len_code_point(cp), v.len(), "{cp:x}");
        }
    }

    #[test]
    fn escaped_len_of_every_length_and_position() {
        let specials = ["\"", "\\", "\n", "\u{1}", "\u{7f}", "é", "€", "😀"];
        for n in 0..26 {
            let plain = "abcdefghijklmnopqrstuvwxyz"[..n].to_owned();
            assert_eq!(escaped_len_utf8(&plain), n);
            for at in 0..=n {
                for special in specials {
                    let mut text = plain.clone();
                    text.insert_str(at, special);
                    assert_eq!(escaped_len_utf8(&text), esc(&text).len(), "{text:?}");
                    text.insert_str(0, special);
                    assert_eq!(escaped_len_utf8(&text), esc(&text).len(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn lone_surrogates_escape() {
        let mut w = JsonWriter::new(Vec::new(), Layout::Compact);
        w.string_code_points([0x61, 0xd800, 0x62, 0xdfff]);
        assert_eq!(w.into_sink(), b"\"a\\ud800b\\udfff\"");
    }

    #[test]
    fn ints() {
        for (v, want) in [
            (0i64, "0"),
            (7, "7"),
            (-7, "-7"),
            (10, "10"),
            (99, "99"),
            (100, "100"),
            (-1234567, "-1234567"),
            (i64::MAX, "9223372036854775807"),
            (i64::MIN, "-9223372036854775808"),
        ] {
            let mut v8 = Vec::new();
            write_i64(&mut v8, v);
            assert_eq!(String::from_utf8(v8).unwrap(), want);
        }
    }

    fn sample() -> Value {
        Value::Object(vec![
            (
                "a".into(),
                Value::Array(vec![Value::Int(1), Value::Float(2.5)]),
            ),
            ("b".into(), Value::Object(vec![])),
            ("c".into(), Value::Array(vec![])),
            (
                "d".into(),
                Value::Object(vec![
                    ("x".into(), Value::Null),
                    ("y".into(), Value::Bool(true)),
                ]),
            ),
            ("é".into(), Value::Str("ü\n".into())),
        ])
    }

    #[test]
    fn compact_layout() {
        let want = r#"{"a": [1, 2.5], "b": {}, "c": [], "d": {"x": null, "y": true}, "\u00e9": "\u00fc\n"}"#;
        assert_eq!(dumps(&sample(), Layout::Compact), want);
        assert_eq!(dumps_len(&sample()), want.len());
    }

    #[test]
    fn indented_layout() {
        let want = "{\n  \"a\": [\n    1,\n    2.5\n  ],\n  \"b\": {},\n  \"c\": [],\n  \"d\": {\n    \"x\": null,\n    \"y\": true\n  },\n  \"\\u00e9\": \"\\u00fc\\n\"\n}";
        assert_eq!(dumps(&sample(), Layout::spaces(2)), want);
        let zero = dumps(&Value::Array(vec![Value::Int(1)]), Layout::spaces(0));
        assert_eq!(zero, "[\n1\n]");
        assert_eq!(Layout::spaces(-3), Layout::spaces(0));
    }

    #[test]
    fn scalars_at_top_level() {
        assert_eq!(dumps(&Value::Null, Layout::spaces(2)), "null");
        assert_eq!(dumps(&Value::Str("x".into()), Layout::Compact), "\"x\"");
        assert_eq!(dumps(&Value::Array(vec![]), Layout::spaces(2)), "[]");
    }
}
