//! The native half of json 2.9's `State` API, which differs from 2.6's: `configure`
//! changes only the options it is given (`_configure`, called by the Ruby `configure`
//! in lib/rusty_stdlib/json/generator.rb, as the gem's state.rb calls its C one), an
//! empty or falsy layout string unsets that layout, `script_safe` (alias
//! `escape_slash`) and `strict`, `generate(obj, io)`, and the class method
//! `State.generate(obj, opts, io)` that json 2.9's `JSON.generate` and `JSON.dump` call.

use magnus::{
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    Error, RClass, RHash, RString, Ruby, Value,
};
use rb_sys::{ruby_value_type, VALUE};

use crate::helpers::hash::each_pair_quiet;

use super::{check_type, fixnum, get_state, partial_generate, Config, Gen, Layout, State};

/// `string_config` into `layout`: a falsy or empty value unsets it, anything else must
/// be a String (kept with its encoding).
fn set_layout(cfg: &mut Config, layout: Layout, v: Value) -> Result<(), Error> {
    let mut value = None;
    let mut encoding = 0;
    if v.to_bool() {
        check_type(v, ruby_value_type::RUBY_T_STRING)?;
        let string = RString::from_value(v).expect("checked");
        let bytes = unsafe { string.as_slice() };
        encoding = unsafe { rb_sys::rb_enc_get_index(v.as_raw()) };
        if !bytes.is_empty() {
            value = Some(bytes.into());
        }
    }
    *cfg.layout_mut(layout) = value;
    cfg.layout_encodings[layout as usize] = encoding;
    Ok(())
}

/// A layout reader: the String as given (a frozen copy in its encoding), or a frozen
/// empty UTF-8 one when unset.
fn layout(ruby: &Ruby, rb_self: Value, layout: Layout) -> Result<RString, Error> {
    let cfg = get_state(rb_self)?.config.borrow();
    let (bytes, encoding) = match cfg.layout(layout) {
        Some(bytes) => (&bytes[..], cfg.layout_encodings[layout as usize]),
        None => (&b""[..], unsafe { rb_sys::rb_utf8_encindex() }),
    };
    let s = ruby.str_from_slice(bytes);
    unsafe { rb_sys::rb_enc_associate_index(s.as_raw(), encoding) };
    s.freeze();
    Ok(s)
}

/// `long_config`: falsy is 0, anything else read as `FIX2LONG` reads it (the gem does
/// not check the type: a non-Fixnum gives its VALUE shifted right by one).
fn long_config(v: Value) -> i64 {
    if !v.to_bool() {
        0
    } else if let Some(n) = magnus::Fixnum::from_value(v) {
        n.to_i64()
    } else {
        (v.as_raw() as i64) >> 1
    }
}

/// `configure_state`: each Symbol key of `opts` it knows, in the Hash's order. (Keys are
/// told apart by their VALUE: reading each one's name cost about 100 instructions, a
/// tenth of `JSON.pretty_generate` of a small document.)
pub fn configure(state: &State, opts: RHash) -> Result<(), Error> {
    let k = crate::json::option_keys::generator_keys();
    let known = [
        k.indent,
        k.space,
        k.space_before,
        k.object_nl,
        k.array_nl,
        k.max_nesting,
        k.allow_nan,
        k.ascii_only,
        k.depth,
        k.buffer_initial_length,
        k.script_safe,
        k.escape_slash,
        k.strict,
    ];
    // The pairs of known keys are gathered first, by a walk that may not raise, and then
    // applied (a value of the wrong type raises there). Through `RHash::foreach`, its
    // `protect` and a call per pair, a small pretty State's options took about 1,000
    // instructions. A Hash holds each key once: at most `known.len()` pairs.
    let mut pairs = [(0 as VALUE, 0 as VALUE); 13];
    let mut count = 0;
    // SAFETY: `opts` is a live Hash; the walk only reads and compares.
    let walked: Result<(), ()> = unsafe {
        each_pair_quiet(opts.as_raw(), |key, val| {
            if known.contains(&key) {
                pairs[count] = (key, val);
                count += 1;
            }
            Ok(())
        })
    };
    debug_assert!(walked.is_ok());
    // The values stay reachable from `opts`, which no Ruby code runs to change below.
    for &(key, val) in &pairs[..count] {
        let val = unsafe { Value::from_raw(val) };
        let mut cfg = state.config.borrow_mut();
        if key == k.indent {
            set_layout(&mut cfg, Layout::Indent, val)?;
        } else if key == k.space {
            set_layout(&mut cfg, Layout::Space, val)?;
        } else if key == k.space_before {
            set_layout(&mut cfg, Layout::SpaceBefore, val)?;
        } else if key == k.object_nl {
            set_layout(&mut cfg, Layout::ObjectNl, val)?;
        } else if key == k.array_nl {
            set_layout(&mut cfg, Layout::ArrayNl, val)?;
        } else if key == k.max_nesting {
            cfg.max_nesting = long_config(val);
        } else if key == k.allow_nan {
            cfg.allow_nan = val.to_bool();
        } else if key == k.ascii_only {
            cfg.ascii_only = val.to_bool();
        } else if key == k.depth {
            drop(cfg);
            state.depth.set(long_config(val));
        } else if key == k.buffer_initial_length {
            let n = fixnum(val)?;
            if n > 0 {
                cfg.buffer_initial_length = n;
            }
        } else if key == k.script_safe || key == k.escape_slash {
            cfg.escape_slash = val.to_bool();
            cfg.escape_separators = val.to_bool();
        } else if key == k.strict {
            cfg.strict = val.to_bool();
        }
    }
    Ok(())
}

/// `State#_configure(opts)` (private; `opts` already a Hash).
pub fn private_configure(rb_self: Value, opts: RHash) -> Result<Value, Error> {
    configure(get_state(rb_self)?, opts)?;
    Ok(rb_self)
}

/// What `generate` gives back: the JSON text, or `io` after writing it there.
fn deliver(result: RString, io: Value) -> Result<Value, Error> {
    if io.to_bool() {
        let _: Value = io.funcall("write", (result,))?;
        Ok(io)
    } else {
        Ok(result.as_value())
    }
}

/// `State#_generate(obj, io)` (private; the Ruby `generate(obj, io = nil)` calls it).
pub fn private_generate(
    ruby: &Ruby,
    rb_self: Value,
    obj: Value,
    io: Value,
) -> Result<Value, Error> {
    deliver(partial_generate(ruby, rb_self, obj)?, io)
}

/// `State.generate(obj, opts, io)`: a fresh State configured by `opts` (nil, or a Hash).
/// As in the gem (a C struct on its stack), the State is no Ruby object until a
/// `#to_json` needs one (`Gen::spill` makes it then): making one for every call cost
/// more than the rest of a small `JSON.generate(obj, opts)`.
pub fn class_generate(
    ruby: &Ruby,
    _class: RClass,
    obj: Value,
    opts: Value,
    io: Value,
) -> Result<Value, Error> {
    let state = State::default();
    if opts.to_bool() {
        check_type(opts, ruby_value_type::RUBY_T_HASH)?;
        configure(&state, RHash::from_value(opts).expect("checked"))?;
    }
    // SAFETY: nothing changes this State's config from here on: no Ruby code can reach
    // it (a `#to_json` is given a copy, see `Gen::spill`), and we only read it.
    let cfg = std::borrow::Cow::Borrowed(unsafe { &*state.config.as_ptr() });
    // No `#to_json` is given `nil`: the first one spills a State object first.
    let mut gen = Gen::with_state(ruby.qnil().as_value(), &state, cfg);
    gen.spill_pending = true;
    gen.value(ruby, obj)?;
    deliver(gen.finish(ruby), io)
}

/// Layout readers and writers (a falsy or empty value unsets the layout).
macro_rules! layout_accessors {
    ($($get:ident $set:ident $layout:ident),*) => {
        $(
            pub fn $get(ruby: &Ruby, rb_self: Value) -> Result<RString, Error> {
                layout(ruby, rb_self, Layout::$layout)
            }

            pub fn $set(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
                set_layout(&mut get_state(rb_self)?.config.borrow_mut(), Layout::$layout, v)?;
                Ok(ruby.qnil().as_value())
            }
        )*
    };
}

layout_accessors!(indent set_indent Indent, space set_space Space,
    space_before set_space_before SpaceBefore, object_nl set_object_nl ObjectNl,
    array_nl set_array_nl ArrayNl);

pub fn set_max_nesting(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
    get_state(rb_self)?.config.borrow_mut().max_nesting = long_config(v);
    Ok(ruby.qnil().as_value())
}

pub fn set_depth(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
    get_state(rb_self)?.depth.set(long_config(v));
    Ok(ruby.qnil().as_value())
}

pub fn script_safe(rb_self: Value) -> Result<bool, Error> {
    Ok(get_state(rb_self)?.config.borrow().escape_slash)
}

pub fn set_script_safe(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
    let mut cfg = get_state(rb_self)?.config.borrow_mut();
    cfg.escape_slash = v.to_bool();
    cfg.escape_separators = v.to_bool();
    Ok(ruby.qnil().as_value())
}

pub fn strict(rb_self: Value) -> Result<bool, Error> {
    Ok(get_state(rb_self)?.config.borrow().strict)
}

pub fn set_strict(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
    get_state(rb_self)?.config.borrow_mut().strict = v.to_bool();
    Ok(ruby.qnil().as_value())
}

pub fn set_allow_nan(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
    get_state(rb_self)?.config.borrow_mut().allow_nan = v.to_bool();
    Ok(ruby.qnil().as_value())
}

pub fn set_ascii_only(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
    get_state(rb_self)?.config.borrow_mut().ascii_only = v.to_bool();
    Ok(ruby.qnil().as_value())
}

/// Defines the 2.9 methods on our State class.
pub fn define(state: RClass) -> Result<(), Error> {
    use magnus::method;
    state.define_singleton_method("generate", method!(class_generate, 3))?;
    state.define_private_method("_configure", method!(private_configure, 1))?;
    state.define_private_method("_generate", method!(private_generate, 2))?;
    state.define_method("indent", method!(indent, 0))?;
    state.define_method("indent=", method!(set_indent, 1))?;
    state.define_method("space", method!(space, 0))?;
    state.define_method("space=", method!(set_space, 1))?;
    state.define_method("space_before", method!(space_before, 0))?;
    state.define_method("space_before=", method!(set_space_before, 1))?;
    state.define_method("object_nl", method!(object_nl, 0))?;
    state.define_method("object_nl=", method!(set_object_nl, 1))?;
    state.define_method("array_nl", method!(array_nl, 0))?;
    state.define_method("array_nl=", method!(set_array_nl, 1))?;
    state.define_method("max_nesting=", method!(set_max_nesting, 1))?;
    state.define_method("depth=", method!(set_depth, 1))?;
    state.define_method("script_safe", method!(script_safe, 0))?;
    state.define_method("script_safe?", method!(script_safe, 0))?;
    state.define_method("script_safe=", method!(set_script_safe, 1))?;
    state.define_alias("escape_slash", "script_safe")?;
    state.define_alias("escape_slash?", "script_safe?")?;
    state.define_alias("escape_slash=", "script_safe=")?;
    state.define_method("strict", method!(strict, 0))?;
    state.define_method("strict?", method!(strict, 0))?;
    state.define_method("strict=", method!(set_strict, 1))?;
    state.define_method("allow_nan=", method!(set_allow_nan, 1))?;
    state.define_method("ascii_only=", method!(set_ascii_only, 1))?;
    Ok(())
}
