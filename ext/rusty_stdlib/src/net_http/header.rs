//! `Net::HTTPHeader#capitalize` (private; `each_capitalized` and request heads use it).

use magnus::{Error, RString, Ruby, Value};
use rusty_core::net_http::header;

use super::strings::{ascii_only, encindex, exact_string, new_with_index, usascii_index};

/// `name.to_s.split(/-/).map(&:capitalize).join('-')` for an exact ASCII String, or nil
/// for the stdlib (whose `String#capitalize` is Unicode-aware).
pub fn capitalize(ruby: &Ruby, name: Value) -> Result<Option<RString>, Error> {
    let Some(string) = exact_string(ruby, name) else {
        return Ok(None);
    };
    if !ascii_only(string) {
        return Ok(None);
    }
    let capitalized = header::capitalize(unsafe { string.as_slice() });
    match capitalized {
        Some(bytes) => new_with_index(ruby, &bytes, encindex(string)).map(Some),
        // `[].join` is an empty US-ASCII string.
        None => new_with_index(ruby, b"", usascii_index()).map(Some),
    }
}
