//! The document walk: json 2.6's `JSON`, `JSON_value`, `JSON_array` and `JSON_object`
//! machines as one loop over an explicit frame stack.
//!
//! How the C machines fail decides the error message, and it is reproduced here:
//! - an array raises at once, quoting from the byte it could not take (451);
//! - an object never raises for bad syntax: it reports failure to its caller, which then
//!   fails at the object's `{` (so a broken object inside objects is reported at the
//!   outermost of them, by the enclosing array or by the document);
//! - a value that cannot be read (a broken literal, string or number) fails at its first
//!   byte in the same way;
//! - the document raises at the byte it could not take (859).

use super::lines;
use super::number::{scan_number, Decimal, NumberScan};
use super::string::{scan_string, unescape};

/// Parser options that change the walk (the rest are the sink's business).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Deepest allowed container nesting; 0 disables the check (and a negative limit,
    /// like the C `int`, rejects the first container).
    pub max_nesting: i64,
    /// Accept `NaN`, `Infinity` and `-Infinity`.
    pub allow_nan: bool,
    /// The depth at which the C parser, which recurses, would run out of machine stack
    /// (the binding estimates it); deeper documents fail with [`ParseError::StackOverflow`].
    pub stack_depth_limit: usize,
    /// json 2.9's single number machine: a number followed by any of `Ee.-` (after
    /// the integer part) fails whole, at its first byte, where 2.6's float machine
    /// falls back to its integer machine and fails at the byte after the integer.
    pub whole_number_fails: bool,
}

/// Receives the values of a document in order. Containers arrive after their contents:
/// `array(n)` takes the last `n` values, `object(n)` the last `n` key/value pairs (keys
/// come from `string(_, true)`).
pub trait Sink {
    type Error;
    fn null(&mut self) -> Result<(), Self::Error>;
    fn boolean(&mut self, value: bool) -> Result<(), Self::Error>;
    fn nan(&mut self) -> Result<(), Self::Error>;
    fn infinity(&mut self, negative: bool) -> Result<(), Self::Error>;
    /// An integer literal, and its value when the scan could read it (see
    /// [`NumberScan::Integer`]).
    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), Self::Error>;
    /// A float literal and its value as read (for `parse_float_fast`).
    fn float(&mut self, text: &[u8], decimal: &Decimal) -> Result<(), Self::Error>;
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), Self::Error>;
    fn array(&mut self, len: usize) -> Result<(), Self::Error>;
    fn object(&mut self, pairs: usize) -> Result<(), Self::Error>;
}

/// Why a document was rejected, in the terms of json 2.6's messages.
#[derive(Debug, PartialEq, Eq)]
pub enum ParseError<E> {
    /// `"<line>: unexpected token at '<excerpt from at>'"` (JSON::ParserError).
    Unexpected { line: u32, at: Option<usize> },
    /// `"nesting of <depth> is too deep"` (JSON::NestingError).
    Nesting { depth: usize },
    /// `"521: incomplete surrogate pair at '<excerpt from at>'"` (JSON::ParserError).
    Surrogate { at: usize },
    /// Deeper than [`Options::stack_depth_limit`] (SystemStackError).
    StackOverflow,
    /// The sink failed.
    Sink(E),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Array,
    Object,
}

struct Frame {
    kind: Kind,
    start: usize,
    count: usize,
}

#[inline(always)]
fn begin_value(b: u8) -> bool {
    matches!(
        b,
        b'n' | b'f' | b't' | b'"' | b'-' | b'[' | b'{' | b'N' | b'I' | b'0'..=b'9'
    )
}

/// Whether the space at `p` is one alone between tokens (`"key": value`), the commonest
/// run of whitespace: the byte after it is neither whitespace nor a comment's `/`, so a
/// whitespace loop would stop right after the space. Both parsers step over it without
/// their loop and its run scan.
#[inline(always)]
pub(super) fn lone_space(src: &[u8], p: usize) -> bool {
    src.get(p + 1).is_some_and(|&b| b > b' ' && b != b'/')
}

/// Skips `ignore*` (whitespace and comments). `Err(at)` where a comment goes wrong: the
/// byte after a lone `/`, or the end of input inside a comment.
#[inline(always)]
fn skip_ignore(src: &[u8], mut p: usize) -> Result<usize, usize> {
    loop {
        match src.get(p) {
            Some(b' ') if lone_space(src, p) => return Ok(p + 1),
            Some(b' ' | b'\t' | b'\r' | b'\n') => {
                p += 1;
                p = skip_spaces(src, p);
            }
            Some(b'/') => p = skip_comment(src, p)?,
            _ => return Ok(p),
        }
    }
}

/// Skips a run of whitespace sixteen bytes at a time (SSE2, part of x86_64): pretty-printed
/// documents are mostly indentation. Elsewhere, eight spaces at a time.
#[inline(always)]
pub(super) fn skip_spaces(src: &[u8], mut p: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: every load reads 16 bytes inside `src`.
        unsafe {
            while p + 16 <= src.len() {
                let x = _mm_loadu_si128(src.as_ptr().add(p) as *const __m128i);
                let ws = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8)),
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\n' as i8)),
                    ),
                    _mm_or_si128(
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\t' as i8)),
                        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\r' as i8)),
                    ),
                );
                let other = !(_mm_movemask_epi8(ws) as u32) & 0xffff;
                if other != 0 {
                    return p + other.trailing_zeros() as usize;
                }
                p += 16;
            }
        }
    }
    const SPACES: u64 = 0x2020_2020_2020_2020;
    while p + 8 <= src.len() {
        let word = u64::from_le_bytes(src[p..p + 8].try_into().unwrap()) ^ SPACES;
        if word != 0 {
            // The first byte that is not a space (little-endian: the lowest one).
            return p + (word.trailing_zeros() / 8) as usize;
        }
        p += 8;
    }
    p
}

#[cold]
fn skip_comment(src: &[u8], p: usize) -> Result<usize, usize> {
    match src.get(p + 1) {
        Some(b'*') => {
            let body = &src[p + 2..];
            match memchr::memmem::find(body, b"*/") {
                Some(k) => Ok(p + 2 + k + 2),
                None => Err(src.len()),
            }
        }
        Some(b'/') => match memchr::memchr(b'\n', &src[p + 2..]) {
            Some(k) => Ok(p + 2 + k + 1),
            None => Err(src.len()),
        },
        Some(_) => Err(p + 1),
        None => Err(src.len()),
    }
}

fn unexpected<E>(line: u32, at: usize) -> ParseError<E> {
    ParseError::Unexpected { line, at: Some(at) }
}

/// What reading one value gave: its end, or a failure at a byte for the caller to report.
enum Read {
    Done(usize),
    Failed(usize),
    /// A container was opened; its first value (or closing bracket) comes next.
    Opened(usize),
}

/// Parses `src` (the whole document) into `sink`. `scratch` is reused for unescaping.
pub fn parse<S: Sink>(
    src: &[u8],
    options: &Options,
    sink: &mut S,
    scratch: &mut Vec<u8>,
) -> Result<(), ParseError<S::Error>> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut p = skip_ignore(src, 0).map_err(|at| unexpected(lines::DOCUMENT, at))?;
    if !src.get(p).is_some_and(|&b| begin_value(b)) {
        return Err(unexpected(lines::DOCUMENT, p));
    }
    loop {
        // `p` is at the first byte of a value.
        let mut read = read_value(src, p, options, sink, scratch, &mut frames)?;
        // Climb: hand the outcome to the enclosing containers until one wants a value.
        loop {
            match read {
                Read::Opened(q) => {
                    // Just after '[' or '{'.
                    let frame = frames.last().expect("opened a frame");
                    match frame.kind {
                        Kind::Array => {
                            let q =
                                skip_ignore(src, q).map_err(|at| unexpected(lines::ARRAY, at))?;
                            match src.get(q) {
                                Some(b']') => {
                                    frames.pop();
                                    sink.array(0).map_err(ParseError::Sink)?;
                                    read = Read::Done(q + 1);
                                }
                                Some(&b) if begin_value(b) => {
                                    p = q;
                                    break;
                                }
                                _ => return Err(unexpected(lines::ARRAY, q)),
                            }
                        }
                        Kind::Object => match skip_ignore(src, q) {
                            Ok(q) if src.get(q) == Some(&b'}') => {
                                frames.pop();
                                sink.object(0).map_err(ParseError::Sink)?;
                                read = Read::Done(q + 1);
                            }
                            Ok(q) => match read_member_key(src, q, sink, scratch)? {
                                Some(v) => {
                                    p = v;
                                    break;
                                }
                                None => read = Read::Failed(q),
                            },
                            Err(at) => read = Read::Failed(at),
                        },
                    }
                }
                Read::Done(end) => {
                    let Some(frame) = frames.last_mut() else {
                        let q =
                            skip_ignore(src, end).map_err(|at| unexpected(lines::DOCUMENT, at))?;
                        if q == src.len() {
                            return Ok(());
                        }
                        return Err(unexpected(lines::DOCUMENT, q));
                    };
                    frame.count += 1;
                    match frame.kind {
                        Kind::Array => {
                            let q =
                                skip_ignore(src, end).map_err(|at| unexpected(lines::ARRAY, at))?;
                            match src.get(q) {
                                Some(b',') => {
                                    let q = skip_ignore(src, q + 1)
                                        .map_err(|at| unexpected(lines::ARRAY, at))?;
                                    match src.get(q) {
                                        // A number after the comma (arrays of numbers) is
                                        // read here and climbs on at once, without a turn
                                        // of the outer loop.
                                        Some(b'-' | b'0'..=b'9') => {
                                            read = read_number(src, q, options, sink)?;
                                        }
                                        Some(&b) if begin_value(b) => {
                                            p = q;
                                            break;
                                        }
                                        _ => return Err(unexpected(lines::ARRAY, q)),
                                    }
                                }
                                Some(b']') => {
                                    let len = frame.count;
                                    frames.pop();
                                    sink.array(len).map_err(ParseError::Sink)?;
                                    read = Read::Done(q + 1);
                                }
                                _ => return Err(unexpected(lines::ARRAY, q)),
                            }
                        }
                        Kind::Object => match skip_ignore(src, end) {
                            Ok(q) if src.get(q) == Some(&b',') => {
                                match read_member_key(src, q + 1, sink, scratch)? {
                                    Some(v) => {
                                        p = v;
                                        break;
                                    }
                                    None => read = Read::Failed(q),
                                }
                            }
                            Ok(q) if src.get(q) == Some(&b'}') => {
                                let pairs = frame.count;
                                frames.pop();
                                sink.object(pairs).map_err(ParseError::Sink)?;
                                read = Read::Done(q + 1);
                            }
                            Ok(q) => read = Read::Failed(q),
                            Err(at) => read = Read::Failed(at),
                        },
                    }
                }
                Read::Failed(mut at) => {
                    // Objects pass failure up as a failure at their '{'.
                    while let Some(frame) = frames.last() {
                        if frame.kind != Kind::Object {
                            break;
                        }
                        at = frame.start;
                        frames.pop();
                    }
                    let line = if frames.is_empty() {
                        lines::DOCUMENT
                    } else {
                        lines::ARRAY
                    };
                    return Err(unexpected(line, at));
                }
            }
        }
    }
}

/// `ignore* '"' name '"' ignore* ':' ignore* begin_value` from `q`: the offset of the
/// value, or `None` if the object fails.
#[inline(always)]
fn read_member_key<S: Sink>(
    src: &[u8],
    q: usize,
    sink: &mut S,
    scratch: &mut Vec<u8>,
) -> Result<Option<usize>, ParseError<S::Error>> {
    let Ok(q) = skip_ignore(src, q) else {
        return Ok(None);
    };
    if src.get(q) != Some(&b'"') {
        return Ok(None);
    }
    let Some(end) = read_string(src, q, true, sink, scratch)? else {
        return Ok(None);
    };
    let Ok(q) = skip_ignore(src, end) else {
        return Ok(None);
    };
    if src.get(q) != Some(&b':') {
        return Ok(None);
    }
    let Ok(q) = skip_ignore(src, q + 1) else {
        return Ok(None);
    };
    if src.get(q).is_some_and(|&b| begin_value(b)) {
        Ok(Some(q))
    } else {
        Ok(None)
    }
}

/// A string literal at `start`: its end (after the closing quote) once handed to the
/// sink, or `None` if the string machine rejects it.
#[inline(always)]
fn read_string<S: Sink>(
    src: &[u8],
    start: usize,
    key: bool,
    sink: &mut S,
    scratch: &mut Vec<u8>,
) -> Result<Option<usize>, ParseError<S::Error>> {
    let Some(scan) = scan_string(src, start) else {
        return Ok(None);
    };
    if scan.escaped {
        scratch.clear();
        unescape(src, start + 1, scan.end, scratch)
            .map_err(|e| ParseError::Surrogate { at: e.at })?;
        sink.string(scratch, key).map_err(ParseError::Sink)?;
    } else {
        sink.string(&src[start + 1..scan.end], key)
            .map_err(ParseError::Sink)?;
    }
    Ok(Some(scan.end + 1))
}

/// A value starting with `-` or a digit at `p`: a number, or `-Infinity`.
#[inline(always)]
fn read_number<S: Sink>(
    src: &[u8],
    p: usize,
    options: &Options,
    sink: &mut S,
) -> Result<Read, ParseError<S::Error>> {
    let sunk = |r: Result<(), S::Error>, end: usize| match r {
        Ok(()) => Ok(Read::Done(end)),
        Err(e) => Err(ParseError::Sink(e)),
    };
    // The second byte first: most numbers are not `-I...`.
    if src.get(p + 1) == Some(&b'I') && src[p..].starts_with(b"-Infinity") {
        if !options.allow_nan {
            return Err(unexpected(lines::MINUS_INFINITY, p));
        }
        return sunk(sink.infinity(true), p + 9);
    }
    match scan_number(src, p) {
        NumberScan::Integer(end, _)
            if options.whole_number_fails
                && matches!(src.get(end), Some(b'E' | b'e' | b'.' | b'-')) =>
        {
            Ok(Read::Failed(p))
        }
        NumberScan::Integer(end, value) => sunk(sink.integer(&src[p..end], value), end),
        NumberScan::Float(end, decimal) => sunk(sink.float(&src[p..end], &decimal), end),
        NumberScan::Invalid => Ok(Read::Failed(p)),
    }
}

#[inline(always)]
fn read_value<S: Sink>(
    src: &[u8],
    p: usize,
    options: &Options,
    sink: &mut S,
    scratch: &mut Vec<u8>,
    frames: &mut Vec<Frame>,
) -> Result<Read, ParseError<S::Error>> {
    let rest = &src[p..];
    let literal = |word: &[u8]| rest.starts_with(word);
    let sunk = |r: Result<(), S::Error>, end: usize| match r {
        Ok(()) => Ok(Read::Done(end)),
        Err(e) => Err(ParseError::Sink(e)),
    };
    match src[p] {
        b'"' => match read_string(src, p, false, sink, scratch)? {
            Some(end) => Ok(Read::Done(end)),
            None => Ok(Read::Failed(p)),
        },
        b'-' | b'0'..=b'9' => read_number(src, p, options, sink),
        b'[' | b'{' => {
            let depth = frames.len() + 1;
            if depth > options.stack_depth_limit {
                return Err(ParseError::StackOverflow);
            }
            if options.max_nesting != 0 && depth as i64 > options.max_nesting {
                return Err(ParseError::Nesting { depth });
            }
            let kind = if src[p] == b'[' {
                Kind::Array
            } else {
                Kind::Object
            };
            frames.push(Frame {
                kind,
                start: p,
                count: 0,
            });
            Ok(Read::Opened(p + 1))
        }
        b'n' if literal(b"null") => sunk(sink.null(), p + 4),
        b't' if literal(b"true") => sunk(sink.boolean(true), p + 4),
        b'f' if literal(b"false") => sunk(sink.boolean(false), p + 5),
        b'N' if literal(b"NaN") => {
            if !options.allow_nan {
                return Err(unexpected(lines::NAN, p));
            }
            sunk(sink.nan(), p + 3)
        }
        b'I' if literal(b"Infinity") => {
            if !options.allow_nan {
                // The C code quotes from one byte before the literal.
                return Err(ParseError::Unexpected {
                    line: lines::INFINITY,
                    at: p.checked_sub(1),
                });
            }
            sunk(sink.infinity(false), p + 8)
        }
        _ => Ok(Read::Failed(p)),
    }
}
