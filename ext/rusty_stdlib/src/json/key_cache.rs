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

/// Slots in the direct-mapped table (a power of two): twitter.json's 94 keys find their
/// slot 97% of the time in 256.
const SLOTS: usize = 256;
/// Longest written key kept (quotes and delimiter included); longer ones are written
/// the ordinary way each time.
pub const MAX_LEN: usize = 53;

#[derive(Clone, Copy)]
struct Slot {
    key: VALUE,
    /// [`escaping`] bits the bytes were written with.
    escaping: u8,
    len: u8,
    bytes: [u8; MAX_LEN],
}

const EMPTY: Slot = Slot {
    key: 0,
    escaping: 0,
    len: 0,
    bytes: [0; MAX_LEN],
};

#[repr(transparent)]
pub struct KeyCache {
    slots: [Slot; SLOTS],
}

/// The generation switches a written key depends on, as bits.
pub fn escaping(ascii_only: bool, escape_slash: bool, escape_separators: bool) -> u8 {
    ascii_only as u8 | (escape_slash as u8) << 1 | (escape_separators as u8) << 2
}

/// Whether `key` may be stored: a Symbol, or a frozen String.
#[inline(always)]
pub fn keepable(key: VALUE) -> bool {
    use rb_sys::ruby_value_type::{RUBY_T_STRING, RUBY_T_SYMBOL};
    unsafe {
        rb_sys::RB_TYPE_P(key, RUBY_T_SYMBOL)
            || (rb_sys::RB_TYPE_P(key, RUBY_T_STRING)
                && flags(key) & rb_sys::ruby_fl_type::RUBY_FL_FREEZE as VALUE != 0)
    }
}

impl KeyCache {
    #[inline(always)]
    fn index(key: VALUE) -> usize {
        // Heap objects are 8-byte aligned and 40 bytes apart: mix the bits above that.
        ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The written form of `key` with `escaping`, when stored.
    #[inline(always)]
    pub fn get(&self, key: VALUE, escaping: u8) -> Option<&[u8]> {
        let slot = &self.slots[Self::index(key)];
        if slot.key == key && slot.escaping == escaping {
            Some(&slot.bytes[..slot.len as usize])
        } else {
            None
        }
    }

    /// Remembers `written` (at most [`MAX_LEN`] bytes) as the written form of `key`,
    /// which is [`keepable`], with `escaping`.
    #[inline]
    pub fn put(&mut self, key: VALUE, escaping: u8, written: &[u8]) {
        debug_assert!(written.len() <= MAX_LEN && keepable(key));
        let slot = &mut self.slots[Self::index(key)];
        slot.key = key;
        slot.escaping = escaping;
        slot.len = written.len() as u8;
        slot.bytes[..written.len()].copy_from_slice(written);
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

/// Made on the heap directly and out of line (16 KiB).
#[cold]
#[inline(never)]
fn new_table() -> *mut KeyCache {
    let slots: Box<[Slot]> = vec![EMPTY; SLOTS].into();
    // SAFETY: `KeyCache` is a struct of the one array.
    Box::into_raw(slots) as *mut Slot as *mut KeyCache
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
    for slot in cache.slots.iter().filter(|s| s.key != 0) {
        rb_sys::rb_gc_mark(slot.key);
    }
}

/// Frees a finished Ractor's table.
unsafe extern "C" fn free_table(ptr: *mut std::os::raw::c_void) {
    let slots = std::ptr::slice_from_raw_parts_mut(ptr as *mut Slot, SLOTS);
    drop(Box::from_raw(slots));
}

/// Makes the storage key: in the main Ractor, at load time, before any generation.
pub fn init() {
    let key = unsafe { rb_sys::rb_ractor_local_storage_ptr_newkey(&STORAGE_TYPE) };
    STORAGE_KEY.store(key, std::sync::atomic::Ordering::Release);
}
