//! IDs and symbols looked up once, and the per-class checks both directions need.

use std::ffi::CStr;
use std::sync::OnceLock;

use magnus::rb_sys::AsRawValue;
use magnus::{Ruby, Value};
use rb_sys::{ID, VALUE};

pub struct Ids {
    pub marshal_dump: ID,
    pub underscore_dump: ID,
    pub respond_to: ID,
    pub respond_to_missing: ID,
    pub default: ID,
    pub compare_by_identity_p: ID,
    pub compare_by_identity: ID,
    pub hash: ID,
    pub underscore_load: ID,
    pub marshal_load: ID,
    /// `:Time`, the class symbol of a Time's `u` record.
    pub sym_time: VALUE,
    /// The internal ivar names `Time#_dump` puts on its String, which `Time._load` reads.
    pub time_ivars: [ID; 6],
    pub eql_p: ID,
    /// IDs of `E`, `K` and `encoding`: ivar names MRI never writes for an object.
    pub id_e: ID,
    pub id_k: ID,
    pub id_encoding: ID,
    /// An exception's internal ivars `bt`, `bt_locations` and `cause`.
    pub id_bt: ID,
    pub id_bt_locations: ID,
    pub id_cause: ID,
    /// `:E` and `:encoding`, the ivar names that carry a String's encoding.
    pub sym_e: VALUE,
    pub sym_encoding: VALUE,
    /// `:K`, the ruby2_keywords flag's ivar name, and `:Hash` (compare_by_identity).
    pub sym_k: VALUE,
    pub sym_hash: VALUE,
    /// Class names of the core `U` records, and the ivars of Range's stand-in object.
    pub sym_rational: VALUE,
    pub sym_complex: VALUE,
    pub sym_excl: VALUE,
    pub sym_begin: VALUE,
    pub sym_end: VALUE,
}

static IDS: OnceLock<Ids> = OnceLock::new();

fn intern(name: &CStr) -> ID {
    unsafe { rb_sys::rb_intern(name.as_ptr()) }
}

pub fn init(_ruby: &Ruby) {
    IDS.get_or_init(|| Ids {
        marshal_dump: intern(c"marshal_dump"),
        underscore_dump: intern(c"_dump"),
        respond_to: intern(c"respond_to?"),
        respond_to_missing: intern(c"respond_to_missing?"),
        default: intern(c"default"),
        compare_by_identity_p: intern(c"compare_by_identity?"),
        compare_by_identity: intern(c"compare_by_identity"),
        hash: intern(c"hash"),
        underscore_load: intern(c"_load"),
        marshal_load: intern(c"marshal_load"),
        sym_time: rb_sys::ID2SYM(intern(c"Time")),
        time_ivars: [
            intern(c"offset"),
            intern(c"zone"),
            intern(c"nano_num"),
            intern(c"nano_den"),
            intern(c"submicro"),
            intern(c"year"),
        ],
        eql_p: intern(c"eql?"),
        id_e: intern(c"E"),
        id_k: intern(c"K"),
        id_encoding: intern(c"encoding"),
        id_bt: intern(c"bt"),
        id_bt_locations: intern(c"bt_locations"),
        id_cause: intern(c"cause"),
        // Static symbols of interned IDs: immediates that never move or die.
        sym_e: rb_sys::ID2SYM(intern(c"E")),
        sym_encoding: rb_sys::ID2SYM(intern(c"encoding")),
        sym_k: rb_sys::ID2SYM(intern(c"K")),
        sym_hash: rb_sys::ID2SYM(intern(c"Hash")),
        sym_rational: rb_sys::ID2SYM(intern(c"Rational")),
        sym_complex: rb_sys::ID2SYM(intern(c"Complex")),
        sym_excl: rb_sys::ID2SYM(intern(c"excl")),
        sym_begin: rb_sys::ID2SYM(intern(c"begin")),
        sym_end: rb_sys::ID2SYM(intern(c"end")),
    });
}

#[inline]
pub fn ids() -> &'static Ids {
    // init() runs when the extension loads, before any entry point can be called.
    IDS.get().expect("marshal ids initialised")
}

/// MRI's reading of `dump(obj, limit)`'s second argument: nil means no limit (-1), a
/// Fixnum within `int` is the limit. Anything else (an IO, a Bignum) is for the stdlib.
pub fn dump_limit(limit: Value) -> Option<i32> {
    let raw = limit.as_raw();
    if rb_sys::NIL_P(raw) {
        return Some(-1);
    }
    if !rb_sys::FIXNUM_P(raw) {
        return None;
    }
    let n = unsafe { rb_sys::FIX2LONG(raw) };
    i32::try_from(n).ok()
}

/// Whether instances of `klass` (a core class, given one instance `obj`) are dumped by
/// MRI through the generic path: no `marshal_dump` / `_dump`, and `respond_to?` /
/// `respond_to_missing?` untouched so that asking runs no Ruby code.
pub fn plain_dump_class(obj: VALUE, klass: VALUE) -> bool {
    let ids = ids();
    unsafe {
        rb_sys::rb_method_basic_definition_p(klass, ids.respond_to) != 0
            && rb_sys::rb_method_basic_definition_p(klass, ids.respond_to_missing) != 0
            && rb_sys::rb_obj_respond_to(obj, ids.marshal_dump, 1) == 0
            && rb_sys::rb_obj_respond_to(obj, ids.underscore_dump, 1) == 0
    }
}

/// Whether a Time is dumped by the core `Time#_dump` with no Ruby code involved: no
/// `marshal_dump`, the original `_dump`, and `respond_to?` / `respond_to_missing?` untouched.
pub fn core_time_dump(obj: VALUE) -> bool {
    let ids = ids();
    unsafe {
        let klass = rb_sys::rb_cTime;
        rb_sys::rb_method_basic_definition_p(klass, ids.respond_to) != 0
            && rb_sys::rb_method_basic_definition_p(klass, ids.respond_to_missing) != 0
            && rb_sys::rb_method_basic_definition_p(klass, ids.underscore_dump) != 0
            && rb_sys::rb_obj_respond_to(obj, ids.marshal_dump, 1) == 0
    }
}

/// Whether `Time._load` is the core one (and asking `Time` about it runs no Ruby code),
/// Times hash and compare with the core methods (as Hash keys), and the constant `Time`
/// still names the core class.
pub fn core_time_load() -> bool {
    let ids = ids();
    unsafe {
        let time = rb_sys::rb_cTime;
        let meta = (*(time as *const rb_sys::RBasic)).klass;
        rb_sys::rb_method_basic_definition_p(meta, ids.respond_to) != 0
            && rb_sys::rb_method_basic_definition_p(meta, ids.respond_to_missing) != 0
            && rb_sys::rb_method_basic_definition_p(meta, ids.underscore_load) != 0
            && rb_sys::rb_method_basic_definition_p(time, ids.hash) != 0
            && rb_sys::rb_method_basic_definition_p(time, ids.eql_p) != 0
            && super::classes::resolve_path(b"Time") == Some(time)
    }
}

/// Whether asking instances of `klass` (or `klass` itself, for its singleton methods, when
/// `klass` is its metaclass) `respond_to?` runs no Ruby code.
pub fn respond_to_is_core(klass: VALUE) -> bool {
    let ids = ids();
    unsafe {
        rb_sys::rb_method_basic_definition_p(klass, ids.respond_to) != 0
            && rb_sys::rb_method_basic_definition_p(klass, ids.respond_to_missing) != 0
    }
}
