//! Reads of a heap object's header and a String's bytes straight from memory, for hot
//! paths where a C call per object shows up in profiles. Callers pass live heap objects
//! (not immediates such as Fixnums, Symbols or nil).

use rb_sys::VALUE;

/// The flags word of the `RBasic` header every heap object starts with.
#[inline(always)]
pub fn flags(obj: VALUE) -> VALUE {
    // SAFETY: `obj` is a live heap object (see the module comment).
    unsafe { (*(obj as *const rb_sys::RBasic)).flags }
}

/// The object's class (its singleton class if it has one), from the `RBasic` header.
#[inline(always)]
pub fn class_of(obj: VALUE) -> VALUE {
    // SAFETY: as for `flags`.
    unsafe { (*(obj as *const rb_sys::RBasic)).klass }
}

/// A String's bytes. Valid until Ruby code runs or the String is modified.
///
/// Read from the String's struct as Ruby's own `RSTRING_PTR`/`RSTRING_LEN` do: rb-sys's
/// versions of these for Ruby 3.3 and older check the type at every call, even in a
/// release build (3% of json 3's generate of twitter.json on Ruby 3.3 went to them).
// rb-sys marks `RString` deprecated, as Ruby may change it; it is the layout of Ruby's
// public rstring.h on the Rubies the build script sets `rstring_len_field` for.
#[cfg(rstring_len_field)]
#[allow(deprecated)]
#[inline(always)]
pub fn str_bytes<'a>(s: VALUE) -> &'a [u8] {
    // SAFETY: `s` is a live String: its bytes are embedded in the struct unless it is
    // flagged NOEMBED. An empty one is not read (its pointer might be null).
    unsafe {
        let string = &*(s as *const rb_sys::RString);
        let len = string.len as usize;
        if len == 0 {
            return &[];
        }
        let heap = string.basic.flags & rb_sys::ruby_rstring_flags::RSTRING_NOEMBED as VALUE != 0;
        let ptr = if heap {
            string.as_.heap.ptr as *const u8
        } else {
            std::ptr::addr_of!(string.as_.embed.ary) as *const u8
        };
        std::slice::from_raw_parts(ptr, len)
    }
}

/// A String's bytes. Valid until Ruby code runs or the String is modified.
#[cfg(not(rstring_len_field))]
#[inline]
pub fn str_bytes<'a>(s: VALUE) -> &'a [u8] {
    // SAFETY: `s` is a live String; a zero length may come with a null pointer.
    unsafe {
        let len = rb_sys::RSTRING_LEN(s) as usize;
        if len == 0 {
            return &[];
        }
        std::slice::from_raw_parts(rb_sys::RSTRING_PTR(s) as *const u8, len)
    }
}

/// The encoding index of the live String `s`: `ENCODING_GET_INLINED` (public in Ruby's
/// headers) from its flags, or `rb_enc_get_index` for an index too large to be kept
/// there. (rb_enc_get_index's own checks show in profiles of many short strings.)
#[inline(always)]
pub fn encoding_index(s: VALUE) -> i32 {
    use rb_sys::ruby_encoding_consts::*;
    let inline = (flags(s) & RUBY_ENCODING_MASK as VALUE) >> RUBY_ENCODING_SHIFT as u32;
    if inline == RUBY_ENCODING_INLINE_MAX as VALUE {
        unsafe { rb_sys::rb_enc_get_index(s) }
    } else {
        inline as i32
    }
}

/// `ENCODING_SET_INLINED` (public in Ruby's headers) on a String just made by
/// `rb_str_new`, whose encoding bits are binary's 0: `idx` must be an inline index
/// (below `ENCODING_INLINE_MAX`), as UTF-8's and US-ASCII's always are. Saves
/// `rb_enc_associate_index`'s checks, which show in profiles of many short strings.
#[inline(always)]
pub fn set_encoding_index(s: VALUE, idx: i32) {
    const SHIFT: u32 = rb_sys::ruby_encoding_consts::RUBY_ENCODING_SHIFT as u32;
    const MASK: VALUE = rb_sys::ruby_encoding_consts::RUBY_ENCODING_MASK as VALUE;
    let basic = s as *mut rb_sys::RBasic;
    // SAFETY: `s` is a live String that no other code is touching.
    unsafe { (*basic).flags = ((*basic).flags & !MASK) | (((idx as VALUE) << SHIFT) & MASK) };
}

/// `ENC_CODERANGE_SET` (public in Ruby's headers): caches code range `range` (one of
/// `ruby_coderange_type`'s) in String `s`'s flags, as `rb_enc_str_coderange` does once
/// it has scanned a String; `range` must be what that scan would find.
#[inline]
fn set_coderange(s: VALUE, range: u32) {
    const MASK: VALUE = rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_MASK as VALUE;
    let basic = s as *mut rb_sys::RBasic;
    // SAFETY: `s` is a live String; only its code range bits change.
    unsafe { (*basic).flags = ((*basic).flags & !MASK) | (range as VALUE & MASK) };
}

/// `rb_enc_str_coderange`: the code range cached in a String's flags, else found (and
/// then cached in the String) by `scan_coderange`.
#[inline(always)]
pub fn coderange(s: VALUE) -> u32 {
    let cached = flags(s) & rb_sys::ruby_coderange_type::RUBY_ENC_CODERANGE_MASK as VALUE;
    if cached != 0 {
        cached as u32
    } else {
        scan_coderange(s)
    }
}

/// The code range of a String whose flags do not have it yet (a String fresh from a
/// database driver, a file or a parse, say), cached in the String as Ruby's scan would.
/// For UTF-8 and US-ASCII (whose ranges Ruby defines by byte values and UTF-8 validity,
/// see `rusty_core::coderange`) it is found here, several times faster on multibyte text:
/// generating twitter.json from a fresh parse spent two thirds as long again in Ruby's
/// scans as in writing JSON. Other encodings ask Ruby.
#[inline(never)]
fn scan_coderange(s: VALUE) -> u32 {
    use rb_sys::ruby_coderange_type::*;
    use rusty_core::coderange::Utf8Range;
    let index = encoding_index(s);
    let utf8 = unsafe { rb_sys::rb_utf8_encindex() };
    if index != utf8 && index != unsafe { rb_sys::rb_usascii_encindex() } {
        return unsafe { rb_sys::rb_enc_str_coderange(s) as u32 };
    }
    let range = match (
        rusty_core::coderange::utf8_range(str_bytes(s)),
        index == utf8,
    ) {
        (Utf8Range::Ascii, _) => RUBY_ENC_CODERANGE_7BIT,
        (Utf8Range::Valid, true) => RUBY_ENC_CODERANGE_VALID,
        _ => RUBY_ENC_CODERANGE_BROKEN,
    } as u32;
    set_coderange(s, range);
    range
}
