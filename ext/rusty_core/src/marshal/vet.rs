//! The check behind `RustyStdlib::Marshal.safe_load`: walks a dump's records exactly as
//! MRI's `r_object` reads them, without making anything, and says whether every class it
//! names, every symbol it loads and every instance variable it sets on a core object is
//! permitted, within a nesting depth and without a length that runs past the input.
//!
//! `safe_load` runs the loader only after this said yes, so no object of a refused class
//! is made and no hook runs. That holds only while this walk reads the same grammar as
//! the loader: a record it does not know is refused, never skipped.
//! `lib/rusty_stdlib/marshal/vet.rb` is the same walk in Ruby, for Rubies without the
//! extension; spec/marshal/safe_load_spec.rb checks that the two agree.

use super::*;

/// What may be loaded.
pub struct Policy<'a> {
    /// Names of classes and modules (`"Time"`, `"Foo::Bar"`) whose records may appear:
    /// objects, structs, `_load`/`marshal_load` data, extensions, subclasses of core
    /// types, class references; a core type named here may also carry instance
    /// variables beyond its encoding.
    pub permitted_classes: &'a [&'a [u8]],
    /// The symbols a dump may load as values; `None`: any.
    pub permitted_symbols: Option<&'a [&'a [u8]]>,
    /// How deep records that hold others (Arrays, Hashes, objects, instance variables)
    /// may nest: 1 allows `[1, 2]` and not `[[1]]`.
    pub max_depth: usize,
}

/// Why a dump was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A record of (or a reference to) a class or module not permitted.
    Class(Vec<u8>),
    /// A symbol value not in `permitted_symbols`.
    Symbol(Vec<u8>),
    /// An instance variable (`@x`, as named in the dump) on a core object, whose class
    /// (`"String"`) was not permitted by name.
    Ivar { name: Vec<u8>, on: &'static str },
    /// Deeper than `max_depth`.
    TooDeep,
    /// The input ends inside a record, or declares more than is left ("marshal data too
    /// short", as MRI says).
    TooShort,
    /// A negative byte length (MRI: "negative string size (or size too big)").
    NegativeSize,
    /// A negative Array length (MRI: "negative array size (or size too big)").
    NegativeArraySize,
    /// A symbol link to no symbol read before (MRI: "bad symbol").
    BadSymbol,
    /// A type byte no record starts with (MRI: "dump format error(0x..)").
    Format(u8),
    /// No symbol where one must be (MRI: "dump format error for symbol(0x..)").
    SymbolFormat(u8),
    /// An encoding on a symbol link (MRI: "dump format error (symlink with encoding)").
    SymlinkWithEncoding,
}

/// What a record turned out to be, for the rules on the instance variables after it.
#[derive(Clone, Copy)]
enum Made {
    /// A core object: its class's name. Only its encoding (`E`, `encoding`) and, on a
    /// Hash, the ruby2_keywords flag (`K`) may be set unless that class is permitted.
    Core(&'static str),
    /// An object of a permitted class: any instance variables.
    Permitted,
}

/// Vets `dump` (Marshal format 4.8) against `policy`. A dump of another format version
/// passes unvetted: the loader refuses it (TypeError) before it reads any record.
pub fn vet(dump: &[u8], policy: &Policy) -> Result<(), Refusal> {
    if dump.len() < 2 {
        return Err(Refusal::TooShort);
    }
    if dump[0] != MAJOR || dump[1] > MINOR {
        return Ok(());
    }
    let mut walk = Walk {
        input: dump,
        at: 2,
        symbols: Vec::new(),
        policy,
    };
    walk.value(1).map(|_| ())
}

struct Walk<'a, 'p> {
    input: &'a [u8],
    at: usize,
    /// Every symbol read so far, in MRI's symbol-table order (what `;` links index).
    symbols: Vec<&'a [u8]>,
    policy: &'p Policy<'p>,
}

impl<'a> Walk<'a, '_> {
    fn byte(&mut self) -> Result<u8, Refusal> {
        let b = *self.input.get(self.at).ok_or(Refusal::TooShort)?;
        self.at += 1;
        Ok(b)
    }

    fn left(&self) -> usize {
        self.input.len() - self.at
    }

    /// MRI's `r_long`.
    fn long(&mut self) -> Result<i64, Refusal> {
        let c = self.byte()? as i8 as i64;
        Ok(match c {
            0 => 0,
            5..=127 => c - 5,
            1..=4 => {
                let mut x = 0i64;
                for i in 0..c {
                    x |= (self.byte()? as i64) << (8 * i);
                }
                x
            }
            -128..=-5 => c + 5,
            _ => {
                let mut x = -1i64;
                for i in 0..-c {
                    x &= !(0xff << (8 * i));
                    x |= (self.byte()? as i64) << (8 * i);
                }
                x
            }
        })
    }

    /// A count of things each at least `min_bytes` long: refused at once when the input
    /// cannot hold them. MRI reads a negative count as none (its loops do not run).
    fn count(&mut self, min_bytes: usize) -> Result<usize, Refusal> {
        let n = self.long()?.max(0) as usize;
        if n > self.left() / min_bytes {
            return Err(Refusal::TooShort);
        }
        Ok(n)
    }

    /// MRI's `r_bytes`: a length, then that many bytes.
    fn bytes(&mut self) -> Result<&'a [u8], Refusal> {
        let n = self.long()?;
        if n < 0 {
            return Err(Refusal::NegativeSize);
        }
        let n = n as usize;
        if n > self.left() {
            return Err(Refusal::TooShort);
        }
        let bytes = &self.input[self.at..self.at + n];
        self.at += n;
        Ok(bytes)
    }

    /// A symbol where MRI reads one with `r_symbol` (a class name, an ivar name, a
    /// struct member): `:` (new, maybe with an encoding: `I:`) or `;` (a link).
    fn symbol(&mut self, depth: usize) -> Result<&'a [u8], Refusal> {
        match self.byte()? {
            TYPE_IVAR => {
                match self.byte()? {
                    TYPE_SYMBOL => {}
                    TYPE_SYMLINK => return Err(Refusal::SymlinkWithEncoding),
                    other => return Err(Refusal::SymbolFormat(other)),
                }
                let name = self.new_symbol()?;
                self.ivars(Made::Core("Symbol"), depth)?;
                Ok(name)
            }
            TYPE_SYMBOL => self.new_symbol(),
            TYPE_SYMLINK => self.symlink(),
            other => Err(Refusal::SymbolFormat(other)),
        }
    }

    fn new_symbol(&mut self) -> Result<&'a [u8], Refusal> {
        let name = self.bytes()?;
        self.symbols.push(name);
        Ok(name)
    }

    fn symlink(&mut self) -> Result<&'a [u8], Refusal> {
        let index = self.long()?;
        usize::try_from(index)
            .ok()
            .and_then(|i| self.symbols.get(i).copied())
            .ok_or(Refusal::BadSymbol)
    }

    fn permit_class(&self, name: &[u8]) -> Result<(), Refusal> {
        if self.policy.permitted_classes.contains(&name) {
            Ok(())
        } else {
            Err(Refusal::Class(name.to_vec()))
        }
    }

    fn permit_symbol(&self, name: &[u8]) -> Result<(), Refusal> {
        match self.policy.permitted_symbols {
            Some(list) if !list.contains(&name) => Err(Refusal::Symbol(name.to_vec())),
            _ => Ok(()),
        }
    }

    /// A class name symbol, which must be permitted.
    fn class(&mut self, depth: usize) -> Result<(), Refusal> {
        let name = self.symbol(depth)?;
        self.permit_class(name)
    }

    /// The instance variables after an `I` record, set on what the record made.
    fn ivars(&mut self, made: Made, depth: usize) -> Result<(), Refusal> {
        let n = self.count(2)?;
        if n > 0 {
            self.enter(depth)?;
        }
        for _ in 0..n {
            let name = self.symbol(depth)?;
            if let Made::Core(class) = made {
                let flag = matches!(name, b"E" | b"encoding") || (class == "Hash" && name == b"K");
                if !flag && !self.policy.permitted_classes.contains(&class.as_bytes()) {
                    return Err(Refusal::Ivar {
                        name: name.to_vec(),
                        on: class,
                    });
                }
            }
            self.value(depth + 1)?;
        }
        Ok(())
    }

    /// `o` and `S` bodies: a count, then member or ivar names with their values.
    fn members(&mut self, depth: usize) -> Result<(), Refusal> {
        let n = self.count(2)?;
        for _ in 0..n {
            self.symbol(depth)?;
            self.value(depth + 1)?;
        }
        Ok(())
    }

    /// A record that holds others, at `depth`: within `max_depth`?
    fn enter(&self, depth: usize) -> Result<(), Refusal> {
        if depth > self.policy.max_depth {
            return Err(Refusal::TooDeep);
        }
        Ok(())
    }

    /// One record (MRI's `r_object0`) at nesting `depth`: inside `depth - 1` records
    /// that hold others (Arrays, Hashes, objects, ...).
    fn value(&mut self, depth: usize) -> Result<Made, Refusal> {
        let made = match self.byte()? {
            TYPE_NIL | TYPE_TRUE | TYPE_FALSE => Made::Core("Object"),
            TYPE_FIXNUM => {
                self.long()?;
                Made::Core("Integer")
            }
            TYPE_BIGNUM => {
                self.byte()?; // the sign
                let shorts = self.long()?;
                if shorts < 0 {
                    return Err(Refusal::NegativeSize);
                }
                if shorts as u64 * 2 > self.left() as u64 {
                    return Err(Refusal::TooShort);
                }
                self.at += shorts as usize * 2;
                Made::Core("Integer")
            }
            TYPE_FLOAT => {
                self.bytes()?;
                Made::Core("Float")
            }
            TYPE_STRING => {
                self.bytes()?;
                Made::Core("String")
            }
            TYPE_SYMBOL => {
                let name = self.new_symbol()?;
                self.permit_symbol(name)?;
                Made::Core("Symbol")
            }
            TYPE_SYMLINK => {
                let name = self.symlink()?;
                self.permit_symbol(name)?;
                Made::Core("Symbol")
            }
            TYPE_LINK => {
                self.long()?;
                Made::Core("Object")
            }
            TYPE_IVAR => {
                let made = self.value(depth)?;
                self.ivars(made, depth)?;
                made
            }
            TYPE_ARRAY => {
                self.enter(depth)?;
                let n = self.long()?;
                if n < 0 {
                    return Err(Refusal::NegativeArraySize);
                }
                if n as u64 > self.left() as u64 {
                    return Err(Refusal::TooShort);
                }
                for _ in 0..n {
                    self.value(depth + 1)?;
                }
                Made::Core("Array")
            }
            kind @ (TYPE_HASH | TYPE_HASH_DEF) => {
                self.enter(depth)?;
                let n = self.count(2)?;
                for _ in 0..n * 2 {
                    self.value(depth + 1)?;
                }
                if kind == TYPE_HASH_DEF {
                    self.value(depth + 1)?;
                }
                Made::Core("Hash")
            }
            TYPE_REGEXP => {
                self.permit_class(b"Regexp")?;
                self.bytes()?;
                self.byte()?; // the options
                Made::Core("Regexp")
            }
            TYPE_OBJECT | TYPE_STRUCT => {
                self.enter(depth)?;
                self.class(depth)?;
                self.members(depth)?;
                Made::Permitted
            }
            TYPE_USERDEF => {
                self.class(depth)?;
                self.bytes()?;
                Made::Permitted
            }
            TYPE_USRMARSHAL | TYPE_DATA => {
                self.enter(depth)?;
                self.class(depth)?;
                self.value(depth + 1)?;
                Made::Permitted
            }
            TYPE_EXTENDED => {
                self.class(depth)?; // the module; the object's own rules still hold
                self.value(depth)?
            }
            TYPE_UCLASS => {
                self.class(depth)?;
                self.value(depth)?;
                Made::Permitted
            }
            TYPE_CLASS | TYPE_MODULE | b'M' => {
                let name = self.bytes()?;
                self.permit_class(name)?;
                Made::Permitted
            }
            other => return Err(Refusal::Format(other)),
        };
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: &[&[u8]] = &[];

    fn check(dump: &[u8], classes: &[&[u8]], symbols: Option<&[&[u8]]>) -> Result<(), Refusal> {
        let policy = Policy {
            permitted_classes: classes,
            permitted_symbols: symbols,
            max_depth: 4,
        };
        vet(dump, &policy)
    }

    // Dumps below are what Ruby 3.1's Marshal.dump writes for the object in the comment.

    #[test]
    fn core_types_pass_by_default() {
        // [1, "é", :sym, 2**70, 1.5, {a: [nil, true]}]
        let dump = b"\x04\x08[\x0bi\x06I\"\x07\xC3\xA9\x06:\x06ET:\x08syml+\x0a\0\0\0\0\0\0\0\0@\0f\x081.5{\x06:\x06a[\x070T";
        assert_eq!(check(dump, NONE, None), Ok(()));
        // [:a, :a, "x".b]: a symbol link resolves to :a
        assert_eq!(
            check(b"\x04\x08[\x08:\x06a;\x00\"\x06x", NONE, None),
            Ok(())
        );
        // a Hash with a default value
        assert_eq!(check(b"\x04\x08}\x00i\x0a", NONE, None), Ok(()));
    }

    #[test]
    fn named_classes_need_permission() {
        let object = b"\x04\x08o:\x08Foo\x06:\x07@xi\x06"; // Foo with @x = 1
        assert_eq!(
            check(object, NONE, None),
            Err(Refusal::Class(b"Foo".to_vec()))
        );
        assert_eq!(check(object, &[b"Foo"], None), Ok(()));
        let time =
            b"\x04\x08Iu:\x09Time\x0d \x80\x11\xC0\0\0\0\0\x06:\x09zoneI\"\x08UTC\x06:\x06EF";
        assert_eq!(
            check(time, NONE, None),
            Err(Refusal::Class(b"Time".to_vec()))
        );
        assert_eq!(check(time, &[b"Time"], None), Ok(()));
        let rational = b"\x04\x08U:\x0dRational[\x07i\x06i\x07";
        assert_eq!(
            check(rational, NONE, None),
            Err(Refusal::Class(b"Rational".to_vec()))
        );
        let regexp = b"\x04\x08I/\x06a\x01\x06:\x06EF";
        assert_eq!(
            check(regexp, NONE, None),
            Err(Refusal::Class(b"Regexp".to_vec()))
        );
        assert_eq!(check(regexp, &[b"Regexp"], None), Ok(()));
        // class and module references
        assert_eq!(
            check(b"\x04\x08c\x0bString", NONE, None),
            Err(Refusal::Class(b"String".to_vec()))
        );
        assert_eq!(
            check(b"\x04\x08m\x0fComparable", &[b"Comparable"], None),
            Ok(())
        );
        // the second Foo names its class by a symbol link
        let twice = b"\x04\x08[\x07o:\x08Foo\x00o;\x00\x00";
        assert_eq!(check(twice, &[b"Foo"], None), Ok(()));
        let other = b"\x04\x08[\x07o:\x08Foo\x00o:\x08Bar\x00";
        assert_eq!(
            check(other, &[b"Foo"], None),
            Err(Refusal::Class(b"Bar".to_vec()))
        );
    }

    #[test]
    fn extensions_and_core_ivars_need_permission() {
        let extended = b"\x04\x08e:\x06M\"\x06x"; // "x" extended with M
        assert_eq!(
            check(extended, NONE, None),
            Err(Refusal::Class(b"M".to_vec()))
        );
        assert_eq!(check(extended, &[b"M"], None), Ok(()));
        let ivar = b"\x04\x08I\"\x06x\x07:\x06ET:\x07@ai\x06"; // "x" with @a = 1
        let refused = Refusal::Ivar {
            name: b"@a".to_vec(),
            on: "String",
        };
        assert_eq!(check(ivar, NONE, None), Err(refused));
        assert_eq!(check(ivar, &[b"String"], None), Ok(()));
        // Hash's ruby2_keywords flag is no ivar of the app's
        assert_eq!(check(b"\x04\x08I{\x00\x06:\x06KT", NONE, None), Ok(()));
    }

    #[test]
    fn symbols_can_be_listed() {
        let dump = b"\x04\x08[\x07:\x06a:\x06b";
        assert_eq!(check(dump, NONE, Some(&[b"a", b"b"])), Ok(()));
        assert_eq!(
            check(dump, NONE, Some(&[b"a"])),
            Err(Refusal::Symbol(b"b".to_vec()))
        );
        // a class name is no symbol value, but a link to it is
        let linked = b"\x04\x08[\x07o:\x08Foo\x00;\x00";
        assert_eq!(
            check(linked, &[b"Foo"], Some(&[])),
            Err(Refusal::Symbol(b"Foo".to_vec()))
        );
    }

    #[test]
    fn limits_and_damage() {
        assert_eq!(check(b"\x04\x08[\x06[\x06[\x06[\x060", NONE, None), Ok(()));
        assert_eq!(
            check(b"\x04\x08[\x06[\x06[\x06[\x06[\x060", NONE, None),
            Err(Refusal::TooDeep)
        );
        // a billion-element Array in 7 bytes: refused before anything is read
        assert_eq!(
            check(b"\x04\x08[\x04\0\xca\x9a\x3b", NONE, None),
            Err(Refusal::TooShort)
        );
        assert_eq!(
            check(b"\x04\x08\"\x0a\x41", NONE, None),
            Err(Refusal::TooShort)
        );
        assert_eq!(
            check(b"\x04\x08\"\xfa", NONE, None),
            Err(Refusal::NegativeSize)
        );
        assert_eq!(
            check(b"\x04\x08[\xfa", NONE, None),
            Err(Refusal::NegativeArraySize)
        );
        assert_eq!(check(b"\x04\x08;\x00", NONE, None), Err(Refusal::BadSymbol));
        assert_eq!(
            check(b"\x04\x08o\"\x00", &[b"Foo"], None),
            Err(Refusal::SymbolFormat(b'"'))
        );
        assert_eq!(check(b"\x04\x08X", NONE, None), Err(Refusal::Format(b'X')));
        assert_eq!(check(b"\x04", NONE, None), Err(Refusal::TooShort));
        // another format version is the loader's to refuse
        assert_eq!(check(b"\x03\x00o:\x08Foo\x00", NONE, None), Ok(()));
        // every truncation of a good dump is refused, none panics
        let dump = b"\x04\x08[\x07o:\x08Foo\x06:\x07@xI\"\x06x\x06:\x06ETl+\x07\0\0\0\x01";
        assert_eq!(check(dump, &[b"Foo"], None), Ok(()));
        for end in 2..dump.len() {
            assert_eq!(
                check(&dump[..end], &[b"Foo"], None),
                Err(Refusal::TooShort),
                "cut at {end}"
            );
        }
    }
}
