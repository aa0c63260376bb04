//! `Digest::MD5`, `SHA1`, `SHA256`, `SHA384`, `SHA512`, `RMD160` and `SHA2` on `rusty_core`.
//!
//! Ruby asks `RustyStdlib::Digest.build_class("SHA256")` for a class; we make an anonymous
//! subclass of `Digest::Base` (or `Digest::Class` for SHA2, as the stdlib does) whose
//! allocator and primitive methods are ours. The shim names it by assigning it to the
//! `Digest` constant, so `name`, `inspect` and the ancestry look exactly like the stdlib's.
//! Everything the stdlib builds on those primitives in `Digest::Instance` (`==`, `file`,
//! `base64digest`, `bubblebabble`, …) is inherited unchanged.

mod class_methods;
mod object;
mod registry;
mod sha2;

use magnus::{function, method, prelude::*, Error, RClass, RModule, Ruby};
use rusty_core::digest::Algorithm;

pub use object::DigestObject;

pub fn init(ruby: &Ruby, root: RModule) -> Result<(), Error> {
    ruby.require("digest")?;
    let module = root.define_module("Digest")?;
    module.define_singleton_method("build_class", function!(build_class, 1))?;
    Ok(())
}

/// The class for the stdlib constant `Digest::<name>`, built once and reused.
fn build_class(ruby: &Ruby, name: String) -> Result<RClass, Error> {
    if name == "SHA2" {
        return sha2::build_class(ruby);
    }
    let algorithm = Algorithm::ALL
        .into_iter()
        .find(|a| a.ruby_name() == name)
        .ok_or_else(|| {
            Error::new(
                ruby.exception_arg_error(),
                format!("rusty_stdlib has no Digest::{name}"),
            )
        })?;
    if let Some(class) = registry::class_for(ruby, algorithm) {
        return Ok(class);
    }
    let digest: RModule = ruby.class_object().const_get("Digest")?;
    let base: RClass = digest.const_get("Base")?;
    let class = new_class(ruby, base)?;
    object::define_alloc_func(class, algorithm);
    define_primitives(class)?;
    class_methods::define(class)?;
    registry::register(ruby, algorithm, class);
    Ok(class)
}

/// `Class.new(superclass)`: unlike `rb_class_new`, it also gives the class its metaclass
/// (so inherited class methods such as `Digest::Class.hexdigest` work) and runs `inherited`.
fn new_class(ruby: &Ruby, superclass: RClass) -> Result<RClass, Error> {
    ruby.class_class().funcall("new", (superclass,))
}

/// The methods `Digest::Base` defines, which every other method builds on.
fn define_primitives(class: RClass) -> Result<(), Error> {
    class.define_method("initialize_copy", method!(DigestObject::initialize_copy, 1))?;
    define_state_methods(class)?;
    // Fast paths for the common calls; each falls back to `Digest::Instance` (super)
    // wherever a subclass or singleton could have changed what the primitives do.
    class.define_method("digest", method!(DigestObject::digest, -1))?;
    class.define_method("hexdigest", method!(DigestObject::hexdigest, -1))?;
    class.define_method("digest!", method!(DigestObject::digest_bang, 0))?;
    class.define_method("hexdigest!", method!(DigestObject::hexdigest_bang, 0))?;
    class.define_method("to_s", method!(DigestObject::to_s, 0))?;
    Ok(())
}

/// What every digest class implements over its running state (SHA2 included).
fn define_state_methods(class: RClass) -> Result<(), Error> {
    class.define_method("update", method!(DigestObject::update, 1))?;
    class.define_method("<<", method!(DigestObject::update, 1))?;
    class.define_method("reset", method!(DigestObject::reset, 0))?;
    class.define_private_method("finish", method!(DigestObject::finish, 0))?;
    class.define_method("digest_length", method!(DigestObject::digest_length, 0))?;
    class.define_method("block_length", method!(DigestObject::block_length, 0))?;
    Ok(())
}
