//! `Net::HTTPResponse.read_status_line` / `each_response_header` string work. The shim
//! keeps the socket reads (and so `set_debug_output` logging) in Ruby and hands each
//! line here.

use magnus::{prelude::*, Error, IntoValue, RString, Ruby, Value};
use rusty_core::net_http::response;

use super::strings::{binary_index, encindex, new_with_index};

/// `value` when it is a binary String, which is what Net::BufferedIO returns; other
/// strings (from a caller's own socket object) are left to the stdlib's code.
fn binary_string(value: Value) -> Option<RString> {
    RString::from_value(value).filter(|s| encindex(*s) == binary_index())
}

fn binary(ruby: &Ruby, bytes: &[u8]) -> Result<Value, Error> {
    Ok(new_with_index(ruby, bytes, binary_index())?.as_value())
}

fn binary_or_nil(ruby: &Ruby, bytes: Option<&[u8]>) -> Result<Value, Error> {
    match bytes {
        Some(bytes) => binary(ruby, bytes),
        None => Ok(ruby.qnil().as_value()),
    }
}

/// The status line's `[httpv, code, msg]` captures, false when it does not match, nil
/// when `line` is not a binary String.
pub fn status_line(ruby: &Ruby, line: Value) -> Result<Value, Error> {
    let Some(string) = binary_string(line) else {
        return Ok(ruby.qnil().as_value());
    };
    let (bytes, parsed) = {
        let bytes = unsafe { string.as_slice() }.to_vec();
        let parsed = response::parse_status_line(&bytes);
        (bytes, parsed)
    };
    let Some(parsed) = parsed else {
        return Ok(ruby.qfalse().as_value());
    };
    let version = binary_or_nil(ruby, parsed.version.map(|r| &bytes[r]))?;
    let code = binary(ruby, &bytes[parsed.code])?;
    let message = binary_or_nil(ruby, parsed.message.map(|r| &bytes[r]))?;
    Ok(ruby
        .ary_new_from_values(&[version, code, message])
        .as_value())
}

/// One header line taken apart: `[space?, tab?, stripped, name, value]` (`stripped`
/// only for a line starting with a space or tab, the only case that uses it), false for
/// the empty line that ends the head, nil when `raw` is not a binary String.
pub fn header_line(ruby: &Ruby, raw: Value) -> Result<Value, Error> {
    let Some(string) = binary_string(raw) else {
        return Ok(ruby.qnil().as_value());
    };
    let bytes = unsafe { string.as_slice() }.to_vec();
    let Some(line) = response::parse_header_line(&bytes) else {
        return Ok(ruby.qfalse().as_value());
    };
    let continuation = line.leading_space || line.leading_tab;
    let stripped = binary_or_nil(ruby, continuation.then_some(line.stripped))?;
    let name = binary_or_nil(ruby, line.name)?;
    let value = binary_or_nil(ruby, line.value)?;
    Ok(ruby
        .ary_new_from_values(&[
            line.leading_space.into_value_with(ruby),
            line.leading_tab.into_value_with(ruby),
            stripped,
            name,
            value,
        ])
        .as_value())
}

/// A chunk-size line's size (`line.slice(/[0-9a-fA-F]+/).hex`): an Integer, false when
/// the line has no hex digit (the stdlib raises), nil when `line` is not a binary String
/// or the size needs a Bignum (the stdlib's expressions run instead).
pub fn chunk_size(ruby: &Ruby, line: Value) -> Result<Value, Error> {
    let Some(string) = binary_string(line) else {
        return Ok(ruby.qnil().as_value());
    };
    let bytes = unsafe { string.as_slice() };
    Ok(match response::chunk_size_digits(bytes) {
        None => ruby.qfalse().as_value(),
        Some(digits) => match response::hex_u64(digits) {
            Some(size) => ruby.integer_from_u64(size).as_value(),
            None => ruby.qnil().as_value(),
        },
    })
}
