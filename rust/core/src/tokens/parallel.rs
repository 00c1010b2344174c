//! Counting one long text, or many texts, on several cores.
//!
//! The byte-pair encoder works inside pre-tokenizer pieces, so a text cut at piece
//! boundaries counts as the sum of its parts. Whether a position is a boundary depends
//! in general on the text before it, so cuts are only made where no piece of either
//! encoding's regex can straddle them, whatever precedes (see [`is_safe_cut`]). Each
//! part is scanned with the whole text in view (the lookahead of `\s+(?!\S)` must see
//! past the cut) and has to stop exactly at its end; a part that overruns would prove a
//! cut wrong, and the text is then counted in one pass, so counts never depend on it.
//!
//! Threads are a speed-up only: where the OS refuses one (a process or container
//! thread limit, no memory for its stack), its share is counted on the calling
//! thread, with the same result.

use std::io;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::{self, Scope, ScopedJoinHandle};

use super::{count_span, Bpe};

/// Texts shorter than this are counted on one thread: below it the second thread's
/// start-up and the cache misses of a cold core cost more than they save.
pub const PARALLEL_MIN_BYTES: usize = 128 * 1024;

/// Worker threads the machine offers (looked up once; the query reads cgroup files).
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether no pre-tokenizer piece of cl100k_base or o200k_base can hold both the
/// character before byte `p` and the one at `p`, so the pieces of any text split at `p`.
///
/// Against the alternatives listed in `split.rs` (`\s` is Unicode White_Space, the same
/// set as [`char::is_whitespace`]):
/// * `\n` then a non-space character other than `/`: inside a piece a newline is only
///   followed by `[\r\n]` (or `/` in o200k's punctuation run) or by more whitespace;
///   the one-character prefix of a letter run excludes newlines.
/// * a non-space character then a space or tab: inside a piece a non-space character
///   is only followed by non-space characters or by `\r`, `\n`; a leading space (before
///   a letter or punctuation run) is always first in its piece.
/// * an ASCII non-digit then an ASCII digit: digits only occur in `\p{N}{1,3}`.
#[inline]
pub fn is_safe_cut(b: &[u8], p: usize) -> bool {
    if p == 0 || p >= b.len() {
        return false;
    }
    let (a, c) = (b[p - 1], b[p]);
    match c {
        b' ' | b'\t' => !char_before(b, p).is_some_and(char::is_whitespace),
        b'0'..=b'9' => a < 0x80 && !a.is_ascii_digit(),
        _ if a == b'\n' => char_at(b, p).is_some_and(|c| !c.is_whitespace() && c != '/'),
        _ => false,
    }
}

/// The character starting at byte `p`, if a character starts there.
fn char_at(b: &[u8], p: usize) -> Option<char> {
    let len = match b[p] {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return None,
    };
    std::str::from_utf8(b.get(p..p + len)?).ok()?.chars().next()
}

/// The character ending just before byte `p`.
fn char_before(b: &[u8], p: usize) -> Option<char> {
    let start = (p.saturating_sub(4)..p)
        .rev()
        .find(|&i| b[i] & 0xC0 != 0x80)?;
    std::str::from_utf8(&b[start..p]).ok()?.chars().next()
}

/// A safe cut in `lo..hi`, the one nearest after `target` if there is one, else the
/// nearest before it.
fn safe_cut_near(b: &[u8], target: usize, lo: usize, hi: usize) -> Option<usize> {
    (target..hi)
        .find(|&p| is_safe_cut(b, p))
        .or_else(|| (lo..target).rev().find(|&p| is_safe_cut(b, p)))
}

/// Start `f` on a new thread of `scope`; `Err` when the OS refuses the thread
/// (`Scope::spawn` would panic instead).
fn try_spawn<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> io::Result<ScopedJoinHandle<'scope, T>> {
    #[cfg(test)]
    if refusals::refuse_next() {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "thread refused by the test",
        ));
    }
    thread::Builder::new().spawn_scoped(scope, f)
}

/// The result of a thread, its panic (an allocation failure among them) going on
/// in the caller.
fn join<T>(handle: ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|e| resume_unwind(e))
}

/// Part bounds `0 = c0 < c1 < ... < ck = len` for about `parts` equal parts, cut only at
/// safe positions (fewer parts when the text has too few of them).
pub fn cut_points(b: &[u8], parts: usize) -> Vec<usize> {
    let n = b.len();
    let mut cuts = vec![0];
    for i in 1..parts.max(1) {
        let prev = cuts[cuts.len() - 1];
        let target = (n / parts * i).max(prev + 1);
        let next_target = n / parts * (i + 1);
        if target >= n {
            break;
        }
        if let Some(c) = safe_cut_near(b, target, prev + 1, next_target.min(n)) {
            cuts.push(c);
        }
    }
    cuts.push(n);
    cuts.dedup();
    cuts
}

/// Exact count of `text` split into about `parts` parts counted on their own threads
/// (the calling thread takes the first, and any part whose thread the OS refused).
/// `parts <= 1` counts in one pass.
pub fn count_in_parts(text: &str, bpe: Bpe, parts: usize) -> usize {
    let whole = || count_span(text, bpe, 0, text.len()).unwrap_or(0);
    if parts <= 1 {
        return whole();
    }
    let cuts = cut_points(text.as_bytes(), parts);
    if cuts.len() <= 2 {
        return whole();
    }
    let spans: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let counts: Option<usize> = thread::scope(|s| {
        // A refused thread leaves its span for the calling thread, counted below.
        let rest: Vec<_> = spans[1..]
            .iter()
            .map(|&(a, z)| try_spawn(s, move || count_span(text, bpe, a, z)).map_err(|_| (a, z)))
            .collect();
        let first = count_span(text, bpe, spans[0].0, spans[0].1);
        let rest = rest.into_iter().map(|part| match part {
            Ok(handle) => join(handle),
            Err((a, z)) => count_span(text, bpe, a, z),
        });
        std::iter::once(first).chain(rest).sum()
    });
    // `None`: a part overran its end, so a cut was not a boundary (never expected).
    counts.unwrap_or_else(whole)
}

/// Counts many texts over up to `threads` threads: long texts one after the other, each
/// split over all threads; the others handed out one at a time to whichever thread is
/// free, so a few long texts among short ones do not leave a core idle. Helpers the OS
/// refuses are not waited for: the calling thread takes what they would have.
pub fn count_batch(texts: &[&str], bpe: Bpe, threads: usize) -> Vec<usize> {
    let threads = threads.max(1);
    let total: usize = texts.iter().map(|t| t.len()).sum();
    if threads == 1 || total < PARALLEL_MIN_BYTES {
        return texts.iter().map(|t| count_in_parts(t, bpe, 1)).collect();
    }
    let long = |t: &str| t.len() >= PARALLEL_MIN_BYTES * threads;
    let mut out: Vec<usize> = texts
        .iter()
        .map(|t| {
            if long(t) {
                count_in_parts(t, bpe, threads)
            } else {
                0
            }
        })
        .collect();
    let short: Vec<usize> = (0..texts.len()).filter(|&i| !long(texts[i])).collect();
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, usize)> = thread::scope(|s| {
        let work = || {
            let mut mine = Vec::new();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = short.get(k) else { break mine };
                mine.push((i, count_in_parts(texts[i], bpe, 1)));
            }
        };
        // Stop asking after the first refusal: the next would be refused too.
        let helpers: Vec<_> = (1..threads.min(short.len()))
            .map_while(|_| try_spawn(s, work).ok())
            .collect();
        let mut all = work();
        for h in helpers {
            all.extend(join(h));
        }
        all
    });
    for (i, n) in done {
        out[i] = n;
    }
    out
}

/// Refused spawns on demand, for the tests of the fallback (per test thread).
#[cfg(test)]
mod refusals {
    use std::cell::Cell;

    thread_local! {
        /// Spawns still granted before every further one is refused; `None`: all granted.
        static GRANT: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Grant `n` more spawns on this thread, then refuse (`None`: grant all).
    pub fn grant(n: Option<usize>) {
        GRANT.with(|g| g.set(n));
    }

    pub fn refuse_next() -> bool {
        GRANT.with(|g| match g.get() {
            None => false,
            Some(0) => true,
            Some(n) => {
                g.set(Some(n - 1));
                false
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Pieces;

    const BPES: [Bpe; 2] = [Bpe::Cl100kBase, Bpe::O200kBase];

    /// Byte offsets where the sequential pre-tokenizer starts a piece.
    fn boundaries(text: &str, bpe: Bpe) -> Vec<usize> {
        let mut at = vec![0];
        for p in Pieces::new(text, bpe) {
            at.push(at[at.len() - 1] + p.len());
        }
        at
    }

    /// Random strings over characters that meet at every kind of piece edge.
    fn random_texts(count: usize, max_len: u64) -> Vec<String> {
        const ALPHABET: &[&str] = &[
            "a",
            "Z",
            "s",
            "S",
            "t",
            "l",
            "L",
            "e",
            "r",
            "v",
            "m",
            "d",
            "'",
            "1",
            "2",
            "3",
            " ",
            " ",
            " ",
            "\t",
            "\n",
            "\n",
            "\r",
            "\x0b",
            ".",
            "/",
            "-",
            "{",
            "\"",
            "+",
            "=",
            "\u{e9}",
            "\u{a0}",
            "\u{663}",
            "\u{4e16}",
            "\u{3002}",
            "\u{301}",
            "\u{17f}",
            "\u{1f389}",
            "\u{85}",
            "\u{3000}",
            "\u{2028}",
        ];
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        (0..count)
            .map(|_| {
                let len = next() % max_len;
                (0..len)
                    .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                    .collect()
            })
            .collect()
    }

    #[test]
    fn safe_cuts_are_piece_boundaries() {
        for text in random_texts(20_000, 40) {
            let b = text.as_bytes();
            for bpe in BPES {
                let bounds = boundaries(&text, bpe);
                for p in 0..=b.len() {
                    if is_safe_cut(b, p) {
                        assert!(bounds.contains(&p), "{bpe:?} {text:?} cut at {p}");
                    }
                }
            }
        }
    }

    #[test]
    fn parts_sum_to_the_sequential_count() {
        let samples = [
            "def f(x):\n    return x  + 1\n\n\n# it's 2026\nclass A:\n\tpass\n".repeat(40),
            "They'll say it's fine.  Don't   worry\n\n  12345 67 8\n".repeat(40),
            "\u{4e16}\u{754c}\u{3002}\n\u{4f60}\u{597d} 123\n".repeat(60),
            "QUJD+ZGVm/9876543210aGlqa2xt==\nbm9w\n".repeat(50),
            "a  1  b\t\t2\n \n3 's 'S x'll\r\n4".repeat(50),
        ];
        let mut texts: Vec<String> = samples.to_vec();
        texts.extend(random_texts(300, 400));
        for text in &texts {
            for bpe in BPES {
                let whole = count_in_parts(text, bpe, 1);
                for parts in 2..=7 {
                    assert_eq!(
                        count_in_parts(text, bpe, parts),
                        whole,
                        "{bpe:?} {parts} {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn cut_points_are_safe_and_ordered() {
        let text = "word 12\nline\n".repeat(1000);
        for parts in 1..=9 {
            let cuts = cut_points(text.as_bytes(), parts);
            assert_eq!((cuts[0], cuts[cuts.len() - 1]), (0, text.len()));
            assert!(cuts.len() <= parts + 1);
            assert!(cuts.windows(2).all(|w| w[0] < w[1]));
            for &c in &cuts[1..cuts.len() - 1] {
                assert!(is_safe_cut(text.as_bytes(), c));
            }
        }
        // No safe position: one part.
        assert_eq!(cut_points("abcdefgh".as_bytes(), 4), vec![0, 8]);
        assert_eq!(cut_points(b"", 2), vec![0]);
    }

    #[test]
    fn tricky_pairs() {
        let cut = |s: &str, p: usize| is_safe_cut(s.as_bytes(), p);
        assert!(cut("a\nb", 2) && cut("x 1", 2) && cut("x.1", 2) && cut("a b", 1));
        // A newline before '/' can sit in o200k's `[\r\n/]*`; before a space or another
        // newline in a whitespace run; a digit after a digit in `\p{N}{1,3}`.
        assert!(!cut(".\n/", 2) && !cut("\n b", 1) && !cut("\n\n", 1) && !cut("12", 1));
        // A punctuation run takes trailing newlines; a space is a letter run's prefix.
        assert!(!cut(".\n", 1) && !cut(" b", 1) && !cut("'s", 1));
        // Non-ASCII neighbours: CJK after a newline or before a space is fine, Unicode
        // whitespace is not, nor a cut inside a character.
        assert!(cut("\n\u{4e16}", 1) && cut("\u{4e16} ", 3) && cut("\u{3002}\t", 3));
        assert!(!cut("\n\u{3000}", 1) && !cut("\u{3000} ", 3) && !cut("\n\u{85}", 1));
        assert!(!cut("\n\u{4e16}", 2) && !cut("\u{663}1", 2));
    }

    #[test]
    fn span_past_a_non_boundary_is_rejected() {
        assert_eq!(count_span("hello world", Bpe::Cl100kBase, 0, 2), None);
        assert_eq!(count_span("hello world", Bpe::Cl100kBase, 0, 5), Some(1));
    }

    #[test]
    fn batch_matches_serial() {
        let mut owned: Vec<String> = (0..200).map(|i| format!("line {i} ").repeat(100)).collect();
        owned.push("long text 12\n".repeat(60_000));
        owned.push(String::new());
        let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
        for bpe in BPES {
            let serial: Vec<usize> = texts.iter().map(|t| count_in_parts(t, bpe, 1)).collect();
            for threads in 1..=3 {
                assert_eq!(count_batch(&texts, bpe, threads), serial);
            }
        }
    }

    #[test]
    fn refused_threads_leave_their_work_to_the_caller() {
        let text = "fn main() {\n    let x = 42;\n}\n// it's 2026\n".repeat(4000);
        let mut owned: Vec<String> = (0..50).map(|i| format!("word {i} ").repeat(50)).collect();
        owned.push("long text 12\n".repeat(40_000));
        let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
        for bpe in BPES {
            let whole = count_in_parts(&text, bpe, 1);
            let serial: Vec<usize> = texts.iter().map(|t| count_in_parts(t, bpe, 1)).collect();
            for granted in 0..4 {
                refusals::grant(Some(granted));
                let parts = count_in_parts(&text, bpe, 5);
                refusals::grant(Some(granted));
                let batch = count_batch(&texts, bpe, 4);
                refusals::grant(None);
                assert_eq!(parts, whole, "{bpe:?} granted {granted}");
                assert_eq!(batch, serial, "{bpe:?} granted {granted}");
            }
        }
    }
}
