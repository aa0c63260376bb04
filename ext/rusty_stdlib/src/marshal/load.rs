//! The native `Marshal.load` from a String: the records `dump.rs` writes (nil, true,
//! false, `i`, `l`, `f`, `"`, `I"`, `:`, `I:`, `;`, `[`, `{`, `}`, `o`, `S` of named
//! `Struct.new` classes, `C`/`IC` of String, Array and Hash subclasses, `C:Hash` of
//! compare_by_identity Hashes, `Iu`/`u` of Time and of classes with `_load`, `U` of
//! classes with `marshal_load` and of Rational and Complex, `o:Range` and Range
//! subclasses, `/` and `I/` Regexps, `C` of Regexp subclasses, `e` extended objects, `d`
//! and `Id` of classes with `_load_data`, `I[`, `I{`, `IS` with instance variables or the
//! `K` flag, `@`), building the
//! objects MRI builds with the same C calls. Anything else, and any malformed or
//! truncated input, falls back and the stdlib loads the same bytes instead (raising its
//! own exception where the data is bad).
//!
//! Hooks: the first `U`/`u` record of a user class triggers a scan of the whole input
//! (hooks not called, see `Loader::scan`), so that bad or unsupported bytes anywhere go
//! to the stdlib before any hook has run. Hooks are called inside `protect`; once one
//! has run, inserts into containers it may have seen (or whose keys hash in Ruby) are
//! protected too, and what they raise is raised once the load has unwound.
//!
//! GC safety: every heap object we create goes into the link table (a marked TypedData),
//! `symbols`, `classes` or `kept` (Ruby Arrays), all held on the stack, before the next
//! allocation; the source bytes are copied into a Rust buffer first, so a moving GC
//! cannot pull them away.

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_long};
use std::sync::OnceLock;

use magnus::rb_sys::{AsRawValue, FromRawValue};
use magnus::{gc, typed_data::Obj, value::Lazy, DataTypeFunctions, Error, Ruby, TypedData, Value};
use rb_sys::VALUE;
use rusty_core::marshal::{self as core, Reader};

use super::classes;
use super::extended::{self, data_ids};
use super::hooks;
use super::ids::{self, ids};
use super::key_cache::KeyCache;
use super::proc_load;
use crate::helpers::raw::{class_of, set_encoding_index};
use crate::helpers::reentry::{raise_second_return, HookCall};

const MAX_DEPTH: u32 = 1000;

struct Fallback;

type Load<T> = Result<T, Fallback>;

/// MRI's `arg->data` (objects by link index), in a TypedData whose `mark` marks (and
/// pins) every entry: cheaper than a Ruby Array, which needs a write barrier per push.
#[derive(TypedData)]
#[magnus(class = "RustyStdlib::Marshal::LoadTable", free_immediately, mark)]
pub struct LoadTable {
    // Touched only by `Loader` between Ruby calls and by `mark` inside them.
    links: UnsafeCell<Vec<VALUE>>,
}

// SAFETY: plain integers, used only by the thread that holds the GVL.
unsafe impl Send for LoadTable {}

impl DataTypeFunctions for LoadTable {
    fn mark(&self, _marker: &gc::Marker) {
        for &v in unsafe { &*self.links.get() } {
            if !rb_sys::SPECIAL_CONST_P(v) {
                unsafe { rb_sys::rb_gc_mark(v) };
            }
        }
    }
}

struct Loader<'a> {
    r: Reader<'a>,
    /// The whole input after the version bytes (a scan reads it again from the start).
    source: &'a [u8],
    /// A scan: `U` and `u` records of user classes are read but their hooks are not
    /// called (their objects are nil). A load runs one over the whole input before it
    /// calls the first hook, so that anything outside the native subset (or malformed)
    /// sends the call to the stdlib while no Ruby code has run yet.
    scan: bool,
    /// Whether the scan ran (and passed).
    scanned: bool,
    /// Whether Ruby code (a load hook) has run.
    committed: bool,
    /// Regexps compiled with their warnings held back, in order: their source Strings
    /// (kept) and options (see `compile_regexp`).
    quiet_regexps: Vec<(VALUE, c_int)>,
    /// The exception to raise: one a hook raised.
    error: Option<Error>,
    /// Interned String keys of this load, by content.
    keys: KeyCache,
    /// The depth of an `I` record whose object must not be frozen before its ivars are
    /// set (MRI's `partial`); 0 for none.
    no_freeze_at: u32,
    /// The next Hash record is a compare_by_identity one (`C:Hash`).
    ident_hash: bool,
    /// MRI's `arg->data`: objects by link index.
    table: &'a LoadTable,
    /// MRI's `arg->symbols`: symbols by symlink index (nil while being read).
    symbols: VALUE,
    /// Whether each symbol was read without an encoding ivar (only those can name one).
    plain_symbols: Vec<bool>,
    /// Classes of `o` records resolved so far: [symbol, class, ...] (0 until needed).
    classes: VALUE,
    /// Objects MRI makes but does not enter in its tables (0 until needed).
    kept: VALUE,
    /// Whether `Time._load` was found to be the core one.
    time_checked: bool,
    /// Whether Array and Hash were found to hash and compare with the core methods.
    containers_hash_checked: bool,
    /// Modules of `e` records and classes of `d` records resolved and checked so far.
    extended: extended::LoadCache,
    freeze: bool,
    /// A load proc (`Marshal.load(source, proc)`), see `proc_load.rs`.
    proc: Option<VALUE>,
    /// MRI's `partial_objects` while a proc is given: objects being read, which a link
    /// returns without calling the proc.
    in_progress: Vec<VALUE>,
    /// Loading what was read from an IO port: the port's own Strings MRI makes String
    /// records of, as a Ruby Array [offset, String, ...] (0 for none), see `port.rs`.
    direct: VALUE,
    next_direct: c_long,
    depth: u32,
    utf8: c_int,
    usascii: c_int,
}

/// How a native load ended.
pub enum Outcome {
    Done(Value),
    /// The stdlib must load the input. If load hooks already ran (only when Ruby code
    /// changed what the scan had found loadable), the stdlib runs them again.
    Fallback,
    Raise(Error),
}

impl Outcome {
    /// What the Ruby entry points return: the object, `fallback` to ask for the stdlib,
    /// or the error raised.
    pub fn or_fallback(self, fallback: Value) -> Result<Value, Error> {
        match self {
            Outcome::Done(value) => Ok(value),
            Outcome::Raise(error) => Err(error),
            Outcome::Fallback => Ok(fallback),
        }
    }
}

/// The object `source` holds, or how the load ended otherwise.
pub fn load(ruby: &Ruby, source: Value, freeze: bool) -> Outcome {
    load_with(ruby, source, freeze, None, 0)
}

/// The object `source` holds, loaded with `proc` called as MRI calls it (None: no proc),
/// and with the port's Strings `direct` (0: none) as the String records at their offsets.
pub fn load_with(
    ruby: &Ruby,
    source: Value,
    freeze: bool,
    proc: Option<VALUE>,
    direct: VALUE,
) -> Outcome {
    let raw = source.as_raw();
    if unsafe { !rb_sys::RB_TYPE_P(raw, rb_sys::ruby_value_type::RUBY_T_STRING) } {
        return Outcome::Fallback;
    }
    let data = unsafe {
        let len = rb_sys::RSTRING_LEN(raw) as usize;
        if len == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(rb_sys::RSTRING_PTR(raw) as *const u8, len).to_vec()
        }
    };
    if data.len() < 2 || data[0] != core::MAJOR || data[1] != core::MINOR {
        return Outcome::Fallback;
    }
    match run(ruby, &data[2..], freeze, false, proc, direct) {
        (Ok(v), _) => Outcome::Done(unsafe { Value::from_raw(v) }),
        (Err(Some(error)), _) => Outcome::Raise(error),
        (Err(None), _) => Outcome::Fallback,
    }
}

/// One pass over `source` (a scan or a load): the object, or the exception to raise
/// (`None`: fall back), and whether Ruby code ran.
fn run(
    ruby: &Ruby,
    source: &[u8],
    freeze: bool,
    scan: bool,
    proc: Option<VALUE>,
    direct: VALUE,
) -> (Result<VALUE, Option<Error>>, bool) {
    let table: Obj<LoadTable> = ruby.obj_wrap(LoadTable {
        links: UnsafeCell::new(Vec::with_capacity(16)),
    });
    let symbols = unsafe { rb_sys::rb_ary_new() };
    let mut loader = Loader {
        r: Reader::new(source),
        source,
        scan,
        scanned: scan,
        committed: false,
        quiet_regexps: Vec::new(),
        error: None,
        keys: KeyCache::new(),
        no_freeze_at: 0,
        ident_hash: false,
        table: &table,
        symbols,
        plain_symbols: Vec::new(),
        classes: 0,
        kept: 0,
        time_checked: false,
        containers_hash_checked: false,
        extended: extended::LoadCache::default(),
        freeze,
        proc,
        in_progress: Vec::new(),
        direct,
        next_direct: 0,
        depth: 0,
        utf8: unsafe { rb_sys::rb_utf8_encindex() },
        usascii: unsafe { rb_sys::rb_usascii_encindex() },
    };
    let mut result = loader.r_object();
    if result.is_ok() && !scan {
        result = loader.replay_regexp_warnings().and(result);
    }
    // The tables must outlive every object they protect.
    std::hint::black_box((
        &table,
        symbols,
        loader.classes,
        loader.kept,
        loader.keys.strings(),
    ));
    // Then the link table's memory goes back at once, while still in cache, not when
    // the GC sweeps its wrapper (see `dump::run`).
    // SAFETY: the loader is done with it, and this runs no Ruby code (so no `mark`).
    unsafe { *table.links.get() = Vec::new() };
    match result {
        Ok(v) => (Ok(v), loader.committed),
        Err(Fallback) => (Err(loader.error.take()), loader.committed),
    }
}

/// Runs `f` with `$VERBOSE` nil, which silences every Ruby warning, then puts it back.
/// `f` must not raise (run it under `protect`).
fn with_warnings_off<T>(f: impl FnOnce() -> T) -> T {
    unsafe {
        let verbose = rb_sys::rb_ruby_verbose_ptr();
        let saved = *verbose;
        *verbose = rb_sys::Qnil as VALUE;
        let result = f();
        *verbose = saved;
        result
    }
}

/// MRI's `r_copy_ivar` step: an ivar of `marshal_load`'s argument the new object lacks.
unsafe extern "C" fn copy_ivar(id: rb_sys::ID, value: VALUE, obj: rb_sys::st_data_t) -> c_int {
    let obj = obj as VALUE;
    if rb_sys::rb_ivar_defined(obj, id) == rb_sys::Qfalse as VALUE {
        rb_sys::rb_ivar_set(obj, id, value);
    }
    rb_sys::st_retval::ST_CONTINUE as c_int
}

extern "C" {
    fn dlsym(handle: *mut std::ffi::c_void, symbol: *const c_char) -> *mut std::ffi::c_void;
}

type HashNewCapa = unsafe extern "C" fn(c_long) -> VALUE;

/// `rb_hash_new_capa` (3.2+) or `rb_hash_new_with_size` (3.1), which MRI's loader uses
/// to size hashes; plain `rb_hash_new` if neither is exported.
fn new_hash(len: i64) -> VALUE {
    static CAPA: OnceLock<Option<HashNewCapa>> = OnceLock::new();
    let capa = CAPA.get_or_init(|| {
        for name in [c"rb_hash_new_capa", c"rb_hash_new_with_size"] {
            // SAFETY: RTLD_DEFAULT (null) searches the loaded libruby; both functions
            // take one integer and return a VALUE.
            let f = unsafe { dlsym(std::ptr::null_mut(), name.as_ptr()) };
            if !f.is_null() {
                return Some(unsafe {
                    std::mem::transmute::<*mut std::ffi::c_void, HashNewCapa>(f)
                });
            }
        }
        None
    });
    match capa {
        Some(f) => unsafe { f(len as c_long) },
        None => unsafe { rb_sys::rb_hash_new() },
    }
}

/// MRI's `RTEST(rb_struct_s_keyword_init(klass))` (not exported): the hidden
/// `__keyword_init__` ivar of the class or its nearest Struct superclass that has one.
fn struct_keyword_init(klass: VALUE) -> bool {
    static ID_KEYWORD_INIT: OnceLock<rb_sys::ID> = OnceLock::new();
    let id =
        *ID_KEYWORD_INIT.get_or_init(|| unsafe { rb_sys::rb_intern(c"__keyword_init__".as_ptr()) });
    let mut c = klass;
    loop {
        let v = unsafe { rb_sys::rb_attr_get(c, id) };
        if !rb_sys::NIL_P(v) {
            return rb_sys::TEST(v);
        }
        c = unsafe { rb_sys::rb_class_superclass(c) };
        if rb_sys::NIL_P(c) || c == unsafe { rb_sys::rb_cStruct } {
            return false;
        }
    }
}

/// Whether instances of `klass` hash and compare with the core `hash` / `eql?`, so that
/// using one as a Hash key runs no Ruby code.
fn core_hashing(klass: VALUE) -> bool {
    let ids = ids();
    unsafe {
        rb_sys::rb_method_basic_definition_p(klass, ids.hash) != 0
            && rb_sys::rb_method_basic_definition_p(klass, ids.eql_p) != 0
    }
}

fn is_bignum(v: VALUE) -> bool {
    unsafe { rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_BIGNUM) }
}

/// Whether `Range.new(beg, end)` would compare them without running Ruby code: Fixnums
/// or a nil end (no comparison), or Strings, Integers or Floats of the core classes whose
/// `<=>` is the core one.
fn core_comparison(beg: VALUE, end: VALUE) -> bool {
    if (rb_sys::FIXNUM_P(beg) && rb_sys::FIXNUM_P(end)) || rb_sys::NIL_P(beg) || rb_sys::NIL_P(end)
    {
        return true;
    }
    static CMP: OnceLock<rb_sys::ID> = OnceLock::new();
    let cmp = *CMP.get_or_init(|| unsafe { rb_sys::rb_intern(c"<=>".as_ptr()) });
    let core = |v: VALUE| -> Option<VALUE> {
        let klass = if rb_sys::FIXNUM_P(v) || is_bignum(v) {
            unsafe { rb_sys::rb_cInteger }
        } else if rb_sys::FLONUM_P(v)
            || (!rb_sys::SPECIAL_CONST_P(v)
                && unsafe { rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_FLOAT) })
        {
            unsafe { rb_sys::rb_cFloat }
        } else if !rb_sys::SPECIAL_CONST_P(v)
            && unsafe { rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_STRING) }
            && class_of(v) == unsafe { rb_sys::rb_cString }
        {
            unsafe { rb_sys::rb_cString }
        } else {
            return None;
        };
        (unsafe { rb_sys::rb_method_basic_definition_p(klass, cmp) } != 0).then_some(klass)
    };
    core(beg).is_some() && core(end).is_some()
}

/// What a scan has in place of a load hook's result, which it does not call: an object
/// of no type the loader treats specially. A check that depends on a value's type (a
/// Time's `zone` ivar must be a String, a Range endpoint's `<=>` the core one, ...) then
/// fails in the scan, where the load can still go to the stdlib, and not only after a
/// hook has run (nil stood in before, and passed checks the real result may not). Frozen
/// and never given to Ruby code.
fn hook_result_placeholder() -> VALUE {
    static PLACEHOLDER: Lazy<Value> = Lazy::new(|_ruby| unsafe {
        let obj = rb_sys::rb_obj_alloc(rb_sys::rb_cObject);
        rb_sys::rb_obj_freeze(obj);
        Value::from_raw(obj)
    });
    unsafe { Ruby::get_unchecked() }
        .get_inner(&PLACEHOLDER)
        .as_raw()
}

fn range_initialize_id() -> rb_sys::ID {
    static ID: OnceLock<rb_sys::ID> = OnceLock::new();
    *ID.get_or_init(|| unsafe { rb_sys::rb_intern(c"initialize".as_ptr()) })
}

/// Whether instances of the Range subclass `klass` initialize with Range's own
/// `initialize` (a C method), which MRI's compat loader runs the equivalent of.
fn range_initialize_is_core(klass: VALUE) -> bool {
    unsafe { rb_sys::rb_method_basic_definition_p(klass, range_initialize_id()) != 0 }
}

/// What the instances of a class named in an `o` or `S` record are, as far as loading
/// them natively goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClassKind {
    /// Anything we leave to the stdlib.
    Other = 0,
    /// Plain `T_OBJECT`s with core hashing: `o` records.
    Plain = 1,
    /// `Struct.new` instances with core hashing: `S` records.
    Struct = 2,
    /// Strict subclasses of String, Array, Hash with core hashing: `C` records.
    StringSub = 3,
    ArraySub = 4,
    HashSub = 5,
    /// Range itself (its `o` records go through Range's compat loader).
    Range = 6,
    /// Exceptions: `o` records whose ivar names need no `@`.
    Exception = 7,
    /// Range subclasses whose `initialize` is Range's (their `o` records go through
    /// Range's compat loader, which initializes a new instance of the subclass).
    RangeSub = 8,
    /// Strict subclasses of Regexp with core hashing: `C` records.
    RegexpSub = 9,
}

/// Which core class `klass` strictly inherits from, for a `C` record.
fn core_subclass_kind(klass: VALUE) -> Option<ClassKind> {
    let bases = unsafe {
        [
            (rb_sys::rb_cString, ClassKind::StringSub),
            (rb_sys::rb_cArray, ClassKind::ArraySub),
            (rb_sys::rb_cHash, ClassKind::HashSub),
            (rb_sys::rb_cRegexp, ClassKind::RegexpSub),
        ]
    };
    bases.into_iter().find_map(|(base, kind)| {
        (klass != base
            && unsafe { rb_sys::rb_class_inherited_p(klass, base) } == rb_sys::Qtrue as VALUE)
            .then_some(kind)
    })
}

impl ClassKind {
    fn from_code(code: c_long) -> ClassKind {
        match code {
            1 => ClassKind::Plain,
            2 => ClassKind::Struct,
            3 => ClassKind::StringSub,
            4 => ClassKind::ArraySub,
            5 => ClassKind::HashSub,
            6 => ClassKind::Range,
            8 => ClassKind::RangeSub,
            9 => ClassKind::RegexpSub,
            7 => ClassKind::Exception,
            _ => ClassKind::Other,
        }
    }
}

#[inline]
fn qnil() -> VALUE {
    rb_sys::Qnil as VALUE
}

impl<'a> Loader<'a> {
    #[inline]
    fn byte(&mut self) -> Load<u8> {
        self.r.byte().ok_or(Fallback)
    }

    #[inline]
    fn long(&mut self) -> Load<i64> {
        self.r.read_long().ok_or(Fallback)
    }

    /// Fills a link index reserved earlier.
    #[inline]
    fn set_entry(&mut self, slot: usize, v: VALUE) {
        let links = unsafe { &mut *self.table.links.get() };
        links[slot] = v;
    }

    #[inline]
    fn entry(&mut self, v: VALUE) {
        unsafe { &mut *self.table.links.get() }.push(v);
    }

    /// The link index the next entered object gets.
    #[inline]
    fn next_slot(&self) -> usize {
        unsafe { &*self.table.links.get() }.len()
    }

    /// MRI's `r_leave` for a finished String entered at `slot`: with `freeze` (and not
    /// inside a record that freezes it later), its interned copy. From Ruby 3.4 on, later
    /// links to it give that copy too (3.1 and 3.3 give the unfrozen String first read).
    #[inline]
    fn leave_string(&mut self, s: VALUE, slot: usize) -> VALUE {
        if !self.freezes_here() {
            return s;
        }
        let interned = unsafe { rb_sys::rb_str_to_interned_str(s) };
        if rb_sys::RUBY_API_VERSION_CODE >= 30400 && interned != s {
            self.set_entry(slot, interned);
        }
        interned
    }

    /// MRI's `r_object`, depth-bounded: every nested record passes through here or
    /// through `r_symreal` with ivars, and both count.
    fn r_object(&mut self) -> Load<VALUE> {
        self.enter()?;
        let t = self.byte()?;
        let v = self.r_object_of(t);
        self.depth -= 1;
        match self.proc {
            None => v,
            Some(_) => self.leave_with_proc(t, v?),
        }
    }

    fn r_object_of(&mut self, t: u8) -> Load<VALUE> {
        if self.proc.is_some() && !proc_load::supported(t) {
            return Err(Fallback);
        }
        match t {
            core::TYPE_NIL => Ok(qnil()),
            core::TYPE_TRUE => Ok(rb_sys::Qtrue as VALUE),
            core::TYPE_FALSE => Ok(rb_sys::Qfalse as VALUE),
            core::TYPE_FIXNUM => {
                let n = self.long()?;
                Ok(unsafe { rb_sys::LONG2FIX(n as c_long) })
            }
            core::TYPE_FLOAT => {
                let text = self.r.read_bytes().ok_or(Fallback)?;
                let d = core::parse_float(text).ok_or(Fallback)?;
                let v = crate::helpers::float::new(d);
                self.entry(v);
                Ok(v)
            }
            core::TYPE_BIGNUM => {
                let sign = self.byte()?;
                // Ruby 3.4 raises "invalid Bignum sign" for anything else; the stdlib says it.
                if rb_sys::RUBY_API_VERSION_CODE >= 30400 && sign != b'+' && sign != b'-' {
                    return Err(Fallback);
                }
                let len = self.long()?;
                if len < 0 {
                    return Err(Fallback);
                }
                let bytes = self.r.bytes(len as usize * 2).ok_or(Fallback)?;
                let mut flags = rb_sys::INTEGER_PACK_LITTLE_ENDIAN;
                if sign == b'-' {
                    flags |= rb_sys::INTEGER_PACK_NEGATIVE;
                }
                let v = unsafe {
                    rb_sys::rb_integer_unpack(
                        bytes.as_ptr() as *const _,
                        len as _,
                        2,
                        0,
                        flags as c_int,
                    )
                };
                self.entry(v);
                Ok(v)
            }
            core::TYPE_STRING => {
                let slot = self.next_slot();
                let s = self.r_string()?;
                Ok(self.leave_string(s, slot))
            }
            core::TYPE_IVAR => match self.byte()? {
                t if self.proc.is_some() && !proc_load::supported_in_ivar(t) => Err(Fallback),
                core::TYPE_STRING => {
                    let slot = self.next_slot();
                    let s = self.r_string_with_ivars(0)?;
                    Ok(self.leave_string(s, slot))
                }
                core::TYPE_SYMBOL => self.r_symreal(true),
                core::TYPE_USERDEF => self.r_userdef(true),
                core::TYPE_UCLASS => self.r_uclass(true),
                core::TYPE_REGEXP => self.r_regexp(true),
                core::TYPE_EXTENDED => self.r_extended(true),
                core::TYPE_DATA => {
                    let v = self.r_data(false, true)?;
                    self.r_ivars(v)?;
                    if self.freezes_here() {
                        unsafe { rb_sys::rb_obj_freeze(v) };
                    }
                    Ok(v)
                }
                t @ (core::TYPE_ARRAY
                | core::TYPE_HASH
                | core::TYPE_HASH_DEF
                | core::TYPE_STRUCT) => {
                    let v = self.r_partial(t)?;
                    self.r_ivars(v)?;
                    if self.freezes_here() {
                        unsafe { rb_sys::rb_obj_freeze(v) };
                    }
                    self.end_partial(v);
                    Ok(v)
                }
                _ => Err(Fallback),
            },
            core::TYPE_REGEXP => self.r_regexp(false),
            core::TYPE_UCLASS => self.r_uclass(false),
            core::TYPE_USERDEF => self.r_userdef(false),
            core::TYPE_USRMARSHAL => self.r_usrmarshal(),
            core::TYPE_EXTENDED => self.r_extended(false),
            core::TYPE_DATA => self.r_data(false, false),
            core::TYPE_SYMBOL => self.r_symreal(false),
            core::TYPE_SYMLINK => self.r_symlink().map(|(sym, _)| sym),
            core::TYPE_LINK => {
                let index = self.long()?;
                let links = unsafe { &*self.table.links.get() };
                let len = links.len() as i64;
                if index < 0 || index >= len {
                    return Err(Fallback);
                }
                let v = links[index as usize];
                if v == rb_sys::Qundef as VALUE {
                    return Err(Fallback); // an object still being read (see `r_range`)
                }
                Ok(v)
            }
            core::TYPE_ARRAY => {
                let len = self.long()?;
                if len < 0 || len as u64 > self.r.remaining() as u64 {
                    return Err(Fallback);
                }
                let ary = unsafe { rb_sys::rb_ary_new_capa(len as c_long) };
                self.entry(ary);
                self.begin_partial(ary);
                for _ in 0..len {
                    let item = self.r_object()?;
                    self.guarded(|| unsafe { rb_sys::rb_ary_push(ary, item) })?;
                }
                if self.freezes_here() {
                    unsafe { rb_sys::rb_obj_freeze(ary) };
                }
                self.end_partial_unless_wrapped(ary);
                Ok(ary)
            }
            core::TYPE_HASH | core::TYPE_HASH_DEF => {
                let len = self.long()?;
                if len < 0 || len as u64 > self.r.remaining() as u64 / 2 {
                    return Err(Fallback);
                }
                let ident = std::mem::take(&mut self.ident_hash);
                let hash = new_hash(len);
                if ident {
                    // MRI makes it with rb_ident_hash_new_with_size (not exported); the
                    // core compare_by_identity on an empty Hash is the same (checked).
                    magnus::rb_sys::protect(|| unsafe {
                        rb_sys::rb_funcall(hash, ids().compare_by_identity, 0)
                    })
                    .map_err(|_| Fallback)?;
                }
                self.entry(hash);
                self.begin_partial(hash);
                for _ in 0..len {
                    let key = self.r_object()?;
                    let value = self.r_object()?;
                    self.check_key_hashing(key)?;
                    // An identity Hash keeps String keys as they are.
                    let key = if ident { key } else { self.keys.key_for(key) };
                    // After a hook ran, a key may hash with Ruby code (or the Hash be frozen).
                    self.guarded(|| unsafe {
                        rb_sys::rb_hash_aset(hash, key, value);
                        qnil()
                    })?;
                }
                if t == core::TYPE_HASH_DEF {
                    let ifnone = self.r_object()?;
                    unsafe { rb_sys::rb_hash_set_ifnone(hash, ifnone) };
                }
                if self.freezes_here() {
                    unsafe { rb_sys::rb_obj_freeze(hash) };
                }
                self.end_partial_unless_wrapped(hash);
                Ok(hash)
            }
            core::TYPE_OBJECT => self.r_plain_object(),
            core::TYPE_STRUCT => self.r_struct(),
            core::TYPE_CLASS | core::TYPE_MODULE => {
                let path = self.r.read_bytes().ok_or(Fallback)?;
                let v = classes::resolve_path(path).ok_or(Fallback)?;
                let want = if t == core::TYPE_CLASS {
                    rb_sys::ruby_value_type::RUBY_T_CLASS
                } else {
                    rb_sys::ruby_value_type::RUBY_T_MODULE
                };
                if unsafe { !rb_sys::RB_TYPE_P(v, want) } || !core_hashing(class_of(v)) {
                    return Err(Fallback);
                }
                self.entry(v);
                Ok(v)
            }
            _ => Err(Fallback),
        }
    }

    /// A `u` record of the core Time (the only `_load` class read natively): the String,
    /// its ivars (the internal names `Time#_dump` writes, with the types it writes, and
    /// the Time's own `@` ivars, which `Time._load` copies), then `Time._load`; the Time
    /// takes its link index after the ivar values.
    fn r_time(&mut self, with_ivars: bool) -> Load<VALUE> {
        let ids = ids();
        if !self.time_checked {
            if !ids::core_time_load() {
                return Err(Fallback);
            }
            self.time_checked = true;
        }
        let bytes = self.r.read_bytes().ok_or(Fallback)?;
        let data =
            unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const c_char, bytes.len() as c_long) };
        self.keep(data);
        if with_ivars {
            let count = self.long()?;
            for _ in 0..count {
                let (name, plain) = self.r_symbol()?;
                let id = unsafe { rb_sys::SYM2ID(name) };
                if !plain || !ids.time_ivars.contains(&id) {
                    // The Time's own ivars, which `Time._load` copies from the String.
                    if !plain || unsafe { rb_sys::rb_is_instance_id(id) } == 0 {
                        return Err(Fallback);
                    }
                    let value = self.r_object()?;
                    unsafe { rb_sys::rb_ivar_set(data, id, value) };
                    continue;
                }
                let value = self.r_object()?;
                let ok = if id == ids.time_ivars[1] {
                    rb_sys::NIL_P(value)
                        || unsafe {
                            rb_sys::RB_TYPE_P(value, rb_sys::ruby_value_type::RUBY_T_STRING)
                        }
                } else if id == ids.time_ivars[4] {
                    unsafe { rb_sys::RB_TYPE_P(value, rb_sys::ruby_value_type::RUBY_T_STRING) }
                } else {
                    rb_sys::FIXNUM_P(value)
                        || unsafe {
                            rb_sys::RB_TYPE_P(value, rb_sys::ruby_value_type::RUBY_T_BIGNUM)
                        }
                };
                if !ok {
                    return Err(Fallback);
                }
                unsafe { rb_sys::rb_ivar_set(data, id, value) };
            }
        }
        let time = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_funcall(rb_sys::rb_cTime, ids.underscore_load, 1, data)
        })
        .map_err(|_| Fallback)?;
        self.entry(time);
        if self.freezes_user_type(with_ivars) {
            unsafe { rb_sys::rb_obj_freeze(time) };
        }
        Ok(time)
    }

    /// Whether `freeze: true` freezes the result of a `u` record's `_load` (a Time's
    /// included): Ruby 3.1 freezes it only through the `I` wrapper's r_leave, so not
    /// without ivars; 3.3 always.
    fn freezes_user_type(&self, with_ivars: bool) -> bool {
        self.freeze && (with_ivars || rb_sys::RUBY_API_VERSION_CODE >= 30300)
    }

    /// Inserting a Hash key calls its `hash` (and maybe `eql?`) methods unless it is a
    /// String, Symbol or number. Every class and Time we load was checked to have the core
    /// ones; Array, Hash and Struct keys (which hash their elements) need Array's and
    /// Hash's too.
    fn check_key_hashing(&mut self, key: VALUE) -> Load<()> {
        if self.containers_hash_checked || rb_sys::SPECIAL_CONST_P(key) {
            return Ok(());
        }
        if self.proc.is_some() && self.committed {
            // A proc gave this key: MRI hashes it (Ruby code or not); so do we, guarded.
            return Ok(());
        }
        let t = unsafe { rb_sys::RB_BUILTIN_TYPE(key) };
        if t == rb_sys::ruby_value_type::RUBY_T_ARRAY
            || t == rb_sys::ruby_value_type::RUBY_T_HASH
            || t == rb_sys::ruby_value_type::RUBY_T_STRUCT
        {
            if !core_hashing(unsafe { rb_sys::rb_cArray })
                || !core_hashing(unsafe { rb_sys::rb_cHash })
            {
                return Err(Fallback);
            }
            self.containers_hash_checked = true;
        }
        Ok(())
    }

    /// A `u` record: Time's (the core `_load`, read field by field) or a user class's
    /// `_load` called with the String and its ivars; the result takes its link index.
    fn r_userdef(&mut self, with_ivars: bool) -> Load<VALUE> {
        let (class_sym, _) = self.r_symbol()?;
        if class_sym == ids().sym_time {
            return self.r_time(with_ivars);
        }
        let (klass, _) = self.named_class(class_sym)?;
        if !hooks::underscore_load_class(klass) {
            return Err(Fallback);
        }
        let bytes = self.r.read_bytes().ok_or(Fallback)?;
        let data =
            unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const c_char, bytes.len() as c_long) };
        self.keep(data);
        if with_ivars {
            self.r_string_ivars(data)?;
        }
        if self.scan {
            let placeholder = hook_result_placeholder();
            self.entry(placeholder);
            return Ok(placeholder);
        }
        self.ensure_scanned()?;
        let v = self.call_hook(klass, ids().underscore_load, data)?;
        self.entry(v);
        if self.freezes_user_type(with_ivars) {
            if unsafe { rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_STRING) } {
                return Err(Fallback); // MRI may intern it: the stdlib's
            }
            unsafe { rb_sys::rb_obj_freeze(v) };
        }
        Ok(v)
    }

    /// A `U` record: MRI allocates the object, gives it its link index, reads the data,
    /// calls `marshal_load` with it, then copies the data's ivars the object lacks.
    fn r_usrmarshal(&mut self) -> Load<VALUE> {
        let (class_sym, _) = self.r_symbol()?;
        let (klass, _) = self.named_class(class_sym)?;
        if klass == unsafe { rb_sys::rb_cRational } || klass == unsafe { rb_sys::rb_cComplex } {
            return self.r_numeric_pair(klass);
        }
        if !hooks::marshal_load_class(klass) {
            return Err(Fallback);
        }
        if self.scan {
            // Nothing of a user class exists (or hashes) during a scan.
            let placeholder = hook_result_placeholder();
            self.entry(placeholder);
            self.r_object()?;
            return Ok(placeholder);
        }
        self.ensure_scanned()?;
        let v = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_alloc(klass) })
            .map_err(|_| Fallback)?;
        self.entry(v);
        if unsafe { rb_sys::rb_obj_respond_to(v, ids().marshal_load, 1) } == 0 {
            return Err(Fallback); // MRI's TypeError: the stdlib's
        }
        let data = self.r_object()?;
        self.call_hook(v, ids().marshal_load, data)?;
        if !rb_sys::SPECIAL_CONST_P(data) {
            self.guarded(|| unsafe {
                rb_sys::rb_ivar_foreach(data, Some(copy_ivar), v as rb_sys::st_data_t);
                qnil()
            })?;
        }
        // Ruby 3.1 leaves a `U` object unfrozen under `freeze: true`; 3.3 freezes it.
        if self.freeze && rb_sys::RUBY_API_VERSION_CODE >= 30300 {
            unsafe { rb_sys::rb_obj_freeze(v) };
        }
        Ok(v)
    }

    /// The ivars of a `u` record's String: its encoding, or plain ivars set on it.
    fn r_string_ivars(&mut self, s: VALUE) -> Load<()> {
        let ids = ids();
        let count = self.long()?;
        for _ in 0..count {
            let (name, plain) = self.r_symbol()?;
            let value = self.r_object()?;
            if !self.set_encoding_ivar(s, name, plain, value)? {
                let id = unsafe { rb_sys::SYM2ID(name) };
                if id == ids.id_k {
                    return Err(Fallback); // MRI's ArgumentError (not a Hash): the stdlib's
                }
                unsafe { rb_sys::rb_ivar_set(s, id, value) };
            }
        }
        Ok(())
    }

    /// Before the first load hook runs: scan the whole input (see `scan`).
    fn ensure_scanned(&mut self) -> Load<()> {
        if self.scanned {
            return Ok(());
        }
        let ruby = unsafe { Ruby::get_unchecked() };
        match run(&ruby, self.source, self.freeze, true, self.proc, 0) {
            (Ok(_), _) => {
                self.scanned = true;
                Ok(())
            }
            _ => Err(Fallback),
        }
    }

    /// Calls a load hook with one argument; an exception it raises is re-raised once the
    /// load has unwound.
    fn call_hook(&mut self, recv: VALUE, mid: rb_sys::ID, arg: VALUE) -> Load<VALUE> {
        if !self.committed {
            self.replay_regexp_warnings()?;
        }
        self.committed = true;
        let args = [arg];
        let call = HookCall::start();
        let result =
            magnus::rb_sys::protect(|| unsafe { rb_sys::rb_funcallv(recv, mid, 1, args.as_ptr()) });
        if !call.first_return() {
            // A continuation came back into a load that has ended (see helpers::reentry).
            unsafe { raise_second_return(result, reentered_message(mid)) }
        }
        match result {
            Ok(v) => Ok(v),
            Err(e) => {
                self.error = Some(e);
                Err(Fallback)
            }
        }
    }

    /// Runs `f`, which may raise only once Ruby code has had the loaded objects in hand
    /// (a hook froze a container, a key hashes in Ruby): then inside `protect`.
    #[inline]
    fn guarded(&mut self, f: impl FnOnce() -> VALUE) -> Load<VALUE> {
        if !self.committed {
            return Ok(f());
        }
        magnus::rb_sys::protect(f).map_err(|e| {
            self.error = Some(e);
            Fallback
        })
    }

    /// Holds `v` for the rest of the load (objects MRI does not enter in its tables).
    fn keep(&mut self, v: VALUE) {
        if self.kept == 0 {
            self.kept = unsafe { rb_sys::rb_ary_new() };
        }
        unsafe { rb_sys::rb_ary_push(self.kept, v) };
    }

    /// An `o` record of Range, as MRI's compat loader reads it: the ivars `excl`, `begin`
    /// and `end` of a stand-in object, then a new Range. The link index (reserved in
    /// `slot`) is a placeholder until then: a link to it (MRI would give the uninitialized
    /// Range) is the stdlib's. Endpoints whose `<=>` could be Ruby code are too.
    fn r_range(&mut self, slot: usize, klass: VALUE) -> Load<VALUE> {
        let undef = rb_sys::Qundef as VALUE;
        self.set_entry(slot, undef);
        if self.long()? != 3 {
            return Err(Fallback);
        }
        let ids = ids();
        let (mut beg, mut end, mut excl) = (undef, undef, undef);
        for _ in 0..3 {
            let (name, plain) = self.r_symbol()?;
            let value = self.r_object()?;
            let field = if !plain {
                return Err(Fallback);
            } else if name == ids.sym_excl {
                &mut excl
            } else if name == ids.sym_begin {
                &mut beg
            } else if name == ids.sym_end {
                &mut end
            } else {
                return Err(Fallback);
            };
            if *field != undef {
                return Err(Fallback);
            }
            *field = value;
        }
        if rb_sys::NIL_P(excl) || !core_comparison(beg, end) {
            return Err(Fallback);
        }
        let excl = c_int::from(rb_sys::TEST(excl));
        // "bad value for range" when <=> gives nil: the stdlib raises it.
        let range = if klass == unsafe { rb_sys::rb_cRange } {
            magnus::rb_sys::protect(|| unsafe { rb_sys::rb_range_new(beg, end, excl) })
        } else {
            // A subclass: MRI's loader initializes a new instance as Range#initialize does
            // (so, unlike a Range, it is not frozen).
            let excl = if excl != 0 {
                rb_sys::Qtrue
            } else {
                rb_sys::Qfalse
            } as VALUE;
            magnus::rb_sys::protect(|| unsafe {
                let range = rb_sys::rb_obj_alloc(klass);
                let args = [beg, end, excl];
                rb_sys::rb_funcallv(range, range_initialize_id(), 3, args.as_ptr());
                range
            })
        }
        .map_err(|_| Fallback)?;
        self.set_entry(slot, range);
        if self.freezes_here() {
            unsafe { rb_sys::rb_obj_freeze(range) };
        }
        Ok(range)
    }

    /// A `U` record of Rational or Complex, as MRI's compat loader reads it: the
    /// two-element Array, then the number made from it as is (a Rational's sign moved to
    /// its numerator, never reduced). Links to it while its data is read are the stdlib's.
    fn r_numeric_pair(&mut self, klass: VALUE) -> Load<VALUE> {
        let slot = unsafe { &*self.table.links.get() }.len();
        self.entry(rb_sys::Qundef as VALUE);
        let data = self.r_object()?;
        let is_pair = unsafe { rb_sys::RB_TYPE_P(data, rb_sys::ruby_value_type::RUBY_T_ARRAY) }
            && class_of(data) == unsafe { rb_sys::rb_cArray }
            && unsafe { (*(data as *const rb_sys::RBasic)).flags }
                & (rb_sys::ruby_fl_type::RUBY_FL_EXIVAR as VALUE)
                == 0
            && unsafe { rb_sys::RARRAY_LEN(data) } == 2;
        if !is_pair {
            return Err(Fallback);
        }
        let (a, b) = unsafe { (rb_sys::RARRAY_AREF(data, 0), rb_sys::RARRAY_AREF(data, 1)) };
        let v = if klass == unsafe { rb_sys::rb_cRational } {
            let positive_den = if rb_sys::FIXNUM_P(b) {
                (unsafe { rb_sys::FIX2LONG(b) }) > 0
            } else {
                is_bignum(b)
                    && unsafe { rb_sys::rb_big_cmp(b, rb_sys::LONG2FIX(0)) == rb_sys::LONG2FIX(1) }
            };
            if !(rb_sys::FIXNUM_P(a) || is_bignum(a)) || !positive_den {
                return Err(Fallback); // MRI's checks and sign fix-up: the stdlib's
            }
            unsafe { rb_sys::rb_rational_raw(a, b) }
        } else {
            unsafe { rb_sys::rb_complex_raw(a, b) }
        };
        self.set_entry(slot, v);
        if self.freeze {
            unsafe { rb_sys::rb_obj_freeze(v) };
        }
        Ok(v)
    }

    /// An `o` record of a plain class or an exception class: MRI reserves the link index
    /// first, finds the class, allocates, then sets the ivars.
    fn r_plain_object(&mut self) -> Load<VALUE> {
        let slot = unsafe { &*self.table.links.get() }.len();
        self.entry(qnil());
        let (path_sym, _) = self.r_symbol()?;
        let (klass, exception) = match self.named_class(path_sym)? {
            (klass, ClassKind::Plain) => (klass, false),
            (klass, ClassKind::Exception) => (klass, true),
            (klass, ClassKind::Range | ClassKind::RangeSub) => return self.r_range(slot, klass),
            _ => return Err(Fallback),
        };
        let obj = unsafe { rb_sys::rb_obj_alloc(klass) };
        let links = unsafe { &mut *self.table.links.get() };
        links[slot] = obj;
        let count = self.long()?;
        for _ in 0..count {
            let (name, plain) = self.r_symbol()?;
            if !plain {
                return Err(Fallback);
            }
            let id = unsafe { rb_sys::SYM2ID(name) };
            let ids = ids();
            let named_ok = if exception {
                // An exception's own ivars are named without `@` (mesg, bt, ...); MRI
                // rejects E, K and encoding on it.
                id != ids.id_e && id != ids.id_k && id != ids.id_encoding
            } else {
                // MRI sets even odd names (and rejects E/K/encoding); leave those to it.
                (unsafe { rb_sys::rb_is_instance_id(id) }) != 0
            };
            if !named_ok {
                return Err(Fallback);
            }
            let value = self.r_object()?;
            self.guarded(|| unsafe { rb_sys::rb_ivar_set(obj, id, value) })?;
        }
        if exception {
            // Exception's compat loader (error.c `exception_loader`): a dump gives
            // `bt_locations` the very Array `bt` has (Strings, not Locations), and MRI
            // drops it, or `backtrace_locations` would read Strings as Locations.
            let (bt, bt_locations) = (ids().id_bt, ids().id_bt_locations);
            unsafe {
                if rb_sys::rb_attr_get(obj, bt) == rb_sys::rb_attr_get(obj, bt_locations) {
                    self.guarded(|| rb_sys::rb_ivar_set(obj, bt_locations, qnil()))?;
                }
            }
            self.check_circular_cause(obj)?;
        }
        if self.freezes_here() {
            unsafe { rb_sys::rb_obj_freeze(obj) };
        }
        Ok(obj)
    }

    /// Since Ruby 3.2 the loader refuses an exception whose `cause` chain comes back to
    /// an exception in it (error.c `rb_exc_check_circular_cause`): ArgumentError
    /// "circular causes". Before any hook has run, the stdlib can load the same bytes
    /// and raise it itself; after, it is raised here, where MRI raises it.
    fn check_circular_cause(&mut self, exc: VALUE) -> Load<()> {
        if rb_sys::RUBY_API_VERSION_CODE < 30200 {
            return Ok(());
        }
        let id_cause = ids().id_cause;
        let mut seen: Vec<VALUE> = Vec::new();
        let mut cause = exc;
        while !rb_sys::NIL_P(cause) {
            if seen.contains(&cause) {
                if self.committed {
                    let ruby = unsafe { Ruby::get_unchecked() };
                    self.error = Some(Error::new(ruby.exception_arg_error(), "circular causes"));
                }
                return Err(Fallback);
            }
            seen.push(cause);
            // Objects of this load, all held by the link table while we look.
            cause = unsafe { rb_sys::rb_attr_get(cause, id_cause) };
        }
        Ok(())
    }

    /// An `S` record of a named `Struct.new` class, as MRI reads it: the link index is
    /// reserved first, the class found and allocated, the member count and every member
    /// name checked against the class (any mismatch is MRI's TypeError: the stdlib's job),
    /// the values collected (into a keyword Hash when the class is `keyword_init`), then
    /// `rb_struct_initialize`, which runs no Ruby code (a user `initialize` is not called).
    fn r_struct(&mut self) -> Load<VALUE> {
        let slot = unsafe { &*self.table.links.get() }.len();
        self.entry(qnil());
        let (path_sym, _) = self.r_symbol()?;
        let klass = self.struct_class(path_sym)?;
        let len = self.long()?;
        let members = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_struct_s_members(klass) })
            .map_err(|_| Fallback)?;
        if unsafe { !rb_sys::RB_TYPE_P(members, rb_sys::ruby_value_type::RUBY_T_ARRAY) }
            || len != unsafe { rb_sys::RARRAY_LEN(members) } as i64
        {
            return Err(Fallback);
        }
        let obj = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_alloc(klass) })
            .map_err(|_| Fallback)?;
        if unsafe { !rb_sys::RB_TYPE_P(obj, rb_sys::ruby_value_type::RUBY_T_STRUCT) } {
            return Err(Fallback);
        }
        let links = unsafe { &mut *self.table.links.get() };
        links[slot] = obj;
        let values = unsafe { rb_sys::rb_ary_new_capa(len as c_long) };
        self.keep(values);
        let keywords = if struct_keyword_init(klass) {
            let h = unsafe { rb_sys::rb_hash_new() };
            unsafe { rb_sys::rb_ary_push(values, h) };
            h
        } else {
            0
        };
        for i in 0..len {
            let (name, _) = self.r_symbol()?;
            let member = unsafe { rb_sys::RARRAY_AREF(members, i as isize) };
            // Symbols are unique: the same name (and encoding) is the same Symbol.
            if name != member {
                return Err(Fallback);
            }
            let value = self.r_object()?;
            if keywords != 0 {
                unsafe { rb_sys::rb_hash_aset(keywords, member, value) };
            } else {
                unsafe { rb_sys::rb_ary_push(values, value) };
            }
        }
        magnus::rb_sys::protect(|| unsafe { rb_sys::rb_struct_initialize(obj, values) })
            .map_err(|_| Fallback)?;
        if self.freezes_here() {
            unsafe { rb_sys::rb_obj_freeze(obj) };
        }
        Ok(obj)
    }

    /// A `C` record: a String (`I` before the `C` for its encoding and ivars), Array or
    /// Hash of a named subclass, or MRI's `C:Hash` mark of a compare_by_identity Hash. As
    /// MRI, the object is read as its core class and then given the subclass (so no
    /// subclass method runs while it is filled). With `freeze`, MRI would re-class an
    /// interned String: left to the stdlib.
    fn r_uclass(&mut self, ivar: bool) -> Load<VALUE> {
        let (path_sym, _) = self.r_symbol()?;
        let (klass, kind) = self.named_class(path_sym)?;
        let t = self.byte()?;
        if self.freeze && t == core::TYPE_STRING {
            return Err(Fallback);
        }
        if klass == unsafe { rb_sys::rb_cHash }
            && matches!(t, core::TYPE_HASH | core::TYPE_HASH_DEF)
        {
            // MRI's mark of a compare_by_identity Hash.
            if !self.ident_hash_checked() {
                return Err(Fallback);
            }
            self.ident_hash = true;
            if !ivar {
                return self.r_object_of(t);
            }
            let v = self.r_partial(t)?;
            self.r_ivars(v)?;
            if self.freezes_here() {
                unsafe { rb_sys::rb_obj_freeze(v) };
            }
            return Ok(v);
        }
        let v = match (kind, t) {
            (ClassKind::StringSub, core::TYPE_STRING) if ivar => {
                return self.r_string_with_ivars(klass); // given its class before its ivars
            }
            (ClassKind::StringSub, core::TYPE_STRING) => self.r_string()?,
            (ClassKind::RegexpSub, core::TYPE_REGEXP) => {
                return self.r_regexp_subclass(klass, ivar)
            }
            (ClassKind::ArraySub, core::TYPE_ARRAY)
            | (ClassKind::HashSub, core::TYPE_HASH | core::TYPE_HASH_DEF) => {
                if !ivar {
                    self.r_object_of(t)?
                } else {
                    let v = self.r_partial(t)?;
                    // As MRI: the class first, then the ivars (3.1 indexes generic ivars
                    // by the class), then freezing.
                    unsafe { rb_sys::rb_obj_reveal(v, klass) };
                    self.r_ivars(v)?;
                    if self.freezes_here() {
                        unsafe { rb_sys::rb_obj_freeze(v) };
                    }
                    v
                }
            }
            (ClassKind::HashSub, core::TYPE_UCLASS) => {
                // `C:Sub C:Hash {`: a compare_by_identity Hash of a subclass, frozen (with
                // `freeze`) once it has its class and ivars.
                let saved = self.no_freeze_at;
                self.no_freeze_at = self.depth;
                let v = self.r_uclass(false);
                self.no_freeze_at = saved;
                let v = v?;
                if unsafe { !rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_HASH) }
                    || class_of(v) != unsafe { rb_sys::rb_cHash }
                {
                    return Err(Fallback);
                }
                unsafe { rb_sys::rb_obj_reveal(v, klass) };
                if ivar {
                    self.r_ivars(v)?;
                }
                if self.freezes_here() {
                    unsafe { rb_sys::rb_obj_freeze(v) };
                }
                v
            }
            _ => return Err(Fallback),
        };
        unsafe { rb_sys::rb_obj_reveal(v, klass) };
        Ok(v)
    }

    /// Whether `Hash#compare_by_identity` is the core method (it is called on new Hashes).
    fn ident_hash_checked(&self) -> bool {
        unsafe {
            rb_sys::rb_method_basic_definition_p(rb_sys::rb_cHash, ids().compare_by_identity) != 0
        }
    }

    /// Whether a finished Array, Hash or Struct is frozen now: with `freeze`, unless it
    /// is the object of an `I` record, frozen after its ivars.
    #[inline]
    fn freezes_here(&self) -> bool {
        self.freeze && self.depth != self.no_freeze_at
    }

    /// MRI's `r_leave` after a record read by `r_object` (not partial), with a proc:
    /// the proc gets the object and its result replaces it. A symbol link, and a link to
    /// an object still being read, return the object without the proc.
    fn leave_with_proc(&mut self, t: u8, v: VALUE) -> Load<VALUE> {
        let Some(proc) = self.proc else { return Ok(v) };
        if t == core::TYPE_SYMLINK
            || (t == core::TYPE_LINK && self.in_progress.contains(&v))
            || self.scan
        {
            return Ok(v);
        }
        // The proc is the first Ruby code to run: the whole input is proven loadable first.
        self.ensure_scanned()?;
        self.call_hook(proc, proc_load::id_call(), v)
    }

    /// With a proc: `v` is being read (links to it do not call the proc) until
    /// `end_partial`.
    fn begin_partial(&mut self, v: VALUE) {
        if self.proc.is_some() && self.in_progress.last() != Some(&v) {
            self.in_progress.push(v);
        }
    }

    fn end_partial(&mut self, v: VALUE) {
        if self.in_progress.last() == Some(&v) {
            self.in_progress.pop();
        }
    }

    /// A finished Array or Hash stops being partial, unless it is the object of an `I`
    /// record (partial until its ivars are read).
    fn end_partial_unless_wrapped(&mut self, v: VALUE) {
        if self.depth != self.no_freeze_at {
            self.end_partial(v);
        }
    }

    /// The record `t` inside an `I` record, not frozen yet (MRI's `partial`).
    fn r_partial(&mut self, t: u8) -> Load<VALUE> {
        let saved = self.no_freeze_at;
        self.no_freeze_at = self.depth;
        let v = self.r_object_of(t);
        self.no_freeze_at = saved;
        v
    }

    /// The ivars of an `I` record of an Array, Hash or Struct (MRI's `r_ivar`): the `K`
    /// flag of a ruby2_keywords Hash, or instance variables.
    fn r_ivars(&mut self, obj: VALUE) -> Load<()> {
        let count = self.long()?;
        if count < 0 {
            return Err(Fallback);
        }
        for _ in 0..count {
            let (name, plain) = self.r_symbol()?;
            let value = self.r_object()?;
            self.set_ivar(obj, name, plain, value)?;
        }
        Ok(())
    }

    /// One ivar of a non-String: `K` (true) on a Hash marks it ruby2_keywords; E and
    /// encoding (MRI's "not enc_capable" error) and odd names are the stdlib's.
    fn set_ivar(&mut self, obj: VALUE, name: VALUE, plain: bool, value: VALUE) -> Load<()> {
        let ids = ids();
        if plain && name == ids.sym_k {
            if unsafe { !rb_sys::RB_TYPE_P(obj, rb_sys::ruby_value_type::RUBY_T_HASH) } {
                return Err(Fallback); // MRI's ArgumentError
            }
            // RHASH_PASS_AS_KEYWORDS, what rb_hash_ruby2_keywords sets (whatever the value).
            unsafe {
                (*(obj as *mut rb_sys::RBasic)).flags |=
                    rb_sys::ruby_fl_type::RUBY_FL_USER1 as VALUE;
            }
            return Ok(());
        }
        let id = unsafe { rb_sys::SYM2ID(name) };
        if !plain || unsafe { rb_sys::rb_is_instance_id(id) } == 0 {
            return Err(Fallback);
        }
        self.guarded(|| unsafe { rb_sys::rb_ivar_set(obj, id, value) })?;
        Ok(())
    }

    /// A `/` record, as MRI reads it: source bytes, options byte, a link index reserved,
    /// the source's encoding from the ivars, then `rb_reg_new_str`. Ivars other than the
    /// encoding (MRI puts them on the source String and drops them) and sources that
    /// would need MRI's Ruby 1.8 escape conversion (no encoding ivar, a backslash) are
    /// the stdlib's.
    fn r_regexp(&mut self, ivar: bool) -> Load<VALUE> {
        let bytes = self.r.read_bytes().ok_or(Fallback)?;
        let has_backslash = bytes.contains(&b'\\');
        let src =
            unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const c_char, bytes.len() as c_long) };
        self.keep(src);
        let options = self.byte()?;
        let slot = unsafe { &*self.table.links.get() }.len();
        self.entry(qnil());
        let mut has_encoding = false;
        if ivar {
            let count = self.long()?;
            for _ in 0..count {
                let idx = self.r_encoding_ivar()?;
                unsafe { rb_sys::rb_enc_associate_index(src, idx) };
                has_encoding = true;
            }
        }
        if !has_encoding && has_backslash {
            return Err(Fallback);
        }
        let re = self.compile_regexp(src, options as c_int)?;
        let links = unsafe { &mut *self.table.links.get() };
        links[slot] = re;
        if self.freezes_here() {
            unsafe { rb_sys::rb_obj_freeze(re) };
        }
        Ok(re)
    }

    /// `rb_reg_new_str(src, options)` (the source kept by the caller), or fall back when
    /// it raises. Compiling may print warnings ("regular expression has ']' without
    /// escape"). Until Ruby code has run, the load may still go to the stdlib, which
    /// compiles the Regexp again and warns itself: so until then (and in a scan) ours
    /// compiles with warnings off, and `replay_regexp_warnings` compiles those again
    /// with warnings on once the load is sure to stay native (before the first hook, or
    /// at its end), in MRI's order.
    fn compile_regexp(&mut self, src: VALUE, options: c_int) -> Load<VALUE> {
        let quiet = !self.committed;
        let compile =
            || magnus::rb_sys::protect(|| unsafe { rb_sys::rb_reg_new_str(src, options) });
        let compiled = if quiet {
            with_warnings_off(compile)
        } else {
            compile()
        };
        let re = compiled.map_err(|_| Fallback)?;
        if quiet && !self.scan {
            self.quiet_regexps.push((src, options));
        }
        Ok(re)
    }

    /// Prints the warnings of the Regexps compiled quietly so far, by compiling them
    /// again (only the warnings are used); an exception a warning raises (`Warning.warn`
    /// may) is the load's error.
    fn replay_regexp_warnings(&mut self) -> Load<()> {
        for (src, options) in std::mem::take(&mut self.quiet_regexps) {
            if let Err(e) =
                magnus::rb_sys::protect(|| unsafe { rb_sys::rb_reg_new_str(src, options) })
            {
                self.error = Some(e);
                return Err(Fallback);
            }
        }
        Ok(())
    }

    /// The class an `S` record names, if it is a loaded, named `Struct.new` class whose
    /// instances hash and compare with the core methods.
    fn struct_class(&mut self, path_sym: VALUE) -> Load<VALUE> {
        match self.named_class(path_sym)? {
            (klass, ClassKind::Struct) => Ok(klass),
            _ => Err(Fallback),
        }
    }

    /// The (non-singleton) class `path_sym` names, if every step of the path is a loaded
    /// constant, and what its instances are; cached by symbol for the rest of the load
    /// as [symbol, class, kind, ...].
    fn named_class(&mut self, path_sym: VALUE) -> Load<(VALUE, ClassKind)> {
        if self.classes == 0 {
            self.classes = unsafe { rb_sys::rb_ary_new() };
        }
        let cached = unsafe { rb_sys::RARRAY_LEN(self.classes) };
        let mut i = 0;
        while i < cached {
            if unsafe { rb_sys::RARRAY_AREF(self.classes, i as isize) } == path_sym {
                let klass = unsafe { rb_sys::RARRAY_AREF(self.classes, i as isize + 1) };
                let kind =
                    unsafe { rb_sys::FIX2LONG(rb_sys::RARRAY_AREF(self.classes, i as isize + 2)) };
                return Ok((klass, ClassKind::from_code(kind)));
            }
            i += 3;
        }
        let name = unsafe { rb_sys::rb_sym2str(path_sym) };
        // Copied: resolving may allocate, and a compacting GC could move the name's bytes.
        let path = unsafe {
            std::slice::from_raw_parts(
                rb_sys::RSTRING_PTR(name) as *const u8,
                rb_sys::RSTRING_LEN(name) as usize,
            )
        }
        .to_vec();
        let klass = classes::resolve_path(&path).ok_or(Fallback)?;
        let is_class = unsafe {
            rb_sys::RB_TYPE_P(klass, rb_sys::ruby_value_type::RUBY_T_CLASS)
                && (*(klass as *const rb_sys::RBasic)).flags
                    & (rb_sys::ruby_fl_type::RUBY_FL_SINGLETON as VALUE)
                    == 0
        };
        if !is_class {
            return Err(Fallback);
        }
        let kind = if !core_hashing(klass) {
            ClassKind::Other
        } else if classes::allocates_plain_objects(klass) {
            ClassKind::Plain
        } else if klass == unsafe { rb_sys::rb_cRange } {
            ClassKind::Range
        } else if classes::allocates_ranges(klass) && range_initialize_is_core(klass) {
            ClassKind::RangeSub
        } else if classes::allocates_exceptions(klass) {
            ClassKind::Exception
        } else if classes::allocates_structs(klass) {
            ClassKind::Struct
        } else if let Some(kind) = core_subclass_kind(klass) {
            kind
        } else {
            ClassKind::Other
        };
        unsafe {
            rb_sys::rb_ary_push(self.classes, path_sym);
            rb_sys::rb_ary_push(self.classes, klass);
            rb_sys::rb_ary_push(self.classes, rb_sys::LONG2FIX(kind as c_long));
        }
        Ok((klass, kind))
    }

    #[inline]
    fn enter(&mut self) -> Load<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH
            || (self.depth.is_multiple_of(4) && unsafe { rb_sys::ruby_stack_check() } != 0)
        {
            return Err(Fallback);
        }
        Ok(())
    }

    /// A `"` record's bytes as a new binary String, entered in the link table.
    fn r_string(&mut self) -> Load<VALUE> {
        let (bytes, direct) = self.r_string_bytes()?;
        let s = direct.unwrap_or_else(|| unsafe {
            rb_sys::rb_str_new(bytes.as_ptr() as *const c_char, bytes.len() as c_long)
        });
        self.entry(s);
        Ok(s)
    }

    /// A String record's bytes, and the port's String MRI makes it of, if any.
    fn r_string_bytes(&mut self) -> Load<(&'a [u8], Option<VALUE>)> {
        let len = usize::try_from(self.long()?).map_err(|_| Fallback)?;
        // +2: the offsets count the version bytes.
        let offset = self.source.len() - self.r.remaining() + 2;
        let bytes = self.r.bytes(len).ok_or(Fallback)?;
        if self.direct == 0 || self.next_direct >= unsafe { rb_sys::RARRAY_LEN(self.direct) } {
            return Ok((bytes, None));
        }
        let at = unsafe { rb_sys::RARRAY_AREF(self.direct, self.next_direct as isize) };
        if unsafe { rb_sys::FIX2LONG(at) } as usize != offset {
            return Ok((bytes, None));
        }
        let s = unsafe { rb_sys::RARRAY_AREF(self.direct, self.next_direct as isize + 1) };
        self.next_direct += 2;
        // The port may have changed it since: then the stdlib, which uses it as it is now.
        if crate::helpers::raw::str_bytes(s) != bytes {
            return Err(Fallback);
        }
        Ok((bytes, Some(s)))
    }

    /// An `I"` record: the bytes, then ivars: encodings and instance variables. The
    /// common `E true/false` first ivar creates the String in its encoding at once; MRI's
    /// order of link entries is kept (the String before any `encoding` name String).
    /// `class` (0 for String) is given to the String before its ivars are set: Ruby 3.1
    /// keeps generic ivars by the index table of the object's class.
    fn r_string_with_ivars(&mut self, class: VALUE) -> Load<VALUE> {
        let (bytes, direct) = self.r_string_bytes()?;
        let count = self.long()?;
        let ptr = bytes.as_ptr() as *const c_char;
        let len = bytes.len() as c_long;
        let ids = ids();
        let mut done = 0;
        let s = if count > 0 {
            let (sym, plain) = self.r_symbol()?;
            done = 1;
            if plain && sym == ids.sym_e && self.proc.is_some() && !self.scan {
                // MRI reads the value with r_object: the proc sees it first.
                let s = direct.unwrap_or_else(|| unsafe { rb_sys::rb_str_new(ptr, len) });
                self.entry_string(s, class);
                self.begin_partial(s);
                let value = self.r_object()?;
                self.set_encoding_ivar(s, sym, plain, value)?;
                s
            } else if plain && sym == ids.sym_e {
                let idx = match self.byte()? {
                    core::TYPE_TRUE => self.utf8,
                    core::TYPE_FALSE => self.usascii,
                    _ => return Err(Fallback),
                };
                // What rb_enc_str_new does for a new String, without its lookups: a byte
                // String given the encoding index in its flags, the coderange left unknown
                // (not rb_usascii_str_new: Ruby 3.3's marks the String 7-bit without
                // looking, which is wrong for non-ASCII bytes, and String#eql? depends on
                // it).
                let s = direct.unwrap_or_else(|| unsafe { rb_sys::rb_str_new(ptr, len) });
                if direct.is_some() {
                    // The port's String (not frozen, checked): MRI's call.
                    unsafe { rb_sys::rb_enc_associate_index(s, idx) };
                } else {
                    set_encoding_index(s, idx);
                }
                self.entry_string(s, class);
                s
            } else if plain && sym == ids.sym_encoding {
                if self.proc.is_some() {
                    return Err(Fallback); // an encoding name a proc may replace: the stdlib's
                }
                let s = direct.unwrap_or_else(|| unsafe { rb_sys::rb_str_new(ptr, len) });
                self.entry_string(s, class);
                let value = self.r_object()?;
                let idx = self.encoding_index_named(value)?;
                unsafe { rb_sys::rb_enc_associate_index(s, idx) };
                s
            } else {
                let s = direct.unwrap_or_else(|| unsafe { rb_sys::rb_str_new(ptr, len) });
                self.entry_string(s, class);
                self.begin_partial(s);
                let value = self.r_object()?;
                self.set_ivar(s, sym, plain, value)?;
                s
            }
        } else {
            let s = direct.unwrap_or_else(|| unsafe { rb_sys::rb_str_new(ptr, len) });
            self.entry_string(s, class);
            s
        };
        if count > 0 {
            self.begin_partial(s);
        }
        for _ in done..count {
            let (sym, plain) = self.r_symbol()?;
            let value = self.r_object()?;
            if !self.set_encoding_ivar(s, sym, plain, value)? {
                self.set_ivar(s, sym, plain, value)?;
            }
        }
        self.end_partial(s);
        Ok(s)
    }

    /// Enters a new String in the link table, giving it its subclass (`class`, 0 for none).
    #[inline]
    fn entry_string(&mut self, s: VALUE, class: VALUE) {
        self.entry(s);
        if class != 0 {
            unsafe { rb_sys::rb_obj_reveal(s, class) };
        }
    }

    /// One ivar of a String or Symbol, which must be its encoding: `:E` with true/false,
    /// or `:encoding` with the name of an encoding this Ruby knows. Returns its index.
    fn r_encoding_ivar(&mut self) -> Load<c_int> {
        let ids = ids();
        let (sym, plain) = self.r_symbol()?;
        if !plain {
            return Err(Fallback);
        }
        let value = self.r_object()?;
        if sym == ids.sym_e {
            if value == rb_sys::Qtrue as VALUE {
                Ok(self.utf8)
            } else if value == rb_sys::Qfalse as VALUE {
                Ok(self.usascii)
            } else if self.proc.is_some() && !self.scan {
                Ok(-1) // what a proc gave: MRI's sym2encidx finds no encoding
            } else {
                Err(Fallback)
            }
        } else if sym == ids.sym_encoding && self.proc.is_some() {
            Err(Fallback)
        } else if sym == ids.sym_encoding {
            self.encoding_index_named(value)
        } else {
            Err(Fallback)
        }
    }

    /// The index of the encoding a loaded `encoding` ivar value names.
    /// Applies an `E` / `encoding` ivar of a String's `I` record to `s`; false for any
    /// other ivar (the caller sets it as a plain one).
    fn set_encoding_ivar(&self, s: VALUE, sym: VALUE, plain: bool, value: VALUE) -> Load<bool> {
        let ids = ids();
        let idx = if plain && sym == ids.sym_e {
            if value == rb_sys::Qtrue as VALUE {
                self.utf8
            } else if value == rb_sys::Qfalse as VALUE {
                self.usascii
            } else if self.proc.is_some() && !self.scan {
                // What a proc gave instead of true/false: MRI sets it as an ivar named E.
                unsafe { rb_sys::rb_ivar_set(s, ids.id_e, value) };
                return Ok(true);
            } else {
                return Err(Fallback);
            }
        } else if plain && sym == ids.sym_encoding {
            if self.proc.is_some() {
                return Err(Fallback);
            }
            self.encoding_index_named(value)?
        } else {
            return Ok(false);
        };
        unsafe { rb_sys::rb_enc_associate_index(s, idx) };
        Ok(true)
    }

    fn encoding_index_named(&self, value: VALUE) -> Load<c_int> {
        {
            if unsafe { !rb_sys::RB_TYPE_P(value, rb_sys::ruby_value_type::RUBY_T_STRING) } {
                return Err(Fallback);
            }
            let name = unsafe {
                std::slice::from_raw_parts(
                    rb_sys::RSTRING_PTR(value) as *const u8,
                    rb_sys::RSTRING_LEN(value) as usize,
                )
            };
            let name = CString::new(name).map_err(|_| Fallback)?;
            // Finding an encoding may load its library; keep any exception out of Rust.
            let found = magnus::rb_sys::protect(|| unsafe {
                rb_sys::rb_int2inum(rb_sys::rb_enc_find_index(name.as_ptr()) as isize)
            })
            .map_err(|_| Fallback)?;
            let idx = unsafe { rb_sys::FIX2LONG(found) } as c_int;
            if idx < 0 {
                return Err(Fallback);
            }
            Ok(idx)
        }
    }

    /// A symbol in name position (`:`, `I:` or `;`), and whether it is plain (ASCII,
    /// no encoding ivar).
    fn r_symbol(&mut self) -> Load<(VALUE, bool)> {
        match self.byte()? {
            core::TYPE_SYMBOL => {
                let index = self.plain_symbols.len();
                let sym = self.r_symreal(false)?;
                Ok((sym, self.plain_symbols[index]))
            }
            core::TYPE_IVAR => {
                if self.byte()? != core::TYPE_SYMBOL {
                    return Err(Fallback);
                }
                Ok((self.r_symreal(true)?, false))
            }
            core::TYPE_SYMLINK => self.r_symlink(),
            _ => Err(Fallback),
        }
    }

    fn r_symlink(&mut self) -> Load<(VALUE, bool)> {
        let index = self.long()?;
        if index < 0 || index as usize >= self.plain_symbols.len() {
            return Err(Fallback);
        }
        let sym = unsafe { rb_sys::RARRAY_AREF(self.symbols, index as isize) };
        if rb_sys::NIL_P(sym) {
            // A link to a symbol still being read: leave that oddity to the stdlib.
            return Err(Fallback);
        }
        Ok((sym, self.plain_symbols[index as usize]))
    }

    /// MRI's `r_symreal`: the name bytes, then (with `ivar`) its encoding.
    fn r_symreal(&mut self, ivar: bool) -> Load<VALUE> {
        let bytes = self.r.read_bytes().ok_or(Fallback)?;
        let index = self.plain_symbols.len();
        unsafe { rb_sys::rb_ary_push(self.symbols, qnil()) };
        let ascii = bytes.is_ascii();
        self.plain_symbols.push(ascii && !ivar);
        let mut idx: c_int = -1;
        if ivar {
            // Ivar names are symbols that may have ivars themselves: bound that too.
            self.enter()?;
            let count = self.long()?;
            for _ in 0..count {
                idx = self.r_encoding_ivar()?;
            }
            self.depth -= 1;
        }
        if ascii && idx <= 0 {
            // An ASCII name is valid US-ASCII: look the symbol up without making a String
            // (rb_str_intern would find the same one).
            let found = unsafe {
                rb_sys::rb_check_symbol_cstr(
                    bytes.as_ptr() as *const c_char,
                    bytes.len() as c_long,
                    rb_sys::rb_usascii_encoding(),
                )
            };
            if !rb_sys::NIL_P(found) {
                unsafe { rb_sys::rb_ary_store(self.symbols, index as c_long, found) };
                return Ok(found);
            }
        }
        let s =
            unsafe { rb_sys::rb_str_new(bytes.as_ptr() as *const c_char, bytes.len() as c_long) };
        // Hold it in the symbol slot while we set its encoding (GC safety).
        unsafe { rb_sys::rb_ary_store(self.symbols, index as c_long, s) };
        if idx > 0 {
            unsafe { rb_sys::rb_enc_associate_index(s, idx) };
            let cr = unsafe { rb_sys::rb_enc_str_coderange(s) };
            if cr == rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_BROKEN as c_int {
                // MRI raises "invalid byte sequence"; the stdlib will.
                return Err(Fallback);
            }
        } else if ascii {
            unsafe { rb_sys::rb_enc_associate_index(s, self.usascii) };
        }
        // Interning can raise for odd names in odd encodings; leave those to the stdlib.
        let sym = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_intern(s) })
            .map_err(|_| Fallback)?;
        unsafe { rb_sys::rb_ary_store(self.symbols, index as c_long, sym) };
        Ok(sym)
    }
}

/// Extended objects (`e` records) and `_load_data` objects (`d` records).
impl Loader<'_> {
    /// `e` records (MRI's TYPE_EXTENDED; `ivar`: inside an `I` record): the modules, then
    /// the object, read as usual but not frozen yet (MRI's `partial`), then extended with
    /// `rb_extend_object` (which runs no hook), the last module named first, as MRI pops
    /// them, then frozen with `freeze` where MRI freezes it: by the `I` record's `r_leave`
    /// on both Rubies, by the `e` record's own on 3.3 only (3.1 has none). Records MRI
    /// treats specially after an `e` (a `U` extended before `marshal_load`, a prepended
    /// class, `u`, links) are the stdlib's.
    fn r_extended(&mut self, ivar: bool) -> Load<VALUE> {
        let saved = self.no_freeze_at;
        self.no_freeze_at = self.depth;
        let v = self.r_extended_object(ivar);
        self.no_freeze_at = saved;
        let v = v?;
        let leaves = if ivar {
            true
        } else {
            rb_sys::RUBY_API_VERSION_CODE >= 30300
        };
        if self.scan || !self.freeze || !leaves || saved == self.depth {
            return Ok(v);
        }
        if unsafe { rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_STRING) } {
            // Extended, so not a bare String: MRI's r_leave freezes it in place.
            return Ok(unsafe { rb_sys::rb_str_to_interned_str(v) });
        }
        unsafe { rb_sys::rb_obj_freeze(v) };
        Ok(v)
    }

    /// The modules and the object of `e` records, extended (see `r_extended`).
    fn r_extended_object(&mut self, ivar: bool) -> Load<VALUE> {
        let modules = unsafe { rb_sys::rb_ary_new() };
        self.keep(modules);
        loop {
            let (name, _) = self.r_symbol()?;
            let module = self.named_module(name)?;
            unsafe { rb_sys::rb_ary_push(modules, module) };
            if self.r.peek() != Some(core::TYPE_EXTENDED) {
                break;
            }
            self.byte()?;
        }
        let t = self.r.peek().ok_or(Fallback)?;
        let v = match t {
            core::TYPE_STRING
            | core::TYPE_REGEXP
            | core::TYPE_ARRAY
            | core::TYPE_HASH
            | core::TYPE_HASH_DEF
            | core::TYPE_STRUCT
            | core::TYPE_UCLASS
                if ivar =>
            {
                self.r_object_of(core::TYPE_IVAR)?
            }
            core::TYPE_STRING
            | core::TYPE_REGEXP
            | core::TYPE_ARRAY
            | core::TYPE_HASH
            | core::TYPE_HASH_DEF
            | core::TYPE_STRUCT
            | core::TYPE_UCLASS
            | core::TYPE_OBJECT
            | core::TYPE_IVAR => {
                self.byte()?;
                self.r_object_of(t)?
            }
            core::TYPE_DATA if ivar => {
                // MRI hands the modules to the data record here too (see `r_data`).
                self.byte()?;
                let v = self.r_data(true, true)?;
                self.r_ivars(v)?;
                v
            }
            core::TYPE_DATA => {
                self.byte()?;
                self.r_data(true, true)?
            }
            _ => return Err(Fallback),
        };
        if self.scan {
            return Ok(v); // `d` objects are not loaded in a scan
        }
        if rb_sys::SPECIAL_CONST_P(v) || unsafe { rb_sys::rb_obj_frozen_p(v) } != 0 {
            return Err(Fallback); // MRI raises (a Range is frozen): the stdlib's
        }
        let count = unsafe { rb_sys::RARRAY_LEN(modules) };
        for i in (0..count).rev() {
            let module = unsafe { rb_sys::RARRAY_AREF(modules, i as isize) };
            self.guarded(|| unsafe {
                rb_sys::rb_extend_object(v, module);
                qnil()
            })?;
        }
        Ok(v)
    }

    /// The module an `e` record names (a class there means MRI's prepended-class case,
    /// anything else its ArgumentError: both the stdlib's).
    fn named_module(&mut self, sym: VALUE) -> Load<VALUE> {
        if let Some(module) = self.extended.module(sym) {
            return Ok(module);
        }
        let name = unsafe { rb_sys::rb_sym2str(sym) };
        // Copied: resolving may allocate, and a compacting GC could move the name's bytes.
        let path = crate::helpers::raw::str_bytes(name).to_vec();
        let module = classes::resolve_path(&path).ok_or(Fallback)?;
        if unsafe { !rb_sys::RB_TYPE_P(module, rb_sys::ruby_value_type::RUBY_T_MODULE) } {
            return Err(Fallback);
        }
        // An extended object used as a Hash key would be hashed through the module.
        if extended::defines_hashing(module) {
            return Err(Fallback);
        }
        self.keep(module);
        self.extended.add_module(sym, module);
        Ok(module)
    }

    /// A `d` record, as MRI reads it: the class, a new instance from its allocator (which
    /// must be a `T_DATA`), its link index, the data record, then `_load_data(data)`.
    /// Classes without `_load_data` (MRI's TypeError) or an allocator, and compat
    /// allocators, are the stdlib's. After `e` records (`extended`), MRI hands its module
    /// list to the data record: only data records that ignore it are read here. Inside an
    /// `I` record (`partial`) it is frozen after its ivars. A scan reads the record
    /// without calling the hook (the object stays as allocated).
    fn r_data(&mut self, extended: bool, partial: bool) -> Load<VALUE> {
        let (name, _) = self.r_symbol()?;
        let (klass, _) = self.named_class(name)?;
        if !self.extended.is_data_class(klass) {
            if !extended::load_data_class(klass) || !core_hashing(klass) {
                return Err(Fallback);
            }
            self.extended.add_data_class(klass);
        }
        if extended
            && matches!(
                self.r.peek(),
                Some(
                    core::TYPE_USRMARSHAL
                        | core::TYPE_EXTENDED
                        | core::TYPE_IVAR
                        | core::TYPE_UCLASS
                )
            )
        {
            return Err(Fallback);
        }
        // MRI reads the data record as `partial` as the `d` record itself, so with
        // `freeze` the data object is frozen only outside an `I` or `e` record: done here
        // for the records whose readers follow `no_freeze_at`; the rest is the stdlib's.
        let follows_partial = matches!(
            self.r.peek(),
            Some(
                core::TYPE_ARRAY
                    | core::TYPE_HASH
                    | core::TYPE_HASH_DEF
                    | core::TYPE_STRUCT
                    | core::TYPE_OBJECT
                    | core::TYPE_STRING
                    | core::TYPE_REGEXP
                    | core::TYPE_UCLASS
                    | core::TYPE_NIL
                    | core::TYPE_TRUE
                    | core::TYPE_FALSE
                    | core::TYPE_FIXNUM
                    | core::TYPE_BIGNUM
                    | core::TYPE_FLOAT
                    | core::TYPE_SYMBOL
                    | core::TYPE_SYMLINK
                    | core::TYPE_LINK
                    | core::TYPE_CLASS
                    | core::TYPE_MODULE
            )
        );
        if partial && self.freeze && !follows_partial {
            return Err(Fallback);
        }
        let v = magnus::rb_sys::protect(|| unsafe { rb_sys::rb_obj_alloc(klass) })
            .map_err(|_| Fallback)?;
        self.keep(v);
        if unsafe { !rb_sys::RB_TYPE_P(v, rb_sys::ruby_value_type::RUBY_T_DATA) }
            || unsafe { rb_sys::rb_obj_respond_to(v, data_ids().load_data, 1) } == 0
        {
            return Err(Fallback);
        }
        if !self.scan {
            self.ensure_scanned()?;
        }
        self.entry(v);
        let saved = self.no_freeze_at;
        if partial {
            self.no_freeze_at = self.depth + 1; // the depth `r_object` reads it at
        }
        let data = self.r_object();
        self.no_freeze_at = saved;
        let data = data?;
        if self.scan {
            return Ok(v);
        }
        self.call_hook(v, data_ids().load_data, data)?;
        if self.freeze && !partial {
            unsafe { rb_sys::rb_obj_freeze(v) };
        }
        Ok(v)
    }
}

/// Regexp subclasses (`C` records of a Regexp).
impl Loader<'_> {
    /// A `C` record of a Regexp subclass, as MRI reads it: the Regexp record inside the
    /// `C` is read without its `I` ivars (MRI passes none down), so its source gets the
    /// Ruby 1.8 escape step and is compiled as bytes; then the subclass is set, then the
    /// `I` record's ivars (the encoding, set on the Regexp itself, and instance
    /// variables), then freezing.
    fn r_regexp_subclass(&mut self, klass: VALUE, ivar: bool) -> Load<VALUE> {
        let bytes = self.r.read_bytes().ok_or(Fallback)?;
        let source = core::strip_18_escapes(bytes);
        let src =
            unsafe { rb_sys::rb_str_new(source.as_ptr() as *const c_char, source.len() as c_long) };
        self.keep(src);
        let options = self.byte()?;
        let slot = unsafe { &*self.table.links.get() }.len();
        self.entry(qnil());
        let re = self.compile_regexp(src, options as c_int)?;
        self.set_entry(slot, re);
        unsafe { rb_sys::rb_obj_reveal(re, klass) };
        if ivar {
            let count = self.long()?;
            for _ in 0..count {
                let (name, plain) = self.r_symbol()?;
                let value = self.r_object()?;
                if !self.set_encoding_ivar(re, name, plain, value)? {
                    self.set_ivar(re, name, plain, value)?;
                }
            }
        }
        if self.freezes_here() {
            unsafe { rb_sys::rb_obj_freeze(re) };
        }
        Ok(re)
    }
}

/// MRI's "Marshal.load reentered at <method>" (`check_load_arg`), for a call into Ruby
/// code that a continuation returned into after the load ended.
pub(super) fn reentered_message(mid: rb_sys::ID) -> String {
    let name = unsafe { std::ffi::CStr::from_ptr(rb_sys::rb_id2name(mid)) };
    format!("Marshal.load reentered at {}", name.to_string_lossy())
}
