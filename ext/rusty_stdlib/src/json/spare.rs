//! The output buffer of the last finished generation on each thread, kept for the next
//! one (both generators, json 2's and json 3's).

use std::cell::Cell;

/// Output buffers up to this size are kept for the next generation on the thread. The
/// gem keeps nothing between calls, and a server's threads each keep theirs, so the
/// bound is what one thread may hold on to. Reuse pays for small documents (a malloc
/// and its first page faults per call); generating twitter, citm_catalog and canada
/// (0.5 to 2 MB of output) took the same time with 256 KiB as with 8 MiB here.
const SPARE_BUFFER_MAX: usize = 256 << 10;

thread_local! {
    /// Reusing it saves growing (and page-faulting) a fresh one each time. A generation
    /// nested in a `#to_json` finds it taken and makes its own.
    static SPARE_BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// An empty buffer with room for `capacity` bytes: the thread's spare one if it has it.
pub fn take(capacity: usize) -> Vec<u8> {
    let mut out = SPARE_BUFFER.with(Cell::take);
    out.clear();
    out.reserve(capacity);
    out
}

/// Keeps `out` for the next generation on this thread, unless it is large (or the spare
/// one is larger).
pub fn give_back(out: Vec<u8>) {
    if out.capacity() > SPARE_BUFFER_MAX {
        return;
    }
    SPARE_BUFFER.with(|spare| {
        let other = spare.take();
        spare.set(if other.capacity() > out.capacity() {
            other
        } else {
            out
        });
    });
}
