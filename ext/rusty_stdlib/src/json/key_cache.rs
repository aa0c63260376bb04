//! The written form of Hash keys (`"key":` with the state's delimiter), remembered by the
//! key object's VALUE during one generation: documents repeat a few keys many times
//! (twitter.json: 13,345 pairs, 94 distinct keys, each one frozen String object; 94% of
//! its pairs find their key in the 128 slots, 97% would in 256 or 512), and a hit skips
//! reading the key object, checking its encoding and code range, and scanning it for
//! escapes.
//!
//! An entry is only valid while no Ruby code can run: then no object is freed (so no
//! VALUE can come to name another object) and no String can change. The generator bumps
//! the epoch, which drops every entry, at the start of each stretch that runs no Ruby code
//! (an unprotected Hash walk, see `Gen::object`), and only looks up or stores within one.

use std::cell::Cell;

use rb_sys::VALUE;

/// Slots in the direct-mapped table (a power of two).
const SLOTS: usize = 128;
/// Longest written key kept (quotes and delimiter included); longer ones are written
/// the ordinary way each time.
pub const MAX_LEN: usize = 51;

#[derive(Clone, Copy)]
struct Slot {
    key: VALUE,
    epoch: u32,
    len: u8,
    bytes: [u8; MAX_LEN],
}

const EMPTY: Slot = Slot {
    key: 0,
    epoch: 0,
    len: 0,
    bytes: [0; MAX_LEN],
};

pub struct KeyCache {
    epoch: u32,
    slots: [Slot; SLOTS],
}

thread_local! {
    /// The table of the last generation on this thread, so that only the first
    /// generation that needs one allocates it.
    static SPARE: Cell<Option<Box<KeyCache>>> = const { Cell::new(None) };
}

impl KeyCache {
    /// A table with no valid entry (the thread's spare one when there is one).
    pub fn take() -> Box<KeyCache> {
        let mut cache = SPARE.with(Cell::take).unwrap_or_else(|| {
            Box::new(KeyCache {
                epoch: 0,
                slots: [EMPTY; SLOTS],
            })
        });
        cache.invalidate();
        cache
    }

    /// Gives the table back for the thread's next generation.
    pub fn give_back(cache: Box<KeyCache>) {
        SPARE.with(|spare| spare.set(Some(cache)));
    }

    /// Drops every entry.
    pub fn invalidate(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // After 2^32 epochs an old entry could look current again: clear them.
            self.slots = [EMPTY; SLOTS];
            self.epoch = 1;
        }
    }

    #[inline(always)]
    fn index(key: VALUE) -> usize {
        // Heap objects are 8-byte aligned and 40 bytes apart: mix the bits above that.
        ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The written form of `key`, when stored in this epoch.
    #[inline(always)]
    pub fn get(&self, key: VALUE) -> Option<&[u8]> {
        let slot = &self.slots[Self::index(key)];
        if slot.key == key && slot.epoch == self.epoch {
            Some(&slot.bytes[..slot.len as usize])
        } else {
            None
        }
    }

    /// Remembers `written` (at most [`MAX_LEN`] bytes) as the written form of `key`.
    #[inline]
    pub fn put(&mut self, key: VALUE, written: &[u8]) {
        debug_assert!(written.len() <= MAX_LEN);
        let epoch = self.epoch;
        let slot = &mut self.slots[Self::index(key)];
        slot.key = key;
        slot.epoch = epoch;
        slot.len = written.len() as u8;
        slot.bytes[..written.len()].copy_from_slice(written);
    }
}
