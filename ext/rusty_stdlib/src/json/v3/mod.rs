//! `RustyStdlib::JSON::V3`: the parser for json 3.x (`JSON::Ext::ParserConfig` and the
//! class method `JSON::Ext::Parser.parse`) on `rusty_core::json::v3`.
//!
//! json 3 parses through a `ParserConfig` (its options, read once) whose `#parse(source)`
//! does the work; `JSON::Parser.new(source, opts).parse` and `JSON::Coder` hold one, and
//! `JSON.parse` calls the class method `Parser.parse(source, opts)`. Ours mirror those;
//! the Ruby half (`V3::Parser`) is lib/rusty_stdlib/json/parser_v3.rb. Options that run
//! user code in the middle of the walk (`on_load`, which `object_class` and
//! `array_class` become, and `decimal_class`) hand the whole config to the gem's.

mod config;
mod error;
mod generate;
mod state;

use magnus::{method, prelude::*, Error, RModule, Ruby};

pub use config::ParserConfig;

pub fn init(ruby: &Ruby, json: RModule) -> Result<(), Error> {
    let v3 = json.define_module("V3")?;
    let class = v3.define_class("ParserConfig", ruby.class_object())?;
    class.define_alloc_func::<ParserConfig>();
    class.define_method("initialize", method!(ParserConfig::initialize, 1))?;
    class.define_method(
        "parse",
        crate::scrubbing!(method!(ParserConfig::parse, 1); source),
    )?;
    let parser = v3.define_class("Parser", ruby.class_object())?;
    parser.define_singleton_method(
        "parse",
        crate::scrubbing!(method!(config::parse_with, 2); source, opts),
    )?;
    parser.define_singleton_method(
        "try_parse",
        crate::scrubbing!(method!(config::try_parse, 1); source),
    )?;
    state::define(ruby, v3)?;
    Ok(())
}
