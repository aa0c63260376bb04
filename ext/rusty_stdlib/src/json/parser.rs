//! The parser instance: option handling and source conversion as the gem's
//! `cParser_initialize` (json 2.6.1 or 2.9.1, see [`Dialect`]), `#parse` / `#source`, and
//! 2.9's class method `Parser.parse(source, opts)`.

use std::cell::Cell;

use magnus::{
    gc::Marker,
    prelude::*,
    rb_sys::{AsRawValue, FromRawValue},
    typed_data::Obj,
    DataTypeFunctions, Error, ExceptionClass, RClass, RHash, RModule, RString, Ruby, TypedData,
    Value,
};
use rb_sys::VALUE;
use rusty_core::json::{self as core, lines, Options, ParseError};

use super::dialect::Dialect;
use super::sink::{walk_borrowing, Flavour, RubySink, Walked};
use crate::helpers::error::c_error;

const QNIL: VALUE = rb_sys::Qnil as VALUE;
const QUNDEF: VALUE = rb_sys::Qundef as VALUE;

#[derive(Clone, Copy, Debug)]
struct Settings {
    options: Options,
    flavour: Flavour,
    dialect: Dialect,
}

impl Settings {
    fn new(dialect: Dialect) -> Self {
        Settings {
            options: Options {
                max_nesting: 100,
                allow_nan: false,
                stack_depth_limit: usize::MAX,
                whole_number_fails: dialect.fails_whole_numbers(),
            },
            flavour: Flavour::default(),
            dialect,
        }
    }
}

/// `RustyStdlib::JSON::Parser` instances. `source` is 0 until `initialize` ran; when the
/// call was handed to the gem's parser, `delegate` holds that parser.
#[derive(TypedData, Default)]
#[magnus(class = "RustyStdlib::JSON::Parser", free_immediately, mark, size)]
pub struct ParserObject {
    source: Cell<VALUE>,
    delegate: Cell<VALUE>,
    /// The key naming a class for `create_additions` (0 without it).
    create_id: Cell<VALUE>,
    settings: Cell<Option<Settings>>,
}

impl DataTypeFunctions for ParserObject {
    fn mark(&self, _marker: &Marker) {
        // rb_gc_mark pins: the parse borrows the source's bytes.
        for v in [self.source.get(), self.delegate.get(), self.create_id.get()] {
            if v != 0 {
                unsafe { rb_sys::rb_gc_mark(v) };
            }
        }
    }
}

/// The gem's `JSON::Ext::Parser`, looked up by IDs interned once (by name, each of the
/// three lookups interned its name: 2,000 instructions on every call handed to the gem,
/// such as each JSON.load on json 2.9).
fn stdlib_parser(_ruby: &Ruby) -> Result<RClass, Error> {
    use crate::helpers::ids::id;
    use std::sync::OnceLock;
    static IDS: [OnceLock<rb_sys::ID>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let json = id(&IDS[0], c"JSON");
    let ext = id(&IDS[1], c"Ext");
    let parser = id(&IDS[2], c"Parser");
    let class = magnus::rb_sys::protect(|| unsafe {
        let json = rb_sys::rb_const_get(rb_sys::rb_cObject, json);
        let ext = rb_sys::rb_const_get(json, ext);
        rb_sys::rb_const_get(ext, parser)
    })?;
    <RClass as magnus::TryConvert>::try_convert(unsafe { Value::from_raw(class) })
}

/// The ID of `parse`, interned once.
fn parse_id() -> rb_sys::ID {
    static ID: std::sync::OnceLock<rb_sys::ID> = std::sync::OnceLock::new();
    crate::helpers::ids::id(&ID, c"parse")
}

fn json_error(ruby: &Ruby, name: &str) -> Result<ExceptionClass, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    json.const_get(name)
}

/// The option Symbols the parser reads, made once: static Symbols (immediates, never
/// collected). Interning each name at every read cost about 750 instructions a read, a
/// fifth of a small `JSON.parse(source, symbolize_names: true)`.
struct OptionKeys {
    allow_trailing_comma: VALUE,
    create_additions: VALUE,
    symbolize_names: VALUE,
    match_string: VALUE,
    object_class: VALUE,
    array_class: VALUE,
    decimal_class: VALUE,
    max_nesting: VALUE,
    allow_nan: VALUE,
    freeze: VALUE,
    create_id: VALUE,
}

fn option_keys() -> &'static OptionKeys {
    static KEYS: std::sync::OnceLock<OptionKeys> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let sym = crate::json::option_keys::static_symbol;
        OptionKeys {
            allow_trailing_comma: sym(c"allow_trailing_comma"),
            create_additions: sym(c"create_additions"),
            symbolize_names: sym(c"symbolize_names"),
            match_string: sym(c"match_string"),
            object_class: sym(c"object_class"),
            array_class: sym(c"array_class"),
            decimal_class: sym(c"decimal_class"),
            max_nesting: sym(c"max_nesting"),
            allow_nan: sym(c"allow_nan"),
            freeze: sym(c"freeze"),
            create_id: sym(c"create_id"),
        }
    })
}

/// `opts[key]` if the key is present (the gem's `option_given_p`), else `None`.
fn option(hash: RHash, key: VALUE) -> Option<VALUE> {
    let v = unsafe { rb_sys::rb_hash_lookup2(hash.as_raw(), key, QUNDEF) };
    (v != QUNDEF).then_some(v)
}

fn truthy(v: VALUE) -> bool {
    v != QNIL && v != rb_sys::Qfalse as VALUE
}

/// Reads the options the way the gem does, with the `create_id` option if one was
/// given; `None` when the gem's parser must take the call (options whose user code runs
/// in the middle of the walk, or values the gem rejects with its own errors).
fn read_options(dialect: Dialect, opts: Option<RHash>) -> Option<(Settings, Option<VALUE>)> {
    let mut settings = Settings::new(dialect);
    let Some(opts) = opts else {
        return Some((settings, None));
    };
    let k = option_keys();
    if dialect.has_trailing_comma_option()
        && option(opts, k.allow_trailing_comma).is_some_and(truthy)
    {
        // A grammar of its own: the gem's parser reads it.
        return None;
    }
    let create_additions = option(opts, k.create_additions);
    if dialect.nil_create_additions_is_implicit() && create_additions == Some(QNIL) {
        // JSON.load's default: additions created with a deprecation warning.
        return None;
    }
    let create_additions = create_additions.is_some_and(truthy);
    if create_additions
        && (option(opts, k.symbolize_names).is_some_and(truthy)
            || option(opts, k.match_string).is_some_and(truthy))
    {
        // An ArgumentError in the gem, or json_create calls on strings and keys.
        return None;
    }
    for key in [k.object_class, k.array_class, k.decimal_class] {
        if option(opts, key).is_some_and(|v| v != QNIL) {
            return None;
        }
    }
    if let Some(v) = option(opts, k.max_nesting) {
        if truthy(v) {
            // Check_Type(T_FIXNUM) then FIX2INT: anything else raises in the gem.
            if v & 1 == 0 {
                return None;
            }
            let n = (v as i64) >> 1;
            if n < i32::MIN as i64 || n > i32::MAX as i64 {
                return None;
            }
            settings.options.max_nesting = n;
        } else {
            settings.options.max_nesting = 0;
        }
    }
    settings.options.allow_nan = option(opts, k.allow_nan).is_some_and(truthy);
    settings.flavour.symbolize_names = option(opts, k.symbolize_names).is_some_and(truthy);
    settings.flavour.freeze = option(opts, k.freeze).is_some_and(truthy);
    settings.flavour.create_additions = create_additions;
    let mut create_id = option(opts, k.create_id);
    if dialect.falsy_create_id_is_default() {
        create_id = create_id.filter(|v| truthy(*v));
    }
    Some((settings, create_id))
}

/// The gem's `convert_encoding`: binary sources are re-tagged UTF-8 (2.6: in place, or on
/// a copy when frozen; 2.9: always on a copy); other encodings are converted with
/// `rb_str_conv_enc` (2.6) or `String#encode` (2.9).
fn convert_encoding(ruby: &Ruby, dialect: Dialect, source: VALUE) -> Result<VALUE, Error> {
    // A String's encoding lookup cannot raise; UTF-8 (the usual case) stays as it is,
    // as `rb_str_conv_enc` would leave it.
    let enc = unsafe { rb_sys::rb_enc_get(source) };
    if enc == unsafe { rb_sys::rb_utf8_encoding() } {
        return Ok(source);
    }
    if enc != unsafe { rb_sys::rb_ascii8bit_encoding() } && dialect.encodes_source() {
        let source = unsafe { Value::from_raw(source) };
        let utf8: Value = ruby.class_encoding().const_get("UTF_8")?;
        return Ok(source.funcall::<_, _, Value>("encode", (utf8,))?.as_raw());
    }
    let in_place = dialect.retags_binary_in_place();
    magnus::rb_sys::protect(|| unsafe {
        if enc == rb_sys::rb_ascii8bit_encoding() {
            let mut s = source;
            if !in_place || rb_sys::rb_obj_frozen_p(s) != rb_sys::Qfalse as VALUE {
                s = rb_sys::rb_str_dup(s);
            }
            rb_sys::rb_enc_associate(s, rb_sys::rb_utf8_encoding());
            s
        } else {
            rb_sys::rb_str_conv_enc(source, enc, rb_sys::rb_utf8_encoding())
        }
    })
}

impl ParserObject {
    pub fn initialize(ruby: &Ruby, rb_self: Obj<Self>, args: &[Value]) -> Result<(), Error> {
        if rb_self.source.get() != 0 || rb_self.delegate.get() != 0 {
            return Err(c_error(
                ruby,
                ruby.exception_type_error(),
                "already initialized instance",
            ));
        }
        let keywords = unsafe { rb_sys::rb_keyword_given_p() } != 0;
        let native = match args {
            [source] => Some((*source, None)),
            [source, opts] if keywords => RHash::from_value(*opts).map(|h| (*source, Some(h))),
            _ => None,
        };
        let dialect = Dialect::loaded(ruby)?;
        let native = native
            .filter(|(source, _)| RString::from_value(*source).is_some())
            .and_then(|(source, opts)| read_options(dialect, opts).map(|s| (source, s)));
        let Some((source, (settings, create_id))) = native else {
            return Self::delegate_to_stdlib(ruby, rb_self, args, keywords);
        };
        if settings.flavour.create_additions {
            let create_id = match create_id {
                Some(id) => id,
                None => {
                    let json: RModule = ruby.class_object().const_get("JSON")?;
                    json.funcall::<_, _, Value>("create_id", ())?.as_raw()
                }
            };
            rb_self.create_id.set(create_id);
        }
        let source = convert_encoding(ruby, dialect, source.as_raw())?;
        rb_self.settings.set(Some(settings));
        rb_self.source.set(source);
        Ok(())
    }

    fn delegate_to_stdlib(
        ruby: &Ruby,
        rb_self: Obj<Self>,
        args: &[Value],
        keywords: bool,
    ) -> Result<(), Error> {
        let class = stdlib_parser(ruby)?.as_raw();
        let raw: Vec<VALUE> = args.iter().map(|v| v.as_raw()).collect();
        let new = ruby.to_symbol("new").as_raw();
        let parser = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_funcallv_kw(
                class,
                rb_sys::rb_sym2id(new),
                raw.len() as _,
                raw.as_ptr(),
                keywords as _,
            )
        })?;
        rb_self.delegate.set(parser);
        Ok(())
    }

    fn delegate(rb_self: &Obj<Self>) -> Option<Value> {
        let v = rb_self.delegate.get();
        (v != 0).then(|| unsafe { Value::from_raw(v) })
    }

    pub fn source(ruby: &Ruby, rb_self: Obj<Self>) -> Result<Value, Error> {
        if let Some(parser) = Self::delegate(&rb_self) {
            return parser.funcall("source", ());
        }
        let source = rb_self.source.get();
        if source == 0 {
            return Err(uninitialized(ruby));
        }
        Ok(unsafe { Value::from_raw(rb_sys::rb_str_dup(source)) })
    }

    pub fn parse(ruby: &Ruby, rb_self: Obj<Self>) -> Result<Value, Error> {
        if let Some(parser) = Self::delegate(&rb_self) {
            return parser.funcall("parse", ());
        }
        let (source, Some(settings)) = (rb_self.source.get(), rb_self.settings.get()) else {
            return Err(uninitialized(ruby));
        };
        let source = RString::from_value(unsafe { Value::from_raw(source) })
            .ok_or_else(|| uninitialized(ruby))?;
        let create_id = Some(rb_self.create_id.get()).filter(|_| settings.flavour.create_additions);
        match parse_source(ruby, source, settings, create_id, false, false)? {
            Walked::Done(Some(result)) => Ok(unsafe { Value::from_raw(result) }),
            _ => unreachable!("only a plain parse gives up, only a borrowed one needs a copy"),
        }
    }
}

/// json 2.9's `Parser.parse(source, opts)` (what its JSON.parse calls): the same as
/// `Parser.new(source, **opts).parse` without keeping the Parser; arguments the gem
/// must judge (a non-String source, `opts` not a Hash) go to the gem's own method. The
/// shim defines it only where the gem's Parser has it.
pub fn parse_with(
    ruby: &Ruby,
    _rb_self: Value,
    source: Value,
    opts: Value,
) -> Result<Value, Error> {
    let dialect = Dialect::loaded(ruby)?;
    let hash = if opts.is_nil() {
        Some(None)
    } else {
        RHash::from_value(opts).map(Some)
    };
    let native = hash
        .filter(|_| RString::from_value(source).is_some())
        .and_then(|opts| read_options(dialect, opts));
    let Some((settings, create_id)) = native else {
        let class = stdlib_parser(ruby)?.as_raw();
        let args = [source.as_raw(), opts.as_raw()];
        return magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_funcallv(class, parse_id(), 2, args.as_ptr())
        })
        .map(|v| unsafe { Value::from_raw(v) });
    };
    let create_id = if settings.flavour.create_additions {
        match create_id {
            Some(id) => Some(id),
            None => {
                let json: RModule = ruby.class_object().const_get("JSON")?;
                Some(json.funcall::<_, _, Value>("create_id", ())?.as_raw())
            }
        }
    } else {
        None
    };
    let result = convert_and_parse(ruby, dialect, source.as_raw(), settings, create_id, false)?;
    Ok(result.expect("only a plain parse gives up"))
}

/// `JSON.parse(source)` without options, as `Parser.new(source).parse` but with no
/// Parser object. Gives the Parser class itself (which no document parses to) when the
/// shim must take the gem's way instead, with nothing observable done: `source` is not a
/// String, or Ruby would print a warning naming the calling frame (which is the gem's
/// JSON.parse there, and the shim here).
pub fn try_parse(ruby: &Ruby, rb_self: Value, source: Value) -> Result<Value, Error> {
    if unsafe { !rb_sys::RB_TYPE_P(source.as_raw(), rb_sys::ruby_value_type::RUBY_T_STRING) } {
        return Ok(rb_self);
    }
    let dialect = Dialect::loaded(ruby)?;
    let result = convert_and_parse(
        ruby,
        dialect,
        source.as_raw(),
        Settings::new(dialect),
        None,
        true,
    )?;
    Ok(result.unwrap_or(rb_self))
}

/// The gem's `convert_encoding` and parse of the String `source`, for callers that do
/// not keep the converted source. A binary source the gem would copy (to re-tag the
/// copy UTF-8) is first read in place, and copied only where that parse must run Ruby
/// code (see `RubySink::borrowed`).
fn convert_and_parse(
    ruby: &Ruby,
    dialect: Dialect,
    source: VALUE,
    settings: Settings,
    create_id: Option<VALUE>,
    plain: bool,
) -> Result<Option<Value>, Error> {
    let binary = unsafe { rb_sys::rb_enc_get(source) == rb_sys::rb_ascii8bit_encoding() };
    let copied = !dialect.retags_binary_in_place()
        || unsafe { rb_sys::rb_obj_frozen_p(source) != rb_sys::Qfalse as VALUE };
    // A `json_create` would stop the borrowed walk at the first addition.
    let borrow = binary && copied && create_id.is_none();
    walk_borrowing(borrow, |borrowed| {
        if borrowed {
            let source = RString::from_value(unsafe { Value::from_raw(source) }).expect("a String");
            return parse_source(ruby, source, settings, create_id, plain, true);
        }
        let converted = convert_encoding(ruby, dialect, source)?;
        let converted =
            RString::from_value(unsafe { Value::from_raw(converted) }).expect("a String");
        let walked = parse_source(ruby, converted, settings, create_id, plain, false);
        std::hint::black_box(converted);
        walked
    })
}

/// Parses `source` (kept alive by the caller) with `settings`; `borrowed` as in
/// `RubySink::borrowed`.
fn parse_source(
    ruby: &Ruby,
    source: RString,
    settings: Settings,
    create_id: Option<VALUE>,
    plain: bool,
    borrowed: bool,
) -> Result<Walked, Error> {
    // Nothing can change the string while we read it: no Ruby code runs during the
    // walk except where the sink first locks the string (see RubySink::guard_source).
    let bytes: &[u8] = unsafe { source.as_slice() };
    let mut options = settings.options;
    if options.max_nesting == 0 || options.max_nesting > 100 {
        // The default limit is far below any machine stack the gem could run out of.
        let per_level = settings.dialect.c_stack_millibytes_per_level();
        options.stack_depth_limit = super::stack::c_parser_depth_limit(per_level);
    }
    let mut sink = RubySink::new(ruby, source.as_raw(), settings.flavour, create_id)?;
    sink.plain = plain;
    sink.borrowed = borrowed;
    let mut scratch = Vec::new();
    let outcome = core::parse(bytes, &options, &mut sink, &mut scratch);
    let result = match outcome {
        Ok(()) => Ok(Walked::Done(Some(sink.result().as_raw()))),
        Err(_) if sink.gave_up => Ok(Walked::Done(None)),
        Err(_) if sink.needs_copy => Ok(Walked::NeedsCopy),
        Err(e) => Err(parse_error(ruby, settings.dialect, bytes, e)),
    };
    sink.finish();
    std::hint::black_box(source);
    result
}

fn uninitialized(ruby: &Ruby) -> Error {
    c_error(ruby, ruby.exception_type_error(), "uninitialized instance")
}

/// The gem's exception for a rejected document, message bytes and encoding included.
fn parse_error(ruby: &Ruby, dialect: Dialect, source: &[u8], e: ParseError<Error>) -> Error {
    let quote = |at: Option<usize>| {
        let excerpt = core::excerpt(source, at);
        &excerpt[..excerpt.len().min(dialect.fragment_limit())]
    };
    let numbered = |line: u32, text: &str| {
        if dialect.numbers_messages() {
            format!("{line}: {text}").into_bytes()
        } else {
            text.as_bytes().to_vec()
        }
    };
    let (class, message, utf8) = match e {
        ParseError::Sink(e) => return e,
        ParseError::StackOverflow => {
            // Ruby's own overflow error has a US-ASCII message.
            let message = ruby.enc_str_new("stack level too deep", ruby.usascii_encoding());
            return match ruby.exception_sys_stack_error().new_instance((message,)) {
                Ok(exception) => exception.into(),
                Err(e) => e,
            };
        }
        ParseError::Nesting { depth } => (
            "NestingError",
            format!("nesting of {depth} is too deep").into_bytes(),
            false,
        ),
        ParseError::Unexpected { line, at } => {
            let at = match (line, at) {
                // The core reports 2.6's start, one byte before the literal (or none).
                (lines::INFINITY, at) => dialect.infinity_excerpt(at.map_or(0, |a| a + 1)),
                _ => at,
            };
            let mut m = numbered(line, "unexpected token at '");
            m.extend_from_slice(quote(at));
            m.push(b'\'');
            ("ParserError", m, true)
        }
        ParseError::Surrogate { at } => {
            let mut m = numbered(lines::SURROGATE, "incomplete surrogate pair at '");
            m.extend_from_slice(quote(Some(at)));
            m.push(b'\'');
            ("ParserError", m, true)
        }
    };
    let class = match json_error(ruby, class) {
        Ok(class) => class,
        Err(e) => return e,
    };
    if !utf8 {
        return c_error(ruby, class, &String::from_utf8_lossy(&message));
    }
    match class.new_instance((ruby.enc_str_new(&message, ruby.utf8_encoding()),)) {
        Ok(exception) => exception.into(),
        Err(e) => e,
    }
}
