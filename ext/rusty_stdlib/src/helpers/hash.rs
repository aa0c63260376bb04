//! Walking a Hash whose walk runs no Ruby code, without `rb_hash_foreach`'s guard.
//!
//! `rb_hash_foreach` raises if the Hash changes during the walk, and so marks the Hash as
//! being iterated and unmarks it under `rb_ensure` (a `setjmp`) on every call, which
//! showed as 8% of a JSON generate profile of citm_catalog.json (one call per Hash).
//! A walk whose callback runs no Ruby code and raises nothing cannot see the Hash change,
//! so nothing needs restoring: there the table itself is walked, in the same order, by
//! `rb_hash_stlike_foreach` (exported by libruby 3.1 and 3.3, not declared in its public
//! headers; looked up once, `rb_hash_foreach` where it is missing).

use std::{ffi::c_void, os::raw::c_int, sync::OnceLock};

use rb_sys::VALUE;

/// A pair callback, as `rb_hash_foreach` and `st_foreach` call it.
pub type PairFn = unsafe extern "C" fn(VALUE, VALUE, VALUE) -> c_int;

type StlikeForeach = unsafe extern "C" fn(VALUE, PairFn, VALUE) -> c_int;

static STLIKE_FOREACH: OnceLock<Option<StlikeForeach>> = OnceLock::new();

fn stlike_foreach() -> Option<StlikeForeach> {
    *STLIKE_FOREACH.get_or_init(|| unsafe {
        let symbol = libc::dlsym(libc::RTLD_DEFAULT, c"rb_hash_stlike_foreach".as_ptr());
        (!symbol.is_null()).then(|| std::mem::transmute::<*mut c_void, StlikeForeach>(symbol))
    })
}

/// Calls `func(key, value, arg)` for each pair of `hash`, in `rb_hash_foreach`'s order,
/// until it returns `ST_STOP`.
///
/// # Safety
/// `hash` is a live Hash, and `func` runs no Ruby code, raises nothing and returns only
/// `ST_CONTINUE` or `ST_STOP` (it may allocate: a GC leaves the table as it is).
pub unsafe fn foreach_quiet(hash: VALUE, func: PairFn, arg: VALUE) {
    match stlike_foreach() {
        Some(foreach) => {
            foreach(hash, func, arg);
        }
        None => rb_sys::rb_hash_foreach(hash, Some(func), arg),
    }
}
