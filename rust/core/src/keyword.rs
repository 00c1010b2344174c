//! Keyword overlap scoring for the storage keyword search.
//!
//! A text's words are its maximal runs of word characters, where "word character" is exactly what
//! Python's `re` matches with `\w` on `str` (letters, digits and other numerics, underscore; table
//! generated from each supported Python, see `tools/gen_word_chars.py`; one per Unicode version). The score of a text against a query is
//! the number of distinct query words that occur among the text's words. Texts are expected to be
//! lower-cased already (the caller uses Python's `str.lower()`, whose full Unicode mapping is the
//! reference's).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

mod word_chars;

/// Why a list of ranges cannot be a word table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordTableError {
    /// A range ends before it starts, overlaps or touches its predecessor, or is out of order.
    Unordered { index: usize },
    /// A range reaches past U+10FFFF.
    BeyondUnicode { index: usize },
}

impl fmt::Display for WordTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unordered { index } => {
                write!(
                    f,
                    "word table range {index} is not sorted, disjoint and low <= high"
                )
            }
            Self::BeyondUnicode { index } => {
                write!(f, "word table range {index} reaches past U+10FFFF")
            }
        }
    }
}

impl std::error::Error for WordTableError {}

#[derive(Debug, Clone)]
enum Ranges {
    Shipped(&'static [(u32, u32)]),
    Computed(Arc<[(u32, u32)]>),
}

/// Which code points are word characters (Python `re` `\w` on `str`) for one Unicode version.
///
/// Tables for the Unicode versions of CPython 3.10-3.13 are built in ([`WordTable::shipped`]);
/// any other version is described by its ranges ([`WordTable::from_ranges`]). Cloning is cheap.
#[derive(Debug, Clone)]
pub struct WordTable {
    ranges: Ranges,
}

impl WordTable {
    /// The built-in table for `unicode_version` (as `unicodedata.unidata_version` spells it).
    pub fn shipped(unicode_version: &str) -> Option<Self> {
        word_chars::SHIPPED
            .iter()
            .find(|(version, _)| *version == unicode_version)
            .map(|&(_, ranges)| Self {
                ranges: Ranges::Shipped(ranges),
            })
    }

    /// The Unicode versions that have a built-in table, oldest first.
    pub fn shipped_versions() -> impl Iterator<Item = &'static str> {
        word_chars::SHIPPED.iter().map(|&(version, _)| version)
    }

    /// A table from sorted, disjoint, inclusive code-point ranges.
    pub fn from_ranges(ranges: Vec<(u32, u32)>) -> Result<Self, WordTableError> {
        let mut previous_high: Option<u32> = None;
        for (index, &(low, high)) in ranges.iter().enumerate() {
            if high > 0x10FFFF {
                return Err(WordTableError::BeyondUnicode { index });
            }
            if low > high || previous_high.is_some_and(|previous| low <= previous) {
                return Err(WordTableError::Unordered { index });
            }
            previous_high = Some(high);
        }
        Ok(Self {
            ranges: Ranges::Computed(ranges.into()),
        })
    }

    /// The table's inclusive code-point ranges, sorted (code points under 0x80
    /// are decided by the ASCII rule, whatever the ranges say).
    pub fn ranges(&self) -> &[(u32, u32)] {
        match &self.ranges {
            Ranges::Shipped(ranges) => ranges,
            Ranges::Computed(ranges) => ranges,
        }
    }

    /// Number of ranges in the table.
    pub fn range_count(&self) -> usize {
        self.ranges().len()
    }

    /// Whether `c` is a word character in Python `re`'s Unicode sense.
    pub fn is_word_char(&self, c: char) -> bool {
        let code = c as u32;
        if code < 0x80 {
            return c.is_ascii_alphanumeric() || c == '_';
        }
        self.ranges()
            .binary_search_by(|&(low, high)| {
                if high < code {
                    std::cmp::Ordering::Less
                } else if low > code {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    /// Iterate over the words of `text` (maximal runs of word characters), in order.
    pub fn words<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut rest = text;
        std::iter::from_fn(move || {
            let start = rest.char_indices().find(|&(_, c)| self.is_word_char(c))?.0;
            let tail = &rest[start..];
            let end = tail
                .char_indices()
                .find(|&(_, c)| !self.is_word_char(c))
                .map_or(tail.len(), |(index, _)| index);
            let (word, remaining) = tail.split_at(end);
            rest = remaining;
            Some(word)
        })
    }
}

/// A query's distinct words, ready to score many texts.
#[derive(Debug, Clone)]
pub struct KeywordQuery {
    slots: HashMap<String, usize>,
    table: WordTable,
}

impl KeywordQuery {
    /// Build a query from its (already lower-cased, de-duplicated or not) words; texts are split
    /// into words with `table`.
    pub fn new<I, S>(query_words: I, table: WordTable) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut slots = HashMap::new();
        for word in query_words {
            let next = slots.len();
            slots.entry(word.into()).or_insert(next);
        }
        Self { slots, table }
    }

    /// Number of distinct query words.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the query has no words (every score is then 0).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Count the distinct query words occurring as words in any of `texts`.
    pub fn score<'t, I>(&self, texts: I) -> usize
    where
        I: IntoIterator<Item = &'t str>,
    {
        let wanted = self.slots.len();
        if wanted == 0 {
            return 0;
        }
        let mut seen = vec![false; wanted];
        let mut found = 0;
        for text in texts {
            for word in self.table.words(text) {
                if let Some(&slot) = self.slots.get(word) {
                    if !seen[slot] {
                        seen[slot] = true;
                        found += 1;
                        if found == wanted {
                            return found;
                        }
                    }
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> WordTable {
        WordTable::shipped("14.0.0").expect("shipped")
    }

    #[test]
    fn word_characters_follow_python_re() {
        for version in WordTable::shipped_versions() {
            let table = WordTable::shipped(version).expect("listed");
            for c in ['a', 'Z', '0', '_', 'é', 'ß', '²', '日', 'Ⅻ', 'ǅ'] {
                assert!(table.is_word_char(c), "{c:?} should be a word character");
            }
            for c in [' ', '-', '.', '/', '\u{301}', '🙂', '\u{345}', '\u{a0}'] {
                assert!(
                    !table.is_word_char(c),
                    "{c:?} should not be a word character"
                );
            }
        }
    }

    #[test]
    fn tables_follow_their_unicode_version() {
        // U+1E290 TOTO LETTER PA: Unicode 14.0; U+11F04 KAWI LETTER A: 15.0; U+2EBF0 CJK Ext. I: 15.1.
        let cases = [
            ('\u{1E290}', "14.0.0"),
            ('\u{11F04}', "15.0.0"),
            ('\u{2EBF0}', "15.1.0"),
        ];
        for (c, since) in cases {
            for version in WordTable::shipped_versions() {
                let table = WordTable::shipped(version).expect("listed");
                assert_eq!(
                    table.is_word_char(c),
                    version >= since,
                    "{c:?} in Unicode {version}"
                );
            }
        }
        assert!(WordTable::shipped("16.0.0").is_none());
    }

    #[test]
    fn computed_tables_are_checked() {
        let table = WordTable::from_ranges(vec![(0x100, 0x101), (0x200, 0x200)]).expect("valid");
        assert!(
            table.is_word_char('\u{101}')
                && !table.is_word_char('\u{102}')
                && table.is_word_char('a')
        );
        assert_eq!(table.range_count(), 2);
        assert_eq!(
            WordTable::from_ranges(vec![(5, 9), (9, 10)]).unwrap_err(),
            WordTableError::Unordered { index: 1 }
        );
        assert_eq!(
            WordTable::from_ranges(vec![(5, 0x110000)]).unwrap_err(),
            WordTableError::BeyondUnicode { index: 0 }
        );
    }

    #[test]
    fn words_are_maximal_runs() {
        let table = table();
        let found: Vec<&str> = table.words("  oauth2-flow/é_x  ²  ").collect();
        assert_eq!(found, vec!["oauth2", "flow", "é_x", "²"]);
        assert_eq!(table.words("").count(), 0);
        assert_eq!(table.words("--").count(), 0);
    }

    #[test]
    fn score_counts_distinct_query_words_across_texts() {
        let query = KeywordQuery::new(["alpha", "beta", "gamma", "alpha"], table());
        assert_eq!(query.len(), 3);
        assert_eq!(query.score(["alpha alpha", "beta-x"]), 2);
        assert_eq!(query.score(["alphabet"]), 0);
        assert_eq!(query.score(["gamma beta alpha"]), 3);
        assert_eq!(
            KeywordQuery::new(Vec::<String>::new(), table()).score(["alpha"]),
            0
        );
    }
}
