//! Interned Hash keys of one load, found by content.
//!
//! `rb_hash_aset` replaces a plain, unfrozen String key by its interned copy
//! (`rb_fstring`: a lookup in the VM's table of interned strings, hashing the bytes with
//! SipHash and scanning their coderange first). Document-shaped data repeats the same
//! few keys thousands of times, so the loader interns each distinct key once and hands
//! `rb_hash_aset` the interned String itself, which it keeps as is (an interned String
//! is its own `rb_fstring`). The Hash ends up with the very key object MRI would give it.
//!
//! GC safety: the interned Strings live in a Ruby Array (held by the loader); the table
//! only holds indexes into it, and compares bytes by reading the Strings at lookup time.

use rb_sys::VALUE;

use crate::helpers::raw::{flags, str_bytes as bytes};

/// Keys longer than this are interned by `rb_hash_aset` as usual.
const MAX_KEY_LEN: usize = 64;
/// Distinct keys kept per load (a bound on memory for adversarial input).
const MAX_KEYS: usize = 4096;

const FL_EXIVAR: VALUE = rb_sys::ruby_fl_type::RUBY_FL_EXIVAR as VALUE;
const FL_FREEZE: VALUE = rb_sys::ruby_fl_type::RUBY_FL_FREEZE as VALUE;
const ENC_SHIFT: u32 = rb_sys::ruby_encoding_consts::RUBY_ENCODING_SHIFT as u32;
const ENC_MASK: VALUE = rb_sys::ruby_encoding_consts::RUBY_ENCODING_MASK as VALUE;

pub struct KeyCache {
    /// Ruby Array of the interned Strings (0 until the first key).
    strings: VALUE,
    /// Open addressing: 0 for empty, else 1 + index into `strings`.
    slots: Vec<u32>,
    hashes: Vec<u64>,
}

/// FxHash-style hash of the bytes and the encoding index.
#[inline]
fn hash_of(b: &[u8], enc: VALUE) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = (b.len() as u64) ^ (enc << 56);
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    // The last 0..7 bytes, gathered in a register (a memcpy into a stack buffer and an
    // 8-byte reload stalls on store forwarding).
    let tail = chunks
        .remainder()
        .iter()
        .enumerate()
        .fold(0u64, |w, (i, &c)| w | (c as u64) << (8 * i));
    h = (h.rotate_left(5) ^ tail).wrapping_mul(K);
    h ^ (h >> 29)
}

impl KeyCache {
    pub fn new() -> KeyCache {
        KeyCache {
            strings: 0,
            slots: Vec::new(),
            hashes: Vec::new(),
        }
    }

    /// The Array holding the interned keys (0 if none yet), for the caller to keep alive.
    pub fn strings(&self) -> VALUE {
        self.strings
    }

    /// The key to give `rb_hash_aset` for `key`: its interned copy when `key` is a plain
    /// unfrozen String (one `rb_hash_aset` would intern), else `key` itself.
    #[inline]
    pub fn key_for(&mut self, key: VALUE) -> VALUE {
        if rb_sys::SPECIAL_CONST_P(key)
            || unsafe { rb_sys::RB_BUILTIN_TYPE(key) } != rb_sys::ruby_value_type::RUBY_T_STRING
        {
            return key;
        }
        let f = flags(key);
        let klass = unsafe { (*(key as *const rb_sys::RBasic)).klass };
        if f & (FL_EXIVAR | FL_FREEZE) != 0 || klass != unsafe { rb_sys::rb_cString } {
            return key;
        }
        let b = bytes(key);
        let enc = (f & ENC_MASK) >> ENC_SHIFT;
        if b.len() > MAX_KEY_LEN || enc == (ENC_MASK >> ENC_SHIFT) {
            return key; // long keys, or an encoding index stored outside the flags
        }
        let h = hash_of(b, enc);
        if self.slots.is_empty() {
            self.slots = vec![0; 64];
        }
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                break;
            }
            let index = (slot - 1) as usize;
            if self.hashes[index] == h {
                let interned = unsafe { rb_sys::RARRAY_AREF(self.strings, index as isize) };
                if (flags(interned) & ENC_MASK) >> ENC_SHIFT == enc && bytes(interned) == b {
                    return interned;
                }
            }
            i = (i + 1) & mask;
        }
        // What rb_hash_aset would do; it finds (or makes) the VM's one copy.
        let interned = unsafe { rb_sys::rb_str_to_interned_str(key) };
        if self.hashes.len() >= MAX_KEYS {
            return interned;
        }
        if self.strings == 0 {
            self.strings = unsafe { rb_sys::rb_ary_new() };
        }
        unsafe { rb_sys::rb_ary_push(self.strings, interned) };
        self.hashes.push(h);
        self.slots[i] = self.hashes.len() as u32;
        if self.hashes.len() * 2 > self.slots.len() {
            self.grow();
        }
        interned
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let mask = size - 1;
        let mut slots = vec![0u32; size];
        for (index, &h) in self.hashes.iter().enumerate() {
            let mut i = h as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = index as u32 + 1;
        }
        self.slots = slots;
    }
}
