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
use magnus::{Error, Ruby, Value};
use rb_sys::{ID, VALUE};
use rusty_core::marshal as core;

use super::dump;

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
        return Err(Error::new(
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
