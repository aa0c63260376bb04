//! `Net::HTTPResponse.read_new`'s usual case in one call: status line and head already
//! in Net::BufferedIO's read buffer (after filling it as readline would), taken in the
//! stdlib's order with its own Ruby calls (`rbuf_fill`, `response_class`, `new`,
//! `rbuf_consume`). Callgrind on Ruby 3.1, the bench's response-parse op: read_new
//! 33,900 -> 30,200 instructions against the shim's Ruby steps it replaced.

use std::sync::OnceLock;

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    Error, RClass, Ruby, Value,
};

use super::buffer::{buffered_status, rbuf_consume, read_head_fields, BufferedStatus};
use super::methods;
use crate::helpers::ids::id;

static ID_READ_STATUS_LINE: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_EACH_RESPONSE_HEADER: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_RESPONSE_CLASS: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_NEW: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_RBUF_FILL: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_READERS_OURS: OnceLock<rb_sys::ID> = OnceLock::new();

/// `sock.rbuf_fill`: the stdlib's own read into the buffer (timeouts, EOFError).
fn rbuf_fill(sock: Value) -> Result<(), Error> {
    let name = id(&ID_RBUF_FILL, c"rbuf_fill");
    magnus::rb_sys::protect(|| unsafe {
        rb_sys::rb_funcallv(sock.as_raw(), name, 0, std::ptr::null())
    })?;
    Ok(())
}

/// `klass.read_new(sock)` when `klass` (Net::HTTPResponse or a subclass) reaches our
/// read_status_line and each_response_header (told by method entry where `methods`
/// can, Ruby 3.1; else by `shim.readers_ours?(klass)`, which asks Ruby) and `sock` is a
/// plain Net::BufferedIO whose buffer holds (after filling it with `rbuf_fill` as
/// `readline` would) a status line the stdlib's regexp matches. Returns:
/// - nil, with nothing done but that filling, in every other case (the shim then goes
///   step by step);
/// - the response, its head read (consumed with `rbuf_consume`) into its fields;
/// - `unfinished.new(response)` when the response was made (and its status line
///   consumed) but the fields are not all in the buffer or go elsewhere than the stock
///   add_field (the shim then reads them with each_response_header).
///
/// As in the stdlib, the status line is consumed even when `response_class` or `new`
/// raises (or throws).
pub fn read_new(
    ruby: &Ruby,
    klass: Value,
    sock: Value,
    field_owner: Value,
    unfinished: RClass,
    shim: Value,
) -> Result<Option<Value>, Error> {
    let readers = [
        id(&ID_READ_STATUS_LINE, c"read_status_line"),
        id(&ID_EACH_RESPONSE_HEADER, c"each_response_header"),
    ];
    let raw = klass.as_raw();
    if rb_sys::SPECIAL_CONST_P(raw) {
        return Ok(None);
    }
    let ours = match methods::stock(crate::helpers::raw::class_of(raw), &readers) {
        Some(stock) => stock,
        None => {
            let ask = id(&ID_READERS_OURS, c"readers_ours?");
            let answer = magnus::rb_sys::protect(|| unsafe {
                rb_sys::rb_funcallv(shim.as_raw(), ask, 1, &raw)
            })?;
            unsafe { Value::from_raw(answer) }.to_bool()
        }
    };
    if !ours {
        return Ok(None);
    }
    // Filled until it holds a line, as readline's readuntil does (with its errors).
    let ([version, code, message], status_len) = loop {
        match buffered_status(ruby, sock)? {
            BufferedStatus::Line(captures, len) => break (captures, len),
            BufferedStatus::NoLine => rbuf_fill(sock)?,
            BufferedStatus::Unbuffered | BufferedStatus::NoMatch => return Ok(None),
        }
    };
    // `response_class(code).new(httpv, code, msg)`, both called as the stdlib calls
    // them (response_class is private: rb_funcallv does not check).
    let made = magnus::rb_sys::protect(|| unsafe {
        let code = code.as_raw();
        let class = rb_sys::rb_funcallv(raw, id(&ID_RESPONSE_CLASS, c"response_class"), 1, &code);
        let args = [version.as_raw(), code, message.as_raw()];
        rb_sys::rb_funcallv(class, id(&ID_NEW, c"new"), 3, args.as_ptr())
    });
    let response = match made {
        Ok(response) => unsafe { Value::from_raw(response) },
        Err(error) => {
            rbuf_consume(ruby, sock, status_len)?;
            return Err(error);
        }
    };
    if let Some(consumed) = read_head_fields(ruby, sock, response, status_len, field_owner)? {
        rbuf_consume(ruby, sock, consumed)?;
        return Ok(Some(response));
    }
    rbuf_consume(ruby, sock, status_len)?;
    Ok(Some(unfinished.new_instance((response,))?))
}
