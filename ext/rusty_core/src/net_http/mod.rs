//! Net::HTTP message codec and URI form codec, on bytes.
//!
//! - [`form`]: `URI.encode_www_form_component` / `decode_www_form_component` /
//!   `decode_www_form` byte transforms (uri 0.11–0.13 behaviour).
//! - [`header`]: `Net::HTTPHeader#capitalize` for ASCII names, and request heads as
//!   `Net::HTTPGenericRequest#write_header` writes them.
//! - [`chunked`]: chunked bodies over a read buffer, item by item as
//!   `Net::HTTPResponse#read_chunked` reads them.
//! - [`response`]: status lines, header lines and chunk-size lines as
//!   `Net::HTTPResponse` (net-http 0.2.0 / 0.4.1) parses them.
//!
//! Everything here is Ruby-free; the encoding decisions (which strings may take these
//! byte paths at all) are made by the binding in `rusty_stdlib`.

pub mod chunked;
pub mod form;
pub mod header;
pub mod response;

#[cfg(test)]
mod tests;
