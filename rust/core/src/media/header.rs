//! Pixel sizes from image headers (PNG, JPEG, GIF, WebP), without decoding.
//!
//! Each reader looks only at the bytes that declare the size: PNG's IHDR, the
//! GIF logical screen, WebP's VP8 / VP8L / VP8X chunk, JPEG's first
//! start-of-frame segment (reached by skipping segments by their lengths, so
//! the work is bounded by the number of segments before it, each at least
//! four bytes). Anything else, a header cut short, a zero side or a side
//! above [`MAX_SIDE`] is `None`: the caller counts the rule's cap.
use super::source::Source;

/// The largest side believed (WebP's own limit; providers refuse far smaller
/// images). A larger declared side is treated as malformed.
pub const MAX_SIDE: u32 = 16_383;

/// The image's declared width and height in pixels, when its header can be read and makes sense.
pub fn image_size(source: &mut Source<'_>) -> Option<(u32, u32)> {
    let mut magic = [0u8; 12];
    let got = read_prefix(source, &mut magic);
    let magic = &magic[..got];
    let size = if magic.starts_with(b"\x89PNG\r\n\x1a\n") {
        png(source)
    } else if magic.starts_with(b"\xff\xd8") {
        jpeg(source)
    } else if magic.starts_with(b"GIF87a") || magic.starts_with(b"GIF89a") {
        gif(source)
    } else if magic.len() == 12 && &magic[..4] == b"RIFF" && &magic[8..12] == b"WEBP" {
        webp(source)
    } else {
        None
    }?;
    let (w, h) = size;
    (w > 0 && h > 0 && w <= MAX_SIDE && h <= MAX_SIDE).then_some(size)
}

/// Reads as many of the first `out.len()` bytes as exist; the count read.
fn read_prefix(source: &mut Source<'_>, out: &mut [u8]) -> usize {
    if source.read(0, out) {
        return out.len();
    }
    // Shorter than `out`: find how much there is (at most 12 probes).
    let mut len = out.len();
    while len > 0 {
        len -= 1;
        if source.read(0, &mut out[..len]) {
            return len;
        }
    }
    0
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn png(source: &mut Source<'_>) -> Option<(u32, u32)> {
    // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4).
    let mut head = [0u8; 24];
    if !source.read(0, &mut head) || &head[12..16] != b"IHDR" {
        return None;
    }
    Some((be32(&head[16..20]), be32(&head[20..24])))
}

fn gif(source: &mut Source<'_>) -> Option<(u32, u32)> {
    let mut head = [0u8; 10];
    if !source.read(0, &mut head) {
        return None;
    }
    let w = u16::from_le_bytes([head[6], head[7]]);
    let h = u16::from_le_bytes([head[8], head[9]]);
    Some((u32::from(w), u32::from(h)))
}

fn webp(source: &mut Source<'_>) -> Option<(u32, u32)> {
    // RIFF header (12), chunk fourcc (4), chunk size (4), chunk data from 20.
    let mut head = [0u8; 30];
    if !source.read(0, &mut head) {
        return None;
    }
    match &head[12..16] {
        b"VP8 " => {
            // Frame tag (3), start code 9d 01 2a, then 14-bit width and height.
            if head[23..26] != [0x9d, 0x01, 0x2a] {
                return None;
            }
            let w = u16::from_le_bytes([head[26], head[27]]) & 0x3fff;
            let h = u16::from_le_bytes([head[28], head[29]]) & 0x3fff;
            Some((u32::from(w), u32::from(h)))
        }
        b"VP8L" => {
            if head[20] != 0x2f {
                return None;
            }
            let bits = u32::from_le_bytes([head[21], head[22], head[23], head[24]]);
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8X" => {
            let w = u32::from_le_bytes([head[24], head[25], head[26], 0]) + 1;
            let h = u32::from_le_bytes([head[27], head[28], head[29], 0]) + 1;
            Some((w, h))
        }
        _ => None,
    }
}

fn jpeg(source: &mut Source<'_>) -> Option<(u32, u32)> {
    let mut at = 2usize;
    let mut pair = [0u8; 2];
    loop {
        if !source.read(at, &mut pair) || pair[0] != 0xff {
            return None;
        }
        let marker = pair[1];
        if marker == 0xff {
            at += 1; // fill byte
            continue;
        }
        at += 2;
        match marker {
            // Markers without a length.
            0x01 | 0xd0..=0xd8 => continue,
            // End of image or start of scan before any frame header.
            0xd9 | 0xda => return None,
            _ => {}
        }
        let mut length = [0u8; 2];
        if !source.read(at, &mut length) {
            return None;
        }
        let length = usize::from(u16::from_be_bytes(length));
        if length < 2 {
            return None;
        }
        // Start of frame: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
        if (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            // Length (2), precision (1), height (2), width (2).
            let mut frame = [0u8; 7];
            if !source.read(at, &mut frame) {
                return None;
            }
            let h = u16::from_be_bytes([frame[3], frame[4]]);
            let w = u16::from_be_bytes([frame[5], frame[6]]);
            return Some((u32::from(w), u32::from(h)));
        }
        at = at.checked_add(length)?;
    }
}

#[cfg(test)]
pub(crate) mod samples {
    //! Minimal headers of each format, as an encoder writes them.

    pub fn png(w: u32, h: u32) -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        v
    }

    pub fn gif(w: u16, h: u16) -> Vec<u8> {
        let mut v = b"GIF89a".to_vec();
        v.extend_from_slice(&w.to_le_bytes());
        v.extend_from_slice(&h.to_le_bytes());
        v.extend_from_slice(&[0, 0, 0]);
        v
    }

    pub fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut v = vec![0xff, 0xd8];
        // APP0 JFIF, then an APP1 of 300 bytes, a DQT, then SOF2 (progressive).
        v.extend_from_slice(&[0xff, 0xe0, 0x00, 0x10]);
        v.extend_from_slice(b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00");
        v.extend_from_slice(&[0xff, 0xe1, 0x01, 0x2e]);
        v.extend(std::iter::repeat_n(0x45u8, 300));
        v.extend_from_slice(&[0xff, 0xff, 0xdb, 0x00, 0x43]);
        v.extend(std::iter::repeat_n(1u8, 65));
        v.extend_from_slice(&[0xff, 0xc2, 0x00, 0x11, 0x08]);
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        v.extend_from_slice(&[0xff, 0xda, 0x00, 0x02, 0xff, 0xd9]);
        v
    }

    pub fn webp_lossy(w: u16, h: u16) -> Vec<u8> {
        let mut v = b"RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00".to_vec();
        v.extend_from_slice(&[0x30, 0x01, 0x00, 0x9d, 0x01, 0x2a]);
        v.extend_from_slice(&w.to_le_bytes());
        v.extend_from_slice(&h.to_le_bytes());
        v
    }

    pub fn webp_lossless(w: u32, h: u32) -> Vec<u8> {
        let mut v = b"RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f".to_vec();
        let bits = (w - 1) | ((h - 1) << 14);
        v.extend_from_slice(&bits.to_le_bytes());
        v.extend_from_slice(&[0; 8]);
        v
    }

    pub fn webp_extended(w: u32, h: u32) -> Vec<u8> {
        let mut v = b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x10\x00\x00\x00".to_vec();
        v.extend_from_slice(&(w - 1).to_le_bytes()[..3]);
        v.extend_from_slice(&(h - 1).to_le_bytes()[..3]);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::samples::*;
    use super::{image_size, Source};

    fn size(bytes: &[u8]) -> Option<(u32, u32)> {
        image_size(&mut Source::raw(bytes))
    }

    #[test]
    fn every_format_declares_its_size() {
        for (w, h) in [
            (1u16, 1u16),
            (1280, 800),
            (800, 1280),
            (2560, 1600),
            (16383, 2),
        ] {
            let (w32, h32) = (u32::from(w), u32::from(h));
            assert_eq!(size(&png(w32, h32)), Some((w32, h32)));
            assert_eq!(size(&gif(w, h)), Some((w32, h32)));
            assert_eq!(size(&jpeg(w, h)), Some((w32, h32)));
            assert_eq!(size(&webp_lossy(w, h)), Some((w32, h32)));
            assert_eq!(size(&webp_lossless(w32, h32)), Some((w32, h32)));
            assert_eq!(size(&webp_extended(w32, h32)), Some((w32, h32)));
        }
    }

    #[test]
    fn malformed_headers_have_no_size() {
        assert_eq!(size(b""), None);
        assert_eq!(size(b"\x89PNG"), None);
        assert_eq!(size(&png(0, 10)), None);
        assert_eq!(size(&png(65535, 65535)), None);
        assert_eq!(size(&png(1 << 31, 5)), None);
        assert_eq!(size(&jpeg(100, 100)[..40]), None);
        assert_eq!(size(&[0xff, 0xd8, 0xff, 0xd9]), None);
        assert_eq!(size(&[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x00]), None);
        assert_eq!(size(b"BM\x00\x00\x00\x00 a bitmap is not read"), None);
        assert_eq!(size(&gif(65535, 65535)), None);
        assert_eq!(size(&webp_lossy(100, 100)[..25]), None);
        let mut bad_start = webp_lossy(100, 100);
        bad_start[24] = 0;
        assert_eq!(size(&bad_start), None);
        for cut in 0..png(10, 10).len().min(24) {
            assert_eq!(size(&png(10, 10)[..cut]), None);
        }
    }

    #[test]
    fn a_jpeg_segment_length_past_the_end_is_no_size() {
        let mut v = vec![0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff];
        v.extend_from_slice(&[0; 10]);
        assert_eq!(size(&v), None);
    }
}
