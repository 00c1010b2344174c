//! The terms of a short document or query: words split on case and separators, folded and
//! stemmed lightly, stop words left out; the pieces of a split word also count joined in pairs.

/// Words too common to tell documents apart (English function words and the filler of tool
/// descriptions).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "do", "does", "for", "from", "had", "has", "have", "he", "her",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on",
    "or", "our", "she", "should", "so", "some", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "too", "up", "us", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "will", "with", "would", "you", "your",
];

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Strip a plural or verb suffix, so `files`/`file` and `listing`/`list` meet.
fn stem(word: &mut String) {
    let len = word.len();
    if !word.is_ascii() || len <= 3 {
        return;
    }
    if len > 4 && word.ends_with("ies") {
        word.truncate(len - 3);
        word.push('y');
    } else if word.ends_with("sses") {
        word.truncate(len - 2);
    } else if word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        word.truncate(len - 1);
    } else if len > 5 && word.ends_with("ing") {
        word.truncate(len - 3);
    } else if len > 4 && word.ends_with("ed") {
        word.truncate(len - 2);
    }
}

fn push_term(out: &mut Vec<String>, piece: &str) {
    let mut word = piece.to_lowercase();
    if word.is_empty() || is_stop_word(&word) {
        return;
    }
    stem(&mut word);
    out.push(word);
}

/// Where a run of alphanumerics splits into words: before an upper-case letter that follows a
/// lower-case letter or digit, and before the last capital of an acronym followed by lower case.
fn split_points(run: &[(usize, char)]) -> Vec<usize> {
    let mut points = Vec::new();
    for i in 1..run.len() {
        let (previous, current) = (run[i - 1].1, run[i].1);
        let next = run.get(i + 1).map(|&(_, c)| c);
        let lower_to_upper =
            (previous.is_lowercase() || previous.is_numeric()) && current.is_uppercase();
        let acronym_end = previous.is_uppercase()
            && current.is_uppercase()
            && next.is_some_and(char::is_lowercase);
        if lower_to_upper || acronym_end {
            points.push(i);
        }
    }
    points
}

/// The terms of `text`, in order (repeats kept: they are term frequencies).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut run: Vec<(usize, char)> = Vec::new();
    let flush = |run: &mut Vec<(usize, char)>, out: &mut Vec<String>| {
        if run.is_empty() {
            return;
        }
        let start = run[0].0;
        let end = run[run.len() - 1].0 + run[run.len() - 1].1.len_utf8();
        let mut bounds = vec![start];
        bounds.extend(split_points(run).into_iter().map(|point| run[point].0));
        bounds.push(end);
        for pair in bounds.windows(2) {
            push_term(out, &text[pair[0]..pair[1]]);
        }
        // Adjacent pieces also count joined: `GitHub` is `github` as well as `git` and `hub`.
        for triple in bounds.windows(3) {
            push_term(out, &text[triple[0]..triple[2]]);
        }
        run.clear();
    };
    for (offset, c) in text.char_indices() {
        if c.is_alphanumeric() {
            run.push((offset, c));
        } else {
            flush(&mut run, &mut out);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn splits_on_separators_and_case() {
        assert_eq!(terms("list_pull_requests"), ["list", "pull", "request"]);
        assert_eq!(
            terms("getFileContents"),
            ["get", "file", "content", "getfile", "filecontent"]
        );
        assert_eq!(terms("HTTPServer"), ["http", "server", "httpserver"]);
        assert_eq!(terms("GitHub"), ["git", "hub", "github"]);
        assert_eq!(terms("s3-bucket ec2"), ["s3", "bucket", "ec2"]);
    }

    #[test]
    fn stems_and_drops_stop_words() {
        assert_eq!(
            terms("The files of the repositories"),
            ["file", "repository"]
        );
        assert_eq!(terms("listing pushed status"), ["list", "push", "status"]);
    }

    #[test]
    fn non_ascii_words_are_kept_folded() {
        assert_eq!(
            terms("Übersicht der Dateien"),
            ["übersicht", "der", "dateien"]
        );
        assert!(terms("").is_empty());
        assert!(terms("  --  ").is_empty());
    }
}
