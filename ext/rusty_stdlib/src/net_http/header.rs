//! `Net::HTTPHeader#capitalize` (private; `each_capitalized` and request heads use it).

use std::sync::OnceLock;

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    value::Lazy,
    Error, RHash, RString, Ruby, Value,
};
use rusty_core::net_http::header;

use super::strings::{
    ascii_compatible, binary_index, exact_ascii_string, is_exact, new_with_index, usascii_index,
};
use crate::helpers::ids::id;
use crate::helpers::raw::{class_of, encoding_index, str_bytes};
use crate::helpers::replaced::Replaced;

/// `name.to_s.split(/-/).map(&:capitalize).join('-')` for an exact ASCII String, or nil
/// for the stdlib (whose `String#capitalize` is Unicode-aware).
pub fn capitalize(ruby: &Ruby, name: Value) -> Result<Option<RString>, Error> {
    let Some(string) = exact_ascii_string(name) else {
        return Ok(None);
    };
    let raw = string.as_raw();
    let len = header::capitalized_len(str_bytes(raw));
    if len == 0 {
        // `[].join` is an empty US-ASCII string.
        return new_with_index(ruby, b"", usascii_index()).map(Some);
    }
    // Written straight into the new String (no Ruby code runs between taking the
    // pointers and writing); `string` stays on the stack, which pins it.
    let capitalized = unsafe {
        let capitalized = rb_sys::rb_str_new(std::ptr::null(), len as _);
        let out = std::slice::from_raw_parts_mut(rb_sys::RSTRING_PTR(capitalized) as *mut u8, len);
        header::capitalize_into(str_bytes(raw), out);
        // The name's encoding (ASCII-compatible, as checked): a valid index on an
        // unfrozen String of the same terminator length, which cannot raise
        // (rb_str_new's String is binary already).
        set_fresh_encoding(capitalized, encoding_index(raw));
        RString::from_value(Value::from_raw(capitalized))
    };
    std::hint::black_box(string);
    Ok(capitalized)
}

/// `Net::HTTPHeader#capitalize(name)`, swapped in for the stdlib's (MethodSwap): the
/// native result for an exact ASCII String, the stdlib's method otherwise.
pub fn capitalize_method(ruby: &Ruby, rb_self: Value, name: Value) -> Result<Value, Error> {
    match capitalize(ruby, name)? {
        Some(capitalized) => Ok(capitalized.as_value()),
        None => STDLIB_CAPITALIZE.call(rb_self, &[name]),
    }
}

static ID_CAPITALIZE: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_JOIN: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_HEADER: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_SIZE: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_EACH_CAPITALIZED: OnceLock<rb_sys::ID> = OnceLock::new();
static STDLIB_CAPITALIZE: Replaced = Replaced::new(c"__rusty_stdlib_stdlib_capitalize");
static STDLIB_EACH_CAPITALIZED: Replaced = Replaced::new(c"__rusty_stdlib_stdlib_each_capitalized");

/// `", "`, the separator `each_capitalized` joins values with when it calls Array#join
/// itself (rb_ary_join only reads it); a redefined `join` gets a fresh String each
/// time, as the stdlib's literal is.
static SEPARATOR: Lazy<RString> = Lazy::new(|ruby| {
    let separator = ruby.str_new(", ");
    separator.freeze();
    separator
});

/// Makes the statics `each_capitalized` uses, in the main Ractor at load time (a first
/// use racing in two Ractors would block one in the `Once` while the other may need it
/// at a GC barrier).
pub fn init(ruby: &Ruby) {
    ruby.get_inner(&SEPARATOR);
    for (cache, name) in [
        (&ID_CAPITALIZE, c"capitalize"),
        (&ID_JOIN, c"join"),
        (&ID_HEADER, c"@header"),
        (&ID_SIZE, c"size"),
        (&ID_EACH_CAPITALIZED, c"each_capitalized"),
    ] {
        id(cache, name);
    }
    STDLIB_CAPITALIZE.id();
    STDLIB_EACH_CAPITALIZED.id();
}

/// What the hash walk needs, passed through rb_hash_foreach's `arg`.
struct Walk {
    receiver: rb_sys::VALUE,
    separator: rb_sys::VALUE,
    array_class: rb_sys::VALUE,
    capitalize: rb_sys::ID,
    join: rb_sys::ID,
}

/// One `|k, v|` of `@header.each`: `yield capitalize(k), v.join(', ')`. Runs inside
/// the one `protect` around the walk: a raise, `break` or `throw` from any of these
/// calls unwinds rb_hash_foreach (which restores the Hash's iteration state) up to it.
/// No Rust value with a destructor lives in this frame.
unsafe extern "C" fn walk_pair(
    name: rb_sys::VALUE,
    values: rb_sys::VALUE,
    arg: rb_sys::VALUE,
) -> std::os::raw::c_int {
    let walk = &*(arg as *const Walk);
    let capitalized = match native_capitalize(walk, name) {
        Some(capitalized) => capitalized,
        None => rb_sys::rb_funcallv(walk.receiver, walk.capitalize, 1, &name),
    };
    // Array#join itself for an exact Array while Array#join is the core method.
    let joined = if rb_sys::RB_TYPE_P(values, rb_sys::ruby_value_type::RUBY_T_ARRAY)
        && class_of(values) == walk.array_class
        && rb_sys::rb_method_basic_definition_p(walk.array_class, walk.join) != 0
    {
        match single_string(values) {
            Some(value) => copy_string(value),
            None => rb_sys::rb_ary_join(values, walk.separator),
        }
    } else {
        let separator = rb_sys::rb_str_new(c", ".as_ptr(), 2);
        rb_sys::rb_funcallv(values, walk.join, 1, &separator)
    };
    let pair = [capitalized, joined];
    rb_sys::rb_yield_values2(2, pair.as_ptr());
    rb_sys::st_retval::ST_CONTINUE as _
}

/// `capitalize(name)` made here, without the method call, when the `capitalize` the
/// receiver reaches now is still ours as the shim remembered it (checked at every pair:
/// the block may have defined another since the last one) and `name` is one ours
/// answers itself; `None` otherwise, and the caller calls the method. Where the lookup
/// is unavailable (Ruby 3.3) or `capitalize` was not remembered, always `None`.
/// (Measured on Ruby 3.1: the lookup costs about 80 instructions, the call it saves
/// about 150, on `each_capitalized.to_a` over 16 fields.)
unsafe fn native_capitalize(walk: &Walk, name: rb_sys::VALUE) -> Option<rb_sys::VALUE> {
    if rb_sys::SPECIAL_CONST_P(walk.receiver) {
        return None;
    }
    let class = crate::helpers::raw::class_of(walk.receiver);
    if super::methods::stock(class, &[walk.capitalize]) != Some(true) {
        return None;
    }
    // Only allocates (an Err, from an encoding Ruby refuses, leaves it to the method).
    let capitalized = capitalize(&Ruby::get_unchecked(), Value::from_raw(name)).ok()??;
    Some(capitalized.as_raw())
}

/// The one element of `array` when that is a String (of any class) in an
/// ASCII-compatible encoding: what `[value].join` copies, the usual header value.
/// (Others, e.g. in dummy encodings, keep rb_ary_join, whose copy can differ in
/// `valid_encoding?`.)
unsafe fn single_string(array: rb_sys::VALUE) -> Option<rb_sys::VALUE> {
    if rb_sys::RARRAY_LEN(array) != 1 {
        return None;
    }
    let value = rb_sys::rb_ary_entry(array, 0);
    let string = RString::from_value(Value::from_raw(value))?;
    ascii_compatible(string).then_some(value)
}

/// `[value].join(sep)` for a String `value`: a new String (class String) with its bytes
/// and encoding, made in one go (rb_ary_join first makes a 63-byte buffer String, then
/// appends). Only allocates.
unsafe fn copy_string(value: rb_sys::VALUE) -> rb_sys::VALUE {
    let len = rb_sys::RSTRING_LEN(value);
    let copy = rb_sys::rb_str_new(std::ptr::null(), len);
    // The pointers are taken after the allocation; `value` is still referenced from
    // the caller's Array.
    std::ptr::copy_nonoverlapping(
        rb_sys::RSTRING_PTR(value),
        rb_sys::RSTRING_PTR(copy) as *mut _,
        len as usize,
    );
    set_fresh_encoding(copy, encoding_index(value));
    copy
}

/// Gives `fresh`, a String just made by rb_str_new (binary, nothing else refers to it),
/// the ASCII-compatible encoding `index`: in its flags when the index fits there (as
/// UTF-8's and US-ASCII's do), else with rb_enc_associate_index, which then cannot
/// raise (a valid index, an unfrozen String of the same terminator length).
unsafe fn set_fresh_encoding(fresh: rb_sys::VALUE, index: i32) {
    const INLINE_MAX: i32 = rb_sys::ruby_encoding_consts::RUBY_ENCODING_INLINE_MAX as i32;
    if index == binary_index() {
        return;
    }
    if (0..INLINE_MAX).contains(&index) {
        crate::helpers::raw::set_encoding_index(fresh, index);
    } else {
        rb_sys::rb_enc_associate_index(fresh, index);
    }
}

/// The enumerator's size, `@header.size` when it is asked (Enumerator#size calls this
/// from Ruby, which handles a raise from `size`).
unsafe extern "C" fn header_size(
    receiver: rb_sys::VALUE,
    _args: rb_sys::VALUE,
    _enumerator: rb_sys::VALUE,
) -> rb_sys::VALUE {
    let header = rb_sys::rb_ivar_get(receiver, id(&ID_HEADER, c"@header"));
    let size = id(&ID_SIZE, c"size");
    rb_sys::rb_funcallv(header, size, 0, std::ptr::null())
}

/// `Net::HTTPHeader#each_capitalized`: the stdlib's loop over an exact Hash `@header`
/// whose values are all exact Arrays (as `add_field`/`[]=` leave them), with
/// `capitalize` called as a method (so a subclass's own still applies) and each pair
/// yielded from here. Without a block, the stdlib's sized Enumerator, made here. For
/// any other `@header` (whose `join` would fail or be someone else's), the stdlib's
/// method: its Enumerator, its errors.
pub fn each_capitalized(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
    let header = unsafe {
        Value::from_raw(rb_sys::rb_ivar_get(
            rb_self.as_raw(),
            id(&ID_HEADER, c"@header"),
        ))
    };
    let Some(hash) = RHash::from_value(header).filter(|_| is_exact(header, ruby.class_hash()))
    else {
        return STDLIB_EACH_CAPITALIZED.call(rb_self, &[]);
    };
    if !ruby.block_given() {
        // `enum_for(__method__) { @header.size }`.
        return magnus::rb_sys::protect(|| unsafe {
            let method = rb_sys::rb_id2sym(id(&ID_EACH_CAPITALIZED, c"each_capitalized"));
            rb_sys::rb_enumeratorize_with_size(
                rb_self.as_raw(),
                method,
                0,
                std::ptr::null(),
                Some(header_size),
            )
        })
        .map(|enumerator| unsafe { Value::from_raw(enumerator) });
    }
    // Every value an exact Array (read from the table itself where the helper can).
    let array_class = ruby.class_array().as_raw();
    // SAFETY: the check runs no Ruby code and raises nothing.
    let all_arrays = unsafe {
        crate::helpers::hash::each_pair_quiet(hash.as_raw(), |_, values| {
            let exact = rb_sys::RB_TYPE_P(values, rb_sys::ruby_value_type::RUBY_T_ARRAY)
                && class_of(values) == array_class;
            exact.then_some(()).ok_or(())
        })
    };
    if all_arrays.is_err() {
        return STDLIB_EACH_CAPITALIZED.call(rb_self, &[]);
    }
    let walk = Walk {
        receiver: rb_self.as_raw(),
        separator: ruby.get_inner(&SEPARATOR).as_raw(),
        array_class: ruby.class_array().as_raw(),
        capitalize: id(&ID_CAPITALIZE, c"capitalize"),
        join: id(&ID_JOIN, c"join"),
    };
    magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_hash_foreach(
            hash.as_raw(),
            Some(walk_pair),
            &walk as *const Walk as rb_sys::VALUE,
        );
        hash.as_raw()
    })?;
    // `@header.each`'s value: the Hash.
    Ok(hash.as_value())
}
