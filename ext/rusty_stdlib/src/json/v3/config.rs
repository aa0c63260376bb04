//! json 3's `ParserConfig`: its options (`parser_config_init`), its `#parse`
//! (`cParser_parse`: source conversion, the walk, errors) and the class method
//! `Parser.parse(source, opts)` that `JSON.parse` calls.

use std::cell::Cell;

use magnus::{
    gc::Marker,
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    typed_data::Obj,
    DataTypeFunctions, Error, RClass, RModule, RString, Ruby, TypedData, Value,
};
use rb_sys::{ruby_value_type, VALUE};
use rusty_core::json::v3::{self as core, Options};

use super::error;
use crate::helpers::hash::each_pair_quiet;
use crate::json::sink::{walk_borrowing, Flavour, RubySink, Walked};

const QNIL: VALUE = rb_sys::Qnil as VALUE;

/// Everything a config decides.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    options: Options,
    symbolize_names: bool,
    freeze: bool,
    allow_duplicate_key: bool,
}

impl Settings {
    /// A config `allocate` made and nothing configured (the gem's zeroed struct): no
    /// nesting limit, every option off.
    const ZERO: Settings = Settings {
        options: Options {
            max_nesting: 0,
            allow_nan: false,
            allow_trailing_comma: false,
            allow_comments: false,
            allow_control_characters: false,
            allow_invalid_escape: false,
        },
        symbolize_names: false,
        freeze: false,
        allow_duplicate_key: false,
    };
}

/// `RustyStdlib::JSON::V3::ParserConfig`. When its options need the gem's own config,
/// `delegate` holds that config (0 otherwise).
#[derive(TypedData)]
#[magnus(
    class = "RustyStdlib::JSON::V3::ParserConfig",
    free_immediately,
    mark,
    size,
    frozen_shareable
)]
pub struct ParserConfig {
    settings: Cell<Settings>,
    delegate: Cell<VALUE>,
}

// SAFETY: a config is changed only by `initialize`, which refuses a frozen one, and
// only a frozen one is shared between Ractors (`frozen_shareable`); within a Ractor the
// GVL orders every access.
unsafe impl Sync for ParserConfig {}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            settings: Cell::new(Settings::ZERO),
            delegate: Cell::new(0),
        }
    }
}

impl DataTypeFunctions for ParserConfig {
    fn mark(&self, _marker: &Marker) {
        let delegate = self.delegate.get();
        if delegate != 0 {
            unsafe { rb_sys::rb_gc_mark(delegate) };
        }
    }
}

/// The option keys' Symbols (static: made once, never collected).
struct Keys {
    max_nesting: VALUE,
    allow_nan: VALUE,
    allow_trailing_comma: VALUE,
    allow_comments: VALUE,
    allow_control_characters: VALUE,
    allow_invalid_escape: VALUE,
    symbolize_names: VALUE,
    freeze: VALUE,
    on_load: VALUE,
    decimal_class: VALUE,
    allow_duplicate_key: VALUE,
}

fn keys() -> &'static Keys {
    static KEYS: std::sync::OnceLock<Keys> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let sym = crate::json::option_keys::static_symbol;
        Keys {
            max_nesting: sym(c"max_nesting"),
            allow_nan: sym(c"allow_nan"),
            allow_trailing_comma: sym(c"allow_trailing_comma"),
            allow_comments: sym(c"allow_comments"),
            allow_control_characters: sym(c"allow_control_characters"),
            allow_invalid_escape: sym(c"allow_invalid_escape"),
            symbolize_names: sym(c"symbolize_names"),
            freeze: sym(c"freeze"),
            on_load: sym(c"on_load"),
            decimal_class: sym(c"decimal_class"),
            allow_duplicate_key: sym(c"allow_duplicate_key"),
        }
    })
}

fn truthy(v: VALUE) -> bool {
    v != QNIL && v != rb_sys::Qfalse as VALUE
}

/// What reading the options found.
enum Read {
    /// Ours parses with the settings.
    Native,
    /// `on_load` or `decimal_class` is given: the gem's config takes the options whole.
    Gem,
}

/// `Check_Type(v, T_HASH)`.
fn check_hash(v: VALUE) -> Result<(), Error> {
    if unsafe { rb_sys::RB_TYPE_P(v, ruby_value_type::RUBY_T_HASH) } {
        return Ok(());
    }
    protect(|| {
        unsafe { rb_sys::rb_check_type(v, ruby_value_type::RUBY_T_HASH as i32) };
        QNIL
    })?;
    Ok(())
}

/// The gem's `parser_config_init`: `max_nesting` back to 100, then each option given;
/// the others keep what `settings` held. A key it does not know raises ArgumentError
/// ("unknown keyword: x") once all are read.
fn read_options(settings: &mut Settings, opts: VALUE) -> Result<Read, Error> {
    settings.options.max_nesting = 100;
    if opts == QNIL {
        return Ok(Read::Native);
    }
    check_hash(opts)?;
    if unsafe { rb_sys::rb_hash_size_num(opts) } == 0 {
        return Ok(Read::Native);
    }
    let k = keys();
    for key in [k.on_load, k.decimal_class] {
        // Absent (Qundef) or falsy: ours reads the options.
        if truthy(unsafe { rb_sys::rb_hash_lookup2(opts, key, QNIL) }) {
            return Ok(Read::Gem);
        }
    }
    let mut max_nesting = None;
    let mut unknown = 0usize;
    let mut s = *settings;
    // The walk runs no Ruby code: what may (a max_nesting to convert, the message
    // naming unknown keys) comes after it.
    unsafe {
        each_pair_quiet::<()>(opts, |key, v| {
            let o = &mut s.options;
            match key {
                _ if key == k.max_nesting => max_nesting = Some(v),
                _ if key == k.allow_nan => o.allow_nan = truthy(v),
                _ if key == k.allow_trailing_comma => o.allow_trailing_comma = truthy(v),
                _ if key == k.allow_comments => o.allow_comments = truthy(v),
                _ if key == k.allow_control_characters => o.allow_control_characters = truthy(v),
                _ if key == k.allow_invalid_escape => o.allow_invalid_escape = truthy(v),
                _ if key == k.symbolize_names => s.symbolize_names = truthy(v),
                _ if key == k.freeze => s.freeze = truthy(v),
                _ if key == k.allow_duplicate_key => s.allow_duplicate_key = truthy(v),
                // Falsy (the truthy ones went to the gem).
                _ if key == k.on_load || key == k.decimal_class => {}
                _ => unknown += 1,
            }
            Ok(())
        })
    }
    .ok();
    if let Some(v) = max_nesting {
        s.options.max_nesting = if truthy(v) { fix2int(v)? } else { 0 };
    }
    *settings = s;
    if unknown > 0 {
        return Err(error::unknown_keywords(opts, keys_known));
    }
    Ok(Read::Native)
}

/// Whether `key` is an option key (for the message about the others).
fn keys_known(key: VALUE) -> bool {
    let k = keys();
    [
        k.max_nesting,
        k.allow_nan,
        k.allow_trailing_comma,
        k.allow_comments,
        k.allow_control_characters,
        k.allow_invalid_escape,
        k.symbolize_names,
        k.freeze,
        k.on_load,
        k.decimal_class,
        k.allow_duplicate_key,
    ]
    .contains(&key)
}

/// `FIX2INT`: a Fixnum in C `int`'s range as it is, anything else through Ruby's
/// conversion (`to_int`, with its TypeError and RangeError).
fn fix2int(v: VALUE) -> Result<i64, Error> {
    if v & 1 == 1 {
        let n = (v as i64) >> 1;
        if (i32::MIN as i64..=i32::MAX as i64).contains(&n) {
            return Ok(n);
        }
    }
    let mut out = 0i64;
    let out_ptr = &mut out as *mut i64 as usize;
    protect(|| unsafe {
        *(out_ptr as *mut i64) = rb_sys::rb_num2int(v) as i64;
        QNIL
    })?;
    Ok(out)
}

/// The gem's own config class, `JSON::Ext::ParserConfig`.
fn gem_config_class(ruby: &Ruby) -> Result<RClass, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    let ext: RModule = json.const_get("Ext")?;
    ext.const_get("ParserConfig")
}

impl ParserConfig {
    /// `initialize(opts)`: reads the options into this config (those not given keep
    /// their value, as in the gem), or makes the gem's config for them.
    pub fn initialize(ruby: &Ruby, rb_self: Obj<Self>, opts: Value) -> Result<(), Error> {
        let raw = rb_self.as_raw();
        protect(|| unsafe {
            rb_sys::rb_check_frozen(raw);
            QNIL
        })?;
        let delegate = rb_self.delegate.get();
        if delegate != 0 {
            let delegate = unsafe { Value::from_raw(delegate) };
            return delegate
                .funcall::<_, _, Value>("__send__", ("initialize", opts))
                .map(|_| ());
        }
        let mut settings = rb_self.settings.get();
        let read = read_options(&mut settings, opts.as_raw());
        // Options read before an error stay applied, as in the gem.
        rb_self.settings.set(settings);
        match read? {
            Read::Native => Ok(()),
            Read::Gem => {
                let config: Value = gem_config_class(ruby)?.new_instance((opts,))?;
                rb_self.delegate.set(config.as_raw());
                Ok(())
            }
        }
    }

    pub fn parse(ruby: &Ruby, rb_self: Obj<Self>, source: Value) -> Result<Value, Error> {
        let delegate = rb_self.delegate.get();
        if delegate != 0 {
            return unsafe { Value::from_raw(delegate) }.funcall("parse", (source,));
        }
        let settings = rb_self.settings.get();
        let result = parse(ruby, source, &settings, false)?;
        Ok(result.expect("only a plain parse gives up"))
    }
}

/// `JSON::Ext::Parser.parse(source, opts)` (what `JSON.parse` calls): a config read
/// from `opts` used once, on the stack; the gem's method where its config must parse.
pub fn parse_with(ruby: &Ruby, _class: Value, source: Value, opts: Value) -> Result<Value, Error> {
    let mut settings = Settings::ZERO;
    match read_options(&mut settings, opts.as_raw())? {
        Read::Native => {
            let result = parse(ruby, source, &settings, false)?;
            Ok(result.expect("only a plain parse gives up"))
        }
        Read::Gem => {
            let json: RModule = ruby.class_object().const_get("JSON")?;
            let ext: RModule = json.const_get("Ext")?;
            let parser: RClass = ext.const_get("Parser")?;
            parser.funcall("parse", (source, opts))
        }
    }
}

/// `JSON.parse(source)` with no options: the parse `Parser.parse(source, {})` does,
/// or the class itself (which no document parses to) where the gem's way must run
/// instead, with nothing observable done: a source that is not a String, or a warning
/// to print (which names the calling frame).
pub fn try_parse(ruby: &Ruby, class: Value, source: Value) -> Result<Value, Error> {
    if unsafe { !rb_sys::RB_TYPE_P(source.as_raw(), ruby_value_type::RUBY_T_STRING) } {
        return Ok(class);
    }
    let mut settings = Settings::ZERO;
    settings.options.max_nesting = 100;
    Ok(parse(ruby, source, &settings, true)?.unwrap_or(class))
}

/// `StringValue(source)`, the first step of the gem's `convert_encoding`.
fn string_value(source: Value) -> Result<RString, Error> {
    let mut raw = source.as_raw();
    if unsafe { !rb_sys::RB_TYPE_P(raw, ruby_value_type::RUBY_T_STRING) } {
        let slot = &mut raw as *mut VALUE as usize;
        raw = protect(|| unsafe { rb_sys::rb_string_value(slot as *mut VALUE) })?;
    }
    Ok(RString::from_value(unsafe { Value::from_raw(raw) }).expect("a String"))
}

/// The rest of the gem's `convert_encoding`: UTF-8 as it is, binary re-tagged UTF-8 on a
/// copy, anything else `encode`d to UTF-8. With `borrow`, a binary String is given as
/// it is, without the copy, and `true` with it (see `RubySink::borrowed`).
fn convert_encoding(ruby: &Ruby, source: RString, borrow: bool) -> Result<(RString, bool), Error> {
    let raw = source.as_raw();
    let string = |v: VALUE| RString::from_value(unsafe { Value::from_raw(v) }).expect("a String");
    let enc = unsafe { rb_sys::rb_enc_get_index(raw) };
    if enc == unsafe { rb_sys::rb_utf8_encindex() } {
        return Ok((source, false));
    }
    if enc == unsafe { rb_sys::rb_ascii8bit_encindex() } {
        if borrow {
            return Ok((source, true));
        }
        let copy = protect(|| unsafe {
            let copy = rb_sys::rb_str_dup(raw);
            rb_sys::rb_enc_associate_index(copy, rb_sys::rb_utf8_encindex())
        })?;
        return Ok((string(copy), false));
    }
    let utf8: Value = ruby.class_encoding().const_get("UTF_8")?;
    let source = unsafe { Value::from_raw(raw) };
    let mut encoded: VALUE = source.funcall::<_, _, Value>("encode", (utf8,))?.as_raw();
    if unsafe { !rb_sys::RB_TYPE_P(encoded, ruby_value_type::RUBY_T_STRING) } {
        let slot = &mut encoded as *mut VALUE as usize;
        encoded = protect(|| unsafe { rb_sys::rb_string_value(slot as *mut VALUE) })?;
    }
    Ok((string(encoded), false))
}

/// Parses `source` with `settings`; `None` when `plain` and the parse gave up (see
/// [`try_parse`]). A binary source is read in place; only a parse that would run Ruby
/// code (a warning) is redone on the gem's UTF-8 copy.
fn parse(
    ruby: &Ruby,
    source: Value,
    settings: &Settings,
    plain: bool,
) -> Result<Option<Value>, Error> {
    let source = string_value(source)?;
    walk_borrowing(true, |borrow| walk(ruby, source, settings, plain, borrow))
}

fn walk(
    ruby: &Ruby,
    source: RString,
    settings: &Settings,
    plain: bool,
    borrow: bool,
) -> Result<Walked, Error> {
    let (source, borrowed) = convert_encoding(ruby, source, borrow)?;
    // No Ruby code runs during the walk but where the sink locks the source first.
    let bytes: &[u8] = unsafe { source.as_slice() };
    let flavour = Flavour {
        symbolize_names: settings.symbolize_names,
        freeze: settings.freeze,
        create_additions: false,
    };
    let mut sink = RubySink::new(ruby, source.as_raw(), flavour, None)?;
    sink.plain = plain;
    sink.borrowed = borrowed;
    sink.check_duplicates = !settings.allow_duplicate_key;
    let mut scratch = Vec::new();
    let outcome = core::parse(bytes, &settings.options, &mut sink, &mut scratch);
    let result = match outcome {
        Ok(()) => Ok(Walked::Done(Some(sink.result().as_raw()))),
        Err(_) if sink.gave_up => Ok(Walked::Done(None)),
        Err(_) if sink.needs_copy => Ok(Walked::NeedsCopy),
        // Made while the sink still holds (and marks) the keys a path names.
        Err(e) => Err(error::parse_error(ruby, &sink, bytes, e)),
    };
    sink.finish();
    std::hint::black_box(source);
    result
}
