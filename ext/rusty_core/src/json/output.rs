//! Where the generators write: a growable byte buffer. `Vec<u8>` is one (the tests and
//! fuzz targets use it); the Ruby binding has its own, which ends up as the result
//! String's buffer, so a large document's text is not copied once more at the end.

use std::ops::Deref;

/// A growable buffer of written bytes, seen as the slice written so far.
pub trait Output: Deref<Target = [u8]> {
    /// Makes room for at least `additional` more bytes after the written ones.
    fn reserve(&mut self, additional: usize);

    /// The start of the buffer (the written bytes, then the reserved room).
    fn as_mut_ptr(&mut self) -> *mut u8;

    /// Counts the first `len` bytes of the buffer as written.
    ///
    /// # Safety
    /// `len` is within the reserved room, and every byte before it has been written.
    unsafe fn set_len(&mut self, len: usize);

    /// Forgets the written bytes from `len` on.
    fn truncate(&mut self, len: usize) {
        if len < self.len() {
            // SAFETY: shorter than what is written.
            unsafe { self.set_len(len) }
        }
    }

    #[inline(always)]
    fn push(&mut self, byte: u8) {
        self.reserve(1);
        let len = self.len();
        // SAFETY: one byte is reserved after `len`.
        unsafe {
            *self.as_mut_ptr().add(len) = byte;
            self.set_len(len + 1);
        }
    }

    /// Appends `bytes` (short pieces without a call to `memcpy`, see
    /// [`push_bytes`](super::generate::push_bytes)).
    #[inline(always)]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        super::generate::push_bytes(self, bytes)
    }

    /// Appends `count` copies of `byte`.
    fn push_repeated(&mut self, byte: u8, count: usize) {
        self.reserve(count);
        let len = self.len();
        // SAFETY: `count` bytes are reserved after `len`.
        unsafe {
            std::ptr::write_bytes(self.as_mut_ptr().add(len), byte, count);
            self.set_len(len + count);
        }
    }
}

impl Output for Vec<u8> {
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional)
    }

    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        Vec::as_mut_ptr(self)
    }

    #[inline(always)]
    unsafe fn set_len(&mut self, len: usize) {
        Vec::set_len(self, len)
    }

    #[inline(always)]
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len)
    }

    #[inline(always)]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte)
    }

    #[inline(always)]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes)
    }
}
