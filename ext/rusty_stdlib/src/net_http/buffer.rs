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
use std::sync::OnceLock;

use super::keys;
use super::methods;
use crate::helpers::ids::id;

use super::strings::{binary_index, is_exact, new_with_index};

static ID_DEBUG_OUTPUT: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_RBUF: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_RBUF_OFFSET: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_HEADER: OnceLock<rb_sys::ID> = OnceLock::new();

fn ivar(object: Value, cache: &OnceLock<rb_sys::ID>, name: &std::ffi::CStr) -> Value {
    // rb_intern of a static name and rb_ivar_get neither raise nor call Ruby code.
    unsafe { Value::from_raw(rb_sys::rb_ivar_get(object.as_raw(), id(cache, name))) }
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

/// `sock.rbuf_consume(taken)`: the stdlib's own method, which also logs to
/// set_debug_output (called with an ID interned once, not a name to intern per call);
/// done here instead while it is net-protocol 0.1's (see `consume_in_place`).
pub fn rbuf_consume(ruby: &Ruby, sock: Value, taken: usize) -> Result<(), magnus::Error> {
    let name = id(&ID_RBUF_CONSUME, c"rbuf_consume");
    if let Some(buffer) = consumable_in_place(sock, name, taken) {
        // Only allocates, or (another thread's read into the buffer locking it) raises.
        magnus::rb_sys::protect(|| unsafe {
            if buffer.len() == taken {
                // rb_str_new's String is binary, as `''.b` is.
                let fresh = rb_sys::rb_str_new(std::ptr::null(), 0);
                rb_sys::rb_ivar_set(sock.as_raw(), id(&ID_RBUF, c"@rbuf"), fresh);
            } else {
                rb_sys::rb_str_drop_bytes(buffer.as_raw(), taken as _);
            }
            rb_sys::Qnil as rb_sys::VALUE
        })?;
        return Ok(());
    }
    let taken = ruby.integer_from_u64(taken as u64).as_raw();
    magnus::rb_sys::protect(|| unsafe { rb_sys::rb_funcallv(sock.as_raw(), name, 1, &taken) })?;
    Ok(())
}

/// net-protocol 0.1's `rbuf_consume(len)` (Ruby 3.1's): `@rbuf = ''.b` when `len` is
/// all of it, else `@rbuf.slice!(0, len)`, whose result (the consumed bytes) only
/// set_debug_output's log uses. It can be done in place (`@rbuf` returned) when
/// `sock`'s rbuf_consume is that method (remembered by the shim only for net-protocol
/// 0.1.2; `methods::stock`), nothing logs, and `@rbuf` is a plain, unfrozen binary
/// String of at least `len` bytes with no `@rbuf_offset` beside it (so `size` counts
/// bytes). Saves a Ruby method call and the copy of the consumed bytes: read_new's
/// consume of the bench's response head, 2,650 -> 1,400 instructions.
fn consumable_in_place(sock: Value, name: rb_sys::ID, len: usize) -> Option<RString> {
    let raw = sock.as_raw();
    if rb_sys::SPECIAL_CONST_P(raw)
        || methods::stock(crate::helpers::raw::class_of(raw), &[name]) != Some(true)
        || ivar(sock, &ID_DEBUG_OUTPUT, c"@debug_output").to_bool()
        || !ivar(sock, &ID_RBUF_OFFSET, c"@rbuf_offset").is_nil()
    {
        return None;
    }
    let buffer = ivar(sock, &ID_RBUF, c"@rbuf");
    let string = RString::from_value(buffer)?;
    let plain = is_exact(buffer, Ruby::get_with(sock).class_string())
        && !string.is_frozen()
        && super::strings::encindex(string) == binary_index()
        && string.len() >= len;
    plain.then_some(string)
}

static ID_RBUF_CONSUME: OnceLock<rb_sys::ID> = OnceLock::new();

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
    if !logged && ivar(sock, &ID_DEBUG_OUTPUT, c"@debug_output").to_bool() {
        return None;
    }
    let buffer = RString::from_value(ivar(sock, &ID_RBUF, c"@rbuf"))?;
    let offset = ivar(sock, &ID_RBUF_OFFSET, c"@rbuf_offset");
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

/// A status line found in the read buffer (see `buffered_status`).
pub enum BufferedStatus {
    /// Not a plain Net::BufferedIO, or it logs to set_debug_output.
    Unbuffered,
    /// The buffer holds no "\n" yet.
    NoLine,
    /// A line the stdlib's regexp does not match.
    NoMatch,
    /// `[httpv, code, msg]` (binary Strings; httpv and msg may be nil) and the bytes
    /// the line takes.
    Line([Value; 3], usize),
}

/// The status line at the start of `sock`'s unread bytes, taken apart as
/// `read_status_line` would (without its errors). Nothing is consumed here.
pub fn buffered_status(ruby: &Ruby, sock: Value) -> Result<BufferedStatus, magnus::Error> {
    let Some((buffer, offset)) = read_buffer(sock, false) else {
        return Ok(BufferedStatus::Unbuffered);
    };
    let bytes = unsafe { &buffer.as_slice()[offset..] };
    let Some(newline) = bytes.iter().position(|&b| b == b'\n') else {
        return Ok(BufferedStatus::NoLine);
    };
    // `readuntil("\n").chop`: without the "\n", or the "\r\n".
    let chopped = if newline > 0 && bytes[newline - 1] == b'\r' {
        newline - 1
    } else {
        newline
    };
    let line = &bytes[..chopped];
    let Some(parsed) = response::parse_status_line(line) else {
        return Ok(BufferedStatus::NoMatch);
    };
    // The captures are made while `line` borrows the buffer: that only allocates, and
    // `buffer` stays on the stack (pinned) until the black_box below.
    let capture = |range: Option<std::ops::Range<usize>>| -> Result<Value, magnus::Error> {
        match range {
            Some(range) => Ok(new_with_index(ruby, &line[range], binary_index())?.as_value()),
            None => Ok(ruby.qnil().as_value()),
        }
    };
    let captures = [
        capture(parsed.version)?,
        capture(Some(parsed.code))?,
        capture(parsed.message)?,
    ];
    std::hint::black_box(buffer);
    Ok(BufferedStatus::Line(captures, newline + 1))
}

/// `[consumed, name, value, read_to, name, value, read_to, …]`: the header fields
/// `each_response_header` would yield, each with how many bytes the stdlib has read when
/// it yields the field, when the whole head is in the buffer and the stdlib would read
/// it without raising (see rusty_core's `header_block`); nil otherwise. Nothing is
/// consumed here.
pub fn header_block(ruby: &Ruby, sock: Value) -> Result<Option<RArray>, magnus::Error> {
    let Some((buffer, offset)) = read_buffer(sock, false) else {
        return Ok(None);
    };
    // The fields borrow the buffer while the Strings are made: that only allocates (no
    // Ruby code runs to change the buffer), and `buffer` stays on the stack, which
    // pins it (see the black_box below).
    let block = response::header_block(unsafe { &buffer.as_slice()[offset..] });
    let Some(block) = block else {
        return Ok(None);
    };
    let out = ruby.ary_new_capa(1 + 3 * block.fields.len());
    out.push(block.consumed)?;
    for (name, value, read_to) in &block.fields {
        out.push(new_with_index(ruby, name, binary_index())?)?;
        out.push(new_with_index(ruby, value, binary_index())?)?;
        out.push(*read_to)?;
    }
    std::hint::black_box(buffer);
    Ok(Some(out))
}

/// `read_new`'s `each_response_header { |k, v| res.add_field k, v }` for a head that is
/// all in `sock`'s buffer (as `header_block` takes it), starting `skip` bytes into the
/// unread bytes (past the status line), on a response whose `@header` is an exact,
/// empty Hash (a new response's) and whose add_field, set_field and append_field_value
/// are `field_owner`'s (Net::HTTPHeader's): `@header[name.downcase]` gets `[value]` or
/// has `value` pushed, as those methods do for Strings without CR or LF. The key is the
/// interned frozen String that Hash#[]= makes of the stdlib's `key.downcase` (so no
/// downcased copy is made first; see `keys`). The Hash gets every name at once, in the
/// order the names first come, as that many `Hash#[]=` would leave it. Returns how many
/// bytes the head took, plus `skip` (the shim consumes them), or nil with nothing done
/// (also for heads of more than MAX_FIELDS fields).
pub fn read_head_fields(
    ruby: &Ruby,
    sock: Value,
    response: Value,
    skip: usize,
    field_owner: Value,
) -> Result<Option<usize>, magnus::Error> {
    if !stock_field_methods(response, field_owner) {
        return Ok(None);
    }
    let Some((buffer, offset)) = read_buffer(sock, false) else {
        return Ok(None);
    };
    let Some(start) = offset
        .checked_add(skip)
        .filter(|&start| start <= buffer.len())
    else {
        return Ok(None);
    };
    let header = ivar(response, &ID_HEADER, c"@header");
    let Some(hash) = magnus::RHash::from_value(header)
        .filter(|h| is_exact(header, ruby.class_hash()) && h.is_empty())
    else {
        return Ok(None);
    };
    // Borrowed while the Strings are made, as in `header_block`.
    let Some(block) = response::header_block(unsafe { &buffer.as_slice()[start..] }) else {
        return Ok(None);
    };
    let fields = &block.fields;
    if fields.len() > MAX_FIELDS {
        return Ok(None);
    }
    // Every name downcased, and for each field the number of the distinct name it has
    // (a head repeats few names, Set-Cookie mostly: comparing is cheaper than hashing).
    // Made before the protected calls, which must not unwind past a value with a
    // destructor.
    let mut lower = [0u8; 2048];
    let mut spans = [(0u16, 0u16); MAX_FIELDS];
    let mut name_of = [0u8; MAX_FIELDS];
    let mut names: usize = 0;
    let mut at = 0;
    for (i, (name, _, _)) in fields.iter().enumerate() {
        let Some(out) = lower.get_mut(at..at + name.len()) else {
            return Ok(None);
        };
        for (o, b) in out.iter_mut().zip(name.iter()) {
            *o = b.to_ascii_lowercase();
        }
        spans[i] = (at as u16, (at + name.len()) as u16);
        at += name.len();
        let this = &lower[spans[i].0 as usize..spans[i].1 as usize];
        name_of[i] =
            match (0..i).find(|&j| &lower[spans[j].0 as usize..spans[j].1 as usize] == this) {
                Some(j) => name_of[j],
                None => {
                    names += 1;
                    (names - 1) as u8
                }
            };
    }
    let hash = hash.as_raw();
    // `key, [value, ...]` per distinct name, in the order the names first come (the
    // order add_field inserts them), kept on the stack, where the GC sees them.
    let mut pairs = [rb_sys::Qnil as rb_sys::VALUE; 2 * MAX_FIELDS];
    magnus::rb_sys::protect(|| unsafe {
        for (i, (_, value, _)) in fields.iter().enumerate() {
            // A binary String, as the stdlib's `split` of a binary line gives.
            let value = rb_sys::rb_str_new(value.as_ptr().cast(), value.len() as _);
            let at = 2 * name_of[i] as usize;
            if pairs[at] == rb_sys::Qnil as rb_sys::VALUE {
                pairs[at] =
                    keys::interned_key(ruby, &lower[spans[i].0 as usize..spans[i].1 as usize]);
                pairs[at + 1] = rb_sys::rb_ary_new_from_values(1, &value);
            } else {
                rb_sys::rb_ary_push(pairs[at + 1], value);
            }
        }
        // As rb_hash_aset per name, into the empty Hash (sized once).
        rb_sys::rb_hash_bulk_insert((2 * names) as std::os::raw::c_long, pairs.as_ptr(), hash);
        hash
    })?;
    std::hint::black_box(&pairs);
    std::hint::black_box(buffer);
    Ok(Some(skip + block.consumed))
}

/// Heads with more fields (or longer names, 2 KB in all) are left to the stdlib's loop.
const MAX_FIELDS: usize = 64;

static ID_ADD_FIELD: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_SET_FIELD: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_APPEND_FIELD_VALUE: OnceLock<rb_sys::ID> = OnceLock::new();
static ID_OWNER: OnceLock<rb_sys::ID> = OnceLock::new();

/// Whether add_field, set_field and append_field_value (the methods the stdlib's
/// read_new reaches through `res.add_field`) are the stock ones: the remembered
/// definitions (see `methods`) where this Ruby can tell, else `response.method(name)
/// .owner` (Kernel#method, as the response class may define its own `method`) is
/// `owner`. False when looking one up raises (the stdlib's own call then raises as it
/// would).
fn stock_field_methods(response: Value, owner: Value) -> bool {
    let names = [
        id(&ID_ADD_FIELD, c"add_field"),
        id(&ID_SET_FIELD, c"set_field"),
        id(&ID_APPEND_FIELD_VALUE, c"append_field_value"),
    ];
    // The remembered stock methods, where this Ruby tells them apart cheaply.
    let raw = response.as_raw();
    if !rb_sys::SPECIAL_CONST_P(raw) {
        if let Some(stock) = methods::stock(crate::helpers::raw::class_of(raw), &names) {
            return stock;
        }
    }
    let owner_id = id(&ID_OWNER, c"owner");
    names.iter().all(|&name| {
        magnus::rb_sys::protect(|| unsafe {
            let method = rb_sys::rb_obj_method(response.as_raw(), rb_sys::rb_id2sym(name));
            rb_sys::rb_funcallv(method, owner_id, 0, std::ptr::null())
        })
        .is_ok_and(|found| found == owner.as_raw())
    })
}
