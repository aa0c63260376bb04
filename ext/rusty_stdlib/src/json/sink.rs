//! Builds Ruby values from what `rusty_core::json::parse` reports.
//!
//! Values wait on a [`ValueStack`]: a Rust `Vec` inside a Ruby object whose `mark`
//! function marks every entry, so a GC run by any allocation (a string, an array) sees
//! them. Arrays and hashes are then made in one call from the top of the stack.

use std::cell::UnsafeCell;

use magnus::{
    gc::Marker, rb_sys::FromRawValue, typed_data::Obj, DataTypeFunctions, Error, Ruby, TypedData,
    Value,
};
use rb_sys::VALUE;
use rusty_core::json::{parse_float_fast, parse_int_fast, Sink};

/// The GC-visible stack of values not yet placed in their container.
#[derive(TypedData, Default)]
#[magnus(class = "RustyStdlib::JSON::ValueStack", free_immediately, mark)]
pub struct ValueStack {
    values: UnsafeCell<Vec<VALUE>>,
}

impl DataTypeFunctions for ValueStack {
    fn mark(&self, _marker: &Marker) {
        // Only ever called while no Rust code mutates the Vec (GC runs inside Ruby calls,
        // and the sink never holds a reference across one).
        let values = unsafe { &*self.values.get() };
        for &v in values {
            unsafe { rb_sys::rb_gc_mark(v) };
        }
    }
}

/// What a parser instance asked for, beyond what the walk itself needs.
#[derive(Clone, Copy, Default, Debug)]
pub struct Flavour {
    pub symbolize_names: bool,
    pub freeze: bool,
    pub create_additions: bool,
}

pub struct RubySink {
    stack: Obj<ValueStack>,
    flavour: Flavour,
    utf8: *mut rb_sys::rb_encoding,
    /// With `create_additions`: the create_id key (kept alive by the parser object) and
    /// the JSON module.
    additions: Option<(VALUE, VALUE)>,
    /// NUL-terminated copies of numbers for Ruby's converters.
    cstr: Vec<u8>,
}

const fn fixnum(v: i64) -> VALUE {
    ((v << 1) | 1) as VALUE
}

fn json_constant(name: &str) -> Result<VALUE, Error> {
    use magnus::Module;
    let ruby = unsafe { Ruby::get_unchecked() };
    let json: magnus::RModule = ruby.class_object().const_get("JSON")?;
    let value: Value = json.const_get(name)?;
    Ok(magnus::rb_sys::AsRawValue::as_raw(value))
}

impl RubySink {
    pub fn new(
        ruby: &Ruby,
        flavour: Flavour,
        create_id: Option<VALUE>,
        capacity: usize,
    ) -> Result<RubySink, Error> {
        let additions = match create_id {
            Some(id) => {
                use magnus::Module;
                let json: magnus::RModule = ruby.class_object().const_get("JSON")?;
                Some((id, magnus::rb_sys::AsRawValue::as_raw(json)))
            }
            None => None,
        };
        let stack = ruby.obj_wrap(ValueStack {
            values: UnsafeCell::new(Vec::with_capacity(capacity)),
        });
        Ok(RubySink {
            stack,
            flavour,
            utf8: unsafe { rb_sys::rb_utf8_encoding() },
            additions,
            cstr: Vec::new(),
        })
    }

    /// json 2.6's `create_additions` for a finished Hash: if it names a class under the
    /// create_id key that is `json_creatable?`, that class's `json_create(hash)` replaces
    /// it. Runs user code, so under `protect`; the hash stays on the marked stack.
    fn create_addition(&mut self, hash: VALUE) -> Result<VALUE, Error> {
        let Some((create_id, json)) = self.additions else {
            return Ok(hash);
        };
        self.push(hash);
        let result = magnus::rb_sys::protect(|| unsafe {
            let klassname = rb_sys::rb_hash_aref(hash, create_id);
            if klassname == rb_sys::Qnil as VALUE {
                return hash;
            }
            let id = |name: &str| rb_sys::rb_intern2(name.as_ptr() as *const _, name.len() as _);
            let klass = rb_sys::rb_funcall(json, id("deep_const_get"), 1, klassname);
            let creatable = rb_sys::rb_funcall(klass, id("json_creatable?"), 0);
            if creatable == rb_sys::Qnil as VALUE || creatable == rb_sys::Qfalse as VALUE {
                return hash;
            }
            rb_sys::rb_funcall(klass, id("json_create"), 1, hash)
        });
        unsafe { (*self.values()).pop() };
        result
    }

    #[inline(always)]
    fn values(&self) -> *mut Vec<VALUE> {
        self.stack.values.get()
    }

    #[inline(always)]
    fn push(&mut self, v: VALUE) {
        unsafe { (*self.values()).push(v) }
    }

    /// The one value left after a successful parse.
    pub fn result(&self) -> Value {
        let v = unsafe {
            (*self.values())
                .last()
                .copied()
                .unwrap_or(rb_sys::Qnil as VALUE)
        };
        unsafe { Value::from_raw(v) }
    }

    /// Keeps the stack object alive (and visible to the conservative GC) up to here.
    pub fn finish(self) {
        std::hint::black_box(self.stack);
    }

    fn with_cstr(&mut self, text: &[u8]) -> *const std::os::raw::c_char {
        self.cstr.clear();
        self.cstr.extend_from_slice(text);
        self.cstr.push(0);
        self.cstr.as_ptr() as *const _
    }

    #[inline(always)]
    fn frozen_if_asked(&self, v: VALUE) -> VALUE {
        if self.flavour.freeze {
            unsafe { rb_sys::rb_obj_freeze(v) }
        } else {
            v
        }
    }
}

impl Sink for RubySink {
    type Error = Error;

    #[inline]
    fn null(&mut self) -> Result<(), Error> {
        self.push(rb_sys::Qnil as VALUE);
        Ok(())
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Result<(), Error> {
        self.push(if value { rb_sys::Qtrue } else { rb_sys::Qfalse } as VALUE);
        Ok(())
    }

    fn nan(&mut self) -> Result<(), Error> {
        let v = json_constant("NaN")?;
        self.push(v);
        Ok(())
    }

    fn infinity(&mut self, negative: bool) -> Result<(), Error> {
        let v = json_constant(if negative {
            "MinusInfinity"
        } else {
            "Infinity"
        })?;
        self.push(v);
        Ok(())
    }

    #[inline]
    fn integer(&mut self, text: &[u8]) -> Result<(), Error> {
        let v = match parse_int_fast(text) {
            Some(i) => fixnum(i),
            None => {
                let cstr = self.with_cstr(text);
                // Digits only: cannot raise.
                unsafe { rb_sys::rb_cstr2inum(cstr, 10) }
            }
        };
        self.push(v);
        Ok(())
    }

    #[inline]
    fn float(&mut self, text: &[u8]) -> Result<(), Error> {
        let f = match parse_float_fast(text) {
            Some(f) => f,
            None => {
                // Out of range, or too many digits to be sure: Ruby's strtod decides, and
                // warns "Float 1e400 out of range" under -w just as the gem does.
                let cstr = self.with_cstr(text) as usize;
                let mut out = 0f64;
                let out_ptr = &mut out as *mut f64 as usize;
                magnus::rb_sys::protect(|| unsafe {
                    *(out_ptr as *mut f64) =
                        rb_sys::rb_cstr_to_dbl(cstr as *const std::os::raw::c_char, 1);
                    rb_sys::Qnil as VALUE
                })?;
                out
            }
        };
        let v = unsafe { rb_sys::rb_float_new(f) };
        self.push(v);
        Ok(())
    }

    #[inline]
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), Error> {
        let ptr = bytes.as_ptr() as *const std::os::raw::c_char;
        let len = bytes.len() as std::os::raw::c_long;
        let v = if key || self.flavour.freeze {
            let interned = unsafe { rb_sys::rb_enc_interned_str(ptr, len, self.utf8) };
            if key && self.flavour.symbolize_names {
                if std::str::from_utf8(bytes).is_ok() {
                    unsafe { rb_sys::rb_str_intern(interned) }
                } else {
                    // Raises EncodingError ("invalid symbol in encoding UTF-8 ...").
                    magnus::rb_sys::protect(|| unsafe { rb_sys::rb_str_intern(interned) })?
                }
            } else {
                interned
            }
        } else {
            unsafe { rb_sys::rb_utf8_str_new(ptr, len) }
        };
        self.push(v);
        Ok(())
    }

    #[inline]
    fn array(&mut self, len: usize) -> Result<(), Error> {
        let values = self.values();
        let start = unsafe { (*values).len() } - len;
        // The elements stay on the marked stack while the array is allocated.
        let ary =
            unsafe { rb_sys::rb_ary_new_from_values(len as _, (*values).as_ptr().add(start)) };
        unsafe { (*values).truncate(start) };
        let ary = self.frozen_if_asked(ary);
        self.push(ary);
        Ok(())
    }

    #[inline]
    fn object(&mut self, pairs: usize) -> Result<(), Error> {
        let values = self.values();
        let start = unsafe { (*values).len() } - 2 * pairs;
        let hash = unsafe { rb_sys::rb_hash_new() };
        if pairs > 0 {
            // Keys are frozen Strings or Symbols: hashing them runs no Ruby code. Later
            // duplicates overwrite earlier ones in place, as `Hash#[]=` does.
            unsafe {
                rb_sys::rb_hash_bulk_insert((2 * pairs) as _, (*values).as_ptr().add(start), hash)
            };
        }
        unsafe { (*values).truncate(start) };
        let hash = self.create_addition(hash)?;
        let hash = self.frozen_if_asked(hash);
        self.push(hash);
        Ok(())
    }
}
