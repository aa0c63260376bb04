//! Filling new Hashes of String keys without `rb_hash_bulk_insert`, on Ruby 3.1.
//!
//! `rb_hash_bulk_insert` hashes every key it inserts (SipHash over a String's bytes),
//! looks it up among the pairs so far and calls the write barrier twice per pair: 29% of
//! the instructions of a citm_catalog parse. A JSON parser knows more: its keys are
//! interned Strings (two equal keys are the same object) whose hashes it can keep, and
//! many of its objects have the same keys as an earlier one. So:
//!
//! - Up to 8 pairs ([`new_filled`]): such a Hash keeps them in an ar_table (see
//!   `hash_layout`), where the pairs and their hint bytes are written as `ar_insert`
//!   would write them.
//! - More pairs, with the same keys in the same order as a Hash seen before
//!   ([`Shape`]): a copy of a template Hash (`rb_hash_dup` copies the st_table, stored
//!   key hashes and bins included), whose values are then written in place.
//!
//! Either way the write barrier is told once for the whole Hash
//! (`rb_gc_writebarrier_remember`, what Ruby's own bulk copies into an Array use).
//!
//! Only on Ruby 3.1, whose layouts `hash_layout` describes and checks; elsewhere this
//! stays off and callers use `rb_hash_bulk_insert`.

use std::{ffi::c_void, sync::OnceLock};

use rb_sys::VALUE;

use super::hash::new_with_capacity;
pub use super::hash_layout::{key_hint, MAX_PAIRS};
use super::hash_layout::{
    matches, st_table, RHash, BOUND_SHIFT, SIZE_AND_BOUND_MASK, SIZE_SHIFT, ST_TABLE_FLAG,
};

/// The pair counts of Hashes copied from templates (see [`Shape`]): those Ruby keeps in an
/// st_table, up to a bound on what a template holds.
pub const MIN_SHAPE_PAIRS: usize = MAX_PAIRS + 1;
pub const MAX_SHAPE_PAIRS: usize = 64;

type Remember = unsafe extern "C" fn(VALUE);

/// `rb_gc_writebarrier_remember` (exported by Ruby 3.1, not in its public headers), when
/// this Ruby is 3.1 and its Hashes have `hash_layout`'s layouts; looked up once.
static REMEMBER: OnceLock<Option<Remember>> = OnceLock::new();

fn remember() -> Option<Remember> {
    *REMEMBER.get_or_init(|| {
        if !(30100..30200).contains(&rb_sys::RUBY_API_VERSION_CODE) {
            return None;
        }
        let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"rb_gc_writebarrier_remember".as_ptr()) };
        // SAFETY: Ruby 3.1's signature, `void (VALUE)`.
        let remember =
            (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, Remember>(f) })?;
        matches().then_some(remember)
    })
}

/// Whether [`new_filled`] and [`Shape`] can be used in this Ruby. The first call checks
/// the layouts (it makes Hashes).
pub fn available() -> bool {
    remember().is_some()
}

/// A new Hash of `pairs` (key, value, key, value…: at most [`MAX_PAIRS`] pairs) whose
/// keys have `hints` ([`key_hint`]); `Err` with the new Hash, still empty, where Ruby
/// made it some other way (the caller fills it then). A key that comes again keeps its first
/// place and takes the later value, as `Hash#[]=` does.
///
/// # Safety
/// [`available`] is true; every key is a frozen, interned String (so equal keys are the
/// same object) and every value a live object kept reachable by the caller; `pairs` does
/// not alias Ruby memory that allocating the Hash could move.
pub unsafe fn new_filled(pairs: &[VALUE], hints: &[u8]) -> Result<VALUE, VALUE> {
    let remember = remember().expect("checked by available()");
    let count = pairs.len() / 2;
    debug_assert!(count <= MAX_PAIRS && hints.len() == count);
    let hash = new_with_capacity(count);
    let raw = &mut *(hash as *mut RHash);
    if raw.flags & ST_TABLE_FLAG != 0 || raw.table.is_null() {
        return Err(hash);
    }
    let table = &mut *raw.table;
    let mut used = 0;
    for (pair, &hint) in pairs.chunks_exact(2).zip(hints) {
        match table[..used].iter_mut().find(|p| p[0] == pair[0]) {
            Some(earlier) => earlier[1] = pair[1],
            None => {
                table[used] = [pair[0], pair[1]];
                raw.hints[used] = hint;
                used += 1;
            }
        }
    }
    let size_and_bound = ((used as VALUE) << BOUND_SHIFT) | ((used as VALUE) << SIZE_SHIFT);
    raw.flags = (raw.flags & !SIZE_AND_BOUND_MASK) | size_and_bound;
    // No GC ran since the Hash was made (nothing allocated); this tells an incremental
    // mark in progress, or the remembered set, about everything written above at once.
    remember(hash);
    Ok(hash)
}

/// A template for Hashes of the keys (more than 8) of one Hash: a copy of it with its
/// values set to nil, which keeps the st_table Ruby built, key hashes and bins included.
/// The caller keeps it alive (and marked) while it holds it.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape(pub VALUE);

impl Shape {
    /// A template of `hash` (made from `pairs` pairs, none repeated), or `None` where
    /// Ruby made it some other way. Allocates: may run the GC.
    ///
    /// # Safety
    /// [`available`]; `hash` is a live Hash, fresh from `rb_hash_bulk_insert`.
    pub unsafe fn of(hash: VALUE, pairs: usize) -> Option<Shape> {
        st_table(hash).filter(|t| t.num_entries == pairs)?;
        let template = rb_sys::rb_hash_dup(hash);
        let table = st_table(template).filter(|t| t.num_entries == pairs)?;
        for entry in std::slice::from_raw_parts_mut(table.entries, pairs) {
            entry[2] = rb_sys::Qnil as VALUE; // an immediate: no write barrier
        }
        Some(Shape(template))
    }

    /// Whether `pairs` (key, value, …) has exactly this template's keys, in order.
    ///
    /// # Safety
    /// The template is alive.
    pub unsafe fn fits(self, pairs: &[VALUE]) -> bool {
        st_table(self.0).is_some_and(|table| {
            table.num_entries == pairs.len() / 2
                && std::slice::from_raw_parts(table.entries, table.num_entries)
                    .iter()
                    .zip(pairs.chunks_exact(2))
                    .all(|(e, p)| e[1] == p[0])
        })
    }

    /// A new Hash of `pairs`, which [`fits`](Self::fits) this template: a copy of it with
    /// the values written in. `None` where the copy came out otherwise. Allocates.
    ///
    /// # Safety
    /// As for [`new_filled`], and `pairs` fits the template.
    pub unsafe fn new_filled(self, pairs: &[VALUE]) -> Option<VALUE> {
        let remember = remember().expect("checked by available()");
        let hash = rb_sys::rb_hash_dup(self.0);
        let table = st_table(hash).filter(|t| t.num_entries == pairs.len() / 2)?;
        let entries = std::slice::from_raw_parts_mut(table.entries, table.num_entries);
        for (entry, pair) in entries.iter_mut().zip(pairs.chunks_exact(2)) {
            entry[2] = pair[1];
        }
        remember(hash);
        Some(hash)
    }
}
