//! Methods that leave no copy of their result on the machine stack.
//!
//! Ruby's GC scans the machine stack conservatively: any word that looks like the address
//! of a live object keeps that object alive. Rust returns a `Result<Value, Error>` through
//! a slot in the caller's frame, written when the call ends. A parse's caller frames sit
//! at the same addresses in the next parse, so until that one ends, the slot still holds
//! the previous document: every GC in between marks it, whole (22,000 objects for
//! citm_catalog), and frees that much less. In one loop of citm_catalog parses on Ruby
//! 3.1 this took 132 GCs where 99 did without it (3.4 against 2.8 ms per parse); which
//! slots survive depends on the frames above, so other loops showed no difference. The
//! gem's C parser and MRI's Marshal.load return in a register.
//!
//! [`scrubbing!`] runs a magnus method out of line and then zeroes the stack it used, so
//! the next call starts on clean frames. For the methods that return a document: the JSON
//! parses and the Marshal loads.

/// How much stack below the caller gets zeroed: more than a parse's frames down to the
/// Ruby C API calls it makes (copies of its result were found up to 1.2 KiB below), for
/// 128 stores (about 125 instructions, 1% of a small.json parse).
const SCRUB_BYTES: usize = 2048;

/// Zeroes the `SCRUB_BYTES` of stack below its caller's frame, where the frames of the
/// call that just returned were. A leaf that stores through volatile writes: it calls
/// nothing and saves no register, so the caller's result (kept in a register meanwhile)
/// is not written to the stack here either.
#[inline(never)]
pub fn scrub() {
    let mut stale = std::mem::MaybeUninit::<[Word; SCRUB_BYTES / WORD_BYTES]>::uninit();
    let words = stale.as_mut_ptr() as *mut Word;
    for i in 0..SCRUB_BYTES / WORD_BYTES {
        unsafe { words.add(i).write_volatile(ZERO) };
    }
}

/// The widest store every CPU of the target has (SSE2 is part of x86-64).
#[cfg(target_arch = "x86_64")]
type Word = std::arch::x86_64::__m128i;
#[cfg(target_arch = "x86_64")]
const ZERO: Word = unsafe { std::mem::transmute::<u128, Word>(0) };
#[cfg(not(target_arch = "x86_64"))]
type Word = u64;
#[cfg(not(target_arch = "x86_64"))]
const ZERO: Word = 0;
const WORD_BYTES: usize = std::mem::size_of::<Word>();

/// A magnus method (`method!(f, n)` or `function!(f, n)`, followed by one name per
/// argument after `self`) whose frames are zeroed after it returns (see the module):
/// `scrubbing!(function!(load, 2); source, proc)`. When the method raises, nothing is
/// zeroed: a failed call has no result to keep.
#[macro_export]
macro_rules! scrubbing {
    ($method:expr; $($arg:ident),*) => {{
        unsafe extern "C" fn scrubbed(
            rb_self: magnus::Value,
            $($arg: magnus::Value),*
        ) -> magnus::Value {
            // black_box keeps the magnus wrapper out of line, so its frame is below ours.
            let method: unsafe extern "C" fn(
                magnus::Value,
                $($crate::scrubbing!(@value $arg)),*
            ) -> magnus::Value = std::hint::black_box($method);
            let result = unsafe { method(rb_self, $($arg),*) };
            // Kept in a register meanwhile: `scrub` saves none.
            $crate::helpers::stack_scrub::scrub();
            result
        }
        scrubbed as unsafe extern "C" fn(magnus::Value, $($crate::scrubbing!(@value $arg)),*) -> magnus::Value
    }};
    (@value $arg:ident) => { magnus::Value };
}
