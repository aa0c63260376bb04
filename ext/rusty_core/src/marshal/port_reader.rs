//! How MRI reads a Marshal dump from an IO-like port: the exact `getbyte` / `read(n)`
//! calls `Marshal.load(io)` makes, for the records whose reading MRI interleaves with no
//! Ruby code of its own.
//!
//! MRI reads byte by byte with `getbyte` until it knows a lower bound of the bytes still
//! to come inside the current object (`readable`: the elements left in an Array or Hash).
//! While that bound is positive, or bytes are left in its buffer, it reads ahead with
//! `read(min(readable, BUFSIZ))` and serves bytes from that buffer; a byte string longer
//! than the buffer holds is completed with one `read` of what is missing (or more, up to
//! the bound). So MRI never reads past the end of the object, and the calls depend only
//! on the bytes.
//!
//! [`read_object`] makes those calls through a [`Port`] while it walks the grammar of the
//! plain records: nil, true, false, Fixnum, Float, Bignum, String, Symbol, symbol and
//! object links, Array, Hash (with default), and `I` records of Strings, Symbols, Arrays
//! and Hashes. It stops (without another call) where MRI would raise or could run Ruby
//! code (a class to look up, a Hash key whose hashing may call Ruby, an ivar MRI
//! rejects, short or odd replies): whoever drives it then replays the calls made so far
//! to the stdlib, which continues on the port itself, so the port sees MRI's calls in
//! any case. Stopping is always safe; reading on where MRI would have stopped is not.

/// MRI's read buffer size (`BUFSIZ`).
pub const BUFSIZ: usize = 8192;

/// Deeper nesting than this stops the walk (the stdlib continues).
const MAX_DEPTH: u32 = 200;

/// Longer byte strings than this stop the walk before the `read` (the stdlib makes it).
const MAX_READ: usize = 1 << 30;

/// A port's `getbyte` and `read(n)`, already converted as MRI converts them.
pub trait Port {
    type Error;
    /// `getbyte`: the byte (MRI's `NUM2CHR`), or `None` for nil.
    fn getbyte(&mut self) -> Result<Option<u8>, Self::Error>;
    /// `read(n)`: the String's bytes (after `StringValue`), or `None` for nil.
    fn read(&mut self, n: usize) -> Result<Option<Vec<u8>>, Self::Error>;
    /// The String the last `read` returned became a Symbol's name: MRI gives it the
    /// US-ASCII encoding if it is ASCII only.
    fn symbol_name_read(&mut self) -> Result<(), Self::Error>;
    /// The String the last `read` returned held a Bignum's digits: MRI empties it.
    fn clear_last_read(&mut self) -> Result<(), Self::Error>;
    /// The String the last `read` returned is a String record's object in MRI (its bytes
    /// start at `offset` of the bytes read): the loader must use it. False if it cannot
    /// (then the walk stops).
    fn direct_string(&mut self, offset: usize) -> Result<bool, Self::Error>;
}

/// How MRI's reads differ between the Rubies we match.
#[derive(Clone, Copy)]
pub struct Rules {
    pub bignums: BignumReads,
    /// A buffer refill (`r_byte1_buffered`) answered with fewer bytes than asked is "too
    /// short" (Ruby 3.4.11, with its Marshal overflow fixes); before, the bytes were used.
    pub short_refill_fails: bool,
    /// A Bignum's sign byte other than `+` or `-` raises at once (Ruby 3.4.11).
    pub bignum_sign_checked: bool,
}

/// How MRI reads Bignums on this Ruby.
#[derive(Clone, Copy)]
pub enum BignumReads {
    /// One `r_bytes` of all the digits (Ruby 3.1).
    Bytes,
    /// Byte by byte when it has at most 4 shorts, else one `r_bytes` (Ruby 3.3).
    SmallByByte,
}

enum Halt<E> {
    /// Stop here: the stdlib continues from the calls made so far.
    Stop,
    /// The port (or a conversion) raised.
    Raise(E),
}

type Step<T, E> = Result<T, Halt<E>>;

/// What kind of object a record was (or a link points to), as far as MRI's checks on
/// it go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// nil, true, false, a Fixnum, a Float or a String: safe as a Hash key.
    KeySafe,
    /// A Symbol (safe as a key).
    Symbol,
    /// Anything else (a Bignum, a container, a link).
    Other,
}

/// A Symbol read so far: its name bytes, and whether it is a plain US-ASCII one (the
/// only kind MRI compares with `E`, `encoding` and `K`).
struct Symbol {
    name: Vec<u8>,
    plain: bool,
}

struct Reader<'p, P: Port> {
    port: &'p mut P,
    rules: Rules,
    /// MRI's `arg->readable`.
    readable: i64,
    /// MRI's `arg->buf[offset..offset + buflen]`.
    buf: Vec<u8>,
    offset: usize,
    /// Every byte the port gave, in order.
    collected: Vec<u8>,
    symbols: Vec<Symbol>,
    /// The kind of each object with a link index so far.
    entries: Vec<Kind>,
}

impl<P: Port> Reader<'_, P> {
    fn buflen(&self) -> usize {
        self.buf.len() - self.offset
    }

    fn getbyte(&mut self) -> Step<u8, P::Error> {
        match self.port.getbyte().map_err(Halt::Raise)? {
            Some(b) => {
                self.collected.push(b);
                Ok(b)
            }
            None => Err(Halt::Stop), // MRI's EOFError
        }
    }

    fn read(&mut self, n: usize) -> Step<Vec<u8>, P::Error> {
        match self.port.read(n).map_err(Halt::Raise)? {
            Some(bytes) => {
                self.collected.extend_from_slice(&bytes);
                Ok(bytes)
            }
            None => Err(Halt::Stop), // MRI's "marshal data too short"
        }
    }

    fn buffered(&self) -> bool {
        self.readable > 0 || self.buflen() > 0
    }

    /// MRI's `r_byte`.
    fn r_byte(&mut self) -> Step<u8, P::Error> {
        if !self.buffered() {
            return self.getbyte();
        }
        if self.buflen() == 0 {
            let n = (self.readable as usize).min(BUFSIZ);
            let bytes = self.read(n)?;
            // An empty or oversized reply is undefined behaviour in MRI: the stdlib's.
            if bytes.is_empty()
                || bytes.len() > BUFSIZ
                || (self.rules.short_refill_fails && bytes.len() < n)
            {
                return Err(Halt::Stop);
            }
            self.buf = bytes;
            self.offset = 0;
        }
        let b = self.buf[self.offset];
        self.offset += 1;
        Ok(b)
    }

    /// MRI's `r_long`.
    fn r_long(&mut self) -> Step<i64, P::Error> {
        let c = self.r_byte()? as i8 as i64;
        if c == 0 {
            return Ok(0);
        }
        if c > 0 {
            if c > 4 {
                return Ok(c - 5);
            }
            let mut x: i64 = 0;
            for i in 0..c {
                x |= (self.r_byte()? as i64) << (8 * i);
            }
            Ok(x)
        } else {
            if c < -4 {
                return Ok(c + 5);
            }
            let mut x: i64 = -1;
            for i in 0..-c {
                x &= !(0xff << (8 * i));
                x |= (self.r_byte()? as i64) << (8 * i);
            }
            Ok(x)
        }
    }

    /// Whether the next `r_bytes0` of `len` bytes returns the port's own String (one
    /// unbuffered `read`), which MRI then uses (and changes) as it is.
    fn reads_directly(&self, len: i64) -> bool {
        len > 0 && !self.buffered()
    }

    /// MRI's `r_bytes0(len)`: the bytes.
    fn r_bytes_of(&mut self, len: i64) -> Step<Vec<u8>, P::Error> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let len = usize::try_from(len).map_err(|_| Halt::Stop)?;
        if len > MAX_READ {
            return Err(Halt::Stop);
        }
        if !self.buffered() {
            let bytes = self.read(len)?;
            if bytes.len() != len {
                return Err(Halt::Stop); // too short
            }
            return Ok(bytes);
        }
        let buflen = self.buflen();
        if len <= buflen {
            let bytes = self.buf[self.offset..self.offset + len].to_vec();
            self.offset += len;
            return Ok(bytes);
        }
        let need = len - buflen;
        let ahead = ((self.readable + 1).max(0) as usize).min(BUFSIZ);
        let read_len = need.max(ahead);
        let tmp = self.read(read_len)?;
        if tmp.len() < need || tmp.len() - need > BUFSIZ {
            return Err(Halt::Stop);
        }
        let mut bytes = self.buf[self.offset..].to_vec();
        bytes.extend_from_slice(&tmp[..need]);
        self.buf = tmp[need..].to_vec();
        self.offset = 0;
        Ok(bytes)
    }

    fn r_bytes(&mut self) -> Step<Vec<u8>, P::Error> {
        let len = self.r_long()?;
        self.r_bytes_of(len)
    }

    /// The bytes of a String record. Read unbuffered, the port's String becomes the
    /// loaded String itself (the port can see it get its encoding and ivars): the port
    /// is told so.
    fn r_string_bytes(&mut self) -> Step<(), P::Error> {
        let len = self.r_long()?;
        let direct = self.reads_directly(len);
        let offset = self.collected.len();
        self.r_bytes_of(len)?;
        if direct && !self.port.direct_string(offset).map_err(Halt::Raise)? {
            return Err(Halt::Stop);
        }
        Ok(())
    }

    /// A symbol in name position (MRI's `r_symbol`): its index.
    fn r_symbol(&mut self) -> Step<usize, P::Error> {
        match self.r_byte()? {
            b':' => self.r_symreal(false, 0),
            b';' => self.r_symlink(),
            // `I:` names and anything else: the stdlib's.
            _ => Err(Halt::Stop),
        }
    }

    fn r_symlink(&mut self) -> Step<usize, P::Error> {
        let index = self.r_long()?;
        usize::try_from(index)
            .ok()
            .filter(|&i| i < self.symbols.len())
            .ok_or(Halt::Stop) // MRI's "bad symbol"
    }

    /// MRI's `r_symreal`: the name, then (with `ivar`) its encoding ivars.
    fn r_symreal(&mut self, ivar: bool, depth: u32) -> Step<usize, P::Error> {
        let len = self.r_long()?;
        let direct = self.reads_directly(len);
        if direct && ivar {
            return Err(Halt::Stop); // MRI would give the port's String its encoding
        }
        let name = self.r_bytes_of(len)?;
        if direct {
            self.port.symbol_name_read().map_err(Halt::Raise)?;
        }
        let index = self.symbols.len();
        let plain = !ivar && name.is_ascii();
        self.symbols.push(Symbol { name, plain });
        if ivar {
            let count = self.r_long()?;
            // MRI applies the encoding of the last pair and raises if the name is not
            // valid in it: only the common `E true` / `E false` pass.
            let mut valid = true;
            for _ in 0..count.max(0) {
                let key = self.r_symbol()?;
                let t = self.r_byte()?;
                self.r_object_of(t, depth + 1)?;
                let is_e = self.symbols[key].plain && self.symbols[key].name == b"E";
                let name = &self.symbols[index].name;
                valid = match (is_e, t) {
                    (true, b'T') => std::str::from_utf8(name).is_ok(),
                    (true, b'F') => name.is_ascii(),
                    _ => false,
                };
            }
            if count > 0 && !valid {
                return Err(Halt::Stop);
            }
        }
        Ok(index)
    }

    fn r_object(&mut self, depth: u32) -> Step<Kind, P::Error> {
        let t = self.r_byte()?;
        self.r_object_of(t, depth)
    }

    /// MRI's `r_object_for` for record type `t`.
    fn r_object_of(&mut self, t: u8, depth: u32) -> Step<Kind, P::Error> {
        if depth > MAX_DEPTH {
            return Err(Halt::Stop);
        }
        match t {
            b'0' | b'T' | b'F' => Ok(Kind::KeySafe),
            b'i' => {
                self.r_long()?;
                Ok(Kind::KeySafe)
            }
            b'f' => {
                self.r_bytes()?;
                self.entries.push(Kind::KeySafe);
                Ok(Kind::KeySafe)
            }
            b'l' => {
                let sign = self.r_byte()?;
                if self.rules.bignum_sign_checked && sign != b'+' && sign != b'-' {
                    return Err(Halt::Stop); // "invalid Bignum sign"
                }
                let len = self.r_long()?;
                if len < 0 {
                    return Err(Halt::Stop);
                }
                match self.rules.bignums {
                    BignumReads::SmallByByte if len <= 4 => {
                        for _ in 0..len * 2 {
                            self.r_byte()?;
                        }
                    }
                    _ => {
                        let len = len.checked_mul(2).ok_or(Halt::Stop)?;
                        let direct = self.reads_directly(len);
                        self.r_bytes_of(len)?;
                        if direct {
                            self.port.clear_last_read().map_err(Halt::Raise)?;
                        }
                    }
                }
                self.entries.push(Kind::Other);
                Ok(Kind::Other)
            }
            b'"' => {
                self.r_string_bytes()?;
                self.entries.push(Kind::KeySafe);
                Ok(Kind::KeySafe)
            }
            b':' => {
                self.r_symreal(false, depth)?;
                Ok(Kind::Symbol)
            }
            b';' => {
                self.r_symlink()?;
                Ok(Kind::Symbol)
            }
            b'@' => {
                let index = self.r_long()?;
                // MRI's "dump format error (unlinked)" for an unknown index.
                let kind = usize::try_from(index)
                    .ok()
                    .and_then(|i| self.entries.get(i));
                kind.copied().ok_or(Halt::Stop)
            }
            b'[' => {
                self.r_array(depth)?;
                Ok(Kind::Other)
            }
            b'{' | b'}' => {
                self.r_hash(t, depth)?;
                Ok(Kind::Other)
            }
            b'I' => self.r_ivar_record(depth),
            // Records that look up a class (and may run Ruby code), Regexps, and
            // anything MRI rejects: the stdlib's.
            _ => Err(Halt::Stop),
        }
    }

    fn r_array(&mut self, depth: u32) -> Step<(), P::Error> {
        let len = self.r_long()?;
        if len < 0 {
            return Err(Halt::Stop);
        }
        self.entries.push(Kind::Other);
        self.readable += len - 1;
        for _ in 0..len {
            self.r_object(depth + 1)?;
            self.readable -= 1;
        }
        self.readable += 1;
        Ok(())
    }

    fn r_hash(&mut self, t: u8, depth: u32) -> Step<(), P::Error> {
        let len = self.r_long()?;
        if len < 0 {
            return Err(Halt::Stop);
        }
        self.entries.push(Kind::Other);
        self.readable += (len - 1) * 2;
        for _ in 0..len {
            // Inserting a key that is not a String, Symbol or immediate value may call
            // its `hash` in Ruby: MRI does that before it reads on.
            if self.r_object(depth + 1)? == Kind::Other {
                return Err(Halt::Stop);
            }
            self.r_object(depth + 1)?;
            self.readable -= 2;
        }
        self.readable += 2;
        if t == b'}' {
            self.r_object(depth + 1)?;
        }
        Ok(())
    }

    /// An `I` record: a String, Symbol, Array or Hash, then its ivars.
    fn r_ivar_record(&mut self, depth: u32) -> Step<Kind, P::Error> {
        let t = self.r_byte()?;
        let (kind, string) = match t {
            b'"' => {
                self.r_string_bytes()?;
                self.entries.push(Kind::KeySafe);
                (Kind::KeySafe, true)
            }
            b':' => {
                self.r_symreal(true, depth)?;
                return Ok(Kind::Symbol);
            }
            b'[' => {
                self.r_array(depth)?;
                (Kind::Other, false)
            }
            b'{' | b'}' => {
                self.r_hash(t, depth)?;
                (Kind::Other, false)
            }
            _ => return Err(Halt::Stop),
        };
        let count = self.r_long()?;
        for _ in 0..count.max(0) {
            let key = self.r_symbol()?;
            let vt = self.r_byte()?;
            self.r_object_of(vt, depth + 1)?;
            let symbol = &self.symbols[key];
            let name = symbol.name.as_slice();
            // MRI raises for E / encoding / K where they do not apply, and converts an
            // `encoding` value to a C string (which can raise): stop after the pair.
            let checked = symbol.plain
                && match name {
                    b"E" => !string || !matches!(vt, b'T' | b'F'),
                    b"encoding" => true,
                    b"K" => string || t == b'[',
                    _ => false,
                };
            if checked {
                return Err(Halt::Stop);
            }
        }
        Ok(kind)
    }
}

/// Reads one dump (the version bytes and one object) from `port` with MRI's calls. The
/// bytes it took, or `None` when it stopped where the stdlib must take over (after the
/// calls made so far); an error the port raised is returned as is.
pub fn read_object<P: Port>(port: &mut P, rules: Rules) -> Result<Option<Vec<u8>>, P::Error> {
    let mut reader = Reader {
        port,
        rules,
        readable: 0,
        buf: Vec::new(),
        offset: 0,
        collected: Vec::new(),
        symbols: Vec::new(),
        entries: Vec::new(),
    };
    let result = (|| {
        let major = reader.r_byte()?;
        let minor = reader.r_byte()?;
        if major != super::MAJOR || minor != super::MINOR {
            return Err(Halt::Stop); // MRI's TypeError or warning
        }
        reader.r_object(0)
    })();
    match result {
        Ok(_) => Ok(Some(reader.collected)),
        Err(Halt::Stop) => Ok(None),
        Err(Halt::Raise(e)) => Err(e),
    }
}
