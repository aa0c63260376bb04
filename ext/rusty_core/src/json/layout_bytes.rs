//! The bytes of a layout string (`indent: "  "`, `object_nl: "\n"`...) and of the
//! delimiters made from them: kept inline when short, as they nearly always are, so that
//! configuring a State, copying its Config for a generation and making the delimiters
//! allocate nothing. (Allocated, they were ten `malloc`s and `free`s per small
//! `JSON.pretty_generate`, a tenth of its time.)

use std::{ops::Deref, sync::Arc};

/// Bytes kept inline up to this many.
const INLINE: usize = 22;

#[derive(Clone, Debug)]
pub enum LayoutBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Shared(Arc<[u8]>),
}

impl LayoutBytes {
    /// One byte: the compact layout's `:` or `,`, made without `concat`'s copying loop
    /// (which was about 200 instructions of a small `JSON.generate(obj, opts)`).
    pub const fn byte(byte: u8) -> LayoutBytes {
        LayoutBytes::short(&[byte])
    }

    /// `short` (at most 22 bytes; longer does not compile in a constant) kept inline:
    /// for layouts known in advance, such as `JSON.pretty_generate`'s.
    pub const fn short(short: &[u8]) -> LayoutBytes {
        assert!(short.len() <= INLINE, "a short layout string");
        let mut bytes = [0; INLINE];
        let mut i = 0;
        while i < short.len() {
            bytes[i] = short[i];
            i += 1;
        }
        LayoutBytes::Inline {
            len: short.len() as u8,
            bytes,
        }
    }

    /// The pieces one after another.
    pub fn concat(pieces: &[&[u8]]) -> LayoutBytes {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        if len > INLINE {
            return LayoutBytes::Shared(pieces.concat().into());
        }
        let mut bytes = [0; INLINE];
        let mut at = 0;
        for piece in pieces {
            bytes[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        LayoutBytes::Inline {
            len: len as u8,
            bytes,
        }
    }
}

impl From<&[u8]> for LayoutBytes {
    fn from(bytes: &[u8]) -> LayoutBytes {
        LayoutBytes::concat(&[bytes])
    }
}

impl Deref for LayoutBytes {
    type Target = [u8];

    #[inline(always)]
    fn deref(&self) -> &[u8] {
        match self {
            LayoutBytes::Inline { len, bytes } => &bytes[..*len as usize],
            LayoutBytes::Shared(bytes) => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_short_and_long_bytes_alike() {
        let long = [b'x'; 40];
        for bytes in [
            &b""[..],
            b"\n",
            b"  ",
            &[b' '; 22][..],
            &[b' '; 23][..],
            &long[..],
        ] {
            assert_eq!(&*LayoutBytes::from(bytes), bytes);
        }
        assert!(matches!(
            LayoutBytes::from(&[b' '; 22][..]),
            LayoutBytes::Inline { .. }
        ));
        assert!(matches!(
            LayoutBytes::from(&[b' '; 23][..]),
            LayoutBytes::Shared(_)
        ));
        assert_eq!(&*LayoutBytes::concat(&[b" ", b":", b"  "]), b" :  ");
        assert_eq!(
            LayoutBytes::concat(&[&long[..20], b":", &long[..20]]).len(),
            41
        );
    }

    #[test]
    fn constant_layouts_match_concat() {
        const PRETTY: LayoutBytes = LayoutBytes::short(b"  ");
        assert_eq!(&*PRETTY, b"  ");
        assert_eq!(&*LayoutBytes::byte(b':'), b":");
        assert_eq!(&*LayoutBytes::short(b""), b"");
        let widest = [b'x'; 22];
        assert_eq!(&*LayoutBytes::short(&widest), &widest[..]);
        assert!(matches!(
            LayoutBytes::short(&widest),
            LayoutBytes::Inline { len: 22, .. }
        ));
    }
}
