//! The native `Marshal.dump`: a walk over nil, true, false, Integer, Float, String,
//! Symbol, Array, Hash (compare_by_identity, ruby2_keywords), Regexp, Range, Rational,
//! Complex, Time, classes, modules, Structs, plain objects, instance variables of Strings, Arrays, Hashes, Structs
//! and Regexps, objects with dump hooks (`U` for `marshal_dump`, `u` for `_dump`, `d`
//! for `_dump_data`) and extended objects (`e` records) that writes MRI's exact bytes,
//! or reports `Fallback` as soon as it meets anything else.
//!
//! Hooks: the first hook object met triggers a scan of the whole graph (hooks as leaves,
//! see `Dumper::scan`), so that the stdlib takes over before any hook has run whenever it
//! can. Hooks are called inside `protect`; what they raise is kept in `Dumper::error`
//! and raised once the walk has unwound. `rb_hash_foreach` runs inside `protect` too (it
//! raises if a hook resized the Hash), and Arrays are re-measured after every element.
//!
//! GC safety: core C methods (`Time#_dump`, class paths, method-cache fills) and hooks
//! allocate, so the GC may run. The link tables are keyed by object address; they live
//! in a `DumpTables` TypedData kept on the stack whose `mark` pins every key with
//! `rb_gc_mark`, so a compacting GC can neither free nor move an object we have
//! numbered; hook results are pinned there too. The output is a plain Rust buffer
//! (bytes, no Ruby values).

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use magnus::rb_sys::AsRawValue;
use magnus::{gc, typed_data::Obj, DataTypeFunctions, Error, Ruby, TypedData, Value};
use rb_sys::{ruby_value_type as T, VALUE};
use rusty_core::marshal as core;

use super::classes;
use super::extended::{self, data_ids};
use super::hooks::{self, DumpHook};
use super::ids::{self, ids};
use crate::helpers::error::c_error;
use crate::helpers::raw::{class_of, flags, str_bytes};
use crate::helpers::reentry::{raise_second_return, HookCall};
use crate::helpers::shape::Shape;

/// Recursion deeper than this goes to the stdlib (which matches MRI by definition,
/// including its SystemStackError on absurd depths).
const MAX_DEPTH: u32 = 1000;

/// The largest length `w_long` can write (it is 32-bit signed on every platform).
const MAX_LEN: usize = i32::MAX as usize;

const FL_EXIVAR: VALUE = rb_sys::ruby_fl_type::RUBY_FL_EXIVAR as VALUE;
/// `RHASH_PASS_AS_KEYWORDS` (ruby2_keywords flag) and `RHASH_PROC_DEFAULT` in 3.1..3.3.
const FL_HASH_KEYWORDS: VALUE = rb_sys::ruby_fl_type::RUBY_FL_USER1 as VALUE;
const FL_HASH_PROC_DEFAULT: VALUE = rb_sys::ruby_fl_type::RUBY_FL_USER2 as VALUE;

/// The graph holds something the native writer leaves to the stdlib.
pub struct Fallback;

type Step = Result<(), Fallback>;

/// Multiplicative hashing of object addresses (8-byte aligned, so spread the bits).
#[derive(Default)]
pub struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 31)
    }
}

type AddrMap = HashMap<VALUE, u32, BuildHasherDefault<AddrHasher>>;

/// The `@` link table and the `;` symbol table of one dump.
#[derive(TypedData)]
#[magnus(class = "RustyStdlib::Marshal::DumpTables", free_immediately, mark)]
pub struct DumpTables {
    // Touched only inside `Dumper`'s short lookup/insert calls (which never call Ruby)
    // and by `mark` (which only runs inside a Ruby call), so accesses never overlap.
    objects: UnsafeCell<AddrMap>,
    symbols: UnsafeCell<AddrMap>,
    /// Classes of `o` records already checked, with the symbol of their path.
    classes: UnsafeCell<Vec<(VALUE, VALUE)>>,
    /// Objects we made or were handed while dumping (the Strings `Time#_dump` returns,
    /// whatever `marshal_dump` / `_dump` return).
    pinned: UnsafeCell<Vec<VALUE>>,
    /// Classes whose dump hooks were looked up: (class, `DumpHook` code, path symbol).
    hooks: UnsafeCell<Vec<(VALUE, u8, VALUE)>>,
    /// Objects whose `_dump` String's ivars are being written (MRI's `userdefs`).
    userdefs: UnsafeCell<Vec<VALUE>>,
}

// SAFETY: the tables hold plain integers; the object is only used on the thread that
// holds the GVL.
unsafe impl Send for DumpTables {}

impl DumpTables {
    /// Empties the tables and frees their memory (the walk is over: nothing is pinned).
    fn release(&self) {
        // SAFETY: no `Dumper` uses the tables any more, and this runs no Ruby code (so
        // no `mark` overlaps).
        unsafe {
            *self.objects.get() = AddrMap::default();
            *self.symbols.get() = AddrMap::default();
            *self.classes.get() = Vec::new();
            *self.pinned.get() = Vec::new();
            *self.hooks.get() = Vec::new();
            *self.userdefs.get() = Vec::new();
        }
    }
}

impl DataTypeFunctions for DumpTables {
    fn mark(&self, _marker: &gc::Marker) {
        for &v in unsafe { &*self.pinned.get() } {
            if !rb_sys::SPECIAL_CONST_P(v) {
                unsafe { rb_sys::rb_gc_mark(v) };
            }
        }
        for &v in unsafe { &*self.userdefs.get() } {
            unsafe { rb_sys::rb_gc_mark(v) };
        }
        for &(klass, _, sym) in unsafe { &*self.hooks.get() } {
            unsafe {
                rb_sys::rb_gc_mark(klass);
                if !rb_sys::SPECIAL_CONST_P(sym) {
                    rb_sys::rb_gc_mark(sym);
                }
            }
        }
        for &(klass, sym) in unsafe { &*self.classes.get() } {
            unsafe {
                rb_sys::rb_gc_mark(klass);
                if !rb_sys::SPECIAL_CONST_P(sym) {
                    rb_sys::rb_gc_mark(sym);
                }
            }
        }
        for table in [&self.objects, &self.symbols] {
            let table = unsafe { &*table.get() };
            for &key in table.keys() {
                if !rb_sys::SPECIAL_CONST_P(key) {
                    // rb_gc_mark (not the movable variant) also pins the object.
                    unsafe { rb_sys::rb_gc_mark(key) };
                }
            }
        }
    }
}

impl DumpTables {
    #[inline]
    fn lookup_object(&self, obj: VALUE) -> Option<u32> {
        unsafe { &*self.objects.get() }.get(&obj).copied()
    }
    /// Numbers `obj`. An object numbered twice (a `_dump` object met again while its
    /// String's ivars are written) keeps its first number, as MRI's `st_add_direct`
    /// table finds the first entry.
    #[inline]
    fn insert_object(&self, obj: VALUE, index: u32) {
        unsafe { &mut *self.objects.get() }
            .entry(obj)
            .or_insert(index);
    }
    fn lookup_class(&self, klass: VALUE) -> Option<VALUE> {
        let classes = unsafe { &*self.classes.get() };
        classes
            .iter()
            .find(|(k, _)| *k == klass)
            .map(|&(_, sym)| sym)
    }
    fn pin(&self, v: VALUE) {
        unsafe { &mut *self.pinned.get() }.push(v);
    }
    fn lookup_hook(&self, klass: VALUE) -> Option<(DumpHook, VALUE)> {
        let hooks = unsafe { &*self.hooks.get() };
        hooks
            .iter()
            .find(|(k, _, _)| *k == klass)
            .map(|&(_, code, sym)| (DumpHook::from_code(code), sym))
    }
    fn insert_hook(&self, klass: VALUE, hook: DumpHook, sym: VALUE) {
        unsafe { &mut *self.hooks.get() }.push((klass, hook as u8, sym));
    }
    fn userdef_in_progress(&self, obj: VALUE) -> bool {
        unsafe { &*self.userdefs.get() }.contains(&obj)
    }
    fn push_userdef(&self, obj: VALUE) {
        unsafe { &mut *self.userdefs.get() }.push(obj);
    }
    fn pop_userdef(&self) {
        unsafe { &mut *self.userdefs.get() }.pop();
    }
    fn insert_class(&self, klass: VALUE, sym: VALUE) {
        unsafe { &mut *self.classes.get() }.push((klass, sym));
    }
    #[inline]
    fn lookup_symbol(&self, sym: VALUE) -> Option<u32> {
        unsafe { &*self.symbols.get() }.get(&sym).copied()
    }
    #[inline]
    fn insert_symbol(&self, sym: VALUE, index: u32) {
        unsafe { &mut *self.symbols.get() }.insert(sym, index);
    }
}

/// How a String or Symbol's encoding is written (MRI's `encoding_name`).
#[derive(Clone, Copy)]
enum EncName {
    None,
    UsAscii,
    Utf8,
    Other(c_int),
}

// Bits of `Dumper::checked`: core classes whose dump hooks were found absent.
const CHECK_STRING: u16 = 1;
const CHECK_ARRAY: u16 = 2;
const CHECK_HASH: u16 = 4;
const CHECK_FLOAT: u16 = 8;
const CHECK_INTEGER: u16 = 16;
const CHECK_TIME: u16 = 32;
const CHECK_REGEXP: u16 = 64;
const CHECK_RATIONAL: u16 = 128;
const CHECK_COMPLEX: u16 = 256;
const CHECK_RANGE: u16 = 512;

struct Dumper<'t> {
    out: Vec<u8>,
    tables: &'t DumpTables,
    num_entries: u32,
    num_symbols: u32,
    /// Link index of each non-UTF-8/US-ASCII encoding name string already written.
    enc_names: Vec<(c_int, u32)>,
    checked: u16,
    depth: u32,
    utf8: c_int,
    usascii: c_int,
    /// A scan: objects with dump hooks are leaves (their hooks are not called). A dump
    /// runs one over the whole graph before it calls the first hook, so that everything
    /// outside hook results is known to be native before any Ruby code runs.
    scan: bool,
    /// Whether the scan ran (and passed).
    scanned: bool,
    /// Whether Ruby code (a dump hook) has run: from then on, giving up means the
    /// stdlib runs the hooks again (see `Outcome::Fallback`).
    committed: bool,
    /// Whether dump hooks may run; when not, meeting one falls back before it runs (a
    /// dump to an IO port, see `port.rs`).
    hooks_allowed: bool,
    root: VALUE,
    root_limit: i32,
    /// The exception to raise: one a hook raised, or MRI's for what a hook did.
    error: Option<Error>,
    /// Path symbols (pinned) of the modules an extended object's record starts with
    /// (`e` records), written by the record's writer where MRI's `w_extended` writes them.
    extensions: Vec<VALUE>,
    /// Modules met in extended objects, with the (pinned) symbol of their name, or 0 for
    /// one the stdlib must write (anonymous, something prepended).
    extension_names: Vec<(VALUE, VALUE)>,
    /// Classes whose instances were found to be `d` records, with their (pinned) symbol.
    data_classes: Vec<(VALUE, VALUE)>,
    /// Real classes and module chains of bare singleton classes found to have no dump
    /// hooks (and the core `default`/`compare_by_identity?`, for Hashes).
    plain_chains: Vec<(VALUE, Vec<VALUE>)>,
}

/// How a native dump ended.
pub enum Outcome {
    Done(Vec<u8>),
    /// The stdlib must dump the whole call. If dump hooks already ran (only when a hook's
    /// result holds something still outside the native set), the stdlib runs them again.
    Fallback,
    Raise(Error),
}

/// The dump of `obj`, or how it ended otherwise.
pub fn dump(ruby: &Ruby, obj: Value, limit: i32) -> Outcome {
    outcome(run(ruby, obj.as_raw(), limit, false, true).0)
}

/// The dump of `obj` if it needs no dump hook (no Ruby code runs), or how it ended
/// otherwise (`Fallback` as soon as a hook would run).
pub fn dump_without_hooks(ruby: &Ruby, obj: Value, limit: i32) -> Outcome {
    outcome(run(ruby, obj.as_raw(), limit, false, false).0)
}

fn outcome(result: Result<Vec<u8>, Option<Error>>) -> Outcome {
    match result {
        Ok(out) => Outcome::Done(out),
        Err(Some(error)) => Outcome::Raise(error),
        Err(None) => Outcome::Fallback,
    }
}

/// One walk over the graph (a scan or a dump): the bytes, or the exception to raise
/// (`None`: fall back), and whether Ruby code ran.
fn run(
    ruby: &Ruby,
    obj: VALUE,
    limit: i32,
    scan: bool,
    hooks_allowed: bool,
) -> (Result<Vec<u8>, Option<Error>>, bool) {
    let tables: Obj<DumpTables> = ruby.obj_wrap(DumpTables {
        // Sized so that typical small dumps never rehash.
        objects: UnsafeCell::new(AddrMap::with_capacity_and_hasher(32, Default::default())),
        symbols: UnsafeCell::new(AddrMap::with_capacity_and_hasher(16, Default::default())),
        classes: UnsafeCell::new(Vec::new()),
        pinned: UnsafeCell::new(Vec::new()),
        hooks: UnsafeCell::new(Vec::new()),
        userdefs: UnsafeCell::new(Vec::new()),
    });
    let mut dumper = Dumper {
        out: Vec::with_capacity(128),
        tables: &tables,
        num_entries: 0,
        num_symbols: 0,
        enc_names: Vec::new(),
        checked: 0,
        depth: 0,
        utf8: unsafe { rb_sys::rb_utf8_encindex() },
        usascii: unsafe { rb_sys::rb_usascii_encindex() },
        scan,
        scanned: scan,
        committed: false,
        hooks_allowed,
        root: obj,
        root_limit: limit,
        error: None,
        extensions: Vec::new(),
        extension_names: Vec::new(),
        data_classes: Vec::new(),
        plain_chains: Vec::new(),
    };
    dumper.out.push(core::MAJOR);
    dumper.out.push(core::MINOR);
    let result = dumper.w_object(obj, limit);
    let out = std::mem::take(&mut dumper.out);
    let committed = dumper.committed;
    let error = dumper.error.take();
    // Keep the tables (and so the pins) alive until the walk is over, then give their
    // memory back at once, while it is still in cache: left to the GC's sweep of the
    // wrapper, every dump took fresh cold memory for its tables, and a 64-byte String's
    // dump was slower than the stdlib's (900 ns against 600 on Ruby 3.4).
    std::hint::black_box(&tables);
    tables.release();
    match result {
        Ok(()) => (Ok(out), committed),
        Err(Fallback) => (Err(error), committed),
    }
}

/// Whether a Hash subclass answers `default` and `compare_by_identity?` with the core
/// methods (so calling them runs no Ruby code).
fn hash_methods_are_core(klass: VALUE) -> bool {
    let ids = ids();
    unsafe {
        rb_sys::rb_method_basic_definition_p(klass, ids.default) != 0
            && rb_sys::rb_method_basic_definition_p(klass, ids.compare_by_identity_p) != 0
    }
}

struct IvarCount {
    count: usize,
    odd: bool,
}

/// Ivars MRI's `to_be_skipped_id` leaves out without a word: `encoding` and internal
/// (unnamed) IDs, such as those an exception keeps its receiver in.
#[inline]
unsafe fn skipped_silently(id: rb_sys::ID) -> bool {
    let name = rb_sys::rb_id2str(id);
    id == ids().id_encoding || name == 0 || name == rb_sys::Qfalse as VALUE
}

unsafe extern "C" fn count_ivar(id: rb_sys::ID, _value: VALUE, arg: rb_sys::st_data_t) -> c_int {
    let count = &mut *(arg as *mut IvarCount);
    let ids = ids();
    if id == ids.id_e || id == ids.id_k {
        // MRI skips these with a warning: the stdlib's.
        count.odd = true;
    } else if !skipped_silently(id) {
        count.count += 1;
    }
    rb_sys::st_retval::ST_CONTINUE as c_int
}

/// Whether this build is for Ruby 3.1 (3.3 checks written ivars by shape).
const RUBY_3_1: bool = rb_sys::RUBY_API_VERSION_CODE < 30300;

/// How many of `obj`'s ivars MRI writes, or `Fallback` for names MRI skips with a
/// warning (`E`, `K`).
fn written_ivar_count(obj: VALUE) -> Result<usize, Fallback> {
    let mut count = IvarCount {
        count: 0,
        odd: false,
    };
    unsafe {
        rb_sys::rb_ivar_foreach(obj, Some(count_ivar), &mut count as *mut IvarCount as _);
    }
    if count.odd {
        return Err(Fallback);
    }
    Ok(count.count)
}

/// The generic ivars of a non-`T_OBJECT` that MRI writes (after the record, inside an
/// `I`), or `Fallback` for names MRI skips with a warning (`E`, `K`).
fn generic_ivar_count(obj: VALUE) -> Result<usize, Fallback> {
    if flags(obj) & FL_EXIVAR == 0 {
        return Ok(0);
    }
    let count = written_ivar_count(obj)?;
    if count > MAX_LEN {
        return Err(Fallback);
    }
    Ok(count)
}

struct IvarWalk<'a, 't> {
    dumper: &'a mut Dumper<'t>,
    limit: i32,
    failed: bool,
    /// Ruby 3.1: how many more ivars the record's count announced (MRI counts down and
    /// raises at one more; see `Dumper::w_ivars`).
    remaining: usize,
    /// Ruby 3.1: the walk met an ivar beyond the count (one a hook added).
    added: bool,
}

unsafe extern "C" fn write_ivar(id: rb_sys::ID, value: VALUE, arg: rb_sys::st_data_t) -> c_int {
    let walk = &mut *(arg as *mut IvarWalk);
    if skipped_silently(id) {
        return rb_sys::st_retval::ST_CONTINUE as c_int;
    }
    if RUBY_3_1 {
        if walk.remaining == 0 {
            walk.added = true;
            walk.failed = true;
            return rb_sys::st_retval::ST_STOP as c_int;
        }
        walk.remaining -= 1;
    }
    let step = catch_unwind(AssertUnwindSafe(|| {
        walk.dumper.w_symbol(rb_sys::ID2SYM(id))?;
        walk.dumper.w_object(value, walk.limit)
    }));
    match step {
        Ok(Ok(())) => rb_sys::st_retval::ST_CONTINUE as c_int,
        _ => {
            walk.failed = true;
            rb_sys::st_retval::ST_STOP as c_int
        }
    }
}

struct HashWalk<'a, 't> {
    dumper: &'a mut Dumper<'t>,
    limit: i32,
    failed: bool,
}

unsafe extern "C" fn hash_each(key: VALUE, value: VALUE, arg: VALUE) -> c_int {
    let walk = &mut *(arg as *mut HashWalk);
    let step = catch_unwind(AssertUnwindSafe(|| {
        walk.dumper.w_object(key, walk.limit)?;
        walk.dumper.w_object(value, walk.limit)
    }));
    match step {
        Ok(Ok(())) => rb_sys::st_retval::ST_CONTINUE as c_int,
        _ => {
            walk.failed = true;
            rb_sys::st_retval::ST_STOP as c_int
        }
    }
}

impl Dumper<'_> {
    #[inline]
    fn w_long(&mut self, x: i64) {
        core::write_long(&mut self.out, x);
    }

    #[inline]
    fn remember(&mut self, obj: VALUE) {
        self.tables.insert_object(obj, self.num_entries);
        self.num_entries += 1;
    }

    /// Checks once per dump that `klass` has no dump hooks (see `ids::plain_dump_class`).
    #[inline]
    fn check_class(&mut self, bit: u16, obj: VALUE, klass: VALUE) -> Step {
        if self.checked & bit != 0 {
            return Ok(());
        }
        if !ids::plain_dump_class(obj, klass) {
            return Err(Fallback);
        }
        if bit == CHECK_HASH {
            let ids = ids();
            let basic = unsafe {
                rb_sys::rb_method_basic_definition_p(klass, ids.default) != 0
                    && rb_sys::rb_method_basic_definition_p(klass, ids.compare_by_identity_p) != 0
            };
            if !basic {
                return Err(Fallback);
            }
        }
        self.checked |= bit;
        Ok(())
    }

    /// Checks once per dump that `klass` (Rational, Complex) is dumped by its own core
    /// `marshal_dump`, and that asking it runs no Ruby code.
    fn check_core_marshal_dump(&mut self, bit: u16, klass: VALUE) -> Step {
        if self.checked & bit != 0 {
            return Ok(());
        }
        let core = ids::respond_to_is_core(klass)
            && unsafe { rb_sys::rb_method_basic_definition_p(klass, ids().marshal_dump) } != 0;
        if !core {
            return Err(Fallback);
        }
        self.checked |= bit;
        Ok(())
    }

    fn w_object(&mut self, obj: VALUE, limit: i32) -> Step {
        if limit == 0 {
            return self.exceed_depth_limit();
        }
        if rb_sys::NIL_P(obj) {
            self.out.push(core::TYPE_NIL);
            return Ok(());
        }
        if obj == rb_sys::Qtrue as VALUE {
            self.out.push(core::TYPE_TRUE);
            return Ok(());
        }
        if obj == rb_sys::Qfalse as VALUE {
            self.out.push(core::TYPE_FALSE);
            return Ok(());
        }
        if rb_sys::FIXNUM_P(obj) {
            let n = unsafe { rb_sys::FIX2LONG(obj) } as i64;
            return self.w_fixnum(obj, n, limit);
        }
        if rb_sys::STATIC_SYM_P(obj) {
            return self.w_symbol(obj);
        }
        if rb_sys::SPECIAL_CONST_P(obj) && !rb_sys::FLONUM_P(obj) {
            return Err(Fallback);
        }
        if let Some(index) = self.tables.lookup_object(obj) {
            self.out.push(core::TYPE_LINK);
            self.w_long(index as i64);
            return Ok(());
        }
        let limit = if limit > 0 { limit - 1 } else { limit };
        if rb_sys::FLONUM_P(obj) {
            let float_class = unsafe { rb_sys::rb_cFloat };
            self.check_class(CHECK_FLOAT, obj, float_class)?;
            self.remember(obj);
            self.out.push(core::TYPE_FLOAT);
            core::write_float_body(&mut self.out, crate::helpers::float::value(obj));
            return Ok(());
        }
        let mut klass = class_of(obj);
        let builtin = unsafe { rb_sys::RB_BUILTIN_TYPE(obj) };
        if extended::is_singleton(klass) && extendable(builtin) {
            match self.singleton_record(obj, klass, builtin)? {
                SingletonRecord::Hooked(hook, sym) => return self.w_hooked(obj, hook, sym, limit),
                // Its `e` records are queued for the record's writer.
                SingletonRecord::Extended(real) => klass = real,
            }
        }
        if builtin == T::RUBY_T_OBJECT
            || (builtin == T::RUBY_T_DATA && klass != unsafe { rb_sys::rb_cTime })
        {
            if let Some((hook, sym)) = self.hook_of(obj, klass)? {
                return self.w_hooked(obj, hook, sym, limit);
            }
        }
        match builtin {
            T::RUBY_T_SYMBOL => self.w_symbol(obj),
            T::RUBY_T_STRING => {
                let uclass =
                    self.uclass(obj, klass, unsafe { rb_sys::rb_cString }, CHECK_STRING)?;
                let ivars = generic_ivar_count(obj)?;
                self.w_bytes_record(obj, obj, uclass, ivars, core::TYPE_STRING, None, limit)
            }
            T::RUBY_T_REGEXP => self.w_regexp(obj, klass, limit),
            T::RUBY_T_ARRAY => {
                let uclass = self.uclass(obj, klass, unsafe { rb_sys::rb_cArray }, CHECK_ARRAY)?;
                let ivars = generic_ivar_count(obj)?;
                self.remember(obj);
                self.enter()?;
                let len = unsafe { rb_sys::RARRAY_LEN(obj) };
                if len as usize > MAX_LEN {
                    return Err(Fallback);
                }
                if ivars > 0 {
                    self.out.push(core::TYPE_IVAR);
                }
                self.w_uclass(uclass)?;
                self.out.push(core::TYPE_ARRAY);
                self.w_long(len as i64);
                for i in 0..len {
                    let item = unsafe { rb_sys::RARRAY_AREF(obj, i as isize) };
                    self.w_object(item, limit)?;
                    if unsafe { rb_sys::RARRAY_LEN(obj) } != len {
                        // Only a dump hook can do that; MRI raises.
                        return Err(self.raise_runtime("array modified during dump"));
                    }
                }
                if ivars > 0 {
                    self.w_long(ivars as i64);
                    self.w_generic_ivars(obj, ivars, limit)?;
                }
                self.depth -= 1;
                Ok(())
            }
            T::RUBY_T_HASH => self.w_hash(obj, klass, limit),
            T::RUBY_T_FLOAT if klass == unsafe { rb_sys::rb_cFloat } => {
                self.check_class(CHECK_FLOAT, obj, klass)?;
                self.remember(obj);
                self.out.push(core::TYPE_FLOAT);
                core::write_float_body(&mut self.out, crate::helpers::float::value(obj));
                Ok(())
            }
            T::RUBY_T_BIGNUM if klass == unsafe { rb_sys::rb_cInteger } => {
                self.check_class(CHECK_INTEGER, obj, klass)?;
                self.remember(obj);
                self.w_bignum(obj)
            }
            T::RUBY_T_OBJECT => self.w_plain_object(obj, klass, limit),
            T::RUBY_T_STRUCT if classes::allocates_ranges(klass) => self.w_range(obj, klass, limit),
            T::RUBY_T_STRUCT => self.w_struct(obj, klass, limit),
            T::RUBY_T_RATIONAL if klass == unsafe { rb_sys::rb_cRational } => {
                self.check_core_marshal_dump(CHECK_RATIONAL, klass)?;
                let ids = ids();
                let (num, den) =
                    unsafe { (rb_sys::rb_rational_num(obj), rb_sys::rb_rational_den(obj)) };
                self.w_numeric_pair(obj, ids.sym_rational, num, den, limit)
            }
            T::RUBY_T_COMPLEX if klass == unsafe { rb_sys::rb_cComplex } => {
                self.check_core_marshal_dump(CHECK_COMPLEX, klass)?;
                let ids = ids();
                let (real, imag) =
                    unsafe { (rb_sys::rb_complex_real(obj), rb_sys::rb_complex_imag(obj)) };
                self.w_numeric_pair(obj, ids.sym_complex, real, imag, limit)
            }
            T::RUBY_T_CLASS => self.w_class_ref(obj, klass, core::TYPE_CLASS),
            T::RUBY_T_MODULE => self.w_class_ref(obj, klass, core::TYPE_MODULE),
            T::RUBY_T_DATA if klass == unsafe { rb_sys::rb_cTime } => self.w_time(obj, limit),
            T::RUBY_T_DATA => self.w_data(obj, klass, limit),
            _ => Err(Fallback),
        }
    }

    /// A Time, as MRI writes any `_dump` object: `Iu:\tTime`, the String `Time#_dump`
    /// returns, that String's ivars (the Time's own, which `Time#_dump` copies onto it,
    /// then the internal ones); the Time takes its link index last.
    fn w_time(&mut self, obj: VALUE, limit: i32) -> Step {
        if self.checked & CHECK_TIME == 0 {
            if !ids::core_time_dump(obj) {
                return Err(Fallback);
            }
            self.checked |= CHECK_TIME;
        }
        // A Time met again inside its own ivars: as for any `_dump` object (`w_hooked`).
        if rb_sys::RUBY_API_VERSION_CODE >= 30300 && self.tables.userdef_in_progress(obj) {
            return Err(self.raise_runtime("can't dump recursive object using _dump()"));
        }
        let ids = ids();
        let level = unsafe { rb_sys::rb_int2inum(limit as isize) };
        let data = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_funcall(obj, ids.underscore_dump, 1, level)
        })
        .map_err(|_| Fallback)?;
        // Keep the String (and the ivar values it holds) alive and in place while we write.
        self.tables.pin(data);
        if unsafe { !rb_sys::RB_TYPE_P(data, T::RUBY_T_STRING) }
            || unsafe { rb_sys::rb_enc_get_index(data) } != 0
            || class_of(data) == class_of(obj)
        {
            return Err(Fallback);
        }
        let count = written_ivar_count(data)?;
        let bytes = str_bytes(data);
        if bytes.len() > MAX_LEN {
            return Err(Fallback);
        }
        self.enter()?;
        if count > 0 {
            self.out.push(core::TYPE_IVAR);
        }
        self.out.push(core::TYPE_USERDEF);
        self.w_symbol(ids.sym_time)?;
        core::write_bytes(&mut self.out, bytes);
        if count > 0 {
            self.w_long(count as i64);
            self.w_userdef_ivars(obj, data, count, limit)?;
        }
        self.remember(obj);
        self.depth -= 1;
        Ok(())
    }

    /// A `c`/`m` record: a named class or module, by its ASCII path (which must lead back
    /// to it). Singletons, anonymous ones and those with dump hooks go to the stdlib.
    fn w_class_ref(&mut self, obj: VALUE, meta: VALUE, kind: u8) -> Step {
        if flags(obj) & (rb_sys::ruby_fl_type::RUBY_FL_SINGLETON as VALUE) != 0
            || !ids::plain_dump_class(obj, meta)
        {
            return Err(Fallback);
        }
        let path = unsafe { rb_sys::rb_class_path(obj) };
        self.tables.pin(path);
        let bytes = str_bytes(path);
        if classes::resolve_path(bytes) != Some(obj) {
            return Err(Fallback);
        }
        self.remember(obj);
        self.out.push(kind);
        core::write_bytes(&mut self.out, bytes);
        Ok(())
    }

    /// An `S` record: a Struct of a named `Struct.new` class, member by member. (Loading
    /// `S` records is left to the stdlib: it depends on `keyword_init` internals.)
    fn w_struct(&mut self, obj: VALUE, klass: VALUE, limit: i32) -> Step {
        let path_sym = self.struct_class(obj, klass)?;
        let ivars = generic_ivar_count(obj)?;
        self.remember(obj);
        let members = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_struct_members(obj) })
            .map_err(|_| Fallback)?;
        self.tables.pin(members);
        let len = unsafe { rb_sys::RARRAY_LEN(members) };
        let size = unsafe { rb_sys::rb_struct_size(obj) };
        if !rb_sys::FIXNUM_P(size) || unsafe { rb_sys::FIX2LONG(size) } != len {
            return Err(Fallback);
        }
        self.enter()?;
        if ivars > 0 {
            self.out.push(core::TYPE_IVAR);
        }
        self.w_extensions()?;
        self.out.push(core::TYPE_STRUCT);
        self.w_symbol(path_sym)?;
        self.w_long(len as i64);
        for i in 0..len {
            let member = unsafe { rb_sys::RARRAY_AREF(members, i as isize) };
            if !rb_sys::STATIC_SYM_P(member) && unsafe { !rb_sys::RB_DYNAMIC_SYM_P(member) } {
                return Err(Fallback);
            }
            self.w_symbol(member)?;
            let value = unsafe { rb_sys::rb_struct_aref(obj, rb_sys::LONG2FIX(i as _)) };
            self.w_object(value, limit)?;
        }
        if ivars > 0 {
            self.w_long(ivars as i64);
            self.w_generic_ivars(obj, ivars, limit)?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// A Rational or Complex, as MRI writes it through the core (private) `marshal_dump`:
    /// a `U` record whose data is the two-element Array that method returns (a new
    /// object, so it takes a link index that is never linked to).
    fn w_numeric_pair(&mut self, obj: VALUE, sym: VALUE, a: VALUE, b: VALUE, limit: i32) -> Step {
        if flags(obj) & FL_EXIVAR != 0 {
            return Err(Fallback); // marshal_dump copies ivars onto the Array
        }
        self.remember(obj);
        self.enter()?;
        self.out.push(core::TYPE_USRMARSHAL);
        self.w_symbol(sym)?;
        if limit == 0 {
            // MRI's w_object raises for the Array before writing it.
            self.depth -= 1;
            return self.exceed_depth_limit();
        }
        let inner = if limit > 0 { limit - 1 } else { limit };
        self.num_entries += 1;
        self.out.push(core::TYPE_ARRAY);
        self.w_long(2);
        self.w_object(a, inner)?;
        self.w_object(b, inner)?;
        self.depth -= 1;
        Ok(())
    }

    /// A Range (or subclass), as MRI writes it through Range's compat dumper: an `o`
    /// record of its own class with the ivars `excl`, `begin`, `end` of a stand-in Object.
    fn w_range(&mut self, obj: VALUE, klass: VALUE, limit: i32) -> Step {
        let sym = match self.tables.lookup_class(klass) {
            Some(sym) => sym,
            None => {
                if self.checked & CHECK_RANGE == 0 {
                    // The generic path only if Range itself has no hooks.
                    if !ids::plain_dump_class(obj, unsafe { rb_sys::rb_cRange }) {
                        return Err(Fallback);
                    }
                    self.checked |= CHECK_RANGE;
                }
                self.named_class(obj, klass, |_| true)?
            }
        };
        if flags(obj) & FL_EXIVAR != 0 {
            return Err(Fallback); // MRI writes those ivars after the stand-in's: rare
        }
        let (mut beg, mut end, mut excl): (VALUE, VALUE, c_int) = (0, 0, 0);
        let ok = unsafe { rb_sys::rb_range_values(obj, &mut beg, &mut end, &mut excl) };
        if ok == 0 || beg == 0 || end == 0 {
            return Err(Fallback);
        }
        // An uninitialized Range (Range.allocate) reads as nil..nil here, but MRI writes
        // its excl as nil, not false; nil..nil itself is rare enough to leave to MRI too.
        if rb_sys::NIL_P(beg) && rb_sys::NIL_P(end) && excl == 0 {
            return Err(Fallback);
        }
        self.remember(obj);
        self.enter()?;
        let ids = ids();
        self.w_extensions()?; // an extended Range subclass
        self.out.push(core::TYPE_OBJECT);
        self.w_symbol(sym)?;
        self.w_long(3);
        self.w_symbol(ids.sym_excl)?;
        let excl = if excl != 0 {
            rb_sys::Qtrue as VALUE
        } else {
            rb_sys::Qfalse as VALUE
        };
        self.w_object(excl, limit)?;
        self.w_symbol(ids.sym_begin)?;
        self.w_object(beg, limit)?;
        self.w_symbol(ids.sym_end)?;
        self.w_object(end, limit)?;
        self.depth -= 1;
        Ok(())
    }

    /// A `/` record: MRI writes a Regexp's source and options byte, its encoding and
    /// ivars as for a String (a subclass as a `C` record).
    fn w_regexp(&mut self, obj: VALUE, klass: VALUE, limit: i32) -> Step {
        let uclass = self.uclass(obj, klass, unsafe { rb_sys::rb_cRegexp }, CHECK_REGEXP)?;
        let ivars = generic_ivar_count(obj)?;
        let src = unsafe { (*(obj as *const rb_sys::RRegexp)).src };
        if src == 0 || unsafe { !rb_sys::RB_TYPE_P(src, T::RUBY_T_STRING) } {
            return Err(Fallback); // an uninitialized Regexp: MRI raises
        }
        // rb_reg_options raises for an uninitialized Regexp (checked above, but cheap).
        let options = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_int2inum(rb_sys::rb_reg_options(obj) as isize)
        })
        .map_err(|_| Fallback)?;
        let options = unsafe { rb_sys::FIX2LONG(options) };
        self.w_bytes_record(
            obj,
            src,
            uclass,
            ivars,
            core::TYPE_REGEXP,
            Some(options as u8),
            limit,
        )
    }

    /// A String (`"`) or Regexp (`/`) record: `I` when it has an encoding or ivars, its
    /// `C` class, the type byte, `bytes_of`'s bytes, the Regexp's options byte, then the
    /// encoding and ivars.
    #[allow(clippy::too_many_arguments)]
    fn w_bytes_record(
        &mut self,
        obj: VALUE,
        bytes_of: VALUE,
        uclass: Option<VALUE>,
        ivars: usize,
        type_byte: u8,
        options: Option<u8>,
        limit: i32,
    ) -> Step {
        self.remember(obj);
        let enc = self.encoding_name(obj);
        let num = ivars + usize::from(!matches!(enc, EncName::None));
        if num > 0 {
            self.out.push(core::TYPE_IVAR);
        }
        self.w_uclass(uclass)?;
        self.out.push(type_byte);
        let bytes = str_bytes(bytes_of);
        if bytes.len() > MAX_LEN {
            return Err(Fallback); // MRI: "long too big to dump"
        }
        core::write_bytes(&mut self.out, bytes);
        self.out.extend(options);
        if num > 0 {
            self.w_long(num as i64);
            self.w_encoding(enc)?;
            self.w_generic_ivars(obj, ivars, limit)?;
        }
        Ok(())
    }

    /// The `count` ivars of a String, Array, Hash, Struct or Regexp (MRI's
    /// `w_ivar_each`), their values one level deeper.
    fn w_generic_ivars(&mut self, obj: VALUE, count: usize, limit: i32) -> Step {
        if count == 0 {
            return Ok(());
        }
        self.enter()?;
        self.w_ivars(obj, obj, count, limit)?;
        self.depth -= 1;
        Ok(())
    }

    /// `obj`'s `count` ivars as MRI's `w_ivar_each` writes them (names MRI skips
    /// silently left out), each value at `limit`, for the record of `owner` (`obj`
    /// itself, or the object whose `_dump` returned `obj`). A hook run from the walk may
    /// add or remove ivars: Ruby 3.1 counts the ivars down and raises at one more than
    /// `count` or when some are left over; Ruby 3.3 raises when `owner`'s shape changed.
    /// Both name `owner`'s class.
    fn w_ivars(&mut self, obj: VALUE, owner: VALUE, count: usize, limit: i32) -> Step {
        let shape = if RUBY_3_1 { None } else { Shape::of(owner) };
        let mut walk = IvarWalk {
            dumper: self,
            limit,
            failed: false,
            remaining: count,
            added: false,
        };
        unsafe {
            rb_sys::rb_ivar_foreach(obj, Some(write_ivar), &mut walk as *mut IvarWalk as _);
        }
        let (failed, added, remaining) = (walk.failed, walk.added, walk.remaining);
        if added {
            return Err(self.raise_ivars_changed(owner, true));
        }
        if failed {
            return Err(Fallback);
        }
        if RUBY_3_1 && remaining > 0 {
            return Err(self.raise_ivars_changed(owner, false));
        }
        if let (Some(before), Some(now)) = (shape, Shape::of(owner)) {
            if before != now {
                let removed = before.ivar_count() > now.ivar_count();
                return Err(self.raise_ivars_changed(owner, !removed));
            }
        }
        Ok(())
    }

    /// The ivars of the String `data` that `obj`'s `_dump` returned, written while `obj`
    /// counts as a `_dump` in progress (Ruby 3.3's recursion check, see `w_hooked`).
    fn w_userdef_ivars(&mut self, obj: VALUE, data: VALUE, count: usize, limit: i32) -> Step {
        self.tables.push_userdef(obj);
        let written = self.w_ivars(data, obj, count, limit);
        self.tables.pop_userdef();
        written
    }

    /// An `o` record: a plain object of a named class, with its instance variables.
    fn w_plain_object(&mut self, obj: VALUE, klass: VALUE, limit: i32) -> Step {
        let path_sym = self.object_class(obj, klass)?;
        self.remember(obj);
        // Ivars MRI skips with warnings (E, K): the stdlib's.
        let count = written_ivar_count(obj)?;
        if count > MAX_LEN {
            return Err(Fallback);
        }
        self.enter()?;
        self.w_extensions()?;
        self.out.push(core::TYPE_OBJECT);
        self.w_symbol(path_sym)?;
        self.w_long(count as i64);
        self.w_ivars(obj, obj, count, limit)?;
        self.depth -= 1;
        Ok(())
    }

    /// The symbol of `klass`'s path if its instances can be written as `o` records the
    /// way MRI writes them: a named, non-singleton class with Object's allocator and no
    /// dump hooks, whose path leads back to it.
    fn object_class(&mut self, obj: VALUE, klass: VALUE) -> Result<VALUE, Fallback> {
        self.named_class(obj, klass, |k| {
            classes::allocates_plain_objects(k) || classes::allocates_exceptions(k)
        })
    }

    /// MRI's `w_uclass` decision for a String, Array or Hash whose class is `klass`:
    /// `None` for the core class itself (checked once per dump), or the path symbol of a
    /// named subclass to write as a `C` record (checked once per class: no dump hooks,
    /// untouched `respond_to?`, and for a Hash the core `default` and
    /// `compare_by_identity?`, which `w_hash` calls). Singleton classes (extended objects)
    /// and anonymous or unreachable classes are the stdlib's.
    fn uclass(
        &mut self,
        obj: VALUE,
        klass: VALUE,
        base: VALUE,
        bit: u16,
    ) -> Result<Option<VALUE>, Fallback> {
        if klass == base {
            self.check_class(bit, obj, klass)?;
            return Ok(None);
        }
        let check: fn(VALUE) -> bool = if bit == CHECK_HASH {
            hash_methods_are_core
        } else {
            |_| true
        };
        self.named_class(obj, klass, check).map(Some)
    }

    /// The `C` record prefix for a subclass found by `uclass`.
    fn w_uclass(&mut self, uclass: Option<VALUE>) -> Step {
        self.w_extensions()?;
        if let Some(sym) = uclass {
            self.out.push(core::TYPE_UCLASS);
            self.w_symbol(sym)?;
        }
        Ok(())
    }

    /// `object_class` for the class of an `S` record (a `Struct.new` class).
    fn struct_class(&mut self, obj: VALUE, klass: VALUE) -> Result<VALUE, Fallback> {
        self.named_class(obj, klass, classes::allocates_structs)
    }

    fn named_class(
        &mut self,
        obj: VALUE,
        klass: VALUE,
        right_allocator: fn(VALUE) -> bool,
    ) -> Result<VALUE, Fallback> {
        if let Some(sym) = self.tables.lookup_class(klass) {
            return Ok(sym);
        }
        if flags(klass) & (rb_sys::ruby_fl_type::RUBY_FL_SINGLETON as VALUE) != 0
            || !right_allocator(klass)
            || !ids::plain_dump_class(obj, klass)
        {
            return Err(Fallback);
        }
        let path = unsafe { rb_sys::rb_class_path(klass) };
        self.tables.pin(path); // its bytes are read while resolving (which may allocate)
        if classes::resolve_path(str_bytes(path)) != Some(klass) {
            return Err(Fallback);
        }
        let sym = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_intern(path) })
            .map_err(|_| Fallback)?;
        self.tables.insert_class(klass, sym);
        Ok(sym)
    }

    /// The dump hook instances of `klass` use, with the symbol of its path, or `None`
    /// for none (or when the generic path must decide: singletons, `respond_to?`
    /// overrides). Looked up once per class per dump.
    fn hook_of(&mut self, obj: VALUE, klass: VALUE) -> Result<Option<(DumpHook, VALUE)>, Fallback> {
        if let Some((hook, sym)) = self.tables.lookup_hook(klass) {
            return Ok((hook != DumpHook::None).then_some((hook, sym)));
        }
        if flags(klass) & (rb_sys::ruby_fl_type::RUBY_FL_SINGLETON as VALUE) != 0 {
            return Ok(None);
        }
        let hook = match hooks::dump_hook(obj, klass) {
            Some(hook) => hook,
            None => return Ok(None),
        };
        let sym = if hook == DumpHook::None {
            rb_sys::Qnil as VALUE
        } else {
            // MRI calls the hook before it finds an anonymous class unnamable; the stdlib
            // will do both, once.
            self.path_symbol(klass)?
        };
        self.tables.insert_hook(klass, hook, sym);
        Ok((hook != DumpHook::None).then_some((hook, sym)))
    }

    /// The symbol of `klass`'s path, if that path leads back to it.
    fn path_symbol(&mut self, klass: VALUE) -> Result<VALUE, Fallback> {
        let path = unsafe { rb_sys::rb_class_path(klass) };
        self.tables.pin(path);
        if classes::resolve_path(str_bytes(path)) != Some(klass) {
            return Err(Fallback);
        }
        magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_intern(path) }).map_err(|_| Fallback)
    }

    /// An object with a dump hook, as MRI writes it: `U` (remembered, then
    /// `marshal_dump`, then the class and the result) or `u` (`_dump(limit)`, the class,
    /// the String's bytes and ivars, then remembered). A scan only remembers it.
    fn w_hooked(&mut self, obj: VALUE, hook: DumpHook, sym: VALUE, limit: i32) -> Step {
        let is_object = unsafe { rb_sys::RB_BUILTIN_TYPE(obj) } == T::RUBY_T_OBJECT;
        // `_dump` objects other than T_OBJECTs carry their own ivars: the stdlib's.
        if hook == DumpHook::UserDef && !is_object && flags(obj) & FL_EXIVAR != 0 {
            return Err(Fallback);
        }
        if self.scan {
            self.remember(obj);
            return Ok(());
        }
        self.ensure_scanned()?;
        self.enter()?;
        let ids = ids();
        if hook == DumpHook::MarshalDump {
            self.remember(obj);
            let v = self.call_hook(obj, ids.marshal_dump, "marshal_dump", &[])?;
            self.out.push(core::TYPE_USRMARSHAL);
            self.w_symbol(sym)?;
            self.w_object(v, limit)?;
            self.depth -= 1;
            return Ok(());
        }
        // Ruby 3.3 refuses to re-enter an object's `_dump` while writing its String's
        // ivars; 3.1 calls it again (a link in the ivars ends the recursion, or the depth
        // cap sends the call to the stdlib).
        if rb_sys::RUBY_API_VERSION_CODE >= 30300 && self.tables.userdef_in_progress(obj) {
            return Err(self.raise_runtime("can't dump recursive object using _dump()"));
        }
        let level = unsafe { rb_sys::rb_int2inum(limit as isize) };
        let data = self.call_hook(obj, ids.underscore_dump, "_dump", &[level])?;
        if unsafe { !rb_sys::RB_TYPE_P(data, T::RUBY_T_STRING) } {
            let ruby = unsafe { Ruby::get_unchecked() };
            self.error = Some(c_error(
                &ruby,
                ruby.exception_type_error(),
                "_dump() must return string",
            ));
            return Err(Fallback);
        }
        if !is_object && flags(obj) & FL_EXIVAR != 0 {
            return Err(Fallback); // the hook gave the object ivars
        }
        let enc = self.encoding_name(data);
        let count = if flags(data) & FL_EXIVAR != 0 {
            written_ivar_count(data)?
        } else {
            0
        };
        if str_bytes(data).len() > MAX_LEN {
            return Err(Fallback);
        }
        let num = count + usize::from(!matches!(enc, EncName::None));
        if num > 0 {
            self.out.push(core::TYPE_IVAR);
        }
        self.out.push(core::TYPE_USERDEF);
        self.w_symbol(sym)?;
        core::write_bytes(&mut self.out, str_bytes(data));
        if num > 0 {
            self.w_long(num as i64);
            self.w_encoding(enc)?;
            if count > 0 {
                self.w_userdef_ivars(obj, data, count, limit)?;
            }
        }
        self.remember(obj);
        self.depth -= 1;
        Ok(())
    }

    /// Before the first dump hook runs: scan the whole graph (hooks as leaves) so that
    /// anything the native dump cannot write outside hook results sends the call to the
    /// stdlib while no Ruby code has run yet.
    fn ensure_scanned(&mut self) -> Step {
        if self.scanned {
            return Ok(());
        }
        let ruby = unsafe { Ruby::get_unchecked() };
        match run(&ruby, self.root, self.root_limit, true, true) {
            (Ok(_), _) => {
                self.scanned = true;
                Ok(())
            }
            _ => Err(Fallback),
        }
    }

    /// Calls a dump hook (any visibility, as MRI's `rb_funcallv`); an exception it
    /// raises is re-raised once the walk has unwound, and so is MRI's RuntimeError for a
    /// result of the object's own class.
    fn call_hook(
        &mut self,
        obj: VALUE,
        mid: rb_sys::ID,
        name: &str,
        args: &[VALUE],
    ) -> Result<VALUE, Fallback> {
        if !self.hooks_allowed {
            return Err(Fallback);
        }
        self.committed = true;
        let call = HookCall::start();
        let result = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_funcallv(obj, mid, args.len() as c_int, args.as_ptr())
        });
        // MRI compares CLASS_OF (singletons included); `obj` is a heap object. It checks
        // this before a second return (`check_userdump_arg`), so both ways use it.
        let klass = class_of(obj);
        let same_class =
            matches!(result, Ok(v) if !rb_sys::SPECIAL_CONST_P(v) && class_of(v) == klass);
        if !call.first_return() {
            // A continuation came back into a dump that has ended (see helpers::reentry).
            let message = if same_class {
                same_class_message(klass, name)
            } else {
                format!("Marshal.dump reentered at {name}")
            };
            unsafe { raise_second_return(result, message) }
        }
        match result {
            Ok(v) => {
                self.tables.pin(v);
                if same_class {
                    let ruby = unsafe { Ruby::get_unchecked() };
                    self.error = Some(c_error(
                        &ruby,
                        ruby.exception_runtime_error(),
                        &same_class_message(klass, name),
                    ));
                    return Err(Fallback);
                }
                Ok(v)
            }
            Err(e) => {
                self.error = Some(e);
                Err(Fallback)
            }
        }
    }

    /// MRI's RuntimeError for what a dump hook did, to be raised once the walk unwinds.
    fn raise_runtime(&mut self, message: &'static str) -> Fallback {
        let ruby = unsafe { Ruby::get_unchecked() };
        self.error = Some(c_error(&ruby, ruby.exception_runtime_error(), message));
        Fallback
    }

    /// Where MRI's `w_object` is entered with `limit` 0: it raises "exceed depth limit"
    /// before writing anything, so the dump raises that natively (the hooks met before
    /// this point ran exactly as in the stdlib, which walks in the same order). A scan
    /// treats it as a leaf: the dump never gets past it, so nothing after it needs to be
    /// native for the dump to be exact.
    fn exceed_depth_limit(&mut self) -> Step {
        if self.scan {
            return Ok(());
        }
        let ruby = unsafe { Ruby::get_unchecked() };
        self.error = Some(c_error(
            &ruby,
            ruby.exception_arg_error(),
            "exceed depth limit",
        ));
        Err(Fallback)
    }

    #[inline]
    fn enter(&mut self) -> Step {
        self.depth += 1;
        if self.depth > MAX_DEPTH || unsafe { rb_sys::ruby_stack_check() } != 0 {
            return Err(Fallback);
        }
        Ok(())
    }

    fn w_fixnum(&mut self, obj: VALUE, n: i64, limit: i32) -> Step {
        if core::fixnum_fits_i(n) {
            self.out.push(core::TYPE_FIXNUM);
            self.w_long(n);
            return Ok(());
        }
        // MRI writes it as a bignum, which takes a link index but is never linked to.
        // Ruby 3.1 writes that bignum one level deeper (so `limit` 1 raises "exceed depth
        // limit" there); 3.2+ writes it in place (`w_bigfixnum`) with no depth check.
        if limit == 1 && rb_sys::RUBY_API_VERSION_CODE < 30200 {
            return self.exceed_depth_limit();
        }
        let integer = unsafe { rb_sys::rb_cInteger };
        self.check_class(CHECK_INTEGER, obj, integer)?;
        let (shorts, count) = core::bignum_shorts(n.unsigned_abs());
        self.out.push(core::TYPE_BIGNUM);
        self.out.push(if n < 0 { b'-' } else { b'+' });
        self.w_long(count as i64);
        self.out.extend_from_slice(&shorts[..count * 2]);
        self.num_entries += 1;
        Ok(())
    }

    fn w_bignum(&mut self, obj: VALUE) -> Step {
        let nbytes = unsafe { rb_sys::rb_absint_size(obj, std::ptr::null_mut()) } as usize;
        let shorts = nbytes.div_ceil(2);
        if shorts > i32::MAX as usize {
            return Err(Fallback);
        }
        self.out.push(core::TYPE_BIGNUM);
        let sign_at = self.out.len();
        self.out.push(b'+');
        self.w_long(shorts as i64);
        let start = self.out.len();
        self.out.resize(start + shorts * 2, 0);
        let sign = unsafe {
            rb_sys::rb_integer_pack(
                obj,
                self.out[start..].as_mut_ptr() as *mut _,
                (shorts * 2) as _,
                1,
                0,
                rb_sys::INTEGER_PACK_LITTLE_ENDIAN as c_int,
            )
        };
        if sign < 0 {
            self.out[sign_at] = b'-';
        }
        Ok(())
    }

    fn w_hash(&mut self, obj: VALUE, klass: VALUE, limit: i32) -> Step {
        let uclass = self.uclass(obj, klass, unsafe { rb_sys::rb_cHash }, CHECK_HASH)?;
        if flags(obj) & FL_HASH_PROC_DEFAULT != 0 {
            return Err(Fallback); // MRI raises "can't dump hash with default proc"
        }
        let keywords = flags(obj) & FL_HASH_KEYWORDS != 0;
        let ivars = generic_ivar_count(obj)?;
        let ids = ids();
        // Both methods are the core ones (checked above): they read a field and return.
        let by_identity = unsafe { rb_sys::rb_funcall(obj, ids.compare_by_identity_p, 0) };
        let by_identity = by_identity != rb_sys::Qfalse as VALUE;
        let ifnone = unsafe { rb_sys::rb_funcall(obj, ids.default, 0) };
        self.remember(obj);
        self.enter()?;
        let num = ivars + usize::from(keywords);
        if num > 0 {
            self.out.push(core::TYPE_IVAR);
        }
        self.w_uclass(uclass)?;
        if by_identity {
            // MRI marks a compare_by_identity Hash as a `C` record of Hash itself.
            self.out.push(core::TYPE_UCLASS);
            self.w_symbol(ids.sym_hash)?;
        }
        self.out.push(if rb_sys::NIL_P(ifnone) {
            core::TYPE_HASH
        } else {
            core::TYPE_HASH_DEF
        });
        let size = unsafe { rb_sys::RHASH_SIZE(obj) };
        if size > MAX_LEN {
            return Err(Fallback);
        }
        self.w_long(size as i64);
        let mut walk = HashWalk {
            dumper: self,
            limit,
            failed: false,
        };
        // rb_hash_foreach raises if a dump hook resized the Hash: keep that out of Rust.
        let walked = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_hash_foreach(obj, Some(hash_each), &mut walk as *mut HashWalk as VALUE);
            rb_sys::Qnil as VALUE
        });
        let failed = walk.failed;
        if let Err(e) = walked {
            self.error = Some(e);
            return Err(Fallback);
        }
        if failed {
            return Err(Fallback);
        }
        if !rb_sys::NIL_P(ifnone) {
            self.w_object(ifnone, limit)?;
        }
        if num > 0 {
            self.w_long(num as i64);
            if keywords {
                // MRI's ruby2_keywords flag: a `K` ivar set to true.
                self.w_symbol(ids.sym_k)?;
                self.out.push(core::TYPE_TRUE);
            }
            self.w_generic_ivars(obj, ivars, limit)?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// MRI's `encoding_name` for a String or Symbol's string.
    #[inline]
    fn encoding_name(&self, s: VALUE) -> EncName {
        let idx = unsafe { rb_sys::rb_enc_get_index(s) };
        if idx <= 0 || unsafe { rb_sys::rb_enc_from_index(idx) }.is_null() {
            EncName::None
        } else if idx == self.usascii {
            EncName::UsAscii
        } else if idx == self.utf8 {
            EncName::Utf8
        } else {
            EncName::Other(idx)
        }
    }

    /// MRI's `w_encoding`: the `E`/`encoding` ivar name, then its value.
    fn w_encoding(&mut self, enc: EncName) -> Step {
        let ids = ids();
        match enc {
            EncName::None => Ok(()),
            EncName::UsAscii | EncName::Utf8 => {
                self.w_symbol(ids.sym_e)?;
                self.out.push(if matches!(enc, EncName::Utf8) {
                    core::TYPE_TRUE
                } else {
                    core::TYPE_FALSE
                });
                Ok(())
            }
            EncName::Other(idx) => {
                self.w_symbol(ids.sym_encoding)?;
                // The name is one String object per encoding per dump: written once,
                // linked afterwards.
                if let Some(&(_, index)) = self.enc_names.iter().find(|(i, _)| *i == idx) {
                    self.out.push(core::TYPE_LINK);
                    self.w_long(index as i64);
                    return Ok(());
                }
                let enc = unsafe { rb_sys::rb_enc_from_index(idx) };
                let name = unsafe { std::ffi::CStr::from_ptr((*enc).name) };
                self.enc_names.push((idx, self.num_entries));
                self.num_entries += 1;
                self.out.push(core::TYPE_STRING);
                core::write_bytes(&mut self.out, name.to_bytes());
                Ok(())
            }
        }
    }

    fn w_symbol(&mut self, sym: VALUE) -> Step {
        if let Some(index) = self.tables.lookup_symbol(sym) {
            self.out.push(core::TYPE_SYMLINK);
            self.w_long(index as i64);
            return Ok(());
        }
        let name = unsafe { rb_sys::rb_sym2str(sym) };
        if rb_sys::NIL_P(name) || name == 0 {
            return Err(Fallback);
        }
        let mut enc = self.encoding_name(name);
        if !matches!(enc, EncName::None)
            && unsafe { rb_sys::rb_enc_str_coderange(name) }
                == rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_7BIT as c_int
        {
            enc = EncName::None;
        }
        if !matches!(enc, EncName::None) {
            self.out.push(core::TYPE_IVAR);
        }
        self.out.push(core::TYPE_SYMBOL);
        core::write_bytes(&mut self.out, str_bytes(name));
        self.tables.insert_symbol(sym, self.num_symbols);
        self.num_symbols += 1;
        if !matches!(enc, EncName::None) {
            self.w_long(1);
            self.w_encoding(enc)?;
        }
        Ok(())
    }
}

/// The types whose records MRI starts with `e` records (through `w_class` or `w_uclass`
/// with the singleton check); other objects with a singleton class (classes, modules)
/// take their usual path.
fn extendable(builtin: T) -> bool {
    matches!(
        builtin,
        T::RUBY_T_OBJECT
            | T::RUBY_T_STRING
            | T::RUBY_T_REGEXP
            | T::RUBY_T_ARRAY
            | T::RUBY_T_HASH
            | T::RUBY_T_STRUCT
            | T::RUBY_T_DATA
    )
}

/// How an object with a singleton class is written (see `Dumper::singleton_record`).
enum SingletonRecord {
    /// A `U`/`u` record: the hook and the symbol of the real class.
    Hooked(DumpHook, VALUE),
    /// The record of its type, after `e` records: its real class.
    Extended(VALUE),
}

/// Extended objects (`e` records) and `_dump_data` objects (`d` records).
impl Dumper<'_> {
    /// How MRI writes an object whose class is the singleton class `singleton`: as a
    /// `U`/`u` record of its real class when the object answers a dump hook (from a module
    /// or a singleton method; no `e` records, no check of the singleton class), otherwise
    /// with `e` records (queued in `extensions`) before the record of its type, if the
    /// singleton class is bare (MRI raises "singleton can't be dumped" for methods or
    /// ivars on it: the stdlib's) and its modules are named and have nothing prepended.
    /// The hook question is asked once per real class and module chain.
    fn singleton_record(
        &mut self,
        obj: VALUE,
        singleton: VALUE,
        builtin: T,
    ) -> Result<SingletonRecord, Fallback> {
        if !self.extensions.is_empty() {
            return Err(Fallback);
        }
        let bare = extended::singleton_is_bare(singleton);
        let chain = extended::extension_modules(singleton);
        let known = bare
            && chain.as_ref().is_some_and(|(real, modules)| {
                self.plain_chains
                    .iter()
                    .any(|(r, m)| r == real && m == modules)
            });
        if !known {
            // Asking runs no Ruby code; a respond_to? override is the stdlib's.
            let hook = hooks::dump_hook(obj, singleton).ok_or(Fallback)?;
            if hook != DumpHook::None {
                let sym = self.path_symbol(unsafe { rb_sys::rb_class_real(singleton) })?;
                self.tables.pin(sym);
                return Ok(SingletonRecord::Hooked(hook, sym));
            }
            if !bare {
                return Err(Fallback);
            }
            // w_hash calls `default` and `compare_by_identity?`.
            if !hash_methods_are_core(singleton) {
                if builtin == T::RUBY_T_HASH {
                    return Err(Fallback);
                }
            } else if let Some((real, modules)) = &chain {
                // Pinned: a key must not be freed and its address reused during the dump.
                self.tables.pin(*real);
                modules.iter().for_each(|&m| self.tables.pin(m));
                self.plain_chains.push((*real, modules.clone()));
            }
        }
        let (real, modules) = chain.ok_or(Fallback)?;
        if builtin == T::RUBY_T_DATA
            && unsafe { rb_sys::rb_obj_respond_to(obj, data_ids().dump_data, 1) } == 0
        {
            return Err(Fallback); // MRI's "no _dump_data" TypeError: the stdlib's
        }
        let mut names = Vec::with_capacity(modules.len());
        for module in modules {
            names.push(self.extension_name(module)?);
        }
        self.extensions = names;
        Ok(SingletonRecord::Extended(real))
    }

    /// The symbol MRI writes in an `e` record for `module`, looked up once per dump.
    fn extension_name(&mut self, module: VALUE) -> Result<VALUE, Fallback> {
        let known = self.extension_names.iter().find(|(m, _)| *m == module);
        let sym = match known {
            Some(&(_, sym)) => sym,
            None => {
                let sym = if extended::without_prepends(module) {
                    self.new_extension_name(module)?
                } else {
                    0
                };
                self.tables.pin(module);
                self.extension_names.push((module, sym));
                sym
            }
        };
        if sym == 0 {
            return Err(Fallback);
        }
        Ok(sym)
    }

    fn new_extension_name(&mut self, module: VALUE) -> Result<VALUE, Fallback> {
        let Some(path) = extended::module_name(module) else {
            return Ok(0); // MRI raises for an anonymous module
        };
        self.tables.pin(path);
        let sym = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_intern(path) })
            .map_err(|_| Fallback)?;
        self.tables.pin(sym);
        Ok(sym)
    }

    /// The symbol of `klass`, the (real) class of a `d` object: no compat allocator, the
    /// core `respond_to?`, `_dump_data` answered, a name that leads back to it (MRI calls
    /// the hook before it finds a class unnamable; the stdlib will do both, once).
    /// Checked once per class; an extended object, whose modules may define
    /// `_dump_data`, is asked each time and not cached.
    fn data_class(&mut self, obj: VALUE, klass: VALUE) -> Result<VALUE, Fallback> {
        let cacheable = class_of(obj) == klass;
        if cacheable {
            if let Some(&(_, sym)) = self.data_classes.iter().find(|(k, _)| *k == klass) {
                return Ok(sym);
            }
        }
        if hooks::has_compat_allocator(klass)
            || !ids::respond_to_is_core(klass)
            || !ids::respond_to_is_core(class_of(obj))
            || unsafe { rb_sys::rb_obj_respond_to(obj, data_ids().dump_data, 1) } == 0
        {
            return Err(Fallback);
        }
        let sym = self.path_symbol(klass)?;
        self.tables.pin(sym);
        if cacheable {
            self.tables.pin(klass);
            self.data_classes.push((klass, sym));
        }
        Ok(sym)
    }

    /// Ruby 3.1's RuntimeError for ivars a `_dump_data` hook added or removed, naming the
    /// object's class by its `to_s` (as MRI's message format does).
    fn raise_ivars_changed(&mut self, obj: VALUE, added: bool) -> Fallback {
        let klass = class_of(obj);
        match magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_as_string(klass) }) {
            Ok(name) => {
                self.tables.pin(name);
                let name = String::from_utf8_lossy(str_bytes(name)).into_owned();
                let ruby = unsafe { Ruby::get_unchecked() };
                let message = if added {
                    format!("instance variable added to {name} instance")
                } else {
                    format!("instance variable removed from {name} instance")
                };
                self.error = Some(c_error(&ruby, ruby.exception_runtime_error(), &message));
            }
            Err(e) => self.error = Some(e),
        }
        Fallback
    }

    /// The queued `e` records of the object being written (MRI's `w_extended`).
    fn w_extensions(&mut self) -> Step {
        for sym in std::mem::take(&mut self.extensions) {
            self.out.push(core::TYPE_EXTENDED);
            self.w_symbol(sym)?;
        }
        Ok(())
    }

    /// A `d` record, as MRI writes a `T_DATA` object without `marshal_dump`/`_dump`:
    /// remembered, `_dump_data` called, then `I` if it has ivars, its `e` records, the
    /// class, the result and the ivars. Objects that don't answer `_dump_data` (MRI's
    /// TypeError) or whose class Marshal converts through a compat allocator are the
    /// stdlib's. A scan only remembers it.
    fn w_data(&mut self, obj: VALUE, klass: VALUE, limit: i32) -> Step {
        let ids = data_ids();
        let ivars = generic_ivar_count(obj)?;
        let sym = self.data_class(obj, klass)?;
        self.remember(obj);
        if self.scan {
            self.extensions.clear();
            return Ok(());
        }
        let extensions = std::mem::take(&mut self.extensions);
        self.ensure_scanned()?;
        self.enter()?;
        let v = self.call_hook(obj, ids.dump_data, "_dump_data", &[])?;
        // MRI counted the ivars before the hook: ones it adds to an object without any
        // are not written. Otherwise Ruby 3.1 raises when the count changed, 3.3 writes
        // the old count and then the ivars there are.
        if ivars > 0 && rb_sys::RUBY_API_VERSION_CODE < 30300 {
            let now = generic_ivar_count(obj)?;
            if now != ivars {
                return Err(self.raise_ivars_changed(obj, now > ivars));
            }
        }
        if ivars > 0 {
            self.out.push(core::TYPE_IVAR);
        }
        self.extensions = extensions;
        self.w_extensions()?;
        self.out.push(core::TYPE_DATA);
        self.w_symbol(sym)?;
        self.w_object(v, limit)?;
        if ivars > 0 {
            self.w_long(ivars as i64);
            self.w_generic_ivars(obj, ivars, limit)?;
        }
        self.depth -= 1;
        Ok(())
    }
}

/// MRI's RuntimeError text for a dump hook that returned an instance of the object's own
/// class (`CLASS_OF`, singletons included).
fn same_class_message(klass: VALUE, name: &str) -> String {
    let path = unsafe { rb_sys::rb_class_path(klass) };
    let class_name = String::from_utf8_lossy(str_bytes(path)).into_owned();
    // `path` is read above; on the stack until here, where the GC sees it.
    std::hint::black_box(path);
    format!("{class_name}#{name} returned same class instance")
}
