//! rusty_stdlib's native extension: thin magnus bindings over `rusty_core`.
//!
//! Each stdlib module gets a folder with an `init` that defines its Ruby classes under
//! `RustyStdlib`; the Ruby shim in `lib/rusty_stdlib/` decides whether to swap them in.

use magnus::{Error, Ruby};

mod digest;
mod helpers;
mod json;
mod marshal;
mod net_http;

#[magnus::init(name = "rusty_stdlib")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let root = ruby.define_module("RustyStdlib")?;
    digest::init(ruby, root)?;
    json::init(ruby, root)?;
    marshal::init(ruby, root)?;
    net_http::init(ruby, root)?;
    Ok(())
}
