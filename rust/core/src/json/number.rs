use super::writer::Sink;

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
}

/// [`digits_of_text`] of a finite, non-negative `x`.
#[cfg(test)]
fn shortest_digits(x: f64, digits: &mut NumBuf) -> i32 {
    let mut ryu_buf = ryu::Buffer::new();
    digits_of_text(ryu_buf.format_finite(x).as_bytes(), digits)
}

/// The digits of a shortest round-trip text of a finite, non-negative number
/// (ryu's or zmij's, positional or scientific), without leading or trailing
/// zeros, into `digits`; returns the decimal exponent of the first digit
/// (`x = d.ddd * 10^exp`). Zero gives no digits.
fn digits_of_text(text: &[u8], digits: &mut NumBuf) -> i32 {
    // Both print the shortest digits that read back as `x`, choosing the one
    // closest to `x` among equally short candidates, as Python's repr does.
    // Their layouts are not always Python's, so only the digits and the
    // exponent are taken from the text.
    let e_pos = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let mut exp: i32 = 0;
    if let Some(exp_text) = text.get(e_pos + 1..) {
        let (neg, exp_digits) = match exp_text.split_first() {
            Some((b'-', rest)) => (true, rest),
            Some((b'+', rest)) => (false, rest),
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
///
/// This is the tests' oracle: ryu's digits (an independent shortest
/// round-trip formatter) laid out by [`python_layout`], which knows nothing
/// of the fast paths of [`write_float`].
#[cfg(test)]
fn format_float(x: f64) -> NumBuf {
    let mut out = NumBuf::new();
    if !x.is_finite() {
        out.extend(non_finite(x));
        return out;
    }
    let mut ryu_buf = ryu::Buffer::new();
    python_layout(x, ryu_buf.format_finite(x).as_bytes())
}

/// JSON's names of the non-finite values, as `json.dumps` writes them.
fn non_finite(x: f64) -> &'static [u8] {
    if x.is_nan() {
        b"NaN"
    } else if x > 0.0 {
        b"Infinity"
    } else {
        b"-Infinity"
    }
}

/// Python's repr of a finite `x` from any text of its shortest round-trip
/// digits (positional or scientific, as ryu or zmij write them): the digits
/// and exponent are read back and laid out Python's way.
fn python_layout(x: f64, text: &[u8]) -> NumBuf {
    let mut out = NumBuf::new();
    let mut digit_buf = NumBuf::new();
    let unsigned = text.strip_prefix(b"-").unwrap_or(text);
    let exp = digits_of_text(unsigned, &mut digit_buf);
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

/// Write a finite `x` from zmij's shortest round-trip text, as Python's repr.
///
/// zmij and Python choose the same digits (the shortest that read back as
/// `x`, the closest of those, ties to even) and lay them out alike in most
/// cases: positional from 1e-4 up to 1e16 (`0.00012`, `12.5`, `1200.0`),
/// scientific otherwise with a sign and two or three exponent digits
/// (`1.5e+300`, `2.5e-07`). Two cases differ and are fixed here: zmij writes
/// a one-digit exponent alone (`e-7` where Python writes `e-07`), and it is
/// positional one decade lower (`0.0000123`, Python's `1.23e-05`).
#[inline]
pub(super) fn write_zmij_as_python<S: Sink + ?Sized>(sink: &mut S, x: f64, text: &[u8]) {
    let n = text.len();
    if n >= 4 && text[n - 3] == b'e' {
        // `de+d`: pad the exponent to two digits.
        let mut out = [0u8; 32];
        out[..n - 1].copy_from_slice(&text[..n - 1]);
        out[n - 1] = b'0';
        out[n] = text[n - 1];
        sink.raw(&out[..=n]);
        return;
    }
    let unsigned = text.strip_prefix(b"-").unwrap_or(text);
    if unsigned.starts_with(b"0.0000") {
        sink.raw(python_layout(x, text).as_bytes());
        return;
    }
    sink.raw(text);
}

/// The band of magnitudes whose zmij text needs fixing, as the bits of its
/// bounds: from 1e-11 (a margin below 1e-9, so that no text with a one-digit
/// exponent is near the edge) up to, not including, 1e-4.
const FIX_FROM: u64 = 1e-11_f64.to_bits();
const FIX_BELOW: u64 = 1e-4_f64.to_bits();

/// Append Python's float repr of `x` (JSON spelling for NaN and infinities).
#[inline]
pub fn write_float<S: Sink + ?Sized>(sink: &mut S, x: f64) {
    // A whole number below 1e16 (a count or an amount read as a float) is
    // its integer's digits and `.0`, which our integer writer produces for a
    // fraction of the shortest-digits search. Zero keeps its sign below.
    // One branch on the round trip through `i64` (`as` saturates, so it is
    // defined for every `x`), with the magnitude folded in as a select: that
    // fails for nearly every value that is not whole, whatever its magnitude,
    // where a branch on the magnitude mispredicts on values of mixed ones.
    // Out of range the candidate is 0, which no nonzero `x` equals.
    let v = if x.abs() < 1e16 { x as i64 } else { 0 };
    if v as f64 == x && x != 0.0 {
        // Written in place (not through a stack copy of the digits, which
        // would read back bytes just stored).
        sink.int(v);
        sink.raw(b".0");
        return;
    }
    if !x.is_finite() {
        sink.raw(non_finite(x));
        return;
    }
    // Both differences (see `write_zmij_as_python`) lie between 1e-9 and
    // 1e-4 in magnitude: below 1e-4 the shortest text of `x` is below 0.0001
    // exactly when `x` is below the double nearest it (rounding keeps order),
    // and a one-digit exponent means a text of at least 1e-9. Deciding on the
    // value spares reading back the bytes zmij has only just stored, and a
    // narrow band keeps the test predictable over values of every magnitude.
    // Compared as bits: for a nonnegative double they order as the values do.
    if x.abs().to_bits().wrapping_sub(FIX_FROM) < FIX_BELOW - FIX_FROM {
        sink.tiny(x);
    } else {
        sink.shortest(x);
    }
}

/// The room [`tiny_in_place`] takes: zmij's buffer and the byte a padded
/// exponent adds (Python's longest repr of a double is 24 bytes).
pub const TINY_ROOM: usize = 32;

/// Python's repr of a finite, nonzero `x` below 1e-4 in magnitude, stored at
/// `dst`; returns its length. zmij's text is laid over the destination (see
/// [`shortest_in_place`]) and fixed there, reading back single bytes only
/// (the copy out of a separate buffer read back whole words of bytes just
/// stored one by one, which stalls).
///
/// # Safety
/// `dst` must be valid for writes of [`TINY_ROOM`] bytes.
#[inline(always)]
pub unsafe fn tiny_in_place(dst: *mut u8, x: f64) -> usize {
    let n = shortest_in_place(dst, x);
    if n >= 4 && *dst.add(n - 3) == b'e' {
        // `de-d`: the exponent padded to two digits, as Python writes it.
        *dst.add(n) = *dst.add(n - 1);
        *dst.add(n - 1) = b'0';
        return n + 1;
    }
    let neg = usize::from(*dst == b'-');
    if n >= neg + 6 && std::slice::from_raw_parts(dst.add(neg), 6) == b"0.0000" {
        // Positional one decade lower than Python (`0.0000123`): laid out again.
        let mut text = [0u8; SHORTEST_ROOM];
        std::ptr::copy_nonoverlapping(dst, text.as_mut_ptr(), n.min(SHORTEST_ROOM));
        let out = python_layout(x, &text[..n.min(SHORTEST_ROOM)]);
        let bytes = out.as_bytes();
        let len = bytes.len().min(TINY_ROOM);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len);
        return len;
    }
    n
}

/// The room zmij's text of a float takes: its whole buffer.
pub const SHORTEST_ROOM: usize = std::mem::size_of::<zmij::Buffer>();

// `shortest_in_place` lays a `zmij::Buffer` over bytes of ours: that needs a
// buffer of bytes alone, with no alignment.
const _: () = assert!(SHORTEST_ROOM == 24 && std::mem::align_of::<zmij::Buffer>() == 1);

/// zmij's shortest round-trip text of a finite `x`, stored at `dst`; returns
/// its length. zmij writes into a buffer of its own, and copying its text out
/// reads back bytes it has only just stored (in other widths, which stalls the
/// loads); laid over the destination, its buffer is the output.
///
/// # Safety
/// `dst` must be valid for writes of [`SHORTEST_ROOM`] bytes.
#[inline(always)]
pub unsafe fn shortest_in_place(dst: *mut u8, x: f64) -> usize {
    // SAFETY: `zmij::Buffer` is 24 bytes of `MaybeUninit<u8>` with alignment
    // 1 (checked above), so any 24 writable bytes are a valid one.
    let buf = &mut *dst.cast::<zmij::Buffer>();
    let text = buf.format_finite(x);
    let (at, n) = (text.as_ptr(), text.len());
    if at != dst.cast_const() {
        // zmij returns its text from the start of its buffer; should that
        // change, the text still lies inside the 24 bytes and is moved down.
        std::ptr::copy(at, dst, n);
    }
    n
}

/// Python's float repr of `x` as a `String` (JSON spelling for non-finite values).
pub fn float_repr(x: f64) -> String {
    let mut out = Vec::new();
    write_float(&mut out, x);
    String::from_utf8(out).expect("float text is ASCII")
}

static DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The longest decimal text of an `i64`: `-9223372036854775808`.
pub const I64_MAX_LEN: usize = 20;

/// `10^(d-1)` for a `d`-digit number, with 0 in place of 1 so that zero
/// counts as one digit.
static DIGITS_FROM: [u64; 20] = {
    let mut t = [0u64; 20];
    let mut i = 1;
    let mut p = 10u64;
    while i < 20 {
        t[i] = p;
        p = p.wrapping_mul(10);
        i += 1;
    }
    t
};

/// How many decimal digits `n` has (1 to 20), without a loop: the bit length
/// gives the count or one more (`1233 / 4096` is just above log10(2)).
#[inline(always)]
pub fn decimal_len(n: u64) -> usize {
    let bits = 64 - (n | 1).leading_zeros() as usize;
    let guess = ((bits * 1233) >> 12) + 1;
    guess - usize::from(n < DIGITS_FROM[guess - 1])
}

/// Length of the decimal text of `v`.
#[inline(always)]
pub fn i64_len(v: i64) -> usize {
    usize::from(v < 0) + decimal_len(v.unsigned_abs())
}

/// Write the decimal text of `v` at `dst`, right to left;
/// return its length.
///
/// # Safety
/// `dst` must be valid for writes of [`I64_MAX_LEN`] bytes.
#[inline(always)]
pub unsafe fn put_i64(dst: *mut u8, v: i64) -> usize {
    let mut n = v.unsigned_abs();
    let neg = usize::from(v < 0);
    let len = neg + decimal_len(n);
    // A minus sign is stored unconditionally: without one, the first digit overwrites it.
    *dst = b'-';
    let pairs = DIGIT_PAIRS.as_ptr();
    let mut end = dst.add(len);
    // Four digits a step: the two pairs of a step do not wait on each other.
    while n >= 10_000 {
        let four = (n % 10_000) as usize;
        n /= 10_000;
        end = end.sub(4);
        std::ptr::copy_nonoverlapping(pairs.add(four / 100 * 2), end, 2);
        std::ptr::copy_nonoverlapping(pairs.add(four % 100 * 2), end.add(2), 2);
    }
    if n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        end = end.sub(2);
        std::ptr::copy_nonoverlapping(pairs.add(pair), end, 2);
    }
    if n >= 10 {
        std::ptr::copy_nonoverlapping(pairs.add(n as usize * 2), end.sub(2), 2);
    } else {
        *end.sub(1) = b'0' + n as u8;
    }
    len
}

/// Append the decimal text of `v`.
#[inline]
pub fn write_i64<S: Sink + ?Sized>(sink: &mut S, v: i64) {
    sink.int(v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LenSink;

    /// Writes `x` into a `Vec` and into a measuring sink and holds both
    /// against the ryu oracle (`format_float`): same bytes, same length.
    fn check_against_ryu(x: f64) {
        let mut fast = Vec::new();
        write_float(&mut fast, x);
        assert_eq!(fast, format_float(x).as_bytes(), "bits {:x}", x.to_bits());
        let mut len = LenSink::default();
        write_float(&mut len, x);
        assert_eq!(len.len, fast.len(), "bits {:x}", x.to_bits());
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
            (3.14158, "3.14158"),
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
        let mut next = crate::test_rng::xorshift(0x243f_6a88_85a3_08d3);
        for i in 0..200_000u32 {
            let state = next();
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
    fn short_decimals_match_python() {
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
            (0.00005, "5e-05"),
            (-0.000012345, "-1.2345e-05"),
        ];
        for &(x, want) in cases {
            assert_eq!(float_repr(x), want);
        }
    }

    #[test]
    fn zmij_text_fixed_up_agrees_with_the_ryu_oracle() {
        let mut next = crate::test_rng::xorshift(0x1319_8a2e_0370_7344);
        let check = check_against_ryu;
        for i in 0..300_000u32 {
            let state = next();
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
        // Whole numbers (the integer writer's path) of every length, both signs,
        // past 2^53 (where every double is whole) up to 1e16 and beyond.
        for i in 0..100_000u32 {
            let state = next();
            let whole = (state % 10u64.pow(1 + i % 17)) as f64;
            check(whole);
            check(-whole);
        }
        // The doubles next to the bounds where the writing is decided on the
        // value: the band zmij's text is fixed in, its lower margin, 1e16.
        for edge in [1e-11f64, 1e-10, 1e-9, 1e-4, 1e16] {
            for step in -3i64..=3 {
                let x = f64::from_bits(edge.to_bits().wrapping_add_signed(step));
                check(x);
                check(-x);
            }
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

    /// Below 1e-4 the text is written in place and fixed there: every decade
    /// from the subnormals up, short and 17-digit mantissas, the decade
    /// zmij writes positionally (1e-5 to 1e-4), both signs; a `Vec` (in place)
    /// and a measuring sink (the copying default) against the ryu oracle.
    #[test]
    fn tiny_values_in_place_agree_with_the_ryu_oracle() {
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        let check = check_against_ryu;
        for e in -324..-3 {
            for m in [
                1.0,
                1.5,
                2.5,
                9.99,
                1.234_567_890_123_456_7,
                9.999_999_999_999_999,
            ] {
                let x = m * 10f64.powi(e);
                if x != 0.0 {
                    check(x);
                    check(-x);
                }
            }
        }
        for _ in 0..200_000 {
            let state = next();
            let sub = f64::from_bits(state >> 12); // subnormal or zero
            let decade = ((state >> 11) as f64 / (1u64 << 53) as f64) * 9e-5 + 1e-5;
            for x in [sub, decade, f64::from_bits(state & 0x3f1f_ffff_ffff_ffff)] {
                if x != 0.0 {
                    check(x);
                    check(-x);
                }
            }
        }
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

    /// Every power of ten and its neighbours, both signs, plus a sweep of
    /// pseudo-random values: the text, its counted length, and the length a
    /// measuring sink adds up all agree with `to_string`.
    #[test]
    fn ints_at_every_digit_boundary() {
        let mut values = vec![0i64, 1, -1, i64::MAX, i64::MIN, i64::MIN + 1];
        let mut p: i64 = 1;
        for _ in 0..19 {
            for v in [p - 1, p, p + 1] {
                values.extend([v, -v]);
            }
            p = p.saturating_mul(10);
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x as i64 >> (x % 64));
        }
        for v in values {
            let want = v.to_string();
            let mut out = Vec::new();
            write_i64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want);
            assert_eq!(i64_len(v), want.len(), "{v}");
            let mut len = LenSink::default();
            write_i64(&mut len, v);
            assert_eq!(len.len, want.len());
        }
    }
}
