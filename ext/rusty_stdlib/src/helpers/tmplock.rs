//! Borrowing a Ruby string's bytes while Ruby code may run (other threads, GVL released).

use magnus::{rb_sys::AsRawValue, Error, RString};

/// A string locked with `rb_str_locktmp`: Ruby raises on any attempt to modify or resize
/// it until the guard is dropped, so its byte buffer stays put.
pub struct LockedStr {
    string: RString,
}

impl LockedStr {
    /// Locks `string`, or `None` when it is already locked (e.g. another thread is
    /// hashing the same string right now); the caller then works with the GVL held.
    pub fn try_lock(string: RString) -> Option<LockedStr> {
        let locked: Result<_, Error> =
            magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_locktmp(string.as_raw()) });
        locked.ok().map(|_| LockedStr { string })
    }

    /// The locked bytes. They stay valid while the guard lives: the string cannot be
    /// modified, and `string` on this stack frame keeps it from being collected.
    pub fn bytes(&self) -> &[u8] {
        unsafe { self.string.as_slice() }
    }
}

impl Drop for LockedStr {
    fn drop(&mut self) {
        // Cannot raise: the lock was taken by us, so the flag is set.
        unsafe {
            rb_sys::rb_str_unlocktmp(self.string.as_raw());
        }
    }
}
