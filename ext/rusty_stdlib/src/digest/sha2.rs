//! `Digest::SHA2`: the stdlib's bit-length-selected wrapper (digest/sha2.rb), natively.
//!
//! Like the stdlib it is a `Digest::Class`, not a `Digest::Base`: no frozen or
//! same-algorithm checks (the stdlib delegates to an inner object that has none to fail).

use std::sync::OnceLock;

use magnus::{
    method, prelude::*, typed_data::Obj, value::Opaque, Error, RClass, RModule, Ruby, Value,
};
use rusty_core::digest::Algorithm;

use super::DigestObject;

static CLASS: OnceLock<Opaque<RClass>> = OnceLock::new();

pub fn build_class(ruby: &Ruby) -> Result<RClass, Error> {
    if let Some(class) = CLASS.get() {
        return Ok(ruby.get_inner(*class));
    }
    let digest: RModule = ruby.class_object().const_get("Digest")?;
    let base: RClass = digest.const_get("Class")?;
    let class = super::new_class(ruby, base)?;
    super::object::define_alloc_func(class, Algorithm::Sha256);
    class.define_method("initialize", method!(initialize, -1))?;
    class.define_method("initialize_copy", method!(initialize_copy, 1))?;
    super::define_state_methods(class)?;
    class.define_method("inspect", method!(inspect, 0))?;
    ruby.gc_register_mark_object(class);
    let _ = CLASS.set(class.into());
    Ok(class)
}

fn algorithm_for(bitlen: Value) -> Result<Option<Algorithm>, Error> {
    for (bits, algorithm) in [
        (256, Algorithm::Sha256),
        (384, Algorithm::Sha384),
        (512, Algorithm::Sha512),
    ] {
        // `case bitlen when 256` is `256 === bitlen`, which also matches 256.0.
        if Ruby::get_with(bitlen)
            .into_value(bits)
            .funcall::<_, _, bool>("===", (bitlen,))?
        {
            return Ok(Some(algorithm));
        }
    }
    Ok(None)
}

fn initialize(ruby: &Ruby, rb_self: Obj<DigestObject>, args: &[Value]) -> Result<(), Error> {
    let args = magnus::scan_args::scan_args::<(), (Option<Value>,), (), (), (), ()>(args)?;
    let bitlen = args.optional.0.unwrap_or_else(|| ruby.into_value(256));
    match algorithm_for(bitlen)? {
        Some(algorithm) => rb_self.restart(algorithm),
        None => Err(stdlib_error(ruby, bitlen)),
    }
}

/// The stdlib's error for an unsupported `bitlen`, raised by its own initialize: its
/// message is `"unsupported bit length: %s" % bitlen.inspect`, and an `inspect` that
/// raises (a BasicObject has none) raises from the stdlib's line, which a NoMethodError's
/// message quotes (error_highlight).
fn stdlib_error(ruby: &Ruby, bitlen: Value) -> Error {
    let stdlib = || -> Result<Value, Error> {
        let ours: RModule = ruby.class_object().const_get("RustyStdlib")?;
        let digest: RModule = ours.const_get("Digest")?;
        let class: Value = digest.funcall("stdlib", (ruby.to_symbol("SHA2"),))?;
        class.funcall("new", (bitlen,))
    };
    match stdlib() {
        Err(error) => error,
        // Only if its `case` took a value ours did not (a `===` that changed its mind).
        Ok(_) => Error::new(
            ruby.exception_arg_error(),
            format!("unsupported bit length: {}", bitlen.inspect()),
        ),
    }
}

fn initialize_copy(rb_self: Obj<DigestObject>, other: Obj<DigestObject>) -> Result<(), Error> {
    rb_self.copy_state_from(&other)
}

fn inspect(rb_self: Obj<DigestObject>) -> Result<String, Error> {
    let class: Value = rb_self.funcall("class", ())?;
    let name: Value = class.funcall("name", ())?;
    let name = if name.is_nil() {
        String::new()
    } else {
        name.to_string()
    };
    let hex: Value = rb_self.funcall("hexdigest", ())?;
    let bits = rb_self.algorithm().digest_length() * 8;
    Ok(format!("#<{name}:{bits} {hex}>"))
}
