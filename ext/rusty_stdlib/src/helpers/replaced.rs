//! Calls into the stdlib methods that lib/rusty_stdlib/method_swap.rb replaced with ours.
//! Each stays in its class as a private alias named `__rusty_stdlib_stdlib_<name>`; a
//! native method of ours hands what it leaves to the stdlib to that alias.

use std::{ffi::CStr, sync::OnceLock};

use magnus::{
    rb_sys::{protect, AsRawValue, FromRawValue},
    Error, Value,
};

/// The stdlib method a swap replaced: `Replaced::new(c"__rusty_stdlib_stdlib_generate")`.
pub struct Replaced {
    alias: &'static CStr,
    id: OnceLock<rb_sys::ID>,
}

impl Replaced {
    /// `alias` is the full private name, as MethodSwap.stdlib_name makes it.
    pub const fn new(alias: &'static CStr) -> Replaced {
        Replaced {
            alias,
            id: OnceLock::new(),
        }
    }

    /// The alias's ID, interned at the first call. Call it once at load time (in the
    /// main Ractor) for methods that any Ractor may run: a first use racing in two
    /// Ractors would block one in the `Once` while the other may need it at a GC barrier.
    pub fn id(&self) -> rb_sys::ID {
        *self
            .id
            .get_or_init(|| unsafe { rb_sys::rb_intern(self.alias.as_ptr()) })
    }

    /// Calls the stdlib's method on `receiver` with `args`, the block and (when the
    /// caller passed them) the keywords our method was given: what `super` passed to it
    /// when ours was a prepended module. rb_block_call without a function passes the
    /// current block on, and reaches private methods.
    pub fn call(&self, receiver: Value, args: &[Value]) -> Result<Value, Error> {
        let receiver = receiver.as_raw();
        let name = self.id();
        let raw = protect(|| unsafe {
            rb_sys::rb_block_call_kw(
                receiver,
                name,
                args.len() as _,
                args.as_ptr() as *const rb_sys::VALUE,
                None,
                0,
                rb_sys::rb_keyword_given_p(),
            )
        })?;
        Ok(unsafe { Value::from_raw(raw) })
    }
}
