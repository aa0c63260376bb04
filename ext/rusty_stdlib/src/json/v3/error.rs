//! json 3's parser exceptions, made as its C code makes them: the message's bytes and
//! encoding, and the `@line`, `@column` and `@json_path` that `ParserError#line`,
//! `#column` and `#json_path` read.

use magnus::{
    prelude::*,
    rb_sys::{protect, FromRawValue},
    Error, ExceptionClass, RModule, Ruby, Value,
};
use rb_sys::VALUE;
use rusty_core::json::v3::{position, Error as ParseError, ErrorKind, Segment};

use crate::helpers::error::c_error;
use crate::helpers::hash::each_pair_quiet;
use crate::json::sink::RubySink;

fn json_error(ruby: &Ruby, name: &str) -> Result<ExceptionClass, Error> {
    let json: RModule = ruby.class_object().const_get("JSON")?;
    json.const_get(name)
}

/// The exception for a rejected document. Key objects in its path are read from
/// `sink`'s stack, so this runs before the sink is finished.
pub fn parse_error(ruby: &Ruby, sink: &RubySink, source: &[u8], e: ParseError<Error>) -> Error {
    match build(ruby, sink, source, e) {
        Ok(error) | Err(error) => error,
    }
}

fn build(
    ruby: &Ruby,
    sink: &RubySink,
    source: &[u8],
    e: ParseError<Error>,
) -> Result<Error, Error> {
    let (line, column) = position::line_column(source, e.at);
    let duplicate = matches!(e.kind, ErrorKind::DuplicateKey(_));
    let message: VALUE = match e.kind {
        ErrorKind::Sink(error) => return Ok(error),
        ErrorKind::Nesting(depth) => {
            let class = json_error(ruby, "NestingError")?;
            return Ok(c_error(
                ruby,
                class,
                &format!("nesting of {depth} is too deep"),
            ));
        }
        ErrorKind::Syntax(message) => {
            // `rb_enc_sprintf(utf8, format, excerpt)`, then " at line L column C".
            let mut text = Vec::with_capacity(96);
            let format = message.format();
            match format.split_once("%s") {
                Some((before, after)) => {
                    text.extend_from_slice(before.as_bytes());
                    position::snippet(source, e.at).write_to(&mut text);
                    text.extend_from_slice(after.as_bytes());
                }
                None => text.extend_from_slice(format.as_bytes()),
            }
            text.extend_from_slice(format!(" at line {line} column {column}").as_bytes());
            ruby.enc_str_new(&text, ruby.utf8_encoding()).as_raw()
        }
        ErrorKind::DuplicateKey(position) => {
            let key = sink.stacked(position);
            duplicate_message(key, line, column)?
        }
    };
    let class = json_error(ruby, "ParserError")?;
    let message = unsafe { Value::from_raw(message) };
    let exception = class.new_instance((message,))?;
    let path = ruby.ary_new_capa(e.path.len());
    for (i, segment) in e.path.iter().enumerate() {
        match *segment {
            Segment::Index(i) => path.push(i)?,
            Segment::Key(position) => {
                let mut key = sink.stacked(position);
                // The gem names a repeated key by its String, a Symbol's too.
                if duplicate && i + 1 == e.path.len() {
                    key = symbol_name(key);
                }
                path.push(unsafe { Value::from_raw(key) })?
            }
        }
    }
    let set = |name: &std::ffi::CStr, value: VALUE| unsafe {
        rb_sys::rb_ivar_set(exception.as_raw(), rb_sys::rb_intern(name.as_ptr()), value)
    };
    set(c"@line", ruby.integer_from_i64(line as i64).as_raw());
    set(c"@column", ruby.integer_from_i64(column as i64).as_raw());
    set(c"@json_path", path.as_raw());
    Ok(Error::from(exception))
}

use magnus::rb_sys::AsRawValue;

/// A Symbol's name (the String itself otherwise).
fn symbol_name(key: VALUE) -> VALUE {
    if unsafe { rb_sys::RB_TYPE_P(key, rb_sys::ruby_value_type::RUBY_T_SYMBOL) } {
        unsafe { rb_sys::rb_sym2str(key) }
    } else {
        key
    }
}

/// "duplicate key <key.inspect> at line L column C", made as the gem makes it (with
/// `rb_sprintf`, so ASCII-8BIT unless the inspected key is not ASCII).
fn duplicate_message(key: VALUE, line: usize, column: usize) -> Result<VALUE, Error> {
    protect(|| unsafe {
        let key = symbol_name(key);
        let inspected = rb_sys::rb_inspect(key);
        let message = rb_sys::rb_sprintf(c"duplicate key %li\x0b".as_ptr(), inspected);
        rb_sys::rb_str_concat(message, rb_sys::rb_utf8_str_new(c"".as_ptr(), 0));
        rb_sys::rb_str_catf(
            message,
            c" at line %ld column %ld".as_ptr(),
            line as std::os::raw::c_long,
            column as std::os::raw::c_long,
        );
        message
    })
}

/// `unknown keyword: x` (one) or `unknown keywords: x, y` (several), for the keys of
/// `opts` that `known` refuses, in the Hash's order.
pub fn unknown_keywords(opts: VALUE, known: fn(VALUE) -> bool) -> Error {
    unknown_keywords_where(opts, known)
}

/// [`unknown_keywords`] for the keys of `opts` not in `known`.
pub fn unknown_keywords_in(opts: VALUE, known: &[VALUE]) -> Error {
    unknown_keywords_where(opts, |key| known.contains(&key))
}

fn unknown_keywords_where(opts: VALUE, known: impl Fn(VALUE) -> bool) -> Error {
    let result = protect(|| unsafe {
        let unknown = rb_sys::rb_ary_new();
        // Pushing allocates but runs no Ruby code.
        let _ = each_pair_quiet::<()>(opts, |key, _| {
            if !known(key) {
                rb_sys::rb_ary_push(unknown, key);
            }
            Ok(())
        });
        let message = if rb_sys::RARRAY_LEN(unknown) == 1 {
            rb_sys::rb_sprintf(
                c"unknown keyword: %li\x0b".as_ptr(),
                rb_sys::rb_ary_entry(unknown, 0),
            )
        } else {
            let separator = rb_sys::rb_utf8_str_new(c", ".as_ptr(), 2);
            let joined = rb_sys::rb_ary_join(unknown, separator);
            rb_sys::rb_sprintf(c"unknown keywords: %li\x0b".as_ptr(), joined)
        };
        rb_sys::rb_exc_new_str(rb_sys::rb_eArgError, message)
    });
    match result {
        Ok(exception) => {
            let exception = unsafe { Value::from_raw(exception) };
            Error::from(magnus::Exception::from_value(exception).expect("an exception"))
        }
        Err(e) => e,
    }
}
