//! Walking a Hash whose walk runs no Ruby code, without `rb_hash_foreach`'s guard; and
//! making a Hash at the size it will have.
//!
//! `rb_hash_foreach` raises if the Hash changes during the walk, and so marks the Hash as
//! being iterated and unmarks it under `rb_ensure` (a `setjmp`) on every call, which
//! showed as 8% of a JSON generate profile of citm_catalog.json (one call per Hash).
//! A walk whose callback runs no Ruby code and raises nothing cannot see the Hash change,
//! so nothing needs restoring: there the table itself is walked, in the same order, by
//! `rb_hash_stlike_foreach` (exported by libruby 3.1 to 3.4, not declared in its public
//! headers; looked up once, `rb_hash_foreach` where it is missing), or, on Ruby 3.1, 3.3
//! and 3.4, read straight from the table (`hash_layout`), which saves a call per pair.

use std::{ffi::c_void, os::raw::c_int, sync::OnceLock};

use rb_sys::VALUE;

use super::hash_layout::Pairs;

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

/// Calls `each(key, value)` for each pair of `hash`, in `rb_hash_foreach`'s order, until
/// it returns an error, which is returned. Reads the table directly where
/// `hash_layout` knows it (a loop without a call through Ruby per pair), else
/// [`foreach_quiet`].
///
/// # Safety
/// `hash` is a live Hash, and `each` runs no Ruby code and raises nothing.
#[inline(always)]
pub unsafe fn each_pair_quiet<E>(
    hash: VALUE,
    mut each: impl FnMut(VALUE, VALUE) -> Result<(), E>,
) -> Result<(), E> {
    if let Some(mut pairs) = Pairs::of(hash) {
        while let Some((key, value)) = pairs.next() {
            each(key, value)?;
        }
        return Ok(());
    }
    let mut walk = QuietWalk {
        each: &mut each,
        result: Ok(()),
        panic: None,
    };
    foreach_quiet(
        hash,
        quiet_pair::<E>,
        &mut walk as *mut QuietWalk<E> as VALUE,
    );
    if let Some(panic) = walk.panic {
        std::panic::resume_unwind(panic);
    }
    walk.result
}

struct QuietWalk<'a, E> {
    each: &'a mut dyn FnMut(VALUE, VALUE) -> Result<(), E>,
    result: Result<(), E>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

/// [`each_pair_quiet`]'s callback for [`foreach_quiet`]. A panic stops the walk and
/// goes on unwinding once Ruby's frames are left (it must not cross them).
unsafe extern "C" fn quiet_pair<E>(key: VALUE, value: VALUE, arg: VALUE) -> c_int {
    let walk = &mut *(arg as *mut QuietWalk<E>);
    let stop = rb_sys::st_retval::ST_STOP as c_int;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (walk.each)(key, value))) {
        Ok(Ok(())) => rb_sys::st_retval::ST_CONTINUE as c_int,
        Ok(Err(e)) => {
            walk.result = Err(e);
            stop
        }
        Err(panic) => {
            walk.panic = Some(panic);
            stop
        }
    }
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

type NewWithCapacity = unsafe extern "C" fn(std::os::raw::c_long) -> VALUE;

/// An empty Hash with room for `pairs` pairs: `rb_hash_new_capa` (Ruby 3.2+) or
/// `rb_hash_new_with_size` (3.1), which neither Ruby declares in its public headers, so
/// looked up once by name; `rb_hash_new` where neither is found. With more than 8 pairs
/// this saves growing the st table while it is filled; on 3.1 it also allocates the
/// ar_table of a smaller Hash up front.
pub fn new_with_capacity(pairs: usize) -> VALUE {
    static SIZED: OnceLock<Option<NewWithCapacity>> = OnceLock::new();
    let sized = SIZED.get_or_init(|| {
        [c"rb_hash_new_capa", c"rb_hash_new_with_size"]
            .iter()
            .find_map(|name| {
                let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                // SAFETY: both have the signature `VALUE (long)`.
                (!f.is_null())
                    .then(|| unsafe { std::mem::transmute::<*mut c_void, NewWithCapacity>(f) })
            })
    });
    match sized {
        Some(new_with_capacity) => unsafe { new_with_capacity(pairs as _) },
        None => unsafe { rb_sys::rb_hash_new() },
    }
}
