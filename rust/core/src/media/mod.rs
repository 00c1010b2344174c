//! Media blocks counted as the providers bill them.
//!
//! [`header`] reads an image's pixel size from its first bytes, [`pdf`] a
//! PDF's page count from its page tree, [`rules`] turns those into tokens per
//! provider. [`source::Source`] lets all of them read raw bytes or base64 text
//! alike, decoding only what they look at. Nothing here fails: what cannot be
//! read costs the rule's cap.
pub mod header;
pub mod pdf;
pub mod rules;
pub mod source;

pub use rules::{Detail, Rule, RULES};
pub use source::Source;

/// Tokens of an image whose data is `source` (`None`: not available, such as an `s3Location`).
pub fn image_tokens(rule: Rule, source: Option<&mut Source<'_>>, detail: Detail) -> u32 {
    rule.image(source.and_then(header::image_size), detail)
}

/// Tokens of a document of `format` whose data is `source`.
///
/// A PDF costs its page count times the rule's per-page tokens (one page when
/// the count cannot be read); anything else, the rule's cap.
pub fn document_tokens(rule: Rule, format: &str, source: Option<&mut Source<'_>>) -> u32 {
    if format != "pdf" {
        return rule.cap(Detail::High);
    }
    let pages = source
        .and_then(|s| s.whole())
        .and_then(|data| pdf::page_count(&data))
        .unwrap_or(1)
        .max(1);
    pages
        .saturating_mul(rule.pdf_page())
        .max(rule.cap(Detail::High))
}

#[cfg(test)]
mod tests {
    use super::header::samples;
    use super::*;

    fn b64(data: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in data.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..=chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn base64_images_cost_as_their_bytes() {
        let rule = Rule::Anthropic;
        for data in [
            samples::png(1280, 800),
            samples::jpeg(2560, 1600),
            samples::webp_lossy(640, 480),
        ] {
            let text = b64(&data);
            let raw = image_tokens(rule, Some(&mut Source::raw(&data)), Detail::High);
            let enc = image_tokens(
                rule,
                Some(&mut Source::base64(text.as_bytes())),
                Detail::High,
            );
            assert_eq!(raw, enc);
            assert!(raw < rule.cap(Detail::High) || data.len() > 40);
        }
    }

    #[test]
    fn malformed_input_costs_the_cap() {
        for (_, rule) in RULES {
            let cap = rule.cap(Detail::High);
            let inputs: [&[u8]; 5] = [
                b"",
                b"\x89PNG\r\n",
                &samples::png(65535, 65535),
                b"GIF",
                b"\x00\x01\x02",
            ];
            for data in inputs {
                assert_eq!(
                    image_tokens(*rule, Some(&mut Source::raw(data)), Detail::High),
                    cap
                );
            }
            assert_eq!(
                image_tokens(
                    *rule,
                    Some(&mut Source::base64(b"**not base64**")),
                    Detail::High
                ),
                cap
            );
            assert_eq!(image_tokens(*rule, None, Detail::High), cap);
        }
    }

    #[test]
    fn pdfs_cost_their_pages_and_other_documents_the_cap() {
        let pdf = pdf::samples::pdf(4);
        assert_eq!(
            document_tokens(Rule::Anthropic, "pdf", Some(&mut Source::raw(&pdf))),
            12_000
        );
        assert_eq!(
            document_tokens(Rule::Gemini, "pdf", Some(&mut Source::raw(&pdf))),
            4_128
        );
        let text = b64(&pdf::samples::pdf(30));
        assert_eq!(
            document_tokens(
                Rule::Gemini,
                "pdf",
                Some(&mut Source::base64(text.as_bytes()))
            ),
            30 * 258
        );
        assert_eq!(
            document_tokens(Rule::Anthropic, "pdf", Some(&mut Source::raw(b"garbage"))),
            3_000
        );
        assert_eq!(document_tokens(Rule::Anthropic, "pdf", None), 3_000);
        assert_eq!(
            document_tokens(Rule::Anthropic, "docx", Some(&mut Source::raw(&pdf))),
            1_600
        );
    }
}
