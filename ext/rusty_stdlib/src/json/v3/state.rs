//! json 3's `JSON::State` (`JSON::Ext::Generator::State`): its configuration, readers and
//! writers, `_configure`, `initialize_copy`, and the class methods `generate`,
//! `_generate_no_fallback` and `from_state`. The generation itself is in `generate.rs`;
//! the methods json writes in Ruby (`initialize`, `configure`, `to_h`) are in
//! lib/rusty_stdlib/json/generator_v3.rb.

use std::cell::RefCell;

use magnus::{
    gc::Marker,
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    value::Lazy,
    DataTypeFunctions, Error, RClass, RModule, Ruby, TypedData, Value,
};
use rb_sys::{ruby_value_type, VALUE};

use super::generate::{generate, Fallback};
use crate::helpers::error::c_error;
use crate::helpers::hash::each_pair_quiet;
use crate::json::option_keys::generator_keys as keys;

const QNIL: VALUE = rb_sys::Qnil as VALUE;
const QFALSE: VALUE = rb_sys::Qfalse as VALUE;
const QTRUE: VALUE = rb_sys::Qtrue as VALUE;

/// What json 3 does with a Hash holding both a String and a Symbol key of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicates {
    Raise,
    Ignore,
}

/// A State's settings. The VALUEs are 0 where the gem has `Qfalse` (not set); layout
/// strings are frozen copies, never empty.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub indent: VALUE,
    pub space: VALUE,
    pub space_before: VALUE,
    pub object_nl: VALUE,
    pub array_nl: VALUE,
    /// A Proc (strict mode calls it for what JSON has no type for).
    pub as_json: VALUE,
    /// A Proc given each Hash, returning the Hash to write.
    pub sort_keys: VALUE,
    pub max_nesting: i64,
    pub depth: i64,
    pub buffer_initial_length: i64,
    pub duplicates: Duplicates,
    pub allow_nan: bool,
    pub ascii_only: bool,
    pub script_safe: bool,
    pub strict: bool,
    /// RFC 8785 canonical output: the gem's generator writes it (with its Ruby procs).
    pub rfc8785: bool,
}

impl Config {
    /// A new State's (`state_init`).
    pub const DEFAULT: Config = Config {
        indent: 0,
        space: 0,
        space_before: 0,
        object_nl: 0,
        array_nl: 0,
        as_json: 0,
        sort_keys: 0,
        max_nesting: 100,
        depth: 0,
        buffer_initial_length: 1024,
        duplicates: Duplicates::Raise,
        allow_nan: false,
        ascii_only: false,
        script_safe: false,
        strict: false,
        rfc8785: false,
    };

    fn values(&self) -> [VALUE; 7] {
        [
            self.indent,
            self.space,
            self.space_before,
            self.object_nl,
            self.array_nl,
            self.as_json,
            self.sort_keys,
        ]
    }
}

/// `RustyStdlib::JSON::V3::State`, which is `JSON::State` once ours is installed.
#[derive(TypedData)]
#[magnus(
    class = "RustyStdlib::JSON::V3::State",
    free_immediately,
    mark,
    size,
    frozen_shareable
)]
pub struct State {
    pub config: RefCell<Config>,
}

// SAFETY: a State changes only through writers that refuse a frozen one, and only a
// frozen one is shared between Ractors (`frozen_shareable`); the GVL orders the rest.
unsafe impl Sync for State {}

impl Default for State {
    fn default() -> Self {
        State {
            config: RefCell::new(Config::DEFAULT),
        }
    }
}

impl DataTypeFunctions for State {
    fn mark(&self, _marker: &Marker) {
        if let Ok(config) = self.config.try_borrow() {
            for v in config.values() {
                if v != 0 {
                    unsafe { rb_sys::rb_gc_mark(v) };
                }
            }
        }
    }
}

pub static STATE_CLASS: Lazy<RClass> = Lazy::new(|ruby| {
    let root: RModule = ruby.class_object().const_get("RustyStdlib").unwrap();
    let json: RModule = root.const_get("JSON").unwrap();
    let v3: RModule = json.const_get("V3").unwrap();
    v3.const_get("State").unwrap()
});

/// The State behind `v` (a State of ours, or a subclass's).
pub fn get(v: Value) -> Result<&'static State, Error> {
    let obj = magnus::typed_data::Obj::<State>::try_convert(v)?;
    let ptr: *const State = &*obj;
    // The State object is on the caller's stack for as long as the reference is used.
    Ok(unsafe { &*ptr })
}

fn check_frozen(v: Value) -> Result<(), Error> {
    let raw = v.as_raw();
    protect(|| unsafe {
        rb_sys::rb_check_frozen(raw);
        QNIL
    })?;
    Ok(())
}

fn check_type(v: VALUE, t: ruby_value_type) -> Result<(), Error> {
    if unsafe { rb_sys::RB_TYPE_P(v, t) } {
        return Ok(());
    }
    protect(|| {
        unsafe { rb_sys::rb_check_type(v, t as i32) };
        QNIL
    })?;
    Ok(())
}

fn truthy(v: VALUE) -> bool {
    v != QNIL && v != QFALSE
}

/// `string_config`: a non-empty String as a frozen copy (0 for nil, false or "").
fn string_config(v: VALUE) -> Result<VALUE, Error> {
    if !truthy(v) {
        return Ok(0);
    }
    check_type(v, ruby_value_type::RUBY_T_STRING)?;
    if unsafe { rb_sys::RSTRING_LEN(v) } == 0 {
        return Ok(0);
    }
    protect(|| unsafe { rb_sys::rb_str_new_frozen(v) })
}

/// `NUM2LONG` (Integer conversion with its TypeError / RangeError).
fn num2long(v: VALUE) -> Result<i64, Error> {
    if v & 1 == 1 {
        return Ok((v as i64) >> 1);
    }
    let mut out = 0i64;
    let out_ptr = &mut out as *mut i64 as usize;
    protect(|| unsafe {
        *(out_ptr as *mut i64) = rb_sys::rb_num2long(v) as i64;
        QNIL
    })?;
    Ok(out)
}

/// `max_nesting`'s `long_config`: 0 for nil or false.
fn long_config(v: VALUE) -> Result<i64, Error> {
    if truthy(v) {
        num2long(v)
    } else {
        Ok(0)
    }
}

/// `depth_config`: 0 for nil or false, never negative, at most `INT_MAX`.
fn depth_config(ruby: &Ruby, v: VALUE) -> Result<i64, Error> {
    if !truthy(v) {
        return Ok(0);
    }
    let d = num2long(v)?;
    if d < 0 {
        return Err(c_error(
            ruby,
            ruby.exception_arg_error(),
            &format!("depth must be >= 0 (got {d})"),
        ));
    }
    if d > i32::MAX as i64 {
        return Err(c_error(
            ruby,
            ruby.exception_arg_error(),
            &format!("depth is too large (got {d})"),
        ));
    }
    Ok(d)
}

/// `buffer_initial_length_set`: a Fixnum; only a positive one changes the setting.
fn buffer_initial_length(config: &mut Config, v: VALUE) -> Result<(), Error> {
    check_type(v, ruby_value_type::RUBY_T_FIXNUM)?;
    let n = (v as i64) >> 1;
    if n > 0 {
        config.buffer_initial_length = n;
    }
    Ok(())
}

/// A Proc for `as_json` (`to_proc` for anything else that has one).
fn proc_config(ruby: &Ruby, v: VALUE) -> Result<VALUE, Error> {
    if unsafe { rb_sys::rb_obj_is_proc(v) } == QTRUE {
        return Ok(v);
    }
    let value = unsafe { Value::from_raw(v) };
    if value.respond_to("to_proc", false)? {
        let proc: Value = value.funcall("to_proc", ())?;
        if unsafe { rb_sys::rb_obj_is_proc(proc.as_raw()) } == QTRUE {
            return Ok(proc.as_raw());
        }
    }
    Err(c_error(
        ruby,
        ruby.exception_type_error(),
        "as_json must be a Proc",
    ))
}

/// `normalize_sort_keys`: a Proc as it is, true as the default Proc, false or nil as none.
fn sort_keys_config(ruby: &Ruby, v: VALUE) -> Result<VALUE, Error> {
    if unsafe { rb_sys::rb_obj_is_proc(v) } == QTRUE {
        Ok(v)
    } else if v == QTRUE {
        default_sort_keys_proc(ruby)
    } else if truthy(v) {
        Err(c_error(
            ruby,
            ruby.exception_type_error(),
            "The `sort_keys` argument must be a boolean or a Proc",
        ))
    } else {
        Ok(0)
    }
}

/// The Proc `sort_keys: true` stands for (set once by lib/rusty_stdlib/json/generator_v3.rb).
fn default_sort_keys_proc(ruby: &Ruby) -> Result<VALUE, Error> {
    let proc: Value = ruby
        .get_inner(&STATE_CLASS)
        .ivar_get("@default_sort_keys_proc")?;
    Ok(if proc.is_nil() { 0 } else { proc.as_raw() })
}

/// `configure_state`: applies the options of Hash `opts` (nil or false: none) in the
/// Hash's order; an unknown key raises ArgumentError once all are read, and the
/// settings read so far stay, as in the gem. Then the RFC 8785 checks.
pub fn configure(ruby: &Ruby, config: &mut Config, opts: VALUE) -> Result<(), Error> {
    if !truthy(opts) {
        return Ok(());
    }
    check_type(opts, ruby_value_type::RUBY_T_HASH)?;
    if unsafe { rb_sys::rb_hash_size_num(opts) } == 0 {
        return Ok(());
    }
    // Collected without running Ruby code, then applied in order: applying may convert,
    // which may run Ruby code that changes `opts`. The usual few pairs go into an array
    // on the machine stack (which Ruby's GC scans, so they stay alive), more into a Ruby
    // Array (a Ruby Array for every call took a tenth of a small `pretty_generate`).
    const ON_STACK: usize = 16;
    let mut stacked = [0 as VALUE; 2 * ON_STACK];
    let mut count = 0;
    let pairs = if unsafe { rb_sys::rb_hash_size_num(opts) } as usize <= ON_STACK {
        unsafe {
            let _ = each_pair_quiet::<()>(opts, |key, v| {
                if count < 2 * ON_STACK {
                    stacked[count] = key;
                    stacked[count + 1] = v;
                    count += 2;
                }
                Ok(())
            });
        }
        QNIL
    } else {
        let pairs = unsafe { rb_sys::rb_ary_new() };
        unsafe {
            let _ = each_pair_quiet::<()>(opts, |key, v| {
                rb_sys::rb_ary_push(pairs, key);
                rb_sys::rb_ary_push(pairs, v);
                Ok(())
            });
            count = rb_sys::RARRAY_LEN(pairs) as usize;
        }
        pairs
    };
    let k = keys();
    let mut unknown = false;
    for i in (0..count).step_by(2) {
        let (key, v) = if pairs == QNIL {
            (stacked[i], stacked[i + 1])
        } else {
            unsafe {
                (
                    rb_sys::rb_ary_entry(pairs, i as _),
                    rb_sys::rb_ary_entry(pairs, (i + 1) as _),
                )
            }
        };
        let c = &mut *config;
        match key {
            _ if key == k.indent => c.indent = string_config(v)?,
            _ if key == k.space => c.space = string_config(v)?,
            _ if key == k.space_before => c.space_before = string_config(v)?,
            _ if key == k.object_nl => c.object_nl = string_config(v)?,
            _ if key == k.array_nl => c.array_nl = string_config(v)?,
            _ if key == k.max_nesting => c.max_nesting = long_config(v)?,
            _ if key == k.allow_nan => c.allow_nan = truthy(v),
            _ if key == k.ascii_only => c.ascii_only = truthy(v),
            _ if key == k.depth => c.depth = depth_config(ruby, v)?,
            _ if key == k.buffer_initial_length => buffer_initial_length(c, v)?,
            _ if key == k.script_safe => c.script_safe = truthy(v),
            _ if key == k.strict => c.strict = truthy(v),
            _ if key == k.allow_duplicate_key => {
                c.duplicates = if truthy(v) {
                    Duplicates::Ignore
                } else {
                    Duplicates::Raise
                }
            }
            _ if key == k.as_json => c.as_json = if truthy(v) { proc_config(ruby, v)? } else { 0 },
            _ if key == k.sort_keys => c.sort_keys = sort_keys_config(ruby, v)?,
            _ if key == k.rfc8785 => c.rfc8785 = truthy(v),
            _ => unknown = true,
        }
    }
    if unknown {
        let k = keys();
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
            k.strict,
            k.allow_duplicate_key,
            k.as_json,
            k.sort_keys,
            k.rfc8785,
        ];
        return Err(super::error::unknown_keywords_in(opts, &known));
    }
    std::hint::black_box((pairs, &stacked));
    check_rfc8785(ruby, config)
}

/// With `rfc8785`, the settings RFC 8785 output cannot have raise ArgumentError.
pub fn check_rfc8785(ruby: &Ruby, c: &Config) -> Result<(), Error> {
    if !c.rfc8785 {
        return Ok(());
    }
    let conflicts = [
        ("indent", c.indent != 0),
        ("space", c.space != 0),
        ("space_before", c.space_before != 0),
        ("object_nl", c.object_nl != 0),
        ("array_nl", c.array_nl != 0),
        ("ascii_only", c.ascii_only),
        ("script_safe", c.script_safe),
        ("allow_nan", c.allow_nan),
    ];
    match conflicts.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(c_error(
            ruby,
            ruby.exception_arg_error(),
            &format!("{name} cannot be used with rfc8785"),
        )),
        None => Ok(()),
    }
}

impl State {
    fn configure_method(ruby: &Ruby, rb_self: Value, opts: Value) -> Result<Value, Error> {
        check_frozen(rb_self)?;
        let state = get(rb_self)?;
        let mut config = *state.config.borrow();
        let result = configure(ruby, &mut config, opts.as_raw());
        // Settings read before an error stay, as in the gem.
        *state.config.borrow_mut() = config;
        result.map(|()| rb_self)
    }

    fn initialize_copy(ruby: &Ruby, rb_self: Value, orig: Value) -> Result<Value, Error> {
        if rb_self.as_raw() == orig.as_raw() {
            return Ok(rb_self);
        }
        let (dst, src) = (get(rb_self), get(orig)?);
        let dst =
            dst.map_err(|_| c_error(ruby, ruby.exception_arg_error(), "unallocated JSON::State"))?;
        *dst.config.borrow_mut() = *src.config.borrow();
        Ok(rb_self)
    }

    /// `State.from_state(opts)`: a State of this class as it is, a Hash as `new(opts)`,
    /// anything else as a new default State (of our State class itself). A State of the
    /// gem's made by name is a State to ours as it is to the gem's own class, which is
    /// JSON::State without us (see [`State::case_eq`]).
    fn from_state(ruby: &Ruby, rb_self: RClass, opts: Value) -> Result<Value, Error> {
        if opts.is_kind_of(rb_self) || is_gem_state_for(ruby, rb_self, opts)? {
            Ok(opts)
        } else if opts.is_kind_of(ruby.class_hash()) {
            rb_self.funcall("new", (opts,))
        } else {
            ruby.get_inner(&STATE_CLASS).new_instance(())
        }
    }

    /// `State === obj`, which json's Ruby code asks before it uses the options given to
    /// `JSON.generate` or `pretty_generate` as a State: with the gem installed, a
    /// `JSON::Ext::Generator::State` made by name is one, and the call then generates
    /// with it, so ours says the same.
    fn case_eq(ruby: &Ruby, rb_self: RClass, obj: Value) -> Result<bool, Error> {
        Ok(obj.is_kind_of(rb_self) || is_gem_state_for(ruby, rb_self, obj)?)
    }

    fn generate_method(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
        let (obj, io) = obj_and_io(ruby, args)?;
        let config = *get(rb_self)?.config.borrow();
        generate(ruby, Some(rb_self), config, obj, io, Fallback::Yes)
    }

    fn generate_no_fallback_method(
        ruby: &Ruby,
        rb_self: Value,
        args: &[Value],
    ) -> Result<Value, Error> {
        let (obj, io) = obj_and_io(ruby, args)?;
        let config = *get(rb_self)?.config.borrow();
        generate(ruby, Some(rb_self), config, obj, io, Fallback::No)
    }

    /// `State.generate(obj, opts, io)`: a State of its own, configured from `opts`.
    fn class_generate(
        ruby: &Ruby,
        _class: Value,
        obj: Value,
        opts: Value,
        io: Value,
    ) -> Result<Value, Error> {
        class_generate(ruby, obj, opts, io)
    }

    fn class_generate_no_fallback(
        ruby: &Ruby,
        _class: Value,
        obj: Value,
        opts: Value,
        io: Value,
    ) -> Result<Value, Error> {
        configured_generate(ruby, obj, opts, io, Fallback::No)
    }
}

/// Whether the options Hash `opts` has an `rfc8785` key (a lookup that runs no Ruby code:
/// Symbol keys hash natively).
pub(super) fn names_rfc8785(opts: VALUE) -> bool {
    let undef = rb_sys::Qundef as VALUE;
    unsafe { rb_sys::rb_hash_lookup2(opts, keys().rfc8785, undef) != undef }
}

/// `State.generate(obj, opts, io)`: a generation configured by `opts` (nil or a Hash),
/// with no State object (RFC 8785 output is the gem's).
pub(super) fn class_generate(
    ruby: &Ruby,
    obj: Value,
    opts: Value,
    io: Value,
) -> Result<Value, Error> {
    configured_generate(ruby, obj, opts, io, Fallback::Yes)
}

/// `class_generate`, and with `Fallback::No` `State._generate_no_fallback(obj, opts, io)`:
/// RFC 8785 output goes to the gem's class method of the same name.
fn configured_generate(
    ruby: &Ruby,
    obj: Value,
    opts: Value,
    io: Value,
    fallback: Fallback,
) -> Result<Value, Error> {
    let mut config = Config::DEFAULT;
    configure(ruby, &mut config, opts.as_raw())?;
    if config.rfc8785 {
        let method = match fallback {
            Fallback::Yes => "generate",
            Fallback::No => "_generate_no_fallback",
        };
        return gem_state_class(ruby)?.funcall(method, (obj, opts, io));
    }
    generate(ruby, None, config, obj, io, fallback)
}

/// Whether `obj` is a State of the gem's own class while `class` is our State class
/// itself (a subclass of ours looks only for its own instances, as the gem's does).
fn is_gem_state_for(ruby: &Ruby, class: RClass, obj: Value) -> Result<bool, Error> {
    if class.as_raw() != ruby.get_inner(&STATE_CLASS).as_raw()
        || unsafe { !rb_sys::RB_TYPE_P(obj.as_raw(), ruby_value_type::RUBY_T_DATA) }
    {
        return Ok(false);
    }
    Ok(obj.is_kind_of(gem_state_class(ruby)?))
}

/// The gem's own State class, `JSON::Ext::Generator::State` (which writes RFC 8785).
pub fn gem_state_class(ruby: &Ruby) -> Result<RClass, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    let ext: RModule = json.const_get("Ext")?;
    let generator: RModule = ext.const_get("Generator")?;
    generator.const_get("State")
}

/// `rb_check_arity(argc, 1, 2)`: the object and the IO (nil without one).
fn obj_and_io(ruby: &Ruby, args: &[Value]) -> Result<(Value, Value), Error> {
    match args {
        [obj] => Ok((*obj, ruby.qnil().as_value())),
        [obj, io] => Ok((*obj, *io)),
        _ => Err(c_error(
            ruby,
            ruby.exception_arg_error(),
            &format!(
                "wrong number of arguments (given {}, expected 1..2)",
                args.len()
            ),
        )),
    }
}

/// A layout String's reader: the frozen copy, or a new frozen "" when unset.
fn layout_reader(ruby: &Ruby, v: VALUE) -> Value {
    if v != 0 {
        return unsafe { Value::from_raw(v) };
    }
    let empty = ruby.str_new("");
    empty.freeze();
    empty.as_value()
}

macro_rules! layout_accessors {
    ($($field:ident $get:ident $set:ident),*) => {
        impl State {
            $(
                fn $get(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
                    Ok(layout_reader(ruby, get(rb_self)?.config.borrow().$field))
                }

                fn $set(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
                    check_frozen(rb_self)?;
                    let value = string_config(v.as_raw())?;
                    get(rb_self)?.config.borrow_mut().$field = value;
                    Ok(ruby.qnil().as_value())
                }
            )*
        }
    };
}

layout_accessors!(indent indent set_indent, space space set_space,
    space_before space_before set_space_before, object_nl object_nl set_object_nl,
    array_nl array_nl set_array_nl);

macro_rules! flag_accessors {
    ($($field:ident $get:ident $set:ident),*) => {
        impl State {
            $(
                fn $get(rb_self: Value) -> Result<bool, Error> {
                    Ok(get(rb_self)?.config.borrow().$field)
                }

                fn $set(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
                    check_frozen(rb_self)?;
                    get(rb_self)?.config.borrow_mut().$field = truthy(v.as_raw());
                    Ok(ruby.qnil().as_value())
                }
            )*
        }
    };
}

flag_accessors!(allow_nan allow_nan set_allow_nan, ascii_only ascii_only set_ascii_only,
    script_safe script_safe set_script_safe, strict strict set_strict,
    rfc8785 rfc8785 set_rfc8785);

impl State {
    fn as_json(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
        let v = get(rb_self)?.config.borrow().as_json;
        Ok(if v == 0 {
            ruby.qfalse().as_value()
        } else {
            unsafe { Value::from_raw(v) }
        })
    }

    fn set_as_json(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        check_frozen(rb_self)?;
        let proc = proc_config(ruby, v.as_raw())?;
        get(rb_self)?.config.borrow_mut().as_json = proc;
        Ok(ruby.qnil().as_value())
    }

    fn sort_keys(ruby: &Ruby, rb_self: Value) -> Result<Value, Error> {
        let v = get(rb_self)?.config.borrow().sort_keys;
        Ok(if v == 0 {
            ruby.qfalse().as_value()
        } else {
            unsafe { Value::from_raw(v) }
        })
    }

    fn set_sort_keys(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        check_frozen(rb_self)?;
        let proc = sort_keys_config(ruby, v.as_raw())?;
        get(rb_self)?.config.borrow_mut().sort_keys = proc;
        Ok(ruby.qnil().as_value())
    }

    fn max_nesting(rb_self: Value) -> Result<i64, Error> {
        Ok(get(rb_self)?.config.borrow().max_nesting)
    }

    fn set_max_nesting(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        check_frozen(rb_self)?;
        let n = long_config(v.as_raw())?;
        get(rb_self)?.config.borrow_mut().max_nesting = n;
        Ok(ruby.qnil().as_value())
    }

    fn check_circular(rb_self: Value) -> Result<bool, Error> {
        Ok(get(rb_self)?.config.borrow().max_nesting != 0)
    }

    fn depth(rb_self: Value) -> Result<i64, Error> {
        Ok(get(rb_self)?.config.borrow().depth)
    }

    fn set_depth(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        check_frozen(rb_self)?;
        let d = depth_config(ruby, v.as_raw())?;
        get(rb_self)?.config.borrow_mut().depth = d;
        Ok(ruby.qnil().as_value())
    }

    fn buffer_initial_length(rb_self: Value) -> Result<i64, Error> {
        Ok(get(rb_self)?.config.borrow().buffer_initial_length)
    }

    fn set_buffer_initial_length(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        check_frozen(rb_self)?;
        let state = get(rb_self)?;
        let mut config = *state.config.borrow();
        buffer_initial_length(&mut config, v.as_raw())?;
        *state.config.borrow_mut() = config;
        Ok(ruby.qnil().as_value())
    }

    fn allow_duplicate_key(rb_self: Value) -> Result<bool, Error> {
        Ok(get(rb_self)?.config.borrow().duplicates == Duplicates::Ignore)
    }

    /// `State.default_sort_keys_proc = proc`.
    fn set_default_sort_keys_proc(
        ruby: &Ruby,
        rb_self: RClass,
        proc: Value,
    ) -> Result<Value, Error> {
        if unsafe { rb_sys::rb_obj_is_proc(proc.as_raw()) } != QTRUE {
            return Err(c_error(
                ruby,
                ruby.exception_type_error(),
                "sort_key_proc must be a Proc",
            ));
        }
        rb_self.ivar_set("@default_sort_keys_proc", proc)?;
        Ok(proc)
    }
}

pub fn define(ruby: &Ruby, v3: RModule) -> Result<(), Error> {
    use magnus::method;
    let state = v3.define_class("State", ruby.class_object())?;
    state.define_alloc_func::<State>();
    state.define_singleton_method("from_state", method!(State::from_state, 1))?;
    state.define_singleton_method("===", method!(State::case_eq, 1))?;
    state.define_singleton_method("generate", method!(State::class_generate, 3))?;
    state.define_singleton_method(
        "_generate_no_fallback",
        method!(State::class_generate_no_fallback, 3),
    )?;
    state.define_singleton_method(
        "default_sort_keys_proc=",
        method!(State::set_default_sort_keys_proc, 1),
    )?;
    state.define_private_method("_configure", method!(State::configure_method, 1))?;
    state.define_method("initialize_copy", method!(State::initialize_copy, 1))?;
    state.define_method("indent", method!(State::indent, 0))?;
    state.define_method("indent=", method!(State::set_indent, 1))?;
    state.define_method("space", method!(State::space, 0))?;
    state.define_method("space=", method!(State::set_space, 1))?;
    state.define_method("space_before", method!(State::space_before, 0))?;
    state.define_method("space_before=", method!(State::set_space_before, 1))?;
    state.define_method("object_nl", method!(State::object_nl, 0))?;
    state.define_method("object_nl=", method!(State::set_object_nl, 1))?;
    state.define_method("array_nl", method!(State::array_nl, 0))?;
    state.define_method("array_nl=", method!(State::set_array_nl, 1))?;
    state.define_method("as_json", method!(State::as_json, 0))?;
    state.define_method("as_json=", method!(State::set_as_json, 1))?;
    state.define_method("max_nesting", method!(State::max_nesting, 0))?;
    state.define_method("max_nesting=", method!(State::set_max_nesting, 1))?;
    state.define_method("script_safe", method!(State::script_safe, 0))?;
    state.define_method("script_safe?", method!(State::script_safe, 0))?;
    state.define_method("script_safe=", method!(State::set_script_safe, 1))?;
    state.define_method("strict", method!(State::strict, 0))?;
    state.define_method("strict?", method!(State::strict, 0))?;
    state.define_method("strict=", method!(State::set_strict, 1))?;
    state.define_method("check_circular?", method!(State::check_circular, 0))?;
    state.define_method("allow_nan?", method!(State::allow_nan, 0))?;
    state.define_method("allow_nan=", method!(State::set_allow_nan, 1))?;
    state.define_method("ascii_only?", method!(State::ascii_only, 0))?;
    state.define_method("ascii_only=", method!(State::set_ascii_only, 1))?;
    state.define_method("depth", method!(State::depth, 0))?;
    state.define_method("depth=", method!(State::set_depth, 1))?;
    state.define_method(
        "buffer_initial_length",
        method!(State::buffer_initial_length, 0),
    )?;
    state.define_method(
        "buffer_initial_length=",
        method!(State::set_buffer_initial_length, 1),
    )?;
    state.define_method("generate", method!(State::generate_method, -1))?;
    state.define_method(
        "_generate_no_fallback",
        method!(State::generate_no_fallback_method, -1),
    )?;
    state.define_method("sort_keys", method!(State::sort_keys, 0))?;
    state.define_method("sort_keys=", method!(State::set_sort_keys, 1))?;
    state.define_method("rfc8785?", method!(State::rfc8785, 0))?;
    state.define_method("rfc8785=", method!(State::set_rfc8785, 1))?;
    state.define_private_method(
        "allow_duplicate_key?",
        method!(State::allow_duplicate_key, 0),
    )?;
    let plain = v3.define_module("PlainGenerate")?;
    plain.define_method("generate", method!(super::generate::plain_generate, -1))?;
    ruby.get_inner(&STATE_CLASS);
    keys();
    Ok(())
}
