//! User serialisation hooks: which classes MRI dumps through `marshal_dump` (`U`
//! records) or `_dump` (`u` records), and which classes can load them without MRI's
//! compat-allocator conversion. Asking runs no Ruby code: `respond_to?` must be the core
//! one, otherwise the caller leaves the whole call to the stdlib.

use rb_sys::VALUE;

use super::ids::{self, ids};

/// How MRI dumps instances of a class.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DumpHook {
    /// No hook: the generic record for the object's type.
    None = 0,
    /// `marshal_dump` (MRI asks for it first): a `U` record.
    MarshalDump = 1,
    /// `_dump`: a `u` record.
    UserDef = 2,
}

impl DumpHook {
    pub fn from_code(code: u8) -> DumpHook {
        match code {
            1 => DumpHook::MarshalDump,
            2 => DumpHook::UserDef,
            _ => DumpHook::None,
        }
    }
}

/// MRI's `rb_obj_respond_to(obj, :marshal_dump / :_dump, TRUE)` for an instance `obj` of
/// the (non-singleton) class `klass`, or `None` when asking would run Ruby code.
pub fn dump_hook(obj: VALUE, klass: VALUE) -> Option<DumpHook> {
    if !ids::respond_to_is_core(klass) {
        return None;
    }
    let ids = ids();
    unsafe {
        if rb_sys::rb_obj_respond_to(obj, ids.marshal_dump, 1) != 0 {
            Some(DumpHook::MarshalDump)
        } else if rb_sys::rb_obj_respond_to(obj, ids.underscore_dump, 1) != 0 {
            Some(DumpHook::UserDef)
        } else {
            Some(DumpHook::None)
        }
    }
}

/// Whether `klass` allocates through one of the core allocators MRI registers with
/// `rb_marshal_define_compat` (Range, Rational, Complex, Exception, Encoding,
/// Process::Status, Thread::Backtrace): MRI then loads a `U`/`u` record through a
/// stand-in object or converts `_load`'s result (Encoding: `_load` returns the name,
/// the compat loader finds the Encoding), which is the stdlib's business.
pub fn has_compat_allocator(klass: VALUE) -> bool {
    let ours = unsafe { rb_sys::rb_get_alloc_func(klass) }.map(|f| f as usize);
    let Some(ours) = ours else { return false };
    compat_allocators().contains(&ours)
}

/// The allocators of the classes MRI (3.1 and 3.3) registers compat loaders for.
fn compat_allocators() -> &'static [usize] {
    static ALLOCATORS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    ALLOCATORS.get_or_init(|| unsafe {
        let mut classes = vec![
            rb_sys::rb_cRange,
            rb_sys::rb_cRational,
            rb_sys::rb_cComplex,
            rb_sys::rb_eException,
            rb_sys::rb_cEncoding,
        ];
        // Not exported by libruby: found by name (core classes, never removed).
        for path in [c"Process::Status", c"Thread::Backtrace"] {
            if let Ok(klass) = magnus::rb_sys::protect(|| rb_sys::rb_path2class(path.as_ptr())) {
                classes.push(klass);
            }
        }
        classes
            .into_iter()
            .filter_map(|c| rb_sys::rb_get_alloc_func(c).map(|f| f as usize))
            .collect()
    })
}

/// Whether a `U` record of `klass` can be loaded natively: a class with its own (non
/// compat) allocator whose instances answer `respond_to?` with the core method. Whether
/// the new instance has `marshal_load` is asked of the instance itself.
pub fn marshal_load_class(klass: VALUE) -> bool {
    unsafe { rb_sys::rb_get_alloc_func(klass) }.is_some()
        && !has_compat_allocator(klass)
        && ids::respond_to_is_core(klass)
}

/// Whether a `u` record of `klass` can be loaded natively: `klass._load` exists (asked
/// without running Ruby code) and no compat conversion follows it.
pub fn underscore_load_class(klass: VALUE) -> bool {
    let meta = unsafe { (*(klass as *const rb_sys::RBasic)).klass };
    ids::respond_to_is_core(meta)
        && !has_compat_allocator(klass)
        && unsafe { rb_sys::rb_obj_respond_to(klass, ids().underscore_load, 1) } != 0
}
