//! The written form of Hash keys (`"key":`), remembered by the key object for every
//! generation in a Ractor: documents repeat a few keys many times (twitter.json: 13,345
//! pairs, 94 distinct keys), and the same keys come back in every document an app writes
//! (its Hashes' keys are literals, Symbols, or the interned keys of parsed documents). A
//! hit skips reading the key object, checking its encoding and code range, and scanning
//! it for escapes.
//!
//! An entry stays right for as long as it is kept:
//! - only frozen Strings and Symbols are stored, whose text cannot change (a Hash's
//!   String keys are frozen copies, except in `compare_by_identity` Hashes);
//! - the table is in Ractor-local storage whose mark function marks every key it holds,
//!   so a stored VALUE never comes to name another object;
//! - the written form depends on the escaping switches too, kept with it.
//!
//! Touched only with the Ractor's GVL held and never across a Ruby call (a nested
//! generation, run from a `#to_json`, uses the same table).

use rb_sys::VALUE;

use crate::helpers::raw::flags;

/// Slots in the table (a power of two), in sets of [`WAYS`]: a key may be in any slot of
/// its set, and a set's keys share one cache line. Direct-mapped (one way), twitter.json's
/// 94 keys missed 40% of the time, some of its frequent keys sharing a slot. With 256
/// slots, ohai.json's 394 keys missed at nearly every pair (about 12 keys for each set of
/// 8, met in the same order every time); 1,024 hold them (64 KiB a Ractor).
const SLOTS: usize = 1024;
const WAYS: usize = 8;
/// Longest written key kept (quotes and delimiter included); longer ones are written
/// the ordinary way each time.
pub const MAX_LEN: usize = 53;

/// A written key, in the slot of its key in [`KeyCache::keys`].
#[derive(Clone, Copy)]
struct Written {
    /// [`escaping`] bits the bytes were written with.
    escaping: u8,
    len: u8,
    bytes: [u8; MAX_LEN],
}

/// The keys (0 in a free slot) apart from their written forms, so that looking a key up
/// reads one cache line.
#[repr(C, align(64))]
pub struct KeyCache {
    keys: [VALUE; SLOTS],
    written: [Written; SLOTS],
    /// Counts puts; picks the way a full set gives up.
    clock: usize,
}

/// The generation switches a written key depends on, as bits.
pub fn escaping(ascii_only: bool, escape_slash: bool, escape_separators: bool) -> u8 {
    ascii_only as u8 | (escape_slash as u8) << 1 | (escape_separators as u8) << 2
}

/// With the [`escaping`] bits of a key kept without its delimiter (a layout other than
/// the compact `:`, which is then written after it).
const BARE: u8 = 1 << 3;

/// The bits a generation keeps its keys under: with the compact delimiter (`colon_only`)
/// a key is kept with its `:`, with any other layout without it ([`BARE`]), the
/// delimiter then written after it.
#[inline(always)]
pub fn kept_escaping(escaping: u8, colon_only: bool) -> u8 {
    if colon_only {
        escaping
    } else {
        escaping | BARE
    }
}

/// Whether `key` may be stored: a Symbol, or a frozen String.
#[inline(always)]
pub fn keepable(key: VALUE) -> bool {
    keepable_as(key, unsafe { rb_sys::RB_TYPE(key) })
}

/// [`keepable`] of a `key` whose type (`RB_TYPE`) the caller has read already.
#[inline(always)]
pub fn keepable_as(key: VALUE, key_type: rb_sys::ruby_value_type) -> bool {
    use rb_sys::ruby_value_type::{RUBY_T_STRING, RUBY_T_SYMBOL};
    match key_type {
        RUBY_T_SYMBOL => true,
        RUBY_T_STRING => flags(key) & rb_sys::ruby_fl_type::RUBY_FL_FREEZE as VALUE != 0,
        _ => false,
    }
}

impl KeyCache {
    /// The first slot of `key`'s set.
    #[inline(always)]
    fn set(key: VALUE) -> usize {
        // Heap objects are 8-byte aligned and 40 bytes apart: mix the bits above that.
        let sets = SLOTS / WAYS;
        ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - sets.trailing_zeros())) as usize
            * WAYS
    }

    /// The written form of `key` with `escaping`, when stored.
    #[inline(always)]
    pub fn get(&self, key: VALUE, escaping: u8) -> Option<&[u8]> {
        let set = Self::set(key);
        let way = self.keys[set..set + WAYS].iter().position(|&k| k == key)?;
        let written = &self.written[set + way];
        (written.escaping == escaping).then(|| &written.bytes[..written.len as usize])
    }

    /// Remembers `written` (at most [`MAX_LEN`] bytes) as the written form of `key`,
    /// which is [`keepable`], with `escaping`: in `key`'s own slot if it was there with
    /// other escaping, else in a free slot of its set, else in one taken in turn. (Giving
    /// up the least recently stored instead, a set met with more keys than ways in the
    /// same order every time kept none of them.)
    #[inline]
    pub fn put(&mut self, key: VALUE, escaping: u8, written: &[u8]) {
        debug_assert!(written.len() <= MAX_LEN && keepable(key));
        let set = Self::set(key);
        let keys = &mut self.keys[set..set + WAYS];
        let way = keys
            .iter()
            .position(|&k| k == key)
            .or_else(|| keys.iter().position(|&k| k == 0))
            .unwrap_or(self.clock % WAYS);
        self.clock = self.clock.wrapping_add(1);
        keys[way] = key;
        let form = &mut self.written[set + way];
        form.escaping = escaping;
        form.len = written.len() as u8;
        form.bytes[..written.len()].copy_from_slice(written);
    }

    /// This Ractor's table, made at its first use.
    ///
    /// # Safety
    /// The caller holds the Ractor's GVL, and uses the table only until its next Ruby call.
    #[inline]
    pub unsafe fn of_this_ractor() -> *mut KeyCache {
        let key = STORAGE_KEY.load(std::sync::atomic::Ordering::Acquire);
        let mut cache = rb_sys::rb_ractor_local_storage_ptr(key) as *mut KeyCache;
        if cache.is_null() {
            cache = new_table();
            rb_sys::rb_ractor_local_storage_ptr_set(key, cache as *mut _);
        }
        cache
    }
}

/// A generation's handle on its Ractor's table, fetched at the first key (a Ractor-local
/// storage lookup) and then kept. The table stays put; its entries may change in a nested
/// generation, so no entry is held across a Ruby call.
pub struct Lazy(*mut KeyCache);

impl Lazy {
    pub const fn new() -> Self {
        Lazy(std::ptr::null_mut())
    }

    /// The table, to be used only until the next Ruby call (which could run a nested
    /// generation that uses it too).
    #[inline(always)]
    pub fn table(&mut self) -> *mut KeyCache {
        if self.0.is_null() {
            // SAFETY: generations run with the GVL held, and use the table as above.
            self.0 = unsafe { KeyCache::of_this_ractor() };
        }
        self.0
    }
}

/// Made on the heap directly (64 KiB), empty, and out of line.
#[cold]
#[inline(never)]
fn new_table() -> *mut KeyCache {
    let layout = std::alloc::Layout::new::<KeyCache>();
    // SAFETY: the layout is not empty; all zeros is an empty table (no keys, any bytes
    // are a valid `Written`, the clock at 0). `free_table` gives it back as a `Box`.
    let table = unsafe { std::alloc::alloc_zeroed(layout) } as *mut KeyCache;
    if table.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    table
}

static STORAGE_TYPE: rb_sys::rb_ractor_local_storage_type = rb_sys::rb_ractor_local_storage_type {
    mark: Some(mark_keys),
    free: Some(free_table),
};

/// The Ractor-local storage key (an `rb_ractor_local_key_t`), made by [`init`].
static STORAGE_KEY: std::sync::atomic::AtomicPtr<rb_sys::rb_ractor_local_key_struct> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Marks the stored keys (and so pins them: their VALUEs must not change).
unsafe extern "C" fn mark_keys(ptr: *mut std::os::raw::c_void) {
    let cache = &*(ptr as *const KeyCache);
    for &key in cache.keys.iter().filter(|&&k| k != 0) {
        rb_sys::rb_gc_mark(key);
    }
}

/// Frees a finished Ractor's table.
unsafe extern "C" fn free_table(ptr: *mut std::os::raw::c_void) {
    drop(Box::from_raw(ptr as *mut KeyCache));
}

/// Makes the storage key: in the main Ractor, at load time, before any generation.
pub fn init() {
    let key = unsafe { rb_sys::rb_ractor_local_storage_ptr_newkey(&STORAGE_TYPE) };
    STORAGE_KEY.store(key, std::sync::atomic::Ordering::Release);
}
