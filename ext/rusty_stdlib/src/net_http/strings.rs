//! Questions about Ruby strings and encodings the fast paths ask before taking a string.

use magnus::{
    encoding::{Coderange, Encoding},
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    Error, RClass, RString, Ruby, Value,
};

/// Whether `value`'s class is exactly `class` (no subclass, no singleton class).
pub fn is_exact(value: Value, class: RClass) -> bool {
    value.class().as_raw() == class.as_raw()
}

/// `value` when it is a String whose class is exactly String: `to_s` returns itself and
/// `dup` a plain copy, so the stdlib's conversions are unobservable.
pub fn exact_string(ruby: &Ruby, value: Value) -> Option<RString> {
    RString::from_value(value).filter(|_| is_exact(value, ruby.class_string()))
}

/// The encoding index of `string`.
pub fn encindex(string: RString) -> i32 {
    crate::helpers::raw::encoding_index(string.as_raw())
}

/// Whether `string`'s encoding is ASCII-compatible (not UTF-16/32, not a dummy).
pub fn ascii_compatible(string: RString) -> bool {
    ascii_compatible_index(encindex(string))
}

/// Whether the encoding of index `index` is ASCII-compatible.
#[inline]
pub fn ascii_compatible_index(index: i32) -> bool {
    // The usual three answer without a look at the encoding table.
    if index == utf8_index() || index == binary_index() || index == usascii_index() {
        return true;
    }
    unsafe {
        let enc = rb_sys::rb_enc_from_index(index);
        !enc.is_null() && (*enc).min_enc_len == 1 && rb_sys::rb_enc_dummy_p(enc) == 0
    }
}

/// `string.ascii_only?`: ASCII-compatible encoding and only 7-bit bytes.
pub fn ascii_only(string: RString) -> bool {
    ascii_compatible(string) && string.enc_coderange_scan() == Coderange::SevenBit
}

/// `exact_string(value)` when it is also `ascii_only`, the class, encoding index and code
/// range read from the String's header: the names `capitalize` writes and the
/// values `Transfer-Encoding` is read from, on every field of every message, where
/// magnus' checked accessors cost about 20 instructions more a String.
#[inline(always)]
pub fn exact_ascii_string(value: Value) -> Option<RString> {
    use crate::helpers::raw::{class_of, coderange, encoding_index};
    use rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT;
    let string = RString::from_value(value)?;
    let raw = string.as_raw();
    (class_of(raw) == unsafe { rb_sys::rb_cString }
        && ascii_compatible_index(encoding_index(raw))
        && coderange(raw) == RUBY_ENC_CODERANGE_7BIT as u32)
        .then_some(string)
}

/// Whether `string` is valid in its encoding (coderange 7-bit or valid).
pub fn not_broken(string: RString) -> bool {
    string.enc_coderange_scan() != Coderange::Broken
}

/// The index of `value` when it is an Encoding object.
pub fn encoding_object_index(value: Value) -> Option<i32> {
    Encoding::from_value(value)?;
    let index = unsafe { rb_sys::rb_to_encoding_index(value.as_raw()) };
    (index >= 0).then_some(index)
}

/// A new String of `bytes` with encoding index `index`.
pub fn new_with_index(ruby: &Ruby, bytes: &[u8], index: i32) -> Result<RString, Error> {
    // rb_str_new's String is binary already.
    if index == binary_index() {
        return Ok(ruby.str_from_slice(bytes));
    }
    let encoding = unsafe { rb_sys::rb_enc_from_index(index) };
    if !encoding.is_null() {
        // Made in its encoding from the start, which (like any new String) can fail only
        // to allocate; associating it afterwards can raise, so it needed a `protect`, a
        // tenth of `URI.decode_www_form`'s instructions on 3.4 (three a pair).
        let raw =
            unsafe { rb_sys::rb_enc_str_new(bytes.as_ptr().cast(), bytes.len() as _, encoding) };
        return Ok(RString::from_value(unsafe { Value::from_raw(raw) }).expect("a String"));
    }
    let string = ruby.str_from_slice(bytes);
    magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_enc_associate_index(string.as_raw(), index);
        ruby.qnil().as_raw()
    })?;
    Ok(string)
}

/// The index of ASCII-8BIT (binary).
pub fn binary_index() -> i32 {
    unsafe { rb_sys::rb_ascii8bit_encindex() }
}

/// The index of UTF-8.
pub fn utf8_index() -> i32 {
    unsafe { rb_sys::rb_utf8_encindex() }
}

/// The index of US-ASCII.
pub fn usascii_index() -> i32 {
    unsafe { rb_sys::rb_usascii_encindex() }
}
