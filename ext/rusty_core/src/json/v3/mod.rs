//! JSON parsing as json 3.x's C parser does it (json 3.1.0): the hand-written state
//! machine json has had since 2.10, with 3.0's errors and defaults, without Ruby objects.
//!
//! Where it differs from 2.x's Ragel grammar ([`super::parse`]):
//! - every error names its place: `"<what> at line L column C"`, the column counted in
//!   characters (each byte of a broken UTF-8 sequence is one), with a 32-byte excerpt of
//!   the source ([`position`]), and the path of the value it was in ([`Segment`]);
//! - comments are refused unless `allow_comments`, duplicate object keys raise, lone
//!   surrogate escapes (leading or trailing) raise, unknown escapes raise unless
//!   `allow_invalid_escape`, control characters in strings raise unless
//!   `allow_control_characters`;
//! - numbers follow json's own digit scan and its rules for which floats Ruby's `strtod`
//!   converts (and may warn about): [`FloatValue`].
//!
//! [`parse`] walks the document with an explicit frame stack and reports each value to a
//! [`Sink`]; its errors carry the byte offset and path, and the binding words them
//! with [`position::snippet`] and [`position::line_column`].

mod error;
pub mod fpconv;
mod number;
mod parser;
pub mod position;
mod string;
mod tape;

pub use error::{Error, ErrorKind, Message, Segment};
pub use parser::{parse, FloatValue, Options, Sink};
pub use tape::Tape;

#[cfg(test)]
mod tests;
