//! Token counting and BPE encoding for the OpenAI encodings, plus the chars/4 heuristic.
//!
//! Exact encodings (`cl100k_base`, `o200k_base`) give the same token ids as tiktoken's
//! `encode_ordinary`. They run on the `bpe-openai` crate: its pre-tokenizer is a
//! multi-pattern DFA (no backtracking regex) and its byte-pair encoder is linear in the
//! piece length, where tiktoken is quadratic on long pieces. Encoders are built once per
//! process (loading the rank tables takes a few milliseconds) and shared.
//!
//! Text with lone surrogates cannot be UTF-8. Callers convert such text with
//! [`from_surrogatepass`], which mirrors what tiktoken does: a high surrogate directly
//! followed by a low one becomes the supplementary character they encode, every other
//! surrogate becomes U+FFFD.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use bpe_openai::Tokenizer;

mod parallel;
mod split;
pub use parallel::{count_batch, count_in_parts, cut_points, is_safe_cut, PARALLEL_MIN_BYTES};
pub use split::Pieces;

/// Errors of the token API; the binding layer maps them to Python exceptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// The encoding name is not one we know.
    UnknownEncoding(String),
    /// The operation needs token ids, which the heuristic does not have.
    NoTokenIds(String),
    /// A token id that is not in the encoding's vocabulary.
    UnknownToken(u32),
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::UnknownEncoding(name) => write!(
                f,
                "unknown encoding {name:?}; valid encodings are: {}",
                Encoding::NAMES.join(", ")
            ),
            TokenError::NoTokenIds(name) => write!(
                f,
                "encoding {name:?} has no token ids; use one of: {}",
                Bpe::NAMES.join(", ")
            ),
            TokenError::UnknownToken(id) => write!(f, "Invalid token for decoding: {id}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// A BPE vocabulary with token ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bpe {
    Cl100kBase,
    O200kBase,
}

impl Bpe {
    /// Names accepted by [`Bpe::from_str`].
    pub const NAMES: [&'static str; 2] = ["cl100k_base", "o200k_base"];

    /// The shared tokenizer of this vocabulary (built on first use).
    pub fn tokenizer(self) -> &'static Tokenizer {
        match self {
            Bpe::Cl100kBase => bpe_openai::cl100k_base(),
            Bpe::O200kBase => bpe_openai::o200k_base(),
        }
    }

    /// Special tokens of the vocabulary (never produced by [`encode`], but decodable
    /// as tiktoken's `decode` does).
    pub fn special_tokens(self) -> &'static [(u32, &'static str)] {
        match self {
            Bpe::Cl100kBase => &[
                (100257, "<|endoftext|>"),
                (100258, "<|fim_prefix|>"),
                (100259, "<|fim_middle|>"),
                (100260, "<|fim_suffix|>"),
                (100276, "<|endofprompt|>"),
            ],
            Bpe::O200kBase => &[(199999, "<|endoftext|>"), (200018, "<|endofprompt|>")],
        }
    }

    /// Canonical name, as tiktoken spells it.
    pub fn name(self) -> &'static str {
        match self {
            Bpe::Cl100kBase => "cl100k_base",
            Bpe::O200kBase => "o200k_base",
        }
    }
}

impl FromStr for Bpe {
    type Err = TokenError;

    fn from_str(name: &str) -> Result<Self, TokenError> {
        match name.parse::<Encoding>()? {
            Encoding::Bpe(bpe) => Ok(bpe),
            Encoding::Heuristic => Err(TokenError::NoTokenIds(name.to_owned())),
        }
    }
}

/// How tokens are counted: an exact BPE vocabulary, or the chars/4 heuristic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Bpe(Bpe),
    /// ceil(code points / 4), the reference's text estimate.
    Heuristic,
}

impl Encoding {
    /// Every name accepted by [`Encoding::from_str`].
    pub const NAMES: [&'static str; 3] = ["cl100k_base", "o200k_base", "heuristic"];
}

impl FromStr for Encoding {
    type Err = TokenError;

    fn from_str(name: &str) -> Result<Self, TokenError> {
        match name {
            "cl100k_base" => Ok(Encoding::Bpe(Bpe::Cl100kBase)),
            "o200k_base" => Ok(Encoding::Bpe(Bpe::O200kBase)),
            "heuristic" => Ok(Encoding::Heuristic),
            other => Err(TokenError::UnknownEncoding(other.to_owned())),
        }
    }
}

/// Code points per token in the SDK's heuristic (text counts ceil(n / 4)
/// tokens; a budget of `t` tokens keeps `4 t` code points).
pub const CHARS_PER_TOKEN: usize = 4;

/// The heuristic count for a text of `code_points` code points: ceil(n / 4).
pub fn heuristic_count(code_points: usize) -> usize {
    code_points.div_ceil(CHARS_PER_TOKEN)
}

/// The heuristic count for a JSON value whose compact `json.dumps` text is
/// `json_len` characters long: ceil(n / 2), as the SDK counts JSON.
pub fn heuristic_json_count(json_len: usize) -> usize {
    json_len.div_ceil(2)
}

/// Iterates the pre-tokenizer pieces of `text` (the same split as tiktoken's regex).
pub fn pieces<'a>(text: &'a str, bpe: Bpe) -> impl Iterator<Item = &'a str> + 'a {
    Pieces::new(text, bpe)
}

/// Open-addressing hash table from token bytes to token id.
///
/// Most pre-tokenizer pieces (words, operators, indentation) are a single token; a
/// lookup answers those without running the byte-pair encoder, as tiktoken does. The
/// merge loop of [`merge_small`] asks for every candidate span, most of which are not
/// tokens, so a miss must be cheap too.
///
/// Each slot is one `u64`: the token id plus one in the low [`ID_BITS`] bits (0: empty)
/// and a 44-bit tag above. A token of up to [`SHORT_KEY_BYTES`] bytes is its own tag
/// (its bytes and length), so a probe answers it from the slot alone; a longer token's
/// tag is 43 bits of the hash of its bytes with the top bit set, and a tag match is
/// confirmed against the vocabulary's bytes. A probe thus reads one slot array, where
/// comparing each candidate's bytes would read two more arrays of the vocabulary at
/// random places.
///
/// Two-byte tokens sit in a direct table as well: the merge loop asks for every
/// adjacent byte pair of a piece, and a 256 KB array stays in cache.
struct TokenIndex {
    /// Tokens that are one 3-byte UTF-8 character (most CJK characters), by code point
    /// (U+0800..=U+FFFF, so by its low 16 bits).
    chars3: Vec<u32>,
    /// Tokens that are one character of U+1F000..=U+1FFFF (emoji), by its low 12 bits.
    emoji: Vec<u32>,
    /// One bit per [`FILTER_BITS`]-bit hash of every token's tag: a clear bit answers
    /// "not a token" from a table that stays in the core's cache (most spans the merge
    /// loop asks for are not tokens), where the slots are several megabytes.
    filter: Vec<u64>,
    slots: Vec<u64>,
    /// `64 - log2(slots.len())`: the multiplicative hash keeps the top bits.
    shift: u32,
    mask: usize,
    pairs: Vec<u32>,
    /// Bytes of the longest token.
    longest: usize,
}

const EMPTY: u32 = u32::MAX;

/// Bits of a slot holding the token id plus one (both vocabularies have fewer than 2^20 tokens).
const ID_BITS: u32 = 20;
/// Tokens of at most this many bytes are their own tag.
const SHORT_KEY_BYTES: usize = 5;
/// Tag bit of a long token's (hashed) tag; short tags stay below it (40 bits of bytes, 3 of length).
const LONG_TAG: u64 = 1 << 43;
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// Bits of the filter's hash (a 512 KB bitset).
const FILTER_BITS: u32 = 22;

fn hash_bytes(bytes: &[u8]) -> u64 {
    // FxHash-style mixing, 8 bytes at a time.
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// The bytes of a slice of 1..=5 bytes, little-endian, with its length above them.
#[inline]
fn short_tag(b: &[u8]) -> u64 {
    let n = b.len();
    let v = if n >= 4 {
        // Two overlapping 4-byte loads cover 4 or 5 bytes.
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]);
        u64::from(lo) | u64::from(hi) << (8 * (n - 4))
    } else {
        // 1..=3 bytes: first, middle and last (some the same byte, at the same place).
        u64::from(b[0])
            | u64::from(b[n / 2]) << (8 * (n / 2))
            | u64::from(b[n - 1]) << (8 * (n - 1))
    };
    v | (n as u64) << 40
}

/// Index in [`TokenIndex::chars3`] of 3 bytes that are one UTF-8 character's.
#[inline]
fn char3_index(b: &[u8]) -> Option<usize> {
    match *b {
        [b0 @ 0xE0..=0xEF, b1 @ 0x80..=0xBF, b2 @ 0x80..=0xBF] => Some(
            usize::from(b0 & 0x0F) << 12 | usize::from(b1 & 0x3F) << 6 | usize::from(b2 & 0x3F),
        ),
        _ => None,
    }
}

/// Index in [`TokenIndex::emoji`] of 4 bytes that are one character of U+1F000..=U+1FFFF.
#[inline]
fn emoji_index(b: &[u8]) -> Option<usize> {
    match *b {
        [0xF0, 0x9F, b2 @ 0x80..=0xBF, b3 @ 0x80..=0xBF] => {
            Some(usize::from(b2 & 0x3F) << 6 | usize::from(b3 & 0x3F))
        }
        _ => None,
    }
}

/// The tag of a slice of one or more bytes (see [`TokenIndex`]).
#[inline]
fn tag_of(b: &[u8]) -> u64 {
    if b.len() <= SHORT_KEY_BYTES {
        short_tag(b)
    } else {
        (hash_bytes(b) >> 21) | LONG_TAG
    }
}

impl TokenIndex {
    fn build(bpe: Bpe) -> TokenIndex {
        let enc = &bpe.tokenizer().bpe;
        let n = enc.num_tokens();
        debug_assert!(n < (1 << ID_BITS) - 1);
        let size = (n * 2).next_power_of_two();
        let mask = size - 1;
        let shift = 64 - size.trailing_zeros();
        let mut slots = crate::alloc::vec_with_capacity(size);
        slots.resize(size, 0u64);
        let mut pairs = crate::alloc::vec_with_capacity(1 << 16);
        pairs.resize(1 << 16, EMPTY);
        let mut chars3 = crate::alloc::vec_with_capacity(1 << 16);
        chars3.resize(1 << 16, EMPTY);
        let mut emoji = crate::alloc::vec_with_capacity(1 << 12);
        emoji.resize(1 << 12, EMPTY);
        let mut filter = crate::alloc::vec_with_capacity(1 << (FILTER_BITS - 6));
        filter.resize(1 << (FILTER_BITS - 6), 0u64);
        let mut longest = 0;
        for id in 0..n as u32 {
            let bytes = enc.token_bytes(id);
            longest = longest.max(bytes.len());
            if let &[a, b] = bytes {
                pairs[usize::from(a) << 8 | usize::from(b)] = id;
            }
            if let Some(i) = char3_index(bytes) {
                chars3[i] = id;
            }
            if let Some(i) = emoji_index(bytes) {
                emoji[i] = id;
            }
            if bytes.is_empty() {
                continue;
            }
            let tag = tag_of(bytes);
            let h = tag.wrapping_mul(MULTIPLIER);
            let bit = (h >> (64 - FILTER_BITS)) as usize;
            filter[bit >> 6] |= 1 << (bit & 63);
            let mut i = (h >> shift) as usize;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = tag << ID_BITS | u64::from(id + 1);
        }
        TokenIndex {
            chars3,
            emoji,
            filter,
            slots,
            shift,
            mask,
            pairs,
            longest,
        }
    }

    fn get(bpe: Bpe) -> &'static TokenIndex {
        static CL100K: OnceLock<TokenIndex> = OnceLock::new();
        static O200K: OnceLock<TokenIndex> = OnceLock::new();
        match bpe {
            Bpe::Cl100kBase => CL100K.get_or_init(|| TokenIndex::build(bpe)),
            Bpe::O200kBase => O200K.get_or_init(|| TokenIndex::build(bpe)),
        }
    }

    #[inline]
    fn lookup(
        &self,
        bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding,
        piece: &[u8],
    ) -> Option<u32> {
        match piece.len() {
            0 => return None,
            2 => {
                let id = self.pairs[usize::from(piece[0]) << 8 | usize::from(piece[1])];
                return (id != EMPTY).then_some(id);
            }
            3 => {
                if let Some(i) = char3_index(piece) {
                    let id = self.chars3[i];
                    return (id != EMPTY).then_some(id);
                }
            }
            4 => {
                if let Some(i) = emoji_index(piece) {
                    let id = self.emoji[i];
                    return (id != EMPTY).then_some(id);
                }
            }
            _ => {}
        }
        let tag = tag_of(piece);
        let h = tag.wrapping_mul(MULTIPLIER);
        let bit = (h >> (64 - FILTER_BITS)) as usize;
        if self.filter[bit >> 6] & (1 << (bit & 63)) == 0 {
            return None;
        }
        let mut i = (h >> self.shift) as usize;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            if slot >> ID_BITS == tag {
                let id = (slot & ((1 << ID_BITS) - 1)) as u32 - 1;
                if piece.len() <= SHORT_KEY_BYTES || bpe.token_bytes(id) == piece {
                    return Some(id);
                }
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// Longest token in either vocabulary is well under this; longer pieces skip the lookup.
const MAX_TOKEN_BYTES: usize = 256;

/// Pieces up to this many bytes use the rank-merge loop on the stack; longer ones the
/// linear-time backtracking encoder of the `bpe` crate. The loop does a table lookup
/// per candidate span (most answered by the index's direct tables and its filter), which
/// beats the encoder's automaton on ASCII runs of up to 32 bytes (base64, identifiers)
/// and on up to 24 bytes of multi-byte characters (CJK, emoji); past that the quadratic
/// loop loses to the automaton, which takes whole characters per step (measured on the
/// bench corpora).
const SMALL_PIECE: usize = 32;
const SMALL_NON_ASCII_PIECE: usize = 24;

/// Whether a piece of two or more bytes goes to [`merge_small`].
#[inline]
fn is_small(piece: &[u8]) -> bool {
    piece.len() <= SMALL_NON_ASCII_PIECE || (piece.len() <= SMALL_PIECE && piece.is_ascii())
}

/// Classic rank-order byte-pair merging of a short piece (2..=SMALL_PIECE bytes).
///
/// Token ids of these vocabularies are their merge ranks, so the lowest id among the
/// adjacent pairs present in the vocabulary merges first (leftmost on ties). Calls `emit`
/// with the byte range of every resulting token, in order.
fn merge_small(
    enc: &bpe_openai::byte_pair_encoding::BytePairEncoding,
    index: &TokenIndex,
    piece: &[u8],
    mut emit: impl FnMut(usize, usize),
) {
    let n = piece.len();
    let rank = |a: usize, b: usize| index.lookup(enc, &piece[a..b]).unwrap_or(EMPTY);
    // Part i starts at starts[i]; ranks[i] is the rank of merging part i with part i+1.
    let mut starts = [0u8; SMALL_PIECE + 1];
    let mut ranks = [EMPTY; SMALL_PIECE + 1];
    for i in 0..n {
        starts[i] = i as u8;
        ranks[i] = if i + 2 <= n { rank(i, i + 2) } else { EMPTY };
    }
    starts[n] = n as u8;
    let mut len = n + 1;
    loop {
        let mut best = EMPTY;
        let mut at = 0usize;
        for (i, &r) in ranks[..len - 1].iter().enumerate() {
            if r < best {
                best = r;
                at = i;
            }
        }
        if best == EMPTY {
            break;
        }
        // After merging parts `at` and `at + 1`, recompute the ranks around the new part.
        let span = |i: usize| -> u32 {
            if i + 3 < len {
                rank(starts[i] as usize, starts[i + 3] as usize)
            } else {
                EMPTY
            }
        };
        if at > 0 {
            ranks[at - 1] = span(at - 1);
        }
        ranks[at] = span(at);
        starts.copy_within(at + 2..len, at + 1);
        ranks.copy_within(at + 2..len, at + 1);
        len -= 1;
    }
    for w in starts[..len].windows(2) {
        emit(w[0] as usize, w[1] as usize);
    }
}

/// Tokens of one pre-tokenizer piece.
#[inline]
fn piece_count(tok: &Tokenizer, index: &TokenIndex, piece: &[u8]) -> usize {
    if piece.len() <= 1
        || (piece.len() <= MAX_TOKEN_BYTES && index.lookup(&tok.bpe, piece).is_some())
    {
        return piece.len().min(1);
    }
    if is_small(piece) {
        let mut n = 0usize;
        merge_small(&tok.bpe, index, piece, |_, _| n += 1);
        return n;
    }
    crate::alloc::ensure_room(crate_encoder_bytes(piece.len()));
    tok.bpe.count(piece)
}

/// About what the `bpe` crate's backtracking encoder allocates for a piece of
/// `len` bytes: its token buffer (a third of the length, 4 bytes each, grown
/// once) and a bit per byte. The crate's buffers are not ours: asking for this
/// first (see [`crate::alloc::ensure_room`]) makes a refusal an unwind here
/// rather than an abort inside it.
fn crate_encoder_bytes(len: usize) -> usize {
    len.saturating_mul(2).saturating_add(len / 8)
}

/// Appends the token ids of one pre-tokenizer piece.
#[inline]
fn piece_encode(tok: &Tokenizer, index: &TokenIndex, piece: &[u8], out: &mut Vec<u32>) {
    if piece.len() <= MAX_TOKEN_BYTES {
        if let Some(id) = index.lookup(&tok.bpe, piece) {
            crate::alloc::push(out, id);
            return;
        }
    }
    if is_small(piece) {
        merge_small(&tok.bpe, index, piece, |a, b| {
            // Every byte and every merge result is in the vocabulary.
            crate::alloc::push(out, index.lookup(&tok.bpe, &piece[a..b]).unwrap_or(EMPTY));
        });
        return;
    }
    crate::alloc::ensure_room(crate_encoder_bytes(piece.len()));
    crate::alloc::extend(out, &tok.bpe.encode_via_backtracking(piece));
}

/// Token ids of one pre-tokenizer piece (tiktoken's encoding of that piece).
pub fn encode_piece(piece: &str, bpe: Bpe) -> Vec<u32> {
    let mut out = Vec::new();
    piece_encode(
        bpe.tokenizer(),
        TokenIndex::get(bpe),
        piece.as_bytes(),
        &mut out,
    );
    out
}

/// Token count straight from the `bpe-openai` crate (its regex pre-tokenizer and
/// backtracking encoder, without our scanner and fast paths). Same result as [`count`];
/// kept so the benches can show what the crate alone gives.
pub fn count_bpe_openai(text: &str, bpe: Bpe) -> usize {
    bpe.tokenizer().count(text)
}

/// Exact number of tokens of `text`; long texts are counted on all cores.
pub fn count(text: &str, bpe: Bpe) -> usize {
    let parts = if worth_splitting(text.as_bytes()) {
        parallel::threads()
    } else {
        1
    };
    count_in_parts(text, bpe, parts)
}

/// Whether counting `text` on one thread takes long enough that a second thread's
/// start-up and join (about 50 µs here) pay off: when a 32 KiB ASCII text's work
/// or more. A byte outside ASCII costs about 2.5 ASCII bytes (CJK counted at 17 ns
/// a byte, code and prose at 5), so 10,000 CJK characters (25 KB) split and gain
/// 40%, where 10 KB of code would lose a third (2026-12-05, alternate rounds).
fn worth_splitting(text: &[u8]) -> bool {
    /// ASCII bytes of work from which two threads are faster.
    const SPLIT_WEIGHT: usize = 32 * 1024;
    if text.len() >= PARALLEL_MIN_BYTES {
        return true;
    }
    // Even all outside ASCII, a text this short weighs less.
    if text.len() * 7 / 2 < SPLIT_WEIGHT {
        return false;
    }
    let outside = text.iter().filter(|&&b| b >= 0x80).count();
    text.len() + outside * 5 / 2 >= SPLIT_WEIGHT
}

/// Tokens of the pieces of `text` from byte `start` (a piece boundary) up to `end`.
///
/// `None` when a piece runs past `end`, i.e. `end` is not a piece boundary.
fn count_span(text: &str, bpe: Bpe, start: usize, end: usize) -> Option<usize> {
    let tok = bpe.tokenizer();
    let index = TokenIndex::get(bpe);
    let mut pieces = Pieces::starting_at(text, start, bpe);
    let mut total = 0usize;
    if end - start >= MEMO_MIN_BYTES {
        let mut memo = PieceMemo::new();
        while pieces.offset() < end && memo.useful() {
            let Some(piece) = pieces.next() else { break };
            total += memo.count(tok, index, piece.as_bytes());
        }
        while pieces.offset() < end {
            let Some(piece) = pieces.next() else { break };
            total += piece_count(tok, index, piece.as_bytes());
        }
    } else {
        while pieces.offset() < end {
            let Some(piece) = pieces.next() else { break };
            total += piece_count(tok, index, piece.as_bytes());
        }
    }
    (pieces.offset() == end).then_some(total)
}

/// Spans at least this long are counted with a [`PieceMemo`] (below it, setting up its
/// table costs more than it saves).
const MEMO_MIN_BYTES: usize = 32 * 1024;
/// Entries of a [`PieceMemo`] (32 bytes each: 128 KB, which stays in the core's cache).
const MEMO_SLOTS: usize = 4096;
/// Shortest piece a [`PieceMemo`] keeps: shorter ones are answered about as fast by the
/// token index (their bytes are its tag) or the merge loop.
const MEMO_MIN_PIECE: usize = 6;
/// Longest piece a [`PieceMemo`] keeps.
const MEMO_MAX_BYTES: usize = 24;

/// One entry of a [`PieceMemo`]: a piece (zero-padded), its length (0: empty) and count.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct MemoEntry {
    bytes: [u8; MEMO_MAX_BYTES],
    len: u32,
    count: u32,
}

/// Direct-mapped memo of recent pieces and their token counts, for one counting pass.
///
/// Text repeats its pieces (words, indentation, CJK phrases, log fields), and a piece the
/// memo holds is counted by one lookup in a small table instead of a lookup in the
/// several-megabyte token index or a run of the byte-pair merge loop. Entries are whole
/// pieces compared byte for byte, so a count never depends on what the memo holds.
struct PieceMemo {
    entries: Vec<MemoEntry>,
    /// Pieces looked up and found since the last check of the hit rate.
    probes: u32,
    hits: u32,
    useful: bool,
}

/// A [`PieceMemo`] checks its hit rate every this many lookups, and is given up when
/// fewer than one in [`MEMO_GIVE_UP`] found its piece (text that rarely repeats a piece,
/// such as base64 of random bytes, then pays nothing more for it).
const MEMO_WINDOW: u32 = 4096;
const MEMO_GIVE_UP: u32 = 8;

impl PieceMemo {
    fn new() -> PieceMemo {
        let empty = MemoEntry {
            bytes: [0; MEMO_MAX_BYTES],
            len: 0,
            count: 0,
        };
        let mut entries = crate::alloc::vec_with_capacity(MEMO_SLOTS);
        entries.resize(MEMO_SLOTS, empty);
        PieceMemo {
            entries,
            probes: 0,
            hits: 0,
            useful: true,
        }
    }

    /// Whether the memo still finds enough pieces to be worth its lookups.
    #[inline]
    fn useful(&self) -> bool {
        self.useful
    }

    /// Tokens of one piece, from the memo when it holds the piece.
    #[inline]
    fn count(&mut self, tok: &Tokenizer, index: &TokenIndex, piece: &[u8]) -> usize {
        let n = piece.len();
        if !(MEMO_MIN_PIECE..=MEMO_MAX_BYTES).contains(&n) {
            return piece_count(tok, index, piece);
        }
        let mut key = [0u8; MEMO_MAX_BYTES];
        key[..n].copy_from_slice(piece);
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&key[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        let h = (word(0) ^ word(1).rotate_left(21) ^ word(2).rotate_left(42) ^ n as u64)
            .wrapping_mul(MULTIPLIER);
        let slot = (h >> (64 - MEMO_SLOTS.trailing_zeros())) as usize;
        self.probes += 1;
        if self.probes == MEMO_WINDOW {
            self.useful = self.hits * MEMO_GIVE_UP >= MEMO_WINDOW;
            self.probes = 0;
            self.hits = 0;
        }
        let entry = &mut self.entries[slot];
        if entry.len == n as u32 && entry.bytes == key {
            self.hits += 1;
            return entry.count as usize;
        }
        let count = piece_count(tok, index, piece);
        *entry = MemoEntry {
            bytes: key,
            len: n as u32,
            count: count as u32,
        };
        count
    }
}

/// Counts tokens but stops once the count passes `limit`.
///
/// Returns the exact count when it is at most `limit`, else `limit + 1`. Pieces are
/// counted in order, so the work is proportional to the text actually consumed.
pub fn count_with_limit(text: &str, bpe: Bpe, limit: usize) -> usize {
    let tok = bpe.tokenizer();
    let index = TokenIndex::get(bpe);
    let mut total = 0usize;
    let mut pieces = Pieces::new(text, bpe);
    // A memo once the pass has gone far enough to pay for setting it up.
    let mut memo: Option<PieceMemo> = None;
    while let Some(piece) = pieces.next() {
        // No token is longer than the vocabulary's longest: a piece longer than
        // that many times the tokens left is over the limit without encoding it
        // (a long run of one letter is a single piece).
        if piece.len() > (limit - total).saturating_mul(index.longest) {
            return limit.saturating_add(1);
        }
        total += match memo.as_mut() {
            Some(memo) if memo.useful() => memo.count(tok, index, piece.as_bytes()),
            _ => piece_count(tok, index, piece.as_bytes()),
        };
        if total > limit {
            return limit.saturating_add(1);
        }
        if memo.is_none() && pieces.offset() >= MEMO_MIN_BYTES {
            memo = Some(PieceMemo::new());
        }
    }
    total
}

/// Bytes of the longest token of `bpe`: a text of `n` bytes has at least
/// `n / longest_token_bytes(bpe)` tokens.
pub fn longest_token_bytes(bpe: Bpe) -> usize {
    TokenIndex::get(bpe).longest
}

/// Token ids of `text`, identical to tiktoken's `encode_ordinary`.
pub fn encode(text: &str, bpe: Bpe) -> Vec<u32> {
    let tok = bpe.tokenizer();
    let index = TokenIndex::get(bpe);
    let mut out = crate::alloc::vec_with_capacity(text.len() / 3 + 1);
    for piece in Pieces::new(text, bpe) {
        piece_encode(tok, index, piece.as_bytes(), &mut out);
    }
    out
}

/// The bytes of a token sequence; an id outside the vocabulary is an error.
pub fn decode_bytes(tokens: &[u32], bpe: Bpe) -> Result<Vec<u8>, TokenError> {
    let enc = &bpe.tokenizer().bpe;
    let n = enc.num_tokens();
    let mut out = crate::alloc::vec_with_capacity(tokens.len().saturating_mul(4));
    let special = bpe.special_tokens();
    for &t in tokens {
        if (t as usize) < n {
            crate::alloc::extend(&mut out, enc.token_bytes(t));
        } else if let Some((_, text)) = special.iter().find(|(id, _)| *id == t) {
            crate::alloc::extend(&mut out, text.as_bytes());
        } else {
            return Err(TokenError::UnknownToken(t));
        }
    }
    Ok(out)
}

/// Decodes tokens to text, replacing invalid UTF-8 the way Python's
/// `bytes.decode("utf-8", "replace")` does (one U+FFFD per maximal invalid subpart).
pub fn decode(tokens: &[u32], bpe: Bpe) -> Result<String, TokenError> {
    let bytes = decode_bytes(tokens, bpe)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            // As `from_utf8_lossy`, growing through the fallible helpers.
            let bytes = e.as_bytes();
            let mut text = crate::alloc::string_with_capacity(bytes.len());
            for chunk in bytes.utf8_chunks() {
                crate::alloc::push_str(&mut text, chunk.valid());
                if !chunk.invalid().is_empty() {
                    crate::alloc::push_char(&mut text, '\u{FFFD}');
                }
            }
            text
        }
    })
}

/// Text rebuilt from Python's `str.encode("utf-8", "surrogatepass")` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The text, surrogate pairs joined and lone surrogates replaced by U+FFFD.
    pub text: String,
    /// Character indices (in `text`) of characters that came from a surrogate pair,
    /// i.e. that stand for two code points of the original Python string. Ascending.
    pub joined_pairs: Vec<usize>,
}

impl Repaired {
    /// Maps a character offset in `text` to a code-point offset in the original string.
    pub fn original_offset(&self, char_offset: usize) -> usize {
        char_offset + self.joined_pairs.partition_point(|&p| p < char_offset)
    }
}

/// Rebuilds text from "surrogatepass" UTF-8, the way tiktoken treats such strings
/// (it round-trips them through UTF-16 with errors="replace").
///
/// Well-formed UTF-8 is copied; a 3-byte high surrogate immediately followed by a
/// 3-byte low surrogate becomes one supplementary character; any other surrogate
/// becomes U+FFFD; any other invalid byte (not produced by Python) becomes U+FFFD.
pub fn from_surrogatepass(bytes: &[u8]) -> Repaired {
    let mut text = crate::alloc::string_with_capacity(bytes.len());
    let mut joined_pairs = Vec::new();
    let mut chars = 0usize;
    let mut i = 0usize;
    let surrogate_at = |i: usize| -> Option<u32> {
        match bytes.get(i..i + 3) {
            Some(&[0xED, b1, b2]) if (0xA0..=0xBF).contains(&b1) && (0x80..=0xBF).contains(&b2) => {
                Some(0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F))
            }
            _ => None,
        }
    };
    while i < bytes.len() {
        // Copy the longest valid run in one go.
        let rest = &bytes[i..];
        let valid = match std::str::from_utf8(rest) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        if valid > 0 {
            // The slice is valid UTF-8 up to `valid` by construction.
            let run = std::str::from_utf8(&rest[..valid]).unwrap_or_default();
            chars += run.chars().count();
            crate::alloc::push_str(&mut text, run);
            i += valid;
            continue;
        }
        match surrogate_at(i) {
            Some(hi @ 0xD800..=0xDBFF) => match surrogate_at(i + 3) {
                Some(lo @ 0xDC00..=0xDFFF) => {
                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    crate::alloc::push_char(&mut text, char::from_u32(cp).unwrap_or('\u{FFFD}'));
                    crate::alloc::push(&mut joined_pairs, chars);
                    chars += 1;
                    i += 6;
                }
                _ => {
                    crate::alloc::push_char(&mut text, '\u{FFFD}');
                    chars += 1;
                    i += 3;
                }
            },
            Some(_) => {
                crate::alloc::push_char(&mut text, '\u{FFFD}');
                chars += 1;
                i += 3;
            }
            None => {
                crate::alloc::push_char(&mut text, '\u{FFFD}');
                chars += 1;
                i += 1;
            }
        }
    }
    Repaired { text, joined_pairs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_a_text_whose_work_outweighs_a_second_thread() {
        // ASCII: by length alone.
        assert!(!worth_splitting(&[b'a'; 10_000]));
        assert!(!worth_splitting(&[b'a'; 32 * 1024 - 1]));
        assert!(worth_splitting(&[b'a'; 32 * 1024]));
        assert!(worth_splitting(&[b'a'; PARALLEL_MIN_BYTES]));
        // Bytes outside ASCII weigh more: 10,000 CJK characters split, 2,000 do not.
        assert!(worth_splitting("的".repeat(10_000).as_bytes()));
        assert!(!worth_splitting("的".repeat(2_000).as_bytes()));
        // 9 KB of which a third outside ASCII: 9,000 + 7,500 stays under.
        let mixed = format!("{}{}", "a".repeat(6_000), "的".repeat(1_000));
        assert!(!worth_splitting(mixed.as_bytes()));
        // 20 KB, half outside ASCII: 20,000 + 25,000 splits.
        let mixed = format!("{}{}", "a".repeat(10_002), "的".repeat(3_333));
        assert!(worth_splitting(mixed.as_bytes()));
    }

    #[test]
    fn known_counts() {
        assert_eq!(count("", Bpe::Cl100kBase), 0);
        assert_eq!(encode("hello world", Bpe::Cl100kBase), vec![15339, 1917]);
        assert_eq!(encode("hello world", Bpe::O200kBase), vec![24912, 2375]);
        assert_eq!(count("a\u{FFFD}b", Bpe::Cl100kBase), 3);
    }

    #[test]
    fn index_finds_every_token_and_nothing_else() {
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let enc = &bpe.tokenizer().bpe;
            let index = TokenIndex::get(bpe);
            let mut known = std::collections::HashSet::new();
            for id in 0..enc.num_tokens() as u32 {
                let bytes = enc.token_bytes(id);
                assert_eq!(index.lookup(enc, bytes), Some(id), "{bpe:?} {id}");
                known.insert(bytes.to_vec());
            }
            // Spans of every length (and shape: characters, emoji, parts of them) that the
            // vocabulary may or may not hold: the index agrees with a plain set.
            let mut next = crate::test_rng::xorshift(0x51ed_2701_f00d_cafe);
            let alphabet: Vec<u8> = "aZ09+/=. \n\u{4e2d}\u{6587}\u{3042}\u{1f389}\u{1f3fd}\u{200d}"
                .bytes()
                .chain([0x80, 0xbf, 0xe4, 0xf0, 0x9f, 0xff])
                .collect();
            for _ in 0..200_000 {
                let len = 1 + (next() % 12) as usize;
                let span: Vec<u8> = (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect();
                let found = index.lookup(enc, &span);
                assert_eq!(found.is_some(), known.contains(&span), "{bpe:?} {span:?}");
                if let Some(id) = found {
                    assert_eq!(enc.token_bytes(id), &span[..]);
                }
            }
            assert_eq!(index.lookup(enc, b""), None);
        }
    }

    #[test]
    fn memo_counts_equal_plain_counts() {
        // Pieces that repeat (memo hits), collide in its slots, sit at its length bounds
        // (5, 6, 24, 25 bytes), and a stretch of unique pieces that makes it give up.
        let words = [
            " because",
            " becausf",
            "\u{4e2d}\u{6587}\u{5b57}\u{7b26}",
            "\u{4e2d}\u{6587}\u{5b57}\u{7b27}",
            "        ",
            " hello",
            " hell",
            "abcdefghijklmnopqrstuvwx",
            "abcdefghijklmnopqrstuvwxy",
            " \u{1f389}\u{1f389}",
            "12",
            "\n",
        ];
        let mut next = crate::test_rng::xorshift(0x0dd_ba11_cafe_f00d);
        let mut text = String::new();
        while text.len() < 3 * MEMO_MIN_BYTES {
            text.push_str(words[(next() % words.len() as u64) as usize]);
        }
        for i in 0..40_000u64 {
            text.push_str(&format!(" q{:x}z", next() ^ i));
        }
        for _ in 0..2000 {
            text.push_str(words[(next() % words.len() as u64) as usize]);
        }
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let tok = bpe.tokenizer();
            let index = TokenIndex::get(bpe);
            let plain: usize = Pieces::new(&text, bpe)
                .map(|p| piece_count(tok, index, p.as_bytes()))
                .sum();
            assert_eq!(count_span(&text, bpe, 0, text.len()), Some(plain));
            assert_eq!(plain, encode(&text, bpe).len());
            for limit in [plain / 3, plain - 1, plain, plain + 1] {
                let expected = if plain <= limit { plain } else { limit + 1 };
                assert_eq!(count_with_limit(&text, bpe, limit), expected, "{limit}");
            }
        }
    }

    #[test]
    fn limit_contract() {
        let text = "one two three four five six seven eight nine ten";
        let full = count(text, Bpe::Cl100kBase);
        for limit in 0..full + 3 {
            let got = count_with_limit(text, Bpe::Cl100kBase, limit);
            assert_eq!(got, if full <= limit { full } else { limit + 1 });
        }
    }

    #[test]
    fn limit_contract_on_long_pieces_of_one_letter() {
        // One piece each: the length bound answers for the long ones, exact
        // counting for those near the bound; both keep the contract.
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let longest = longest_token_bytes(bpe);
            assert!((1..=MAX_TOKEN_BYTES).contains(&longest));
            for len in [1, 40, 999, 1000, 1001, 5000, 20_000] {
                let text = "a".repeat(len);
                let full = count(&text, bpe);
                for limit in [0, 1, 5, full.saturating_sub(1), full, full + 1] {
                    let got = count_with_limit(&text, bpe, limit);
                    assert_eq!(
                        got,
                        if full <= limit { full } else { limit + 1 },
                        "{len} {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn round_trip_and_unknown_ids() {
        let text = "Grüße, 世界! 🎉 tabs\t\tand  spaces\n\n";
        for bpe in [Bpe::Cl100kBase, Bpe::O200kBase] {
            let ids = encode(text, bpe);
            assert_eq!(decode(&ids, bpe).as_deref(), Ok(text));
            assert_eq!(count(text, bpe), ids.len());
        }
        assert_eq!(
            decode(&[100257], Bpe::Cl100kBase).as_deref(),
            Ok("<|endoftext|>")
        );
        assert_eq!(
            decode(&[u32::MAX], Bpe::Cl100kBase),
            Err(TokenError::UnknownToken(u32::MAX))
        );
    }

    #[test]
    fn encoding_names() {
        assert_eq!("heuristic".parse::<Encoding>(), Ok(Encoding::Heuristic));
        let err = "gpt2".parse::<Encoding>().unwrap_err().to_string();
        assert!(
            err.contains("cl100k_base") && err.contains("o200k_base") && err.contains("heuristic")
        );
        assert!("heuristic".parse::<Bpe>().is_err());
        assert_eq!(heuristic_count(0), 0);
        assert_eq!(heuristic_count(5), 2);
        assert_eq!(heuristic_json_count(0), 0);
        assert_eq!(heuristic_json_count(2), 1);
        assert_eq!(heuristic_json_count(7), 4);
    }

    #[test]
    fn surrogatepass_repair() {
        // "a" + lone high + "b" + (high, low) pair + lone low
        let bytes = b"a\xED\xA0\x80b\xED\xA0\xBD\xED\xB8\x80\xED\xB0\x80";
        let r = from_surrogatepass(bytes);
        assert_eq!(r.text, "a\u{FFFD}b\u{1F600}\u{FFFD}");
        assert_eq!(r.joined_pairs, vec![3]);
        assert_eq!(r.original_offset(3), 3);
        assert_eq!(r.original_offset(4), 5);
        assert_eq!(r.original_offset(5), 6);
    }
}
