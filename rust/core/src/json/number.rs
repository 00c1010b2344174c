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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::LenSink;
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
        let mut next = crate::test_rng::xorshift(0x1319_8a2e_0370_7344);
        let check = |x: f64| {
            let mut fast = Vec::new();
            write_float(&mut fast, x);
            assert_eq!(fast, format_float(x).as_bytes(), "bits {:x}", x.to_bits());
            let mut len = LenSink::default();
            write_float(&mut len, x);
            assert_eq!(len.len, fast.len(), "bits {:x}", x.to_bits());
        };
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
}
