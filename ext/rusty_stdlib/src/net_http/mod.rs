//! `URI`'s form codec, `Net::HTTPHeader`'s name canonicalisation, request heads,
//! response head lines and chunk-size lines on `rusty_core`, as
//! `RustyStdlib::NetHttp::Native` functions.
//!
//! Every function here is a fast path for one stdlib method: it returns `nil` when the
//! arguments are outside what it handles (decided before anything observable happens),
//! and the Ruby shim (lib/rusty_stdlib/net_http.rb) then runs the stdlib's code.
//! Non-nil results are Strings, Arrays, Integers or false, so `nil` is unambiguous.

mod body;
mod buffer;
mod chunked;
mod form;
mod head;
mod header;
mod keys;
mod methods;
mod request;
mod response;
mod strings;

use magnus::{function, method, prelude::*, Error, RModule, Ruby};

pub fn init(ruby: &Ruby, root: RModule) -> Result<(), Error> {
    let module = root.define_module("NetHttp")?;
    let native = module.define_module("Native")?;
    // The :header_names piece, prepended to Net::HTTPHeader by the shim.
    let header_names = module.define_module("HeaderNames")?;
    // Net::HTTPHeader#each_capitalized works in any Ractor on Ruby 3.3 (net-http 0.4), so
    // ours must too (they keep no shared mutable state; `header::init` makes their
    // statics now). URI's form codec works in any Ractor on both Rubies. The rest of
    // Net::HTTP does not (its constants are not shareable), so its functions stay
    // main-Ractor ones.
    header::init(ruby);
    methods::init();
    crate::helpers::ractor::ractor_safe(|| {
        define_header_names(header_names)?;
        define_form_codec(native)
    })?;
    native.define_singleton_method("capitalize", function!(header::capitalize, 1))?;
    native.define_singleton_method("request_head", function!(request::request_head, 4))?;
    native.define_singleton_method("status_line", function!(response::status_line, 1))?;
    native.define_singleton_method("header_line", function!(response::header_line, 1))?;
    native.define_singleton_method("line_end", function!(buffer::line_end, 1))?;
    native.define_singleton_method("header_block", function!(buffer::header_block, 1))?;
    native.define_singleton_method("read_head_fields", function!(buffer::read_head_fields, 4))?;
    native.define_singleton_method("read_new", function!(head::read_new, 5))?;
    native.define_singleton_method("chunked_scan", function!(chunked::chunked_scan, 3))?;
    native.define_singleton_method("remember_stock", function!(methods::remember, 2))?;
    native.define_singleton_method("plain_chunked", function!(body::plain_chunked, 1))?;
    native.define_singleton_method("chunk_size", function!(response::chunk_size, 1))?;
    Ok(())
}

fn define_header_names(header_names: RModule) -> Result<(), Error> {
    header_names.define_method("each_capitalized", method!(header::each_capitalized, 0))?;
    header_names.define_private_method("capitalize", method!(header::capitalize_method, 1))?;
    Ok(())
}

fn define_form_codec(native: RModule) -> Result<(), Error> {
    native.define_singleton_method(
        "encode_www_form_component",
        function!(form::encode_www_form_component, 2),
    )?;
    native.define_singleton_method("encode_www_form", function!(form::encode_www_form, 2))?;
    native.define_singleton_method(
        "decode_www_form_component",
        function!(form::decode_www_form_component, 2),
    )?;
    native.define_singleton_method("decode_www_form", function!(form::decode_www_form, 4))?;
    Ok(())
}
