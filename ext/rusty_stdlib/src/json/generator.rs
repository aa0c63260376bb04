//! `RustyStdlib::JSON::Generator`: a drop-in for json 2.6.1's and 2.9.1's
//! `JSON::Ext::Generator` (`State` and `GeneratorMethods`), writing into one growing Rust
//! buffer with `rusty_core::json`'s escaping and number formatting. What json 2.9 does
//! differently is asked of the [`Dialect`] once per generation (or State method), and
//! its own State API is in `generator/state_v2_9.rs`; the rest of this comment is 2.6's
//! behaviour, which 2.9 shares unless said there.
//!
//! What the gem does and this mirrors: values are dispatched on their exact class
//! (`CLASS_OF`, so a singleton class or a subclass goes through its `#to_json(state)`);
//! Hash keys are used as is when of class String, Symbols as their name, others through
//! `#to_s`; strings in neither UTF-8 nor US-ASCII are converted with
//! `rb_str_export_to_enc` first; `depth` lives in the State and is left where it was when
//! an error is raised; empty layout strings given to `configure` still count as "set" for
//! the closing indentation (the gem keeps a non-NULL empty string), those given to the
//! writers do not.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    typed_data::Obj,
    value::{Lazy, ReprValue},
    DataTypeFunctions, Error, ExceptionClass, Fixnum, Float, RArray, RClass, RHash, RModule,
    RString, Ruby, Symbol, TypedData, Value,
};
use rb_sys::{ruby_coderange_type, ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::layout_bytes::LayoutBytes;
use rusty_core::json::Output;

mod compact;
mod plain_pretty;
mod raw_string;
mod state_v2_9;

use super::compact::{Compact, Layout as _};
use super::dialect::Dialect;
use super::key_cache;
use super::output::RubyOutput;
use crate::helpers::constants::Remembered;
use crate::helpers::error::c_error;
use crate::helpers::hash::each_pair_quiet;
use crate::helpers::raw::{class_of, coderange, encoding_index, flags};
use crate::helpers::reentry::once;
use crate::helpers::replaced::Replaced;

/// json 2.9's warning for a binary String holding UTF-8 (`rb_warn`, so printed unless
/// `$VERBOSE` is nil).
const BINARY_WARNING: &std::ffi::CStr =
    c"JSON.generate: UTF-8 string passed as BINARY, this will raise an encoding error in json 3.0";

/// The layout strings; `None` is the gem's NULL pointer.
#[derive(Clone, Debug)]
struct Config {
    indent: Option<LayoutBytes>,
    space: Option<LayoutBytes>,
    space_before: Option<LayoutBytes>,
    object_nl: Option<LayoutBytes>,
    array_nl: Option<LayoutBytes>,
    allow_nan: bool,
    ascii_only: bool,
    escape_slash: bool,
    /// json 2.9's `script_safe` (which `escape_slash` names too) also escapes U+2028
    /// and U+2029, JavaScript's line separators.
    escape_separators: bool,
    /// json 2.9's `strict`: a value of no JSON type raises rather than using `to_json`
    /// or `to_s`.
    strict: bool,
    /// json 2.9 keeps the layout Strings as given: their encodings (indent, space,
    /// space_before, object_nl, array_nl), which its readers give back.
    layout_encodings: [i32; 5],
    max_nesting: i64,
    buffer_initial_length: i64,
}

/// The layout Strings of a [`Config`], in `Config::layout_encodings`' order.
#[derive(Clone, Copy)]
enum Layout {
    Indent,
    Space,
    SpaceBefore,
    ObjectNl,
    ArrayNl,
}

impl Layout {
    const ALL: [Layout; 5] = [
        Layout::Indent,
        Layout::Space,
        Layout::SpaceBefore,
        Layout::ObjectNl,
        Layout::ArrayNl,
    ];
}

impl Config {
    /// The field that holds `layout`.
    fn layout_mut(&mut self, layout: Layout) -> &mut Option<LayoutBytes> {
        match layout {
            Layout::Indent => &mut self.indent,
            Layout::Space => &mut self.space,
            Layout::SpaceBefore => &mut self.space_before,
            Layout::ObjectNl => &mut self.object_nl,
            Layout::ArrayNl => &mut self.array_nl,
        }
    }

    fn layout(&self, layout: Layout) -> &Option<LayoutBytes> {
        match layout {
            Layout::Indent => &self.indent,
            Layout::Space => &self.space,
            Layout::SpaceBefore => &self.space_before,
            Layout::ObjectNl => &self.object_nl,
            Layout::ArrayNl => &self.array_nl,
        }
    }
}

/// A new State's layout: what `JSON.generate(obj)` without options writes with.
const DEFAULT_CONFIG: Config = Config {
    indent: None,
    space: None,
    space_before: None,
    object_nl: None,
    array_nl: None,
    allow_nan: false,
    ascii_only: false,
    escape_slash: false,
    escape_separators: false,
    strict: false,
    layout_encodings: [0; 5],
    max_nesting: 100,
    buffer_initial_length: 1024,
};

impl Default for Config {
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

/// `RustyStdlib::JSON::Generator::State`.
#[derive(TypedData, Default)]
#[magnus(class = "RustyStdlib::JSON::Generator::State", free_immediately, size)]
pub struct State {
    config: RefCell<Config>,
    depth: Cell<i64>,
}

impl DataTypeFunctions for State {}

static STATE_CLASS: Lazy<RClass> = Lazy::new(|ruby| {
    let root: RModule = ruby.class_object().const_get("RustyStdlib").unwrap();
    let json: RModule = root.const_get("JSON").unwrap();
    let generator: RModule = json.const_get("Generator").unwrap();
    generator.const_get("State").unwrap()
});

fn json_error(ruby: &Ruby, name: &str) -> Result<ExceptionClass, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    json.const_get(name)
}

/// A `JSON::GeneratorError` for `message`; on json 2.9 it also carries `obj`, the value
/// that could not be written (`GeneratorError.new(message, invalid_object)`).
fn generator_error(ruby: &Ruby, dialect: Dialect, message: String, obj: Value) -> Error {
    let class = match json_error(ruby, "GeneratorError") {
        Ok(class) => class,
        Err(e) => return e,
    };
    if !dialect.generator_errors_carry_object() {
        return c_error(ruby, class, &message);
    }
    // The message binary, as `rb_raise` makes it (see `c_error`).
    let message = ruby.str_from_slice(message.as_bytes());
    class
        .new_instance((message, obj))
        .map_or_else(|e| e, Error::from)
}

/// `name` (`GeneratorError`, `NestingError`) with `message`, made as the gem's generator
/// makes every error it raises: with `rb_raise` (json 2.6 and 2.9 alike).
fn binary_message_error(ruby: &Ruby, name: &str, message: &str) -> Error {
    match json_error(ruby, name) {
        Ok(class) => c_error(ruby, class, message),
        Err(e) => e,
    }
}

/// `Check_Type(v, t)`: raises the gem's TypeError ("wrong argument type X (expected Y)").
fn check_type(v: Value, t: ruby_value_type) -> Result<(), Error> {
    let raw = v.as_raw();
    if unsafe { rb_sys::RB_TYPE_P(raw, t) } {
        return Ok(());
    }
    protect(|| {
        unsafe { rb_sys::rb_check_type(raw, t as i32) };
        rb_sys::Qnil as VALUE
    })?;
    Ok(())
}

fn layout_bytes(v: Value) -> Result<LayoutBytes, Error> {
    check_type(v, ruby_value_type::RUBY_T_STRING)?;
    let s = RString::from_value(v).expect("checked");
    Ok(unsafe { s.as_slice() }.into())
}

fn fixnum(v: Value) -> Result<i64, Error> {
    check_type(v, ruby_value_type::RUBY_T_FIXNUM)?;
    Ok(Fixnum::from_value(v).expect("checked").to_i64())
}

fn binary(ruby: &Ruby, bytes: &Option<LayoutBytes>) -> RString {
    ruby.str_from_slice(bytes.as_deref().unwrap_or(b""))
}

/// The ID of `to_s` (IDs of such names are permanent), looked up once.
fn to_s_id() -> rb_sys::ID {
    static TO_S: std::sync::OnceLock<rb_sys::ID> = std::sync::OnceLock::new();
    *TO_S.get_or_init(|| unsafe { rb_sys::rb_intern(c"to_s".as_ptr()) })
}

/// `rb_scan_args(argc, argv, "01", &opt)`: magnus's `scan_args` formats strings on every
/// call, which small documents notice.
fn optional_arg(ruby: &Ruby, args: &[Value]) -> Result<Option<Value>, Error> {
    match args {
        [] => Ok(None),
        [opt] => Ok(Some(*opt)),
        _ => Err(c_error(
            ruby,
            ruby.exception_arg_error(),
            &format!(
                "wrong number of arguments (given {}, expected 0..1)",
                args.len()
            ),
        )),
    }
}

fn get_state(v: Value) -> Result<&'static State, Error> {
    // The State object is on the caller's stack for as long as the reference is used.
    let obj = Obj::<State>::try_convert(v)?;
    let ptr: *const State = &*obj;
    Ok(unsafe { &*ptr })
}

impl State {
    fn initialize(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
        let opts = optional_arg(ruby, args)?;
        let state = get_state(rb_self)?;
        *state.config.borrow_mut() = Config::default();
        if let Some(opts) = opts {
            if !opts.is_nil() {
                Self::configure(ruby, rb_self, opts)?;
            }
        }
        Ok(rb_self)
    }

    fn initialize_copy(rb_self: Value, orig: Value) -> Result<Value, Error> {
        if rb_self.as_raw() == orig.as_raw() {
            return Ok(rb_self);
        }
        let (dst, src) = (get_state(rb_self)?, get_state(orig)?);
        let mut cfg = src.config.borrow().clone();
        // The gem copies the layout strings by their length: an empty one becomes NULL.
        for layout in Layout::ALL {
            let slot = cfg.layout_mut(layout);
            if slot.as_ref().is_some_and(|s| s.is_empty()) {
                *slot = None;
            }
        }
        *dst.config.borrow_mut() = cfg;
        dst.depth.set(src.depth.get());
        Ok(rb_self)
    }

    fn configure(_ruby: &Ruby, rb_self: Value, opts: Value) -> Result<Value, Error> {
        let state = get_state(rb_self)?;
        let raw = opts.as_raw();
        let hash = protect(|| unsafe {
            let tmp = rb_sys::rb_check_convert_type(
                raw,
                ruby_value_type::RUBY_T_HASH as i32,
                c"Hash".as_ptr(),
                c"to_hash".as_ptr(),
            );
            if tmp == rb_sys::Qnil as VALUE {
                rb_sys::rb_convert_type(
                    raw,
                    ruby_value_type::RUBY_T_HASH as i32,
                    c"Hash".as_ptr(),
                    c"to_h".as_ptr(),
                )
            } else {
                tmp
            }
        })?;
        let hash = RHash::from_value(unsafe { Value::from_raw(hash) }).expect("a Hash");
        // The option Symbols and `key?` are looked up once (interning a name at every
        // read made a small `JSON.generate(obj, opts)` on json 2.6 slower than the gem's).
        let k = crate::json::option_keys::generator_keys();
        let aref =
            |key: VALUE| -> Result<Value, Error> { hash.aref(unsafe { Value::from_raw(key) }) };
        let given = |key: VALUE| -> Result<bool, Error> {
            static KEY_P: std::sync::OnceLock<rb_sys::ID> = std::sync::OnceLock::new();
            let key_p = crate::helpers::ids::id(&KEY_P, c"key?");
            let hash = hash.as_raw();
            protect(|| unsafe { rb_sys::rb_funcallv(hash, key_p, 1, &key) })
                .map(|v| v != rb_sys::Qnil as VALUE && v != rb_sys::Qfalse as VALUE)
        };
        // Each option is stored as soon as it is read, in the gem's order, as its C does:
        // one of the wrong type raises with the earlier ones kept. (No borrow is held
        // while `aref` and `key?` run, which may run Ruby code that reads this State.)
        let set = |change: &dyn Fn(&mut Config)| change(&mut state.config.borrow_mut());
        for (key, layout) in [
            (k.indent, Layout::Indent),
            (k.space, Layout::Space),
            (k.space_before, Layout::SpaceBefore),
            (k.array_nl, Layout::ArrayNl),
            (k.object_nl, Layout::ObjectNl),
        ] {
            let v = aref(key)?;
            if v.to_bool() {
                let bytes = layout_bytes(v)?;
                set(&|cfg| *cfg.layout_mut(layout) = Some(bytes.clone()));
            }
        }
        set(&|cfg| cfg.max_nesting = 100);
        if given(k.max_nesting)? {
            let v = aref(k.max_nesting)?;
            let max = if v.to_bool() { fixnum(v)? } else { 0 };
            set(&|cfg| cfg.max_nesting = max);
        }
        state.depth.set(0);
        if given(k.depth)? {
            let v = aref(k.depth)?;
            state.depth.set(if v.to_bool() { fixnum(v)? } else { 0 });
        }
        if given(k.buffer_initial_length)? {
            let v = aref(k.buffer_initial_length)?;
            if v.to_bool() {
                let n = fixnum(v)?;
                if n > 0 {
                    set(&|cfg| cfg.buffer_initial_length = n);
                }
            }
        }
        let allow_nan = aref(k.allow_nan)?.to_bool();
        set(&|cfg| cfg.allow_nan = allow_nan);
        let ascii_only = aref(k.ascii_only)?.to_bool();
        set(&|cfg| cfg.ascii_only = ascii_only);
        let escape_slash = aref(k.escape_slash)?.to_bool();
        set(&|cfg| cfg.escape_slash = escape_slash);
        Ok(rb_self)
    }

    fn to_h(ruby: &Ruby, rb_self: Value) -> Result<RHash, Error> {
        let state = get_state(rb_self)?;
        let result = ruby.hash_new();
        let ivars: RArray = rb_self.funcall("instance_variables", ())?;
        for i in 0..ivars.len() {
            let ivar: Value = ivars.entry(i as isize)?;
            let name: RString = ivar.funcall("to_s", ())?;
            let value: Value = rb_self.funcall("instance_variable_get", (ivar,))?;
            let key: RString = name.funcall("byteslice", (1, name.len().saturating_sub(1)))?;
            let key: Value = key.funcall("to_sym", ())?;
            result.aset(key, value)?;
        }
        let cfg = state.config.borrow().clone();
        result.aset(ruby.to_symbol("indent"), binary(ruby, &cfg.indent))?;
        result.aset(ruby.to_symbol("space"), binary(ruby, &cfg.space))?;
        result.aset(
            ruby.to_symbol("space_before"),
            binary(ruby, &cfg.space_before),
        )?;
        result.aset(ruby.to_symbol("object_nl"), binary(ruby, &cfg.object_nl))?;
        result.aset(ruby.to_symbol("array_nl"), binary(ruby, &cfg.array_nl))?;
        result.aset(ruby.to_symbol("allow_nan"), cfg.allow_nan)?;
        result.aset(ruby.to_symbol("ascii_only"), cfg.ascii_only)?;
        result.aset(ruby.to_symbol("max_nesting"), cfg.max_nesting)?;
        result.aset(ruby.to_symbol("escape_slash"), cfg.escape_slash)?;
        result.aset(ruby.to_symbol("depth"), state.depth.get())?;
        result.aset(
            ruby.to_symbol("buffer_initial_length"),
            cfg.buffer_initial_length,
        )?;
        Ok(result)
    }

    fn aref(ruby: &Ruby, rb_self: Value, name: Value) -> Result<Value, Error> {
        let name: RString = name.funcall("to_s", ())?;
        let responds: Value = rb_self.funcall("respond_to?", (name,))?;
        if responds.to_bool() {
            return rb_self.funcall("send", (name,));
        }
        let ivar = ruby.str_new("@");
        ivar.buf_append(name)?;
        let raw = protect(|| unsafe {
            let id = rb_sys::rb_intern_str(ivar.as_raw());
            rb_sys::rb_ivar_get(rb_self.as_raw(), id)
        })?;
        Ok(unsafe { Value::from_raw(raw) })
    }

    fn aset(ruby: &Ruby, rb_self: Value, name: Value, value: Value) -> Result<Value, Error> {
        let name: RString = name.funcall("to_s", ())?;
        let writer = RString::from_value(name.funcall("dup", ())?).expect("a String");
        writer.cat("=");
        let responds: Value = rb_self.funcall("respond_to?", (writer,))?;
        if responds.to_bool() {
            return rb_self.funcall("send", (writer, value));
        }
        let ivar = ruby.str_new("@");
        ivar.buf_append(name)?;
        protect(|| unsafe {
            let id = rb_sys::rb_intern_str(ivar.as_raw());
            rb_sys::rb_ivar_set(rb_self.as_raw(), id, value.as_raw())
        })?;
        Ok(ruby.qnil().as_value())
    }

    /// `State.from_state(opts)` as Ruby code calls it: the gem returns any State of its
    /// own as it is, and with the gem that includes a `JSON::Ext::Generator::State` made
    /// by name, which ours therefore returns as it is too (see [`is_gem_state`]).
    fn from_state_method(ruby: &Ruby, rb_self: RClass, opts: Value) -> Result<Value, Error> {
        if is_json_state_class(ruby, rb_self) && is_gem_state(ruby, opts) {
            return Ok(opts);
        }
        State::from_state(ruby, rb_self, opts)
    }

    /// `State === obj`, which json's Ruby code asks before it uses the options given to
    /// `JSON.generate`, `fast_generate`, `pretty_generate` (and 2.9's `dump`) as a State:
    /// with the gem, a `JSON::Ext::Generator::State` made by name is one, and the call
    /// then runs the gem's `generate` on it. Ours says the same, so such a call still
    /// runs the gem's generator, as it did before ours was in.
    fn case_eq(ruby: &Ruby, rb_self: RClass, obj: Value) -> bool {
        obj.is_kind_of(rb_self) || (is_json_state_class(ruby, rb_self) && is_gem_state(ruby, obj))
    }

    /// The internal `from_state` of our `#to_json` methods (which hand a gem State to the
    /// gem first, see [`gem_to_json`]).
    fn from_state(ruby: &Ruby, rb_self: RClass, opts: Value) -> Result<Value, Error> {
        if opts.is_kind_of(rb_self) {
            Ok(opts)
        } else if opts.is_kind_of(ruby.class_hash()) {
            rb_self.funcall("new", (opts,))
        } else {
            ruby.get_inner(&STATE_CLASS).new_instance(())
        }
    }

    fn generate(ruby: &Ruby, rb_self: Value, obj: Value) -> Result<RString, Error> {
        partial_generate(ruby, rb_self, obj)
    }
}

macro_rules! layout_accessors {
    ($($get:ident $set:ident),*) => {
        impl State {
            $(
                fn $get(ruby: &Ruby, rb_self: Value) -> Result<RString, Error> {
                    Ok(binary(ruby, &get_state(rb_self)?.config.borrow().$get))
                }

                fn $set(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
                    let bytes = layout_bytes(v)?;
                    get_state(rb_self)?.config.borrow_mut().$get =
                        if bytes.is_empty() { None } else { Some(bytes) };
                    Ok(ruby.qnil().as_value())
                }
            )*
        }
    };
}

layout_accessors!(indent set_indent, space set_space, space_before set_space_before,
    object_nl set_object_nl, array_nl set_array_nl);

impl State {
    fn max_nesting(rb_self: Value) -> Result<i64, Error> {
        Ok(get_state(rb_self)?.config.borrow().max_nesting)
    }
    fn set_max_nesting(rb_self: Value, v: Value) -> Result<i64, Error> {
        let n = fixnum(v)?;
        get_state(rb_self)?.config.borrow_mut().max_nesting = n;
        Ok(n)
    }
    fn check_circular(rb_self: Value) -> Result<bool, Error> {
        Ok(get_state(rb_self)?.config.borrow().max_nesting != 0)
    }
    fn allow_nan(rb_self: Value) -> Result<bool, Error> {
        Ok(get_state(rb_self)?.config.borrow().allow_nan)
    }
    fn ascii_only(rb_self: Value) -> Result<bool, Error> {
        Ok(get_state(rb_self)?.config.borrow().ascii_only)
    }
    fn escape_slash(rb_self: Value) -> Result<bool, Error> {
        Ok(get_state(rb_self)?.config.borrow().escape_slash)
    }
    fn set_escape_slash(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        get_state(rb_self)?.config.borrow_mut().escape_slash = v.to_bool();
        Ok(ruby.qnil().as_value())
    }
    fn depth(rb_self: Value) -> Result<i64, Error> {
        Ok(get_state(rb_self)?.depth.get())
    }
    fn set_depth(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        let n = fixnum(v)?;
        get_state(rb_self)?.depth.set(n);
        Ok(ruby.qnil().as_value())
    }
    fn buffer_initial_length(rb_self: Value) -> Result<i64, Error> {
        Ok(get_state(rb_self)?.config.borrow().buffer_initial_length)
    }
    fn set_buffer_initial_length(ruby: &Ruby, rb_self: Value, v: Value) -> Result<Value, Error> {
        let n = fixnum(v)?;
        if n > 0 {
            get_state(rb_self)?
                .config
                .borrow_mut()
                .buffer_initial_length = n;
        }
        Ok(ruby.qnil().as_value())
    }
}

/// What a continuation returning into a finished generation is told (see `helpers::reentry`).
const GENERATE: &str = "JSON.generate";

/// One generation: the state's layout, copied once, and the output buffer.
struct Gen<'s> {
    state_value: Value,
    /// The generation's State (the gem's `data->state`).
    state: &'s State,
    /// The State the value being written counts its depth in (the gem's `state`
    /// argument): the generation's, or before a [`Gen::spill`] the one it replaced.
    cur: &'s State,
    /// Whether the State is `State.generate`'s own, to be copied for the first `#to_json`.
    spill_pending: bool,
    /// After a [`Gen::spill`], the State object `cur` may still point into: kept here,
    /// on the stack with the Gen, so the GC sees it for as long as `cur` is used.
    spilled_from: Option<Value>,
    /// The state's layout, copied at the start as the gem does (borrowed when it is the
    /// default one, which saves the copy on the option-less path).
    cfg: Cow<'s, Config>,
    /// The switches read for every String and pair, copied out of `cfg` (read through
    /// the Cow, each costs a branch and a load).
    ascii_only: bool,
    escape_slash: bool,
    escape_separators: bool,
    /// Whether no layout string is set, so that `compact`'s walk may be used.
    compact: bool,
    /// What is written between values, read out of `cfg` once.
    layout: compact::StateLayout,
    out: RubyOutput,
    utf8: i32,
    usascii: i32,
    /// Whether `Float#to_s` was redefined: the gem calls it for every Float, we write the
    /// same text ourselves unless someone changed what it says. Looked up at the first
    /// Float (a method lookup that documents without Floats need not pay).
    float_to_s_redefined: Option<bool>,
    /// How many Hashes are being walked without `protect` around `rb_hash_foreach` (see
    /// [`Gen::object`]); while above 0, no Ruby code may run and no error is made.
    unprotected: u32,
    /// Set when an unprotected walk met something that needs Ruby (user code, an
    /// exception): the outermost unprotected Hash is then written again, protected.
    retry: bool,
    /// Cleared after the first retry: from then on every Hash is walked protected.
    unprotected_ok: bool,
    /// The Ractor's written keys by key object (see `key_cache`).
    keys: key_cache::Lazy,
    /// [`key_cache::escaping`] of this generation's switches.
    key_escaping: u8,
    /// The json gem whose generator this stands in for.
    dialect: Dialect,
}

impl<'s> Gen<'s> {
    /// `cState_prepare_buffer`.
    fn new(state_value: Value) -> Result<Gen<'s>, Error> {
        let state = get_state(state_value)?;
        let cfg = Cow::Owned(state.config.borrow().clone());
        Ok(Gen::with_state(state_value, state, cfg))
    }

    /// A generation with layout `cfg`; `state_value` is what a `#to_json` is given.
    /// Inlined so that the large `Gen` is built in place rather than copied out.
    #[inline(always)]
    fn with_state(state_value: Value, state: &'s State, cfg: Cow<'s, Config>) -> Gen<'s> {
        let compact = compact::is_compact(&cfg);
        let dialect = Dialect::current();
        let layout = compact::StateLayout::new(&cfg, compact, dialect);
        let capacity = cfg.buffer_initial_length.clamp(1, 1 << 20) as usize;
        let key_escaping =
            key_cache::escaping(cfg.ascii_only, cfg.escape_slash, cfg.escape_separators);
        Gen {
            state_value,
            state,
            cur: state,
            spill_pending: false,
            spilled_from: None,
            ascii_only: cfg.ascii_only,
            escape_slash: cfg.escape_slash,
            escape_separators: cfg.escape_separators,
            compact,
            layout,
            cfg,
            out: RubyOutput::new(capacity),
            utf8: unsafe { rb_sys::rb_utf8_encindex() },
            usascii: unsafe { rb_sys::rb_usascii_encindex() },
            float_to_s_redefined: None,
            unprotected: 0,
            retry: false,
            unprotected_ok: true,
            keys: key_cache::Lazy::new(),
            key_escaping,
            dialect,
        }
    }

    /// `fbuffer_to_s`: a UTF-8 String of the output.
    fn finish(&mut self, _ruby: &Ruby) -> RString {
        let raw = self.out.finish(self.utf8);
        RString::from_value(unsafe { Value::from_raw(raw) }).expect("a String")
    }
}

impl Drop for Gen<'_> {
    fn drop(&mut self) {
        // The spilled-from State lives until here (see `spilled_from`).
        std::hint::black_box(self.spilled_from);
    }
}

/// `JSON.generate(obj)` without options (`cfg`: [`DEFAULT_CONFIG`]), as
/// `State.new.generate(obj)` but with no State object: the generation runs as in an
/// unprotected Hash walk (see [`Gen::ruby_needed`]), so it stops, with nothing observable
/// done, where user code or an error would need the State; `None` then tells the caller
/// to take the gem's way (`State.new.generate(obj)`). `JSON.pretty_generate(obj)` too,
/// with the pretty layout (see `plain_pretty`).
///
/// Always inlined: each caller's `cfg` is a constant, whose layout checks then fold away
/// (left out of line, a small `JSON.generate` took 200 instructions more).
#[inline(always)]
fn try_generate(ruby: &Ruby, obj: Value, cfg: &'static Config) -> Result<Option<RString>, Error> {
    let scratch = State::default();
    let mut gen = Gen::with_state(ruby.qnil().as_value(), &scratch, Cow::Borrowed(cfg));
    gen.unprotected = 1;
    match gen.value(ruby, obj) {
        Ok(()) => Ok(Some(gen.finish(ruby))),
        Err(_) if gen.retry => Ok(None),
        Err(e) => Err(e),
    }
}

/// The ID of `State` (IDs of such names are permanent), looked up once: `rb_intern` of a
/// C string costs about 750 instructions, a sixth of a small `JSON.generate`.
fn state_id() -> rb_sys::ID {
    static STATE: std::sync::OnceLock<rb_sys::ID> = std::sync::OnceLock::new();
    crate::helpers::ids::id(&STATE, c"State")
}

/// Whether the `State` that `module`'s code names (looked up in `module`, as json's
/// common.rb does) is `ours`; a yes is kept in `remembered` while no constant changes.
pub(crate) fn names_state(
    module: VALUE,
    ours: VALUE,
    remembered: &Remembered,
) -> Result<bool, Error> {
    remembered.check(module, || {
        protect(|| unsafe { rb_sys::rb_const_get(module, state_id()) }).map(|state| state == ours)
    })
}

/// The object of an option-less call, `(obj)` or `(obj, nil)`, which the plain paths
/// (`JSON.generate`, `JSON.pretty_generate`) answer themselves.
pub(crate) fn option_less(args: &[Value]) -> Option<Value> {
    match args {
        [obj] => Some(*obj),
        [obj, opts] if opts.is_nil() => Some(*obj),
        _ => None,
    }
}

/// `RustyStdlib::JSON::PlainGenerate#generate`, swapped in for `JSON.generate` (see
/// lib/rusty_stdlib/method_swap.rb):
/// `JSON.generate(obj)` (or `JSON.generate(obj, nil)`) is `State.new.generate(obj)` in the
/// gem (json/common.rb); while `JSON::State` is ours, [`try_generate`] writes it without
/// the Ruby frame, the State object and `configure`. Every other call (a State or options
/// given, the wrong number of arguments, another generator installed, user code met on
/// the way) is the gem's `JSON.generate`, with the arguments as given.
fn plain_generate(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    if let Some(obj) = option_less(args) {
        // What the gem's `State` names (looked up in `JSON`, as common.rb's code does).
        let module = rb_self.as_raw();
        let ours = ruby.get_inner(&STATE_CLASS).as_raw();
        if names_state(module, ours, &STATE_IS_OURS)? {
            if let Some(result) = try_generate(ruby, obj, &DEFAULT_CONFIG)? {
                return Ok(result.as_value());
            }
        }
    } else if let [obj, opts] = args {
        if let Some(result) = generate_with_options(ruby, rb_self, *obj, *opts)? {
            return Ok(result);
        }
    }
    STDLIB_GENERATE.call(rb_self, args)
}

/// json 2.9's `JSON.generate(obj, opts)` with a Hash `opts`: `State === opts` is false
/// there (ours answers; for a Hash, as Module#=== would), so it is
/// `State.generate(obj, opts, nil)`, which ours runs without the Ruby frame when `State`
/// is ours. (Through the gem's method, a small document's
/// `JSON.generate(obj, max_nesting: false)` took 10% longer than the gem's own.) `None`
/// where the gem's method must run.
fn generate_with_options(
    ruby: &Ruby,
    rb_self: Value,
    obj: Value,
    opts: Value,
) -> Result<Option<Value>, Error> {
    if Dialect::current() != Dialect::V2_9
        || !unsafe { rb_sys::RB_TYPE_P(opts.as_raw(), ruby_value_type::RUBY_T_HASH) }
    {
        return Ok(None);
    }
    let state_class = ruby.get_inner(&STATE_CLASS);
    if !names_state(rb_self.as_raw(), state_class.as_raw(), &STATE_IS_OURS)? {
        return Ok(None);
    }
    state_v2_9::class_generate(ruby, state_class, obj, opts, ruby.qnil().as_value()).map(Some)
}

thread_local! {
    static STATE_ANSWER: std::cell::Cell<(VALUE, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Whether `JSON::State` (as `plain_generate`'s receiver names it) is ours, remembered
/// while no constant changes.
static STATE_IS_OURS: Remembered = Remembered::new(&STATE_ANSWER);

/// The gem's JSON.generate, kept by the swap as a private alias.
static STDLIB_GENERATE: Replaced = Replaced::new(c"__rusty_stdlib_stdlib_generate");

fn partial_generate(ruby: &Ruby, state_value: Value, obj: Value) -> Result<RString, Error> {
    let mut gen = Gen::new(state_value)?;
    gen.value(ruby, obj)?;
    Ok(gen.finish(ruby))
}

impl Gen<'_> {
    /// Called before anything that may run Ruby code or make an exception: inside an
    /// unprotected Hash walk it asks for the walk to be done again under `protect`.
    #[inline(always)]
    fn ruby_needed(&mut self, ruby: &Ruby) -> Result<(), Error> {
        if self.unprotected == 0 {
            return Ok(());
        }
        self.retry = true;
        // Never raised: the retrying walk drops it (this makes no Ruby object).
        Err(Error::new(
            ruby.exception_runtime_error(),
            "retry protected",
        ))
    }

    fn value(&mut self, ruby: &Ruby, obj: Value) -> Result<(), Error> {
        // Immediates first (their classes are fixed, so the order of the gem's tests does
        // not matter), then heap objects by exact class.
        let raw = obj.as_raw();
        if raw == rb_sys::Qnil as VALUE {
            self.out.extend_from_slice(b"null");
            return Ok(());
        } else if raw == rb_sys::Qfalse as VALUE {
            self.out.extend_from_slice(b"false");
            return Ok(());
        } else if raw == rb_sys::Qtrue as VALUE {
            self.out.extend_from_slice(b"true");
            return Ok(());
        } else if let Some(n) = Fixnum::from_value(obj) {
            core::write_i64(n.to_i64(), &mut self.out);
            return Ok(());
        }
        let klass = obj.class().as_raw();
        if klass == ruby.class_hash().as_raw() {
            self.object(ruby, RHash::from_value(obj).expect("a Hash"))
        } else if klass == ruby.class_array().as_raw() {
            self.array(ruby, RArray::from_value(obj).expect("an Array"))
        } else if klass == ruby.class_string().as_raw() {
            self.string(ruby, RString::from_value(obj).expect("a String"))
        } else if klass == ruby.class_float().as_raw() {
            self.float(ruby, obj)
        } else if unsafe { rb_sys::RB_TYPE_P(obj.as_raw(), ruby_value_type::RUBY_T_BIGNUM) } {
            self.ruby_needed(ruby)?;
            let s: RString = once(GENERATE, "to_s", || obj.funcall("to_s", ()))?;
            self.out.extend_from_slice(unsafe { s.as_slice() });
            Ok(())
        } else {
            self.ruby_needed(ruby)?;
            if self.cfg.strict {
                return Err(self.not_allowed(ruby, obj));
            }
            if once(GENERATE, "respond_to?", || obj.respond_to("to_json", false))? {
                if self.spill_pending {
                    self.spill(ruby);
                }
                let state = self.state_value;
                let s: Value = once(GENERATE, "to_json", || obj.funcall("to_json", (state,)))?;
                check_type(s, ruby_value_type::RUBY_T_STRING)?;
                let s = RString::from_value(s).expect("checked");
                self.out.extend_from_slice(unsafe { s.as_slice() });
                Ok(())
            } else {
                let s: Value = once(GENERATE, "to_s", || obj.funcall("to_s", ()))?;
                check_type(s, ruby_value_type::RUBY_T_STRING)?;
                self.string(ruby, RString::from_value(s).expect("checked"))
            }
        }
    }

    /// json 2.9's `vstate_spill`: `State.generate` writes with a State of its own that
    /// no Ruby code sees until a `#to_json` needs one; then a copy of it (with the depth
    /// it has then) becomes the generation's State. The Hashes and Arrays being written
    /// keep counting their depth in the one they started with (the gem's `state`
    /// argument, our `cur`), while each Hash pair reads the new one: indentation and
    /// nesting checks after such a `#to_json` show it, and we write them the same.
    #[inline(never)]
    fn spill(&mut self, ruby: &Ruby) {
        self.spill_pending = false;
        let copy = State {
            config: RefCell::new(self.state.config.borrow().clone()),
            depth: Cell::new(self.state.depth.get()),
        };
        let copy = ruby.obj_wrap(copy);
        self.spilled_from = Some(self.state_value);
        self.state_value = copy.as_value();
        self.state = get_state(self.state_value).expect("a State");
    }

    /// json 2.9's `strict` error for a value of no JSON type: its class (the singleton
    /// class if it has one, as `CLASS_OF`) "not allowed in JSON".
    #[inline(never)]
    fn not_allowed(&self, ruby: &Ruby, obj: Value) -> Error {
        let raw = obj.as_raw();
        let class = if rb_sys::SPECIAL_CONST_P(raw) {
            unsafe { rb_sys::rb_obj_class(raw) }
        } else {
            class_of(raw)
        };
        let class = unsafe { Value::from_raw(class) };
        match once(GENERATE, "to_s", || {
            class.funcall::<_, _, RString>("to_s", ())
        }) {
            Ok(name) => generator_error(
                ruby,
                self.dialect,
                // SAFETY: no Ruby code runs while the bytes are read.
                format!("{} not allowed in JSON", unsafe { name.to_string_lossy() }),
                obj,
            ),
            Err(e) => e,
        }
    }

    /// json 2.9's `ensure_valid_encoding`: a binary String whose bytes are UTF-8 is read
    /// as UTF-8 (with a warning unless it is ASCII); any other String is `encode`d to
    /// UTF-8, its failure raised as a GeneratorError carrying the String.
    #[inline(never)]
    fn utf8_v2_9(&mut self, ruby: &Ruby, s: RString) -> Result<RString, Error> {
        let raw = s.as_raw();
        if encoding_index(raw) == unsafe { rb_sys::rb_ascii8bit_encindex() } {
            let utf8 = self.utf8;
            let copy = protect(|| unsafe {
                let copy = rb_sys::rb_str_dup(raw);
                rb_sys::rb_enc_associate_index(copy, utf8)
            })?;
            let range = coderange(copy);
            if range == ruby_coderange_type::RUBY_ENC_CODERANGE_VALID as u32 {
                protect(|| unsafe {
                    rb_sys::rb_warn(BINARY_WARNING.as_ptr());
                    rb_sys::Qnil as VALUE
                })?;
            }
            if range == ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT as u32
                || range == ruby_coderange_type::RUBY_ENC_CODERANGE_VALID as u32
            {
                return Ok(RString::from_value(unsafe { Value::from_raw(copy) }).expect("a String"));
            }
        }
        let encoding: RClass = ruby.class_object().const_get("Encoding")?;
        let utf8: Value = encoding.const_get("UTF_8")?;
        match once(GENERATE, "encode", || {
            s.funcall::<_, _, RString>("encode", (utf8,))
        }) {
            Ok(converted) => Ok(converted),
            Err(e) if e.is_kind_of(ruby.exception_standard_error()) => {
                let message: RString = match e.value() {
                    Some(exception) => exception.funcall("message", ())?,
                    None => return Err(e),
                };
                let error = generator_error(ruby, self.dialect, message.to_string()?, s.as_value());
                // The gem raises from inside its rescue, so the conversion error is the cause.
                if let (Some(raised), Some(cause)) = (error.value(), e.value()) {
                    unsafe {
                        let id = rb_sys::rb_intern(c"cause".as_ptr());
                        rb_sys::rb_ivar_set(raised.as_raw(), id, cause.as_raw());
                    }
                }
                Err(error)
            }
            Err(e) => Err(e),
        }
    }

    fn float(&mut self, ruby: &Ruby, obj: Value) -> Result<(), Error> {
        let f = Float::from_value(obj).expect("a Float").to_f64();
        let to_s_redefined = *self.float_to_s_redefined.get_or_insert_with(|| unsafe {
            rb_sys::rb_method_basic_definition_p(rb_sys::rb_cFloat, to_s_id()) == 0
        });
        if to_s_redefined || (!f.is_finite() && !self.cfg.allow_nan) {
            self.ruby_needed(ruby)?;
        }
        let redefined: Option<RString> = if to_s_redefined {
            Some(once(GENERATE, "to_s", || obj.funcall("to_s", ()))?)
        } else {
            None
        };
        if !f.is_finite() && !self.cfg.allow_nan {
            let dialect = self.dialect;
            let mut text = Vec::new();
            match redefined {
                Some(s) => text.extend_from_slice(unsafe { s.as_slice() }),
                None => core::write_f64(f, &mut text),
            }
            let mut message = format!("{} not allowed in JSON", String::from_utf8_lossy(&text));
            if dialect.numbers_generator_messages() {
                let line = if f.is_infinite() { 1000 } else { 1003 };
                message = format!("{line}: {message}");
            }
            return Err(generator_error(ruby, dialect, message, obj));
        }
        match redefined {
            Some(s) => self.out.extend_from_slice(unsafe { s.as_slice() }),
            None => core::write_f64(f, &mut self.out),
        }
        Ok(())
    }

    /// A String: inline for the common case (UTF-8 or US-ASCII whose cached code range
    /// says it needs no checks), else `string_checked`.
    #[inline(always)]
    fn string(&mut self, ruby: &Ruby, s: RString) -> Result<(), Error> {
        let raw = s.as_raw();
        let index = encoding_index(raw);
        let cached = flags(raw) & ruby_coderange_type::RUBY_ENC_CODERANGE_MASK as VALUE;
        let known_good = (index == self.utf8 || index == self.usascii)
            && (cached == ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT as VALUE
                || (cached == ruby_coderange_type::RUBY_ENC_CODERANGE_VALID as VALUE
                    && !self.ascii_only
                    && index == self.utf8));
        if !known_good {
            return self.string_checked(ruby, s);
        }
        let mark = self.out.len();
        core::quote_valid_utf8(unsafe { s.as_slice() }, self.escape_slash, &mut self.out);
        if self.escape_separators {
            core::escape_js_separators(&mut self.out, mark);
        }
        Ok(())
    }

    #[inline(never)]
    fn string_checked(&mut self, ruby: &Ruby, s: RString) -> Result<(), Error> {
        let mut s = s;
        let index = encoding_index(s.as_raw());
        if index != self.utf8 && index != self.usascii && self.dialect == Dialect::V2_9 {
            self.ruby_needed(ruby)?;
            s = self.utf8_v2_9(ruby, s)?;
        } else if index != self.utf8 && index != self.usascii {
            self.ruby_needed(ruby)?;
            let raw = s.as_raw();
            let converted = protect(|| unsafe {
                rb_sys::rb_str_export_to_enc(raw, rb_sys::rb_utf8_encoding())
            })?;
            s = RString::from_value(unsafe { Value::from_raw(converted) }).expect("a String");
        }
        let bytes = unsafe { s.as_slice() };
        // Ruby's code range (computed once, then cached in the String) settles what the
        // gem's per-character UTF-8 checks would find: ASCII, or well-formed UTF-8 (Ruby's
        // UTF-8 is as strict as `isLegalUTF8`). Only a broken string is checked here.
        let coderange = coderange(s.as_raw());
        let known_good = coderange == ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT as u32
            || (coderange == ruby_coderange_type::RUBY_ENC_CODERANGE_VALID as u32
                && !self.ascii_only
                && encoding_index(s.as_raw()) == self.utf8);
        let mark = self.out.len();
        if known_good {
            core::quote_valid_utf8(bytes, self.escape_slash, &mut self.out);
            if self.escape_separators {
                core::escape_js_separators(&mut self.out, mark);
            }
            return Ok(());
        }
        if self.dialect == Dialect::V2_9
            && coderange == ruby_coderange_type::RUBY_ENC_CODERANGE_BROKEN as u32
        {
            self.ruby_needed(ruby)?;
            let message = core::EscapeError::Malformed.message().to_string();
            return Err(generator_error(ruby, self.dialect, message, s.as_value()));
        }
        self.out.push(b'"');
        if let Err(e) =
            core::escape_string(bytes, self.ascii_only, self.escape_slash, &mut self.out)
        {
            self.ruby_needed(ruby)?;
            return Err(binary_message_error(ruby, "GeneratorError", e.message()));
        }
        self.out.push(b'"');
        if self.escape_separators && !self.ascii_only {
            core::escape_js_separators(&mut self.out, mark);
        }
        Ok(())
    }

    /// `++depth` with the gem's nesting check (and a machine-stack check for
    /// `max_nesting: false`, where the gem would overflow into SystemStackError).
    fn enter(&mut self, ruby: &Ruby) -> Result<i64, Error> {
        let state = self.cur;
        let depth = state.depth.get() + 1;
        state.depth.set(depth);
        let max = self.cfg.max_nesting;
        if max != 0 && depth > max {
            state.depth.set(depth - 1);
            self.ruby_needed(ruby)?;
            let message = format!("nesting of {} is too deep", depth - 1);
            return Err(binary_message_error(ruby, "NestingError", &message));
        }
        if depth > 256 && unsafe { rb_sys::ruby_stack_check() } != 0 {
            self.ruby_needed(ruby)?;
            let class = unsafe { Value::from_raw(rb_sys::rb_eSysStackError) };
            let class = ExceptionClass::from_value(class).expect("an exception class");
            return Err(Error::new(class, "stack level too deep"));
        }
        Ok(depth)
    }

    /// A Hash. `rb_hash_foreach` raises if user code run from the walk changed the
    /// Hash, so it must run under `protect` whenever user code may run. Most documents
    /// hold only core values, so the walk is first tried without `protect` and without
    /// `rb_hash_foreach` (two `setjmp`s less per Hash: see `helpers::hash`), running no
    /// Ruby code at all; at the first value that
    /// would need Ruby, the outermost such Hash is written again from its start, and
    /// everything after that is protected.
    fn object(&mut self, ruby: &Ruby, hash: RHash) -> Result<(), Error> {
        if self.unprotected > 0 {
            return self.object_walk(ruby, hash, false);
        }
        if self.unprotected_ok {
            let mark = self.out.len();
            // The walk counts depths in this Hash's State and, after a `spill`, in the
            // generation's (see `pair`); a walk given up may leave both off.
            let (cur, generation) = (self.cur, self.state);
            let depths = (cur.depth.get(), generation.depth.get());
            self.unprotected += 1;
            let result = self.object_walk(ruby, hash, false);
            self.unprotected -= 1;
            if !self.retry {
                return result;
            }
            // Nothing observable happened: no Ruby code ran and no error was made.
            self.retry = false;
            self.unprotected_ok = false;
            self.out.truncate(mark);
            self.cur = cur;
            generation.depth.set(depths.1);
            cur.depth.set(depths.0);
        }
        self.object_walk(ruby, hash, true)
    }

    fn object_walk(&mut self, ruby: &Ruby, hash: RHash, protected: bool) -> Result<(), Error> {
        // The gem's `state` argument: its depth is the one this Hash counts in.
        let state = self.cur;
        let depth = self.enter(ruby)?;
        // json 2.9 writes an empty Hash as `{}` whatever the layout.
        if self.dialect == Dialect::V2_9 && unsafe { rb_sys::rb_hash_size_num(hash.as_raw()) } == 0
        {
            state.depth.set(depth - 1);
            core::push_bytes(&mut self.out, b"{}");
            return Ok(());
        }
        self.out.push(b'{');
        let raw = hash.as_raw();
        if protected {
            let mut walk = PairWalk {
                gen: self,
                ruby,
                first: true,
                result: Ok(()),
            };
            let arg = &mut walk as *mut PairWalk as VALUE;
            protect(|| unsafe {
                rb_sys::rb_hash_foreach(raw, Some(walk_pair), arg);
                rb_sys::Qnil as VALUE
            })?;
            walk.result?;
        } else if self.compact_now() {
            self.table_pairs(&Compact, ruby, raw, depth)?;
        } else if self.layout_now() {
            // A copy: the walk has the whole Gen.
            let layout = self.layout.clone();
            self.table_pairs(&layout, ruby, raw, depth)?;
        } else {
            // No Ruby code runs in this walk (see `ruby_needed`) and nothing raises, so the
            // Hash cannot change under it.
            let mut first = true;
            unsafe {
                each_pair_quiet(raw, |key, value| {
                    let written =
                        self.pair(ruby, Value::from_raw(key), Value::from_raw(value), first);
                    first = false;
                    written
                })
            }?;
        }
        let depth = state.depth.get();
        state.depth.set(depth - 1);
        self.layout.close_object(&mut self.out, depth);
        self.out.push(b'}');
        Ok(())
    }

    /// Whether `key`, a String or Symbol whose text is `name`, goes into the key table
    /// once written: it must be [`key_cache::keepable`], and UTF-8 or US-ASCII (any
    /// other is converted, and json 2.9 warns about a binary one each time).
    #[inline(always)]
    fn keeps_written(&self, key: Value, name: RString) -> bool {
        let index = encoding_index(name.as_raw());
        (index == self.utf8 || index == self.usascii) && key_cache::keepable(key.as_raw())
    }

    fn pair(&mut self, ruby: &Ruby, key: Value, value: Value, first: bool) -> Result<(), Error> {
        // The gem's `json_object_i` reads the generation's current State (see `spill`)
        // and its depth afresh for each pair.
        let state = self.state;
        self.cur = state;
        let depth = state.depth.get();
        self.layout.before_pair(&mut self.out, first, depth);
        let colon_only = self.layout.colon_in_key();
        let escaping = key_cache::kept_escaping(self.key_escaping, colon_only);
        let keys = self.keys.table();
        // SAFETY: see `key_cache::Lazy::table`; the table and the output are separate.
        if let Some(written) = unsafe { (*keys).get(key.as_raw(), escaping) } {
            core::push_bytes(&mut self.out, written);
            if !colon_only {
                self.layout.after_key(&mut self.out);
            }
            self.cur = state;
            return self.value(ruby, value);
        }
        let mark = self.out.len();
        // Whether the key is written from its own text alone (see `keeps_written`).
        let mut keep = false;
        if key.class().as_raw() == ruby.class_string().as_raw() {
            let name = RString::from_value(key).expect("a String");
            keep = self.keeps_written(key, name);
            self.string(ruby, name)?;
        } else if let Some(sym) = Symbol::from_value(key) {
            let name = unsafe { rb_sys::rb_sym2str(sym.as_raw()) };
            let name = RString::from_value(unsafe { Value::from_raw(name) }).expect("a String");
            keep = self.keeps_written(key, name);
            self.string(ruby, name)?;
        } else if self.dialect == Dialect::V2_9 {
            self.ruby_needed(ruby)?;
            self.converted_key_v2_9(ruby, key)?;
        } else {
            self.ruby_needed(ruby)?;
            let s: Value = once(GENERATE, "to_s", || key.funcall("to_s", ()))?;
            check_type(s, ruby_value_type::RUBY_T_STRING)?;
            self.value(ruby, s)?;
        }
        if colon_only {
            self.out.push(b':');
        }
        if keep {
            let written_len = self.out.len() - mark;
            if written_len <= key_cache::MAX_LEN {
                let keys = self.keys.table();
                // SAFETY: see `key_cache::Lazy::table`; the table and the output are separate.
                unsafe { (*keys).put(key.as_raw(), escaping, &self.out[mark..]) };
            }
        }
        if !colon_only {
            self.layout.after_key(&mut self.out);
        }
        self.cur = state;
        self.value(ruby, value)
    }

    /// json 2.9's key other than a String or Symbol: a String subclass's `to_s`, anything
    /// else through `rb_convert_type(key, T_STRING, "String", "to_s")`.
    #[inline(never)]
    fn converted_key_v2_9(&mut self, ruby: &Ruby, key: Value) -> Result<(), Error> {
        let raw = key.as_raw();
        let s = if unsafe { rb_sys::RB_TYPE_P(raw, ruby_value_type::RUBY_T_STRING) } {
            once(GENERATE, "to_s", || key.funcall("to_s", ()))?
        } else {
            let converted = once(GENERATE, "to_s", || {
                protect(|| unsafe {
                    rb_sys::rb_convert_type(
                        raw,
                        ruby_value_type::RUBY_T_STRING as i32,
                        c"String".as_ptr(),
                        c"to_s".as_ptr(),
                    )
                })
            })?;
            unsafe { Value::from_raw(converted) }
        };
        self.value(ruby, s)
    }

    fn array(&mut self, ruby: &Ruby, ary: RArray) -> Result<(), Error> {
        // An empty Array (most of citm_catalog.json's 10,451) in the compact layout is
        // `[]` whenever the nesting check passes; the depth it would set is put back at
        // once. Anything else (an error to raise among them) takes the general way.
        // So does json 2.9 in any layout.
        let state = self.cur;
        if unsafe { rb_sys::RARRAY_LEN(ary.as_raw()) } == 0
            && (self.cfg.array_nl.is_none() || self.dialect == Dialect::V2_9)
        {
            let max = self.cfg.max_nesting;
            let depth = state.depth.get() + 1;
            if (max == 0 || depth <= max) && depth <= 256 {
                core::push_bytes(&mut self.out, b"[]");
                return Ok(());
            }
        }
        let depth = self.enter(ruby)?;
        self.out.push(b'[');
        let raw = ary.as_raw();
        if self.compact_now() {
            return self.table_array(&Compact, ruby, raw, depth, state);
        }
        if self.layout_now() {
            // A copy: the walk has the whole Gen.
            let layout = self.layout.clone();
            return self.table_array(&layout, ruby, raw, depth, state);
        }
        self.layout.open_array(&mut self.out);
        let mut i = 0;
        // Length and element are read afresh each time: a #to_json may change the Array.
        while i < unsafe { rb_sys::RARRAY_LEN(raw) } {
            self.layout.before_element(&mut self.out, i == 0, depth);
            let v = unsafe { Value::from_raw(*rb_sys::RARRAY_CONST_PTR(raw).add(i as usize)) };
            self.cur = state;
            self.value(ruby, v)?;
            i += 1;
        }
        state.depth.set(depth - 1);
        self.layout.close_array(&mut self.out, depth);
        self.out.push(b']');
        Ok(())
    }
}

/// One Hash being written: what `walk_pair` needs, and how the walk ended.
struct PairWalk<'g, 's, 'r> {
    gen: &'g mut Gen<'s>,
    ruby: &'r Ruby,
    first: bool,
    result: Result<(), Error>,
}

/// `rb_hash_foreach`'s callback: writes one pair, stops at the first error.
unsafe extern "C" fn walk_pair(key: VALUE, value: VALUE, arg: VALUE) -> std::os::raw::c_int {
    let walk = &mut *(arg as *mut PairWalk);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (key, value) = (Value::from_raw(key), Value::from_raw(value));
        walk.gen.pair(walk.ruby, key, value, walk.first)
    }));
    walk.first = false;
    let result = match outcome {
        Ok(result) => result,
        Err(_) => Err(Error::new(
            walk.ruby.exception_runtime_error(),
            "panic in the JSON generator",
        )),
    };
    match result {
        Ok(()) => rb_sys::st_retval::ST_CONTINUE as _,
        Err(e) => {
            walk.result = Err(e);
            rb_sys::st_retval::ST_STOP as _
        }
    }
}

/// Which `generate_json_*` a `GeneratorMethods` module's `to_json` runs on `self`.
#[derive(Clone, Copy)]
enum Kind {
    Object,
    Array,
    Integer,
    Float,
    String,
    Literal,
}

impl Gen<'_> {
    fn typed(&mut self, ruby: &Ruby, kind: Kind, obj: Value) -> Result<(), Error> {
        match kind {
            Kind::Object => self.object(ruby, RHash::from_value(obj).expect("a Hash")),
            Kind::Array => self.array(ruby, RArray::from_value(obj).expect("an Array")),
            Kind::String => self.string(ruby, RString::from_value(obj).expect("a String")),
            Kind::Float => self.float(ruby, obj),
            Kind::Integer | Kind::Literal => self.value(ruby, obj),
        }
    }
}

/// When `to_json` is called with a state of the gem's own generator (the gem's generator
/// calling `#to_json(state)` on a value, which resolves to ours once ours is included), the
/// gem's method for `module` runs the whole call, so the gem's generation stays the gem's.
fn gem_to_json(
    ruby: &Ruby,
    module: &str,
    rb_self: Value,
    args: &[Value],
) -> Result<Option<Value>, Error> {
    let [state] = args else { return Ok(None) };
    if !is_gem_state(ruby, *state) {
        return Ok(None);
    }
    // The gem's method, which ours is prepended to (lib/rusty_stdlib/json.rb).
    let rusty: RModule = ruby.class_object().const_get("RustyStdlib")?;
    let json: RModule = rusty.const_get("JSON")?;
    let method: Value = json.funcall("stdlib_to_json", (module,))?;
    method.funcall("bind_call", (rb_self, *state)).map(Some)
}

/// The gem's own generator module, `JSON::Ext::Generator`, if it is loaded.
fn gem_generator(ruby: &Ruby) -> Option<RModule> {
    let json: RModule = ruby.class_object().const_get("JSON").ok()?;
    let ext: RModule = json.const_get("Ext").ok()?;
    ext.const_get("Generator").ok()
}

/// Whether `obj` is a State of the gem's own generator (`JSON::Ext::Generator::State`,
/// which an app can still make by name once ours is `JSON::State`). Both kinds of State
/// are typed data, so anything else (nil, a Hash of options) is answered without
/// looking the gem's class up.
fn is_gem_state(ruby: &Ruby, obj: Value) -> bool {
    let typed_data = unsafe { rb_sys::RB_TYPE_P(obj.as_raw(), ruby_value_type::RUBY_T_DATA) };
    if !typed_data || obj.is_kind_of(ruby.get_inner(&STATE_CLASS)) {
        return false;
    }
    gem_generator(ruby)
        .and_then(|generator| generator.const_get::<_, RClass>("State").ok())
        .is_some_and(|gem_state| obj.is_kind_of(gem_state))
}

/// Whether `class` is our State itself (not a subclass: `Sub === obj` and
/// `Sub.from_state(obj)` look only for a `Sub`, with the gem's State as with ours).
fn is_json_state_class(ruby: &Ruby, class: RClass) -> bool {
    class.as_raw() == ruby.get_inner(&STATE_CLASS).as_raw()
}

/// `GENERATE_JSON(type)`: `to_json(state = nil)` on `self` with `State.from_state(state)`.
fn typed_to_json(ruby: &Ruby, kind: Kind, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let module = match kind {
        Kind::Object => "Hash",
        Kind::Array => "Array",
        Kind::Integer => "Integer",
        Kind::Float => "Float",
        Kind::String => "String",
        Kind::Literal => match rb_self.as_raw() {
            v if v == rb_sys::Qtrue as VALUE => "TrueClass",
            v if v == rb_sys::Qfalse as VALUE => "FalseClass",
            _ => "NilClass",
        },
    };
    if let Some(result) = gem_to_json(ruby, module, rb_self, args)? {
        return Ok(result);
    }
    let opts = optional_arg(ruby, args)?.unwrap_or_else(|| ruby.qnil().as_value());
    let class = ruby.get_inner(&STATE_CLASS);
    let state = State::from_state(ruby, class, opts)?;
    let mut gen = Gen::new(state)?;
    gen.typed(ruby, kind, rb_self)?;
    Ok(gen.finish(ruby).as_value())
}

macro_rules! typed_to_json {
    ($($name:ident $kind:ident),*) => {
        $(
            fn $name(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
                typed_to_json(ruby, Kind::$kind, rb_self, args)
            }
        )*
    };
}

typed_to_json!(hash_to_json Object, array_to_json Array, integer_to_json Integer,
    float_to_json Float, string_to_json String, literal_to_json Literal);

fn object_to_json(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    if let Some(result) = gem_to_json(ruby, "Object", rb_self, args)? {
        return Ok(result);
    }
    let string: Value = rb_self.funcall("to_s", ())?;
    let opts = optional_arg(ruby, args)?;
    check_type(string, ruby_value_type::RUBY_T_STRING)?;
    let opts = opts.unwrap_or_else(|| ruby.qnil().as_value());
    let class = ruby.get_inner(&STATE_CLASS);
    let state = State::from_state(ruby, class, opts)?;
    partial_generate(ruby, state, string).map(|s| s.as_value())
}

/// The State methods that differ between json versions, defined once the json gem is
/// loaded (by lib/rusty_stdlib/json/generator.rb, which adds json 2.9's Ruby-level
/// ones): gives the version's dialect, `"2.6"` or `"2.9"`.
fn define_state_methods(ruby: &Ruby) -> Result<&'static str, Error> {
    use magnus::method;
    static DEFINED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let state = ruby.get_inner(&STATE_CLASS);
    let dialect = Dialect::loaded(ruby)?;
    if DEFINED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return Ok(dialect_name(dialect));
    }
    if dialect == Dialect::V2_9 {
        state_v2_9::define(state)?;
        return Ok(dialect_name(dialect));
    }
    state.define_method("initialize", method!(State::initialize, -1))?;
    state.define_method("indent", method!(State::indent, 0))?;
    state.define_method("space", method!(State::space, 0))?;
    state.define_method("space_before", method!(State::space_before, 0))?;
    state.define_method("object_nl", method!(State::object_nl, 0))?;
    state.define_method("array_nl", method!(State::array_nl, 0))?;
    state.define_method("indent=", method!(State::set_indent, 1))?;
    state.define_method("space=", method!(State::set_space, 1))?;
    state.define_method("space_before=", method!(State::set_space_before, 1))?;
    state.define_method("object_nl=", method!(State::set_object_nl, 1))?;
    state.define_method("array_nl=", method!(State::set_array_nl, 1))?;
    state.define_method("max_nesting=", method!(State::set_max_nesting, 1))?;
    state.define_method("depth=", method!(State::set_depth, 1))?;
    state.define_method("escape_slash", method!(State::escape_slash, 0))?;
    state.define_method("escape_slash?", method!(State::escape_slash, 0))?;
    state.define_method("escape_slash=", method!(State::set_escape_slash, 1))?;
    state.define_method("configure", method!(State::configure, 1))?;
    state.define_alias("merge", "configure")?;
    state.define_method("to_h", method!(State::to_h, 0))?;
    state.define_alias("to_hash", "to_h")?;
    state.define_method("[]", method!(State::aref, 1))?;
    state.define_method("[]=", method!(State::aset, 2))?;
    state.define_method("generate", method!(State::generate, 1))?;
    Ok(dialect_name(dialect))
}

fn dialect_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::V2_6 | Dialect::V2_6_3 => "2.6",
        Dialect::V2_9 => "2.9",
    }
}

pub fn init(ruby: &Ruby, json: RModule) -> Result<(), Error> {
    use magnus::{function, method};
    let generator = json.define_module("Generator")?;
    let plain = json.define_module("PlainGenerate")?;
    plain.define_method("generate", method!(plain_generate, -1))?;
    plain_pretty::define(json)?;
    let state = generator.define_class("State", ruby.class_object())?;
    state.define_alloc_func::<State>();
    state.define_singleton_method("from_state", method!(State::from_state_method, 1))?;
    state.define_singleton_method("===", method!(State::case_eq, 1))?;

    state.define_method("initialize_copy", method!(State::initialize_copy, 1))?;
    state.define_method("max_nesting", method!(State::max_nesting, 0))?;
    state.define_method("check_circular?", method!(State::check_circular, 0))?;
    state.define_method("allow_nan?", method!(State::allow_nan, 0))?;
    state.define_method("ascii_only?", method!(State::ascii_only, 0))?;
    state.define_method("depth", method!(State::depth, 0))?;
    state.define_method(
        "buffer_initial_length",
        method!(State::buffer_initial_length, 0),
    )?;
    state.define_method(
        "buffer_initial_length=",
        method!(State::set_buffer_initial_length, 1),
    )?;

    generator
        .define_singleton_method("define_state_methods", function!(define_state_methods, 0))?;

    let methods = generator.define_module("GeneratorMethods")?;
    let object = methods.define_module("Object")?;
    object.define_method("to_json", method!(object_to_json, -1))?;
    for name in [
        "Hash",
        "Array",
        "Integer",
        "Float",
        "String",
        "TrueClass",
        "FalseClass",
        "NilClass",
    ] {
        methods.define_module(name)?;
    }
    methods
        .const_get::<_, RModule>("Hash")?
        .define_method("to_json", method!(hash_to_json, -1))?;
    methods
        .const_get::<_, RModule>("Array")?
        .define_method("to_json", method!(array_to_json, -1))?;
    methods
        .const_get::<_, RModule>("Integer")?
        .define_method("to_json", method!(integer_to_json, -1))?;
    methods
        .const_get::<_, RModule>("Float")?
        .define_method("to_json", method!(float_to_json, -1))?;
    let string = methods.const_get::<_, RModule>("String")?;
    string.define_method("to_json", method!(string_to_json, -1))?;
    raw_string::define(string)?;
    for name in ["TrueClass", "FalseClass", "NilClass"] {
        methods
            .const_get::<_, RModule>(name)?
            .define_method("to_json", method!(literal_to_json, -1))?;
    }
    // Made now, in the main Ractor: a first use racing in two Ractors would block one
    // in the `Once` while the other may need it at a GC barrier.
    ruby.get_inner(&STATE_CLASS);
    to_s_id();
    state_id();
    STDLIB_GENERATE.id();
    Ok(())
}
