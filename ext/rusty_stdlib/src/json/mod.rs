//! `RustyStdlib::JSON::Parser`: a drop-in for json 2.6's and 2.9's `JSON::Ext::Parser` on
//! `rusty_core::json`.
//!
//! The shim installs it with `JSON.parser = RustyStdlib::JSON::Parser`, so `JSON.parse`,
//! `parse!`, `load` and `JSON::Parser.new(...).parse` all come here. Calls with options
//! that run user code while parsing (`create_additions`, `object_class`, `array_class`,
//! `decimal_class`), or with arguments the gem would reject, are handed whole to the
//! gem's own parser when the instance is created: before anything else happened.

mod compact;
mod dialect;
mod generator;
mod key_cache;
mod option_keys;
mod output;
mod parser;
mod sink;
mod stack;
mod tape;
mod v3;

use magnus::{function, method, prelude::*, Error, RModule, Ruby};

pub use parser::ParserObject;

pub fn init(ruby: &Ruby, root: RModule) -> Result<(), Error> {
    // The gem's parser and generator work in any Ractor, so ours must too. Per-call
    // state is on the stack or thread-local, the parser's shared state is Ractor-local
    // (see `sink`), and the statics are set once and then only read. (Methods defined
    // later, at run time, such as the State methods `define_state_methods` adds, are
    // Ractor-safe by Ruby's default.)
    crate::helpers::ractor::ractor_safe(|| define(ruby, root))
}

fn define(ruby: &Ruby, root: RModule) -> Result<(), Error> {
    let module = root.define_module("JSON")?;
    let class = module.define_class("Parser", ruby.class_object())?;
    class.define_alloc_func::<ParserObject>();
    class.define_method("initialize", method!(ParserObject::initialize, -1))?;
    // Parses leave no copy of their result on the machine stack (helpers::stack_scrub).
    class.define_method("parse", crate::scrubbing!(method!(ParserObject::parse, 0);))?;
    class.define_method("source", method!(ParserObject::source, 0))?;
    class.define_singleton_method(
        "try_parse",
        crate::scrubbing!(method!(parser::try_parse, 1); source),
    )?;
    class.define_singleton_method(
        "parse_with",
        crate::scrubbing!(method!(parser::parse_with, 2); source, opts),
    )?;
    sink::init();
    // Whether the generator reads Hash tables directly on this Ruby (3.1, 3.3, 3.4) rather
    // than through a callback per pair: a speed property no output shows, for specs.
    module.define_module_function(
        "direct_hash_walk?",
        function!(crate::helpers::hash_layout::walkable, 0),
    )?;
    // Whether the parser fills new Hashes itself on this Ruby (3.1, 3.3, 3.4) rather than
    // through rb_hash_bulk_insert (helpers::fresh_hash): the same kind of property.
    module.define_module_function(
        "direct_hash_fill?",
        function!(crate::helpers::fresh_hash::available, 0),
    )?;
    // Whether the parser writes the elements of new Arrays (up to 16) itself
    // (helpers::fresh_array) rather than through rb_ary_new_from_values: the same kind.
    module.define_module_function(
        "direct_array_fill?",
        function!(crate::helpers::fresh_array::available, 0),
    )?;
    let tape = module.define_class("Tape", ruby.class_object())?;
    tape.define_singleton_method("new", function!(tape::TapeObject::new, 1))?;
    tape.define_method(
        "build",
        crate::scrubbing!(method!(tape::TapeObject::build, 0);),
    )?;
    key_cache::init();
    generator::init(ruby, module)?;
    v3::init(ruby, module)?;
    Ok(())
}
