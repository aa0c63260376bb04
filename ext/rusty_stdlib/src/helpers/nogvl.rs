//! Running pure Rust work with the GVL released, so other Ruby threads run meanwhile.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `work` without the GVL and returns its result.
///
/// `work` must not touch any Ruby object or call any Ruby API. A panic inside it is
/// caught on the far side and re-raised here, after the GVL is back, so it becomes a
/// Ruby exception through magnus rather than unwinding through Ruby's C frames.
pub fn without_gvl<F, R>(work: F) -> R
where
    F: FnOnce() -> R,
{
    struct Call<F, R> {
        work: Option<F>,
        result: Option<std::thread::Result<R>>,
    }

    unsafe extern "C" fn trampoline<F: FnOnce() -> R, R>(data: *mut c_void) -> *mut c_void {
        let call = &mut *(data as *mut Call<F, R>);
        let work = call.work.take().expect("without_gvl work runs once");
        call.result = Some(catch_unwind(AssertUnwindSafe(work)));
        std::ptr::null_mut()
    }

    let mut call = Call {
        work: Some(work),
        result: None,
    };
    unsafe {
        rb_sys::rb_thread_call_without_gvl(
            Some(trampoline::<F, R>),
            &mut call as *mut Call<F, R> as *mut c_void,
            None,
            std::ptr::null_mut(),
        );
    }
    match call.result.expect("without_gvl ran its work") {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
