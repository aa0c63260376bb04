//! Making a new Array of known elements by writing them into it directly.
//!
//! `rb_ary_new_from_values` copies each element through `RARRAY_PTR_USE` (two calls into
//! libruby per Array) and `RB_OBJ_WRITE`: about 100 instructions of the 500 an Array of
//! two Floats costs, and canada.json's parse makes 56,000 of them. Here the elements are
//! written where `rb_ary_new_capa` put the Array's room (in the object when embedded,
//! else its heap buffer), its length set as Ruby sets it. Into a heap buffer, whose
//! allocation may have run the GC, the GC is told of each object written, as
//! `RB_OBJ_WRITE` tells it; an embedded Array is new, young and unmarked when written, so
//! it needs no barrier.
//!
//! Only for up to [`MAX_LEN`] elements, where Ruby itself writes element by element
//! (longer copies use one `rb_gc_writebarrier_remember`, which these Rubies do not all
//! export); only on the Rubies whose `RArray` the bindings describe and where Arrays
//! filled here behave as Ruby's own ([`fills_read_back`], once at the first use);
//! elsewhere `rb_ary_new_from_values` is used.

use std::sync::OnceLock;

use rb_sys::{ruby_rarray_consts, ruby_rarray_flags, VALUE};

/// The longest Array filled here.
pub const MAX_LEN: usize = 16;

/// A new Array of `values`.
///
/// # Safety
/// Every value is a live object kept reachable by the caller, and `values` does not alias
/// Ruby memory that allocating the Array could move.
#[inline]
pub unsafe fn new_array(values: &[VALUE]) -> VALUE {
    if values.len() <= MAX_LEN && available() {
        fill(values)
    } else {
        rb_sys::rb_ary_new_from_values(values.len() as _, values.as_ptr())
    }
}

/// Whether this Ruby's Arrays are filled here: a Ruby whose layout the bindings describe
/// (3.1 to 3.4, the ones tested), and fills that read back. The first call checks them
/// (it makes Arrays).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        (30100..30500).contains(&rb_sys::RUBY_API_VERSION_CODE) && unsafe { fills_read_back() }
    })
}

/// `values` (at most [`MAX_LEN`]) in a new Array.
// rb-sys marks `RArray` deprecated, as Ruby may change it; it is the layout of Ruby's
// public rarray.h on the Rubies `available` admits, and `fills_read_back` checks it.
#[allow(deprecated)]
#[inline(always)]
unsafe fn fill(values: &[VALUE]) -> VALUE {
    let len = values.len();
    let ary = rb_sys::rb_ary_new_capa(len as _);
    let array = ary as *mut rb_sys::RArray;
    let flags = &mut (*array).basic.flags;
    // Room for `len` elements, and nothing allocated from here on: no GC runs, and the
    // buffer (a transient one on 3.1) stays where it is.
    if *flags & ruby_rarray_flags::RARRAY_EMBED_FLAG as VALUE != 0 {
        let slots = std::ptr::addr_of_mut!((*array).as_.ary) as *mut VALUE;
        std::ptr::copy_nonoverlapping(values.as_ptr(), slots, len);
        let mask = ruby_rarray_flags::RARRAY_EMBED_LEN_MASK as VALUE;
        let shift = ruby_rarray_consts::RARRAY_EMBED_LEN_SHIFT as u32;
        *flags = (*flags & !mask) | ((len as VALUE) << shift);
        // An embedded Array was allocated by `rb_ary_new_capa` alone, with nothing
        // allocated since: it is young and unmarked, so no old or marked object gained
        // a reference, and the GC need not hear of these writes (as with the first
        // fields Ruby's own `newobj_of` stores).
        return ary;
    }
    let heap = &mut (*array).as_.heap;
    std::ptr::copy_nonoverlapping(values.as_ptr(), heap.ptr as *mut VALUE, len);
    heap.len = len as _;
    // Allocating the buffer (apart from the object) may have run the GC, which may
    // have marked the Array: the GC is told of each object written, as `RB_OBJ_WRITE`
    // tells it.
    for &v in values {
        if !rb_sys::SPECIAL_CONST_P(v) {
            rb_sys::rb_gc_writebarrier(ary, v);
        }
    }
    ary
}

/// Whether Arrays filled here read back through Ruby's own functions at every length
/// filled here: their length, each element, and a push that must find the room and the
/// length Ruby expects.
unsafe fn fills_read_back() -> bool {
    let fixnum = |i: usize| ((i as VALUE) << 1) | 1;
    // Everything made here stays reachable from `keep` (on the stack) meanwhile.
    let keep = rb_sys::rb_ary_new();
    (0..=MAX_LEN).all(|len| {
        let values: Vec<VALUE> = (0..len)
            .map(|i| {
                // Objects as well as immediates, for the write barrier.
                let v = if i % 2 == 0 {
                    rb_sys::rb_str_new(c"fresh_array".as_ptr(), 11)
                } else {
                    fixnum(i)
                };
                rb_sys::rb_ary_push(keep, v);
                v
            })
            .collect();
        let ary = fill(&values);
        rb_sys::rb_ary_push(keep, ary);
        let read_back = rb_sys::RARRAY_LEN(ary) as usize == len
            && (0..len).all(|i| rb_sys::rb_ary_entry(ary, i as _) == values[i]);
        rb_sys::rb_ary_push(ary, fixnum(99));
        read_back
            && rb_sys::RARRAY_LEN(ary) as usize == len + 1
            && rb_sys::rb_ary_entry(ary, len as _) == fixnum(99)
            && (0..len).all(|i| rb_sys::rb_ary_entry(ary, i as _) == values[i])
    })
}
