//! A call into Ruby code that returns twice.
//!
//! A hook can capture a continuation (`callcc`) and call it after the walk that called
//! the hook has finished. Ruby then copies the walk's machine stack back and returns into
//! the hook call a second time, in Rust frames whose heap state (buffers, tables) was
//! freed when the walk ended. MRI detects this in Marshal (`check_dump_arg` /
//! `check_load_arg`: "Marshal.dump reentered at marshal_dump") because its state lives
//! in a heap object it clears at the end; ours lives in the frames, so each such call
//! is given a ticket kept in a list while the call is under way (see
//! [`ONE_NATIVE_THREAD_PER_RUBY_THREAD`] for which list): a return that finds its ticket
//! gone is the second one.
//!
//! On the second return nothing of the walk may be touched, not even by destructors
//! (they would free its buffers again), so [`raise_second_return`] raises straight from
//! where it is called, without unwinding the Rust frames: their state was already
//! dropped once, when the walk ended the first time.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use magnus::{error::ErrorType, rb_sys::AsRawValue, Error};
use rb_sys::VALUE;

/// Whether a Ruby thread always runs on the native thread it started on, so that the
/// tickets can be kept per native thread. Not so from Ruby 3.3, whose M:N scheduler
/// (always on in Ractors other than the main one, and in the main one with
/// `RUBY_MN_THREADS=1`) can resume a Ruby thread on another native thread: a call would
/// then return where its ticket is not, and look like a second return.
const ONE_NATIVE_THREAD_PER_RUBY_THREAD: bool = rb_sys::RUBY_API_VERSION_CODE < 30300;

thread_local! {
    /// Tickets of the calls under way on this thread (Fibers may finish them out of
    /// order), where tickets are kept per native thread.
    static UNDER_WAY: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Tickets of the calls under way in the process, where they are not kept per native
/// thread; the lock is never held across a call into Ruby.
static SHARED_UNDER_WAY: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// The next ticket: unique in the process, whichever list it goes to.
static NEXT_TICKET: AtomicU64 = AtomicU64::new(0);

/// Runs `f` on the list of tickets under way that this thread's calls use.
#[inline]
fn with_under_way<R>(f: impl FnOnce(&mut Vec<u64>) -> R) -> R {
    if ONE_NATIVE_THREAD_PER_RUBY_THREAD {
        UNDER_WAY.with(|under_way| f(&mut under_way.borrow_mut()))
    } else {
        // Nothing panics while the lock is held, but a poisoned list is still sound.
        let mut under_way = SHARED_UNDER_WAY
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut under_way)
    }
}

/// One call into Ruby code that may capture a continuation.
pub struct HookCall {
    ticket: u64,
    /// 0 while under way, 1 after its first return, 2 on a second return.
    returns: Cell<u8>,
}

impl HookCall {
    /// To be made right before the call.
    pub fn start() -> HookCall {
        let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
        with_under_way(|under_way| under_way.push(ticket));
        HookCall {
            ticket,
            returns: Cell::new(0),
        }
    }

    /// Whether the call returned for the first time. To be asked as soon as it returned
    /// (inside the `protect` around it too, before anything else is done with its
    /// result) and again after the `protect`, which also covers a call that raised.
    #[inline]
    pub fn first_return(&self) -> bool {
        if self.returns.get() == 0 {
            let found = with_under_way(|under_way| {
                match under_way.iter().rposition(|&t| t == self.ticket) {
                    Some(i) => {
                        under_way.swap_remove(i);
                        true
                    }
                    None => false,
                }
            });
            self.returns.set(if found { 1 } else { 2 });
        }
        self.returns.get() == 1
    }
}

/// Raises, on the second return of a call, what MRI raises there: the call's own
/// exception (or `throw`/`break`) when it raised, otherwise a RuntimeError with
/// `message`. Never returns, and leaves the Rust frames between here and Ruby without
/// running their destructors (see the module comment).
///
/// # Safety
/// Only for a call whose [`HookCall::first_return`] said false.
pub unsafe fn raise_second_return(result: Result<VALUE, Error>, message: String) -> ! {
    let exception = match result {
        Ok(_) => {
            let e = rb_sys::rb_exc_new(
                rb_sys::rb_eRuntimeError,
                message.as_ptr() as *const _,
                message.len() as _,
            );
            drop(message);
            e
        }
        Err(error) => {
            drop(message);
            match error.error_type() {
                ErrorType::Jump(tag) => rb_sys::rb_jump_tag(*tag as i32),
                ErrorType::Exception(e) => e.as_raw(),
                ErrorType::Error(class, text) => {
                    rb_sys::rb_exc_new(class.as_raw(), text.as_ptr() as *const _, text.len() as _)
                }
            }
        }
    };
    rb_sys::rb_exc_raise(exception)
}

/// Runs `call`, a call into Ruby code protected the way magnus's `funcall` protects it,
/// and raises on its second return (see [`raise_second_return`]) with "`what` reentered
/// at `name`", MRI's wording for Marshal. For walks whose stdlib has no such check (the
/// json gem's C code reads its freed buffer there): ours stops instead.
#[inline]
pub fn once<T>(
    what: &str,
    name: &str,
    call: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    let ticket = HookCall::start();
    let result = call();
    if !ticket.first_return() {
        let raw = result.map(|_| rb_sys::Qnil as VALUE);
        unsafe { raise_second_return(raw, format!("{what} reentered at {name}")) }
    }
    result
}
