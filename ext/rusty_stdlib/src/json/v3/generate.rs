//! json 3's generation (`generate_json` and friends in its generator.c): each value by
//! its type and exact class, Hash keys, the layout, strict mode's `as_json`, Fragments,
//! `sort_keys`, the Hashes whose String and Symbol keys collide, and floats in json 3's own
//! text (`rusty_core::json::v3::fpconv`).
//!
//! Speed: Hashes of core values are first written straight from their tables, with no
//! Ruby code run ([`Gen::object`]; anything that would need Ruby has the outermost such
//! Hash written again, protected), in the compact layout by the shared walk of
//! `json::compact`; and keys written before come from the Ractor's table of written keys
//! (`key_cache`).

use magnus::{
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    Error, ExceptionClass, RModule, RString, Ruby, Value,
};
use rb_sys::{ruby_coderange_type, ruby_value_type, VALUE};
use rusty_core::json as core;
use rusty_core::json::Output;

use super::state::{self, Config, Duplicates, State, STATE_CLASS};
use crate::helpers::error::c_error;
use crate::helpers::hash::each_pair_quiet;
use crate::helpers::raw::{class_of, coderange, encoding_index, str_bytes};
use crate::helpers::reentry::once;
use crate::json::compact::Compact;
use crate::json::key_cache;
use crate::json::output::RubyOutput;

const QNIL: VALUE = rb_sys::Qnil as VALUE;
const QFALSE: VALUE = rb_sys::Qfalse as VALUE;
const QTRUE: VALUE = rb_sys::Qtrue as VALUE;

/// What a continuation returning into a finished generation is told (helpers::reentry).
const GENERATE: &str = "JSON.generate";

/// Whether a value whose class is a subclass of Hash, Array, String or Float (or has a
/// singleton class) goes through its `#to_json` (`generate`) or is written by its type
/// (`_generate_no_fallback`, what `#to_json` itself calls for the receiver).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    Yes,
    No,
}

mod compact;

/// One generation (the gem's `generate_json_data`).
struct Gen<'r> {
    ruby: &'r Ruby,
    config: Config,
    depth: i64,
    out: RubyOutput,
    /// The State handed to `#to_json` calls: a copy of the generation's made at the first
    /// one (`vstate_spill`), whose settings the rest of the generation then reads.
    vstate: Option<Value>,
    /// How many Hashes are being walked straight from their tables, without
    /// `rb_hash_foreach` and its `protect` (see [`Gen::object`]); while above 0, no Ruby
    /// code may run and no exception is made.
    unprotected: u32,
    /// Set when such a walk met something that needs Ruby: the outermost one is then
    /// written again, protected.
    retry: bool,
    /// Cleared at the first retry: from then on every Hash is walked protected (so a
    /// document full of user objects is not walked twice over).
    unprotected_ok: bool,
    /// Whether keys are written `"key":` (no `space`, no `space_before`): the form the
    /// Ractor's table of written keys holds.
    colon_only: bool,
    /// `key_cache::escaping` of this generation's switches.
    key_escaping: u8,
    /// The Ractor's table of written keys (see `key_cache`).
    keys: key_cache::Lazy,
    /// The error of a walk that returned [`Stashed`].
    stashed: Option<Error>,
}

/// An error kept in [`Gen::stashed`]: the Array walk returns this (no bytes) rather than
/// the error itself, so that each of its frames (one per level of nesting) has no room
/// to make for one, and Arrays nest as deep as in the gem.
struct Stashed;

fn json_class(ruby: &Ruby, name: &str) -> Result<ExceptionClass, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    json.const_get(name)
}

/// `CLASS_OF(obj)`: the singleton class where there is one.
fn class_of_value(v: Value) -> Value {
    let raw = v.as_raw();
    let class = if rb_sys::SPECIAL_CONST_P(raw) {
        // Immediates have no singleton class of their own (nil's is NilClass).
        unsafe { rb_sys::rb_obj_class(raw) }
    } else {
        class_of(raw)
    };
    unsafe { Value::from_raw(class) }
}

/// The gem's `raise_generator_error`: a GeneratorError whose message (made UTF-8) is
/// `message`, carrying `invalid` as `invalid_object`.
fn generator_error(ruby: &Ruby, invalid: Value, message: RString) -> Error {
    let build = || -> Result<Error, Error> {
        unsafe { rb_sys::rb_enc_associate_index(message.as_raw(), rb_sys::rb_utf8_encindex()) };
        let class = json_class(ruby, "GeneratorError")?;
        let exception = class.new_instance((message,))?;
        unsafe {
            rb_sys::rb_ivar_set(
                exception.as_raw(),
                rb_sys::rb_intern(c"@invalid_object".as_ptr()),
                invalid.as_raw(),
            )
        };
        Ok(Error::from(exception))
    };
    match build() {
        Ok(e) | Err(e) => e,
    }
}

/// "<class> not allowed in JSON" / "... as object key in JSON", the class as `to_s` gives it.
fn not_allowed(ruby: &Ruby, obj: Value, what: &str) -> Error {
    let class = class_of_value(obj);
    let name = match once(GENERATE, "to_s", || {
        protect(|| unsafe { rb_sys::rb_str_dup(rb_sys::rb_obj_as_string(class.as_raw())) })
    }) {
        Ok(name) => unsafe { Value::from_raw(name) },
        Err(e) => return e,
    };
    let message = RString::from_value(name).expect("a String");
    message.cat(what);
    generator_error(ruby, obj, message)
}

fn check_type(v: Value, t: ruby_value_type) -> Result<(), Error> {
    let raw = v.as_raw();
    if unsafe { rb_sys::RB_TYPE_P(raw, t) } {
        return Ok(());
    }
    protect(|| {
        unsafe { rb_sys::rb_check_type(raw, t as i32) };
        QNIL
    })?;
    Ok(())
}

/// `valid_json_string_p`: ASCII, or valid UTF-8 (in UTF-8 or US-ASCII).
#[inline(always)]
fn valid_string(s: VALUE) -> bool {
    let range = coderange(s);
    if range == ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT as u32 {
        return true;
    }
    if range == ruby_coderange_type::RUBY_ENC_CODERANGE_VALID as u32 {
        let index = encoding_index(s);
        return index == unsafe { rb_sys::rb_utf8_encindex() }
            || index == unsafe { rb_sys::rb_usascii_encindex() };
    }
    false
}

/// Whether a key's text is written from itself alone, whatever the options: valid and in
/// UTF-8 or US-ASCII. (A key converted from another encoding, or handed to `as_json`, may
/// be written differently by other options, so its written form is not kept.)
#[inline(always)]
fn utf8_text(s: VALUE) -> bool {
    let index = encoding_index(s);
    valid_string(s)
        && (index == unsafe { rb_sys::rb_utf8_encindex() }
            || index == unsafe { rb_sys::rb_usascii_encindex() })
}

/// Runs `generate_json` (or its no-fallback form) on `obj` with `config`; `state` is the
/// State the call came from (None for `State.generate`). The result is a UTF-8 String, or
/// with an IO given, the IO after one `write` of it.
pub fn generate(
    ruby: &Ruby,
    state: Option<Value>,
    config: Config,
    obj: Value,
    io: Value,
    fallback: Fallback,
) -> Result<Value, Error> {
    if config.rfc8785 {
        return rfc8785(ruby, state, obj, io, fallback);
    }
    let capacity = config.buffer_initial_length.clamp(1, 1 << 20) as usize;
    let mut gen = Gen {
        ruby,
        config,
        depth: config.depth,
        out: RubyOutput::new(capacity),
        vstate: None,
        unprotected: 0,
        retry: false,
        unprotected_ok: true,
        colon_only: config.space == 0 && config.space_before == 0,
        key_escaping: key_cache::escaping(
            config.ascii_only,
            config.script_safe,
            config.script_safe,
        ),
        keys: key_cache::Lazy::new(),
        stashed: None,
    };
    let written = gen.value(obj, fallback == Fallback::Yes);
    let text =
        written.map(|()| unsafe { Value::from_raw(gen.out.finish(rb_sys::rb_utf8_encindex())) });
    std::hint::black_box(gen.vstate);
    let text = text?;
    if io.is_nil() {
        return Ok(text);
    }
    let _: Value = io.funcall("write", (text,))?;
    Ok(io)
}

/// RFC 8785 output is the gem's (its number formatter and key order are Ruby procs of
/// json's own): a State of the gem's with this one's settings writes it.
fn rfc8785(
    ruby: &Ruby,
    state: Option<Value>,
    obj: Value,
    io: Value,
    fallback: Fallback,
) -> Result<Value, Error> {
    // `State.generate` hands the gem its options itself (state.rs); a State of ours
    // passes its settings.
    let settings: Value = match state {
        Some(state) => state.funcall("to_h", ())?,
        None => ruby.hash_new().as_value(),
    };
    let gem = state::gem_state_class(ruby)?.new_instance((settings,))?;
    let method = match fallback {
        Fallback::Yes => "generate",
        Fallback::No => "_generate_no_fallback",
    };
    gem.funcall(method, (obj, io))
}

impl Gen<'_> {
    /// Called before anything that may run Ruby code or make an exception: inside an
    /// unprotected Hash walk it asks for the walk to be done again, protected.
    #[inline(always)]
    fn ruby_needed(&mut self) -> Result<(), Error> {
        if self.unprotected == 0 {
            return Ok(());
        }
        self.retry = true;
        // Never raised: the retrying walk drops it (this makes no Ruby object).
        Err(Error::new(
            self.ruby.exception_runtime_error(),
            "retry protected",
        ))
    }

    /// `increase_depth`, and a check of the machine stack every 32 levels past 256 (the
    /// gem lets the stack overflow into Ruby's SystemStackError; ours raises it first).
    #[inline(always)]
    fn enter(&mut self) -> Result<i64, Error> {
        self.depth += 1;
        let depth = self.depth;
        let deep = depth > 256 && depth & 31 == 0 && unsafe { rb_sys::ruby_stack_check() } != 0;
        if deep || (self.config.max_nesting != 0 && depth > self.config.max_nesting) {
            return Err(self.too_deep(deep));
        }
        Ok(depth)
    }

    /// The error for `enter`: SystemStackError when the machine stack ran out, else the
    /// gem's NestingError. Out of line, to keep the frames of the recursion small.
    #[cold]
    #[inline(never)]
    fn too_deep(&mut self, stack: bool) -> Error {
        if let Err(retry) = self.ruby_needed() {
            return retry;
        }
        if stack {
            let class = unsafe { Value::from_raw(rb_sys::rb_eSysStackError) };
            let class = ExceptionClass::from_value(class).expect("an exception class");
            return Error::new(class, "stack level too deep");
        }
        let depth = self.depth;
        match json_class(self.ruby, "NestingError") {
            Ok(class) => c_error(
                self.ruby,
                class,
                &format!(
                    "nesting of {depth} is too deep. Did you try to serialize objects with circular references?"
                ),
            ),
            Err(e) => e,
        }
    }

    #[inline(always)]
    fn push_value(&mut self, v: VALUE) {
        if v != 0 {
            core::push_bytes(&mut self.out, str_bytes(v));
        }
    }

    #[inline(always)]
    fn indent(&mut self, depth: i64) {
        if self.config.indent != 0 {
            let indent = str_bytes(self.config.indent);
            for _ in 0..depth {
                core::push_bytes(&mut self.out, indent);
            }
        }
    }

    /// `generate_json_general`.
    #[inline(always)]
    fn value(&mut self, obj: Value, fallback: bool) -> Result<(), Error> {
        let raw = obj.as_raw();
        // The commonest values first: no Ruby, no loop.
        if raw & 1 == 1 {
            core::write_i64((raw as i64) >> 1, &mut self.out);
            return Ok(());
        }
        if !rb_sys::SPECIAL_CONST_P(raw)
            && unsafe { rb_sys::RB_BUILTIN_TYPE(raw) } == ruby_value_type::RUBY_T_STRING
            && class_of(raw) == self.ruby.class_string().as_raw()
            && valid_string(raw)
        {
            return self.valid_raw_string(raw);
        }
        self.value_from(obj, fallback, false)
    }

    /// `generate_json_general` from where `as_json_called` says it is: once strict mode's
    /// `as_json` gave the value, it is not asked again.
    fn value_from(
        &mut self,
        obj: Value,
        fallback: bool,
        as_json_called: bool,
    ) -> Result<(), Error> {
        let mut obj = obj;
        let mut as_json_called = as_json_called;
        loop {
            let raw = obj.as_raw();
            let literal: Option<&[u8]> = match raw {
                QNIL => Some(b"null"),
                QFALSE => Some(b"false"),
                QTRUE => Some(b"true"),
                _ => None,
            };
            if let Some(literal) = literal {
                self.out.extend_from_slice(literal);
                return Ok(());
            }
            if raw & 1 == 1 {
                core::write_i64((raw as i64) >> 1, &mut self.out);
                return Ok(());
            }
            if rb_sys::FLONUM_P(raw) {
                return self.float(obj);
            }
            if rb_sys::STATIC_SYM_P(raw) {
                return self.symbol(obj);
            }
            let next = if rb_sys::SPECIAL_CONST_P(raw) {
                // Anything else immediate: the general way.
                self.ruby_needed()?;
                self.general(obj, as_json_called)?
            } else {
                let klass = class_of(raw);
                let ruby = self.ruby;
                let exact = |class: magnus::RClass| klass == class.as_raw();
                match unsafe { rb_sys::RB_BUILTIN_TYPE(raw) } {
                    ruby_value_type::RUBY_T_BIGNUM => {
                        self.ruby_needed()?;
                        return self.bignum(obj);
                    }
                    ruby_value_type::RUBY_T_HASH if !fallback || exact(ruby.class_hash()) => {
                        return self.object(obj);
                    }
                    ruby_value_type::RUBY_T_ARRAY if !fallback || exact(ruby.class_array()) => {
                        return self.array(obj);
                    }
                    ruby_value_type::RUBY_T_STRING if !fallback || exact(ruby.class_string()) => {
                        if valid_string(raw) {
                            return self.raw_string(obj);
                        }
                        self.ruby_needed()?;
                        if as_json_called {
                            let message =
                                ruby.str_new("source sequence is illegal/malformed utf-8");
                            return Err(generator_error(ruby, obj, message));
                        }
                        Some(self.valid_encoding(obj, false, false)?)
                    }
                    ruby_value_type::RUBY_T_SYMBOL => return self.symbol(obj),
                    ruby_value_type::RUBY_T_FLOAT if !fallback || exact(ruby.class_float()) => {
                        return self.float(obj);
                    }
                    ruby_value_type::RUBY_T_STRUCT => {
                        // Looking JSON::Fragment up may run Ruby code (an autoload).
                        self.ruby_needed()?;
                        if klass == fragment_class(ruby)? {
                            return self.fragment(obj);
                        }
                        self.general(obj, as_json_called)?
                    }
                    _ => {
                        self.ruby_needed()?;
                        self.general(obj, as_json_called)?
                    }
                }
            };
            match next {
                Some(coerced) => {
                    obj = coerced;
                    as_json_called = true;
                }
                None => return Ok(()),
            }
        }
    }

    /// A value of no JSON type: in strict mode `as_json` (once) or an error, else its
    /// `#to_json` or `#to_s`. `Some(value)` when `as_json` gave a value to write instead.
    fn general(&mut self, obj: Value, as_json_called: bool) -> Result<Option<Value>, Error> {
        if self.config.strict {
            if self.config.as_json != 0 && !as_json_called {
                return self.as_json(obj, false).map(Some);
            }
            return Err(not_allowed(self.ruby, obj, " not allowed in JSON"));
        }
        self.fallback(obj)?;
        Ok(None)
    }

    fn as_json(&mut self, obj: Value, key: bool) -> Result<Value, Error> {
        let proc = self.config.as_json;
        let args = [obj.as_raw(), if key { QTRUE } else { QFALSE }];
        let result = once(GENERATE, "as_json", || {
            protect(|| unsafe { rb_sys::rb_proc_call_with_block(proc, 2, args.as_ptr(), QNIL) })
        })?;
        Ok(unsafe { Value::from_raw(result) })
    }

    /// `generate_json_fallback`: `#to_json(state)` if it answers to it, else `#to_s`.
    fn fallback(&mut self, obj: Value) -> Result<(), Error> {
        if once(GENERATE, "respond_to?", || obj.respond_to("to_json", false))? {
            let vstate = self.spilled()?;
            state::get(vstate)?.config.borrow_mut().depth = self.depth;
            let written: Value = once(GENERATE, "to_json", || obj.funcall("to_json", (vstate,)))?;
            // The copy may have been changed: the rest of the generation reads it.
            let depth = self.depth;
            self.config = *state::get(vstate)?.config.borrow();
            self.depth = depth;
            self.colon_only = self.config.space == 0 && self.config.space_before == 0;
            self.key_escaping = key_cache::escaping(
                self.config.ascii_only,
                self.config.script_safe,
                self.config.script_safe,
            );
            check_type(written, ruby_value_type::RUBY_T_STRING)?;
            self.push_value(written.as_raw());
            Ok(())
        } else {
            let s: Value = once(GENERATE, "to_s", || obj.funcall("to_s", ()))?;
            check_type(s, ruby_value_type::RUBY_T_STRING)?;
            self.string(s)
        }
    }

    /// The State `#to_json` is given: made at the first call from the generation's
    /// settings (`vstate_spill`), an instance of our State class itself.
    fn spilled(&mut self) -> Result<Value, Error> {
        if let Some(v) = self.vstate {
            return Ok(v);
        }
        let copy = State {
            config: std::cell::RefCell::new(self.config),
        };
        let class = self.ruby.get_inner(&STATE_CLASS);
        let v = self.ruby.obj_wrap_as(copy, class).as_value();
        self.vstate = Some(v);
        Ok(v)
    }

    fn symbol(&mut self, obj: Value) -> Result<(), Error> {
        if self.config.strict {
            let name = unsafe { Value::from_raw(rb_sys::rb_sym2str(obj.as_raw())) };
            self.string(name)
        } else {
            self.ruby_needed()?;
            self.fallback(obj)
        }
    }

    fn bignum(&mut self, obj: Value) -> Result<(), Error> {
        let s: Value = once(GENERATE, "to_s", || obj.funcall("to_s", ()))?;
        let mut raw = s.as_raw();
        if unsafe { !rb_sys::RB_TYPE_P(raw, ruby_value_type::RUBY_T_STRING) } {
            let slot = &mut raw as *mut VALUE as usize;
            raw = protect(|| unsafe { rb_sys::rb_string_value(slot as *mut VALUE) })?;
        }
        self.push_value(raw);
        Ok(())
    }

    fn float(&mut self, obj: Value) -> Result<(), Error> {
        let f = crate::helpers::float::value(obj.as_raw());
        if f.is_finite() {
            core::v3::fpconv::write_f64(f, &mut self.out);
            return Ok(());
        }
        self.ruby_needed()?;
        if self.config.allow_nan {
            let s: Value = once(GENERATE, "to_s", || obj.funcall("to_s", ()))?;
            check_type(s, ruby_value_type::RUBY_T_STRING)?;
            self.push_value(s.as_raw());
            return Ok(());
        }
        if self.config.strict && self.config.as_json != 0 {
            let cast = self.as_json(obj, false)?;
            if cast.as_raw() != obj.as_raw() {
                self.enter()?;
                self.value(cast, true)?;
                self.depth -= 1;
                return Ok(());
            }
        }
        let text: Value = once(GENERATE, "to_s", || obj.funcall("to_s", ()))?;
        let message = unsafe { rb_sys::rb_str_dup(rb_sys::rb_obj_as_string(text.as_raw())) };
        let message = RString::from_value(unsafe { Value::from_raw(message) }).expect("a String");
        message.cat(" not allowed in JSON");
        Err(generator_error(self.ruby, obj, message))
    }

    fn fragment(&mut self, obj: Value) -> Result<(), Error> {
        let json = unsafe { rb_sys::rb_struct_aref(obj.as_raw(), rb_sys::rb_int2inum(0)) };
        let json = unsafe { Value::from_raw(json) };
        check_type(json, ruby_value_type::RUBY_T_STRING)?;
        self.push_value(json.as_raw());
        Ok(())
    }

    /// `generate_json_string`: a String made valid first. What strict mode's `as_json`
    /// gives in place of an invalid one is written as any value is (not asked again).
    fn string(&mut self, s: Value) -> Result<(), Error> {
        let valid = self.valid_encoding(s, false, false)?;
        if valid.as_raw() == s.as_raw() {
            return self.raw_string(s);
        }
        self.value_from(valid, true, true)
    }

    /// `ensure_valid_encoding`: the String as it is when valid; else what strict mode's
    /// `as_json` makes of it, or the String converted to UTF-8 (the conversion's failure a
    /// GeneratorError carrying the String).
    fn valid_encoding(
        &mut self,
        s: Value,
        as_json_called: bool,
        key: bool,
    ) -> Result<Value, Error> {
        if valid_string(s.as_raw()) {
            return Ok(s);
        }
        self.ruby_needed()?;
        let ruby = self.ruby;
        if !as_json_called && self.config.strict && self.config.as_json != 0 {
            let coerced = self.as_json(s, false)?;
            if coerced.as_raw() != s.as_raw() {
                if unsafe { rb_sys::RB_TYPE_P(coerced.as_raw(), ruby_value_type::RUBY_T_STRING) } {
                    if !valid_string(coerced.as_raw()) {
                        let message = ruby.str_new("source sequence is illegal/malformed utf-8");
                        return Err(generator_error(ruby, s, message));
                    }
                } else if key {
                    return Err(not_allowed(
                        ruby,
                        coerced,
                        " not allowed as object key in JSON",
                    ));
                }
                return Ok(coerced);
            }
        }
        let utf8: Value = ruby.class_encoding().const_get("UTF_8")?;
        match once(GENERATE, "encode", || {
            s.funcall::<_, _, Value>("encode", (utf8,))
        }) {
            Ok(converted) => Ok(converted),
            Err(e) if e.is_kind_of(ruby.exception_standard_error()) => {
                let Some(exception) = e.value() else {
                    return Err(e);
                };
                let message: Value = exception.funcall("message", ())?;
                let message = RString::from_value(message)
                    .ok_or_else(|| Error::new(ruby.exception_type_error(), "message"))?;
                let error = generator_error(ruby, s, message);
                // Raised inside the gem's rescue: the conversion error is its cause.
                if let Some(raised) = error.value() {
                    unsafe {
                        rb_sys::rb_ivar_set(
                            raised.as_raw(),
                            rb_sys::rb_intern(c"cause".as_ptr()),
                            exception.as_raw(),
                        )
                    };
                }
                Err(error)
            }
            Err(e) => Err(e),
        }
    }

    /// `raw_generate_json_string`: a valid String's escaped text, quoted.
    #[inline]
    fn raw_string(&mut self, s: Value) -> Result<(), Error> {
        let raw = s.as_raw();
        let range = coderange(raw);
        if range != ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT as u32
            && range != ruby_coderange_type::RUBY_ENC_CODERANGE_VALID as u32
        {
            self.ruby_needed()?;
            let message = self
                .ruby
                .str_new("source sequence is illegal/malformed utf-8");
            return Err(generator_error(self.ruby, s, message));
        }
        self.valid_raw_string(raw)
    }

    /// A String known to be ASCII or valid UTF-8, escaped and quoted.
    #[inline(always)]
    fn valid_raw_string(&mut self, raw: VALUE) -> Result<(), Error> {
        let bytes = str_bytes(raw);
        let mark = self.out.len();
        if self.config.ascii_only {
            self.out.push(b'"');
            // Valid UTF-8: escaping cannot fail.
            let _ = core::escape_string(bytes, true, self.config.script_safe, &mut self.out);
            self.out.push(b'"');
        } else {
            core::quote_valid_utf8(bytes, self.config.script_safe, &mut self.out);
            if self.config.script_safe {
                core::escape_js_separators(&mut self.out, mark);
            }
        }
        Ok(())
    }

    fn stash(&mut self, e: Error) -> Stashed {
        self.stashed = Some(e);
        Stashed
    }

    fn array(&mut self, obj: Value) -> Result<(), Error> {
        self.array_walk(obj.as_raw())
            .map_err(|Stashed| self.stashed.take().expect("a stashed error"))
    }

    /// An Array. Its elements that are Arrays or Hashes are entered directly (not
    /// through `value_from`), so that each level of nesting takes as little of the
    /// machine stack as the gem's does.
    #[inline(never)]
    fn array_walk(&mut self, raw: VALUE) -> Result<(), Stashed> {
        let depth = match self.enter() {
            Ok(depth) => depth,
            Err(e) => return Err(self.stash(e)),
        };
        if unsafe { rb_sys::RARRAY_LEN(raw) } == 0 {
            core::push_bytes(&mut self.out, b"[]");
            self.depth -= 1;
            return Ok(());
        }
        if self.compact_now() {
            self.out.push(b'[');
            if crate::json::compact::elements(self, &Compact, self.ruby, raw, depth).is_err() {
                let retry = self.ruby_needed().expect_err("an unprotected walk");
                return Err(self.stash(retry));
            }
            self.depth = depth - 1;
            self.out.push(b']');
            return Ok(());
        }
        let mut i = 0;
        // Length and element read afresh each time: a #to_json may change the Array.
        while i < unsafe { rb_sys::RARRAY_LEN(raw) } {
            if self.config.array_nl == 0 && self.config.indent == 0 {
                self.out.push(if i == 0 { b'[' } else { b',' });
            } else {
                self.array_separator(i, depth);
            }
            let element = unsafe { *rb_sys::RARRAY_CONST_PTR(raw).add(i as usize) };
            if !rb_sys::SPECIAL_CONST_P(element)
                && class_of(element) == self.ruby.class_array().as_raw()
            {
                self.array_walk(element)?;
            } else {
                self.element(element)?;
            }
            i += 1;
        }
        self.array_close(depth);
        Ok(())
    }

    /// What goes before element `i`: `[` or `,`, then the newline and indent if any.
    /// Out of line, like `array_close`, to keep `array_walk`'s frame small.
    #[inline(never)]
    fn array_separator(&mut self, i: std::os::raw::c_long, depth: i64) {
        self.out.push(if i == 0 { b'[' } else { b',' });
        self.push_value(self.config.array_nl);
        self.indent(depth);
    }

    #[inline(never)]
    fn array_close(&mut self, depth: i64) {
        let depth = depth - 1;
        self.depth = depth;
        if self.config.array_nl != 0 {
            self.push_value(self.config.array_nl);
            self.indent(depth);
        }
        self.out.push(b']');
    }

    /// An Array element other than an Array: out of line, so that `array_walk`'s frame
    /// stays small.
    #[inline(never)]
    fn element(&mut self, element: VALUE) -> Result<(), Stashed> {
        match self.value(unsafe { Value::from_raw(element) }, true) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.stash(e)),
        }
    }

    /// A Hash. `rb_hash_foreach` raises if user code run from the walk changed the
    /// Hash, so it runs under `protect` whenever user code may run. Most documents hold
    /// only core values, so the walk is first tried straight from the Hash's table
    /// (`helpers::hash`), running no Ruby code at all; at the first value that would need
    /// Ruby, the outermost such Hash is written again from its start, protected.
    fn object(&mut self, obj: Value) -> Result<(), Error> {
        let mut hash = obj;
        if self.config.sort_keys != 0 {
            self.ruby_needed()?;
            let proc = self.config.sort_keys;
            let arg = [hash.as_raw()];
            let sorted = once(GENERATE, "sort_keys", || {
                protect(|| unsafe { rb_sys::rb_proc_call_with_block(proc, 1, arg.as_ptr(), QNIL) })
            })?;
            hash = unsafe { Value::from_raw(sorted) };
            check_type(hash, ruby_value_type::RUBY_T_HASH)?;
        }
        if self.unprotected > 0 {
            return self.object_walk(hash, false);
        }
        if self.unprotected_ok {
            let (mark, depth) = (self.out.len(), self.depth);
            self.unprotected += 1;
            let result = self.object_walk(hash, false);
            self.unprotected -= 1;
            if !self.retry {
                return result;
            }
            // Nothing observable happened: no Ruby code ran and no error was made.
            self.retry = false;
            self.unprotected_ok = false;
            self.out.truncate(mark);
            self.depth = depth;
        }
        self.object_walk(hash, true)
    }

    fn object_walk(&mut self, hash: Value, protected: bool) -> Result<(), Error> {
        let raw = hash.as_raw();
        self.enter()?;
        if unsafe { rb_sys::rb_hash_size_num(raw) } == 0 {
            self.out.extend_from_slice(b"{}");
            self.depth -= 1;
            return Ok(());
        }
        self.out.push(b'{');
        let mut pairs = PairState {
            hash,
            first: true,
            first_key_type: ruby_value_type::RUBY_T_NONE,
            mixed_seen: false,
        };
        if protected {
            let mut walk = PairWalk {
                gen: self,
                pairs: &mut pairs,
                result: Ok(()),
            };
            let walk_ptr = &mut walk as *mut PairWalk as VALUE;
            let walked = protect(|| unsafe {
                rb_sys::rb_hash_foreach(raw, Some(walk_pair), walk_ptr);
                QNIL
            });
            walk.result?;
            walked?;
        } else if self.compact_now() {
            let depth = self.depth;
            if crate::json::compact::pairs(self, &Compact, self.ruby, raw, depth).is_err() {
                return self.ruby_needed();
            }
        } else {
            // No Ruby code runs in this walk (see `ruby_needed`) and nothing raises, so the
            // Hash cannot change under it.
            unsafe {
                each_pair_quiet(raw, |key, value| {
                    self.pair(&mut pairs, Value::from_raw(key), Value::from_raw(value))
                })
            }?;
        }
        self.depth -= 1;
        let depth = self.depth;
        if self.config.object_nl != 0 {
            self.push_value(self.config.object_nl);
            self.indent(depth);
        }
        self.out.push(b'}');
        std::hint::black_box(hash);
        Ok(())
    }

    /// `json_object_i`: one pair.
    fn pair(&mut self, walk: &mut PairState, key: Value, value: Value) -> Result<(), Error> {
        let ruby = self.ruby;
        let mut key = key;
        let mut key_type = unsafe { rb_sys::RB_TYPE(key.as_raw()) };
        if walk.first {
            walk.first = false;
            walk.first_key_type = key_type;
        } else {
            self.out.push(b',');
        }
        self.push_value(self.config.object_nl);
        self.indent(self.depth);
        // A key written before (a String of class String or a Symbol, in a Hash whose
        // keys so far are of its type) comes from the table.
        let cacheable = key_type == walk.first_key_type
            && match key_type {
                ruby_value_type::RUBY_T_STRING => {
                    class_of(key.as_raw()) == ruby.class_string().as_raw()
                }
                ruby_value_type::RUBY_T_SYMBOL => true,
                _ => false,
            };
        if cacheable && self.known_key(key.as_raw()) {
            return self.value(value, true);
        }
        let mark = self.out.len();
        let mut as_json_called = false;
        let key_string = loop {
            match key_type {
                ruby_value_type::RUBY_T_STRING => {
                    if walk.first_key_type != ruby_value_type::RUBY_T_STRING {
                        self.mixed_keys(walk)?;
                    }
                    if class_of(key.as_raw()) == ruby.class_string().as_raw() {
                        break key;
                    }
                    self.ruby_needed()?;
                    break self.string_subclass_key(key)?;
                }
                ruby_value_type::RUBY_T_SYMBOL => {
                    if walk.first_key_type != ruby_value_type::RUBY_T_SYMBOL {
                        self.mixed_keys(walk)?;
                    }
                    break unsafe { Value::from_raw(rb_sys::rb_sym2str(key.as_raw())) };
                }
                _ => {
                    self.ruby_needed()?;
                    if self.config.strict {
                        if self.config.as_json != 0 && !as_json_called {
                            key = self.as_json(key, true)?;
                            key_type = unsafe { rb_sys::RB_TYPE(key.as_raw()) };
                            as_json_called = true;
                            continue;
                        }
                        return Err(not_allowed(ruby, key, " not allowed as object key in JSON"));
                    }
                    let raw = key.as_raw();
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
                    break unsafe { Value::from_raw(converted) };
                }
            }
        };
        let keep = cacheable && utf8_text(key_string.as_raw());
        let key_string = self.valid_encoding(key_string, as_json_called, true)?;
        if class_of_value(key_string).as_raw() == ruby.class_string().as_raw() {
            self.raw_string(key_string)?;
        } else {
            self.value(key_string, true)?;
        }
        // Kept without the delimiter unless that is the compact `:` (see `kept_escaping`).
        if keep && !self.colon_only {
            self.remember_key(key.as_raw(), mark);
        }
        self.delimiter();
        if keep && self.colon_only {
            self.remember_key(key.as_raw(), mark);
        }
        self.value(value, true)
    }

    /// A pair's delimiter: `space_before`, `:`, `space`.
    #[inline(always)]
    fn delimiter(&mut self) {
        self.push_value(self.config.space_before);
        self.out.push(b':');
        self.push_value(self.config.space);
    }

    /// The key table's bits for this generation's keys (see [`key_cache::kept_escaping`]).
    #[inline(always)]
    fn kept_escaping(&self) -> u8 {
        key_cache::kept_escaping(self.key_escaping, self.colon_only)
    }

    /// Writes `key` (a String of class String or a Symbol) and its delimiter from the key
    /// table, if it is there.
    #[inline(always)]
    fn known_key(&mut self, key: VALUE) -> bool {
        if !key_cache::keepable(key) {
            return false;
        }
        let keys = self.keys.table();
        // SAFETY: see `key_cache::Lazy::table`; the table and the output are separate.
        match unsafe { (*keys).get(key, self.kept_escaping()) } {
            Some(written) => {
                core::push_bytes(&mut self.out, written);
                if !self.colon_only {
                    self.delimiter();
                }
                true
            }
            None => false,
        }
    }

    /// Keeps what was written from `mark` on as `key`'s written form: `key` must be
    /// written from its own [`utf8_text`], followed by the compact colon when that is the
    /// delimiter and by nothing otherwise, and no Ruby code have run since `mark`.
    #[inline(always)]
    fn remember_key(&mut self, key: VALUE, mark: usize) {
        if key_cache::keepable(key) && self.out.len() - mark <= key_cache::MAX_LEN {
            let keys = self.keys.table();
            // SAFETY: as in `known_key`.
            unsafe { (*keys).put(key, self.kept_escaping(), &self.out[mark..]) };
        }
    }

    /// `convert_string_subclass`: a String subclass key's `to_s`, which must be a String.
    fn string_subclass_key(&mut self, key: Value) -> Result<Value, Error> {
        let s: Value = once(GENERATE, "to_s", || key.funcall("to_s", ()))?;
        if unsafe { rb_sys::RB_TYPE_P(s.as_raw(), ruby_value_type::RUBY_T_STRING) } {
            return Ok(s);
        }
        let class = unsafe { Value::from_raw(rb_sys::rb_obj_class(key.as_raw())) };
        let gives = unsafe { Value::from_raw(rb_sys::rb_obj_class(s.as_raw())) };
        Err(Error::new(
            self.ruby.exception_type_error(),
            format!("can't convert {class} to String ({class}#to_s gives {gives})"),
        ))
    }

    /// A Hash with keys of more than one type: json asks its Ruby code whether two of them
    /// collide as Strings (it raises then), once per Hash, unless duplicates are allowed.
    fn mixed_keys(&mut self, walk: &mut PairState) -> Result<(), Error> {
        if walk.mixed_seen {
            return Ok(());
        }
        if self.config.duplicates == Duplicates::Ignore {
            walk.mixed_seen = true;
            return Ok(());
        }
        self.ruby_needed()?;
        walk.mixed_seen = true;
        let json: RModule = self.ruby.class_object().const_get("JSON")?;
        let hash = walk.hash;
        once(GENERATE, "on_mixed_keys_hash", || {
            json.funcall::<_, _, Value>("on_mixed_keys_hash", (hash,))
        })?;
        Ok(())
    }
}

/// `JSON::Fragment` (looked up at each use: json defines it in Ruby).
fn fragment_class(ruby: &Ruby) -> Result<VALUE, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    let fragment: Value = json.const_get("Fragment")?;
    Ok(fragment.as_raw())
}

/// The pairs of one Hash as its walk goes: what `json_object_i` keeps between pairs.
struct PairState {
    hash: Value,
    first: bool,
    first_key_type: ruby_value_type,
    mixed_seen: bool,
}

/// A protected walk of one Hash: what `walk_pair` needs.
struct PairWalk<'g, 'p, 'r> {
    gen: &'g mut Gen<'r>,
    pairs: &'p mut PairState,
    result: Result<(), Error>,
}

/// `rb_hash_foreach`'s callback: writes one pair, stops at the first error (which the
/// walk raises once `rb_hash_foreach` has returned).
unsafe extern "C" fn walk_pair(key: VALUE, value: VALUE, arg: VALUE) -> std::os::raw::c_int {
    let walk = &mut *(arg as *mut PairWalk);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        walk.gen
            .pair(walk.pairs, Value::from_raw(key), Value::from_raw(value))
    }));
    let result = outcome.unwrap_or_else(|_| {
        Err(Error::new(
            walk.gen.ruby.exception_runtime_error(),
            "panic in the JSON generator",
        ))
    });
    match result {
        Ok(()) => rb_sys::st_retval::ST_CONTINUE as _,
        Err(e) => {
            walk.result = Err(e);
            rb_sys::st_retval::ST_STOP as _
        }
    }
}

/// The gem's JSON.generate, kept by the swap as a private alias.
static STDLIB_GENERATE: crate::helpers::replaced::Replaced =
    crate::helpers::replaced::Replaced::new(c"__rusty_stdlib_stdlib_generate");

thread_local! {
    static STATE_ANSWER: std::cell::Cell<(VALUE, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Whether `JSON::State` (as `plain_generate`'s receiver names it) is ours, remembered
/// while no constant changes.
static STATE_IS_OURS: crate::helpers::constants::Remembered =
    crate::helpers::constants::Remembered::new(&STATE_ANSWER);

/// `RustyStdlib::JSON::V3::PlainGenerate#generate`, swapped in for json 3's JSON.generate:
/// `JSON.generate(obj)` (or with `nil`) is `State.generate(obj, nil, nil)` there, which ours
/// runs without the Ruby frame while `JSON::State` is ours; every other call is the gem's
/// JSON.generate, with the arguments as given.
pub fn plain_generate(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let plain = crate::json::generator::option_less(args);
    let module = rb_self.as_raw();
    let ours = ruby.get_inner(&STATE_CLASS).as_raw();
    if let Some(obj) = plain {
        if crate::json::generator::names_state(module, ours, &STATE_IS_OURS)? {
            return generate(
                ruby,
                None,
                Config::DEFAULT,
                obj,
                ruby.qnil().as_value(),
                Fallback::Yes,
            );
        }
    } else if let [obj, opts] = *args {
        // `JSON.generate(obj, hash)`: `State === hash` is false (ours answers), so it is
        // `State.generate(obj, hash.frozen? ? hash : hash.dup, nil)`; ours reads the Hash
        // once before any Ruby code can run, so the copy would change nothing, except for
        // `rfc8785`, which hands the Hash on to the gem (those calls take the gem's way).
        // (Through the gem's method, a small `JSON.generate(obj, max_nesting: false)`
        // took a quarter longer than the gem's own.)
        if unsafe { rb_sys::RB_TYPE_P(opts.as_raw(), ruby_value_type::RUBY_T_HASH) }
            && !super::state::names_rfc8785(opts.as_raw())
            && crate::json::generator::names_state(module, ours, &STATE_IS_OURS)?
        {
            return super::state::class_generate(ruby, obj, opts, ruby.qnil().as_value());
        }
    }
    STDLIB_GENERATE.call(rb_self, args)
}
