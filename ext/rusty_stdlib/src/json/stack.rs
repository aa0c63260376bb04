//! How deep the gem's C parser could nest on this thread before Ruby raised
//! SystemStackError, so that our (non-recursive) parser fails at about the same depth.

use std::cell::Cell;

/// Machine stack json 2.6.1's parser uses per nesting level (`JSON_parse_value` plus
/// `JSON_parse_array`/`_object`), in thousandths of a byte, and what it uses before the
/// first level, fitted to Debian's Ruby 3.1: 58205 levels fill the main thread's 8 MiB,
/// 7239 a thread's 1 MiB (spec/json checks both against the gem).
const C_MILLIBYTES_PER_LEVEL: usize = 143_910;
const C_BASE_BYTES: usize = 436;

thread_local! {
    /// The lowest address of this thread's stack (0 until looked up).
    static STACK_LOW: Cell<usize> = const { Cell::new(0) };
}

fn stack_low() -> Option<usize> {
    let cached = STACK_LOW.with(Cell::get);
    if cached != 0 {
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
        addr as usize
    };
    STACK_LOW.with(|c| c.set(low));
    Some(low)
}

/// The nesting depth at which the C parser would overflow the stack if called here.
pub fn c_parser_depth_limit() -> usize {
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    match stack_low() {
        Some(low) if here > low => {
            (here - low).saturating_sub(C_BASE_BYTES) * 1000 / C_MILLIBYTES_PER_LEVEL
        }
        _ => usize::MAX,
    }
}
