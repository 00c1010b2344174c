//! String escaping as `json.dumps` does it with `ensure_ascii=True`, from
//! whichever code units the caller holds: UTF-8, or the one-, two- or
//! four-byte units Python keeps a `str` in (so that a caller never has to
//! convert a string before writing it).
//!
//! The writers reserve the worst case once per string and then store through
//! a raw pointer: clean runs are copied a block at a time, unconditionally,
//! and the first unit needing an escape is found in the same pass.

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
static UTF8_EXTRA: [i8; 256] = build_extra_table(false);

/// The same for one-byte (Latin-1) units, where every byte is a code point:
/// those from U+0080 up are written `\u00XX`.
static LATIN1_EXTRA: [i8; 256] = build_extra_table(true);

const fn build_extra_table(latin1: bool) -> [i8; 256] {
    let mut t = [0i8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = if latin1 && i >= 0x80 {
            5
        } else {
            ESCAPED_LEN[i] as i8 - 1
        };
        i += 1;
    }
    t
}

/// Escaped length minus byte length of up to eight bytes.
#[inline(always)]
fn extra_of(bytes: &[u8], table: &[i8; 256]) -> isize {
    bytes
        .iter()
        .map(|&b| isize::from(table[usize::from(b)]))
        .sum()
}

/// Length of the ensure_ascii escape of `text`, quotes excluded.
#[inline]
pub fn escaped_len_utf8(text: &str) -> usize {
    escaped_len_bytes(text.as_bytes(), &UTF8_EXTRA)
}

/// Escaped length of bytes read through `table` (UTF-8 or Latin-1).
///
/// The text is tested eight bytes at a time; a word that needs no escape (the
/// common case) counts as its length, others byte by byte through the table.
#[inline]
fn escaped_len_bytes(bytes: &[u8], table: &[i8; 256]) -> usize {
    let mut extra: isize = 0;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        if escape_mask(word_of(chunk)) != 0 {
            extra += extra_of(chunk, table);
        }
    }
    let tail = words.remainder();
    if !tail.is_empty() && escape_mask(gather(tail)) != 0 {
        extra += extra_of(tail, table);
    }
    // The extras never take the total below zero: in UTF-8 a continuation
    // byte's -1 follows its lead byte's +5 or +11.
    bytes.len().wrapping_add_signed(extra)
}

/// Length of the ensure_ascii escape of `text`, quotes excluded.
pub fn escaped_len(text: Units<'_>) -> usize {
    match text {
        Units::Utf8(s) => escaped_len_utf8(s),
        Units::Latin1(b) => escaped_len_bytes(b, &LATIN1_EXTRA),
        Units::Ucs2(u) => u
            .iter()
            .map(|&u| escaped_len_code_point(u32::from(u)))
            .sum(),
        Units::Ucs4(u) => u.iter().map(|&u| escaped_len_code_point(u)).sum(),
    }
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

/// Escaped length of one code point, as ensure_ascii writes it.
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

/// A string's code units, as its owner stores them.
#[derive(Debug, Clone, Copy)]
pub enum Units<'a> {
    /// UTF-8 text (pure ASCII included).
    Utf8(&'a str),
    /// One byte per code point, U+0000 to U+00FF.
    Latin1(&'a [u8]),
    /// One 16-bit unit per code point: the BMP, lone surrogates included.
    Ucs2(&'a [u16]),
    /// One 32-bit unit per code point, lone surrogates included.
    Ucs4(&'a [u32]),
}

impl<'a> Units<'a> {
    /// How many code units (bytes for UTF-8 and Latin-1) the text has.
    #[inline]
    pub fn len(self) -> usize {
        match self {
            Units::Utf8(s) => s.len(),
            Units::Latin1(b) => b.len(),
            Units::Ucs2(u) => u.len(),
            Units::Ucs4(u) => u.len(),
        }
    }

    /// Whether the text is empty.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The text cut in two after at most `n` units (`n >= 4`), never inside a
    /// UTF-8 character; each unit of the other kinds escapes on its own.
    pub fn split_at_most(self, n: usize) -> (Units<'a>, Units<'a>) {
        if self.len() <= n {
            return (self, Units::Latin1(&[]));
        }
        match self {
            Units::Utf8(s) => {
                let mut at = n;
                while !s.is_char_boundary(at) {
                    at -= 1;
                }
                let (a, b) = s.split_at(at);
                (Units::Utf8(a), Units::Utf8(b))
            }
            Units::Latin1(b) => (Units::Latin1(&b[..n]), Units::Latin1(&b[n..])),
            Units::Ucs2(u) => (Units::Ucs2(&u[..n]), Units::Ucs2(&u[n..])),
            Units::Ucs4(u) => (Units::Ucs4(&u[..n]), Units::Ucs4(&u[n..])),
        }
    }

    /// The most bytes the escape can take: 6 per byte or 16-bit unit (a
    /// UTF-8 byte never stands for more), 12 per 32-bit unit (a pair).
    fn worst_case(self) -> usize {
        match self {
            Units::Utf8(s) => s.len() * 6,
            Units::Latin1(b) => b.len() * 6,
            Units::Ucs2(u) => u.len() * 6,
            Units::Ucs4(u) => u.len() * 12,
        }
    }
}

/// Room past the escaped text that block copies may scribble on (it is
/// overwritten or left beyond the buffer's length).
const SLACK: usize = 16;

/// The room [`escape_raw`] needs for `text`: its worst case plus the slack
/// of the block copies.
#[inline]
pub fn escape_room(text: Units<'_>) -> usize {
    text.worst_case() + SLACK
}

/// Write the ensure_ascii escape of `text` (no quotes) at `dst`; return how
/// many bytes it takes.
///
/// # Safety
/// `dst` must be valid for writes of [`escape_room`]`(text)` bytes. Bytes past
/// the returned length may have been written too (and mean nothing).
#[inline(always)]
pub unsafe fn escape_raw(dst: *mut u8, text: Units<'_>) -> usize {
    // The short plain strings inline (see `short_plain`), the rest in one call.
    let short = match text {
        Units::Utf8(s) => short_plain(dst, s.as_bytes()),
        Units::Latin1(b) => short_plain(dst, b),
        Units::Ucs2(_) | Units::Ucs4(_) => None,
    };
    match short {
        Some(n) => n,
        None => escape_general(dst, text),
    }
}

/// [`escape_raw`] for any text.
///
/// # Safety
/// As [`escape_raw`].
#[inline(never)]
unsafe fn escape_general(dst: *mut u8, text: Units<'_>) -> usize {
    let end = match text {
        Units::Utf8(s) => bytes_into(dst, s.as_bytes(), true),
        Units::Latin1(b) => bytes_into(dst, b, false),
        Units::Ucs2(u) => wide_into(dst, u),
        Units::Ucs4(u) => wide_into(dst, u),
    };
    end.offset_from(dst) as usize
}

/// The copy of a string of at most 16 bytes that needs no escape, or `None`
/// (some byte needs one, or the string is longer) for the general path.
///
/// Most strings of a document are this short (ids, names, words, times), and
/// for them the general path's call and its loops over blocks and words cost
/// more than the copy: here the bytes are read and stored as two fixed-size
/// pieces that overlap in the middle (three single bytes below four), all
/// inside the string, and tested together.
///
/// # Safety
/// `dst` must be valid for writes of `bytes.len()` bytes.
#[inline(always)]
unsafe fn short_plain(dst: *mut u8, bytes: &[u8]) -> Option<usize> {
    use std::ptr::{read_unaligned, write_unaligned};
    let n = bytes.len();
    let src = bytes.as_ptr();
    if n > 16 {
        #[cfg(any(fast_x86_64, fast_aarch64))]
        if n <= MEDIUM {
            return medium_plain(dst, src, n);
        }
        return None;
    }
    if n >= 8 {
        let head = read_unaligned(src.cast::<u64>());
        let tail = read_unaligned(src.add(n - 8).cast::<u64>());
        if escape_mask(u64::from_le(head)) | escape_mask(u64::from_le(tail)) != 0 {
            return None;
        }
        write_unaligned(dst.cast::<u64>(), head);
        write_unaligned(dst.add(n - 8).cast::<u64>(), tail);
    } else if n >= 4 {
        let head = read_unaligned(src.cast::<u32>());
        let tail = read_unaligned(src.add(n - 4).cast::<u32>());
        let word = u64::from(u32::from_le(head)) | (u64::from(u32::from_le(tail)) << 32);
        if escape_mask(word) != 0 {
            return None;
        }
        write_unaligned(dst.cast::<u32>(), head);
        write_unaligned(dst.add(n - 4).cast::<u32>(), tail);
    } else if n > 0 {
        let (a, b, c) = (*src, *src.add(n / 2), *src.add(n - 1));
        if escape_mask(u64::from_le_bytes([a, b, c, a, b, c, a, b])) != 0 {
            return None;
        }
        *dst = a;
        *dst.add(n / 2) = b;
        *dst.add(n - 1) = c;
    }
    Some(n)
}

/// The longest string [`medium_plain`] takes.
#[cfg(any(fast_x86_64, fast_aarch64))]
const MEDIUM: usize = 64;

/// [`short_plain`] for 17 to [`MEDIUM`] bytes (ids, hashes, URLs, times):
/// two to four vector blocks, the last ending at the string's end (and
/// overlapping the one before it), copied and tested together, with no loop
/// and no call. `None` when some byte needs an escape; the blocks stored
/// then lie inside the escape's room and are written over by the general path.
///
/// # Safety
/// `src` must be valid for reads of `n` bytes (17 to [`MEDIUM`]) and `dst`
/// for writes of `n` bytes.
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
unsafe fn medium_plain(dst: *mut u8, src: *const u8, n: usize) -> Option<usize> {
    debug_assert!((17..=MEDIUM).contains(&n));
    let mut m =
        blocks::store_bytes(src, dst) | blocks::store_bytes(src.add(n - 16), dst.add(n - 16));
    if n > 32 {
        m |= blocks::store_bytes(src.add(16), dst.add(16));
        if n > 48 {
            m |= blocks::store_bytes(src.add(32), dst.add(32));
        }
    }
    (m == 0).then_some(n)
}

/// Append the ensure_ascii escape of `text` to `out`, without quotes.
pub fn escape_into(out: &mut Vec<u8>, text: Units<'_>) {
    crate::alloc::reserve(out, escape_room(text));
    // SAFETY: `reserve` made the room `escape_raw` asks for; the length
    // grows by what it reports written.
    unsafe {
        let written = escape_raw(out.as_mut_ptr().add(out.len()), text);
        out.set_len(out.len() + written);
    }
}

/// Whether a code unit is written as itself.
#[inline(always)]
fn is_plain(unit: u32) -> bool {
    unit < 0x80 && ESCAPED_LEN[unit as usize] == 1
}

/// Two lowercase hex digits per byte value, as a little-endian `u16`.
static HEX_PAIRS: [u16; 256] = build_hex_pairs();

const fn build_hex_pairs() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = HEX[b >> 4] as u16 | (HEX[b & 0xf] as u16) << 8;
        b += 1;
    }
    table
}

/// Whether a code unit is written as one `\uXXXX`: from U+0080 on, short of
/// the astral range (a 32-bit unit there takes a surrogate pair).
#[inline(always)]
fn is_single_u_escape(unit: u32) -> bool {
    (0x80..0x1_0000).contains(&unit)
}

/// Write `\uXXXX` for one UTF-16 unit at `dst` in one 8-byte store; the two
/// bytes past the escape are scribbled on (the writers' slack covers them).
#[inline(always)]
unsafe fn put_u_escape(dst: *mut u8, unit: u32) {
    let hi = u64::from(HEX_PAIRS[(unit >> 8 & 0xff) as usize]);
    let lo = u64::from(HEX_PAIRS[(unit & 0xff) as usize]);
    let word = u64::from(b'\\') | u64::from(b'u') << 8 | hi << 16 | lo << 32;
    std::ptr::write_unaligned(dst.cast::<u64>(), word.to_le());
}

/// Write the escape of a code point that is not plain at `dst`; return the end.
#[inline]
unsafe fn put_escape(dst: *mut u8, cp: u32) -> *mut u8 {
    let short = match cp {
        0x22 => b'"',
        0x5c => b'\\',
        0x0a => b'n',
        0x0d => b'r',
        0x09 => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => 0,
    };
    if short != 0 {
        *dst = b'\\';
        *dst.add(1) = short;
        return dst.add(2);
    }
    if cp < 0x1_0000 {
        put_u_escape(dst, cp);
        return dst.add(6);
    }
    let v = cp - 0x1_0000;
    put_u_escape(dst, 0xd800 | (v >> 10));
    put_u_escape(dst.add(6), 0xdc00 | (v & 0x3ff));
    dst.add(12)
}

/// Escape one- or eight-bit-clean bytes (UTF-8 when `utf8`, else Latin-1).
unsafe fn bytes_into(mut dst: *mut u8, bytes: &[u8], utf8: bool) -> *mut u8 {
    let n = bytes.len();
    let mut i = 0;
    loop {
        let clean = copy_plain_bytes(bytes.as_ptr().add(i), n - i, dst);
        i += clean;
        dst = dst.add(clean);
        let Some(&b) = bytes.get(i) else {
            return dst;
        };
        if b >= 0x80 && utf8 {
            // `bytes` is valid UTF-8, so the sequence is complete.
            let (cp, width) = decode_utf8_at(bytes, i);
            dst = put_escape(dst, cp);
            i += width;
        } else {
            dst = put_escape(dst, u32::from(b));
            i += 1;
        }
    }
}

/// Copy the plain bytes at the start of `src[..len]` to `dst`; return how
/// many there were. Whole blocks are stored before they are tested, so up to
/// [`SLACK`] bytes past the plain run may be written too.
#[inline(always)]
unsafe fn copy_plain_bytes(src: *const u8, len: usize, dst: *mut u8) -> usize {
    let mut k = 0;
    #[cfg(any(fast_x86_64, fast_aarch64))]
    while len - k >= 16 {
        let m = blocks::store_bytes(src.add(k), dst.add(k));
        if m != 0 {
            return k + (m.trailing_zeros() / blocks::BYTE_BITS) as usize;
        }
        k += 16;
    }
    while len - k >= 8 {
        let w = std::ptr::read_unaligned(src.add(k).cast::<u64>());
        std::ptr::write_unaligned(dst.add(k).cast::<u64>(), w);
        let m = escape_mask(u64::from_le(w));
        if m != 0 {
            return k + (m.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    let rest = len - k;
    if rest == 0 {
        return k;
    }
    let tail = std::slice::from_raw_parts(src.add(k), rest);
    let out = dst.add(k);
    if escape_mask(gather(tail)) == 0 {
        // Two overlapping stores (or three bytes) write the whole tail.
        if rest >= 4 {
            std::ptr::copy_nonoverlapping(tail.as_ptr(), out, 4);
            std::ptr::copy_nonoverlapping(tail.as_ptr().add(rest - 4), out.add(rest - 4), 4);
        } else {
            *out = tail[0];
            *out.add(rest / 2) = tail[rest / 2];
            *out.add(rest - 1) = tail[rest - 1];
        }
        return len;
    }
    for (j, &b) in tail.iter().enumerate() {
        if ESCAPED_LEN[usize::from(b)] != 1 {
            return k + j;
        }
        *out.add(j) = b;
    }
    len
}

/// A two- or four-byte code unit, with its vector block (see [`blocks`]).
trait WideUnit: Copy + Into<u32> {
    /// Units per block.
    #[cfg(any(fast_x86_64, fast_aarch64))]
    const BLOCK: usize;
    /// Store a block's units narrowed to bytes at `dst`; flag bits of the units
    /// that are not plain, [`blocks::BYTE_BITS`] per byte of a unit, in order.
    #[cfg(any(fast_x86_64, fast_aarch64))]
    unsafe fn store_block(src: *const Self, dst: *mut u8) -> u64;
}

impl WideUnit for u16 {
    #[cfg(any(fast_x86_64, fast_aarch64))]
    const BLOCK: usize = 8;
    #[cfg(any(fast_x86_64, fast_aarch64))]
    #[inline(always)]
    unsafe fn store_block(src: *const Self, dst: *mut u8) -> u64 {
        blocks::store_ucs2(src, dst)
    }
}

impl WideUnit for u32 {
    #[cfg(any(fast_x86_64, fast_aarch64))]
    const BLOCK: usize = 4;
    #[cfg(any(fast_x86_64, fast_aarch64))]
    #[inline(always)]
    unsafe fn store_block(src: *const Self, dst: *mut u8) -> u64 {
        blocks::store_ucs4(src, dst)
    }
}

/// Escape 16- or 32-bit units.
unsafe fn wide_into<U: WideUnit>(mut dst: *mut u8, units: &[U]) -> *mut u8 {
    let mut i = 0;
    loop {
        #[cfg(any(fast_x86_64, fast_aarch64))]
        while units.len() - i >= U::BLOCK {
            let m = U::store_block(units.as_ptr().add(i), dst);
            if m != 0 {
                let unit_bits = blocks::BYTE_BITS as usize * std::mem::size_of::<U>();
                let k = m.trailing_zeros() as usize / unit_bits;
                i += k;
                dst = dst.add(k);
                break;
            }
            i += U::BLOCK;
            dst = dst.add(U::BLOCK);
        }
        while let Some(&u) = units.get(i) {
            if !is_plain(u.into()) {
                break;
            }
            *dst = u.into() as u8;
            dst = dst.add(1);
            i += 1;
        }
        let Some(&u) = units.get(i) else {
            return dst;
        };
        dst = put_escape(dst, u.into());
        i += 1;
        // Text outside ASCII comes in runs (words of a script): escape the
        // run's units straight away, without going back to the block test.
        while let Some(&u) = units.get(i) {
            let u: u32 = u.into();
            if !is_single_u_escape(u) {
                break;
            }
            put_u_escape(dst, u);
            dst = dst.add(6);
            i += 1;
        }
    }
}

/// SSE2 blocks (part of every x86_64 CPU): store a block's units narrowed to
/// bytes, then flag the ones that are not plain (`movemask` bits, in order).
#[cfg(fast_x86_64)]
mod blocks {
    use std::arch::x86_64::*;

    /// Flag bits per byte of a unit.
    pub(super) const BYTE_BITS: u32 = 1;

    /// Flags of a block: below space (or, compared signed, at or above
    /// 0x80), above `~`, `"` or `\`.
    #[inline(always)]
    unsafe fn not_plain_8(v: __m128i) -> __m128i {
        let low = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
        let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_or_si128(_mm_or_si128(low, del), _mm_or_si128(quote, backslash))
    }

    /// 16 bytes, copied as they are.
    #[inline(always)]
    pub(super) unsafe fn store_bytes(src: *const u8, dst: *mut u8) -> u64 {
        let v = _mm_loadu_si128(src.cast());
        _mm_storeu_si128(dst.cast(), v);
        u64::from(_mm_movemask_epi8(not_plain_8(v)) as u32)
    }

    /// 8 sixteen-bit units: 8 bytes stored; two flag bits per unit.
    #[inline(always)]
    pub(super) unsafe fn store_ucs2(src: *const u16, dst: *mut u8) -> u64 {
        let v = _mm_loadu_si128(src.cast());
        // Signed compares: units from 0x8000 are negative, so "below space".
        let low = _mm_cmplt_epi16(v, _mm_set1_epi16(0x20));
        let high = _mm_cmpgt_epi16(v, _mm_set1_epi16(0x7e));
        let quote = _mm_cmpeq_epi16(v, _mm_set1_epi16(0x22));
        let backslash = _mm_cmpeq_epi16(v, _mm_set1_epi16(0x5c));
        let flags = _mm_or_si128(_mm_or_si128(low, high), _mm_or_si128(quote, backslash));
        _mm_storel_epi64(dst.cast(), _mm_packus_epi16(v, v));
        u64::from(_mm_movemask_epi8(flags) as u32)
    }

    /// 4 thirty-two-bit units: 4 bytes stored; four flag bits per unit.
    #[inline(always)]
    pub(super) unsafe fn store_ucs4(src: *const u32, dst: *mut u8) -> u64 {
        let v = _mm_loadu_si128(src.cast());
        // Code points never reach the sign bit, so signed compares are exact.
        let low = _mm_cmplt_epi32(v, _mm_set1_epi32(0x20));
        let high = _mm_cmpgt_epi32(v, _mm_set1_epi32(0x7e));
        let quote = _mm_cmpeq_epi32(v, _mm_set1_epi32(0x22));
        let backslash = _mm_cmpeq_epi32(v, _mm_set1_epi32(0x5c));
        let flags = _mm_or_si128(_mm_or_si128(low, high), _mm_or_si128(quote, backslash));
        let narrow = _mm_packus_epi16(_mm_packs_epi32(v, v), v);
        std::ptr::write_unaligned(dst.cast::<i32>(), _mm_cvtsi128_si32(narrow));
        u64::from(_mm_movemask_epi8(flags) as u32)
    }
}

/// NEON blocks (part of every aarch64 CPU), the contract of the SSE2 ones with
/// four flag bits per byte (see [`nibble_mask`]).
#[cfg(fast_aarch64)]
mod blocks {
    use crate::arch::neon::nibble_mask;
    use std::arch::aarch64::*;

    /// Flag bits per byte of a unit.
    pub(super) const BYTE_BITS: u32 = 4;

    /// 16 bytes, copied as they are. Not plain: below space, `0x7f` and above,
    /// `"` or `\\`.
    #[inline(always)]
    pub(super) unsafe fn store_bytes(src: *const u8, dst: *mut u8) -> u64 {
        let v = vld1q_u8(src);
        vst1q_u8(dst, v);
        let outside = vorrq_u8(vcltq_u8(v, vdupq_n_u8(0x20)), vcgeq_u8(v, vdupq_n_u8(0x7f)));
        let special = vorrq_u8(
            vceqq_u8(v, vdupq_n_u8(b'"')),
            vceqq_u8(v, vdupq_n_u8(b'\\')),
        );
        nibble_mask(vorrq_u8(outside, special))
    }

    /// Flags of sixteen-bit units that are not plain, as 0xffff lanes.
    #[inline(always)]
    unsafe fn not_plain_16(v: uint16x8_t) -> uint16x8_t {
        let outside = vorrq_u16(
            vcltq_u16(v, vdupq_n_u16(0x20)),
            vcgtq_u16(v, vdupq_n_u16(0x7e)),
        );
        let special = vorrq_u16(
            vceqq_u16(v, vdupq_n_u16(0x22)),
            vceqq_u16(v, vdupq_n_u16(0x5c)),
        );
        vorrq_u16(outside, special)
    }

    /// 8 sixteen-bit units: 8 bytes stored (each unit's low byte).
    #[inline(always)]
    pub(super) unsafe fn store_ucs2(src: *const u16, dst: *mut u8) -> u64 {
        let v = vld1q_u16(src);
        vst1_u8(dst, vmovn_u16(v));
        nibble_mask(vreinterpretq_u8_u16(not_plain_16(v)))
    }

    /// 4 thirty-two-bit units: 4 bytes stored (each unit's low byte).
    #[inline(always)]
    pub(super) unsafe fn store_ucs4(src: *const u32, dst: *mut u8) -> u64 {
        // Narrowed with saturation, a unit above 0xffff reads 0xffff: not plain
        // either way, so the sixteen-bit test decides every unit exactly.
        let n = vqmovn_u32(vld1q_u32(src));
        let flags = not_plain_16(vcombine_u16(n, n));
        // Each unit's flag doubled back to 32 bits: four bytes of flags per unit.
        let flags = vzip1q_u16(flags, flags);
        let narrow = vmovn_u16(vcombine_u16(n, n));
        // `dst` may be unaligned: the lane is written as a plain value.
        let low = vget_lane_u32::<0>(vreinterpret_u32_u8(narrow));
        std::ptr::write_unaligned(dst.cast::<u32>(), low);
        nibble_mask(vreinterpretq_u8_u16(flags))
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

#[cfg(test)]
mod tests {

    #[test]
    fn long_strings_are_quoted_piece_by_piece_with_the_same_text() {
        use super::super::writer::Sink;
        // Multi-byte characters and escapes straddle every piece boundary.
        let text: String = "aé\u{1F600}\n\"日".repeat(300_000);
        let units: Vec<u32> = text.chars().map(|c| c as u32).collect();
        let wide: Vec<u16> = text.encode_utf16().collect();
        for t in [Units::Utf8(&text), Units::Ucs4(&units), Units::Ucs2(&wide)] {
            assert!(t.len() > 1 << 20);
            let mut whole = b"\"".to_vec();
            escape_into(&mut whole, t);
            whole.push(b'"');
            let mut pieces = Vec::new();
            pieces.quoted(t);
            assert_eq!(pieces, whole);
        }
        let (a, b) = Units::Utf8("aé").split_at_most(2);
        assert!(matches!((a, b), (Units::Utf8("a"), Units::Utf8("é"))));
    }

    use super::*;

    // The per-code-point writer the block paths must agree with; spelled with
    // `format!` so the oracle shares no hex code with the writer it checks.
    fn push_u_escape(out: &mut Vec<u8>, unit: u32) {
        out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
    }

    /// Write one code point the way ensure_ascii does (no quotes).
    ///
    /// Accepts every value up to U+10FFFF including lone surrogates, which Python
    /// strings may hold and `json.dumps` writes as `\udXXX`.
    fn push_escaped_code_point(out: &mut Vec<u8>, cp: u32) {
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

    fn esc(s: &str) -> String {
        let mut v = Vec::new();
        escape_into(&mut v, Units::Utf8(s));
        String::from_utf8(v).unwrap()
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
        assert_eq!(esc("ab\u{1}\u{0}cdefgh"), "ab\\u0001\\u0000cdefgh");
        assert_eq!(esc("abcdefgh\""), "abcdefgh\\\"");
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
        let mut v = Vec::new();
        escape_into(&mut v, Units::Ucs2(&[0x61, 0xd800, 0x62, 0xdfff]));
        assert_eq!(v, b"a\\ud800b\\udfff");
        v.clear();
        escape_into(&mut v, Units::Ucs4(&[0xdbff, 0x1f600]));
        assert_eq!(v, b"\\udbff\\ud83d\\ude00");
    }

    /// The escape of code points one at a time: the oracle for the block paths.
    fn one_by_one(cps: &[u32]) -> Vec<u8> {
        let mut v = Vec::new();
        for &cp in cps {
            push_escaped_code_point(&mut v, cp);
        }
        v
    }

    /// Runs of escaped units (words of a script, surrogates, astral code
    /// points, controls) between plain stretches, as every unit kind.
    #[test]
    fn runs_of_escapes_agree_with_one_by_one() {
        let pool: [u32; 14] = [
            b'a'.into(),
            b' '.into(),
            0x22,
            0x5c,
            0x0a,
            0x1f,
            0x7f,
            0xe9,
            0xff,
            0x0434,
            0x6771,
            0xd83d,
            0xdfff,
            0xffff,
        ];
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3000 {
            let len = (next() % 70) as usize;
            let astral = next().is_multiple_of(3);
            let cps: Vec<u32> = (0..len)
                .map(|_| match next() % 10 {
                    0 if astral => 0x1f680,
                    0..=2 => pool[(next() % 4) as usize],
                    _ => pool[(next() % pool.len() as u64) as usize],
                })
                .collect();
            let want = one_by_one(&cps);
            let mut out = b"x".to_vec();
            escape_into(&mut out, Units::Ucs4(&cps));
            assert_eq!(&out[1..], &want[..], "{cps:x?}");
            if !astral {
                let units: Vec<u16> = cps.iter().map(|&c| c as u16).collect();
                let mut out = Vec::new();
                escape_into(&mut out, Units::Ucs2(&units));
                assert_eq!(out, want, "{cps:x?}");
            }
        }
    }

    /// Every kind of units agrees with the oracle at every length and at
    /// every position of a special unit, with the buffer already holding text.
    #[test]
    fn all_unit_kinds_agree_with_one_by_one() {
        let specials: [u32; 12] = [
            0x22, 0x5c, 0x0a, 0x01, 0x1f, 0x7e, 0x7f, 0x80, 0xe9, 0xff, 0x20ac, 0xd800,
        ];
        let astral = [0x1f600u32, 0x10ffff];
        for n in 0..40usize {
            let plain: Vec<u32> = (0..n).map(|i| u32::from(b'a') + (i % 26) as u32).collect();
            let mut cases = vec![plain.clone()];
            for at in 0..=n {
                for &sp in specials.iter().chain(&astral) {
                    let mut with = plain.clone();
                    with.insert(at, sp);
                    cases.push(with.clone());
                    with.insert(0, sp);
                    cases.push(with);
                }
            }
            for cps in cases {
                let want = one_by_one(&cps);
                let check = |units: Units<'_>| {
                    let mut out = b"prefix".to_vec();
                    escape_into(&mut out, units);
                    assert_eq!(&out[6..], &want[..], "{cps:x?} as {units:?}");
                    assert_eq!(escaped_len(units), want.len(), "{cps:x?}");
                };
                check(Units::Ucs4(&cps));
                if cps.iter().all(|&c| c < 0x1_0000) {
                    let units: Vec<u16> = cps.iter().map(|&c| c as u16).collect();
                    check(Units::Ucs2(&units));
                }
                if cps.iter().all(|&c| c < 0x100) {
                    let units: Vec<u8> = cps.iter().map(|&c| c as u8).collect();
                    check(Units::Latin1(&units));
                }
                if cps.iter().all(|&c| !(0xd800..0xe000).contains(&c)) {
                    let text: String = cps.iter().map(|&c| char::from_u32(c).unwrap()).collect();
                    check(Units::Utf8(&text));
                }
            }
        }
    }
}
