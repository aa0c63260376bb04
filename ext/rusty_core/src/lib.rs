//! Ruby-free byte-level cores of rusty_stdlib.
//!
//! Everything here works on bytes and plain Rust types so it can be tested with
//! `cargo test` and fuzzed without a Ruby VM. The `rusty_stdlib` crate binds it to Ruby.

pub mod coderange;
pub mod digest;
pub mod dtoa;
pub mod hex;
pub mod json;
pub mod marshal;
pub mod net_http;

/// A tiny xorshift generator for the tests' seeded inputs, so they need no crate.
#[cfg(test)]
pub(crate) fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}
