//! Exceptions as MRI's C code makes them.

use magnus::{prelude::*, Error, ExceptionClass, Ruby};

/// An exception as C's `rb_raise` makes it: the message is an ASCII-8BIT String, which a
/// caller can see in `e.message.encoding` (magnus's `Error::new` makes a UTF-8 one, as a
/// `raise` in Ruby code would). For the errors of stdlib code written in C: Marshal,
/// Digest's core, json's generator and parser.
pub fn c_error(ruby: &Ruby, class: ExceptionClass, message: &str) -> Error {
    match class.new_instance((ruby.str_from_slice(message.as_bytes()),)) {
        Ok(exception) => exception.into(),
        Err(e) => e,
    }
}
