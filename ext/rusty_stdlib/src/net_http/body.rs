//! `Net::HTTPResponse#read_body_0`'s plain case: whether the stdlib's
//! `inflater { |io| if chunked? then read_chunked(dest, io); return end ... }` would
//! yield `@socket` itself (the shim checks no decoding is asked for) and find the body
//! chunked, without running any code but the stdlib's own: then the shim calls
//! read_chunked directly, skipping the block, chunked?'s `[]`, `downcase`, `join` and
//! regexp match (a sixth of a small chunked response's time).

use std::sync::OnceLock;

use magnus::{
    rb_sys::{AsRawValue, FromRawValue},
    Ruby, Value,
};
use rb_sys::{ID, VALUE};
use rusty_core::net_http::header::mentions_chunked;

use super::keys::interned_key;
use super::methods;
use super::strings::exact_ascii_string;
use crate::helpers::ids::id;

static ID_INFLATER: OnceLock<ID> = OnceLock::new();
static ID_CHUNKED_P: OnceLock<ID> = OnceLock::new();
static ID_AREF: OnceLock<ID> = OnceLock::new();
static ID_READ_CHUNKED: OnceLock<ID> = OnceLock::new();
static ID_DOWNCASE: OnceLock<ID> = OnceLock::new();
static ID_TO_S: OnceLock<ID> = OnceLock::new();
static ID_JOIN: OnceLock<ID> = OnceLock::new();
static ID_MATCH: OnceLock<ID> = OnceLock::new();
static ID_HEADER: OnceLock<ID> = OnceLock::new();

/// Whether `response`'s body is chunked as `chunked?` would find it, asked only where
/// that is certain to run no other code: inflater, chunked?, [] and read_chunked are the
/// remembered stock ones (see `methods`; false where this Ruby cannot tell), the core
/// methods they call are not redefined, and `@header['transfer-encoding']` is an exact
/// Array of exact ASCII Strings in an exact Hash. False means "ask the stdlib".
pub fn plain_chunked(ruby: &Ruby, response: Value) -> bool {
    let raw = response.as_raw();
    if rb_sys::SPECIAL_CONST_P(raw) {
        return false;
    }
    let own = [
        id(&ID_INFLATER, c"inflater"),
        id(&ID_CHUNKED_P, c"chunked?"),
        id(&ID_AREF, c"[]"),
        id(&ID_READ_CHUNKED, c"read_chunked"),
    ];
    if methods::stock(crate::helpers::raw::class_of(raw), &own) != Some(true) {
        return false;
    }
    let core: [(VALUE, ID); 5] = unsafe {
        [
            (rb_sys::rb_cHash, id(&ID_AREF, c"[]")),
            (rb_sys::rb_cString, id(&ID_DOWNCASE, c"downcase")),
            (rb_sys::rb_cString, id(&ID_TO_S, c"to_s")),
            (rb_sys::rb_cArray, id(&ID_JOIN, c"join")),
            (rb_sys::rb_cRegexp, id(&ID_MATCH, c"=~")),
        ]
    };
    if core
        .iter()
        .any(|&(class, name)| unsafe { rb_sys::rb_method_basic_definition_p(class, name) } == 0)
    {
        return false;
    }
    // rb_ivar_get, rb_hash_lookup2 (of a String key: hashing and eql? on Strings call
    // no Ruby code) and the reads below neither raise nor run Ruby code; the key is
    // made (or found) first, which only allocates.
    let key = interned_key(ruby, b"transfer-encoding");
    let header = unsafe { rb_sys::rb_ivar_get(raw, id(&ID_HEADER, c"@header")) };
    if rb_sys::SPECIAL_CONST_P(header)
        || crate::helpers::raw::class_of(header) != unsafe { rb_sys::rb_cHash }
    {
        return false;
    }
    let undef = rb_sys::Qundef as VALUE;
    let values = unsafe { rb_sys::rb_hash_lookup2(header, key, undef) };
    if values == undef
        || rb_sys::SPECIAL_CONST_P(values)
        || crate::helpers::raw::class_of(values) != unsafe { rb_sys::rb_cArray }
    {
        return false;
    }
    // `values.join(', ')`, then the stdlib's regexp. One value (the usual case) is
    // matched where it is, without the copy.
    let len = unsafe { rb_sys::RARRAY_LEN(values) };
    if len == 1 {
        let value = unsafe { Value::from_raw(rb_sys::rb_ary_entry(values, 0)) };
        return exact_ascii_string(value)
            .is_some_and(|string| mentions_chunked(unsafe { string.as_slice() }));
    }
    let mut field = Vec::new();
    for i in 0..len {
        let value = unsafe { Value::from_raw(rb_sys::rb_ary_entry(values, i)) };
        let Some(string) = exact_ascii_string(value) else {
            return false;
        };
        if i > 0 {
            field.extend_from_slice(b", ");
        }
        field.extend_from_slice(unsafe { string.as_slice() });
    }
    mentions_chunked(&field)
}
