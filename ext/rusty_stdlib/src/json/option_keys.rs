//! The option Symbols the JSON code reads from options Hashes, made once. Static
//! Symbols are immediates that are never collected, so an options Hash's key is one of
//! them exactly when it is that VALUE (as the gem's C compares). Interning a name at
//! every read cost about 750 instructions a read, more than a small document's walk.

use std::{ffi::CStr, sync::OnceLock};

use rb_sys::VALUE;

/// The static Symbol named `name`.
pub fn static_symbol(name: &CStr) -> VALUE {
    unsafe { rb_sys::rb_id2sym(rb_sys::rb_intern(name.as_ptr())) }
}

/// The generators' options: json 2.6's and 2.9's `State#configure`, json 3's
/// `configure_state` (`escape_slash` is json 2's; the last four are json 3's).
pub struct GeneratorKeys {
    pub indent: VALUE,
    pub space: VALUE,
    pub space_before: VALUE,
    pub object_nl: VALUE,
    pub array_nl: VALUE,
    pub max_nesting: VALUE,
    pub allow_nan: VALUE,
    pub ascii_only: VALUE,
    pub depth: VALUE,
    pub buffer_initial_length: VALUE,
    pub script_safe: VALUE,
    pub escape_slash: VALUE,
    pub strict: VALUE,
    pub allow_duplicate_key: VALUE,
    pub as_json: VALUE,
    pub sort_keys: VALUE,
    pub rfc8785: VALUE,
}

/// The generators' option Symbols (made at the first call: in the main Ractor, at load).
pub fn generator_keys() -> &'static GeneratorKeys {
    static KEYS: OnceLock<GeneratorKeys> = OnceLock::new();
    KEYS.get_or_init(|| GeneratorKeys {
        indent: static_symbol(c"indent"),
        space: static_symbol(c"space"),
        space_before: static_symbol(c"space_before"),
        object_nl: static_symbol(c"object_nl"),
        array_nl: static_symbol(c"array_nl"),
        max_nesting: static_symbol(c"max_nesting"),
        allow_nan: static_symbol(c"allow_nan"),
        ascii_only: static_symbol(c"ascii_only"),
        depth: static_symbol(c"depth"),
        buffer_initial_length: static_symbol(c"buffer_initial_length"),
        script_safe: static_symbol(c"script_safe"),
        escape_slash: static_symbol(c"escape_slash"),
        strict: static_symbol(c"strict"),
        allow_duplicate_key: static_symbol(c"allow_duplicate_key"),
        as_json: static_symbol(c"as_json"),
        sort_keys: static_symbol(c"sort_keys"),
        rfc8785: static_symbol(c"rfc8785"),
    })
}
