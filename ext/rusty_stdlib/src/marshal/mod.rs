//! `Marshal.dump` / `Marshal.load` for the core types that carry most traffic: nil, true,
//! false, Integer, Float, String, Symbol, Array, Hash (with a default value), Time (the
//! core `_dump`/`_load`), classes and modules, plain objects (`o` records of named
//! classes with Object's allocator and no dump hooks), and Structs of named `Struct.new`
//! classes (`S` records; keyword_init ones load through a keyword Hash, as MRI does),
//! Strings, Arrays and Hashes of named subclasses (`C` records), objects of named
//! classes with user dump hooks (`U`: `marshal_dump`/`marshal_load`; `u`: `_dump`/`_load`),
//! Regexps (`/`), instance variables on Strings, Arrays, Hashes and Structs (`I`
//! records), compare_by_identity Hashes (`C:Hash`), ruby2_keywords Hashes (`K`), Ranges
//! (`o:Range` through Range's compat dumper; subclasses dump only), and Rationals and
//! Complexes (`U` records of their core `marshal_dump`), and exceptions (`o` records
//! with `mesg`, `bt` and a subclass's ivars; raised ones, holding a backtrace object,
//! are dumped by the stdlib); objects extended with named modules (`e` records),
//! `_dump_data`/`_load_data` objects (`d` records), Times with ivars, and Range and
//! Regexp subclasses (see `extended`).
//!
//! `RustyStdlib::Marshal.native_dump(obj, limit)` returns the dump as a String, or `nil`
//! when the graph holds anything outside the native subset (then the shim calls the
//! stdlib's `Marshal.dump` for the whole call); `native_dump_to(obj, port, limit)` writes
//! it to an IO-like port as MRI does and returns the port (see `port.rs`), or `nil`. `native_load(source, freeze, fallback)`
//! returns the loaded object, or `fallback` when the bytes are outside the subset or
//! malformed in any way (then the shim calls the stdlib on the same input, which also
//! produces the stdlib's exact exception). Both raise what a hook raises (and MRI's
//! errors for what a hook returns). `native_load_proc` is the load with a proc
//! (`proc_load.rs`), `native_load_from` the load from an IO-like port (`port.rs`).
//!
//! The decision to fall back never follows a side effect Ruby code could see. Without
//! hooks, the native dump runs no Ruby code at all (`respond_to?` overrides, singletons
//! and autoloads send the call to the stdlib before anything is written), and the native
//! load only allocates objects with core allocators, interns symbols and reads loaded
//! constants before it gives up (classes with their own `hash`/`eql?`, which inserting a
//! Hash key would call, are left to the stdlib). Before the first hook runs, a scan of
//! the whole graph (dump) or input (load), with hook objects as leaves, proves everything
//! outside hook results native; only something outside the native set inside a
//! `marshal_dump` result (or a hook changing what the scan saw) can still send the call
//! to the stdlib afterwards, which then runs the hooks a second time. Recursion is
//! bounded by a depth cap and by `ruby_stack_check`, so deep graphs and small
//! thread/fiber stacks fall back instead of overflowing; panics are caught and fall back
//! too.
//!
//! `native_vet` is `safe_load`'s check before any load (`vet.rs`).

mod classes;
mod dump;
mod extended;
mod hooks;
mod ids;
mod key_cache;
mod load;
mod port;
mod proc_load;
mod vet;

use magnus::rb_sys::AsRawValue;
use magnus::{function, prelude::*, Error, RModule, Ruby, Value};
use rb_sys::VALUE;

pub fn init(ruby: &Ruby, root: RModule) -> Result<(), Error> {
    let module = root.define_module("Marshal")?;
    for name in ["DumpTables", "LoadTable"] {
        let class = module.define_class(name, ruby.class_object())?;
        class.undef_default_alloc_func();
    }
    ids::init(ruby);
    crate::helpers::shape::init();
    // Interned now, not inside an ivar walk later.
    extended::data_ids();
    // The stdlib's Marshal works in any Ractor, so ours must too (the statics are set
    // once, before any call). Loads leave no copy of their result on the machine stack
    // (helpers::stack_scrub).
    crate::helpers::ractor::ractor_safe(|| {
        module.define_singleton_method("native_dump", function!(native_dump, 2))?;
        module.define_singleton_method("native_dump_to", function!(native_dump_to, 3))?;
        module.define_singleton_method(
            "native_load",
            crate::scrubbing!(function!(native_load, 3); source, freeze, fallback),
        )?;
        module.define_singleton_method(
            "native_load_from",
            crate::scrubbing!(function!(native_load_from, 4); port, freeze, log, fallback),
        )?;
        module.define_singleton_method(
            "native_load_proc",
            crate::scrubbing!(function!(native_load_proc, 4); source, freeze, proc, fallback),
        )?;
        module.define_singleton_method("native_vet", function!(vet::native_vet, 4))
    })
}

/// The dump of `obj` with depth `limit` (nil for none), or nil to ask for the stdlib; an
/// exception a dump hook raised (or MRI's for what a hook returned) is raised.
fn native_dump(ruby: &Ruby, obj: Value, limit: Value) -> Result<Value, Error> {
    let limit = match ids::dump_limit(limit) {
        Some(limit) => limit,
        None => return Ok(ruby.qnil().as_value()),
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dump::dump(ruby, obj, limit)
    })) {
        Ok(dump::Outcome::Done(bytes)) => Ok(ruby.str_from_slice(&bytes).as_value()),
        Ok(dump::Outcome::Raise(error)) => Err(error),
        _ => Ok(ruby.qnil().as_value()),
    }
}

/// `port` after the dump of `obj` with depth `limit` (nil for none) was written to it as
/// MRI writes it, or nil to ask for the stdlib (then nothing of the port was called);
/// what the port's methods raise is raised.
fn native_dump_to(ruby: &Ruby, obj: Value, port: Value, limit: Value) -> Result<Value, Error> {
    let nil = ruby.qnil().as_value();
    let Some(limit) = ids::dump_limit(limit) else {
        return Ok(nil);
    };
    if port.is_nil() {
        return Ok(nil);
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        port::dump_to(ruby, obj, port, limit)
    })) {
        Ok(Ok(written)) => Ok(written.unwrap_or(nil)),
        Ok(Err(error)) => Err(error),
        Err(_) => Ok(nil),
    }
}

/// The object loaded from the String `source`, or `fallback` to ask for the stdlib; an
/// exception a load hook raised is raised.
fn native_load(ruby: &Ruby, source: Value, freeze: Value, fallback: Value) -> Result<Value, Error> {
    let freeze = freeze.to_bool();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load::load(ruby, source, freeze)
    })) {
        Ok(outcome) => outcome.or_fallback(fallback),
        Err(_) => Ok(fallback),
    }
}

/// The object read from the IO-like `port` with MRI's calls, or `fallback` when the
/// stdlib must continue from the calls recorded in the Array `log` (see `port.rs`).
fn native_load_from(
    ruby: &Ruby,
    port: Value,
    freeze: Value,
    log: Value,
    fallback: Value,
) -> Result<Value, Error> {
    let freeze = freeze.to_bool();
    let mut calls = port::PortCalls::new(log.as_raw());
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        port::load_from(ruby, port, freeze, &mut calls, fallback)
    })) {
        Ok(result) => result?,
        // Calls may have been made: the stdlib continues from the log.
        Err(_) => fallback,
    };
    if result.as_raw() == fallback.as_raw() {
        calls.fill_log()?;
    }
    Ok(result)
}

/// The object loaded from the String `source` with `proc` called as MRI calls it, or
/// `fallback` to ask for the stdlib (decided before the proc first runs); what the proc
/// raises is raised.
fn native_load_proc(
    ruby: &Ruby,
    source: Value,
    freeze: Value,
    proc: Value,
    fallback: Value,
) -> Result<Value, Error> {
    let freeze = freeze.to_bool();
    let proc = proc.as_raw();
    // Procs and Methods only: for anything else MRI's `call` can raise a NoMethodError
    // whose message (error_highlight) depends on where the call was made.
    let callable = unsafe {
        rb_sys::rb_obj_is_proc(proc) == rb_sys::Qtrue as VALUE
            || rb_sys::rb_obj_is_method(proc) == rb_sys::Qtrue as VALUE
    };
    if !callable {
        return Ok(fallback);
    }
    let proc = Some(proc);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load::load_with(ruby, source, freeze, proc, 0)
    })) {
        Ok(outcome) => outcome.or_fallback(fallback),
        Err(_) => Ok(fallback),
    }
}
