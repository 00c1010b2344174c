//! Media blocks counted as providers bill them (`offload_core::media`): the
//! walk over messages and blocks reads Python objects here, the header
//! reading, page counting and rules are the core's.
//!
//! Nothing raises on content: an image or document that cannot be read costs
//! the rule's cap, and a value of an unexpected shape where a block should be
//! costs nothing (it is not media). Only an unknown rule name or `detail` is
//! a `ValueError` (a caller's mistake, not the content's).
use offload_core::media::{self, Detail, Rule, Source, RULES};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

struct Keys {
    content: Py<PyString>,
    image: Py<PyString>,
    document: Py<PyString>,
    video: Py<PyString>,
    tool_result: Py<PyString>,
    source: Py<PyString>,
    bytes: Py<PyString>,
    format: Py<PyString>,
}

fn keys(py: Python<'_>) -> &Keys {
    static KEYS: PyOnceLock<Keys> = PyOnceLock::new();
    KEYS.get_or_init(py, || {
        let k = |s: &str| PyString::intern(py, s).unbind();
        Keys {
            content: k("content"),
            image: k("image"),
            document: k("document"),
            video: k("video"),
            tool_result: k("toolResult"),
            source: k("source"),
            bytes: k("bytes"),
            format: k("format"),
        }
    })
}

fn rule_named(name: &str) -> PyResult<Rule> {
    Rule::named(name).ok_or_else(|| {
        let names: Vec<&str> = RULES.iter().map(|(n, _)| *n).collect();
        PyValueError::new_err(format!(
            "unknown media rule {name:?}; expected one of {}",
            names.join(", ")
        ))
    })
}

fn detail_named(name: &str) -> PyResult<Detail> {
    match name {
        "high" | "auto" => Ok(Detail::High),
        "low" => Ok(Detail::Low),
        _ => Err(PyValueError::new_err(format!(
            "detail must be 'high', 'auto' or 'low', not {name:?}"
        ))),
    }
}

/// The data of `value` (bytes, or base64 text); `None` for anything else.
fn with_source<R>(
    value: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce(Option<&mut Source<'_>>) -> R,
) -> R {
    if let Some(value) = value {
        if let Ok(bytes) = value.cast::<PyBytes>() {
            return f(Some(&mut Source::raw(bytes.as_bytes())));
        }
        if let Ok(text) = value.cast::<PyString>() {
            if let Ok(text) = text.to_str() {
                return f(Some(&mut Source::base64(text.as_bytes())));
            }
        }
    }
    f(None)
}

fn get<'py>(d: &Bound<'py, PyAny>, key: &Py<PyString>) -> Option<Bound<'py, PyAny>> {
    d.cast::<PyDict>().ok()?.get_item(key).ok().flatten()
}

/// `value["source"]["bytes"]`, when there.
fn source_bytes<'py>(value: &Bound<'py, PyAny>, k: &Keys) -> Option<Bound<'py, PyAny>> {
    get(&get(value, &k.source)?, &k.bytes)
}

/// Tokens of one content block: an image, a document, a video, or the media of a tool result.
fn block_tokens(block: &Bound<'_, PyAny>, rule: Rule, k: &Keys) -> u64 {
    let Ok(dict) = block.cast::<PyDict>() else {
        return 0;
    };
    if dict.is_empty() {
        return 0;
    }
    if let Some(image) = get(block, &k.image) {
        let data = source_bytes(&image, k);
        return u64::from(with_source(data.as_ref(), |s| {
            media::image_tokens(rule, s, Detail::High)
        }));
    }
    if let Some(document) = get(block, &k.document) {
        let format = get(&document, &k.format);
        let format = format.as_ref().and_then(|f| {
            f.cast::<PyString>()
                .ok()
                .and_then(|s| s.to_str().ok().map(str::to_owned))
        });
        let data = source_bytes(&document, k);
        return u64::from(with_source(data.as_ref(), |s| {
            media::document_tokens(rule, format.as_deref().unwrap_or(""), s)
        }));
    }
    if get(block, &k.video).is_some() {
        return u64::from(rule.cap(Detail::High));
    }
    if let Some(result) = get(block, &k.tool_result) {
        if let Some(content) = get(&result, &k.content) {
            if let Ok(items) = content.cast::<PyList>() {
                return items
                    .iter()
                    .filter(|item| get(item, &k.tool_result).is_none())
                    .map(|item| block_tokens(&item, rule, k))
                    .sum();
            }
        }
    }
    0
}

/// Tokens of the media in `messages` (images, documents, videos, top level or in tool results)
/// under the media rule `rule`.
#[pyfunction]
fn media_tokens(messages: &Bound<'_, PyAny>, rule: &str) -> PyResult<u64> {
    let rule = rule_named(rule)?;
    let k = keys(messages.py());
    let Ok(messages) = messages.cast::<PyList>() else {
        return Ok(0);
    };
    let mut total = 0u64;
    for message in messages.iter() {
        let Some(content) = get(&message, &k.content) else {
            continue;
        };
        if let Ok(blocks) = content.cast::<PyList>() {
            for block in blocks.iter() {
                total += block_tokens(&block, rule, k);
            }
        }
    }
    Ok(total)
}

/// Tokens of the media of one content block under `rule` (0 when it holds none).
#[pyfunction]
fn media_block_tokens(block: &Bound<'_, PyAny>, rule: &str) -> PyResult<u64> {
    let rule = rule_named(rule)?;
    Ok(block_tokens(block, rule, keys(block.py())))
}

/// Tokens of an image whose data is `data` (bytes or base64 text; `None` when not at hand).
#[pyfunction]
#[pyo3(signature = (data, rule, *, detail = "high"))]
fn image_tokens(data: Option<&Bound<'_, PyAny>>, rule: &str, detail: &str) -> PyResult<u32> {
    let rule = rule_named(rule)?;
    let detail = detail_named(detail)?;
    Ok(with_source(data, |s| media::image_tokens(rule, s, detail)))
}

/// The pixel size an image's header declares, or `None` when it cannot be read.
#[pyfunction]
fn image_size(data: &Bound<'_, PyAny>) -> Option<(u32, u32)> {
    with_source(Some(data), |s| s.and_then(media::header::image_size))
}

/// The page count of a PDF (bytes or base64 text), or `None` when it cannot be read.
#[pyfunction]
fn pdf_page_count(data: &Bound<'_, PyAny>) -> Option<u32> {
    with_source(Some(data), |s| {
        s.and_then(|s| s.whole())
            .and_then(|d| media::pdf::page_count(&d))
    })
}

/// The most one item costs under `rule`: what an unreadable image, a video, an `s3Location`
/// source or a document other than a PDF costs.
#[pyfunction]
fn media_cap(rule: &str) -> PyResult<u32> {
    Ok(rule_named(rule)?.cap(Detail::High))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let names: Vec<&str> = RULES.iter().map(|(n, _)| *n).collect();
    m.add("MEDIA_RULES", PyTuple::new(m.py(), names)?)?;
    m.add_function(wrap_pyfunction!(media_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(media_block_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(image_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(image_size, m)?)?;
    m.add_function(wrap_pyfunction!(pdf_page_count, m)?)?;
    m.add_function(wrap_pyfunction!(media_cap, m)?)?;
    Ok(())
}
