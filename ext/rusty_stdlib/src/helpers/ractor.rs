//! Declaring native methods Ractor-safe.

use magnus::Error;

/// Runs `define`, whose `define_method` calls then make Ractor-safe methods: ones Ruby
/// lets any Ractor call, not only the main one (`rb_ext_ractor_safe`). For stdlib
/// methods that work in any Ractor, so ours must too; the code behind them keeps no
/// shared mutable state. Methods defined outside it, while the extension loads, stay
/// main-Ractor ones.
pub fn ractor_safe<T>(define: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    unsafe { rb_sys::rb_ext_ractor_safe(true) };
    let defined = define();
    unsafe { rb_sys::rb_ext_ractor_safe(false) };
    defined
}
