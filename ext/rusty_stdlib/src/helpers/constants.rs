//! Remembering a constant lookup's answer until Ruby's constants change.
//!
//! `rb_const_get` (under `protect`, as it may call `const_missing`) costs about 250
//! instructions, 4% of a small `JSON.generate`. Ruby 3.1 keeps one global serial,
//! `ruby_vm_global_constant_state`, that every constant definition, removal, visibility
//! change and module inclusion moves; its own inline constant caches are valid exactly
//! while it stays put, and so is an answer remembered here. libruby 3.1 exports it (not
//! in its public headers; looked up once). Ruby 3.2 replaced it with per-name caches,
//! so there (and wherever it is missing) nothing is remembered and every check looks up.

use std::{cell::Cell, ffi::c_void, sync::OnceLock};

use rb_sys::VALUE;

static SERIAL: OnceLock<Option<usize>> = OnceLock::new();

/// The current constant serial, where this Ruby has one.
pub fn serial() -> Option<u64> {
    let address = (*SERIAL.get_or_init(|| unsafe {
        let symbol: *mut c_void = libc::dlsym(
            libc::RTLD_DEFAULT,
            c"ruby_vm_global_constant_state".as_ptr(),
        );
        (!symbol.is_null()).then_some(symbol as usize)
    }))?;
    // SAFETY: a `rb_serial_t` (an unsigned long) inside libruby, alive for the process;
    // written only by the thread holding the GVL of some Ractor, and a torn or stale read
    // can only differ from the remembered value, which makes the caller look up again.
    Some(unsafe { std::ptr::read_volatile(address as *const u64) })
}

/// A yes/no answer about a constant seen from `owner`, remembered per thread (so no two
/// Ractors share it) together with the serial it was found at.
pub struct Remembered {
    answer: &'static std::thread::LocalKey<Cell<(VALUE, u64)>>,
}

impl Remembered {
    pub const fn new(answer: &'static std::thread::LocalKey<Cell<(VALUE, u64)>>) -> Self {
        Remembered { answer }
    }

    /// Whether `check` said yes for `owner` at the current serial (without running it
    /// again), else runs it and remembers a yes. The serial is read before `check` runs:
    /// a constant defined during the check (an autoload, say) leaves a stale serial
    /// behind, which the next call does not match.
    pub fn check<E>(
        &self,
        owner: VALUE,
        check: impl FnOnce() -> Result<bool, E>,
    ) -> Result<bool, E> {
        let serial = serial();
        if let Some(serial) = serial {
            if self.answer.with(Cell::get) == (owner, serial) {
                return Ok(true);
            }
        }
        let yes = check()?;
        if let (true, Some(serial)) = (yes, serial) {
            self.answer.with(|answer| answer.set((owner, serial)));
        }
        Ok(yes)
    }
}
