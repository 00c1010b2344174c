//! JSON text exactly as Python's `json.dumps` writes it with its defaults.
//!
//! Python's defaults are `ensure_ascii=True`, `allow_nan=True`, separators
//! `", "` / `": "` for the single-line form and `","` / `": "` once an indent
//! is given. This module knows nothing about Python objects: a caller walks its
//! own values and drives a [`JsonWriter`], which formats numbers, escapes
//! strings and places separators, newlines and indentation.
//!
//! The writer feeds a [`Sink`]. `Vec<u8>` collects the text; [`LenSink`] only
//! counts it, so the length of a dump is known without building it.
//!
//! Output is ASCII except for a caller-chosen indent string, so the byte length
//! of the single-line form equals its length in code points.

mod compact;
mod escape;
mod key_cache;
mod number;
mod value;
mod writer;

pub use compact::compact_from_indented;
pub use escape::{
    escape_into, escape_raw, escape_room, escaped_len, escaped_len_code_point, escaped_len_utf8,
    Units,
};
pub use key_cache::{KeyCache, Put, ENTRY as KEY_ENTRY, PADDED as KEY_PADDED};
pub use number::{float_repr, write_float, write_i64};
pub use value::{dumps, dumps_len, write_value, Value};
pub use writer::{ByteBuf, JsonWriter, Layout, LenSink, Sink};
