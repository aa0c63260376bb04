//! Class lookups for `o` records, done without running Ruby code.
//!
//! MRI's `rb_path_to_class` may trigger an autoload or `const_missing`; here a path that
//! would need either (or is anything but ASCII constants naming a class) resolves to
//! `None`, and the caller leaves the whole call to the stdlib.

use std::os::raw::{c_char, c_long};

use std::sync::OnceLock;

use rb_sys::{ruby_value_type as T, VALUE};
use rusty_core::marshal as core;

/// The class or module `path` ("A::B::C") names, if every step is an already loaded
/// constant.
pub fn resolve_path(path: &[u8]) -> Option<VALUE> {
    if path.is_empty() || path[0] == b'#' || !path.is_ascii() {
        return None;
    }
    let resolved = magnus::rb_sys::protect(|| unsafe {
        let mut c = rb_sys::rb_cObject;
        for segment in core::split_class_path(path) {
            let segment = match segment {
                Some(s) => s,
                None => return 0,
            };
            let id = rb_sys::rb_check_id_cstr(
                segment.as_ptr() as *const c_char,
                segment.len() as c_long,
                rb_sys::rb_usascii_encoding(),
            );
            if id == 0
                || rb_sys::rb_is_const_id(id) == 0
                || rb_sys::rb_const_defined_at(c, id) == 0
                || !rb_sys::NIL_P(rb_sys::rb_autoload_p(c, id))
            {
                return 0;
            }
            let v = rb_sys::rb_const_get_at(c, id);
            if !rb_sys::RB_TYPE_P(v, T::RUBY_T_CLASS) && !rb_sys::RB_TYPE_P(v, T::RUBY_T_MODULE) {
                return 0;
            }
            c = v;
        }
        c
    });
    match resolved {
        Ok(v) if v != 0 => Some(v),
        _ => None,
    }
}

/// Whether `klass` builds plain `T_OBJECT` instances with Object's allocator (so no
/// `rb_marshal_define_compat` conversion and no custom allocation applies).
pub fn allocates_plain_objects(klass: VALUE) -> bool {
    unsafe {
        let ours = rb_sys::rb_get_alloc_func(klass);
        let object = rb_sys::rb_get_alloc_func(rb_sys::rb_cObject);
        ours.is_some() && ours.map(|f| f as usize) == object.map(|f| f as usize)
    }
}

/// Whether `klass` builds its instances with the allocator of `Struct.new` classes (so
/// not Range, which Marshal converts through `rb_marshal_define_compat`, nor Data).
/// The reference is `Process::Tms`, a core Struct class.
pub fn allocates_structs(klass: VALUE) -> bool {
    static REFERENCE: OnceLock<usize> = OnceLock::new();
    let reference = *REFERENCE.get_or_init(|| {
        resolve_path(b"Process::Tms")
            .and_then(|tms| unsafe { rb_sys::rb_get_alloc_func(tms) })
            .map_or(0, |f| f as usize)
    });
    reference != 0
        && unsafe { rb_sys::rb_get_alloc_func(klass) }.map(|f| f as usize) == Some(reference)
}

/// Whether `klass` builds Ranges with Range's allocator (Range or a subclass), which
/// Marshal converts through Range's compat dumper and loader.
pub fn allocates_ranges(klass: VALUE) -> bool {
    let range = unsafe { rb_sys::rb_get_alloc_func(rb_sys::rb_cRange) }.map(|f| f as usize);
    range.is_some() && unsafe { rb_sys::rb_get_alloc_func(klass) }.map(|f| f as usize) == range
}

/// Whether `klass` builds its instances with Exception's allocator: `T_OBJECT`s that
/// Marshal writes as `o` records whose ivars (`mesg`, `bt`, `bt_locations`, a
/// subclass's `key`, `receiver`, `name`...) are named without an `@`.
pub fn allocates_exceptions(klass: VALUE) -> bool {
    let exception = unsafe { rb_sys::rb_get_alloc_func(rb_sys::rb_eException) }.map(|f| f as usize);
    exception.is_some()
        && unsafe { rb_sys::rb_get_alloc_func(klass) }.map(|f| f as usize) == exception
}
