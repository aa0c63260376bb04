//! `Marshal.dump(obj, io)` / `Marshal.dump(obj, io, limit)`: the native dump written to
//! an IO-like port the way MRI writes it.
//!
//! MRI checks `port.respond_to?(:write)` (a TypeError "instance of IO needed" if not),
//! calls `port.binmode` if the port has it, then dumps into one buffer String which it
//! hands to `port.write` whenever it holds `BUFSIZ` bytes or more (emptying it after each
//! write), and once more at the end with whatever is left (possibly nothing). It returns
//! the port. A port sees the same calls from us: the same buffer object, chunks ending at
//! the same offsets (`rusty_core::marshal::flush_points`), emptied the same way.
//!
//! Decide before any user code runs: the whole dump is made first, with dump hooks
//! refused (a graph with `marshal_dump` / `_dump` objects goes to the stdlib, because MRI
//! interleaves hook calls with its writes). Only then do the port's methods run, so the
//! stdlib never repeats a call the port has seen. What this changes, and only for a port
//! whose `respond_to?`, `binmode` or `write` modifies the very objects being dumped: MRI
//! would dump later objects as modified, we dump them as they were when the call began.
//! A depth limit error also goes to the stdlib (MRI may have written chunks before it).

use std::ffi::CStr;
use std::os::raw::c_long;
use std::sync::OnceLock;

use magnus::rb_sys::AsRawValue;
use magnus::{prelude::*, Error, Ruby, Value};
use rb_sys::{ID, VALUE};
use rusty_core::marshal as core;

use super::dump;
use super::load::reentered_message;
use crate::helpers::error::c_error;
use crate::helpers::reentry::{raise_second_return, HookCall};

/// MRI's buffer size on this platform (`BUFSIZ` from stdio.h, which marshal.c uses).
const BUFSIZ: usize = libc::BUFSIZ as usize;

struct PortIds {
    write: ID,
    binmode: ID,
}

static PORT_IDS: OnceLock<PortIds> = OnceLock::new();

fn port_ids() -> &'static PortIds {
    let intern = |name: &CStr| unsafe { rb_sys::rb_intern(name.as_ptr()) };
    PORT_IDS.get_or_init(|| PortIds {
        write: intern(c"write"),
        binmode: intern(c"binmode"),
    })
}

/// `port` after writing the dump of `obj` (depth `limit`, -1 for none) to it, or `None`
/// when the stdlib must do the whole call (nothing of the port has been called then).
pub fn dump_to(ruby: &Ruby, obj: Value, port: Value, limit: i32) -> Result<Option<Value>, Error> {
    let bytes = match dump::dump_without_hooks(ruby, obj, limit) {
        dump::Outcome::Done(bytes) => bytes,
        // A depth limit error (no hook can have run): the stdlib raises it after the
        // writes MRI makes before it.
        dump::Outcome::Raise(_) | dump::Outcome::Fallback => return Ok(None),
    };
    let Some(points) = core::flush_points(&bytes, BUFSIZ) else {
        return Ok(None);
    };
    write_chunks(port.as_raw(), &bytes, &points)?;
    Ok(Some(port))
}

/// MRI's port protocol for an already made dump: each call inside `protect`, so what
/// the port raises propagates after the calls MRI would have made up to that point.
fn write_chunks(port: VALUE, bytes: &[u8], points: &[usize]) -> Result<(), Error> {
    let ids = port_ids();
    let responds = protect(|| unsafe {
        if rb_sys::rb_respond_to(port, ids.write) != 0 {
            rb_sys::Qtrue as VALUE
        } else {
            rb_sys::Qfalse as VALUE
        }
    })?;
    if responds != rb_sys::Qtrue as VALUE {
        let ruby = unsafe { Ruby::get_unchecked() };
        return Err(c_error(
            &ruby,
            ruby.exception_type_error(),
            "instance of IO needed",
        ));
    }
    // Called if the port has it (respond_to?/respond_to_missing? asked as MRI asks).
    protect(|| unsafe { rb_sys::rb_check_funcall(port, ids.binmode, 0, std::ptr::null()) })?;
    // MRI's buffer: a binary String, the same object for every write. It lives on the
    // stack (this frame), where the GC finds it.
    let buffer = protect(|| unsafe { rb_sys::rb_str_buf_new(0) })?;
    let mut start = 0;
    for end in points.iter().copied().chain(std::iter::once(bytes.len())) {
        let chunk = &bytes[start..end];
        protect(|| unsafe {
            rb_sys::rb_str_cat(buffer, chunk.as_ptr().cast(), chunk.len() as c_long)
        })?;
        protect(|| unsafe { rb_sys::rb_io_write(port, buffer) })?;
        protect(|| unsafe { rb_sys::rb_str_resize(buffer, 0) })?;
        start = end;
    }
    std::hint::black_box(buffer);
    Ok(())
}

fn protect(f: impl FnOnce() -> VALUE) -> Result<VALUE, Error> {
    magnus::rb_sys::protect(f)
}

/// IDs and symbols of the load side.
struct LoadIds {
    getbyte: ID,
    read: ID,
    sym_getbyte: VALUE,
    sym_read: VALUE,
}

static LOAD_IDS: OnceLock<LoadIds> = OnceLock::new();

fn load_ids() -> &'static LoadIds {
    let intern = |name: &CStr| unsafe { rb_sys::rb_intern(name.as_ptr()) };
    LOAD_IDS.get_or_init(|| LoadIds {
        getbyte: intern(c"getbyte"),
        read: intern(c"read"),
        // Static symbols of interned IDs: immediates, never collected.
        sym_getbyte: rb_sys::ID2SYM(intern(c"getbyte")),
        sym_read: rb_sys::ID2SYM(intern(c"read")),
    })
}

/// The calls made to the port, kept so that the stdlib can be given the same answers
/// if it takes over (`fill_log`). Kept in Rust, not as Ruby objects per call: a small
/// graph makes a call every dozen bytes, and a Ruby Array plus a String copy per call
/// made IO loads slower than the stdlib's.
pub struct PortCalls {
    calls: Vec<PortCall>,
    /// The bytes each `read` returned, as they were when returned (a port may change a
    /// String after returning it, e.g. return one buffer object every time).
    contents: Vec<u8>,
    /// The Strings `read` returned, in order, held for the GC (and for `fill_log`, which
    /// gives the stdlib the same objects). A Ruby Array, so marked while we run.
    strings: VALUE,
}

enum PortCall {
    Getbyte(Option<u8>),
    /// `read(n)`: nil, or the String's bytes `contents[start..end]` in encoding `encindex`.
    Read {
        n: usize,
        result: Option<ReadString>,
    },
}

struct ReadString {
    start: usize,
    end: usize,
    encindex: i32,
}

impl PortCalls {
    /// `holder` must stay reachable for the GC until the calls are no longer needed.
    pub fn new(holder: VALUE) -> Self {
        PortCalls {
            calls: Vec::new(),
            contents: Vec::new(),
            strings: holder,
        }
    }

    /// Replaces the contents of `holder` with the log ReplayPort reads: one
    /// `[name, argument, result, copy of a String result as it was returned]` per call.
    pub fn fill_log(&self) -> Result<(), Error> {
        let ids = load_ids();
        let (strings, nil) = (self.strings, rb_sys::Qnil as VALUE);
        protect(|| unsafe {
            let log = rb_sys::rb_ary_new_capa(self.calls.len() as c_long);
            let mut next_string = 0;
            for call in &self.calls {
                let entry = match call {
                    PortCall::Getbyte(byte) => {
                        let byte = byte.map_or(nil, |b| rb_sys::LONG2FIX(b as c_long));
                        rb_sys::rb_ary_new_from_args(3, ids.sym_getbyte, nil, byte)
                    }
                    PortCall::Read { n, result: None } => rb_sys::rb_ary_new_from_args(
                        3,
                        ids.sym_read,
                        rb_sys::rb_int2inum(*n as isize),
                        nil,
                    ),
                    PortCall::Read {
                        n,
                        result: Some(read),
                    } => {
                        let string = rb_sys::RARRAY_AREF(strings, next_string);
                        next_string += 1;
                        let bytes = &self.contents[read.start..read.end];
                        let copy = rb_sys::rb_enc_str_new(
                            bytes.as_ptr().cast(),
                            bytes.len() as c_long,
                            rb_sys::rb_enc_from_index(read.encindex),
                        );
                        let arg = rb_sys::rb_int2inum(*n as isize);
                        rb_sys::rb_ary_new_from_args(4, ids.sym_read, arg, string, copy)
                    }
                };
                rb_sys::rb_ary_push(log, entry);
            }
            rb_sys::rb_ary_replace(strings, log)
        })?;
        Ok(())
    }
}

/// The port's `getbyte` / `read(n)`, called as MRI calls them, each call noted in
/// `calls`.
struct RubyPort<'a> {
    port: VALUE,
    calls: &'a mut PortCalls,
    /// The String the last `read` returned (also held by `calls`).
    last_read: VALUE,
    /// The Strings MRI would make String records of: [offset, String, ...].
    direct: VALUE,
}

impl core::port_reader::Port for RubyPort<'_> {
    type Error = Error;

    fn getbyte(&mut self) -> Result<Option<u8>, Error> {
        let (port, ids) = (self.port, load_ids());
        // The call and MRI's NUM2CHR of its result (a String's first byte, or the low
        // byte of NUM2INT; nil at the end) in one protect.
        let call = HookCall::start();
        let byte = protect(|| unsafe {
            let v = rb_sys::rb_funcallv(port, ids.getbyte, 0, std::ptr::null());
            if !call.first_return() || rb_sys::NIL_P(v) {
                return v;
            }
            let b = if rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_STRING)
                && rb_sys::RSTRING_LEN(v) >= 1
            {
                *rb_sys::RSTRING_PTR(v) as u8 as c_long
            } else {
                rb_sys::rb_num2int(v) & 0xff
            };
            rb_sys::LONG2FIX(b)
        });
        if !call.first_return() {
            // A continuation came back into a load that has ended (see helpers::reentry).
            unsafe { raise_second_return(byte, reentered_message(ids.getbyte)) }
        }
        let byte = byte?;
        let byte = (!rb_sys::NIL_P(byte)).then(|| unsafe { rb_sys::FIX2LONG(byte) } as u8);
        self.calls.calls.push(PortCall::Getbyte(byte));
        Ok(byte)
    }

    fn read(&mut self, n: usize) -> Result<Option<Vec<u8>>, Error> {
        let (port, ids, strings) = (self.port, load_ids(), self.calls.strings);
        // The call, MRI's StringValue of its result (to_str for a non-String) and
        // holding the String, in one protect.
        let call = HookCall::start();
        let s = protect(|| unsafe {
            let arg = rb_sys::rb_int2inum(n as isize);
            let mut s = rb_sys::rb_funcallv(port, ids.read, 1, &arg);
            if !call.first_return() || rb_sys::NIL_P(s) {
                return s;
            }
            let s = rb_sys::rb_string_value(&mut s);
            rb_sys::rb_ary_push(strings, s);
            s
        });
        if !call.first_return() {
            unsafe { raise_second_return(s, reentered_message(ids.read)) }
        }
        let s = s?;
        if rb_sys::NIL_P(s) {
            self.calls.calls.push(PortCall::Read { n, result: None });
            return Ok(None);
        }
        self.last_read = s;
        let bytes = crate::helpers::raw::str_bytes(s).to_vec();
        let start = self.calls.contents.len();
        self.calls.contents.extend_from_slice(&bytes);
        let read = ReadString {
            start,
            end: self.calls.contents.len(),
            encindex: unsafe { rb_sys::rb_enc_get_index(s) },
        };
        self.calls.calls.push(PortCall::Read {
            n,
            result: Some(read),
        });
        Ok(Some(bytes))
    }

    fn symbol_name_read(&mut self) -> Result<(), Error> {
        let s = self.last_read;
        protect(|| unsafe {
            if rb_sys::rb_enc_str_asciionly_p(s) != 0 {
                rb_sys::rb_enc_associate_index(s, rb_sys::rb_usascii_encindex());
            }
            s
        })?;
        Ok(())
    }

    fn direct_string(&mut self, offset: usize) -> Result<bool, Error> {
        let (s, direct) = (self.last_read, self.direct);
        // A plain String we can use as MRI does; a frozen one (setting its encoding
        // raises in MRI, before it reads on), one of a subclass or with ivars, or one
        // the port returned before: the stdlib's.
        let plain = unsafe {
            let flags = (*(s as *const rb_sys::RBasic)).flags;
            (*(s as *const rb_sys::RBasic)).klass == rb_sys::rb_cString
                && flags & (rb_sys::ruby_fl_type::RUBY_FL_FREEZE as VALUE) == 0
                && flags & (rb_sys::ruby_fl_type::RUBY_FL_EXIVAR as VALUE) == 0
                && rb_sys::rb_ary_includes(direct, s) == rb_sys::Qfalse as VALUE
        };
        if !plain {
            return Ok(false);
        }
        protect(|| unsafe {
            rb_sys::rb_ary_push(direct, rb_sys::rb_int2inum(offset as isize));
            rb_sys::rb_ary_push(direct, s)
        })?;
        Ok(true)
    }

    fn clear_last_read(&mut self) -> Result<(), Error> {
        let s = self.last_read;
        protect(|| unsafe { rb_sys::rb_str_resize(s, 0) })?;
        Ok(())
    }
}

/// `Marshal.load(port)` for an IO-like `port` (not convertible to a String): MRI's
/// checks and `binmode` call, then MRI's reads of one object, loaded natively. Returns
/// `fallback` when the stdlib must continue: from the calls noted in `calls`, which it
/// must be given again in the same order before the port is asked for more.
pub fn load_from(
    ruby: &Ruby,
    port: Value,
    freeze: bool,
    calls: &mut PortCalls,
    fallback: Value,
) -> Result<Value, Error> {
    let (raw, ids) = (port.as_raw(), load_ids());
    let readable = protect(|| unsafe {
        if rb_sys::rb_respond_to(raw, ids.getbyte) != 0 && rb_sys::rb_respond_to(raw, ids.read) != 0
        {
            rb_sys::Qtrue as VALUE
        } else {
            rb_sys::Qfalse as VALUE
        }
    })?;
    if readable != rb_sys::Qtrue as VALUE {
        return Err(c_error(
            ruby,
            ruby.exception_type_error(),
            "instance of IO needed",
        ));
    }
    let binmode = port_ids().binmode;
    protect(|| unsafe { rb_sys::rb_check_funcall(raw, binmode, 0, std::ptr::null()) })?;
    let rules = core::port_reader::Rules {
        bignums: if rb_sys::RUBY_API_VERSION_CODE >= 30300 {
            core::port_reader::BignumReads::SmallByByte
        } else {
            core::port_reader::BignumReads::Bytes
        },
        // Only 3.4.11 of the 3.4 series is proven (lib/rusty_stdlib/marshal.rb).
        short_refill_fails: rb_sys::RUBY_API_VERSION_CODE >= 30400,
        bignum_sign_checked: rb_sys::RUBY_API_VERSION_CODE >= 30400,
    };
    let direct = unsafe { rb_sys::rb_ary_new() };
    let mut reader = RubyPort {
        port: raw,
        calls,
        last_read: rb_sys::Qnil as VALUE,
        direct,
    };
    let Some(bytes) = core::port_reader::read_object(&mut reader, rules)? else {
        return Ok(fallback);
    };
    // The port's Strings MRI would use must still hold what they held when returned
    // (else the stdlib, replaying, restores and uses them as MRI would have).
    let unchanged = (0..unsafe { rb_sys::RARRAY_LEN(direct) } / 2).all(|i| unsafe {
        let offset = rb_sys::FIX2LONG(rb_sys::RARRAY_AREF(direct, 2 * i as isize)) as usize;
        let s = crate::helpers::raw::str_bytes(rb_sys::RARRAY_AREF(direct, 2 * i as isize + 1));
        bytes.get(offset..offset + s.len()) == Some(s)
    });
    if !unchanged {
        return Ok(fallback);
    }
    // No Ruby code of MRI's ran between those reads: the object is built now, natively,
    // or by the stdlib from the log.
    let source = ruby.str_from_slice(&bytes);
    let outcome = super::load::load_with(ruby, source.as_value(), freeze, None, direct);
    std::hint::black_box(direct); // held on the stack until the load is over
    outcome.or_fallback(fallback)
}
