//! `Digest::SHA256.digest(str)` / `.hexdigest(str)` in one native call.
//!
//! The stdlib allocates an instance, calls `initialize`, then `#digest` through method
//! dispatch; for our exact classes that is one hash of the string. Anything else (a
//! subclass, extra constructor arguments, a non-String) goes to `Digest::Class` (super).

use magnus::{method, prelude::*, Error, RClass, RString, Ruby, Value};
use rusty_core::digest::Algorithm;

use super::object::{binary_result, call_super, digest_of, hex_result};
use super::registry;

pub fn define(class: RClass) -> Result<(), Error> {
    class.define_singleton_method("digest", method!(class_digest, -1))?;
    class.define_singleton_method("hexdigest", method!(class_hexdigest, -1))?;
    Ok(())
}

/// The algorithm and input when the fast path applies.
fn fast_input(class: Value, args: &[Value]) -> Option<(Algorithm, RString)> {
    let algorithm = registry::algorithm_of_class(class)?;
    match args {
        [arg] => RString::from_value(*arg).map(|s| (algorithm, s)),
        _ => None,
    }
}

fn class_digest(ruby: &Ruby, class: Value, args: &[Value]) -> Result<Value, Error> {
    match fast_input(class, args) {
        Some((algorithm, string)) => {
            Ok(binary_result(ruby, &digest_of(algorithm, string)?).as_value())
        }
        None => call_super(args),
    }
}

fn class_hexdigest(ruby: &Ruby, class: Value, args: &[Value]) -> Result<Value, Error> {
    match fast_input(class, args) {
        Some((algorithm, string)) => Ok(hex_result(ruby, &digest_of(algorithm, string)?).as_value()),
        None => call_super(args),
    }
}
