//! An object's shape (Ruby 3.3), as far as Marshal.dump looks at it.
//!
//! Ruby 3.3's `w_ivar_each` remembers the shape of the object being written before its
//! ivars are walked and raises "instance variable added to/removed from X instance" when
//! a hook changed it, choosing the word by the two shapes' ivar counts
//! (`next_iv_index`). libruby 3.3 exports `rb_shape_get_shape_id` and
//! `rb_shape_get_shape_by_id`; the shape struct is not public, so its ivar count is read
//! at the offset Ruby 3.3 puts it (after the `edges` pointer and the `edge_name` ID),
//! and `init` checks that on an object it makes before trusting it. Where either is
//! missing (Ruby 3.1 has no shapes) [`Shape::of`] says `None`.

use std::{ffi::c_void, sync::OnceLock};

use rb_sys::VALUE;

type GetShapeId = unsafe extern "C" fn(VALUE) -> u32;
type GetShapeById = unsafe extern "C" fn(u32) -> *const c_void;

/// Offset of `next_iv_index` (a `uint32_t`) in Ruby 3.3's `rb_shape_t`.
const NEXT_IV_INDEX_OFFSET: usize = 16;

static LOOKUP: OnceLock<Option<(GetShapeId, GetShapeById)>> = OnceLock::new();

/// An object's shape id at some moment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Shape(u32);

impl Shape {
    /// `obj`'s shape, where this Ruby has shapes that read as expected.
    pub fn of(obj: VALUE) -> Option<Shape> {
        let (get_id, _) = lookup()?;
        Some(Shape(unsafe { get_id(obj) }))
    }

    /// How many ivars the shape has given slots to (`next_iv_index`).
    pub fn ivar_count(self) -> u32 {
        let (_, by_id) = lookup().expect("a shape was read");
        unsafe { ivar_count(by_id, self.0) }
    }
}

unsafe fn ivar_count(by_id: GetShapeById, id: u32) -> u32 {
    let shape = by_id(id) as *const u8;
    std::ptr::read_unaligned(shape.add(NEXT_IV_INDEX_OFFSET) as *const u32)
}

/// Makes the lookup's first check (which makes an object) now, in the main Ractor at
/// load, rather than in a dump that another Ractor could wait on.
pub fn init() {
    lookup();
}

fn lookup() -> Option<(GetShapeId, GetShapeById)> {
    *LOOKUP.get_or_init(|| unsafe {
        let id = libc::dlsym(libc::RTLD_DEFAULT, c"rb_shape_get_shape_id".as_ptr());
        let by_id = libc::dlsym(libc::RTLD_DEFAULT, c"rb_shape_get_shape_by_id".as_ptr());
        if id.is_null() || by_id.is_null() {
            return None;
        }
        let id: GetShapeId = std::mem::transmute::<*mut c_void, GetShapeId>(id);
        let by_id: GetShapeById = std::mem::transmute::<*mut c_void, GetShapeById>(by_id);
        self_test(id, by_id).then_some((id, by_id))
    })
}

/// Whether a new plain object's shape counts 0 ivars, then 1 and 2 as it gets two.
unsafe fn self_test(id: GetShapeId, by_id: GetShapeById) -> bool {
    let obj = rb_sys::rb_obj_alloc(rb_sys::rb_cObject);
    let mut counts = [0u32; 3];
    counts[0] = ivar_count(by_id, id(obj));
    rb_sys::rb_ivar_set(
        obj,
        rb_sys::rb_intern(c"@rusty_shape_a".as_ptr()),
        rb_sys::Qnil as VALUE,
    );
    counts[1] = ivar_count(by_id, id(obj));
    rb_sys::rb_ivar_set(
        obj,
        rb_sys::rb_intern(c"@rusty_shape_b".as_ptr()),
        rb_sys::Qnil as VALUE,
    );
    counts[2] = ivar_count(by_id, id(obj));
    std::hint::black_box(obj);
    counts == [0, 1, 2]
}
