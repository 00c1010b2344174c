//! Keyword overlap scoring for the storage keyword search.
//!
//! A text's words are its maximal runs of word characters, where "word character" is exactly what
//! Python's `re` matches with `\w` on `str` (letters, digits and other numerics, underscore; table
//! generated from Python, see `tools/gen_word_chars.py`). The score of a text against a query is
//! the number of distinct query words that occur among the text's words. Texts are expected to be
//! lower-cased already (the caller uses Python's `str.lower()`, whose full Unicode mapping is the
//! reference's).

use std::collections::HashMap;

mod word_chars;

/// Whether `c` is a word character in Python `re`'s Unicode sense.
pub fn is_word_char(c: char) -> bool {
    let code = c as u32;
    if code < 0x80 {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    word_chars::WORD_RANGES
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
pub fn words(text: &str) -> impl Iterator<Item = &str> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.char_indices().find(|&(_, c)| is_word_char(c))?.0;
        let tail = &rest[start..];
        let end = tail
            .char_indices()
            .find(|&(_, c)| !is_word_char(c))
            .map_or(tail.len(), |(index, _)| index);
        let (word, remaining) = tail.split_at(end);
        rest = remaining;
        Some(word)
    })
}

/// A query's distinct words, ready to score many texts.
#[derive(Debug, Clone)]
pub struct KeywordQuery {
    slots: HashMap<String, usize>,
}

impl KeywordQuery {
    /// Build a query from its (already lower-cased, de-duplicated or not) words.
    pub fn new<I, S>(query_words: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut slots = HashMap::new();
        for word in query_words {
            let next = slots.len();
            slots.entry(word.into()).or_insert(next);
        }
        Self { slots }
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
            for word in words(text) {
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

    #[test]
    fn word_characters_follow_python_re() {
        for c in ['a', 'Z', '0', '_', 'é', 'ß', '²', '日', 'Ⅻ', 'ǅ'] {
            assert!(is_word_char(c), "{c:?} should be a word character");
        }
        for c in [' ', '-', '.', '/', '\u{301}', '🙂', '\u{345}', '\u{a0}'] {
            assert!(!is_word_char(c), "{c:?} should not be a word character");
        }
    }

    #[test]
    fn words_are_maximal_runs() {
        let found: Vec<&str> = words("  oauth2-flow/é_x  ²  ").collect();
        assert_eq!(found, vec!["oauth2", "flow", "é_x", "²"]);
        assert_eq!(words("").count(), 0);
        assert_eq!(words("--").count(), 0);
    }

    #[test]
    fn score_counts_distinct_query_words_across_texts() {
        let query = KeywordQuery::new(["alpha", "beta", "gamma", "alpha"]);
        assert_eq!(query.len(), 3);
        assert_eq!(query.score(["alpha alpha", "beta-x"]), 2);
        assert_eq!(query.score(["alphabet"]), 0);
        assert_eq!(query.score(["gamma beta alpha"]), 3);
        assert_eq!(KeywordQuery::new(Vec::<String>::new()).score(["alpha"]), 0);
    }
}
