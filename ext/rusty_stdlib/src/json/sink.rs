//! Builds Ruby values from what `rusty_core::json::parse` reports.
//!
//! Values wait on a [`ValueStack`]: a Rust `Vec` that is registered, for the length of
//! the parse, with its Ractor's [`RactorParses`], whose `mark` function Ruby calls when it
//! marks the Ractor, so a GC run by any allocation sees them without a Ruby object per
//! parse. Arrays and hashes are then made in one call from the top of the stack. The same
//! storage holds (and marks) the Ractor's [`KeyCache`] of object keys and [`ShapeCache`]
//! of Hash templates.
use std::cell::UnsafeCell;

use magnus::{rb_sys::FromRawValue, Error, Ruby, Value};
use rb_sys::VALUE;
use rusty_core::json::{parse_float_fast, same_bytes, Decimal, Sink};

use crate::helpers::raw::{set_encoding_index, str_bytes};
use crate::helpers::reentry::once;
use crate::helpers::{fresh_array, fresh_hash};

/// Slots of the [`KeyCache`] (a power of two), in sets of [`KEY_WAYS`]: enough that the
/// few hundred distinct keys of a large document rarely evict each other.
const KEY_CACHE_SLOTS: usize = 1024;

/// Slots per set of the [`KeyCache`]. With one, two keys of a set that alternate evict
/// each other at every use: twitter.json's "is_translator" and "follow_request_sent"
/// (every user has both) cost 346 misses a parse, 2.7% of its instructions.
const KEY_WAYS: usize = 2;

/// Keys up to this many bytes are kept in the [`KeyCache`] (which keeps them alive, so it
/// must not hold on to huge ones).
const CACHED_KEY_MAX: usize = 64;

/// A set-associative cache of object keys (interned frozen Strings, and their Symbols with
/// `symbolize_names`), shared by every parse in a Ractor, so that a key seen before
/// costs a hash and a compare instead of Ruby's fstring table lookup. Its VALUEs are
/// marked (and so pinned) by [`RactorParses`] at every GC: a slot never holds a dead
/// object, and a key stays the very same fstring the gem's `rb_str_freeze` would give.
#[repr(transparent)]
struct KeyCache {
    slots: [KeySlot; KEY_CACHE_SLOTS],
}

#[derive(Clone, Copy, Default)]
struct KeySlot {
    hash: u32,
    /// Whether `value` is the Symbol (`symbolize_names`) rather than the String.
    symbol: bool,
    /// The interned String whose bytes the key has (compared on a hit); 0 when empty.
    string: VALUE,
    /// What the parse pushes: `string`, or its Symbol.
    value: VALUE,
    /// `fresh_hash::key_hint(string)` when the Ruby has direct hashes, else 0.
    hint: u8,
}

impl KeyCache {
    /// The first slot of the set for a key of hash `hash`: from its top bits, the best
    /// mixed ([`key_hash`]).
    #[inline(always)]
    fn set_of(hash: u32) -> usize {
        const SETS: usize = KEY_CACHE_SLOTS / KEY_WAYS;
        (hash >> (32 - SETS.trailing_zeros())) as usize * KEY_WAYS
    }

    /// Made on the heap directly and out of line: built in place, the 24 KiB array made
    /// every call of [`RubySink::key`] probe its stack pages.
    #[cold]
    #[inline(never)]
    fn new() -> Box<KeyCache> {
        let slots: Box<[KeySlot]> = vec![KeySlot::default(); KEY_CACHE_SLOTS].into();
        let slots: Box<[KeySlot; KEY_CACHE_SLOTS]> = slots.try_into().ok().expect("the size");
        // SAFETY: `KeyCache` is `repr(transparent)` over the array.
        unsafe { Box::from_raw(Box::into_raw(slots) as *mut KeyCache) }
    }
}

#[inline(always)]
fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// A fast hash of a key's length and first and last eight bytes (all of a key of up to 16
/// bytes; not DoS-resistant, and need not be: a collision only costs a cache miss). The
/// cache takes its set from the top bits ([`KeyCache::set_of`]), which a product mixes
/// from all of its factor's bits: citm_catalog's keys "138586341", "138586345", ... differ
/// in their last byte only, which reaches no low bit. A loop over every eight bytes and
/// MurmurHash3's finisher, instead, took 5% of a twitter.json parse.
#[inline(always)]
fn key_hash(b: &[u8]) -> u32 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let n = b.len();
    let (first, last) = if n >= 8 {
        (read_u64(b, 0), read_u64(b, n - 8))
    } else if n >= 4 {
        let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as u64;
        (word(0), word(n - 4))
    } else if n > 0 {
        (
            b[0] as u64 | (b[n / 2] as u64) << 8 | (b[n - 1] as u64) << 16,
            0,
        )
    } else {
        (0, 0)
    };
    let h = (first ^ (n as u64).wrapping_mul(K)).wrapping_mul(K);
    ((h ^ last).wrapping_mul(K) >> 32) as u32
}

/// The GC-visible stack of values not yet placed in their container.
#[derive(Default)]
pub struct ValueStack {
    values: UnsafeCell<Vec<VALUE>>,
    /// With [`RubySink::direct_hashes`]: the hint of each key on `values`, in order.
    hints: Vec<u8>,
}

impl ValueStack {
    /// Only ever called while no Rust code mutates the stack (GC runs inside Ruby calls,
    /// and the sink never holds a reference across one).
    fn mark(&self) {
        let values = unsafe { &*self.values.get() };
        for &v in values {
            unsafe { rb_sys::rb_gc_mark(v) };
        }
    }
}

/// What the parses of one Ractor share: the value stacks of the parses in progress
/// (several when a parse waits in user code while another thread, or a nested
/// `JSON.parse`, runs) and the key cache. Kept in Ractor-local storage, so that Ractors,
/// which run in parallel, never touch each other's; within a Ractor, touched only with its
/// GVL held. Ruby calls [`mark_parses`] whenever it marks the Ractor.
#[derive(Default)]
struct RactorParses {
    active: Vec<*const ValueStack>,
    keys: Option<Box<KeyCache>>,
    shapes: Option<Box<ShapeCache>>,
}

/// Slots of the [`ShapeCache`] (a power of two), in sets of [`SHAPE_WAYS`].
const SHAPE_SLOTS: usize = 64;

/// Slots per set of the [`ShapeCache`]. A document's large Hashes come in a few shapes
/// that alternate (twitter.json's tweets and their users): with one slot per set, two
/// shapes whose key objects happened to share a slot (addresses decide it, so one process
/// in two for twitter.json's nine shapes) evicted each other at every Hash.
const SHAPE_WAYS: usize = 2;

/// Templates for Hashes of more than 8 pairs whose keys (in order) came before
/// (`fresh_hash::Shape`), by a hash of the key objects. A key sequence gets a template
/// the second time it is seen, so a Hash of one-off keys costs no copy. Its templates are
/// marked by [`RactorParses`]. Each set keeps its most recently seen shape first.
struct ShapeCache {
    slots: [ShapeSlot; SHAPE_SLOTS],
}

impl ShapeCache {
    /// The first slot of the set for key hash `keys` (from its top bits, which mix all of
    /// the key objects' bits).
    fn set_of(keys: u64) -> usize {
        const SETS: usize = SHAPE_SLOTS / SHAPE_WAYS;
        let index = keys.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SETS.trailing_zeros());
        index as usize * SHAPE_WAYS
    }
}

#[derive(Clone, Copy, Default)]
struct ShapeSlot {
    /// [`shape_hash`] of the keys last seen here (0: none).
    keys: u64,
    /// The template for them, once seen twice.
    shape: fresh_hash::Shape,
}

/// A hash of the key objects (interned Strings) among `pairs` (key, value, …).
#[inline]
fn shape_hash(pairs: &[VALUE]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let h = pairs.iter().step_by(2).fold(pairs.len() as u64, |h, &k| {
        (h ^ k).wrapping_mul(K).rotate_left(29)
    });
    h | 1
}

static STORAGE_TYPE: rb_sys::rb_ractor_local_storage_type = rb_sys::rb_ractor_local_storage_type {
    mark: Some(mark_parses),
    free: Some(free_parses),
};

/// The Ractor-local storage key (an `rb_ractor_local_key_t`), made by [`init`].
static STORAGE_KEY: std::sync::atomic::AtomicPtr<rb_sys::rb_ractor_local_key_struct> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Marks what a Ractor's parses hold. Runs during GC, while no parse in the Ractor runs
/// Rust code (GC runs inside Ruby calls, and the sink never holds a reference across one).
unsafe extern "C" fn mark_parses(ptr: *mut std::os::raw::c_void) {
    let parses = &*(ptr as *const RactorParses);
    for &stack in &parses.active {
        (*stack).mark();
    }
    if let Some(cache) = &parses.keys {
        for slot in cache.slots.iter().filter(|s| s.string != 0) {
            rb_sys::rb_gc_mark(slot.string);
            rb_sys::rb_gc_mark(slot.value);
        }
    }
    if let Some(shapes) = &parses.shapes {
        for slot in shapes.slots.iter().filter(|s| s.shape.0 != 0) {
            rb_sys::rb_gc_mark(slot.shape.0);
        }
    }
}

/// Frees a finished Ractor's storage (no parse of it is left).
unsafe extern "C" fn free_parses(ptr: *mut std::os::raw::c_void) {
    drop(Box::from_raw(ptr as *mut RactorParses));
}

/// The current Ractor's [`RactorParses`], made at its first parse.
///
/// # Safety
/// The caller holds the Ractor's GVL, and drops the reference before any Ruby call.
unsafe fn ractor_parses() -> *mut RactorParses {
    let key = STORAGE_KEY.load(std::sync::atomic::Ordering::Acquire);
    let mut parses = rb_sys::rb_ractor_local_storage_ptr(key) as *mut RactorParses;
    if parses.is_null() {
        parses = Box::into_raw(Box::<RactorParses>::default());
        rb_sys::rb_ractor_local_storage_ptr_set(key, parses as *mut _);
    }
    parses
}

pub fn init() {
    // In the main Ractor, at load time: before any parse, and once.
    let key = unsafe { rb_sys::rb_ractor_local_storage_ptr_newkey(&STORAGE_TYPE) };
    STORAGE_KEY.store(key, std::sync::atomic::Ordering::Release);
    // Their first calls make Hashes and Arrays: here, rather than in a parse or generate
    // that one in another Ractor could wait on (a GC would then wait for the waiting one:
    // four Ractors' first parses hung that way in fresh_array's check).
    fresh_hash::available();
    crate::helpers::fresh_array::available();
    crate::helpers::hash_layout::walkable();
}

/// What a parser instance asked for, beyond what the walk itself needs.
#[derive(Clone, Copy, Default, Debug)]
pub struct Flavour {
    pub symbolize_names: bool,
    pub freeze: bool,
    pub create_additions: bool,
}

/// How a walk over one reading of the source ended.
pub enum Walked {
    /// Parsed (`None`: the plain parse gave up, see `RubySink::plain`).
    Done(Option<VALUE>),
    /// Stopped before running Ruby code on a borrowed source (see `RubySink::borrowed`).
    NeedsCopy,
}

/// A parse of the caller's source: `walk(true)` reads it in place where `borrow` (see
/// `RubySink::borrowed`), and `walk(false)` reads the gem's converted copy where it was
/// not borrowed or that first walk stopped for one. The value, or `None` where a plain
/// parse gave up.
pub fn walk_borrowing(
    borrow: bool,
    mut walk: impl FnMut(bool) -> Result<Walked, Error>,
) -> Result<Option<Value>, Error> {
    let walked = if borrow {
        match walk(true)? {
            Walked::NeedsCopy => walk(false)?,
            done => done,
        }
    } else {
        walk(false)?
    };
    match walked {
        Walked::Done(result) => Ok(result.map(|v| unsafe { Value::from_raw(v) })),
        Walked::NeedsCopy => unreachable!("only a borrowed source needs a copy"),
    }
}

pub struct RubySink {
    /// Boxed so its address, which the registry holds, stays put; given back in `drop`.
    stack: std::mem::ManuallyDrop<Box<ValueStack>>,
    /// This Ractor's shared parse state (it outlives the parse).
    parses: *mut RactorParses,
    /// The source String, which the walk borrows; locked (`rb_str_locktmp`) before the
    /// first call that may run Ruby code, so that code cannot modify it under us.
    source: VALUE,
    locked: bool,
    flavour: Flavour,
    utf8: *mut rb_sys::rb_encoding,
    utf8_index: i32,
    /// With `create_additions`: the create_id key (kept alive by the parser object) and
    /// the JSON module.
    additions: Option<(VALUE, VALUE)>,
    /// NUL-terminated copies of numbers for Ruby's converters.
    cstr: Vec<u8>,
    /// Set for `JSON.parse(source)` run without the gem's Ruby frames (see
    /// `parser::try_parse`): where Ruby would print a warning, whose text names the
    /// calling frame, the parse stops and `gave_up` is set, for the gem's way to redo it.
    pub plain: bool,
    pub gave_up: bool,
    /// Set where `source` is the caller's own binary String, read as UTF-8 without the
    /// copy the gem re-tags (`convert_encoding`): nothing may run Ruby code while the
    /// walk reads it, as that code could see it locked (the gem locks only its copy).
    /// Where Ruby code would run, the parse stops and `needs_copy` is set, for the
    /// caller to redo it on the gem's copy; nothing observable has happened by then.
    pub borrowed: bool,
    pub needs_copy: bool,
    /// Whether Hashes are made without `rb_hash_bulk_insert` where they can be
    /// (`helpers::fresh_hash`): on Ruby 3.1, 3.3 and 3.4, with String keys. Keys then push their
    /// hint on `stack.hints`.
    direct_hashes: bool,
    /// json 3's walk only: whether a Hash whose keys repeat is reported (its default,
    /// `allow_duplicate_key: false`) rather than kept with the last value.
    pub check_duplicates: bool,
}

/// Value stack buffers up to this many entries are kept for the next parse.
const SPARE_STACK_MAX: usize = 4096;

thread_local! {
    /// An emptied value stack from an earlier parse on this thread, to save allocations.
    static SPARE: std::cell::Cell<Option<Box<ValueStack>>> = const { std::cell::Cell::new(None) };
}

/// Hashes of more pairs than this get a table of their size up front.
const SMALL_HASH_MAX: usize = 8;

/// An empty Hash ready for `pairs` pairs. Above [`SMALL_HASH_MAX`] pairs Ruby keeps an st
/// table, which `rb_hash_new` + `rb_hash_bulk_insert` would make at the default size and
/// then grow.
fn new_hash(pairs: usize) -> VALUE {
    if pairs > SMALL_HASH_MAX {
        crate::helpers::hash::new_with_capacity(pairs)
    } else {
        unsafe { rb_sys::rb_hash_new() }
    }
}

fn truthy(v: VALUE) -> bool {
    v != rb_sys::Qnil as VALUE && v != rb_sys::Qfalse as VALUE
}

const fn fixnum(v: i64) -> VALUE {
    ((v << 1) | 1) as VALUE
}

fn json_constant(name: &str) -> Result<VALUE, Error> {
    use magnus::Module;
    let ruby = unsafe { Ruby::get_unchecked() };
    let json: magnus::RModule = ruby.class_object().const_get("JSON")?;
    let value: Value = json.const_get(name)?;
    Ok(magnus::rb_sys::AsRawValue::as_raw(value))
}

impl RubySink {
    pub fn new(
        ruby: &Ruby,
        source: VALUE,
        flavour: Flavour,
        create_id: Option<VALUE>,
    ) -> Result<RubySink, Error> {
        let additions = match create_id {
            Some(id) => {
                use magnus::Module;
                let json: magnus::RModule = ruby.class_object().const_get("JSON")?;
                Some((id, magnus::rb_sys::AsRawValue::as_raw(json)))
            }
            None => None,
        };
        let stack: Box<ValueStack> = SPARE.with(|spare| spare.take()).unwrap_or_default();
        let parses = unsafe { ractor_parses() };
        unsafe { (*parses).active.push(&*stack) };
        let stack = std::mem::ManuallyDrop::new(stack);
        Ok(RubySink {
            stack,
            parses,
            source,
            locked: false,
            flavour,
            utf8: unsafe { rb_sys::rb_utf8_encoding() },
            utf8_index: unsafe { rb_sys::rb_utf8_encindex() },
            additions,
            cstr: Vec::new(),
            plain: false,
            gave_up: false,
            borrowed: false,
            needs_copy: false,
            direct_hashes: !flavour.symbolize_names && fresh_hash::available(),
            check_duplicates: false,
        })
    }

    /// json 2.6's `create_additions` for a finished Hash: if it names a class under the
    /// create_id key that is `json_creatable?`, that class's `json_create(hash)` replaces
    /// it. Runs user code, so under `protect`; the hash stays on the marked stack.
    fn create_addition(&mut self, hash: VALUE) -> Result<VALUE, Error> {
        let Some((create_id, json)) = self.additions else {
            return Ok(hash);
        };
        self.guard_source()?;
        self.push(hash);
        let result = once("JSON.parse", "json_create", || {
            magnus::rb_sys::protect(|| unsafe { Self::json_create(hash, create_id, json) })
        });
        unsafe { (*self.values()).pop() };
        result
    }

    /// `create_addition`'s calls into Ruby: `JSON.deep_const_get`, `json_creatable?`
    /// and `json_create`.
    unsafe fn json_create(hash: VALUE, create_id: VALUE, json: VALUE) -> VALUE {
        let klassname = rb_sys::rb_hash_aref(hash, create_id);
        if klassname == rb_sys::Qnil as VALUE {
            return hash;
        }
        let id = |name: &str| rb_sys::rb_intern2(name.as_ptr() as *const _, name.len() as _);
        let klass = rb_sys::rb_funcall(json, id("deep_const_get"), 1, klassname);
        let creatable = rb_sys::rb_funcall(klass, id("json_creatable?"), 0);
        if creatable == rb_sys::Qnil as VALUE || creatable == rb_sys::Qfalse as VALUE {
            return hash;
        }
        rb_sys::rb_funcall(klass, id("json_create"), 1, hash)
    }

    #[inline(always)]
    fn values(&self) -> *mut Vec<VALUE> {
        self.stack.values.get()
    }

    #[inline(always)]
    fn push(&mut self, v: VALUE) {
        unsafe { (*self.values()).push(v) }
    }

    /// The one value left after a successful parse.
    pub fn result(&self) -> Value {
        let v = unsafe {
            (*self.values())
                .last()
                .copied()
                .unwrap_or(rb_sys::Qnil as VALUE)
        };
        unsafe { Value::from_raw(v) }
    }

    /// Unlocks the source, stops marking the stack and keeps it, emptied, for the next
    /// parse on this thread. Runs whatever the outcome (see `Drop`).
    fn release(&mut self) {
        if self.locked {
            unsafe { rb_sys::rb_str_unlocktmp(self.source) };
            self.locked = false;
        }
        let me: *const ValueStack = &**self.stack;
        let active = unsafe { &mut (*self.parses).active };
        if let Some(i) = active.iter().rposition(|&s| s == me) {
            active.remove(i);
        }
    }

    pub fn finish(mut self) {
        self.release();
    }

    /// Locks the source before Ruby code may run (a `json_create`, a warning hook).
    /// Already locked by someone else: Ruby code could then change it, as it could under
    /// the gem's parser, so we go on. A borrowed source is not ours to lock: the parse
    /// stops there (see `borrowed`).
    fn guard_source(&mut self) -> Result<(), Error> {
        if self.borrowed {
            self.needs_copy = true;
            return Err(Self::stopped());
        }
        if !self.locked {
            let source = self.source;
            self.locked =
                magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_locktmp(source) }).is_ok();
        }
        Ok(())
    }

    /// The error that stops a walk the caller redoes another way (`gave_up`,
    /// `needs_copy`). Never raised, and it makes no Ruby object.
    fn stopped() -> Error {
        let ruby = unsafe { Ruby::get_unchecked() };
        Error::new(ruby.exception_runtime_error(), "gave up")
    }

    fn with_cstr(&mut self, text: &[u8]) -> *const std::os::raw::c_char {
        self.cstr.clear();
        self.cstr.extend_from_slice(text);
        self.cstr.push(0);
        self.cstr.as_ptr() as *const _
    }

    /// A String value for `bytes` (interned with `freeze`, as the gem does).
    #[inline]
    fn make_string(&mut self, bytes: &[u8]) -> VALUE {
        let ptr = bytes.as_ptr() as *const std::os::raw::c_char;
        let len = bytes.len() as std::os::raw::c_long;
        if self.flavour.freeze {
            unsafe { rb_sys::rb_enc_interned_str(ptr, len, self.utf8) }
        } else {
            // As rb_utf8_str_new, without rb_enc_associate_index's checks on a String
            // that is binary until the next line.
            let s = unsafe { rb_sys::rb_str_new(ptr, len) };
            set_encoding_index(s, self.utf8_index);
            s
        }
    }

    /// An object key, from the [`KeyCache`] when a parse already made it. Runs for every
    /// key, so only the cache hit is inlined here: with the miss's code (making the key,
    /// filling the slot) in the same function, every call saved and restored registers
    /// that only a miss uses.
    #[inline(always)]
    fn key(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if bytes.len() > CACHED_KEY_MAX {
            return self.new_key(bytes, None);
        }
        let hash = key_hash(bytes);
        let symbol = self.flavour.symbolize_names;
        if let Some(cache) = unsafe { (*self.parses).keys.as_deref() } {
            let set = &cache.slots[KeyCache::set_of(hash)..][..KEY_WAYS];
            for slot in set {
                // The cached String is frozen and interned: its bytes cannot change.
                if slot.string != 0
                    && slot.hash == hash
                    && slot.symbol == symbol
                    && same_bytes(str_bytes(slot.string), bytes)
                {
                    let (v, hint) = (slot.value, slot.hint);
                    self.push_key(v, hint);
                    return Ok(());
                }
            }
        }
        self.new_key(bytes, Some(hash))
    }

    /// A key the [`KeyCache`] does not have: made, and kept there under its `hash` (None:
    /// too long to keep).
    #[inline(never)]
    fn new_key(&mut self, bytes: &[u8], hash: Option<u32>) -> Result<(), Error> {
        // No reference into the cache is held here: making the key may run the GC,
        // whose mark reads the cache (and a nested parse may write it).
        let (string, value) = self.make_key(bytes)?;
        let hint = self.hint_of(string);
        if let Some(hash) = hash {
            let keys = unsafe { std::ptr::addr_of_mut!((*self.parses).keys) };
            let cache = unsafe { (*keys).get_or_insert_with(KeyCache::new) };
            // The newest key goes first, the set's others move down, its last is dropped.
            let set = &mut cache.slots[KeyCache::set_of(hash)..][..KEY_WAYS];
            set.copy_within(..KEY_WAYS - 1, 1);
            set[0] = KeySlot {
                hash,
                symbol: self.flavour.symbolize_names,
                string,
                value,
                hint,
            };
        }
        self.push_key(value, hint);
        Ok(())
    }

    /// The lookup hint of the key String `string`, where Hashes are filled directly.
    fn hint_of(&self, string: VALUE) -> u8 {
        if self.direct_hashes {
            fresh_hash::key_hint(string)
        } else {
            0
        }
    }

    /// Pushes an object key, and its hint where Hashes are filled directly.
    #[inline(always)]
    fn push_key(&mut self, value: VALUE, hint: u8) {
        self.push(value);
        if self.direct_hashes {
            self.stack.hints.push(hint);
        }
    }

    /// A key's interned String, and the value to push for it (the String, or with
    /// `symbolize_names` its Symbol). The String stays reachable from the Symbol.
    fn make_key(&mut self, bytes: &[u8]) -> Result<(VALUE, VALUE), Error> {
        let ptr = bytes.as_ptr() as *const std::os::raw::c_char;
        let len = bytes.len() as std::os::raw::c_long;
        let interned = unsafe { rb_sys::rb_enc_interned_str(ptr, len, self.utf8) };
        if !self.flavour.symbolize_names {
            return Ok((interned, interned));
        }
        // Keep the String on the marked stack while its Symbol is made.
        self.push(interned);
        let symbol = if std::str::from_utf8(bytes).is_ok() {
            Ok(unsafe { rb_sys::rb_str_intern(interned) })
        } else {
            // Raises EncodingError ("invalid symbol in encoding UTF-8 ...").
            magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_intern(interned) })
        };
        unsafe { (*self.values()).pop() };
        Ok((interned, symbol?))
    }

    #[inline(always)]
    fn frozen_if_asked(&self, v: VALUE) -> VALUE {
        if self.flavour.freeze {
            unsafe { rb_sys::rb_obj_freeze(v) }
        } else {
            v
        }
    }
}

impl Drop for RubySink {
    fn drop(&mut self) {
        self.release();
        // SAFETY: `stack` is not used after this.
        let stack = unsafe { std::mem::ManuallyDrop::take(&mut self.stack) };
        let values = unsafe { &mut *stack.values.get() };
        if values.capacity() > SPARE_STACK_MAX {
            return;
        }
        values.clear();
        let mut stack = stack;
        stack.hints.clear();
        SPARE.with(|spare| spare.set(Some(stack)));
    }
}

impl Sink for RubySink {
    type Error = Error;

    #[inline]
    fn null(&mut self) -> Result<(), Error> {
        self.push(rb_sys::Qnil as VALUE);
        Ok(())
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Result<(), Error> {
        self.push(if value { rb_sys::Qtrue } else { rb_sys::Qfalse } as VALUE);
        Ok(())
    }

    fn nan(&mut self) -> Result<(), Error> {
        let v = json_constant("NaN")?;
        self.push(v);
        Ok(())
    }

    fn infinity(&mut self, negative: bool) -> Result<(), Error> {
        let v = json_constant(if negative {
            "MinusInfinity"
        } else {
            "Infinity"
        })?;
        self.push(v);
        Ok(())
    }

    #[inline]
    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), Error> {
        let v = match value {
            Some(i) => fixnum(i),
            None => {
                let cstr = self.with_cstr(text);
                // Digits only: cannot raise.
                unsafe { rb_sys::rb_cstr2inum(cstr, 10) }
            }
        };
        self.push(v);
        Ok(())
    }

    #[inline]
    fn float(&mut self, text: &[u8], decimal: &Decimal) -> Result<(), Error> {
        let f = match parse_float_fast(text, decimal) {
            Some(f) => f,
            // Out of range, or too many digits to be sure: Ruby's strtod decides, and
            // warns "Float 1e400 out of range" under -w just as the gem does.
            None => self.ruby_float(text)?,
        };
        let v = crate::helpers::float::new(f);
        self.push(v);
        Ok(())
    }

    // Always inline: out of line, each of twitter.json's 18k strings and keys a parse
    // paid a call and the saving of registers the walk holds.
    #[inline(always)]
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), Error> {
        if key {
            return self.key(bytes);
        }
        let v = self.make_string(bytes);
        self.push(v);
        Ok(())
    }

    #[inline]
    fn array(&mut self, len: usize) -> Result<(), Error> {
        let values = self.values();
        let start = unsafe { (*values).len() } - len;
        // The elements stay on the marked stack while the array is allocated.
        let ary = unsafe { fresh_array::new_array(&(&*values)[start..]) };
        unsafe { (*values).truncate(start) };
        let ary = self.frozen_if_asked(ary);
        self.push(ary);
        Ok(())
    }

    #[inline]
    fn object(&mut self, pairs: usize) -> Result<(), Error> {
        let values = self.values();
        let start = unsafe { (*values).len() } - 2 * pairs;
        let hash = self.build_object(start, pairs);
        unsafe { (*values).truncate(start) };
        let hash = self.create_addition(hash)?;
        let hash = self.frozen_if_asked(hash);
        self.push(hash);
        Ok(())
    }
}

impl RubySink {
    /// A Hash of the `pairs` key/value pairs at `start` on the value stack (which stay
    /// there), a later duplicate key's value replacing the earlier one's.
    #[inline(always)]
    fn build_object(&mut self, start: usize, pairs: usize) -> VALUE {
        let values = self.values();
        let hash = if self.direct_hashes {
            let hints = self.stack.hints.len() - pairs;
            let hash = match pairs {
                1..=fresh_hash::MAX_PAIRS => unsafe {
                    fresh_hash::new_filled(&(&*values)[start..], &self.stack.hints[hints..])
                },
                fresh_hash::MIN_SHAPE_PAIRS..=fresh_hash::MAX_SHAPE_PAIRS => {
                    self.shaped_hash(start, pairs)
                }
                _ => Err(new_hash(pairs)),
            };
            self.stack.hints.truncate(hints);
            hash
        } else {
            Err(new_hash(pairs))
        };
        match hash {
            Ok(filled) => filled,
            Err(empty) => {
                self.bulk_insert(empty, start, pairs);
                empty
            }
        }
    }

    /// A Hash of the `pairs` (more than 8) pairs at `start` on the value stack, copied
    /// from the template of its keys if there is one (`Err` with an empty Hash if not).
    /// Learns templates as it goes (see [`ShapeCache`]).
    fn shaped_hash(&mut self, start: usize, pairs: usize) -> Result<VALUE, VALUE> {
        let values = self.values();
        // Read while allocating too, as the GC's mark reads the stack: shared borrows.
        let stacked = unsafe { &(&*values)[start..] };
        let keys = shape_hash(stacked);
        let set = ShapeCache::set_of(keys);
        // Copied out: no reference into the cache is held while allocating (the GC's
        // mark reads it).
        let (seen, slot) = unsafe {
            let shapes = &mut (*self.parses).shapes;
            let shapes = shapes.get_or_insert_with(|| {
                Box::new(ShapeCache {
                    slots: [ShapeSlot::default(); SHAPE_SLOTS],
                })
            });
            let ways = &mut shapes.slots[set..set + SHAPE_WAYS];
            match ways.iter().position(|slot| slot.keys == keys) {
                Some(way) => {
                    // Seen again: first in its set now.
                    ways[..=way].rotate_right(1);
                    (true, ways[0])
                }
                None => (false, ShapeSlot::default()),
            }
        };
        if seen && slot.shape.0 != 0 {
            if unsafe { slot.shape.fits(stacked) } {
                if let Some(hash) = unsafe { slot.shape.new_filled(stacked) } {
                    return Ok(hash);
                }
            }
            return Err(new_hash(pairs));
        }
        let hash = new_hash(pairs);
        self.bulk_insert(hash, start, pairs);
        let learned = if seen {
            unsafe { fresh_hash::Shape::of(hash, pairs) }.unwrap_or_default()
        } else {
            fresh_hash::Shape::default()
        };
        if let Some(shapes) = unsafe { (*self.parses).shapes.as_mut() } {
            // A shape seen again is first in its set already; a new one goes first, the
            // others move down and the last one out.
            let ways = &mut shapes.slots[set..set + SHAPE_WAYS];
            if !seen {
                ways.rotate_right(1);
            }
            ways[0] = ShapeSlot {
                keys,
                shape: learned,
            };
        }
        Ok(hash)
    }

    /// Fills the empty `hash` with the `pairs` pairs at `start` on the value stack.
    fn bulk_insert(&mut self, hash: VALUE, start: usize, pairs: usize) {
        if pairs > 0 {
            // Keys are frozen Strings or Symbols: hashing them runs no Ruby code. Later
            // duplicates overwrite earlier ones in place, as `Hash#[]=` does.
            let values = self.values();
            unsafe {
                rb_sys::rb_hash_bulk_insert((2 * pairs) as _, (*values).as_ptr().add(start), hash)
            };
        }
    }
}

/// json 3.x's walk (`rusty_core::json::v3`) into the same Ruby values: what differs is
/// how floats are converted (the walk decides, as json 3 does) and that a Hash whose
/// keys repeat is an error.
impl rusty_core::json::v3::Sink for RubySink {
    type Error = Error;

    #[inline]
    fn null(&mut self) -> Result<(), Error> {
        Sink::null(self)
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Result<(), Error> {
        Sink::boolean(self, value)
    }

    fn nan(&mut self) -> Result<(), Error> {
        Sink::nan(self)
    }

    fn infinity(&mut self, negative: bool) -> Result<(), Error> {
        Sink::infinity(self, negative)
    }

    #[inline]
    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), Error> {
        Sink::integer(self, text, value)
    }

    // Always inline: canada.json's 111k floats each paid a call here (callgrind, json 3.1.0).
    #[inline(always)]
    fn float(&mut self, text: &[u8], value: Option<f64>) -> Result<(), Error> {
        let f = match value {
            Some(f) => f,
            None => self.ruby_float(text)?,
        };
        self.push(crate::helpers::float::new(f));
        Ok(())
    }

    #[inline(always)]
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), Error> {
        Sink::string(self, bytes, key)
    }

    #[inline]
    fn array(&mut self, len: usize) -> Result<(), Error> {
        Sink::array(self, len)
    }

    #[inline]
    fn object(&mut self, pairs: usize) -> Result<Option<usize>, Error> {
        let values = self.values();
        let start = unsafe { (*values).len() } - 2 * pairs;
        let hash = self.build_object(start, pairs);
        if self.check_duplicates
            && pairs > 1
            && (unsafe { rb_sys::rb_hash_size_num(hash) } as usize) < pairs
        {
            // Keys are interned Strings or Symbols: equal keys are the same object.
            let keys: Vec<VALUE> =
                unsafe { (&*values)[start..].iter().step_by(2).copied().collect() };
            let repeat = (1..keys.len()).find(|&i| keys[..i].contains(&keys[i]));
            return Ok(repeat);
        }
        unsafe { (*values).truncate(start) };
        let hash = self.frozen_if_asked(hash);
        self.push(hash);
        Ok(None)
    }
}

impl RubySink {
    /// The value of the sink's stack at `position` (a key the walk names in a path).
    pub fn stacked(&self, position: usize) -> VALUE {
        unsafe { (&*self.values())[position] }
    }

    /// Ruby's own conversion of a float literal (`rb_cstr_to_dbl`, which warns "Float
    /// ... out of range" under -w), where json 3 asks Ruby for it. Gives up on the
    /// option-less fast path when a warning could be printed (see `plain`).
    fn ruby_float(&mut self, text: &[u8]) -> Result<f64, Error> {
        if self.plain && unsafe { truthy(*rb_sys::rb_ruby_verbose_ptr()) } {
            self.gave_up = true;
            return Err(Self::stopped());
        }
        self.guard_source()?;
        let cstr = self.with_cstr(text) as usize;
        let mut out = 0f64;
        let out_ptr = &mut out as *mut f64 as usize;
        magnus::rb_sys::protect(|| unsafe {
            *(out_ptr as *mut f64) = rb_sys::rb_cstr_to_dbl(cstr as *const std::os::raw::c_char, 1);
            rb_sys::Qnil as VALUE
        })?;
        Ok(out)
    }
}
