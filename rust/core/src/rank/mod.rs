//! BM25 ranking of short documents (tool definitions, previews) against a query.
//!
//! A document's terms come from [`terms`]: runs of alphanumeric characters, split again where the
//! case turns from lower to upper (`getFileContents` -> `get`, `file`, `contents`) and inside
//! acronyms (`HTTPServer` -> `http`, `server`), lower-cased, with a light plural/verb suffix rule
//! and a short English stop-word list applied. Adjacent pieces of a split run also count joined
//! (`GitHub` -> `git`, `hub`, `github`), so a query may name a tool either way.
//!
//! An [`Index`] is built once for a list of documents and remembers a content hash per document
//! ([`content_hash`]); [`Index::matches`] tells a caller whether the list it holds is still the one
//! indexed, so the index is rebuilt only when the documents change.

mod terms;

pub use terms::terms;

use std::collections::HashMap;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's document-length normalisation.
const B: f64 = 0.75;

/// A 64-bit hash of `text`, fast enough to check a few hundred kilobytes per decision.
///
/// Not cryptographic: it tells a changed document from an unchanged one, nothing more.
pub fn content_hash(text: &[u8]) -> u64 {
    const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
    const MUL: u64 = 0xA076_1D64_78BD_642F;
    let mut state = SEED ^ (text.len() as u64).wrapping_mul(MUL);
    let mut chunks = text.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        state = mix(state ^ u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        state = mix(state ^ u64::from_le_bytes(word) ^ 0xFF);
    }
    mix(state ^ (state >> 29))
}

fn mix(value: u64) -> u64 {
    let product = u128::from(value) * u128::from(0xE703_7ED1_A0B4_28DB_u64);
    ((product >> 64) as u64) ^ (product as u64)
}

/// An inverted index of documents, scored with BM25.
#[derive(Debug, Default, Clone)]
pub struct Index {
    hashes: Vec<u64>,
    vocabulary: HashMap<String, u32>,
    /// Per term: `(document, frequency)` in document order.
    postings: Vec<Vec<(u32, u32)>>,
    lengths: Vec<u32>,
    average_length: f64,
}

impl Index {
    /// Index `documents` (each with the hash the caller will later compare, see [`Index::matches`]).
    pub fn build<S: AsRef<str>>(documents: &[S]) -> Self {
        let mut index = Index {
            hashes: Vec::with_capacity(documents.len()),
            lengths: Vec::with_capacity(documents.len()),
            ..Index::default()
        };
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for (position, document) in documents.iter().enumerate() {
            let text = document.as_ref();
            index.hashes.push(content_hash(text.as_bytes()));
            counts.clear();
            let mut length = 0u32;
            for term in terms(text) {
                let next = index.vocabulary.len() as u32;
                let id = *index.vocabulary.entry(term).or_insert(next);
                if id == next {
                    index.postings.push(Vec::new());
                }
                *counts.entry(id).or_insert(0) += 1;
                length = length.saturating_add(1);
            }
            let doc = position as u32;
            for (&id, &frequency) in &counts {
                index.postings[id as usize].push((doc, frequency));
            }
            index.lengths.push(length);
        }
        let total: f64 = index.lengths.iter().map(|&l| f64::from(l)).sum();
        index.average_length = if documents.is_empty() {
            0.0
        } else {
            total / documents.len() as f64
        };
        index
    }

    /// How many documents the index holds.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Whether `hashes` (from [`content_hash`], in order) are exactly the documents indexed.
    pub fn matches(&self, hashes: &[u64]) -> bool {
        self.hashes == hashes
    }

    /// The BM25 score of every document for `query`, in document order (0 where no term matches).
    pub fn raw_scores(&self, query: &str) -> Vec<f64> {
        let mut scores = vec![0.0; self.len()];
        if self.is_empty() {
            return scores;
        }
        let mut seen: HashMap<u32, u32> = HashMap::new();
        for term in terms(query) {
            if let Some(&id) = self.vocabulary.get(&term) {
                *seen.entry(id).or_insert(0) += 1;
            }
        }
        let documents = self.len() as f64;
        let average = if self.average_length > 0.0 {
            self.average_length
        } else {
            1.0
        };
        for (&id, &query_frequency) in &seen {
            let postings = &self.postings[id as usize];
            let containing = postings.len() as f64;
            let idf = (1.0 + (documents - containing + 0.5) / (containing + 0.5)).ln();
            let weight = idf * f64::from(query_frequency);
            for &(doc, frequency) in postings {
                let tf = f64::from(frequency);
                let length = f64::from(self.lengths[doc as usize]);
                let norm = K1 * (1.0 - B + B * length / average);
                scores[doc as usize] += weight * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        scores
    }

    /// [`Index::raw_scores`] divided by the best one: every score in `[0, 1]`, the best 1
    /// (all 0 when nothing matches).
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut scores = self.raw_scores(query);
        let best = scores.iter().copied().fold(0.0_f64, f64::max);
        if best > 0.0 {
            for score in &mut scores {
                *score /= best;
            }
        }
        scores
    }
}

/// Keeps one [`Index`] and rebuilds it only when the documents it is asked about change.
#[derive(Debug, Default, Clone)]
pub struct Ranker {
    index: Index,
    builds: u64,
}

impl Ranker {
    /// A ranker with no documents yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Scores in `[0, 1]` of `documents` for `query`, rebuilding the index first when the
    /// documents are not the ones it holds (compared by content hash, in order).
    pub fn score<S: AsRef<str>>(&mut self, query: &str, documents: &[S]) -> Vec<f64> {
        let same = self.index.len() == documents.len()
            && documents
                .iter()
                .zip(&self.index.hashes)
                .all(|(document, &hash)| content_hash(document.as_ref().as_bytes()) == hash);
        if !same {
            self.index = Index::build(documents);
            self.builds += 1;
        }
        self.index.scores(query)
    }

    /// How many times the index was built.
    pub fn builds(&self) -> u64 {
        self.builds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_match_scores_one_and_others_less() {
        let docs = [
            "read_file Read a file from the local file system",
            "create_issue Create an issue in a GitHub repository",
            "list_buckets List the storage buckets of the cloud account",
        ];
        let index = Index::build(&docs);
        let scores = index.scores("open a github issue");
        assert_eq!(scores[1], 1.0);
        assert!(scores[0] < 1.0 && scores[2] < 1.0);
        assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
    }

    #[test]
    fn no_match_is_all_zero() {
        let index = Index::build(&["alpha beta", "gamma"]);
        assert_eq!(index.scores("zeta"), vec![0.0, 0.0]);
        assert_eq!(index.scores(""), vec![0.0, 0.0]);
        assert!(Index::build::<&str>(&[]).scores("x").is_empty());
    }

    #[test]
    fn camel_case_names_match_their_words_and_whole() {
        let index = Index::build(&["getFileContents", "GitHubSearch", "other"]);
        assert_eq!(index.scores("file contents")[0], 1.0);
        assert_eq!(index.scores("github")[1], 1.0);
        assert_eq!(index.scores("hub")[1], 1.0);
    }

    #[test]
    fn ranker_rebuilds_only_on_change() {
        let mut ranker = Ranker::new();
        let docs = vec!["a tool".to_string(), "another tool".to_string()];
        ranker.score("tool", &docs);
        ranker.score("another", &docs);
        assert_eq!(ranker.builds(), 1);
        let changed = vec!["a tool".to_string(), "another tool, changed".to_string()];
        ranker.score("tool", &changed);
        assert_eq!(ranker.builds(), 2);
    }

    #[test]
    fn hash_tells_texts_apart() {
        assert_ne!(content_hash(b"abc"), content_hash(b"abd"));
        assert_ne!(content_hash(b""), content_hash(b"\0"));
        assert_ne!(content_hash(b"12345678"), content_hash(b"123456789"));
        assert_eq!(content_hash(b"same"), content_hash(b"same"));
    }
}
