//! Which json gem's parser we stand in for, and everything that differs between the
//! versions we prove (spec/json runs the same specs against whichever gem is loaded).
//!
//! The byte-level walk (`rusty_core::json::parse`) is the same for both: json 2.9.1
//! still has 2.6.1's Ragel grammar. What differs is around it: how options are read,
//! how a non-UTF-8 source is converted, and how an error message is worded. Each of
//! those asks [`Dialect`] here rather than testing a version itself.

use std::sync::atomic::{AtomicU8, Ordering};

use magnus::{prelude::*, Error, RModule, RString, Ruby};

/// The parser behaviour of one json gem version. The discriminants are what [`LOADED`]
/// stores (0 there: not looked up yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Dialect {
    /// json 2.6 (Ruby 3.1): messages start with the C source line ("859: ..."), the
    /// excerpt runs to the end of the source, binary sources are re-tagged in place.
    V2_6 = 1,
    /// json 2.6.3 (Debian's ruby-json package, which Ruby 3.1 loads instead of its own
    /// 2.6.1 once installed): 2.6.1's Ruby files and parser, but messages without the
    /// C source line.
    V2_6_3 = 2,
    /// json 2.9 (Ruby 3.3): no line number, excerpts cut at 32 bytes, `Parser.parse`,
    /// the `allow_trailing_comma` option and JSON.load's implicit `create_additions`.
    V2_9 = 3,
}

/// 0 until looked up, then the Dialect's discriminant.
static LOADED: AtomicU8 = AtomicU8::new(0);

impl Dialect {
    /// The Dialect whose discriminant [`LOADED`] holds, if one was stored.
    #[inline(always)]
    fn stored() -> Option<Dialect> {
        let code = LOADED.load(Ordering::Relaxed);
        [Dialect::V2_6, Dialect::V2_6_3, Dialect::V2_9]
            .into_iter()
            .find(|&dialect| dialect as u8 == code)
    }

    /// The dialect of the json gem this process loaded (`JSON::VERSION`, read once:
    /// a process loads one json gem). Versions before 2.7 are 2.6's; the shim only
    /// installs our parser on versions spec/json proves.
    pub fn loaded(ruby: &Ruby) -> Result<Dialect, Error> {
        if let Some(dialect) = Self::stored() {
            return Ok(dialect);
        }
        let json: RModule = ruby.class_object().const_get("JSON")?;
        let version: RString = json.const_get("VERSION")?;
        let dialect = Self::for_version(&version.to_string()?);
        LOADED.store(dialect as u8, Ordering::Relaxed);
        Ok(dialect)
    }

    /// The dialect [`Dialect::loaded`] found, for hot paths that cannot fail: 2.6's
    /// until the generator's State methods were defined (which looks it up).
    #[inline(always)]
    pub fn current() -> Dialect {
        Self::stored().unwrap_or(Dialect::V2_6)
    }

    fn for_version(version: &str) -> Dialect {
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        let patch = parts.next().unwrap_or(0);
        if (major, minor) >= (2, 7) {
            Dialect::V2_9
        } else if (major, minor, patch) >= (2, 6, 3) {
            Dialect::V2_6_3
        } else {
            Dialect::V2_6
        }
    }

    /// json 2.6's parser and Ruby files (2.6.1 or 2.6.3), as opposed to 2.9's.
    fn is_v2_6(self) -> bool {
        self != Dialect::V2_9
    }

    /// Whether messages start with the C line number (`"859: unexpected token ..."`).
    pub fn numbers_messages(self) -> bool {
        self == Dialect::V2_6
    }

    /// The most bytes of the source a message quotes (2.9's PARSE_ERROR_FRAGMENT_LEN,
    /// cut with no regard for UTF-8 characters).
    pub fn fragment_limit(self) -> usize {
        if self.is_v2_6() {
            usize::MAX
        } else {
            32
        }
    }

    /// Where the excerpt for a rejected `Infinity` starts, given where the literal
    /// starts. 2.6's C code quotes from one byte before it (nothing at offset 0).
    pub fn infinity_excerpt(self, literal: usize) -> Option<usize> {
        if self.is_v2_6() {
            literal.checked_sub(1)
        } else {
            Some(literal)
        }
    }

    /// Whether a binary source is re-tagged UTF-8 in place when it is not frozen (2.6)
    /// rather than always on a copy (2.9).
    pub fn retags_binary_in_place(self) -> bool {
        self.is_v2_6()
    }

    /// Whether a non-UTF-8 source is converted with `String#encode` (2.9, raises on
    /// bytes it cannot convert) rather than `rb_str_conv_enc` (2.6, keeps them as
    /// they are).
    pub fn encodes_source(self) -> bool {
        self == Dialect::V2_9
    }

    /// Whether a number with a broken tail (`1.`, `1e5e`, `1.5-2`) fails whole, at its
    /// first byte (2.9's one number machine), rather than after its integer part.
    pub fn fails_whole_numbers(self) -> bool {
        self == Dialect::V2_9
    }

    /// Machine stack the gem's recursive parser uses per nesting level (`JSON_parse_value`
    /// plus `JSON_parse_array`/`_object`), in thousandths of a byte, fitted to Debian's
    /// builds: json 2.6.1 on Ruby 3.1 fills the main thread's 8 MiB at 58205 levels and a
    /// thread's 1 MiB at 7239; json 2.9.1 on Ruby 3.3 at 52335 and 6502 (spec/json
    /// checks depths on either side of both against the gem).
    pub fn c_stack_millibytes_per_level(self) -> usize {
        match self {
            Dialect::V2_6 | Dialect::V2_6_3 => 143_910,
            Dialect::V2_9 => 160_110,
        }
    }

    /// Whether this version reads the `allow_trailing_comma` option.
    pub fn has_trailing_comma_option(self) -> bool {
        self == Dialect::V2_9
    }

    /// Whether `create_additions: nil` (what JSON.load passes) means "create, with a
    /// deprecation warning" rather than "don't create".
    pub fn nil_create_additions_is_implicit(self) -> bool {
        self == Dialect::V2_9
    }

    /// Whether a `create_id: nil` or `false` option means JSON.create_id (2.9) rather
    /// than that value (2.6).
    pub fn falsy_create_id_is_default(self) -> bool {
        self == Dialect::V2_9
    }

    /// Whether generator messages start with the C source line (`"1003: NaN not allowed
    /// in JSON"`), as 2.6's do.
    pub fn numbers_generator_messages(self) -> bool {
        self == Dialect::V2_6
    }

    /// Whether a `GeneratorError` carries the object it could not write
    /// (`GeneratorError#invalid_object`, 2.9).
    pub fn generator_errors_carry_object(self) -> bool {
        self == Dialect::V2_9
    }

    /// Whether `String#to_json_raw_object`'s "raw" key is UTF-8 (2.9) rather than
    /// binary (2.6's `rb_str_new2`).
    pub fn utf8_raw_key(self) -> bool {
        self == Dialect::V2_9
    }

    /// Whether `GeneratorMethods::String.included` also calls `super` (2.9).
    pub fn string_included_calls_super(self) -> bool {
        self == Dialect::V2_9
    }
}
