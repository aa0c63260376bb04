//! The `@header` keys of parsed responses: the interned (fstring) binary Strings that
//! `Hash#[]=` makes of the stdlib's `key.downcase`, kept in a small direct-mapped cache
//! so that a header name seen before costs a hash and a compare instead of Ruby's
//! fstring table lookup (which hashes, then compares, under its own lock).
//!
//! The cache is a Ruby Array (a GC root), so its Strings stay alive; a live fstring
//! stays the registered one, which is what `rb_enc_interned_str` (and `Hash#[]=`)
//! would return for the same bytes. Header names longer than [`CACHED_MAX`] bytes skip
//! the cache (it must not keep huge Strings alive).

use magnus::{rb_sys::AsRawValue, value::Lazy, RArray, Ruby};
use rb_sys::VALUE;

use super::strings::binary_index;
use crate::helpers::raw::encoding_index;

/// Slots (a power of two): plenty for the few dozen header names a client meets.
const SLOTS: usize = 128;

/// Names up to this many bytes are cached.
const CACHED_MAX: usize = 48;

static CACHE: Lazy<RArray> = Lazy::new(|ruby| {
    let cache = ruby.ary_new_capa(SLOTS);
    for _ in 0..SLOTS {
        cache.push(ruby.qnil()).expect("a new Array takes pushes");
    }
    cache
});

/// FNV-1a: short names, and a collision only costs a miss.
fn slot_of(name: &[u8]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    for &b in name {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 16)) as usize & (SLOTS - 1)
}

/// The interned binary String of `lower` (a downcased header name). Only allocates
/// (rb_enc_interned_str, rb_ary_store on an Array that never grows): call it where an
/// allocation may run the GC but no Ruby code.
pub fn interned_key(ruby: &Ruby, lower: &[u8]) -> VALUE {
    if lower.len() > CACHED_MAX {
        return intern(lower);
    }
    let cache = ruby.get_inner(&CACHE);
    let slot = slot_of(lower);
    unsafe {
        let cached = rb_sys::rb_ary_entry(cache.as_raw(), slot as _);
        // Only this module stores into the cache, and only interned binary Strings.
        if rb_sys::RB_TYPE_P(cached, rb_sys::ruby_value_type::RUBY_T_STRING)
            && encoding_index(cached) == binary_index()
            && crate::helpers::raw::str_bytes(cached) == lower
        {
            return cached;
        }
        let key = intern(lower);
        rb_sys::rb_ary_store(cache.as_raw(), slot as _, key);
        key
    }
}

fn intern(bytes: &[u8]) -> VALUE {
    unsafe {
        let binary = rb_sys::rb_enc_from_index(binary_index());
        rb_sys::rb_enc_interned_str(bytes.as_ptr().cast(), bytes.len() as _, binary)
    }
}
