//! Ruby 3.1's Hash tables as they lie in memory, for reading and filling Hashes without
//! Ruby's per-pair calls (see `fresh_hash`, and [`Pairs`] for walking one).
//!
//! A Hash of up to 8 pairs keeps them in an `ar_table`: the pairs in insertion order,
//! plus one "hint" byte per pair (the low byte of the key's hash) in the `RHash` itself,
//! with the pair count and the bound of used slots in its flags. A larger Hash keeps an
//! st_table: entries of (hash, key, value) in insertion order, and bins to find them.
//!
//! Ruby 3.1's layouts (`internal/hash.h`, `hash.c`, `st.c`), for filling and walking:
//! the first call of [`matches`] reads Hashes that Ruby filled back through them; if
//! anything differs, [`matches`] is false and callers use Ruby's own functions. Ruby 3.3
//! and 3.4 keep the same ar_table (hints first) and st_table, but inside the object, after
//! `flags`, `klass` and `ifnone`; [`walkable`] checks that layout the same way, for
//! [`Pairs`] and for `fresh_hash` (which checks its own fills too).

use std::{ffi::c_void, sync::OnceLock};

use rb_sys::VALUE;

use super::hash::new_with_capacity;

/// `RHASH_AR_TABLE_MAX_SIZE`: pairs an ar_table holds.
pub const MAX_PAIRS: usize = 8;

/// Ruby 3.1's `struct RHash`.
#[repr(C)]
pub struct RHash {
    pub flags: VALUE,
    pub klass: VALUE,
    /// The ar_table (pairs), or an st_table when `ST_TABLE_FLAG` is set.
    pub table: *mut [[VALUE; 2]; MAX_PAIRS],
    pub ifnone: VALUE,
    pub hints: [u8; MAX_PAIRS],
}

/// Whether this build's Ruby (3.3, 3.4) embeds a Hash's table in the object (Ruby 3.1
/// points to it from [`RHash::table`]). The extension is built per Ruby ABI, so this is
/// fixed; [`walkable`] still checks the layout at run time before any walk.
pub const EMBEDDED_TABLES: bool =
    rb_sys::RUBY_API_VERSION_CODE >= 30300 && rb_sys::RUBY_API_VERSION_CODE < 30500;

/// Where Ruby 3.3's embedded table starts: after `struct RHash` (flags, klass, ifnone).
const EMBEDDED_TABLE_OFFSET: usize = 3 * std::mem::size_of::<VALUE>();

/// Ruby 3.3's `ar_table`: the hints (the low byte of each key's hash, which lookups
/// compare first), then the pairs.
#[repr(C)]
struct EmbeddedAr {
    hints: [u8; MAX_PAIRS],
    pairs: [[VALUE; 2]; MAX_PAIRS],
}

/// The hints and pairs of `hash`'s ar_table (in ar mode), to fill; `None` for a Ruby 3.1
/// Hash with no table.
///
/// # Safety
/// `hash` is a live Hash in ar mode, of a Ruby whose layout [`matches`] (3.1) or is
/// [`walkable`] (3.3, 3.4).
#[inline(always)]
pub unsafe fn ar_table_mut<'a>(
    hash: VALUE,
) -> Option<(&'a mut [u8; MAX_PAIRS], &'a mut [[VALUE; 2]; MAX_PAIRS])> {
    if EMBEDDED_TABLES {
        let ar = &mut *((hash as usize + EMBEDDED_TABLE_OFFSET) as *mut EmbeddedAr);
        Some((&mut ar.hints, &mut ar.pairs))
    } else {
        let raw = &mut *(hash as *mut RHash);
        let pairs = raw.table.as_mut()?;
        Some((&mut raw.hints, pairs))
    }
}

/// The ar_table pairs of `hash` (in ar mode); null for a Ruby 3.1 Hash with no table.
#[inline(always)]
unsafe fn ar_pairs(hash: VALUE) -> *const [[VALUE; 2]; MAX_PAIRS] {
    if EMBEDDED_TABLES {
        &(*((hash as usize + EMBEDDED_TABLE_OFFSET) as *const EmbeddedAr)).pairs
    } else {
        (*(hash as *const RHash)).table
    }
}

/// The st_table of `hash` (in st mode); null for a Ruby 3.1 Hash with no table.
#[inline(always)]
unsafe fn st_of(hash: VALUE) -> *const StTable {
    if EMBEDDED_TABLES {
        (hash as usize + EMBEDDED_TABLE_OFFSET) as *const StTable
    } else {
        (*(hash as *const RHash)).table as *const StTable
    }
}

/// `ruby_rhash_flags` (FL_USHIFT is 12).
pub const ST_TABLE_FLAG: VALUE = 1 << (12 + 3);
pub const SIZE_SHIFT: u32 = 12 + 4;
pub const BOUND_SHIFT: u32 = 12 + 8;
pub const SIZE_AND_BOUND_MASK: VALUE = 0xff << SIZE_SHIFT;

/// Ruby 3.1's `struct st_table` (`ruby/st.h`).
#[repr(C)]
pub struct StTable {
    pub entry_power: u8,
    pub bin_power: u8,
    pub size_ind: u8,
    pub rebuilds_num: u32,
    pub hash_type: *const c_void,
    pub num_entries: usize,
    pub bins: *mut usize,
    pub entries_start: usize,
    pub entries_bound: usize,
    /// `struct st_table_entry` (`st.c`): hash, key, record.
    pub entries: *mut [VALUE; 3],
}

/// Whether this Ruby is 3.1 and its Hashes read back through [`RHash`] and [`StTable`]
/// as expected. The first call checks (it makes Hashes).
pub fn matches() -> bool {
    static MATCHES: OnceLock<bool> = OnceLock::new();
    *MATCHES.get_or_init(|| {
        (30100..30200).contains(&rb_sys::RUBY_API_VERSION_CODE)
            && layout_matches()
            && unsafe { pairs_read_back() }
    })
}

/// Whether a Hash that Ruby itself filled reads back through [`RHash`] as expected.
fn layout_matches() -> bool {
    unsafe {
        let utf8 = rb_sys::rb_utf8_encoding();
        let keys = [c"rusty_stdlib fresh_hash a", c"rusty_stdlib fresh_hash b"]
            .map(|k| rb_sys::rb_enc_interned_str(k.as_ptr(), k.count_bytes() as _, utf8));
        let pairs = [
            keys[0],
            rb_sys::Qtrue as VALUE,
            keys[1],
            rb_sys::Qnil as VALUE,
        ];
        let hash = new_with_capacity(2);
        rb_sys::rb_hash_bulk_insert(4, pairs.as_ptr(), hash);
        let raw = &*(hash as *const RHash);
        let ok = raw.flags & ST_TABLE_FLAG == 0
            && !raw.table.is_null()
            && (raw.flags & SIZE_AND_BOUND_MASK) >> SIZE_SHIFT == 0x22
            && (*raw.table)[0] == [pairs[0], pairs[1]]
            && (*raw.table)[1] == [pairs[2], pairs[3]]
            && raw.hints[..2] == [key_hint(keys[0]), key_hint(keys[1])];
        std::hint::black_box(keys);
        ok && st_layout_matches(utf8)
    }
}

/// Whether a Hash of more than 8 pairs that Ruby filled reads back through [`StTable`].
unsafe fn st_layout_matches(utf8: *mut rb_sys::rb_encoding) -> bool {
    // The keys stay reachable from `keep` (on the stack) while the rest is allocated.
    let keep = rb_sys::rb_ary_new();
    let mut pairs = Vec::new();
    for i in 0..(MAX_PAIRS + 3) {
        let name = format!("rusty_stdlib fresh_hash {i}");
        let key = rb_sys::rb_enc_interned_str(name.as_ptr() as *const _, name.len() as _, utf8);
        rb_sys::rb_ary_push(keep, key);
        pairs.extend([key, (2 * i + 1) as VALUE]); // Fixnums
    }
    let hash = new_with_capacity(pairs.len() / 2);
    rb_sys::rb_hash_bulk_insert(pairs.len() as _, pairs.as_ptr(), hash);
    let ok = st_table(hash).is_some_and(|table| {
        let entries = std::slice::from_raw_parts(table.entries, table.entries_bound);
        entries
            .iter()
            .zip(pairs.chunks_exact(2))
            .all(|(e, p)| e[1] == p[0] && e[2] == p[1])
    });
    std::hint::black_box(keep);
    ok
}

/// The st_table of `hash` when it is in st mode with its entries from index 0 and none
/// deleted (as a Hash filled once is).
pub unsafe fn st_table<'a>(hash: VALUE) -> Option<&'a mut StTable> {
    let flags = (*(hash as *const rb_sys::RBasic)).flags;
    if flags & ST_TABLE_FLAG == 0 {
        return None;
    }
    let table = (st_of(hash) as *mut StTable).as_mut()?;
    (table.entries_start == 0 && table.num_entries == table.entries_bound).then_some(table)
}

/// The hint byte Ruby 3.1 keeps for a String key: the low byte of `rb_str_hash` (which
/// `any_hash` changes only in its top bits).
pub fn key_hint(key: VALUE) -> u8 {
    unsafe { rb_sys::rb_str_hash(key) as u8 }
}

/// `st.c`'s `RESERVED_HASH_VAL`: the stored hash of a deleted st_table entry.
const DELETED_ENTRY_HASH: VALUE = !0;

/// Whether [`Pairs`] may walk this Ruby's Hashes: Ruby 3.1 where [`matches`], Ruby 3.3
/// and 3.4 where their embedded tables read back as Ruby walks them. The first call checks (it
/// makes Hashes).
pub fn walkable() -> bool {
    static WALKABLE: OnceLock<bool> = OnceLock::new();
    *WALKABLE.get_or_init(|| {
        if EMBEDDED_TABLES {
            unsafe { embedded_layout_matches() && pairs_read_back() }
        } else {
            matches()
        }
    })
}

/// The Fixnum `i`, for the layout checks' Hashes (no allocation, nothing to keep alive).
fn fixnum(i: usize) -> VALUE {
    ((i as VALUE) << 1) | 1
}

/// Whether Ruby 3.3's (and 3.4's) embedded tables hold what Ruby put in them, read only where no
/// pointer has to be followed (the ar pairs, and the st_table's counts), so that
/// [`pairs_read_back`] walks only tables found where they were expected.
unsafe fn embedded_layout_matches() -> bool {
    let ar = rb_sys::rb_hash_new();
    for i in 0..2 {
        rb_sys::rb_hash_aset(ar, fixnum(i), fixnum(10 + i));
    }
    let flags = (*(ar as *const rb_sys::RBasic)).flags;
    let pairs = &*ar_pairs(ar);
    let ar_ok = flags & ST_TABLE_FLAG == 0
        && (flags & SIZE_AND_BOUND_MASK) >> SIZE_SHIFT == 0x22
        && pairs[0] == [fixnum(0), fixnum(10)]
        && pairs[1] == [fixnum(1), fixnum(11)];
    let pairs = MAX_PAIRS + 3;
    let st = rb_sys::rb_hash_new();
    for i in 0..pairs {
        rb_sys::rb_hash_aset(st, fixnum(i), fixnum(i));
    }
    let flags = (*(st as *const rb_sys::RBasic)).flags;
    let table = &*st_of(st);
    let st_ok = flags & ST_TABLE_FLAG != 0
        && table.num_entries == pairs
        && table.entries_start == 0
        && table.entries_bound == pairs
        && !table.entries.is_null();
    std::hint::black_box((ar, st));
    ar_ok && st_ok
}

/// The pairs of a Hash in `rb_hash_foreach`'s order, read from its table (deleted
/// entries skipped). Which table and how far it goes are read once; the table's address
/// is read again at each step (Ruby 3.1 may move an ar_table during a GC).
pub struct Pairs {
    hash: VALUE,
    next: usize,
    bound: usize,
    st: bool,
}

impl Pairs {
    /// The pairs of `hash`, where [`walkable`].
    ///
    /// # Safety
    /// `hash` is a live Hash.
    #[inline(always)]
    pub unsafe fn of(hash: VALUE) -> Option<Pairs> {
        walkable().then(|| Pairs::read(hash))
    }

    /// [`Pairs::of`] without the layout check.
    #[inline(always)]
    unsafe fn read(hash: VALUE) -> Pairs {
        let flags = (*(hash as *const rb_sys::RBasic)).flags;
        let st = flags & ST_TABLE_FLAG != 0;
        let (next, bound) = if st {
            match st_of(hash).as_ref() {
                Some(table) => (table.entries_start, table.entries_bound),
                None => (0, 0),
            }
        } else if ar_pairs(hash).is_null() {
            (0, 0)
        } else {
            (0, (((flags >> BOUND_SHIFT) & 0xf) as usize).min(MAX_PAIRS))
        };
        Pairs {
            hash,
            next,
            bound,
            st,
        }
    }

    /// The next pair.
    ///
    /// # Safety
    /// The Hash is alive and has not changed since this walk began.
    #[inline(always)]
    pub unsafe fn next(&mut self) -> Option<(VALUE, VALUE)> {
        while self.next < self.bound {
            let i = self.next;
            self.next += 1;
            if self.st {
                let [hash, key, value] = *(*st_of(self.hash)).entries.add(i);
                if hash != DELETED_ENTRY_HASH {
                    return Some((key, value));
                }
            } else {
                let [key, value] = (*ar_pairs(self.hash))[i];
                // `ar_clear_entry` leaves Qundef where a pair was deleted.
                if key != rb_sys::Qundef as VALUE {
                    return Some((key, value));
                }
            }
        }
        None
    }
}

/// Whether [`Pairs`] reads an ar_table and an st_table Hash, each with a pair deleted,
/// as `rb_hash_foreach` walks them.
unsafe fn pairs_read_back() -> bool {
    unsafe extern "C" fn collect(key: VALUE, value: VALUE, arg: VALUE) -> std::os::raw::c_int {
        (*(arg as *mut Vec<(VALUE, VALUE)>)).push((key, value));
        rb_sys::st_retval::ST_CONTINUE as _
    }
    [3, MAX_PAIRS + 4].into_iter().all(|size| {
        let hash = rb_sys::rb_hash_new();
        for i in 0..size {
            rb_sys::rb_hash_aset(hash, fixnum(i), fixnum(2 * i));
        }
        rb_sys::rb_hash_delete(hash, fixnum(1));
        let mut expected: Vec<(VALUE, VALUE)> = Vec::new();
        let arg = &mut expected as *mut Vec<(VALUE, VALUE)> as VALUE;
        rb_sys::rb_hash_foreach(hash, Some(collect), arg);
        let mut pairs = Pairs::read(hash);
        let mut walked = Vec::new();
        while let Some(pair) = pairs.next() {
            walked.push(pair);
        }
        std::hint::black_box(hash);
        expected.len() == size - 1 && walked == expected
    })
}
