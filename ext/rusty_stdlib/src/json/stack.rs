//! How deep the gem's C parser could nest on this thread before Ruby raised
//! SystemStackError, so that our (non-recursive) parser fails at about the same depth.

use std::cell::Cell;

/// What the gem's parser uses before the first level (the per-level use is the
/// dialect's, `Dialect::c_stack_millibytes_per_level`).
const C_BASE_BYTES: usize = 436;

/// A Fiber's machine stack as the C parser sees it: Ruby 3.1's default
/// (`RUBY_FIBER_MACHINE_STACK_SIZE`, 512 KiB) plus what the fiber pool adds, fitted to
/// the gem overflowing at 3660 levels in a fresh Fiber.
const FIBER_DEFAULT_BYTES: usize = 512 * 1024;
const FIBER_EXTRA_BYTES: usize = 5_100;

thread_local! {
    /// This thread's stack as (lowest address, size); (0, 0) until looked up.
    static STACK: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

fn thread_stack() -> Option<(usize, usize)> {
    let cached = STACK.with(Cell::get);
    if cached.0 != 0 {
        return Some(cached);
    }
    // Linux/glibc: for the main thread this reads /proc/self/maps, hence the cache.
    let low = unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 {
            return None;
        }
        (addr as usize, size)
    };
    STACK.with(|c| c.set(low));
    Some(low)
}

/// The machine stack size of Fibers in this process (Ruby reads the variable at boot).
fn fiber_stack_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        std::env::var("RUBY_FIBER_MACHINE_STACK_SIZE")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(FIBER_DEFAULT_BYTES)
            + FIBER_EXTRA_BYTES
    })
}

/// The nesting depth at which the C parser, using `millibytes_per_level` thousandths of
/// a byte of machine stack per level, would overflow the stack if called here.
pub fn c_parser_depth_limit(millibytes_per_level: usize) -> usize {
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    let remaining = match thread_stack() {
        Some((low, size)) if here > low && here - low <= size => here - low,
        Some(_) => {
            // Not on the thread's stack: inside a Fiber, whose stack Ruby measures from
            // the fiber's start (ruby_stack_length counts VALUE-sized words).
            let used = unsafe { rb_sys::ruby_stack_length(std::ptr::null_mut()) } as usize
                * std::mem::size_of::<rb_sys::VALUE>();
            fiber_stack_bytes().saturating_sub(used)
        }
        None => return usize::MAX,
    };
    remaining.saturating_sub(C_BASE_BYTES) * 1000 / millibytes_per_level
}
