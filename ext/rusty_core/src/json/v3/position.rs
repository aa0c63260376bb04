//! Where a json 3.x parser error is, in its message's terms: line and column, and the
//! excerpt of the source quoted at that place.

/// The most bytes an excerpt quotes (the gem's `PARSE_ERROR_FRAGMENT_LEN`).
const FRAGMENT_LEN: usize = 32;

/// What a message's `%s` shows of the source at the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snippet<'a> {
    /// The error is at the end of the source: `EOF`, unquoted.
    Eof,
    /// Up to 32 bytes from the error, to the first space, tab, CR, LF or NUL, never ending
    /// in a character the cut split; shown between single quotes.
    Quoted(&'a [u8]),
    /// The error is at a space, tab, CR, LF or NUL, or the cut left nothing: the gem then
    /// prints the source from the error to its first NUL (or its end), unquoted.
    Raw(&'a [u8]),
}

impl Snippet<'_> {
    /// The bytes the gem's `%s` prints.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Snippet::Eof => out.extend_from_slice(b"EOF"),
            Snippet::Quoted(bytes) => {
                out.push(b'\'');
                out.extend_from_slice(bytes);
                out.push(b'\'');
            }
            Snippet::Raw(bytes) => out.extend_from_slice(bytes),
        }
    }
}

#[inline]
fn is_continuation(b: u8) -> bool {
    (0x80..0xc0).contains(&b)
}

/// The excerpt json 3.1.0 quotes for an error at `at`.
pub fn snippet(src: &[u8], at: usize) -> Snippet<'_> {
    if at >= src.len() {
        return Snippet::Eof;
    }
    let rest = &src[at..];
    let mut len = rest
        .iter()
        .take(FRAGMENT_LEN)
        .position(|&b| matches!(b, 0 | b'\n' | b' ' | b'\t' | b'\r'))
        .unwrap_or(rest.len().min(FRAGMENT_LEN));
    // A character cut at the 32nd byte goes whole: back off over its continuation bytes
    // and its lead (the first byte after the excerpt, at `len`, is then no continuation).
    while len > 0 && rest.get(len).copied().is_some_and(is_continuation) {
        len -= 1;
    }
    if len == 0 {
        let end = memchr::memchr(0, rest).unwrap_or(rest.len());
        return Snippet::Raw(&rest[..end]);
    }
    Snippet::Quoted(&rest[..len])
}

/// The length of the well-formed UTF-8 character at the start of `bytes` (Ruby's UTF-8,
/// which is Unicode's: no overlong forms, surrogates or code points above U+10FFFF), or
/// `None` if none starts there.
#[inline]
fn char_len(bytes: &[u8]) -> Option<usize> {
    let lead = *bytes.first()?;
    let (len, second) = match lead {
        0x00..=0x7f => return Some(1),
        0xc2..=0xdf => (2, 0x80..=0xbf),
        0xe0 => (3, 0xa0..=0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80..=0xbf),
        0xed => (3, 0x80..=0x9f),
        0xf0 => (4, 0x90..=0xbf),
        0xf1..=0xf3 => (4, 0x80..=0xbf),
        0xf4 => (4, 0x80..=0x8f),
        _ => return None,
    };
    let seq = bytes.get(..len)?;
    (second.contains(&seq[1]) && seq[2..].iter().all(|&b| is_continuation(b))).then_some(len)
}

/// How many characters `bytes` holds as Ruby counts them: a well-formed UTF-8 character
/// is one, and so is each byte that does not start one.
pub fn char_count(bytes: &[u8]) -> usize {
    let mut count = 0;
    let mut i = 0;
    while i < bytes.len() {
        // ASCII runs a word at a time.
        while i + 8 <= bytes.len() {
            let word = u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
            if word & 0x8080_8080_8080_8080 != 0 {
                break;
            }
            count += 8;
            i += 8;
        }
        if i >= bytes.len() {
            break;
        }
        i += char_len(&bytes[i..]).unwrap_or(1);
        count += 1;
    }
    count
}

/// The 1-based line and column of byte `at`: lines end at LF only, and the column counts
/// the characters before `at` on its line ([`char_count`]).
pub fn line_column(src: &[u8], at: usize) -> (usize, usize) {
    let before = &src[..at.min(src.len())];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |nl| nl + 1);
    (line, char_count(&before[line_start..]) + 1)
}
