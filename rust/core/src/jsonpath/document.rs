//! A JSON document parsed once into a flat tape of nodes.
//!
//! The parser accepts what Python's `json.loads` accepts on UTF-8 bytes (an
//! optional UTF-8 BOM, `NaN`, `Infinity`, `-Infinity`, integers of any length,
//! whitespace `" \t\n\r"` between tokens) and rejects what it rejects, with the
//! same message and position (`Expecting ',' delimiter: line 1 column 4 (char 3)`).
//!
//! Nothing is copied or decoded while parsing: every value becomes one
//! 16-byte [`Node`] in pre-order, scalars pointing at their text in the input
//! and containers knowing their length and where their subtree ends. Strings
//! are decoded and numbers interpreted only when a query or the output needs
//! them. The parser keeps its own stack, so nesting cannot overflow the
//! native stack; it stops at [`MAX_DEPTH`] levels.
use std::fmt;

/// Containers nested deeper than this are refused.
pub const MAX_DEPTH: usize = 10_000;

/// Which CPython's `json` error wording to mirror (the texts differ between versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorWording {
    /// CPython 3.10-3.12: a comma before `]` or `}` is reported as the missing value or
    /// property name after it (`Expecting value`).
    #[default]
    Classic,
    /// CPython 3.13 and later: `Illegal trailing comma before end of array` (or `object`),
    /// at the comma's position.
    TrailingComma,
}

/// What a node holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `false`.
    False,
    /// `true`.
    True,
    /// A number, `NaN` or an infinity; its text is kept as written.
    Number,
    /// A string; the node spans its text between the quotes.
    String,
    /// An array; `a` is its item count.
    Array,
    /// An object; `a` is its member count (duplicates included). Each member
    /// is a `String` key node followed by the value's subtree.
    Object,
}

/// One value of the document.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    /// The kind of value.
    pub kind: Kind,
    /// Strings: the text holds a backslash escape. Numbers: the text is an
    /// integer (no fraction, no exponent, not `NaN`/`Infinity`).
    pub flag: bool,
    /// Scalars: start byte of the text. Containers: number of items/members.
    pub a: u32,
    /// Scalars: end byte of the text. Containers: unused.
    pub b: u32,
    /// Tape index just past this node's subtree (its next sibling).
    pub next: u32,
}

/// Why the stored bytes are not JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Python's wording of the problem (`Expecting value`).
    pub message: &'static str,
    /// Position in code points from the start of the text (after a BOM).
    pub char_pos: usize,
    /// Line of the position, from 1.
    pub line: usize,
    /// Column of the position, from 1.
    pub column: usize,
}

impl ParseError {
    fn at(text: &[u8], message: &'static str, byte_pos: usize) -> Self {
        let before = &text[..byte_pos.min(text.len())];
        let is_char = |b: &u8| (*b & 0xc0) != 0x80;
        let char_pos = before.iter().filter(|b| is_char(b)).count();
        let line_start = before.iter().rposition(|&b| b == b'\n');
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = match line_start {
            Some(nl) => before[nl + 1..].iter().filter(|b| is_char(b)).count() + 1,
            None => char_pos + 1,
        };
        ParseError {
            message,
            char_pos,
            line,
            column,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: line {} column {} (char {})",
            self.message, self.line, self.column, self.char_pos
        )
    }
}

/// Why a document could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// The bytes are not UTF-8; `byte` is the offset of the first bad byte.
    InvalidUtf8 {
        /// Offset of the first invalid byte.
        byte: usize,
    },
    /// The document is larger than the 4 GiB the tape can address.
    TooLarge,
    /// The text is not JSON.
    Syntax(ParseError),
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentError::InvalidUtf8 { byte } => {
                write!(f, "invalid UTF-8 at byte {byte}")
            }
            DocumentError::TooLarge => write!(f, "document larger than 4 GiB"),
            DocumentError::Syntax(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DocumentError {}

/// A parsed document: the text and its tape. Node 0 is the top-level value.
#[derive(Debug)]
pub struct Document<'a> {
    text: &'a str,
    nodes: Vec<Node>,
}

/// Flags the bytes of a little-endian word that end a plain run inside a
/// string: `"`, `\\` or a control character (`< 0x20`). The lowest flag is
/// exact; higher ones may be spurious.
#[inline]
fn string_stop_mask(w: u64) -> u64 {
    crate::swar::string_stops(w)
}

/// Index of the first `"`, `\\` or control byte at or after `from`.
#[inline]
fn next_string_stop(bytes: &[u8], mut from: usize) -> Option<usize> {
    #[cfg(fast_x86_64)]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        while let Some(chunk) = bytes.get(from..from + 16) {
            // SAFETY: SSE2 is part of the x86_64 baseline; the load reads the
            // 16 bytes of `chunk`, unaligned loads being allowed.
            let mask = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                // Unsigned v <= 0x1f exactly when max(v, 0x1f) == 0x1f.
                let limit = _mm_set1_epi8(0x1f);
                let control = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
            };
            if mask != 0 {
                return Some(from + mask.trailing_zeros() as usize);
            }
            from += 16;
        }
    }
    #[cfg(fast_aarch64)]
    {
        use std::arch::aarch64::{vceqq_u8, vcleq_u8, vdupq_n_u8, vld1q_u8, vorrq_u8};
        while let Some(chunk) = bytes.get(from..from + 16) {
            // SAFETY: NEON is part of the aarch64 baseline; the load reads the
            // 16 bytes of `chunk`.
            let mask = unsafe {
                let v = vld1q_u8(chunk.as_ptr());
                let quote = vceqq_u8(v, vdupq_n_u8(b'"'));
                let backslash = vceqq_u8(v, vdupq_n_u8(b'\\'));
                let control = vcleq_u8(v, vdupq_n_u8(0x1f));
                crate::arch::neon::nibble_mask(vorrq_u8(vorrq_u8(quote, backslash), control))
            };
            if mask != 0 {
                return Some(from + (mask.trailing_zeros() / 4) as usize);
            }
            from += 16;
        }
    }
    while let Some(chunk) = bytes.get(from..from + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let m = string_stop_mask(u64::from_le_bytes(word));
        if m != 0 {
            return Some(from + (m.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    bytes
        .get(from..)?
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| from + i)
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// An open container while parsing.
struct Open {
    node: usize,
    count: u32,
    object: bool,
}

struct Parser<'t> {
    bytes: &'t [u8],
    pos: usize,
    nodes: Vec<Node>,
    wording: ErrorWording,
}

const EXPECT_NAME: &str = "Expecting property name enclosed in double quotes";

impl Parser<'_> {
    fn err(&self, message: &'static str, at: usize) -> ParseError {
        ParseError::at(self.bytes, message, at)
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if !is_ws(b) {
                break;
            }
            self.pos += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn push_scalar(&mut self, kind: Kind, flag: bool, start: usize, end: usize) {
        let next = (self.nodes.len() + 1) as u32;
        crate::alloc::push(
            &mut self.nodes,
            Node {
                kind,
                flag,
                a: start as u32,
                b: end as u32,
                next,
            },
        );
    }

    /// Parse a string whose opening quote is at `self.pos`; push a node.
    fn string(&mut self) -> Result<(), ParseError> {
        let quote = self.pos;
        let start = quote + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            let Some(stop) = next_string_stop(self.bytes, i) else {
                return Err(self.err("Unterminated string starting at", quote));
            };
            match self.bytes[stop] {
                b'"' => {
                    self.push_scalar(Kind::String, escaped, start, stop);
                    self.pos = stop + 1;
                    return Ok(());
                }
                b'\\' => {
                    escaped = true;
                    let Some(&c) = self.bytes.get(stop + 1) else {
                        return Err(self.err("Unterminated string starting at", quote));
                    };
                    match c {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i = stop + 2,
                        b'u' => {
                            // Python also refuses four digits that end the input.
                            let hex = self.bytes.get(stop + 2..stop + 6);
                            let ends_input = stop + 6 >= self.bytes.len();
                            if ends_input
                                || !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                            {
                                return Err(self.err("Invalid \\uXXXX escape", stop + 1));
                            }
                            i = stop + 6;
                        }
                        _ => return Err(self.err("Invalid \\escape", stop)),
                    }
                }
                _ => return Err(self.err("Invalid control character at", stop)),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - from
    }

    /// Parse a number (or `-Infinity`) at `self.pos`; push a node.
    fn number(&mut self) -> Result<(), ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.bytes[self.pos..].starts_with(b"Infinity") {
                self.pos += 8;
                self.push_scalar(Kind::Number, false, start, self.pos);
                return Ok(());
            }
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("Expecting value", start)),
        }
        let mut int = true;
        if self.peek() == Some(b'.')
            && self
                .bytes
                .get(self.pos + 1)
                .is_some_and(|b| b.is_ascii_digit())
        {
            self.pos += 1;
            self.digits();
            int = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let mut j = self.pos + 1;
            if matches!(self.bytes.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if self.bytes.get(j).is_some_and(|b| b.is_ascii_digit()) {
                self.pos = j;
                self.digits();
                int = false;
            }
        }
        self.push_scalar(Kind::Number, int, start, self.pos);
        Ok(())
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Result<(), ParseError> {
        if self.bytes[self.pos..].starts_with(word) {
            let start = self.pos;
            self.pos += word.len();
            self.push_scalar(kind, false, start, self.pos);
            Ok(())
        } else {
            Err(self.err("Expecting value", self.pos))
        }
    }

    /// Parse an object key at `self.pos` (after whitespace) and its `:`.
    fn key(&mut self) -> Result<(), ParseError> {
        if self.peek() != Some(b'"') {
            return Err(self.err(EXPECT_NAME, self.pos));
        }
        self.string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.err("Expecting ':' delimiter", self.pos));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(())
    }

    fn run(&mut self) -> Result<(), ParseError> {
        let mut stack: Vec<Open> = Vec::new();
        self.skip_ws();
        'value: loop {
            // A value starts at self.pos (whitespace already skipped).
            match self.peek() {
                Some(b'{') | Some(b'[') => {
                    let object = self.peek() == Some(b'{');
                    if stack.len() >= MAX_DEPTH {
                        return Err(self.err("Nesting too deep (over 10000 levels)", self.pos));
                    }
                    let node = self.nodes.len();
                    crate::alloc::push(
                        &mut self.nodes,
                        Node {
                            kind: if object { Kind::Object } else { Kind::Array },
                            flag: false,
                            a: 0,
                            b: 0,
                            next: 0,
                        },
                    );
                    self.pos += 1;
                    self.skip_ws();
                    let close = if object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        self.nodes[node].next = self.nodes.len() as u32;
                    } else {
                        if object {
                            self.key()?;
                        }
                        crate::alloc::push(
                            &mut stack,
                            Open {
                                node,
                                count: 0,
                                object,
                            },
                        );
                        continue 'value;
                    }
                }
                Some(b'"') => self.string()?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b'n') => self.literal(b"null", Kind::Null)?,
                Some(b't') => self.literal(b"true", Kind::True)?,
                Some(b'f') => self.literal(b"false", Kind::False)?,
                Some(b'N') => self.literal(b"NaN", Kind::Number)?,
                Some(b'I') => self.literal(b"Infinity", Kind::Number)?,
                _ => return Err(self.err("Expecting value", self.pos)),
            }
            // A value is complete: close containers until one wants more.
            loop {
                let Some(top) = stack.last_mut() else {
                    break 'value;
                };
                top.count += 1;
                self.skip_ws();
                let close = if top.object { b'}' } else { b']' };
                match self.peek() {
                    Some(b',') => {
                        let comma = self.pos;
                        self.pos += 1;
                        self.skip_ws();
                        if self.wording == ErrorWording::TrailingComma && self.peek() == Some(close)
                        {
                            let message = if top.object {
                                "Illegal trailing comma before end of object"
                            } else {
                                "Illegal trailing comma before end of array"
                            };
                            return Err(self.err(message, comma));
                        }
                        if top.object {
                            self.key()?;
                        }
                        continue 'value;
                    }
                    Some(c) if c == close => {
                        self.pos += 1;
                        let (node, count) = (top.node, top.count);
                        stack.pop();
                        let end = self.nodes.len() as u32;
                        let n = &mut self.nodes[node];
                        n.a = count;
                        n.next = end;
                    }
                    _ => return Err(self.err("Expecting ',' delimiter", self.pos)),
                }
            }
        }
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return Err(self.err("Extra data", self.pos));
        }
        Ok(())
    }
}

impl<'a> Document<'a> {
    /// Parse `bytes` (UTF-8, optionally with a BOM) as one JSON document, with the error
    /// texts of CPython 3.10-3.12.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DocumentError> {
        Self::parse_worded(bytes, ErrorWording::Classic)
    }

    /// Parse `bytes` as [`Document::parse`] does, wording errors as `wording` says.
    pub fn parse_worded(bytes: &'a [u8], wording: ErrorWording) -> Result<Self, DocumentError> {
        let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        if bytes.len() >= u32::MAX as usize {
            return Err(DocumentError::TooLarge);
        }
        let text = std::str::from_utf8(bytes).map_err(|e| DocumentError::InvalidUtf8 {
            byte: e.valid_up_to(),
        })?;
        let mut parser = Parser {
            bytes,
            pos: 0,
            // A rough guess that avoids most regrowth for typical documents.
            nodes: crate::alloc::vec_with_capacity(bytes.len() / 16 + 4),
            wording,
        };
        parser.run().map_err(DocumentError::Syntax)?;
        Ok(Document {
            text,
            nodes: parser.nodes,
        })
    }

    /// The node at tape index `i`.
    #[inline]
    pub fn node(&self, i: u32) -> Node {
        self.nodes[i as usize]
    }

    /// The text of a scalar node (string contents without quotes, number text).
    #[inline]
    pub fn text_of(&self, n: Node) -> &'a str {
        self.text.get(n.a as usize..n.b as usize).unwrap_or("")
    }

    /// Number of nodes on the tape.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: a parsed document has at least its top-level value.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The decoded contents of string node `n` as WTF-8 bytes (UTF-8 in
    /// which lone surrogates from `\uD800`-style escapes stay as 3-byte
    /// sequences), so that byte order is code point order.
    pub fn string_bytes(&self, n: Node) -> std::borrow::Cow<'a, [u8]> {
        let raw = self.text_of(n);
        if !n.flag {
            return std::borrow::Cow::Borrowed(raw.as_bytes());
        }
        let mut out = crate::alloc::vec_with_capacity(raw.len());
        for cp in decode_escaped(raw) {
            push_wtf8(&mut out, cp);
        }
        std::borrow::Cow::Owned(out)
    }
}

/// Append code point `cp` (surrogates allowed) in WTF-8.
pub fn push_wtf8(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7f => crate::alloc::push(out, cp as u8),
        0x80..=0x7ff => {
            crate::alloc::extend(out, &[0xc0 | (cp >> 6) as u8, 0x80 | (cp & 0x3f) as u8])
        }
        0x800..=0xffff => crate::alloc::extend(
            out,
            &[
                0xe0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3f) as u8,
                0x80 | (cp & 0x3f) as u8,
            ],
        ),
        _ => crate::alloc::extend(
            out,
            &[
                0xf0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3f) as u8,
                0x80 | ((cp >> 6) & 0x3f) as u8,
                0x80 | (cp & 0x3f) as u8,
            ],
        ),
    }
}

fn hex4(h: &[u8]) -> Option<u32> {
    let h = h.get(..4)?;
    let mut v = 0u32;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

/// The code points of validated string text that holds escapes, decoded as
/// Python does: a `\uD8xx\uDCxx` pair joins into one code point, a lone
/// surrogate stays as it is.
pub fn decode_escaped(raw: &str) -> Vec<u32> {
    let bytes = raw.as_bytes();
    let mut out = crate::alloc::vec_with_capacity(raw.len());
    let mut i = 0;
    while let Some(c) = raw.get(i..).and_then(|rest| rest.chars().next()) {
        if c != '\\' {
            crate::alloc::push(&mut out, u32::from(c));
            i += c.len_utf8();
            continue;
        }
        let e = bytes.get(i + 1).copied().unwrap_or(b'\\');
        i += 2;
        let cp = match e {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => 0x0a,
            b'r' => 0x0d,
            b't' => 0x09,
            b'u' => {
                let unit = hex4(bytes.get(i..).unwrap_or(&[])).unwrap_or(0xfffd);
                i += 4;
                if (0xd800..0xdc00).contains(&unit) && bytes.get(i..i + 2) == Some(b"\\u") {
                    match hex4(bytes.get(i + 2..).unwrap_or(&[])) {
                        Some(low) if (0xdc00..0xe000).contains(&low) => {
                            i += 6;
                            0x1_0000 + ((unit - 0xd800) << 10) + (low - 0xdc00)
                        }
                        _ => unit,
                    }
                } else {
                    unit
                }
            }
            other => u32::from(other),
        };
        crate::alloc::push(&mut out, cp);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_stop_scan_finds_the_first_stop_at_every_offset() {
        // Stops and the bytes around their boundaries (space, DEL, the high bytes),
        // at every offset of texts spanning one to three vector blocks.
        let stops = [b'"', b'\\', 0x00, 0x0a, 0x1f];
        let near = [0x20u8, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xc3, 0xff];
        let oracle = |t: &[u8], from: usize| {
            (from..t.len()).find(|&i| t[i] == b'"' || t[i] == b'\\' || t[i] < 0x20)
        };
        for len in 0..48 {
            for (k, &filler) in near.iter().enumerate() {
                let mut text: Vec<u8> = (0..len).map(|i| near[(i + k) % near.len()]).collect();
                assert_eq!(
                    next_string_stop(&text, 0),
                    oracle(&text, 0),
                    "{len} {filler:#x}"
                );
                for at in 0..len {
                    for &stop in &stops {
                        let kept = text[at];
                        text[at] = stop;
                        for from in [0, at.saturating_sub(1), at] {
                            assert_eq!(
                                next_string_stop(&text, from),
                                oracle(&text, from),
                                "{len} {at} {stop:#x} {from}"
                            );
                        }
                        text[at] = kept;
                    }
                }
            }
        }
    }

    #[test]
    fn trailing_commas_in_python_313_wording() {
        let worded =
            |s: &str| match Document::parse_worded(s.as_bytes(), ErrorWording::TrailingComma) {
                Ok(_) => "ok".to_string(),
                Err(e) => e.to_string(),
            };
        let cases = [
            (
                "[1,]",
                "Illegal trailing comma before end of array: line 1 column 3 (char 2)",
            ),
            (
                "{\"a\":1 , }",
                "Illegal trailing comma before end of object: line 1 column 8 (char 7)",
            ),
            (
                "[1,\n]",
                "Illegal trailing comma before end of array: line 1 column 3 (char 2)",
            ),
            ("[,]", "Expecting value: line 1 column 2 (char 1)"),
            (
                "{,}",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            ("[1,x]", "Expecting value: line 1 column 4 (char 3)"),
        ];
        for (text, expected) in cases {
            assert_eq!(worded(text), expected, "{text:?}");
        }
        assert_eq!(err("[1,]"), "Expecting value: line 1 column 4 (char 3)");
    }

    fn err(s: &str) -> String {
        match Document::parse(s.as_bytes()) {
            Err(e) => e.to_string(),
            Ok(_) => "ok".into(),
        }
    }

    #[test]
    fn python_error_messages() {
        let cases = [
            ("", "Expecting value: line 1 column 1 (char 0)"),
            (
                "{",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            (
                "{\"a\" 1}",
                "Expecting ':' delimiter: line 1 column 6 (char 5)",
            ),
            ("[1,]", "Expecting value: line 1 column 4 (char 3)"),
            ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
            (
                "\"abc",
                "Unterminated string starting at: line 1 column 1 (char 0)",
            ),
            ("\"a\\x\"", "Invalid \\escape: line 1 column 3 (char 2)"),
            (
                "\"\\u12",
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            (
                "\"\\u1234",
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            ("01", "Extra data: line 1 column 2 (char 1)"),
            ("-NaN", "Expecting value: line 1 column 1 (char 0)"),
            ("\n\n  x", "Expecting value: line 3 column 3 (char 4)"),
            ("[\"é\", x]", "Expecting value: line 1 column 7 (char 6)"),
        ];
        for (text, want) in cases {
            assert_eq!(err(text), want, "{text:?}");
        }
    }

    #[test]
    fn tape_shape() {
        let d = Document::parse(br#" {"a": [1, 2.5, "x\n"], "b": {}, "c": -Infinity} "#).unwrap();
        let root = d.node(0);
        assert_eq!(root.kind, Kind::Object);
        assert_eq!(root.a, 3);
        assert_eq!(root.next as usize, d.len());
        let arr = d.node(2);
        assert_eq!(arr.kind, Kind::Array);
        assert_eq!(arr.a, 3);
        assert_eq!(d.text_of(d.node(4)), "2.5");
        assert!(d.node(5).flag);
        assert_eq!(&*d.string_bytes(d.node(5)), b"x\n");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(err(&deep).starts_with("Nesting too deep"));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert_eq!(err(&ok), "ok");
    }

    #[test]
    fn surrogates_decode_like_python() {
        assert_eq!(decode_escaped(r"\ud83d\ude00"), vec![0x1f600]);
        assert_eq!(decode_escaped(r"\ud83dA"), vec![0xd83d, 0x41]);
        assert_eq!(decode_escaped(r"\ud83d\u0041"), vec![0xd83d, 0x41]);
        assert_eq!(decode_escaped("é\\t"), vec![0xe9, 9]);
    }
}
