//! What Ruby's code range scan (`rb_enc_str_coderange`) finds in a String's bytes, for
//! the encodings whose ranges are a matter of byte values and UTF-8 validity.

/// What Ruby's code range scan finds in a String's bytes under UTF-8: only ASCII, valid
/// UTF-8 with some multibyte character, or broken. Ruby's UTF-8 and Rust's agree on
/// validity (no overlong forms, no surrogates, nothing past U+10FFFF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Utf8Range {
    Ascii,
    Valid,
    Broken,
}

/// [`Utf8Range`] of `s`: Rust's UTF-8 check, several times faster than Ruby's
/// character-by-character scan on multibyte text.
pub fn utf8_range(s: &[u8]) -> Utf8Range {
    if s.is_ascii() {
        Utf8Range::Ascii
    } else if std::str::from_utf8(s).is_ok() {
        Utf8Range::Valid
    } else {
        Utf8Range::Broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_range_follows_ruby_utf8_validity() {
        use Utf8Range::*;
        for (bytes, range) in [
            (&b""[..], Ascii),
            (b"plain ascii \x7f", Ascii),
            ("caf\u{e9} \u{6771}\u{4eac} \u{1f600}".as_bytes(), Valid),
            (b"\xf4\x8f\xbf\xbf", Valid),  // U+10FFFF
            (b"\xed\x9f\xbf", Valid),      // U+D7FF
            (b"\xee\x80\x80", Valid),      // U+E000
            (b"\xed\xa0\x80", Broken),     // a surrogate
            (b"\xc0\xaf", Broken),         // overlong '/'
            (b"\xe0\x80\xaf", Broken),     // overlong
            (b"\xf4\x90\x80\x80", Broken), // past U+10FFFF
            (b"\xf5\x80\x80\x80", Broken),
            (b"abc\xe6\x9d", Broken), // truncated
            (b"\x80", Broken),
            (b"\xff", Broken),
        ] {
            assert_eq!(utf8_range(bytes), range, "{bytes:?}");
        }
    }
}
