//! Where MRI's `Marshal.dump(obj, io)` calls `io.write`.
//!
//! MRI appends every piece of a dump to one buffer String through `w_nbyte`, and when a
//! port is given, `w_nbyte` writes the buffer to the port (and empties it) as soon as it
//! holds `BUFSIZ` bytes or more. So the chunks a port sees end where a piece ends, and
//! the pieces are: each single byte MRI writes with `w_byte` (type bytes, the version,
//! a Regexp's options, each byte of a Bignum's digits), each `w_long` (1 to 5 bytes, one
//! piece), and the contents of each `w_bytes` (a String's, Symbol's or class path's
//! bytes, a Float's text, a `_dump` String; one piece after its length's `w_long`).
//!
//! The native dumper writes MRI's exact bytes into one buffer, so walking those bytes
//! with the format's grammar finds the same pieces, and from them the same flush points.

/// What is still expected after the current position.
enum Pending {
    /// This many more objects.
    Objects(u64),
    /// A `w_long` count of instance variables, then that many name/value pairs.
    IvarCount,
    /// A `w_bytes`: a length, then that many bytes (the String of a `u` record).
    Bytes,
}

struct Walker<'a> {
    data: &'a [u8],
    pos: usize,
    /// Where the buffer MRI would hold right now starts.
    buffer_start: usize,
    bufsiz: usize,
    points: Vec<usize>,
}

impl Walker<'_> {
    /// One `w_nbyte` piece of `len` bytes: MRI flushes after it if the buffer is full.
    fn piece(&mut self, len: usize) -> Option<()> {
        if self.data.len() - self.pos < len {
            return None;
        }
        self.pos += len;
        if self.pos - self.buffer_start >= self.bufsiz {
            self.points.push(self.pos);
            self.buffer_start = self.pos;
        }
        Some(())
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.piece(1)?;
        Some(b)
    }

    /// A `w_long` piece; its value.
    fn long(&mut self) -> Option<i64> {
        let mut reader = super::Reader::new(&self.data[self.pos..]);
        let value = reader.read_long()?;
        let len = self.data.len() - self.pos - reader.remaining();
        self.piece(len)?;
        Some(value)
    }

    /// A non-negative `w_long` count.
    fn count(&mut self) -> Option<u64> {
        u64::try_from(self.long()?).ok()
    }

    /// `w_bytes`: the length, then the contents as one piece.
    fn bytes(&mut self) -> Option<()> {
        let len = usize::try_from(self.count()?).ok()?;
        self.piece(len)
    }

    /// Reads one object's own pieces, pushing what it contains onto `stack`.
    fn object(&mut self, stack: &mut Vec<Pending>) -> Option<()> {
        match self.byte()? {
            b'0' | b'T' | b'F' => {}
            b'i' | b'@' | b';' => {
                self.long()?;
            }
            b':' | b'"' | b'f' | b'c' | b'm' | b'M' => self.bytes()?,
            b'/' => {
                self.bytes()?;
                self.byte()?; // the options
            }
            b'l' => {
                self.byte()?; // the sign
                let shorts = self.count()?;
                for _ in 0..shorts.checked_mul(2)? {
                    self.byte()?;
                }
            }
            b'[' => {
                let n = self.count()?;
                stack.push(Pending::Objects(n));
            }
            b'{' => {
                let n = self.count()?;
                stack.push(Pending::Objects(n.checked_mul(2)?));
            }
            b'}' => {
                let n = self.count()?;
                stack.push(Pending::Objects(n.checked_mul(2)?.checked_add(1)?));
            }
            // The wrapped object (`I`) or the class name (`o`, `S`), then the ivar or
            // member pairs.
            b'I' | b'o' | b'S' => {
                stack.push(Pending::IvarCount);
                stack.push(Pending::Objects(1));
            }
            // A module or class name, then an object.
            b'e' | b'C' | b'U' | b'd' => stack.push(Pending::Objects(2)),
            // The class name, then the `_dump` String.
            b'u' => {
                stack.push(Pending::Bytes);
                stack.push(Pending::Objects(1));
            }
            _ => return None,
        }
        Some(())
    }
}

/// The end offsets of the chunks MRI writes to the port before its final `write` (which
/// gets the rest, possibly empty) when it dumps `data` with a `bufsiz`-byte buffer, or
/// `None` when `data` is not exactly one well-formed dump.
pub fn flush_points(data: &[u8], bufsiz: usize) -> Option<Vec<usize>> {
    let mut walker = Walker {
        data,
        pos: 0,
        buffer_start: 0,
        bufsiz: bufsiz.max(1),
        points: Vec::new(),
    };
    walker.byte()?; // the major version
    walker.byte()?; // the minor version
    let mut stack = vec![Pending::Objects(1)];
    while let Some(top) = stack.pop() {
        match top {
            Pending::Objects(0) => {}
            Pending::Objects(n) => {
                stack.push(Pending::Objects(n - 1));
                walker.object(&mut stack)?;
            }
            Pending::IvarCount => {
                let n = walker.count()?;
                stack.push(Pending::Objects(n.checked_mul(2)?));
            }
            Pending::Bytes => walker.bytes()?,
        }
    }
    (walker.pos == data.len()).then_some(walker.points)
}
