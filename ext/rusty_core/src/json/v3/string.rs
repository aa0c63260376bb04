//! json 3.x's strings: finding the closing quote (`json_parse_string`) and unescaping
//! (`json_string_unescape`), with its errors and the options that relax them.

use super::error::Message;
use crate::json::generate::find_escape;
use crate::json::generate::push_bytes;
use crate::json::string::{find_backslash, hex_digits, push_utf32};

/// A string literal's end, or why it was rejected.
pub(super) enum Scanned {
    /// The closing quote is at `end`; `escaped` if a backslash came before it.
    Closed { end: usize, escaped: bool },
    /// No closing quote: the error is at the end of the source.
    Unterminated,
    /// A raw control character at `at`, without `allow_control_characters`.
    Control { at: usize },
}

/// Scans the literal whose opening quote is at `start`. A backslash hides the byte after
/// it, whatever it is (so `\"` does not close the string).
#[inline(always)]
pub(super) fn scan(src: &[u8], start: usize, allow_control: bool) -> Scanned {
    let mut p = find_escape(src, start + 1, false);
    let mut escaped = false;
    loop {
        match src.get(p) {
            None => return Scanned::Unterminated,
            Some(b'"') => return Scanned::Closed { end: p, escaped },
            Some(b'\\') => {
                escaped = true;
                p += 2;
            }
            Some(_) => {
                if !allow_control {
                    return Scanned::Control { at: p };
                }
                p += 1;
            }
        }
        if p >= src.len() {
            return Scanned::Unterminated;
        }
        p = find_escape(src, p, false);
    }
}

/// An unescaping error: its message and the byte the gem's cursor is put at.
#[derive(Clone, Copy)]
pub(super) struct Rejected {
    pub message: Message,
    pub at: usize,
}

/// `unescape_unicode`: the four hex digits at `at` (after a `\u` at `at - 2`), which must
/// lie before `end`.
#[inline(always)]
fn hex4(src: &[u8], at: usize, end: usize) -> Result<u32, Rejected> {
    if at + 4 <= end {
        if let Some(ch) = hex_digits(&src[at..at + 4]) {
            return Ok(ch);
        }
    }
    Err(Rejected {
        message: Message::IncompleteUnicode,
        at: at - 2,
    })
}

/// Appends the unescaped contents `src[begin..end]` (between the quotes of a literal
/// [`scan`] accepted) to `out`.
pub(super) fn unescape(
    src: &[u8],
    begin: usize,
    end: usize,
    allow_control: bool,
    allow_invalid_escape: bool,
    out: &mut Vec<u8>,
) -> Result<(), Rejected> {
    // `copied`: start of the bytes not yet copied (the gem's `p`, where surrogate errors
    // point); `pe`: where the next backslash is looked for.
    let mut copied = begin;
    let mut pe = begin;
    while pe < end {
        // Escapes often come in runs (`\u30b9\u30d1`): the next one needs no search.
        let backslash = if src[pe] == b'\\' {
            pe
        } else {
            match find_backslash(src, pe, end) {
                Some(at) => at,
                None => break,
            }
        };
        push_bytes(out, &src[copied..backslash]);
        pe = backslash + 1;
        let c = src[pe];
        let simple = match c {
            b'"' | b'/' => {
                // The character itself is copied with the next run.
                copied = pe;
                continue;
            }
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'u' => {
                let mut ch = hex4(src, pe + 1, end)?;
                pe += 4; // the last hex digit
                if ch & 0xFC00 == 0xD800 {
                    pe += 1;
                    if pe + 6 <= end && src[pe] == b'\\' && src[pe + 1] == b'u' {
                        let sur = hex4(src, pe + 2, end)?;
                        if sur & 0xFC00 != 0xDC00 {
                            return Err(Rejected {
                                message: Message::InvalidSurrogate,
                                at: copied,
                            });
                        }
                        ch =
                            (((ch & 0x3F) << 10) | ((((ch >> 6) & 0xF) + 1) << 16)) | (sur & 0x3FF);
                        pe += 5;
                    } else {
                        return Err(Rejected {
                            message: Message::IncompleteSurrogate,
                            at: copied,
                        });
                    }
                } else if ch & 0xFC00 == 0xDC00 {
                    return Err(Rejected {
                        message: Message::UnpairedTrailingSurrogate,
                        at: copied,
                    });
                }
                // A scalar value: lone surrogates were rejected, pairs combined.
                push_utf32(out, ch);
                pe += 1;
                copied = pe;
                continue;
            }
            _ => {
                if c < 0x20 && !allow_control {
                    let message = match c {
                        b'\n' => Message::UnescapedNewline,
                        0 => Message::UnescapedNull,
                        _ => Message::ControlCharacter,
                    };
                    return Err(Rejected {
                        message,
                        at: backslash,
                    });
                }
                if !allow_invalid_escape {
                    return Err(Rejected {
                        message: Message::InvalidEscape,
                        at: backslash,
                    });
                }
                c
            }
        };
        out.push(simple);
        pe += 1;
        copied = pe;
    }
    push_bytes(out, &src[copied..end]);
    Ok(())
}
