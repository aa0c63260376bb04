//! Net::HTTP message codec and URI form codec, on bytes.
//!
//! - [`form`]: `URI.encode_www_form_component` / `decode_www_form_component` /
//!   `decode_www_form` byte transforms (uri 0.11–0.13 behaviour).
//! - [`header`]: `Net::HTTPHeader#capitalize` for ASCII names.
//!
//! Everything here is Ruby-free; the encoding decisions (which strings may take these
//! byte paths at all) are made by the binding in `rusty_stdlib`.

pub mod form;
pub mod header;
pub mod response;

#[cfg(test)]
mod tests;
