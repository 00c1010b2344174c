//! Two facts about the conversation a model request sent, asked by the savings ledger on a context
//! edit: whether an edited message was part of it, and whether it carried a cache point. A pass of
//! pointer comparisons or key lookups: in Python it would cost more than the edit it reports.
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

struct Keys {
    content: Py<PyString>,
    cache_point: Py<PyString>,
}

fn keys(py: Python<'_>) -> &Keys {
    static KEYS: PyOnceLock<Keys> = PyOnceLock::new();
    KEYS.get_or_init(py, || Keys {
        content: PyString::intern(py, "content").unbind(),
        cache_point: PyString::intern(py, "cachePoint").unbind(),
    })
}

/// Whether one of `touched` is, by identity, one of `messages`.
#[pyfunction]
fn holds_any(messages: &Bound<'_, PyList>, touched: &Bound<'_, PyTuple>) -> bool {
    let wanted: Vec<*mut pyo3::ffi::PyObject> = touched.iter().map(|t| t.as_ptr()).collect();
    messages.iter().any(|m| wanted.contains(&m.as_ptr()))
}

/// Whether a block of `messages` (a dict in a message's `content` list) holds a `cachePoint` key.
#[pyfunction]
fn has_cache_point(messages: &Bound<'_, PyList>) -> PyResult<bool> {
    let k = keys(messages.py());
    for message in messages.iter() {
        let Ok(message) = message.cast::<PyDict>() else {
            continue;
        };
        let Some(content) = message.get_item(&k.content)? else {
            continue;
        };
        let Ok(blocks) = content.cast::<PyList>() else {
            continue;
        };
        for block in blocks.iter() {
            if let Ok(block) = block.cast::<PyDict>() {
                if block.contains(&k.cache_point)? {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(holds_any, m)?)?;
    m.add_function(wrap_pyfunction!(has_cache_point, m)?)?;
    Ok(())
}
