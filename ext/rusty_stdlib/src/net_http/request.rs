//! `Net::HTTPGenericRequest#write_header`'s head: request line and header lines.

use magnus::{r_hash::ForEach, Error, RArray, RHash, RString, Ruby, Value};
use rusty_core::net_http::header;

use super::strings::{ascii_only, exact_string, is_exact, new_with_index, utf8_index};

/// `value` when it is an exact, 7-bit String: interpolating and appending it cannot
/// call Ruby code or meet an encoding conflict.
fn plain(ruby: &Ruby, value: Value) -> Option<RString> {
    exact_string(ruby, value).filter(|s| ascii_only(*s))
}

/// The head `write_header` would write (a UTF-8 String like its `buf`), or nil when
/// any part is not a plain ASCII String (the stdlib then builds it, and raises for a
/// CR or LF in the request line).
pub fn request_head(
    ruby: &Ruby,
    method: Value,
    path: Value,
    version: Value,
    fields: Value,
) -> Result<Option<RString>, Error> {
    let (Some(method), Some(path), Some(version)) =
        (plain(ruby, method), plain(ruby, path), plain(ruby, version))
    else {
        return Ok(None);
    };
    let Some(fields) = RHash::from_value(fields).filter(|_| is_exact(fields, ruby.class_hash()))
    else {
        return Ok(None);
    };
    let line =
        unsafe { header::request_line(method.as_slice(), path.as_slice(), version.as_slice()) };
    let Some(mut out) = line else {
        return Ok(None);
    };
    let mut handled = true;
    fields.foreach(|name: Value, values: Value| {
        handled = push_field(ruby, &mut out, name, values);
        Ok(if handled {
            ForEach::Continue
        } else {
            ForEach::Stop
        })
    })?;
    if !handled {
        return Ok(None);
    }
    out.extend_from_slice(b"\r\n");
    new_with_index(ruby, &out, utf8_index()).map(Some)
}

/// Appends one field line for an exact ASCII String name and an exact Array of exact
/// ASCII Strings; false otherwise. Calls no Ruby code.
fn push_field(ruby: &Ruby, out: &mut Vec<u8>, name: Value, values: Value) -> bool {
    let Some(name) = plain(ruby, name) else {
        return false;
    };
    let Some(values) = RArray::from_value(values).filter(|_| is_exact(values, ruby.class_array()))
    else {
        return false;
    };
    let value_at = |i: usize| {
        values
            .entry::<Value>(i as isize)
            .ok()
            .and_then(|v| plain(ruby, v))
    };
    // Check every element first, so nothing is appended for a field left to the stdlib.
    if !(0..values.len()).all(|i| value_at(i).is_some()) {
        return false;
    }
    let mut line = Vec::new();
    let mut i = 0;
    while let Some(value) = value_at(i) {
        if i > 0 {
            line.extend_from_slice(b", ");
        }
        line.extend_from_slice(unsafe { value.as_slice() });
        i += 1;
    }
    header::push_field_line(out, unsafe { name.as_slice() }, [line.as_slice()]);
    true
}
