//! The generators' output (both json 2's and json 3's): written into the thread's spare
//! buffer and copied into the result String at the end, as the gem does
//! (`fbuffer_to_s`), unless the thread's last output was about as large: then it is
//! written into a String of that size from the start, which becomes the result.
//!
//! For twitter's 467 KB that copy (with its fresh memory) was about a tenth of our whole
//! generate. An app's documents of one kind come in similar sizes, so the last output is
//! the guess.
//!
//! The String is made exactly the guessed size, because of how glibc's malloc picks
//! mmap: a block freed from mmap raises the size above which it maps fresh memory to
//! that block's size. A String made an eighth larger than the guess and shrunk to its
//! text (as the gem's String is as long as its text) left that bound below the next
//! String's size for good, so every generate of twitter got freshly mapped pages (114
//! page faults instead of 4, and twice the time; seen on Ruby 3.4). Made at the guess,
//! every block freed is at least as large as the next String of the same size.

use std::cell::Cell;
use std::ops::Deref;

use magnus::rb_sys::protect;
use rb_sys::VALUE;
use rusty_core::json::Output;

use crate::helpers::raw::set_encoding_index;

/// Output up to this size is written into the thread's spare buffer, which is kept up to
/// this size for the next generation. The gem keeps nothing between calls, and a
/// server's threads each keep theirs, so the bound is what one thread may hold on to.
/// Reuse pays for small documents (a malloc and its first page faults per call).
const SPARE_BUFFER_MAX: usize = 256 << 10;

/// A generation starts in a String when the thread's last output had a length in this
/// range. Below it the copy at the end costs little. Above it, canada's 2 MB in a String
/// made up front page-faulted more than its copy cost; that was measured while the String
/// was still an eighth larger than the guess (see the module's comment), and not since.
const GUESSED: std::ops::RangeInclusive<usize> = (16 << 10)..=(1 << 20);

thread_local! {
    /// A generation nested in a `#to_json` finds it taken and makes its own.
    static SPARE_BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// The length of the last output finished on this thread.
    static LAST_LEN: Cell<usize> = const { Cell::new(0) };
}

/// A generation's output. Its bytes are at `ptr`: in `spare` while they fit in
/// [`SPARE_BUFFER_MAX`], then in `string`'s buffer.
pub struct RubyOutput {
    ptr: *mut u8,
    len: usize,
    cap: usize,
    /// The thread's spare buffer (its own length stays 0: `len` counts).
    spare: Vec<u8>,
    /// The String that becomes the result when the output is guessed large (else 0). It
    /// is only ever referenced from here, on the machine stack, so the GC keeps it, and
    /// does not move it (objects the stack refers to are pinned).
    string: VALUE,
}

impl RubyOutput {
    /// An empty output with room for `capacity` bytes (the State's
    /// `buffer_initial_length`) in the thread's spare buffer.
    pub fn new(capacity: usize) -> RubyOutput {
        let mut spare = SPARE_BUFFER.with(Cell::take);
        spare.clear();
        spare.reserve(capacity.min(SPARE_BUFFER_MAX));
        let mut out = RubyOutput {
            ptr: spare.as_mut_ptr(),
            len: 0,
            cap: spare.capacity(),
            spare,
            string: 0,
        };
        let guess = LAST_LEN.with(Cell::get);
        if GUESSED.contains(&guess) {
            out.string_room(guess, guess);
        }
        out
    }

    /// The output as a String with encoding `encoding_index` (UTF-8's, as
    /// `fbuffer_to_s` makes it). The output is empty afterwards.
    pub fn finish(&mut self, encoding_index: i32) -> VALUE {
        let len = self.len as std::os::raw::c_long;
        let string = self.string;
        let result = if string != 0 {
            // SAFETY: `len` bytes are written into `string`'s buffer, within its
            // capacity. `rb_str_resize` gives back the room left over when it is more than
            // 1 KiB (a realloc that shrinks it): the gem's String is as long as its text.
            unsafe {
                rb_sys::rb_str_set_len(string, len);
                rb_sys::rb_str_resize(string, len)
            }
        } else {
            unsafe { rb_sys::rb_str_new(self.ptr as *const _, len) }
        };
        set_encoding_index(result, encoding_index);
        LAST_LEN.with(|last| last.set(self.len));
        self.string = 0;
        self.len = 0;
        self.ptr = self.spare.as_mut_ptr();
        self.cap = self.spare.capacity();
        result
    }

    /// `reserve`'s way when there is not room enough: the buffer the output is in grows.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let needed = self
            .len
            .checked_add(additional)
            .expect("JSON output larger than the address space");
        if self.string == 0 {
            // SAFETY: the first `len` bytes of `spare` are written; its length goes back
            // to 0 once `reserve` (which counts from it) is done.
            unsafe {
                self.spare.set_len(self.len);
                let mut room = needed.max(2 * self.cap);
                if needed <= SPARE_BUFFER_MAX {
                    room = room.min(SPARE_BUFFER_MAX);
                }
                self.spare.reserve_exact(room - self.len);
                self.spare.set_len(0);
            }
            self.ptr = self.spare.as_mut_ptr();
            self.cap = self.spare.capacity();
            return;
        }
        self.string_room(needed, additional);
    }

    /// Starts the output in a String of `needed` bytes (with nothing written yet), or
    /// grows the one it is in (at least doubling it), so that `additional` more bytes
    /// fit: `needed` in all.
    fn string_room(&mut self, needed: usize, additional: usize) {
        let (len, string) = (self.len, self.string);
        debug_assert!(
            string != 0 || len == 0,
            "a String is started before any output"
        );
        let grown = protect(|| unsafe {
            if string == 0 {
                rb_sys::rb_str_buf_new(needed as _)
            } else {
                // The String's length says how much of its buffer to keep when it moves.
                rb_sys::rb_str_set_len(string, len as _);
                rb_sys::rb_str_modify_expand(string, additional.max(len) as _);
                string
            }
        });
        // Only memory can run out here; a Vec that cannot grow aborts the same way.
        let Ok(string) = grown else {
            eprintln!("rusty_stdlib: no memory for {needed} bytes of JSON output");
            std::process::abort();
        };
        self.string = string;
        self.ptr = unsafe { rb_sys::RSTRING_PTR(string) } as *mut u8;
        self.cap = unsafe { rb_sys::rb_str_capacity(string) } as usize;
    }
}

impl Deref for RubyOutput {
    type Target = [u8];

    #[inline(always)]
    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes at `ptr` are written (and `ptr` is never null).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Output for RubyOutput {
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        if additional > self.cap - self.len {
            self.grow(additional);
        }
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    #[inline(always)]
    unsafe fn set_len(&mut self, len: usize) {
        self.len = len;
    }
}

impl Drop for RubyOutput {
    /// Keeps the spare buffer for the next generation on this thread, unless it is large
    /// (or the thread's is larger).
    fn drop(&mut self) {
        std::hint::black_box(self.string);
        let spare = std::mem::take(&mut self.spare);
        if spare.capacity() > SPARE_BUFFER_MAX {
            return;
        }
        SPARE_BUFFER.with(|kept| {
            let other = kept.take();
            kept.set(if other.capacity() > spare.capacity() {
                other
            } else {
                spare
            });
        });
    }
}
