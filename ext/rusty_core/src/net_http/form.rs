//! The `application/x-www-form-urlencoded` codec of Ruby's `uri` library.

/// Whether `b` is kept as is by `URI.encode_www_form_component`: `[*\-.0-9A-Z_a-z]`.
#[inline]
pub fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'*' | b'-' | b'.' | b'_')
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// The length `encode_component_into` will append for `input`.
pub fn encoded_len(input: &[u8]) -> usize {
    input
        .iter()
        .map(|&b| if is_unreserved(b) || b == b' ' { 1 } else { 3 })
        .sum()
}

/// Appends `input` encoded like `URI.encode_www_form_component` (bytes taken as they
/// are): unreserved bytes kept, space as `+`, anything else as `%XX` (upper-case hex).
pub fn encode_component_into(out: &mut Vec<u8>, input: &[u8]) {
    out.reserve(encoded_len(input));
    let mut start = 0;
    for (i, &b) in input.iter().enumerate() {
        if is_unreserved(b) {
            continue;
        }
        out.extend_from_slice(&input[start..i]);
        if b == b' ' {
            out.push(b'+');
        } else {
            out.extend_from_slice(&[
                b'%',
                HEX_UPPER[(b >> 4) as usize],
                HEX_UPPER[(b & 15) as usize],
            ]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&input[start..]);
}

/// `input` encoded like `URI.encode_www_form_component`.
pub fn encode_component(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_component_into(&mut out, input);
    out
}

#[inline]
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// Whether `input` has a `%` not followed by two hex digits (`/%(?!\h\h)/`), which makes
/// `URI.decode_www_form_component` raise. Byte-wise; the caller makes sure that matches
/// the character-wise regexp for the string's encoding.
pub fn has_invalid_percent(input: &[u8]) -> bool {
    memchr::memchr_iter(b'%', input).any(|i| !valid_escape_at(input, i))
}

#[inline]
fn valid_escape_at(input: &[u8], i: usize) -> bool {
    let hex = |j: usize| input.get(j).copied().and_then(hex_value).is_some();
    hex(i + 1) && hex(i + 2)
}

/// Appends `input` with `+` as space and each `%hh` as its byte (`gsub(/\+|%\h\h/, …)`);
/// any other `%` stays as it is.
pub fn decode_component_into(out: &mut Vec<u8>, input: &[u8]) {
    out.reserve(input.len());
    let mut i = 0;
    let mut start = 0;
    while i < input.len() {
        match input[i] {
            b'+' => {
                out.extend_from_slice(&input[start..i]);
                out.push(b' ');
                i += 1;
                start = i;
            }
            b'%' => {
                if let (Some(h), Some(l)) = (
                    input.get(i + 1).copied().and_then(hex_value),
                    input.get(i + 2).copied().and_then(hex_value),
                ) {
                    out.extend_from_slice(&input[start..i]);
                    out.push(h << 4 | l);
                    i += 3;
                    start = i;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.extend_from_slice(&input[start..]);
}

/// `input` decoded like `URI.decode_www_form_component` (after its validity check).
pub fn decode_component(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    decode_component_into(&mut out, input);
    out
}

/// One field of a form: the raw (still encoded) key and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawField<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Splits `input` the way `URI.decode_www_form` does with `str.b.each_line(separator)`,
/// `chomp!(separator)` and `partition('=')`: one field per piece, the value empty when
/// there is no `=`. With `isindex`, a first piece without `=` is the value of an empty key.
///
/// `separator` should be non-empty and hold neither `\n` nor `\r` (Ruby's `each_line`
/// and `chomp!` treat those specially); the binding leaves such separators to the
/// stdlib. An empty one is taken as "no separator" (one piece), never a panic.
pub fn split_fields<'a>(input: &'a [u8], separator: &[u8], isindex: bool) -> Vec<RawField<'a>> {
    let mut fields = Vec::new();
    let mut rest = input;
    let mut first = true;
    while !rest.is_empty() {
        let found = if separator.is_empty() {
            None
        } else {
            find(rest, separator)
        };
        let (piece, next) = match found {
            Some(at) => (&rest[..at], &rest[at + separator.len()..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let field = match piece.iter().position(|&b| b == b'=') {
            Some(eq) => RawField {
                key: &piece[..eq],
                value: &piece[eq + 1..],
            },
            None if first && isindex => RawField {
                key: &piece[..0],
                value: piece,
            },
            None => RawField {
                key: piece,
                value: &piece[piece.len()..],
            },
        };
        first = false;
        fields.push(field);
    }
    fields
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        return memchr::memchr(needle[0], haystack);
    }
    memchr::memmem::find(haystack, needle)
}
