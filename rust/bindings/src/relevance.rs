//! Binding of the relevance chunker and scorer (`offload_core::relevance`).
use std::borrow::Cow;

use offload_core::{rank, relevance};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::detach_checked;

fn text_of<'a>(item: &'a Bound<'_, PyString>) -> Cow<'a, str> {
    // Lone surrogates cannot be UTF-8: each becomes U+FFFD, one code point for one, so every
    // offset returned still counts the Python string's code points.
    match item.to_str() {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(item.to_string_lossy().into_owned()),
    }
}

type Chunked = (Vec<usize>, Vec<usize>, Vec<usize>, Option<Vec<f64>>);

/// `text` cut into chunks of at most `max_chars` code points (after a newline where the window
/// holds one): their start offsets, first and last lines, and with `query` their BM25 scores
/// divided by the best. With `tool_input` too, `query` is the question and the input's terms weigh
/// less (`relevance::question_and_input_scores`). The GIL is released.
#[pyfunction]
#[pyo3(signature = (text, max_chars, query=None, tool_input=None))]
fn relevance_chunks(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    max_chars: usize,
    query: Option<&Bound<'_, PyString>>,
    tool_input: Option<&Bound<'_, PyString>>,
) -> PyResult<Chunked> {
    let text = text_of(text);
    let query = query.map(text_of);
    let tool_input = tool_input.map(text_of);
    let text: &str = &text;
    let query: Option<&str> = query.as_deref();
    let tool_input: Option<&str> = tool_input.as_deref();
    detach_checked(py, || {
        let chunks = relevance::chunks(text, max_chars);
        let scores = query.map(|q| match tool_input {
            Some(input) => relevance::question_and_input_scores(q, input, text, &chunks),
            None => relevance::scores(q, text, &chunks),
        });
        let starts = chunks.iter().map(|c| c.start).collect();
        let firsts = chunks.iter().map(|c| c.first_line).collect();
        let lasts = chunks.iter().map(|c| c.last_line).collect();
        (starts, firsts, lasts, scores)
    })
}

/// A 64-bit hash of `data` (not cryptographic: it tells changed content from unchanged), with the
/// GIL released; `Offload.dedupe` compares results by it before comparing them in full.
#[pyfunction]
fn content_hash(py: Python<'_>, data: &Bound<'_, PyBytes>) -> u64 {
    let bytes = data.as_bytes();
    if bytes.len() < 64 * 1024 {
        return rank::content_hash(bytes);
    }
    py.detach(|| rank::content_hash(bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(relevance_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(content_hash, m)?)?;
    Ok(())
}
