//! A PDF's page count, read from its page tree without parsing the file.
//!
//! The root of the page tree is a `/Type /Pages` dictionary whose `/Count` is
//! the number of pages; intermediate nodes carry the counts of their subtrees,
//! so the largest `/Count` of any `/Pages` dictionary is the page count. A
//! linearized file also states it at its start (`/Linearized ... /N <pages>`).
//! When the page tree sits in a compressed object stream neither is visible;
//! then the `/Type /Page` leaves that are visible are counted, and with none
//! the count is unknown (the caller's fallback). The scan is linear in the
//! bytes and looks at no more than [`MAX_SCAN`] of them; a count above
//! [`MAX_PAGES`] is clamped to it.
use memchr::memmem;

/// Bytes of a PDF looked at, at most (the page tree of a larger file is
/// looked for in its first and last halves of this).
pub const MAX_SCAN: usize = 64 << 20;

/// The largest page count reported (beyond any provider's per-request limit).
pub const MAX_PAGES: u32 = 1_000;

/// How far from `/Type /Pages` its dictionary's `<<` and `>>` are looked for.
const DICT_REACH: usize = 8 << 10;

/// `/Pages` dictionaries read at most (the work per file stays bounded
/// whatever it repeats).
const MAX_DICTS: u32 = 1_024;

/// The page count of the PDF `data` (clamped to [`MAX_PAGES`]), or `None` when it cannot be read.
pub fn page_count(data: &[u8]) -> Option<u32> {
    if !data.starts_with(b"%PDF-") {
        return None;
    }
    if data.len() > MAX_SCAN {
        let half = MAX_SCAN / 2;
        let head = page_count_in(&data[..half]);
        let tail = page_count_in(&data[data.len() - half..]);
        return head.max(tail);
    }
    page_count_in(data)
}

fn page_count_in(data: &[u8]) -> Option<u32> {
    let mut best: Option<u32> = None;
    if let Some(n) = linearized_pages(data) {
        best = Some(n);
    }
    let mut leaves = 0u32;
    let mut dicts = 0u32;
    for at in memmem::find_iter(data, b"/Type") {
        let rest = skip_space(&data[at + 5..]);
        if let Some(after) = rest.strip_prefix(b"/Pages") {
            if after.first().is_some_and(|c| is_name_char(*c)) {
                continue;
            }
            if dicts == MAX_DICTS {
                continue;
            }
            dicts += 1;
            if let Some(count) = count_in_dict(data, at) {
                best = Some(best.map_or(count, |b| b.max(count)));
            }
        } else if let Some(after) = rest.strip_prefix(b"/Page") {
            if !after.first().is_some_and(|c| is_name_char(*c)) {
                leaves = leaves.saturating_add(1);
            }
        }
    }
    let found = best.or((leaves > 0).then_some(leaves))?;
    Some(found.min(MAX_PAGES))
}

fn is_name_char(c: u8) -> bool {
    !(c.is_ascii_whitespace() || b"/<>[]()%{}".contains(&c))
}

fn skip_space(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    &s[start..]
}

/// The `/Count` of the dictionary around `at` (between its nearest `<<` before and `>>` after).
fn count_in_dict(data: &[u8], at: usize) -> Option<u32> {
    let from = at.saturating_sub(DICT_REACH);
    let open = from + memmem::rfind(&data[from..at], b"<<")?;
    let to = data.len().min(at + DICT_REACH);
    let close = at + memmem::find(&data[at..to], b">>")?;
    number_after(&data[open..close], b"/Count")
}

/// The integer following `key` in `dict`, if any.
fn number_after(dict: &[u8], key: &[u8]) -> Option<u32> {
    for at in memmem::find_iter(dict, key) {
        let rest = &dict[at + key.len()..];
        if rest.first().is_some_and(|c| is_name_char(*c)) {
            continue; // a longer name that starts the same
        }
        let rest = skip_space(rest);
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let mut n: u32 = 0;
        for &c in &rest[..digits] {
            n = n.saturating_mul(10).saturating_add(u32::from(c - b'0'));
        }
        return Some(n);
    }
    None
}

/// `/N` of a linearization dictionary in the first kilobyte.
fn linearized_pages(data: &[u8]) -> Option<u32> {
    let head = &data[..data.len().min(1024)];
    let at = memmem::find(head, b"/Linearized")?;
    let close = at + memmem::find(&head[at..], b">>")?;
    number_after(&head[at..close], b"/N")
}

#[cfg(test)]
pub(crate) mod samples {
    /// A PDF of `pages` pages in one flat page tree, as a simple writer makes it.
    pub fn pdf(pages: u32) -> Vec<u8> {
        let mut s = String::from("%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n");
        let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", i + 3)).collect();
        s += &format!(
            "2 0 obj\n<< /Type /Pages /Kids [{}] /Count {} >>\nendobj\n",
            kids.join(" "),
            pages
        );
        for i in 0..pages {
            s += &format!(
                "{} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\n",
                i + 3
            );
        }
        s += "trailer\n<< /Root 1 0 R >>\n%%EOF\n";
        s.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::samples::pdf;
    use super::*;

    #[test]
    fn flat_page_trees_are_counted() {
        for n in [1, 2, 7, 30] {
            assert_eq!(page_count(&pdf(n)), Some(n));
        }
    }

    #[test]
    fn nested_page_trees_count_the_root() {
        let s = "%PDF-1.7\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n\
                 2 0 obj<</Type/Pages/Kids[3 0 R 4 0 R]/Count 12>>endobj\n\
                 3 0 obj<</Type/Pages/Parent 2 0 R/Count 5/Kids[]>>endobj\n\
                 4 0 obj<</Count 7/Type /Pages/Parent 2 0 R/Kids[]>>endobj\n%%EOF";
        assert_eq!(page_count(s.as_bytes()), Some(12));
    }

    #[test]
    fn linearized_files_state_their_pages() {
        let s = "%PDF-1.5\n%\u{e2}\u{e3}\n1 0 obj <</Linearized 1/L 9000/N 41/T 8000>> endobj\n\
                 5 0 obj <</Type/ObjStm/N 3/First 20/Filter/FlateDecode>>stream\nxx\nendstream";
        assert_eq!(page_count(s.as_bytes()), Some(41));
    }

    #[test]
    fn page_leaves_are_counted_when_no_tree_root_is_visible() {
        let s =
            "%PDF-1.5\n3 0 obj<</Type/Page>>endobj 4 0 obj<</Type /Page /Parent 9 0 R>>endobj\n\
                 5 0 obj<</Type/PageLabel>>endobj";
        assert_eq!(page_count(s.as_bytes()), Some(2));
    }

    #[test]
    fn malformed_or_hostile_files_are_unknown_or_clamped() {
        assert_eq!(page_count(b""), None);
        assert_eq!(page_count(b"%PDF-1.4\n"), None);
        assert_eq!(page_count(b"not a pdf /Type /Pages /Count 3"), None);
        assert_eq!(page_count(b"%PDF-1.4 << /Type /Pages /Count >>"), None);
        assert_eq!(
            page_count(b"%PDF-1.4 << /Type /Pages /Count 99999999999999999999 >>"),
            Some(MAX_PAGES)
        );
        assert_eq!(page_count(b"%PDF-1.4 /Type /Pages /Count 4"), None);
        let mut cut = pdf(5);
        cut.truncate(60);
        assert_eq!(page_count(&cut), None);
    }
}
