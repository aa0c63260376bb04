//! `URI.encode_www_form_component`, `encode_www_form`, `decode_www_form_component` and
//! `decode_www_form` (uri 0.11.0 / 0.13.x, which agree on all four).

use magnus::{
    prelude::*, r_hash::ForEach, rb_sys::AsRawValue, Error, RArray, RHash, RString, Ruby, Value,
};
use rusty_core::net_http::form;

use super::strings::{
    ascii_compatible, ascii_only, binary_index, encindex, encoding_object_index, exact_string,
    is_exact, new_with_index, not_broken, usascii_index, utf8_index,
};

/// Whether `enc` makes the stdlib transcode a non-binary string: anything but nil and
/// `Encoding::ASCII_8BIT` (`enc && enc != Encoding::ASCII_8BIT`).
fn transcodes(enc: Value) -> bool {
    if !enc.to_bool() {
        return false;
    }
    match encoding_object_index(enc) {
        Some(index) => index != binary_index(),
        None => true,
    }
}

/// The bytes the stdlib percent-encodes for `value` (`value.to_s`, then its bytes as
/// they are), or `None` when `value` is not one of the types this path takes.
///
/// Exact Strings are taken as they are. nil, Symbols, Integers, Floats, true and false
/// get `to_s` called (which a program may have redefined; the call is the stdlib's own
/// conversion) and must answer a String. Any other object is left to the stdlib before
/// anything is called on it.
fn component_source(
    ruby: &Ruby,
    value: Value,
    enc_transcodes: bool,
) -> Result<Option<RString>, Error> {
    if let Some(string) = exact_string(ruby, value) {
        if enc_transcodes && encindex(string) != binary_index() {
            return Ok(None);
        }
        return Ok(Some(string));
    }
    if enc_transcodes || !simple(ruby, value) {
        return Ok(None);
    }
    let converted: Value = value.funcall("to_s", ())?;
    Ok(RString::from_value(converted))
}

/// Appends the encoding of `string` to `out`.
fn encode_into(out: &mut Vec<u8>, string: RString) {
    // The bytes are read while no Ruby code runs.
    form::encode_component_into(out, unsafe { string.as_slice() });
}

fn usascii(ruby: &Ruby, bytes: &[u8]) -> Result<RString, Error> {
    new_with_index(ruby, bytes, usascii_index())
}

/// `URI.encode_www_form_component(str, enc)`, or nil for the stdlib.
pub fn encode_www_form_component(
    ruby: &Ruby,
    str: Value,
    enc: Value,
) -> Result<Option<RString>, Error> {
    let Some(source) = component_source(ruby, str, transcodes(enc))? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    encode_into(&mut out, source);
    usascii(ruby, &out).map(Some)
}

/// Whether `value` is an exact String or a nil, Symbol, Integer, Float, true or false
/// (whose `to_s` the stdlib calls and whose result we then encode).
fn simple(ruby: &Ruby, value: Value) -> bool {
    exact_string(ruby, value).is_some()
        || [
            ruby.class_nil_class(),
            ruby.class_symbol(),
            ruby.class_integer(),
            ruby.class_float(),
            ruby.class_true_class(),
            ruby.class_false_class(),
        ]
        .into_iter()
        .any(|class| is_exact(value, class))
}

/// The exact Array `value` is, if it is one.
fn exact_array(ruby: &Ruby, value: Value) -> Option<RArray> {
    RArray::from_value(value).filter(|_| is_exact(value, ruby.class_array()))
}

/// Whether a field is one this path takes: a simple key, and a value that is nil,
/// simple, or an exact Array of nils and simple values. Calls no Ruby code.
fn field_taken(ruby: &Ruby, key: Value, value: Value) -> bool {
    if !simple(ruby, key) {
        return false;
    }
    match exact_array(ruby, value) {
        Some(values) => (0..values.len()).all(|i| {
            values
                .entry::<Value>(i as isize)
                .is_ok_and(|w| simple(ruby, w))
        }),
        None => simple(ruby, value),
    }
}

/// Calls `f` with each `|k, v|` that `enum.map` would yield, for an exact Hash or an
/// exact Array (whose exact-Array elements are destructured, others are `k` alone);
/// stops when `f` answers false. `Ok(None)` for any other `enum`.
fn each_field<F>(ruby: &Ruby, enum_: Value, mut f: F) -> Result<Option<bool>, Error>
where
    F: FnMut(Value, Value) -> Result<bool, Error>,
{
    if let Some(hash) = RHash::from_value(enum_).filter(|_| is_exact(enum_, ruby.class_hash())) {
        let mut all = true;
        hash.foreach(|key: Value, value: Value| {
            all = f(key, value)?;
            Ok(if all {
                ForEach::Continue
            } else {
                ForEach::Stop
            })
        })?;
        return Ok(Some(all));
    }
    let Some(fields) = exact_array(ruby, enum_) else {
        return Ok(None);
    };
    let mut i = 0;
    while i < fields.len() {
        let field: Value = fields.entry(i as isize)?;
        let (key, value) = match exact_array(ruby, field) {
            Some(pair) => (pair.entry::<Value>(0)?, pair.entry::<Value>(1)?),
            None => (field, ruby.qnil().as_value()),
        };
        if !f(key, value)? {
            return Ok(Some(false));
        }
        i += 1;
    }
    Ok(Some(true))
}

/// Appends one field the way the stdlib's block builds it, converting in the same
/// order and as often as the stdlib does (the key once per element of an Array value).
/// `Ok(false)` when a redefined `to_s` answered something other than a String.
fn encode_field(ruby: &Ruby, out: &mut Vec<u8>, key: Value, value: Value) -> Result<bool, Error> {
    let Some(values) = exact_array(ruby, value) else {
        let Some(key) = component_source(ruby, key, false)? else {
            return Ok(false);
        };
        encode_into(out, key);
        if !value.is_nil() {
            let Some(value) = component_source(ruby, value, false)? else {
                return Ok(false);
            };
            out.push(b'=');
            encode_into(out, value);
        }
        return Ok(true);
    };
    // `v.to_ary.map { |w| … }.join('&')`: a nil element maps to nil, which joins as an
    // empty string (the quirk `a: [1, nil]` => "a=1&").
    let mut i = 0;
    while i < values.len() {
        let element: Value = values.entry(i as isize)?;
        if i > 0 {
            out.push(b'&');
        }
        let Some(key) = component_source(ruby, key, false)? else {
            return Ok(false);
        };
        if !element.is_nil() {
            let Some(element) = component_source(ruby, element, false)? else {
                return Ok(false);
            };
            encode_into(out, key);
            out.push(b'=');
            encode_into(out, element);
        }
        i += 1;
    }
    Ok(true)
}

/// `URI.encode_www_form(enum, enc)` for an exact Array or Hash of simple keys and values
/// with `enc` nil or binary, or nil for the stdlib. Which it is gets decided by a first
/// pass that calls no Ruby code; the second pass converts and encodes.
pub fn encode_www_form(ruby: &Ruby, enum_: Value, enc: Value) -> Result<Option<RString>, Error> {
    if transcodes(enc) {
        return Ok(None);
    }
    let taken = each_field(ruby, enum_, |key, value| Ok(field_taken(ruby, key, value)))?;
    if taken != Some(true) {
        return Ok(None);
    }
    let mut out = Vec::new();
    let mut first = true;
    let encoded = each_field(ruby, enum_, |key, value| {
        if !first {
            out.push(b'&');
        }
        first = false;
        encode_field(ruby, &mut out, key, value)
    })?;
    if encoded != Some(true) {
        return Ok(None);
    }
    usascii(ruby, &out).map(Some)
}

/// Whether the byte-wise `%` check and decoding match the stdlib's character-wise
/// regexps for `string`: an ASCII-compatible encoding in which a `%` or hex digit byte
/// cannot be part of a multi-byte character, and no invalid bytes (which make the
/// stdlib's regexp raise).
fn decodable(string: RString) -> bool {
    if !ascii_compatible(string) || !not_broken(string) {
        return false;
    }
    let index = encindex(string);
    index == utf8_index()
        || index == binary_index()
        || index == usascii_index()
        || ascii_only(string)
}

/// `URI.decode_www_form_component(str, enc)` for an exact String (whose `b` and `match?`
/// nobody overrode) and an Encoding object, or nil
/// for the stdlib (which also raises the invalid %-encoding error).
pub fn decode_www_form_component(
    ruby: &Ruby,
    str: Value,
    enc: Value,
) -> Result<Option<RString>, Error> {
    let Some(string) = exact_string(ruby, str) else {
        return Ok(None);
    };
    let Some(index) = encoding_object_index(enc) else {
        return Ok(None);
    };
    if !decodable(string) {
        return Ok(None);
    }
    let decoded = {
        let bytes = unsafe { string.as_slice() };
        if form::has_invalid_percent(bytes) {
            return Ok(None);
        }
        form::decode_component(bytes)
    };
    new_with_index(ruby, &decoded, index).map(Some)
}

/// Whether `decode_www_form` can split on `separator` byte-wise: a non-empty ASCII
/// String without CR or LF (which `chomp!` treats specially).
fn plain_separator(separator: Value) -> Option<RString> {
    let string = RString::from_value(separator)?;
    if !ascii_only(string) {
        return None;
    }
    let bytes = unsafe { string.as_slice() };
    (!bytes.is_empty() && !bytes.iter().any(|&b| b == b'\r' || b == b'\n')).then_some(string)
}

/// `URI.decode_www_form(str, enc, separator:, isindex:)` (without `use__charset_`) for
/// an exact ASCII String and a plain separator, or nil for the stdlib.
pub fn decode_www_form(
    ruby: &Ruby,
    str: Value,
    enc: Value,
    separator: Value,
    isindex: Value,
) -> Result<Option<RArray>, Error> {
    let Some(string) = exact_string(ruby, str) else {
        return Ok(None);
    };
    if !ascii_only(string) || plain_separator(separator).is_none() {
        return Ok(None);
    }
    if string.is_empty() {
        return Ok(Some(ruby.ary_new()));
    }
    let index = match encoding_object_index(enc) {
        Some(index) => index,
        None => {
            // The stdlib's own `Encoding.find(enc)`, which may call `to_str`.
            let encoding_class = ruby.class_encoding();
            let found: Value = encoding_class.funcall("find", (enc,))?;
            match encoding_object_index(found) {
                Some(index) => index,
                None => return Ok(None),
            }
        }
    };
    // Read both again, as the stdlib does: Encoding.find may have run Ruby code. The
    // string is split byte-wise whatever it holds now; a separator that stopped being
    // plain sends the call to the stdlib (which then calls Encoding.find again).
    let Some(separator) = plain_separator(separator) else {
        return Ok(None);
    };
    let fields: Vec<(Vec<u8>, Vec<u8>)> = {
        let bytes = unsafe { string.as_slice() };
        let separator = unsafe { separator.as_slice() };
        form::split_fields(bytes, separator, isindex.to_bool())
            .into_iter()
            .map(|field| {
                (
                    form::decode_component(field.key),
                    form::decode_component(field.value),
                )
            })
            .collect()
    };
    let result = ruby.ary_new_capa(fields.len());
    for (key, value) in &fields {
        let key = scrubbed(ruby, key, index)?;
        let value = scrubbed(ruby, value, index)?;
        let pair = ruby.ary_new_from_values(&[key, value]);
        // A fresh, unfrozen Array: the push cannot raise, so it needs no `protect`.
        unsafe { rb_sys::rb_ary_push(result.as_raw(), pair.as_raw()) };
    }
    Ok(Some(result))
}

/// A String of `bytes` in encoding `index`, scrubbed like `force_encoding(enc).scrub!`.
fn scrubbed(ruby: &Ruby, bytes: &[u8], index: i32) -> Result<RString, Error> {
    let string = new_with_index(ruby, bytes, index)?;
    if string.enc_coderange_scan() != magnus::encoding::Coderange::Broken {
        return Ok(string);
    }
    Ok(string.scrub(None)?.unwrap_or(string))
}
