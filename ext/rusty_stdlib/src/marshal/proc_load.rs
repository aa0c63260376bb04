//! `Marshal.load(source, proc)` from a String: the native load calls the proc where MRI
//! does (its `r_leave` / `r_post_proc`): after every object read as an object (not as a
//! class or ivar name), frozen first with `freeze: true`, the proc's result taking the
//! object's place (in its Array, Hash, ivar or as the result); also for a link, unless
//! the linked object is still being read; never for a symbol link. Values MRI reads with
//! `r_object` inside a record (an `E` encoding flag, an ivar's value) get it too, and a
//! replaced `E` value is what MRI makes of it (an ivar named `E`, no encoding).
//!
//! Only the plain records are loaded this way (nil, true, false, Integer, Float, String,
//! Symbol, Array, Hash, links and `I` records of them without `encoding` names): a proc
//! may hand back anything, and these are the records whose handling of any value we
//! mirror. Anything else sends the call to the stdlib, decided by a scan of the whole
//! input before the proc first runs (see `Loader::ensure_scanned`).

use std::sync::OnceLock;

use rb_sys::ID;
use rusty_core::marshal as core;

/// Records a load with a proc reads natively.
pub fn supported(t: u8) -> bool {
    matches!(
        t,
        core::TYPE_NIL
            | core::TYPE_TRUE
            | core::TYPE_FALSE
            | core::TYPE_FIXNUM
            | core::TYPE_FLOAT
            | core::TYPE_BIGNUM
            | core::TYPE_STRING
            | core::TYPE_SYMBOL
            | core::TYPE_SYMLINK
            | core::TYPE_LINK
            | core::TYPE_ARRAY
            | core::TYPE_HASH
            | core::TYPE_HASH_DEF
            | core::TYPE_IVAR
    )
}

/// Records inside an `I` record a load with a proc reads natively.
pub fn supported_in_ivar(t: u8) -> bool {
    matches!(
        t,
        core::TYPE_STRING
            | core::TYPE_SYMBOL
            | core::TYPE_ARRAY
            | core::TYPE_HASH
            | core::TYPE_HASH_DEF
    )
}

static ID_CALL: OnceLock<ID> = OnceLock::new();

/// `call`, what MRI sends the proc.
pub fn id_call() -> ID {
    *ID_CALL.get_or_init(|| unsafe { rb_sys::rb_intern(c"call".as_ptr()) })
}
