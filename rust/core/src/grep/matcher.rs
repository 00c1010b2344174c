//! How lines are tested against a pattern.
//!
//! Four engines, chosen per pattern (and per text):
//! - run: a pattern that is one large counted repeat of one character class
//!   (`\w{30000}`) matches a line holding that many consecutive characters of
//!   the class, counted per line without compiling the count;
//! - literal: `memchr::memmem` over the whole buffer (patterns the reference
//!   searches literally, and patterns made of literal characters only);
//! - linear: the `regex` crate over the whole buffer, in time linear in the text.
//!   The translated pattern never matches a `"\n"` and uses multi-line anchors, so a
//!   match always lies inside one line; after a hit the search resumes at the next
//!   line, so each line is examined once however often it matches;
//! - backtracking: `fancy-regex` line by line, for look-around, back-references,
//!   atomic groups and conditionals (and a Unicode `\b` on non-ASCII lines), with a
//!   step limit per line and a time limit per search, so that no pattern can run for
//!   long. A linear prefilter picks the candidate lines first.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memchr::memmem;

use super::index::count_newlines;
use super::{GrepError, TextIndex};

/// Steps the backtracking engine may take on one line before giving up: at least
/// this many, more on long lines (see [`backtrack_budget`]).
pub const BACKTRACK_LIMIT: usize = 1_000_000;
/// Steps per byte of the line granted on lines long enough to need more than
/// [`BACKTRACK_LIMIT`]: a search tries every start position, so a pattern that
/// needs a few steps per position needs a budget that grows with the line.
pub const BACKTRACK_STEPS_PER_BYTE: usize = 64;
/// Hard ceiling on the steps for one line, however long.
pub const BACKTRACK_CEILING: usize = 256_000_000;
/// Total time the backtracking engine may spend on one search.
pub const BACKTRACK_TIME_LIMIT: Duration = Duration::from_secs(5);
/// The clock is read at least once per this many bytes of lines tried (and per 256 lines).
const CLOCK_EVERY_BYTES: usize = 64 << 10;
/// Compiled-program size limit for the engines (room for Python's explicit Unicode
/// classes under counted repeats such as `\w{100}`); the lazy DFA cache keeps the
/// crate's default.
const SIZE_LIMIT: usize = 64 << 20;

/// A pattern as the Python layer translated it.
#[derive(Debug, Clone)]
pub enum MatcherSpec {
    /// Search for these bytes (UTF-8 or WTF-8) literally.
    Literal(Vec<u8>),
    /// A line matches when it holds `min` consecutive characters of a set: what a
    /// counted repeat of one character class (`\w{30000}`) means, answered without
    /// expanding the count.
    Run(CharRun),
    /// A translated regular expression.
    Regex {
        /// Pattern for the linear engine, if the pattern has no backtracking-only syntax.
        linear: Option<String>,
        /// The linear pattern is exact only on ASCII text (it uses an ASCII `\b`).
        linear_needs_ascii_text: bool,
        /// Pattern for the backtracking engine (always exact, slower).
        backtracking: String,
        /// Linear pattern matching every line the pattern matches (and maybe more):
        /// lines it rejects are not handed to the backtracking engine.
        prefilter: String,
        /// Whether every atom treats lone surrogates and U+FFFD alike.
        surrogate_exact: bool,
        /// Fewest characters a match takes: shorter lines are not handed to the
        /// backtracking engine (Python's `re` rejects them the same way).
        min_chars: usize,
    },
}

/// A set of code points (sorted, disjoint inclusive ranges, no `"\n"`) and the run
/// length a line must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharRun {
    /// The code points, as sorted disjoint inclusive ranges.
    pub ranges: Vec<(u32, u32)>,
    /// Consecutive characters of the set a line must hold.
    pub min: usize,
    /// Whether the set treats lone surrogates and U+FFFD alike.
    pub surrogate_exact: bool,
}

impl CharRun {
    fn contains(&self, c: char) -> bool {
        let cp = c as u32;
        let i = self.ranges.partition_point(|&(lo, _)| lo <= cp);
        i > 0 && cp <= self.ranges[i - 1].1
    }

    /// Whether `line` holds `min` consecutive characters of the set.
    fn matches(&self, line: &str) -> bool {
        if self.min == 0 {
            return true;
        }
        let mut run = 0;
        for c in line.chars() {
            if self.contains(c) {
                run += 1;
                if run >= self.min {
                    return true;
                }
            } else {
                run = 0;
            }
        }
        false
    }
}

/// A compiled pattern.
#[derive(Debug)]
pub enum Matcher {
    /// A run of characters of one set (see [`MatcherSpec::Run`]).
    Run(CharRun),
    /// A literal that can never be inside a line (it holds `"\n"`).
    Never,
    /// A literal searched with `memmem`.
    Literal(memmem::Finder<'static>),
    /// A regular expression.
    Regex(RegexMatcher),
}

/// Where the earliest-ending match at or after `pos` ends: no match holds a `"\n"`,
/// so it ends in the first line that holds one (at that line's `"\n"` at the latest),
/// and the engine can stop there without finding where the match starts.
fn first_hit(re: &regex::bytes::Regex, hay: &[u8], pos: usize) -> Option<usize> {
    re.shortest_match_at(hay, pos)
}

/// A search over a whole buffer: where the first match at or after a position starts.
#[derive(Debug, Clone, Copy)]
pub enum BufferSearch<'a> {
    Never,
    Literal(&'a memmem::Finder<'static>),
    Regex(&'a regex::bytes::Regex),
}

impl BufferSearch<'_> {
    /// A position in the first line of `hay` at or after `pos` that holds a match
    /// (`hay` before `pos` is context for anchors and word boundaries); see
    /// `first_hit`.
    pub fn find(&self, hay: &[u8], pos: usize) -> Option<usize> {
        match self {
            BufferSearch::Never => None,
            BufferSearch::Literal(finder) => finder.find(&hay[pos..]).map(|off| pos + off),
            BufferSearch::Regex(re) => first_hit(re, hay, pos),
        }
    }
}

/// The compiled forms of one regular expression.
#[derive(Debug)]
pub struct RegexMatcher {
    linear: Option<regex::bytes::Regex>,
    linear_needs_ascii_text: bool,
    backtracking: Option<fancy_regex::Regex>,
    /// The backtracking pattern, recompiled with larger step budgets for long lines.
    backtracking_source: String,
    /// Those larger-budget forms, by budget.
    long_line_forms: Mutex<Vec<(usize, Arc<fancy_regex::Regex>)>>,
    prefilter: Option<regex::bytes::Regex>,
    surrogate_exact: bool,
    min_chars: usize,
    /// The linear pattern as a few case-folded ASCII literals, when it is one (see
    /// [`folded_alternatives`]).
    folded: Option<FoldedSet>,
}

/// A few case-folded ASCII literals (see [`folded_alternatives`]): a line holds a
/// match of the pattern made of ASCII bytes only exactly where it holds one of
/// `needles` (each the lowercased needle and its per-byte fold, as in
/// [`FoldedLiteral`]); every other match holds one of `extras` (UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoldedSet {
    pub needles: Vec<(Vec<u8>, Vec<u8>)>,
    pub extras: Vec<String>,
}

/// At most this many needles in a [`FoldedSet`] (each is compared in every slice).
pub(crate) const FOLDED_NEEDLES: usize = 4;

/// A case-folded ASCII literal (see `folded_literal`): the needle with its letters
/// lowercased; per byte what to OR into a text byte before comparing (`0x20` for a
/// class of one letter's two cases, 0 otherwise); and the characters outside ASCII
/// its classes also hold (`(?i)i` also matches `İ` and `ı`), UTF-8 encoded.
pub(crate) type FoldedLiteral = (Vec<u8>, Vec<u8>, Vec<String>);

/// At most this many characters outside ASCII in a folded literal's classes (each
/// is looked for in the slices that hold bytes outside ASCII).
const FOLDED_EXTRAS: u32 = 8;

/// A pattern that is only ASCII letters, digits, escaped ASCII characters and
/// classes whose ASCII members are one letter's two cases (`[Pp]`, what `(?i)p`
/// translates to) or one character, plus any members outside ASCII
/// (`[Ii\x{130}-\x{131}]`): its matches made of ASCII bytes only are exactly where
/// the needle's bytes sit with each class's byte compared case-blind, and every other
/// match holds a byte outside ASCII. Anything else (and a plain literal), `None`.
/// (The matcher takes such patterns through [`folded_alternatives`], which also
/// accepts plain literals; the tests state the grammar here.)
#[cfg(test)]
fn folded_literal(pattern: &str) -> Option<FoldedLiteral> {
    let (lower, fold, extras) = folded_sequence(pattern.as_bytes())?;
    (!extras.is_empty() || fold.contains(&0x20)).then_some((lower, fold, extras))
}

/// A pattern whose line matches are those of a few case-folded ASCII literals: an
/// alternation (`(?:A|B)` as the translation writes it, or one alternative alone)
/// of at most [`FOLDED_NEEDLES`] alternatives, each a sequence `folded_literal`
/// accepts (case pairs or not) followed by nothing or by optional groups only
/// (`warn(?:(ing))?`): a line holds a match of such an alternative exactly where it
/// holds a match of its sequence, which is a match of the alternative itself. Each
/// needle holds at least two bytes. Anything else, `None`.
fn folded_alternatives(pattern: &str) -> Option<FoldedSet> {
    let mut p = pattern.as_bytes();
    if p.starts_with(b"(?:") && group_end(p, 0) == Some(p.len()) {
        p = &p[3..p.len() - 1];
    }
    let mut needles = Vec::new();
    let mut extras: Vec<String> = Vec::new();
    for alt in split_top(p, b'|')? {
        let (head, tail) = alt.split_at(top_group_start(alt));
        if !optional_groups(tail) {
            return None;
        }
        let (lower, fold, more) = folded_sequence(head)?;
        if lower.len() < 2 || needles.len() == FOLDED_NEEDLES {
            return None;
        }
        for c in more {
            if !extras.contains(&c) {
                extras.push(c);
            }
        }
        needles.push((lower, fold));
    }
    (!needles.is_empty() && extras.len() <= FOLDED_EXTRAS as usize)
        .then_some(FoldedSet { needles, extras })
}

/// Where the pattern element starting at `p[i]` ends: past a `\` escape (with the
/// braces of `\x{..}`), a class `[..]` or a group `(..)`; `None` when unbalanced.
fn element_end(p: &[u8], i: usize) -> Option<usize> {
    match *p.get(i)? {
        b'\\' => {
            if p.get(i + 1..i + 3) == Some(b"x{") {
                let close = p[i..].iter().position(|&c| c == b'}')?;
                Some(i + close + 1)
            } else {
                p.get(i + 1).map(|_| i + 2)
            }
        }
        b'[' => {
            let mut j = i + 1;
            while *p.get(j)? != b']' {
                j = element_end(p, j)?;
            }
            Some(j + 1)
        }
        b'(' => group_end(p, i),
        _ => Some(i + 1),
    }
}

/// Where the group opening at `p[i]` (a `(`) ends, past its `)`.
fn group_end(p: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while *p.get(j)? != b')' {
        j = element_end(p, j)?;
    }
    Some(j + 1)
}

/// `p` cut at each `sep` outside escapes, classes and groups.
fn split_top(p: &[u8], sep: u8) -> Option<Vec<&[u8]>> {
    let (mut parts, mut from, mut i) = (Vec::new(), 0, 0);
    while i < p.len() {
        if p[i] == sep {
            parts.push(&p[from..i]);
            from = i + 1;
            i += 1;
        } else {
            i = element_end(p, i)?;
        }
    }
    parts.push(&p[from..]);
    Some(parts)
}

/// Where the first group outside escapes and classes starts (`p.len()` if none).
fn top_group_start(p: &[u8]) -> usize {
    let mut i = 0;
    while i < p.len() && p[i] != b'(' {
        match element_end(p, i) {
            Some(next) => i = next,
            None => return p.len(),
        }
    }
    i
}

/// Whether `p` is only groups each made optional (`(..)?` or `(..)??`).
fn optional_groups(p: &[u8]) -> bool {
    let mut i = 0;
    while i < p.len() {
        if p[i] != b'(' {
            return false;
        }
        let Some(end) = group_end(p, i) else {
            return false;
        };
        if p.get(end) != Some(&b'?') {
            return false;
        }
        i = end + 1 + usize::from(p.get(end + 1) == Some(&b'?'));
    }
    true
}

/// `folded_literal`'s parse of a sequence, whether it folds any letter or not.
fn folded_sequence(p: &[u8]) -> Option<FoldedLiteral> {
    let (mut lower, mut fold, mut extras) = (Vec::new(), Vec::new(), Vec::new());
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'[' {
            let mut ascii = Vec::new();
            i += 1;
            loop {
                let (lo, next) = class_char(p, i)?;
                i = next;
                let hi = if p.get(i) == Some(&b'-') && p.get(i + 1) != Some(&b']') {
                    let (hi, next) = class_char(p, i + 1)?;
                    i = next;
                    hi
                } else {
                    lo
                };
                if lo >= 0x80 && hi >= lo && hi - lo < FOLDED_EXTRAS {
                    for cp in lo..=hi {
                        let c = char::from_u32(cp)?.to_string();
                        if !extras.contains(&c) {
                            extras.push(c);
                        }
                    }
                    if extras.len() > FOLDED_EXTRAS as usize {
                        return None;
                    }
                } else if lo == hi {
                    ascii.push(lo as u8);
                } else {
                    return None;
                }
                if p.get(i) == Some(&b']') {
                    i += 1;
                    break;
                }
            }
            let (b, f) = match ascii[..] {
                [b] if b != b'\n' => (b, 0),
                [x, y] if x.is_ascii_alphabetic() && x != y && x.eq_ignore_ascii_case(&y) => {
                    (x.to_ascii_lowercase(), 0x20)
                }
                _ => return None,
            };
            lower.push(b);
            fold.push(f);
        } else {
            let (c, next) = class_char(p, i)?;
            if c >= 0x80 || c == u32::from(b'\n') {
                return None;
            }
            lower.push(c as u8);
            fold.push(0);
            i = next;
        }
    }
    Some((lower, fold, extras))
}

/// One character at `p[i..]` as the translation writes it: an ASCII letter, digit or
/// `_`, or `\x{HEX}`; and where it ends.
fn class_char(p: &[u8], i: usize) -> Option<(u32, usize)> {
    let b = *p.get(i)?;
    if b.is_ascii_alphanumeric() || b == b'_' {
        return Some((u32::from(b), i + 1));
    }
    let rest = p.get(i..)?.strip_prefix(b"\\x{")?;
    let close = rest.iter().position(|&c| c == b'}')?;
    let hex = std::str::from_utf8(&rest[..close]).ok()?;
    let c = u32::from_str_radix(hex, 16).ok()?;
    Some((c, i + 4 + close))
}

/// The step budget for a line of `len` bytes: [`BACKTRACK_LIMIT`], or
/// [`BACKTRACK_STEPS_PER_BYTE`] per byte rounded up to a power of two (so few
/// budgets exist per pattern), never more than [`BACKTRACK_CEILING`].
pub fn backtrack_budget(len: usize) -> usize {
    len.saturating_mul(BACKTRACK_STEPS_PER_BYTE)
        .checked_next_power_of_two()
        .unwrap_or(BACKTRACK_CEILING)
        .clamp(BACKTRACK_LIMIT, BACKTRACK_CEILING)
}

impl RegexMatcher {
    /// The backtracking engine with the step budget for a line of `len` bytes.
    /// `None` means the form compiled up front (budget [`BACKTRACK_LIMIT`]) serves.
    fn backtracking_for(&self, len: usize) -> Result<Option<Arc<fancy_regex::Regex>>, GrepError> {
        let budget = backtrack_budget(len);
        if budget <= BACKTRACK_LIMIT {
            return Ok(None);
        }
        let mut forms = self
            .long_line_forms
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, re)) = forms.iter().find(|(b, _)| *b == budget) {
            return Ok(Some(Arc::clone(re)));
        }
        let re = Arc::new(compile_backtracking(&self.backtracking_source, budget)?);
        forms.push((budget, Arc::clone(&re)));
        Ok(Some(re))
    }

    /// The linear engine when it is exact on ASCII lines only (ASCII `\b`).
    fn ascii_line_engine(&self) -> Option<&regex::bytes::Regex> {
        if self.linear_needs_ascii_text {
            self.linear.as_ref()
        } else {
            None
        }
    }
}

fn compile_linear(pattern: &str) -> Result<regex::bytes::Regex, GrepError> {
    regex::bytes::RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => GrepError::TooBig(e.to_string()),
            _ => GrepError::Compile(e.to_string()),
        })
}

fn compile_backtracking(pattern: &str, limit: usize) -> Result<fancy_regex::Regex, GrepError> {
    fancy_regex::RegexBuilder::new(pattern)
        .backtrack_limit(limit)
        .delegate_size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let text = e.to_string();
            // fancy-regex reports its delegate's size limit only in its message.
            if text.contains("exceeds size limit") {
                GrepError::TooBig(text)
            } else {
                GrepError::Compile(text)
            }
        })
}

impl Matcher {
    /// Compiles a spec. The backtracking form is compiled up front only when it is
    /// the one that will always be used.
    pub fn compile(spec: MatcherSpec) -> Result<Matcher, GrepError> {
        match spec {
            MatcherSpec::Run(run) => Ok(Matcher::Run(run)),
            MatcherSpec::Literal(needle) => {
                if needle.contains(&b'\n') {
                    Ok(Matcher::Never)
                } else {
                    Ok(Matcher::Literal(memmem::Finder::new(&needle).into_owned()))
                }
            }
            MatcherSpec::Regex {
                linear,
                linear_needs_ascii_text,
                backtracking,
                prefilter,
                surrogate_exact,
                min_chars,
            } => {
                let linear = linear.as_deref().map(compile_linear).transpose()?;
                // Compile the backtracking form unless the linear one serves every text.
                let (compiled, prefilter) = if linear.is_none() || linear_needs_ascii_text {
                    // A prefilter is only an optimisation: without one every line is tried.
                    (
                        Some(compile_backtracking(&backtracking, BACKTRACK_LIMIT)?),
                        compile_linear(&prefilter).ok(),
                    )
                } else {
                    (None, None)
                };
                let folded = match (&linear, linear_needs_ascii_text) {
                    (Some(re), false) => folded_alternatives(re.as_str()),
                    _ => None,
                };
                Ok(Matcher::Regex(RegexMatcher {
                    folded,
                    linear,
                    linear_needs_ascii_text,
                    backtracking: compiled,
                    backtracking_source: backtracking,
                    long_line_forms: Mutex::new(Vec::new()),
                    prefilter,
                    surrogate_exact,
                    min_chars,
                }))
            }
        }
    }

    /// The whole-buffer search of this matcher, when it is exact on any UTF-8 text
    /// without knowing more about it (not for runs, backtracking, or a linear form
    /// exact on ASCII text only).
    pub fn buffer_search(&self) -> Option<BufferSearch<'_>> {
        match self {
            Matcher::Never => Some(BufferSearch::Never),
            Matcher::Literal(finder) => Some(BufferSearch::Literal(finder)),
            Matcher::Regex(RegexMatcher {
                linear: Some(re),
                linear_needs_ascii_text: false,
                ..
            }) => Some(BufferSearch::Regex(re)),
            _ => None,
        }
    }

    /// For a regular expression whose [`Self::buffer_search`] finds the lines of a few
    /// case-folded ASCII literals: those needles and the characters outside ASCII
    /// their classes also hold (see `folded_alternatives`).
    pub(crate) fn folded_set(&self) -> Option<&FoldedSet> {
        match self {
            Matcher::Regex(RegexMatcher {
                folded: Some(set), ..
            }) => Some(set),
            _ => None,
        }
    }

    /// The 0-based lines in `first..=last` that contain a match, ascending.
    pub fn matching_lines<S: AsRef<[u8]>>(
        &self,
        index: &TextIndex<S>,
        first: usize,
        last: usize,
    ) -> Result<Vec<usize>, GrepError> {
        let to = index.line_end_from(index.line_start(last));
        match self {
            Matcher::Never => Ok(Vec::new()),
            Matcher::Run(run) => {
                if index.has_surrogates() && !run.surrogate_exact {
                    return Err(GrepError::SurrogateAmbiguous);
                }
                // A line shorter (in bytes) than `min` cannot hold the run.
                let hay = index.match_bytes();
                let mut matched = Vec::new();
                let mut next = index.line_start(first);
                for i in first..=last {
                    let (s, e) = (next, index.line_end_from(next));
                    next = e + 1;
                    if e - s < run.min {
                        continue;
                    }
                    let line =
                        std::str::from_utf8(&hay[s..e]).map_err(|err| GrepError::InvalidUtf8 {
                            valid_up_to: s + err.valid_up_to(),
                        })?;
                    if run.matches(line) {
                        matched.push(i);
                    }
                }
                Ok(matched)
            }
            Matcher::Literal(finder) => {
                // Literals are searched in the original bytes: WTF-8 is injective, so a
                // needle with or without surrogates matches exactly where Python's would.
                let hay = &index.bytes()[..to];
                Ok(scan(index, first, last, |pos| {
                    finder.find(&hay[pos..]).map(|off| pos + off)
                }))
            }
            Matcher::Regex(rm) => {
                if index.has_surrogates() && !rm.surrogate_exact {
                    return Err(GrepError::SurrogateAmbiguous);
                }
                match &rm.linear {
                    Some(re) if !rm.linear_needs_ascii_text || index.is_ascii() => {
                        let hay = &index.match_bytes()[..to];
                        Ok(scan(index, first, last, |pos| first_hit(re, hay, pos)))
                    }
                    _ => match &rm.backtracking {
                        Some(re) => match &rm.prefilter {
                            Some(pre) => {
                                let hay = &index.match_bytes()[..to];
                                let candidates =
                                    scan(index, first, last, |pos| first_hit(pre, hay, pos));
                                backtrack_lines(rm, re, index, candidates)
                            }
                            None => backtrack_lines(rm, re, index, first..=last),
                        },
                        None => Err(GrepError::Compile("no engine for this pattern".into())),
                    },
                }
            }
        }
    }
}

/// Runs `find(pos) -> first match start at or after pos` over the buffer, one hit
/// per line: after a hit in line `i` the search resumes at the start of line `i + 1`.
/// Line numbers are kept by counting newlines between hits, so the walk costs one
/// pass over the text however many lines match.
fn scan<S: AsRef<[u8]>>(
    index: &TextIndex<S>,
    first: usize,
    last: usize,
    mut find: impl FnMut(usize) -> Option<usize>,
) -> Vec<usize> {
    let bytes = index.bytes();
    let mut lines = Vec::new();
    let mut pos = index.line_start(first);
    let mut line = first;
    while let Some(hit) = find(pos) {
        line += count_newlines(&bytes[pos..hit]);
        if line > last {
            break;
        }
        lines.push(line);
        if line == last {
            break;
        }
        pos = index.line_end_from(hit) + 1;
        line += 1;
    }
    lines
}

/// Tests each of `lines` (ascending) with the backtracking engine, one line at a time;
/// an ASCII line goes to `ascii_engine` instead when there is one (a linear form that
/// is exact on ASCII text).
fn backtrack_lines<S: AsRef<[u8]>>(
    rm: &RegexMatcher,
    re: &fancy_regex::Regex,
    index: &TextIndex<S>,
    lines: impl IntoIterator<Item = usize>,
) -> Result<Vec<usize>, GrepError> {
    let ascii_engine = rm.ascii_line_engine();
    let hay = index.match_bytes();
    let started = Instant::now();
    let mut matched = Vec::new();
    // Where the previous line ended, to step to the next one without a lookup.
    let mut prev: Option<(usize, usize)> = None;
    // Bytes of line tried since the clock was last read: a long line can take the
    // engine long, so the clock is read after enough bytes as well as enough lines.
    let mut unclocked = 0usize;
    for (n, i) in lines.into_iter().enumerate() {
        let s = match prev {
            Some((line, end)) if line + 1 == i => end + 1,
            _ => index.line_start(i),
        };
        let e = index.line_end_from(s);
        prev = Some((i, e));
        if e - s < rm.min_chars {
            // Fewer bytes than the characters a match needs.
            continue;
        }
        unclocked += e - s;
        if n % 256 == 255 || unclocked >= CLOCK_EVERY_BYTES {
            unclocked = 0;
            if started.elapsed() > BACKTRACK_TIME_LIMIT {
                return Err(GrepError::TimeLimit {
                    seconds: BACKTRACK_TIME_LIMIT.as_secs(),
                });
            }
        }
        if let Some(fast) = ascii_engine {
            let bytes = &hay[s..e];
            if bytes.is_ascii() {
                if fast.is_match(bytes) {
                    matched.push(i);
                }
                continue;
            }
        }
        let line = std::str::from_utf8(&hay[s..e]).map_err(|err| GrepError::InvalidUtf8 {
            valid_up_to: s + err.valid_up_to(),
        })?;
        let long_line_form = rm.backtracking_for(line.len())?;
        let engine = long_line_form.as_deref().unwrap_or(re);
        match engine.is_match(line) {
            Ok(true) => matched.push(i),
            Ok(false) => {}
            Err(fancy_regex::Error::RuntimeError(_)) => {
                return Err(GrepError::BacktrackLimit { line: i + 1 })
            }
            Err(other) => return Err(GrepError::Compile(other.to_string())),
        }
    }
    Ok(matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_literals_are_letters_digits_and_case_pairs_only() {
        let folded = |p: &str| folded_literal(p);
        assert_eq!(
            folded("[Pp]y_[tT]9"),
            Some((b"py_t9".to_vec(), vec![0x20, 0, 0, 0x20, 0], vec![]))
        );
        // Classes may also hold characters outside ASCII, and escapes stand for
        // ASCII characters.
        assert_eq!(
            folded("[Ii\\x{130}-\\x{131}]\\x{2D}[Kk\\x{212A}][\\x{17F}s]"),
            Some((
                b"i-ks".to_vec(),
                vec![0x20, 0, 0x20, 0],
                ["\u{130}", "\u{131}", "\u{212A}", "\u{17F}"]
                    .map(String::from)
                    .to_vec()
            ))
        );
        assert_eq!(
            folded("a[\\x{E9}x]"),
            Some((b"ax".to_vec(), vec![0, 0], vec!["\u{E9}".to_owned()]))
        );
        for p in [
            "abc",
            "\\x{2D}",
            "[Pp]+",
            "[PQ]",
            "[pp]",
            "[P]p",
            "[Pp",
            "[Pp]\\d",
            "(?i)[Pp]",
            "[Pp].",
            "[1!]",
            "[Pp][a-c]",
            "[Pp][\\x{E9}]",
            "[Pp][\\x{7F}-\\x{80}]",
            "[Pp][\\x{131}-\\x{130}]",
            "[Pp][Xx\\x{100}-\\x{1FF}]",
            "[Pp][Xx\\x{D800}]",
            "[Pp]\\x{E9}",
            "[Pp]\\x{A}",
            "[Pp][^x]",
            "",
        ] {
            assert_eq!(folded(p), None, "{p}");
        }
    }

    #[test]
    fn folded_alternatives_are_a_few_sequences_with_optional_tails() {
        let set = |needles: &[(&[u8], &[u8])], extras: &[&str]| FoldedSet {
            needles: needles
                .iter()
                .map(|(n, f)| (n.to_vec(), f.to_vec()))
                .collect(),
            extras: extras.iter().map(|&e| e.to_owned()).collect(),
        };
        assert_eq!(
            folded_alternatives("(?:error|warn(?:(ing))?)"),
            Some(set(&[(b"error", &[0; 5]), (b"warn", &[0; 4])], &[]))
        );
        assert_eq!(
            folded_alternatives("(?:[Aa]b|x[Ss\\x{17F}](?:y)??(z)?)"),
            Some(set(
                &[(b"ab", &[0x20, 0]), (b"xs", &[0, 0x20])],
                &["\u{17F}"]
            ))
        );
        // One alternative alone, with or without a tail.
        assert_eq!(
            folded_alternatives("warn(?:(ing))?"),
            Some(set(&[(b"warn", &[0; 4])], &[]))
        );
        assert_eq!(
            folded_alternatives("[Pp]y"),
            Some(set(&[(b"py", &[0x20, 0])], &[]))
        );
        for p in [
            "(?:ab|c)",
            "(?:ab|)",
            "(?:ab|cd|ef|gh|ij)",
            "(?:ab|cd)+",
            "(?:ab|cd)(?:ef)",
            "(?:ab|cd)x",
            "ab(?:c)",
            "ab(?:c)*",
            "ab(?:c)?x",
            "a(?:b)?c",
            "(?:a(?:b|c)d)",
            "(?:ab|c.)",
            "(?:ab|[ab]c)",
            "(?:ab|cd",
            "(?:ab|cd))",
            "ab|(?m:^)cd",
            "[Aa]\\b",
            "",
        ] {
            assert_eq!(folded_alternatives(p), None, "{p}");
        }
        // `|` inside a class or an escape does not split.
        assert_eq!(folded_alternatives("(?:a[|]b)"), None);
        assert_eq!(
            folded_alternatives("a\\x{7C}b"),
            Some(set(&[(b"a|b", &[0; 3])], &[]))
        );
    }

    fn regex(linear: Option<&str>, backtracking: &str) -> Matcher {
        Matcher::compile(MatcherSpec::Regex {
            linear: linear.map(str::to_owned),
            linear_needs_ascii_text: false,
            backtracking: backtracking.to_owned(),
            prefilter: String::new(),
            surrogate_exact: true,
            min_chars: 0,
        })
        .unwrap()
    }

    #[test]
    fn one_hit_per_line_and_scope_is_respected() {
        let idx = TextIndex::new("aa\nb\naXa\n\na").unwrap();
        let m = regex(Some("a"), "a");
        assert_eq!(m.matching_lines(&idx, 0, 4).unwrap(), vec![0, 2, 4]);
        assert_eq!(m.matching_lines(&idx, 1, 3).unwrap(), vec![2]);
        let lit = Matcher::compile(MatcherSpec::Literal(b"a".to_vec())).unwrap();
        assert_eq!(lit.matching_lines(&idx, 0, 4).unwrap(), vec![0, 2, 4]);
        assert_eq!(lit.matching_lines(&idx, 0, 3).unwrap(), vec![0, 2]);
    }

    #[test]
    fn empty_matches_at_line_ends_count_for_their_line() {
        let idx = TextIndex::new("x\n\ny").unwrap();
        let m = regex(Some("(?m:$)"), "(?m:$)");
        assert_eq!(m.matching_lines(&idx, 0, 2).unwrap(), vec![0, 1, 2]);
        let m = regex(Some("(?m:^)y"), "(?m:^)y");
        assert_eq!(m.matching_lines(&idx, 0, 2).unwrap(), vec![2]);
    }

    #[test]
    fn literal_with_newline_never_matches() {
        let idx = TextIndex::new("a\nb").unwrap();
        let m = Matcher::compile(MatcherSpec::Literal(b"a\nb".to_vec())).unwrap();
        assert!(m.matching_lines(&idx, 0, 1).unwrap().is_empty());
    }

    #[test]
    fn backtracking_runs_per_line_and_reports_its_limit() {
        let idx = TextIndex::new("ab\nac\nab").unwrap();
        let m = regex(None, "a(?=b)");
        assert_eq!(m.matching_lines(&idx, 0, 2).unwrap(), vec![0, 2]);
        let text = format!("{}!", "a".repeat(40));
        let idx = TextIndex::new(text.as_str()).unwrap();
        let m = regex(None, "(?=x)|(a|aa)*\\1$");
        assert!(matches!(
            m.matching_lines(&idx, 0, 0),
            Err(GrepError::BacktrackLimit { line: 1 })
        ));
    }

    #[test]
    fn runs_of_a_character_set() {
        let idx = TextIndex::new("abc\naaaa b\n\nxaaay").unwrap();
        let run = |min| {
            Matcher::compile(MatcherSpec::Run(CharRun {
                ranges: vec![(97, 97), (99, 99)],
                min,
                surrogate_exact: true,
            }))
            .unwrap()
        };
        assert_eq!(run(3).matching_lines(&idx, 0, 3).unwrap(), vec![1, 3]);
        assert_eq!(run(4).matching_lines(&idx, 0, 3).unwrap(), vec![1]);
        assert_eq!(run(1).matching_lines(&idx, 1, 2).unwrap(), vec![1]);
        assert!(run(40_000).matching_lines(&idx, 0, 3).unwrap().is_empty());
    }

    #[test]
    fn backtracking_budget_grows_with_the_line_up_to_a_ceiling() {
        assert_eq!(backtrack_budget(0), BACKTRACK_LIMIT);
        assert_eq!(backtrack_budget(1_000), BACKTRACK_LIMIT);
        assert!(backtrack_budget(1 << 20) >= (1 << 20) * BACKTRACK_STEPS_PER_BYTE);
        assert_eq!(backtrack_budget(usize::MAX), BACKTRACK_CEILING);
        // A back-reference tried at every position of one long line is answered.
        let line = "{\"k\": \"v\", ".repeat(40_000) + "\"same\": \"same\"}";
        let idx = TextIndex::new(line.as_str()).unwrap();
        let m = regex(None, "\"(\\w+)\":\\s*\"\\1\"");
        assert_eq!(m.matching_lines(&idx, 0, 0).unwrap(), vec![0]);
    }

    #[test]
    fn lines_shorter_than_a_match_skip_the_backtracking_engine() {
        let idx = TextIndex::new("a\naa\naaa\n\u{e9}\u{e9}").unwrap();
        let with_min = |min_chars| {
            Matcher::compile(MatcherSpec::Regex {
                linear: None,
                linear_needs_ascii_text: false,
                backtracking: "(?=)[a\u{e9}]".into(),
                prefilter: String::new(),
                surrogate_exact: true,
                min_chars,
            })
            .unwrap()
        };
        assert_eq!(
            with_min(0).matching_lines(&idx, 0, 3).unwrap(),
            vec![0, 1, 2, 3]
        );
        // Lengths are compared in bytes, never fewer than characters: "éé" is 4 bytes.
        assert_eq!(with_min(3).matching_lines(&idx, 0, 3).unwrap(), vec![2, 3]);
        assert_eq!(with_min(4).matching_lines(&idx, 0, 3).unwrap(), vec![3]);
    }

    #[test]
    fn surrogate_text_needs_a_surrogate_exact_pattern() {
        let idx = TextIndex::from_wtf8(b"a\xed\xa0\x80b".to_vec()).unwrap();
        let m = Matcher::compile(MatcherSpec::Regex {
            linear: Some("a.b".into()),
            linear_needs_ascii_text: false,
            backtracking: "a.b".into(),
            prefilter: "a.b".into(),
            surrogate_exact: true,
            min_chars: 0,
        })
        .unwrap();
        assert_eq!(m.matching_lines(&idx, 0, 0).unwrap(), vec![0]);
        let m = Matcher::compile(MatcherSpec::Regex {
            linear: Some("\u{FFFD}".into()),
            linear_needs_ascii_text: false,
            backtracking: "\u{FFFD}".into(),
            prefilter: "\u{FFFD}".into(),
            surrogate_exact: false,
            min_chars: 0,
        })
        .unwrap();
        assert_eq!(
            m.matching_lines(&idx, 0, 0),
            Err(GrepError::SurrogateAmbiguous)
        );
        let lit = Matcher::compile(MatcherSpec::Literal(b"\xed\xa0\x80".to_vec())).unwrap();
        assert_eq!(lit.matching_lines(&idx, 0, 0).unwrap(), vec![0]);
    }
}
