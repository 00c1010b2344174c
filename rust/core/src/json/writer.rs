//! The writer: punctuation, line breaks and indentation of `json.dumps`,
//! over a [`Sink`] that either collects the text or only counts it.

use super::escape::{escape_raw, escape_room, escaped_len, Units};
use super::key_cache::{ENTRY as KEY_ENTRY, PADDED as KEY_PADDED};
use super::number::{
    i64_len, put_i64, shortest_in_place, tiny_in_place, write_float, write_i64,
    write_zmij_as_python, I64_MAX_LEN, SHORTEST_ROOM, TINY_ROOM,
};

/// Where JSON text goes: a byte buffer, or a counter.
pub trait Sink {
    /// Append raw bytes (already valid JSON text).
    fn raw(&mut self, bytes: &[u8]);

    /// Append one raw byte.
    fn byte(&mut self, b: u8);

    /// Append `text` as a JSON string: quoted, ensure_ascii escaped.
    fn quoted(&mut self, text: Units<'_>);

    /// Bytes written so far.
    fn written(&self) -> usize;

    /// Append zmij's shortest round-trip text of a finite `x`.
    #[inline]
    fn shortest(&mut self, x: f64) {
        let mut buf = zmij::Buffer::new();
        self.raw(buf.format_finite(x).as_bytes());
    }

    /// Append Python's repr of a finite, nonzero `x` below 1e-4 in magnitude.
    #[inline]
    fn tiny(&mut self, x: f64) {
        let mut buf = zmij::Buffer::new();
        write_zmij_as_python(self, x, buf.format_finite(x).as_bytes());
    }

    /// Append the first `n` bytes of `block` (`n <= block.len()`).
    #[inline]
    fn padded(&mut self, block: &[u8; KEY_ENTRY], n: usize) {
        self.raw(&block[..n]);
    }

    /// Append `true` or `false`.
    #[inline]
    fn boolean(&mut self, v: bool) {
        self.raw(if v { b"true" } else { b"false" });
    }

    /// Append the decimal text of `v`.
    #[inline]
    fn int(&mut self, v: i64) {
        let mut buf = [0u8; I64_MAX_LEN];
        // SAFETY: the buffer has room for the longest text.
        let n = unsafe { put_i64(buf.as_mut_ptr(), v) };
        self.raw(&buf[..n]);
    }
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
    fn quoted(&mut self, text: Units<'_>) {
        self.len += 2 + escaped_len(text);
    }

    #[inline]
    fn written(&self) -> usize {
        self.len
    }

    #[inline]
    fn int(&mut self, v: i64) {
        self.len += i64_len(v);
    }
}

/// A growable byte buffer the writer stores into directly: `Vec<u8>` here,
/// or a buffer owned by someone else (a Python `bytes` object, say). Every
/// such buffer is a [`Sink`].
pub trait ByteBuf {
    /// The end of the bytes written so far, with room for `n` more behind it.
    /// A buffer that cannot grow unwinds with [`crate::alloc::OutOfMemory`].
    fn room(&mut self, n: usize) -> *mut u8;

    /// Count `n` more bytes as written.
    ///
    /// # Safety
    /// The bytes must have been written at the last [`ByteBuf::room`] pointer,
    /// within the room asked for.
    unsafe fn commit(&mut self, n: usize);

    /// Bytes written so far.
    fn filled(&self) -> usize;
}

impl ByteBuf for Vec<u8> {
    #[inline(always)]
    fn room(&mut self, n: usize) -> *mut u8 {
        crate::alloc::reserve(self, n);
        // SAFETY: in bounds of the allocation (at most one past the length).
        unsafe { self.as_mut_ptr().add(self.len()) }
    }

    #[inline(always)]
    unsafe fn commit(&mut self, n: usize) {
        self.set_len(self.len() + n);
    }

    #[inline(always)]
    fn filled(&self) -> usize {
        self.len()
    }
}

/// Strings longer than this many code units are escaped a piece at a time:
/// the room asked for is the escape's worst case (up to 12 bytes a unit), which
/// for a string of gigabytes would be a reservation many times the output.
const QUOTED_PIECE: usize = 1 << 20;

/// A cached key entry longer than [`KEY_PADDED`]: rare, kept out of line.
#[cold]
#[inline(never)]
fn long_entry<B: ByteBuf>(buf: &mut B, entry: &[u8]) {
    buf.raw(entry);
}

#[cold]
#[inline(never)]
fn quoted_in_pieces<B: ByteBuf>(buf: &mut B, text: Units<'_>) {
    buf.byte(b'"');
    let mut rest = text;
    while !rest.is_empty() {
        let (piece, after) = rest.split_at_most(QUOTED_PIECE);
        let dst = buf.room(escape_room(piece));
        // SAFETY: the room holds what `escape_raw` asks for; its length is committed.
        unsafe {
            let n = escape_raw(dst, piece);
            buf.commit(n);
        }
        rest = after;
    }
    buf.byte(b'"');
}

impl<B: ByteBuf> Sink for B {
    /// Most pieces are short (punctuation, a line break and its indent, a
    /// number's digits, a cached key), where a call to `memcpy` costs more
    /// than the copy: 4 to 32 bytes are written as two fixed-size pieces that
    /// overlap in the middle, as `memcpy` itself does for small sizes.
    #[inline(always)]
    fn raw(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        let dst = self.room(n.max(16));
        let src = bytes.as_ptr();
        // SAFETY: `room` gave at least max(n, 16) bytes; each branch writes
        // inside that and covers `bytes` exactly before committing `n`.
        unsafe {
            if !(4..=32).contains(&n) {
                std::ptr::copy_nonoverlapping(src, dst, n);
            } else if n > 16 {
                // A long number's text or a key's entry.
                std::ptr::copy_nonoverlapping(src, dst, 16);
                std::ptr::copy_nonoverlapping(src.add(n - 16), dst.add(n - 16), 16);
            } else if n >= 8 {
                std::ptr::copy_nonoverlapping(src, dst, 8);
                std::ptr::copy_nonoverlapping(src.add(n - 8), dst.add(n - 8), 8);
            } else {
                std::ptr::copy_nonoverlapping(src, dst, 4);
                std::ptr::copy_nonoverlapping(src.add(n - 4), dst.add(n - 4), 4);
            }
            self.commit(n);
        }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        let dst = self.room(1);
        // SAFETY: one byte of room.
        unsafe {
            *dst = b;
            self.commit(1);
        }
    }

    // Always inlined into the walker's string writer: most strings are short,
    // and a call per string is a measurable share of a dump.
    #[inline(always)]
    fn quoted(&mut self, text: Units<'_>) {
        if text.len() > QUOTED_PIECE {
            return quoted_in_pieces(self, text);
        }
        let dst = self.room(escape_room(text) + 2);
        // SAFETY: the room holds the quotes and what `escape_raw` asks for.
        unsafe {
            *dst = b'"';
            let n = escape_raw(dst.add(1), text);
            *dst.add(1 + n) = b'"';
            self.commit(n + 2);
        }
    }

    #[inline(always)]
    fn written(&self) -> usize {
        self.filled()
    }

    /// zmij's buffer laid over ours: no copy (see [`shortest_in_place`]).
    #[inline(always)]
    fn shortest(&mut self, x: f64) {
        let dst = self.room(SHORTEST_ROOM);
        // SAFETY: `room` gave the room zmij's buffer takes; the text's length is committed.
        unsafe {
            let n = shortest_in_place(dst, x);
            self.commit(n);
        }
    }

    /// zmij's text written in place and fixed there (see [`tiny_in_place`]).
    #[inline(always)]
    fn tiny(&mut self, x: f64) {
        let dst = self.room(TINY_ROOM);
        // SAFETY: `room` gave the room `tiny_in_place` takes; the text's length is committed.
        unsafe {
            let n = tiny_in_place(dst, x);
            self.commit(n);
        }
    }

    /// Up to [`KEY_PADDED`] bytes as one fixed-size copy (the block is at
    /// least that long; the bytes past `n` land beyond the length and mean
    /// nothing): the cached keys of a record differ in length from one to
    /// the next, and a copy sized by length mispredicts on them.
    #[inline(always)]
    fn padded(&mut self, block: &[u8; KEY_ENTRY], n: usize) {
        if n > KEY_PADDED {
            return long_entry(self, &block[..n.min(KEY_ENTRY)]);
        }
        let dst = self.room(KEY_PADDED);
        // SAFETY: `room` gave KEY_PADDED (32) bytes, the block has at least
        // as many; `n` of them are committed. Two 16-byte moves, spelled out:
        // left to itself the compiler joined this copy and the long one into
        // one call to `memcpy` of a variable length.
        unsafe {
            let src = block.as_ptr();
            let a = std::ptr::read_unaligned(src.cast::<u128>());
            let b = std::ptr::read_unaligned(src.add(16).cast::<u128>());
            std::ptr::write_unaligned(dst.cast::<u128>(), a);
            std::ptr::write_unaligned(dst.add(16).cast::<u128>(), b);
            self.commit(n);
        }
    }

    /// One eight-byte store of either word and a length picked without a
    /// branch: in a document the two alternate unpredictably.
    #[inline(always)]
    fn boolean(&mut self, v: bool) {
        const TRUE: u64 = u64::from_le_bytes(*b"true\0\0\0\0");
        const FALSE: u64 = u64::from_le_bytes(*b"false\0\0\0");
        let (word, n) = if v { (TRUE, 4) } else { (FALSE, 5) };
        let dst = self.room(8);
        // SAFETY: eight bytes of room; the word's first `n` bytes are committed.
        unsafe {
            std::ptr::write_unaligned(dst.cast::<u64>(), word.to_le());
            self.commit(n);
        }
    }

    /// Digits stored straight into the buffer: no stack copy, no variable-length copy.
    #[inline(always)]
    fn int(&mut self, v: i64) {
        let dst = self.room(I64_MAX_LEN);
        // SAFETY: `room` gave the longest text's room; its length is committed.
        unsafe {
            let n = put_i64(dst, v);
            self.commit(n);
        }
    }
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
    /// Whether lines are broken (an indent was given, possibly empty).
    indented: bool,
    indent: Vec<u8>,
    /// `",\n"` followed by the indent repeated for the deepest level seen: an
    /// item's separator and line start are one slice of it.
    breaks: Vec<u8>,
    /// Length of a line start at the current depth (`"\n"` and the indents).
    line_len: usize,
    depth: usize,
    /// Bytes the indented layout wrote beyond the single-line one: line
    /// breaks and indents, less one per `","` that is `", "` on one line.
    layout_extra: usize,
}

impl<S: Sink> JsonWriter<S> {
    /// A writer with the given layout over `sink`.
    pub fn new(sink: S, layout: Layout) -> Self {
        let (indented, indent) = match layout {
            Layout::Compact => (false, Vec::new()),
            Layout::Indent(text) => (true, text),
        };
        JsonWriter {
            sink,
            indented,
            indent,
            breaks: b",\n".to_vec(),
            line_len: 1,
            depth: 0,
            layout_extra: 0,
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

    #[inline(always)]
    fn set_depth(&mut self, depth: usize) {
        self.depth = depth;
        if self.indented {
            self.line_len = 1 + self.indent.len() * depth;
            if self.breaks.len() < 1 + self.line_len {
                self.extend_breaks();
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn extend_breaks(&mut self) {
        while self.breaks.len() < 1 + self.line_len {
            crate::alloc::extend(&mut self.breaks, &self.indent);
        }
    }

    #[inline(always)]
    fn newline(&mut self) {
        if self.indented {
            let n = self.line_len;
            self.sink.raw(&self.breaks[1..1 + n]);
            self.layout_extra += n;
        }
    }

    /// Length the same values would take in the single-line layout, known
    /// while writing any layout (so one walk yields both).
    pub fn compact_len(&self) -> usize {
        self.sink.written() - self.layout_extra
    }

    /// Write `[]`.
    #[inline(always)]
    pub fn empty_array(&mut self) {
        self.sink.raw(b"[]");
    }

    /// Write `{}`.
    #[inline(always)]
    pub fn empty_object(&mut self) {
        self.sink.raw(b"{}");
    }

    /// Open a non-empty array.
    #[inline(always)]
    pub fn begin_array(&mut self) {
        self.sink.byte(b'[');
        self.set_depth(self.depth + 1);
    }

    /// Close an array opened with [`JsonWriter::begin_array`].
    #[inline(always)]
    pub fn end_array(&mut self) {
        self.set_depth(self.depth.saturating_sub(1));
        self.newline();
        self.sink.byte(b']');
    }

    /// Open a non-empty object.
    #[inline(always)]
    pub fn begin_object(&mut self) {
        self.sink.byte(b'{');
        self.set_depth(self.depth + 1);
    }

    /// Close an object opened with [`JsonWriter::begin_object`].
    #[inline(always)]
    pub fn end_object(&mut self) {
        self.set_depth(self.depth.saturating_sub(1));
        self.newline();
        self.sink.byte(b'}');
    }

    /// Announce an array item or object member; `first` is true for the first.
    #[inline(always)]
    pub fn item(&mut self, first: bool) {
        if self.indented {
            // `","` (after the first) and the line start, in one write.
            let n = self.line_len;
            let from = usize::from(first);
            self.sink.raw(&self.breaks[from..1 + n]);
            self.layout_extra += n + from - 1;
        } else if !first {
            self.sink.raw(b", ");
        }
    }

    /// End a key: write `": "`.
    #[inline]
    pub fn colon(&mut self) {
        self.sink.raw(b": ");
    }

    /// Write `null`.
    #[inline]
    pub fn null(&mut self) {
        self.sink.raw(b"null");
    }

    /// Write `true` or `false`.
    #[inline(always)]
    pub fn boolean(&mut self, v: bool) {
        self.sink.boolean(v);
    }

    /// Write an integer.
    #[inline]
    pub fn int(&mut self, v: i64) {
        write_i64(&mut self.sink, v);
    }

    /// Write a float as Python's repr (`NaN`, `Infinity`, `-Infinity` included).
    pub fn float(&mut self, v: f64) {
        write_float(&mut self.sink, v);
    }

    /// Write the first `n` bytes of a key cache slot (see [`Sink::padded`]).
    #[inline(always)]
    pub fn padded(&mut self, block: &[u8; KEY_ENTRY], n: usize) {
        self.sink.padded(block, n);
    }

    /// Write number text produced elsewhere (for example a big integer's digits).
    pub fn raw(&mut self, text: &[u8]) {
        self.sink.raw(text);
    }

    /// Write a quoted, escaped string.
    pub fn string(&mut self, text: &str) {
        self.sink.quoted(Units::Utf8(text));
    }

    /// Write a quoted, escaped string held in any code units.
    #[inline(always)]
    pub fn string_units(&mut self, text: Units<'_>) {
        self.sink.quoted(text);
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
