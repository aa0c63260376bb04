//! Filling new Hashes of String keys without `rb_hash_bulk_insert`, on Ruby 3.1, 3.3
//! and 3.4.
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
//! The GC is told of the writes ([`Barrier`]) where it may have run since the Hash was
//! allocated: once for the whole Hash on Ruby 3.1 (`rb_gc_writebarrier_remember`, what
//! Ruby's own bulk copies into an Array use), once per object written into a copied
//! template on 3.3 and 3.4, which do not export that call. An ar_table Hash on 3.3 and
//! 3.4 holds its table in the object, allocated with it and written before anything else
//! is allocated: a new object is young and unmarked, so those writes need no barrier.
//!
//! Only where `hash_layout` describes and checks the layouts, and where Hashes filled
//! here then behave as Ruby's own under Ruby's lookups ([`fills_read_back`], once);
//! elsewhere this stays off and callers use `rb_hash_bulk_insert`.

use std::{ffi::c_void, sync::OnceLock};

use rb_sys::VALUE;

use super::hash::new_with_capacity;
use super::hash_layout::{
    ar_table_mut, matches, st_table, walkable, BOUND_SHIFT, EMBEDDED_TABLES, SIZE_AND_BOUND_MASK,
    SIZE_SHIFT, ST_TABLE_FLAG,
};
pub use super::hash_layout::{key_hint, MAX_PAIRS};

/// The pair counts of Hashes copied from templates (see [`Shape`]): those Ruby keeps in an
/// st_table, up to a bound on what a template holds.
pub const MIN_SHAPE_PAIRS: usize = MAX_PAIRS + 1;
pub const MAX_SHAPE_PAIRS: usize = 64;

type Remember = unsafe extern "C" fn(VALUE);

/// How the GC learns of the objects written into a Hash here (a generational GC must
/// hear of an old Hash pointing to a young object, an incremental mark of a marked Hash
/// pointing to an unmarked one).
#[derive(Clone, Copy)]
enum Barrier {
    /// `rb_gc_writebarrier_remember` (exported by Ruby 3.1, not in its public headers):
    /// once for the whole Hash.
    Remember(Remember),
    /// `rb_gc_writebarrier` for each object written, as `rb_hash_bulk_insert` calls it
    /// (Ruby 3.3 and 3.4 export no `remember`): a few instructions each for a new Hash,
    /// unless an incremental mark is under way.
    EachObject,
}

impl Barrier {
    /// Tells the GC that `hash` now holds `written` (which may hold immediates).
    ///
    /// # Safety
    /// `hash` is a live Hash and `written` what was just stored into it.
    #[inline(always)]
    unsafe fn written(self, hash: VALUE, written: impl Iterator<Item = VALUE>) {
        match self {
            Barrier::Remember(remember) => remember(hash),
            Barrier::EachObject => {
                for v in written {
                    if !rb_sys::SPECIAL_CONST_P(v) {
                        rb_sys::rb_gc_writebarrier(hash, v);
                    }
                }
            }
        }
    }
}

/// This Ruby's [`Barrier`], where its Hashes have `hash_layout`'s layouts and fills made
/// here check out; looked up and checked once.
static BARRIER: OnceLock<Option<Barrier>> = OnceLock::new();

fn barrier() -> Option<Barrier> {
    *BARRIER.get_or_init(|| {
        let barrier = if (30100..30200).contains(&rb_sys::RUBY_API_VERSION_CODE) {
            let f =
                unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"rb_gc_writebarrier_remember".as_ptr()) };
            // SAFETY: Ruby 3.1's signature, `void (VALUE)`.
            let remember = (!f.is_null())
                .then(|| unsafe { std::mem::transmute::<*mut c_void, Remember>(f) })?;
            matches().then_some(Barrier::Remember(remember))?
        } else if EMBEDDED_TABLES {
            walkable().then_some(Barrier::EachObject)?
        } else {
            return None;
        };
        unsafe { fills_read_back(barrier) }.then_some(barrier)
    })
}

/// Whether [`new_filled`] and [`Shape`] can be used in this Ruby. The first call checks
/// the layouts (it makes Hashes).
pub fn available() -> bool {
    barrier().is_some()
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
#[inline]
pub unsafe fn new_filled(pairs: &[VALUE], hints: &[u8]) -> Result<VALUE, VALUE> {
    fill(barrier().expect("checked by available()"), pairs, hints)
}

/// [`new_filled`] with the barrier given.
unsafe fn fill(barrier: Barrier, pairs: &[VALUE], hints: &[u8]) -> Result<VALUE, VALUE> {
    let count = pairs.len() / 2;
    debug_assert!(count <= MAX_PAIRS && hints.len() == count);
    let hash = new_with_capacity(count);
    let flags = &mut (*(hash as *mut rb_sys::RBasic)).flags;
    if *flags & ST_TABLE_FLAG != 0 {
        return Err(hash);
    }
    let Some((table_hints, table)) = ar_table_mut(hash) else {
        return Err(hash);
    };
    let mut used = 0;
    for (pair, &hint) in pairs.chunks_exact(2).zip(hints) {
        match table[..used].iter_mut().find(|p| p[0] == pair[0]) {
            Some(earlier) => earlier[1] = pair[1],
            None => {
                table[used] = [pair[0], pair[1]];
                table_hints[used] = hint;
                used += 1;
            }
        }
    }
    let size_and_bound = ((used as VALUE) << BOUND_SHIFT) | ((used as VALUE) << SIZE_SHIFT);
    *flags = (*flags & !SIZE_AND_BOUND_MASK) | size_and_bound;
    // Where the table is in the object (3.3, 3.4), the Hash was allocated by the call
    // above with nothing allocated since: it is young and unmarked, so no old or marked
    // object gained a reference, and the GC need not hear of these writes (as with the
    // first fields Ruby's own `newobj_of` stores). Ruby 3.1 allocates the table apart,
    // which may run the GC in between: it is told.
    if !EMBEDDED_TABLES {
        barrier.written(hash, table[..used].iter().flatten().copied());
    }
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
    #[inline]
    pub unsafe fn new_filled(self, pairs: &[VALUE]) -> Option<VALUE> {
        self.fill(barrier().expect("checked by available()"), pairs)
    }

    /// [`Shape::new_filled`] with the barrier given.
    unsafe fn fill(self, barrier: Barrier, pairs: &[VALUE]) -> Option<VALUE> {
        let hash = rb_sys::rb_hash_dup(self.0);
        let table = st_table(hash).filter(|t| t.num_entries == pairs.len() / 2)?;
        let entries = std::slice::from_raw_parts_mut(table.entries, table.num_entries);
        for (entry, pair) in entries.iter_mut().zip(pairs.chunks_exact(2)) {
            entry[2] = pair[1];
        }
        // The keys were in the template already (Ruby's copy told the GC of them).
        barrier.written(hash, pairs.iter().skip(1).step_by(2).copied());
        Some(hash)
    }
}

/// Whether Hashes filled here with `barrier` behave as Ruby's own: Ruby's lookups find
/// every key (by its hint in an ar_table, its stored hash in an st_table), a repeated
/// key keeps one place, `[]=` of a present key replaces its value rather than adding a
/// pair, and iteration gives the pairs in order.
unsafe fn fills_read_back(barrier: Barrier) -> bool {
    let fixnum = |i: usize| ((i as VALUE) << 1) | 1;
    // Everything made here stays reachable from `keep` (on the stack) while the rest is
    // allocated.
    let keep = rb_sys::rb_ary_new();
    let utf8 = rb_sys::rb_utf8_encoding();
    let keys: Vec<VALUE> = (0..MIN_SHAPE_PAIRS + 2)
        .map(|i| {
            let name = format!("rusty_stdlib fresh_hash fill {i}");
            let key = rb_sys::rb_enc_interned_str(name.as_ptr() as *const _, name.len() as _, utf8);
            rb_sys::rb_ary_push(keep, key);
            key
        })
        .collect();
    let behaves = |hash: VALUE, expected: &[(VALUE, VALUE)]| {
        unsafe extern "C" fn collect(key: VALUE, value: VALUE, arg: VALUE) -> std::os::raw::c_int {
            (*(arg as *mut Vec<(VALUE, VALUE)>)).push((key, value));
            rb_sys::st_retval::ST_CONTINUE as _
        }
        let mut walked: Vec<(VALUE, VALUE)> = Vec::new();
        rb_sys::rb_hash_foreach(hash, Some(collect), &mut walked as *mut _ as VALUE);
        let found = expected
            .iter()
            .all(|&(k, v)| rb_sys::rb_hash_lookup2(hash, k, rb_sys::Qundef as VALUE) == v);
        let (last_key, _) = *expected.last().expect("pairs");
        rb_sys::rb_hash_aset(hash, last_key, fixnum(99));
        found
            && walked == expected
            && rb_sys::rb_hash_size_num(hash) as usize == expected.len()
            && rb_sys::rb_hash_lookup2(hash, last_key, rb_sys::Qundef as VALUE) == fixnum(99)
    };
    // An ar_table Hash, a key repeated.
    let pairs = [keys[0], fixnum(1), keys[1], fixnum(2), keys[0], fixnum(3)];
    let hints = [key_hint(keys[0]), key_hint(keys[1]), key_hint(keys[0])];
    let ar_ok = match fill(barrier, &pairs, &hints) {
        Ok(hash) => {
            rb_sys::rb_ary_push(keep, hash);
            behaves(hash, &[(keys[0], fixnum(3)), (keys[1], fixnum(2))])
        }
        Err(_) => false,
    };
    // An st_table Hash from a template of one Ruby filled.
    let count = MIN_SHAPE_PAIRS + 2;
    let mut pairs: Vec<VALUE> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, &k)| [k, fixnum(i)])
        .collect();
    let model = new_with_capacity(count);
    rb_sys::rb_ary_push(keep, model);
    rb_sys::rb_hash_bulk_insert(pairs.len() as _, pairs.as_ptr(), model);
    let st_ok = match Shape::of(model, count) {
        Some(shape) => {
            rb_sys::rb_ary_push(keep, shape.0);
            for (i, value) in pairs.iter_mut().skip(1).step_by(2).enumerate() {
                *value = fixnum(100 + i);
            }
            match shape
                .fits(&pairs)
                .then(|| shape.fill(barrier, &pairs))
                .flatten()
            {
                Some(hash) => {
                    rb_sys::rb_ary_push(keep, hash);
                    let expected: Vec<(VALUE, VALUE)> =
                        pairs.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                    behaves(hash, &expected)
                }
                None => false,
            }
        }
        None => false,
    };
    std::hint::black_box(keep);
    ar_ok && st_ok
}
