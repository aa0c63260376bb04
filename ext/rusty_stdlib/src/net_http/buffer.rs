//! Net::BufferedIO's read buffer, read in place (net-protocol 0.1: `@rbuf` holds the
//! unread bytes; 0.2: they start at `@rbuf_offset`). The shim checks the socket is an
//! exact Net::BufferedIO, and consumes with the stdlib's own `rbuf_consume`, which
//! also writes set_debug_output's log.

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    value::Lazy,
    Integer, RArray, RClass, RModule, RString, Ruby, Value,
};
use rusty_core::net_http::response;

use super::strings::{binary_index, is_exact, new_with_index};

fn ivar(object: Value, name: &std::ffi::CStr) -> Value {
    // rb_intern of an existing name and rb_ivar_get neither raise nor call Ruby code.
    unsafe {
        let id = rb_sys::rb_intern(name.as_ptr());
        Value::from_raw(rb_sys::rb_ivar_get(object.as_raw(), id))
    }
}

/// Net::BufferedIO (looked up once net/http is loaded, which installing the pieces
/// that call into this module needs; kept alive as a GC root).
static BUFFERED_IO: Lazy<RClass> = Lazy::new(|ruby| {
    let net: RModule = ruby
        .class_object()
        .const_get("Net")
        .expect("net/http is loaded before its pieces are installed");
    net.const_get("BufferedIO")
        .expect("net/http is loaded before its pieces are installed")
});

/// Whether Net::BufferedIO exists (so BUFFERED_IO can be looked up); only asked until
/// the first lookup, and never calls const_missing.
fn buffered_io_defined(ruby: &Ruby) -> bool {
    // rb_const_defined neither raises nor loads an autoload.
    let defined = |module: Value, name: &std::ffi::CStr| unsafe {
        rb_sys::rb_const_defined(module.as_raw(), rb_sys::rb_intern(name.as_ptr())) != 0
    };
    let object = ruby.class_object();
    if !defined(object.as_value(), c"Net") {
        return false;
    }
    let Ok(net) = object.const_get::<_, Value>("Net") else {
        return false;
    };
    RModule::from_value(net).is_some() && defined(net, c"BufferedIO")
}

/// The read buffer of `sock` and the offset its unread bytes start at, or None when
/// `sock` is not exactly a Net::BufferedIO (a subclass, or one with singleton methods,
/// may read differently), holds something unexpected, or (unless `logged` is allowed)
/// logs to `@debug_output` (whose per-read lines a bulk consume would change).
pub fn read_buffer(sock: Value, logged: bool) -> Option<(RString, usize)> {
    let ruby = Ruby::get_with(sock);
    if Lazy::try_get_inner(&BUFFERED_IO).is_none() && !buffered_io_defined(&ruby) {
        return None;
    }
    if !is_exact(sock, ruby.get_inner(&BUFFERED_IO)) {
        return None;
    }
    if !logged && ivar(sock, c"@debug_output").to_bool() {
        return None;
    }
    let buffer = RString::from_value(ivar(sock, c"@rbuf"))?;
    let offset = ivar(sock, c"@rbuf_offset");
    let offset = if offset.is_nil() {
        0
    } else {
        usize::try_from(Integer::from_value(offset)?.to_i64().ok()?).ok()?
    };
    (offset <= buffer.len()).then_some((buffer, offset))
}

/// How many bytes `sock.readuntil("\n")` would consume when the buffer already holds a
/// `\n` (it then reads nothing from the socket), or nil.
pub fn line_end(sock: Value) -> Option<usize> {
    let (buffer, offset) = read_buffer(sock, true)?;
    let bytes = unsafe { &buffer.as_slice()[offset..] };
    bytes.iter().position(|&b| b == b'\n').map(|i| i + 1)
}

/// `[consumed, name, value, name, value, …]`: the header fields `each_response_header`
/// would yield, when the whole head is in the buffer and the stdlib would read it
/// without raising (see rusty_core's `header_block`); nil otherwise. Nothing is
/// consumed here.
pub fn header_block(ruby: &Ruby, sock: Value) -> Result<Option<RArray>, magnus::Error> {
    let Some((buffer, offset)) = read_buffer(sock, false) else {
        return Ok(None);
    };
    // Parsed into owned bytes before any Ruby object is made.
    let block = response::header_block(unsafe { &buffer.as_slice()[offset..] });
    let Some(block) = block else {
        return Ok(None);
    };
    let out = ruby.ary_new_capa(1 + 2 * block.fields.len());
    out.push(block.consumed)?;
    for (name, value) in &block.fields {
        out.push(new_with_index(ruby, name, binary_index())?)?;
        out.push(new_with_index(ruby, value, binary_index())?)?;
    }
    Ok(Some(out))
}

/// Net::HTTPHeader#add_field for each `name, value` of a `header_block` result, on a
/// response whose `@header` is an exact, empty Hash (a new response's) and whose
/// add_field, set_field and append_field_value the shim found to be the stdlib's:
/// `@header[name.downcase]` gets `[value]` or has `value` pushed, the very String
/// objects, as those methods do for Strings without CR or LF. False (nothing done)
/// for any other `@header`.
pub fn add_fields(ruby: &Ruby, response: Value, fields: RArray) -> Result<bool, magnus::Error> {
    let header = ivar(response, c"@header");
    let Some(hash) = magnus::RHash::from_value(header)
        .filter(|h| is_exact(header, ruby.class_hash()) && h.is_empty())
    else {
        return Ok(false);
    };
    let mut i = 1;
    while i + 1 < fields.len() {
        let name: RString = fields.entry(i as isize)?;
        let value: Value = fields.entry(i as isize + 1)?;
        let lower = unsafe { name.as_slice() }.to_ascii_lowercase();
        let key = new_with_index(ruby, &lower, binary_index())?;
        match hash.get(key) {
            Some(values) => {
                let values = RArray::from_value(values).ok_or_else(|| {
                    magnus::Error::new(ruby.exception_type_error(), "header values not an Array")
                })?;
                values.push(value)?;
            }
            None => hash.aset(key, ruby.ary_new_from_values(&[value]))?,
        }
        i += 2;
    }
    Ok(true)
}
