//! `Net::HTTPResponse#read_chunked` over Net::BufferedIO's read buffer: whole chunk
//! items are taken from the buffer here; the shim runs the stdlib's own reads for the
//! item the buffer cannot finish (lib/rusty_stdlib/net_http.rb, ChunkedBody).
//!
//! The phase crosses into Ruby as an Integer: a positive one is the chunk data still
//! to read (which the shim reads with `chunk_data_io.read`), the negative ones are
//! below.

use magnus::{rb_sys::AsRawValue, value::ReprValue, Error, RString, Ruby, Value};
use rusty_core::net_http::chunked::{self, Phase};

use super::buffer::{rbuf_consume, read_buffer};
use super::strings::{ascii_compatible, binary_index, encindex, exact_string};

const SIZE: i64 = -1;
const CRLF: i64 = -2;
const TRAILER: i64 = -3;
const DONE: i64 = -4;

fn phase_from(code: i64) -> Option<Phase> {
    match code {
        SIZE => Some(Phase::Size),
        CRLF => Some(Phase::Crlf),
        TRAILER => Some(Phase::Trailer),
        DONE => Some(Phase::Done),
        n if n > 0 => Some(Phase::Data(n as u64)),
        _ => None,
    }
}

fn phase_code(phase: Phase) -> i64 {
    match phase {
        Phase::Size => SIZE,
        Phase::Crlf => CRLF,
        Phase::Trailer => TRAILER,
        Phase::Done => DONE,
        // Sizes come from a fixnum phase or a size line the scan takes only up to
        // i64::MAX, and only ever go down.
        Phase::Data(left) => left as i64,
    }
}

/// Whether `dest << binary_bytes` cannot raise or call Ruby code: an exact, unfrozen
/// String in ASCII-8BIT, or 7-bit in an ASCII-compatible encoding (the append then
/// keeps it or makes it binary; see rb_enc_cr_str_buf_cat).
fn appendable(ruby: &Ruby, dest: Value) -> Option<RString> {
    let string = exact_string(ruby, dest)?;
    if string.is_frozen() {
        return None;
    }
    let index = encindex(string);
    (index == binary_index()
        || (ascii_compatible(string)
            && string.enc_coderange_scan() == magnus::encoding::Coderange::SevenBit))
        .then_some(string)
}

/// Takes whole chunked-body items from `sock`'s read buffer, appending chunk data to
/// `dest`, and consumes what it took (with the stdlib's own `rbuf_consume`). Returns
/// the phase reading stands at; the same phase when nothing could be taken.
pub fn chunked_scan(ruby: &Ruby, sock: Value, dest: Value, phase: Value) -> Result<Value, Error> {
    let Some(mut state) = magnus::Fixnum::from_value(phase).and_then(|p| phase_from(p.to_i64()))
    else {
        return Ok(phase);
    };
    let (Some(dest), Some((buffer, offset))) = (appendable(ruby, dest), read_buffer(sock, false))
    else {
        return Ok(phase);
    };
    if dest.as_raw() == buffer.as_raw() {
        return Ok(phase);
    }
    // No Ruby code runs while the buffer is borrowed: appending to `dest` (another
    // String) only allocates, and the buffer's VALUE stays on the stack (pinned).
    let bytes = unsafe { &buffer.as_slice()[offset..] };
    let (taken, failure) = match append_whole(dest, bytes, state) {
        Some(result) => {
            let (taken, after) = result?;
            state = after;
            (taken, None)
        }
        None => append_each(dest, bytes, &mut state),
    };
    std::hint::black_box(buffer);
    if taken > 0 {
        rbuf_consume(ruby, sock, taken)?;
    }
    if let Some(error) = failure {
        return Err(error);
    }
    Ok(ruby.integer_from_i64(phase_code(state)).as_value())
}

/// The scan with every chunk's data appended in one go: `dest` grown once to its final
/// size and the data copied in. Only when that leaves `dest`'s encoding as the appends
/// would (a binary `dest`, or data without high bytes), else None. On an error
/// (NoMemoryError) nothing is appended. Returns the bytes taken and the phase after.
fn append_whole(
    dest: RString,
    bytes: &[u8],
    phase: Phase,
) -> Option<Result<(usize, Phase), Error>> {
    let mut after = phase;
    let mut pieces: Vec<std::ops::Range<usize>> = Vec::new();
    let binary = encindex(dest) == binary_index();
    // The OR of every data byte (only needed for a dest that is not binary): an
    // OR-reduction vectorises, where `is_ascii` here ran byte by byte.
    let mut or_bytes = 0u8;
    let start = bytes.as_ptr() as usize;
    let taken = chunked::scan(bytes, &mut after, |data| {
        let from = data.as_ptr() as usize - start;
        pieces.push(from..from + data.len());
        if !binary {
            or_bytes |= data.iter().fold(0, |acc, &b| acc | b);
        }
        true
    });
    if !binary && or_bytes >= 0x80 {
        return None;
    }
    let total: usize = pieces.iter().map(|piece| piece.len()).sum();
    if total == 0 {
        return Some(Ok((taken, after)));
    }
    let appended = magnus::rb_sys::protect(|| unsafe {
        let dest = dest.as_raw();
        let len = rb_sys::RSTRING_LEN(dest);
        // Independent, unfrozen (see appendable), with room for `total` more bytes;
        // clears the coderange, which Ruby finds again when asked.
        rb_sys::rb_str_modify_expand(dest, total as _);
        let mut at = (rb_sys::RSTRING_PTR(dest) as *mut u8).add(len as usize);
        for piece in &pieces {
            std::ptr::copy_nonoverlapping(bytes[piece.clone()].as_ptr(), at, piece.len());
            at = at.add(piece.len());
        }
        rb_sys::rb_str_set_len(dest, len + total as std::os::raw::c_long);
        dest
    });
    Some(appended.map(|_| (taken, after)))
}

/// The scan appending chunk by chunk (`dest << data`'s encoding rules); stops in front
/// of a chunk whose append raised. Returns the bytes taken and that error.
fn append_each(dest: RString, bytes: &[u8], phase: &mut Phase) -> (usize, Option<Error>) {
    let mut failure = None;
    let taken = chunked::scan(bytes, phase, |data| {
        let appended = magnus::rb_sys::protect(|| unsafe {
            rb_sys::rb_enc_str_buf_cat(
                dest.as_raw(),
                data.as_ptr().cast(),
                data.len() as _,
                rb_sys::rb_enc_from_index(binary_index()),
            )
        });
        match appended {
            Ok(_) => true,
            Err(error) => {
                failure = Some(error);
                false
            }
        }
    });
    (taken, failure)
}
