//! Eight-bytes-at-a-time scans ("SIMD within a register") shared by the JSON writer and parser.

/// `0x01` in every byte.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
/// The top bit of every byte.
pub(crate) const HIGH: u64 = 0x8080_8080_8080_8080;

/// Flags (top bit) the zero bytes of `x`; the lowest flag is exact, higher ones may be spurious.
#[inline]
pub(crate) fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// Flags the bytes of the little-endian word `w` that end a plain run inside a
/// JSON string: `"`, `\\` or a control character (`< 0x20`). The lowest flag is
/// exact; higher ones may be spurious.
#[inline]
pub(crate) fn string_stops(w: u64) -> u64 {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let quote = zero_bytes(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_bytes(w ^ (ONES * u64::from(b'\\')));
    below_space | quote | backslash
}

#[cfg(test)]
mod tests {
    use super::string_stops;

    #[test]
    fn lowest_flag_is_the_first_stop_byte() {
        for (text, first) in [
            (*b"abcdefgh", None),
            (*b"ab\"defgh", Some(2)),
            (*b"abcdefg\\", Some(7)),
            (*b"a\nbcdefg", Some(1)),
        ] {
            let mask = string_stops(u64::from_le_bytes(text));
            let found = (mask != 0).then(|| (mask.trailing_zeros() / 8) as usize);
            assert_eq!(found, first, "{:?}", std::str::from_utf8(&text));
        }
    }
}
