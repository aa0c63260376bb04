//! JSON parsing with the exact grammar, quirks and error positions of the json gem 2.6's
//! C parser (a Ragel machine), without any Ruby objects.
//!
//! [`parse`] walks the bytes of a document and reports every value to a [`Sink`], which
//! builds whatever it likes (the Ruby binding builds Ruby objects). Containers are handled
//! with an explicit frame stack, not recursion, so depth never threatens the machine stack.
//!
//! What 2.6 accepts beyond RFC 8259, and what this module reproduces:
//! - `/* */` and `// ...\n` comments wherever whitespace may go;
//! - any escape `\x` (other than a control character) stands for `x`;
//! - a high surrogate escape followed by any `\uXXXX` is combined arithmetically; one followed
//!   by something else becomes `?` and swallows the next byte;
//! - bytes are not checked for UTF-8 validity;
//! - `NaN`, `Infinity`, `-Infinity` with `allow_nan`.
//!
//! Errors carry the C source line number the gem prints (`"859: unexpected token at '…'"`)
//! and the byte offset where the message's excerpt starts.
//!
//! json 2.9's parser has the same grammar; where it fails differently (a number with a
//! broken tail) [`Options`] says which way to go, and the binding words its messages.

mod generate;
pub mod layout_bytes;
mod lemire;
mod number;
mod output;
mod parser;
mod pow5_table;
mod string;
pub mod v3;

pub use generate::{
    escape_js_separators, escape_string, escape_valid_utf8, push_bytes, quote_valid_utf8,
    write_f64, write_i64, EscapeError,
};
pub use number::{parse_float_fast, parse_int_fast, Decimal};
pub use output::Output;
pub use parser::{parse, Options, ParseError, Sink};
pub use string::{same_bytes, scan_string, unescape, StringScan, UnescapeError};

/// C line numbers json 2.6.1's `parser.c` prints in its messages.
pub mod lines {
    /// Top-level document error.
    pub const DOCUMENT: u32 = 859;
    /// Error inside an array.
    pub const ARRAY: u32 = 451;
    /// `NaN` without `allow_nan`.
    pub const NAN: u32 = 225;
    /// `Infinity` without `allow_nan`.
    pub const INFINITY: u32 = 232;
    /// `-Infinity` without `allow_nan`.
    pub const MINUS_INFINITY: u32 = 249;
    /// `\uD800`-style high surrogate with fewer than six bytes left in the string.
    pub const SURROGATE: u32 = 521;
}

/// The bytes the gem quotes after "unexpected token at": from `at` up to the first NUL
/// (the C code prints the rest of the source as a C string). `None` stands for the one
/// place where the C code points before the start of the buffer (`Infinity` at offset 0);
/// it printed an empty excerpt there.
pub fn excerpt(source: &[u8], at: Option<usize>) -> &[u8] {
    match at {
        Some(at) if at <= source.len() => {
            let rest = &source[at..];
            match memchr::memchr(0, rest) {
                Some(nul) => &rest[..nul],
                None => rest,
            }
        }
        _ => &[],
    }
}

#[cfg(test)]
mod tests;
