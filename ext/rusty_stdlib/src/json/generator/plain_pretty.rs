//! `JSON.pretty_generate(obj)` without json's Ruby around it (json 2.x).
//!
//! In the gem that call is `JSON.create_pretty_state.generate(obj)`: a Ruby method that
//! builds an options Hash and calls `State.new`, whose `initialize` and `configure` are
//! Ruby on json 2.9 (as ours are, see lib/rusty_stdlib/json/generator.rb), then
//! `State#generate`. For a small document those frames were nine-tenths of the call
//! (callgrind on Ruby 3.3: 13,491 instructions, the walk 3,700), so ours was no faster
//! than the gem. Here the pretty layout that `create_pretty_state` configures is written
//! as `JSON.generate(obj)` writes the compact one: no State object, and the gem's own
//! `pretty_generate` wherever the walk would need Ruby (a `#to_json`, an error).
//!
//! That is the gem's call only while `create_pretty_state` is the gem's. An app may
//! redefine it (to indent by four spaces, say), so at every call the method
//! `JSON.create_pretty_state` reaches is compared with the one the shim remembered when
//! it swapped `pretty_generate` in, which it does only while that one is json's own.
//! Ruby 3.3 and 3.4 export no method-entry lookup, so this takes a Method object (about
//! 900 instructions in all), still a small part of what the Ruby frames cost.

use std::sync::OnceLock;

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue},
    value::Lazy,
    Error, RArray, RModule, Ruby, Value,
};
use rusty_core::json::layout_bytes::LayoutBytes;

use super::{names_state, try_generate, Config, DEFAULT_CONFIG, STATE_CLASS, STATE_IS_OURS};
use crate::helpers::raw::class_of;
use crate::helpers::replaced::Replaced;

/// What `State.new(indent: "  ", space: " ", object_nl: "\n", array_nl: "\n")` (json
/// 2.x's `create_pretty_state`) configures.
static PRETTY_CONFIG: Config = Config {
    indent: Some(LayoutBytes::short(b"  ")),
    space: Some(LayoutBytes::short(b" ")),
    object_nl: Some(LayoutBytes::short(b"\n")),
    array_nl: Some(LayoutBytes::short(b"\n")),
    ..DEFAULT_CONFIG
};

/// The gem's `JSON.method(:create_pretty_state)`, as the shim found it (one element, or
/// none before it remembers one). Kept in an Array that the GC marks.
static REMEMBERED: Lazy<RArray> = Lazy::new(|ruby| ruby.ary_new());

/// The gem's JSON.pretty_generate, kept by the swap as a private alias.
static STDLIB_PRETTY_GENERATE: Replaced = Replaced::new(c"__rusty_stdlib_stdlib_pretty_generate");

static ID_CREATE_PRETTY_STATE: OnceLock<rb_sys::ID> = OnceLock::new();

fn create_pretty_state_id() -> rb_sys::ID {
    crate::helpers::ids::id(&ID_CREATE_PRETTY_STATE, c"create_pretty_state")
}

/// `RustyStdlib::JSON::PlainPrettyGenerate`: `#pretty_generate`, swapped in for
/// `JSON.pretty_generate`, and `.remember_pretty_state(method)`, which the shim calls
/// with json's `create_pretty_state` before the swap.
pub(super) fn define(json: RModule) -> Result<(), Error> {
    use magnus::{function, method};
    let plain = json.define_module("PlainPrettyGenerate")?;
    plain.define_method("pretty_generate", method!(pretty_generate, -1))?;
    plain.define_singleton_method("remember_pretty_state", function!(remember_pretty_state, 1))?;
    // Interned now, in the main Ractor (see `Replaced::id`).
    STDLIB_PRETTY_GENERATE.id();
    create_pretty_state_id();
    method_iseq();
    Ok(())
}

fn remember_pretty_state(ruby: &Ruby, method: Value) -> Result<Value, Error> {
    let remembered = ruby.get_inner(&REMEMBERED);
    remembered.clear()?;
    remembered.push(method)?;
    Ok(method)
}

/// `JSON.pretty_generate(obj)` (or with `nil`) written here while `JSON::State` is ours
/// and `create_pretty_state` the gem's; every other call is the gem's method, with the
/// arguments as given.
fn pretty_generate(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    if let Some(obj) = super::option_less(args) {
        let ours = ruby.get_inner(&STATE_CLASS).as_raw();
        if names_state(rb_self.as_raw(), ours, &STATE_IS_OURS)? && pretty_state_stock(ruby, rb_self)
        {
            if let Some(result) = try_generate(ruby, obj, &PRETTY_CONFIG)? {
                return Ok(result.as_value());
            }
        }
    }
    STDLIB_PRETTY_GENERATE.call(rb_self, args)
}

/// Whether `json.create_pretty_state` reaches the method remembered: a Method with the
/// same instruction sequence (`rb_method_iseq`, which libruby 3.1 to 3.4 exports without
/// declaring it; Method#== through a method call cost as much again). A redefinition, an
/// alias of another method or a prepended module's method has another, a C function
/// none. A method not there at all, or anything raised on the way, is a no: the gem's
/// `pretty_generate` then runs and meets it itself.
fn pretty_state_stock(ruby: &Ruby, json: Value) -> bool {
    let Some(method_iseq) = method_iseq() else {
        return false;
    };
    let Ok(remembered) = ruby.get_inner(&REMEMBERED).entry::<Value>(0) else {
        return false;
    };
    if remembered.is_nil() {
        return false;
    }
    let json = json.as_raw();
    let id = create_pretty_state_id();
    // rb_method_boundp first: for a missing method, rb_obj_method would call the app's
    // respond_to_missing?, which the gem's call runs too (it must run only once). With
    // BOUND_PRIVATE (method.h), a method made private is not bound either: the gem's
    // `JSON.create_pretty_state` could not call it.
    const BOUND_PRIVATE: std::os::raw::c_int = 1;
    if unsafe { rb_sys::rb_method_boundp(class_of(json), id, BOUND_PRIVATE) } == 0 {
        return false;
    }
    let same = protect(|| unsafe {
        let now = rb_sys::rb_obj_method(json, rb_sys::rb_id2sym(id));
        let iseq = method_iseq(now);
        let same = !iseq.is_null() && iseq == method_iseq(remembered.as_raw());
        std::hint::black_box(now);
        if same {
            rb_sys::Qtrue as rb_sys::VALUE
        } else {
            rb_sys::Qfalse as rb_sys::VALUE
        }
    });
    matches!(same, Ok(answer) if answer == rb_sys::Qtrue as rb_sys::VALUE)
}

type MethodIseq = unsafe extern "C" fn(rb_sys::VALUE) -> *const std::ffi::c_void;

/// `rb_method_iseq(method)`, looked up once (`None` where libruby lacks it).
fn method_iseq() -> Option<MethodIseq> {
    static LOOKUP: OnceLock<Option<MethodIseq>> = OnceLock::new();
    *LOOKUP.get_or_init(|| unsafe {
        let symbol = libc::dlsym(libc::RTLD_DEFAULT, c"rb_method_iseq".as_ptr());
        // SAFETY: `const rb_iseq_t *rb_method_iseq(VALUE method)` (proc.c).
        (!symbol.is_null())
            .then(|| std::mem::transmute::<*mut std::ffi::c_void, MethodIseq>(symbol))
    })
}
