//! Response heads as Net::HTTP (net-http 0.2.0 / 0.4.1) reads them: the status line and
//! header lines, with MRI's permissive regexps.

use std::{borrow::Cow, ops::Range};

/// `\s` of Ruby's regexps on a binary string: space, `\t`, `\n`, `\v`, `\f`, `\r`.
#[inline]
pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The parts of a status line that matched
/// `/\AHTTP(?:\/(\d+\.\d+))?\s+(\d\d\d)(?:\s+(.*))?\z/in`, as byte ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    pub version: Option<Range<usize>>,
    pub code: Range<usize>,
    pub message: Option<Range<usize>>,
}

fn digits_end(line: &[u8], from: usize) -> usize {
    from + line[from..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

fn spaces_end(line: &[u8], from: usize) -> usize {
    from + line[from..].iter().take_while(|&&b| is_space(b)).count()
}

/// Matches `line` like `Net::HTTPResponse.read_status_line`'s regexp, or `None`.
///
/// The regexp never needs to backtrack into a different result: `\d+` runs must be
/// followed by `.` or `\s`, `\s+` runs by a digit or by `(.*)`, so taking each run
/// whole is the only way to match.
pub fn parse_status_line(line: &[u8]) -> Option<StatusLine> {
    if line.len() < 4 || !line[..4].eq_ignore_ascii_case(b"HTTP") {
        return None;
    }
    let mut at = 4;
    let mut version = None;
    if line.get(at) == Some(&b'/') {
        let major_end = digits_end(line, at + 1);
        if major_end == at + 1 || line.get(major_end) != Some(&b'.') {
            return None;
        }
        let minor_end = digits_end(line, major_end + 1);
        if minor_end == major_end + 1 {
            return None;
        }
        version = Some(at + 1..minor_end);
        at = minor_end;
    }
    let code_start = spaces_end(line, at);
    if code_start == at {
        return None;
    }
    let code = code_start..code_start + 3;
    if line.len() < code.end || !line[code.clone()].iter().all(u8::is_ascii_digit) {
        return None;
    }
    at = code.end;
    if at == line.len() {
        return Some(StatusLine {
            version,
            code,
            message: None,
        });
    }
    let message_start = spaces_end(line, at);
    // `(.*)` matches anything but a newline up to the end; `\s+` took every leading one.
    if message_start == at || line[message_start..].contains(&b'\n') {
        return None;
    }
    Some(StatusLine {
        version,
        code,
        message: Some(message_start..line.len()),
    })
}

/// `line.sub(/\s+\z/, '')`: without trailing whitespace.
pub fn trim_end(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|&b| !is_space(b))
        .map_or(0, |i| i + 1);
    &line[..end]
}

#[inline]
fn is_strippable(b: u8) -> bool {
    b == 0 || is_space(b)
}

/// `String#strip` on a binary string: whitespace and NUL off both ends.
pub fn strip(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_strippable(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| !is_strippable(b))
        .map_or(start, |i| i + 1);
    &s[start..end.max(start)]
}

/// `s.split(/\s*:\s*/, 2)`: the name and value around the first colon (with the
/// whitespace next to it removed), or just the name when there is no colon; `None` for
/// an empty `s` (`split` returns `[]`).
pub fn split_field(s: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    if s.is_empty() {
        return None;
    }
    let Some(colon) = memchr::memchr(b':', s) else {
        return Some((s, None));
    };
    let key_end = s[..colon]
        .iter()
        .rposition(|&b| !is_space(b))
        .map_or(0, |i| i + 1);
    let value_start = spaces_end(s, colon + 1);
    Some((&s[..key_end], Some(&s[value_start..])))
}

/// One header line as `each_response_header` takes it apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderLine<'a> {
    /// The trimmed line starts with a space / a tab (a continuation line if so).
    pub leading_space: bool,
    pub leading_tab: bool,
    /// `line.strip`, which a continuation line appends to the value.
    pub stripped: &'a [u8],
    /// `line.strip.split(/\s*:\s*/, 2)`: `None`s where the array has no element.
    pub name: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// Takes apart a line read by `sock.readuntil("\n", true)`; `None` for the empty line
/// that ends the head.
pub fn parse_header_line(raw: &[u8]) -> Option<HeaderLine<'_>> {
    let line = trim_end(raw);
    if line.is_empty() {
        return None;
    }
    let stripped = strip(line);
    let (name, value) = match split_field(stripped) {
        Some((name, value)) => (Some(name), value),
        None => (None, None),
    };
    Some(HeaderLine {
        leading_space: line[0] == b' ',
        leading_tab: line[0] == b'\t',
        stripped,
        name,
        value,
    })
}

/// `line.slice(/[0-9a-fA-F]+/)`: the first run of hex digits in a chunk-size line.
pub fn chunk_size_digits(line: &[u8]) -> Option<&[u8]> {
    let start = line.iter().position(u8::is_ascii_hexdigit)?;
    let len = line[start..]
        .iter()
        .take_while(|b| b.is_ascii_hexdigit())
        .count();
    Some(&line[start..start + len])
}

/// `digits.hex` for a run of hex digits, or `None` when it does not fit in a `u64`
/// (Ruby then makes a Bignum).
pub fn hex_u64(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &b| {
        let digit = (b as char).to_digit(16)? as u64;
        acc.checked_mul(16)?.checked_add(digit)
    })
}

/// A response's header lines as `each_response_header` yields them: `(name, value,
/// read_to)` with continuation lines folded in, and the bytes they took up (through the
/// line that ends the head). Names and unfolded values borrow the buffer; only a value
/// that continuation lines were folded into is copied. `read_to` is how many bytes the
/// stdlib's loop has read when it yields the field: it yields a field once it has read
/// the line after it (the next field's first line, or the line that ends the head).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderBlock<'a> {
    pub consumed: usize,
    pub fields: Vec<HeaderField<'a>>,
}

/// `(name, value, read_to)`, see [`HeaderBlock`].
pub type HeaderField<'a> = (&'a [u8], Cow<'a, [u8]>, usize);

/// Reads header lines from `buf` up to the (whitespace-only) line that ends the head,
/// folding continuation lines as the stdlib's loop does. `None` when `buf` ends first
/// (the caller reads more, line by line), at a line the stdlib raises for (no colon),
/// and when a value holds a CR or LF (Net::HTTPHeader#add_field raises for those while
/// the stdlib is still reading; the caller's line-by-line path keeps that order).
pub fn header_block(buf: &[u8]) -> Option<HeaderBlock<'_>> {
    let mut at = 0;
    let mut fields: Vec<HeaderField<'_>> = Vec::with_capacity(16);
    loop {
        let nl = memchr::memchr(b'\n', &buf[at..])?;
        let raw = &buf[at..at + nl + 1];
        at += nl + 1;
        let Some(line) = parse_header_line(raw) else {
            break;
        };
        match fields.last_mut() {
            // `line[0] == " " or line[0] == "\t" and value`: a value exists once a
            // field has been read.
            Some((_, value, _)) if line.leading_space || line.leading_tab => {
                let value = value.to_mut();
                if !value.is_empty() {
                    value.push(b' ');
                }
                value.extend_from_slice(line.stripped);
            }
            previous => {
                if let Some((_, _, read_to)) = previous {
                    *read_to = at;
                }
                fields.push((line.name?, Cow::Borrowed(line.value?), 0));
            }
        }
    }
    if let Some((_, _, read_to)) = fields.last_mut() {
        *read_to = at;
    }
    if fields
        .iter()
        .any(|(_, value, _)| value.iter().any(|&b| b == b'\r' || b == b'\n'))
    {
        return None;
    }
    Some(HeaderBlock {
        consumed: at,
        fields,
    })
}
