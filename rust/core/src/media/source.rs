//! The bytes of a media block, raw or base64 text, read at any offset
//! without decoding more than the reader asks for.
//!
//! Base64 without line breaks is position-addressable: byte `n` of the data
//! sits in the 4-character group starting at character `4 * (n / 3)`. So the
//! header readers pay for the few bytes they look at, whatever the image's
//! size. Text with whitespace or a `data:` URI prefix is handled too: the
//! prefix is skipped, and a group that is not clean base64 makes the reader
//! decode the whole text once, leaving out whitespace (a slow path for rare
//! input). Input that is not base64 at all reads as absent bytes: the caller
//! then counts the rule's cap.

/// Media bytes: raw, or base64 text (standard or URL-safe alphabet, padded or not).
pub enum Source<'a> {
    /// The bytes themselves.
    Raw(&'a [u8]),
    /// Base64 text; decoded lazily.
    Base64(Base64<'a>),
}

impl<'a> Source<'a> {
    /// Raw bytes.
    pub fn raw(bytes: &'a [u8]) -> Self {
        Source::Raw(bytes)
    }

    /// Base64 text, with or without a `data:...;base64,` prefix.
    pub fn base64(text: &'a [u8]) -> Self {
        Source::Base64(Base64::new(text))
    }

    /// Copies `out.len()` bytes from `offset`; `false` when the data is shorter (or not base64).
    pub fn read(&mut self, offset: usize, out: &mut [u8]) -> bool {
        match self {
            Source::Raw(bytes) => {
                let Some(end) = offset.checked_add(out.len()) else {
                    return false;
                };
                match bytes.get(offset..end) {
                    Some(slice) => {
                        out.copy_from_slice(slice);
                        true
                    }
                    None => false,
                }
            }
            Source::Base64(b64) => b64.read(offset, out),
        }
    }

    /// The whole data, decoded (base64) or borrowed (raw); `None` for text that is not base64.
    pub fn whole(&mut self) -> Option<std::borrow::Cow<'a, [u8]>> {
        match self {
            Source::Raw(bytes) => Some(std::borrow::Cow::Borrowed(bytes)),
            Source::Base64(b64) => b64.decode_all().map(std::borrow::Cow::Owned),
        }
    }
}

/// Base64 text read lazily.
pub struct Base64<'a> {
    text: &'a [u8],
    /// How much of `text` is known to hold no whitespace (groups there are at their places).
    clean: usize,
    /// The whole text decoded, once a group was not clean (`Some(None)`: not base64).
    slow: Option<Option<Vec<u8>>>,
}

fn sextet(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Decodes one group of up to four characters (no padding) into `out`; the number of bytes made.
fn decode_group(group: &[u8], out: &mut [u8; 3]) -> Option<usize> {
    if group.len() < 2 {
        return None;
    }
    let mut acc = 0u32;
    for &c in group {
        acc = (acc << 6) | sextet(c)?;
    }
    acc <<= 6 * (4 - group.len() as u32);
    out[0] = (acc >> 16) as u8;
    out[1] = (acc >> 8) as u8;
    out[2] = acc as u8;
    Some(group.len() - 1)
}

impl<'a> Base64<'a> {
    fn new(text: &'a [u8]) -> Self {
        let mut text = text;
        if text.starts_with(b"data:") {
            // `data:image/png;base64,<data>`: the data starts after the first comma.
            text = match memchr::memchr(b',', text) {
                Some(comma) => &text[comma + 1..],
                None => &[],
            };
        }
        let mut end = text.len();
        while end > 0 && matches!(text[end - 1], b'=' | b'\n' | b'\r' | b' ' | b'\t') {
            end -= 1;
        }
        let mut start = 0;
        while start < end && matches!(text[start], b'\n' | b'\r' | b' ' | b'\t') {
            start += 1;
        }
        Base64 {
            text: &text[start..end],
            clean: 0,
            slow: None,
        }
    }

    fn read(&mut self, offset: usize, out: &mut [u8]) -> bool {
        if let Some(decoded) = &self.slow {
            return copy_from(decoded.as_deref(), offset, out);
        }
        let mut written = 0;
        let mut group = [0u8; 3];
        let mut position = offset;
        while written < out.len() {
            let first_char = (position / 3) * 4;
            let Some(chars) = self.text.get(first_char..) else {
                return false;
            };
            let chars = &chars[..chars.len().min(4)];
            let upto = first_char + chars.len();
            if upto > self.clean {
                // Whitespace before a group shifts it: positions hold only in a clean prefix.
                if has_space_or_control(&self.text[self.clean..upto]) {
                    return self.fall_back(offset, out);
                }
                self.clean = upto;
            }
            let Some(made) = decode_group(chars, &mut group) else {
                return self.fall_back(offset, out);
            };
            let within = position % 3;
            if within >= made {
                return false; // past the end of the data
            }
            let take = (made - within).min(out.len() - written);
            out[written..written + take].copy_from_slice(&group[within..within + take]);
            written += take;
            position += take;
        }
        true
    }

    /// A group was not clean: decode the whole text once, leaving out whitespace.
    fn fall_back(&mut self, offset: usize, out: &mut [u8]) -> bool {
        let decoded = self.decode_all();
        let ok = copy_from(decoded.as_deref(), offset, out);
        self.slow = Some(decoded);
        ok
    }

    fn decode_all(&mut self) -> Option<Vec<u8>> {
        if let Some(decoded) = &self.slow {
            return decoded.clone();
        }
        let mut data = Vec::new();
        if data.try_reserve(self.text.len() / 4 * 3 + 3).is_err() {
            return None;
        }
        let mut quad = [0u8; 4];
        let mut filled = 0;
        let mut group = [0u8; 3];
        for &c in self.text {
            if c.is_ascii_whitespace() {
                continue;
            }
            quad[filled] = c;
            filled += 1;
            if filled == 4 {
                decode_group(&quad, &mut group)?;
                data.extend_from_slice(&group);
                filled = 0;
            }
        }
        if filled > 0 {
            let made = decode_group(&quad[..filled], &mut group)?;
            data.extend_from_slice(&group[..made]);
        }
        Some(data)
    }
}

/// Whether `text` holds a byte at or below the space (every base64 character is above it).
///
/// Each 64-byte chunk is folded without an early exit, which the compiler vectorizes.
fn has_space_or_control(text: &[u8]) -> bool {
    text.chunks(64)
        .any(|chunk| chunk.iter().fold(false, |found, &c| found | (c <= b' ')))
}

fn copy_from(decoded: Option<&[u8]>, offset: usize, out: &mut [u8]) -> bool {
    let Some(decoded) = decoded else {
        return false;
    };
    let Some(end) = offset.checked_add(out.len()) else {
        return false;
    };
    match decoded.get(offset..end) {
        Some(slice) => {
            out.copy_from_slice(slice);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(data: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in data.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn reads_any_range_of_base64_as_of_raw() {
        let data: Vec<u8> = (0..=255u8).chain(0..50).collect();
        let text = encode(&data);
        for offset in 0..data.len() {
            for len in 0..7 {
                let mut a = vec![0u8; len];
                let mut b = vec![0u8; len];
                let ra = Source::raw(&data).read(offset, &mut a);
                let rb = Source::base64(text.as_bytes()).read(offset, &mut b);
                assert_eq!(ra, rb, "offset {offset} len {len}");
                if ra {
                    assert_eq!(a, b);
                }
            }
        }
    }

    #[test]
    fn whitespace_and_data_uri_prefix_are_read_too() {
        let data: Vec<u8> = (0..200u8).collect();
        let text = encode(&data);
        let wrapped: String = text
            .as_bytes()
            .chunks(76)
            .map(|line| String::from_utf8_lossy(line).into_owned())
            .collect::<Vec<_>>()
            .join("\r\n");
        let uri = format!("data:image/png;base64,{wrapped}\n");
        let mut out = [0u8; 10];
        assert!(Source::base64(uri.as_bytes()).read(150, &mut out));
        assert_eq!(&out[..], &data[150..160]);
        assert_eq!(
            Source::base64(uri.as_bytes()).whole().unwrap().as_ref(),
            &data[..]
        );
    }

    #[test]
    fn text_that_is_not_base64_reads_as_absent() {
        let mut out = [0u8; 4];
        assert!(!Source::base64(b"not base64 at all!").read(0, &mut out));
        assert!(!Source::base64(b"").read(0, &mut out));
        assert!(!Source::base64(b"A").read(0, &mut out));
        assert!(Source::base64(b"%%%%").whole().is_none());
    }
}
