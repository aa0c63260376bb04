//! Method, constant and instance variable IDs, interned once.

use std::{ffi::CStr, sync::OnceLock};

/// The ID of `name`, interned at the first call (IDs of static names are never
/// collected; rb_intern of a C string costs a symbol-table lookup every time).
pub fn id(cache: &OnceLock<rb_sys::ID>, name: &CStr) -> rb_sys::ID {
    *cache.get_or_init(|| unsafe { rb_sys::rb_intern(name.as_ptr()) })
}
