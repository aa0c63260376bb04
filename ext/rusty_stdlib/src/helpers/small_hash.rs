//! Filling a new Hash of up to 8 String keys directly, on Ruby 3.1.
//!
//! Ruby 3.1 keeps a Hash of up to 8 pairs as an `ar_table`: the pairs in insertion order,
//! plus one "hint" byte per pair (the low byte of the key's hash) in the `RHash` itself,
//! and the pair count in the Hash's flags. `rb_hash_bulk_insert` hashes every key it
//! inserts (SipHash over a String's bytes), looks it up among the pairs so far and calls
//! the write barrier twice per pair: 29% of the instructions of a citm_catalog parse.
//! A JSON parser knows more: its keys are interned Strings whose hint it has cached, and
//! two equal keys are the same object. So here the pairs and hints are written as
//! `ar_insert` would write them, and the write barrier is told once for the whole Hash
//! (`rb_gc_writebarrier_remember`, what Ruby's own bulk copies into an Array use).
//!
//! Only on Ruby 3.1, whose `RHash` layout this is (`internal/hash.h`, `hash.c`; 3.3
//! embeds the table, hints included, in the object). At first use a Hash that Ruby
//! filled is read back through this layout; if anything differs, the fast path stays off
//! and callers use `rb_hash_bulk_insert`.

use std::{ffi::c_void, sync::OnceLock};

use rb_sys::VALUE;

/// `RHASH_AR_TABLE_MAX_SIZE`: pairs an ar_table holds.
pub const MAX_PAIRS: usize = 8;

/// Ruby 3.1's `struct RHash`.
#[repr(C)]
struct RHash {
    flags: VALUE,
    klass: VALUE,
    /// The ar_table (pairs), or an st_table when `ST_TABLE_FLAG` is set.
    table: *mut [[VALUE; 2]; MAX_PAIRS],
    ifnone: VALUE,
    hints: [u8; MAX_PAIRS],
}

/// `ruby_rhash_flags` (FL_USHIFT is 12).
const ST_TABLE_FLAG: VALUE = 1 << (12 + 3);
const SIZE_SHIFT: u32 = 12 + 4;
const BOUND_SHIFT: u32 = 12 + 8;
const SIZE_AND_BOUND_MASK: VALUE = 0xff << SIZE_SHIFT;

type NewWithSize = unsafe extern "C" fn(std::os::raw::c_long) -> VALUE;
type Remember = unsafe extern "C" fn(VALUE);

struct Api {
    new_with_size: NewWithSize,
    remember: Remember,
}

static API: OnceLock<Option<Api>> = OnceLock::new();

fn api() -> Option<&'static Api> {
    API.get_or_init(|| {
        if !(30100..30200).contains(&rb_sys::RUBY_API_VERSION_CODE) {
            return None;
        }
        let find = |name: &std::ffi::CStr| {
            let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!f.is_null()).then_some(f)
        };
        let new_with_size = find(c"rb_hash_new_with_size")?;
        let remember = find(c"rb_gc_writebarrier_remember")?;
        // SAFETY: Ruby 3.1's signatures: `VALUE (st_index_t)` and `void (VALUE)`.
        let api = unsafe {
            Api {
                new_with_size: std::mem::transmute::<*mut c_void, NewWithSize>(new_with_size),
                remember: std::mem::transmute::<*mut c_void, Remember>(remember),
            }
        };
        layout_matches(&api).then_some(api)
    })
    .as_ref()
}

/// Whether a Hash that Ruby itself filled reads back through [`RHash`] as expected.
fn layout_matches(api: &Api) -> bool {
    unsafe {
        let utf8 = rb_sys::rb_utf8_encoding();
        let keys = [c"rusty_stdlib small_hash a", c"rusty_stdlib small_hash b"]
            .map(|k| rb_sys::rb_enc_interned_str(k.as_ptr(), k.count_bytes() as _, utf8));
        let pairs = [
            keys[0],
            rb_sys::Qtrue as VALUE,
            keys[1],
            rb_sys::Qnil as VALUE,
        ];
        let hash = (api.new_with_size)(2);
        rb_sys::rb_hash_bulk_insert(4, pairs.as_ptr(), hash);
        let raw = &*(hash as *const RHash);
        let ok = raw.flags & ST_TABLE_FLAG == 0
            && !raw.table.is_null()
            && (raw.flags & SIZE_AND_BOUND_MASK) >> SIZE_SHIFT == 0x22
            && (*raw.table)[0] == [pairs[0], pairs[1]]
            && (*raw.table)[1] == [pairs[2], pairs[3]]
            && raw.hints[..2] == [key_hint(keys[0]), key_hint(keys[1])];
        std::hint::black_box(keys);
        ok
    }
}

/// The hint byte Ruby 3.1 keeps for a String key: the low byte of `rb_str_hash` (which
/// `any_hash` changes only in its top bits).
pub fn key_hint(key: VALUE) -> u8 {
    unsafe { rb_sys::rb_str_hash(key) as u8 }
}

/// Whether [`new_filled`] can be used in this Ruby.
pub fn available() -> bool {
    api().is_some()
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
    let api = api().expect("checked by available()");
    let count = pairs.len() / 2;
    debug_assert!(count <= MAX_PAIRS && hints.len() == count);
    let hash = (api.new_with_size)(count as _);
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
    (api.remember)(hash);
    Ok(hash)
}
