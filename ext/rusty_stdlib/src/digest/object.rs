//! The Ruby object behind every digest instance, and its methods.

use std::cell::{Cell, RefCell};

use magnus::{
    prelude::*, rb_sys::AsRawValue, typed_data::Obj, Error, RClass, RString, Ruby, Value,
};
use rusty_core::digest::{Algorithm, Digest, Hasher};
use rusty_core::hex;

use super::registry;
use crate::helpers::{error::c_error, nogvl::without_gvl, tmplock::LockedStr};

/// Strings at least this long are hashed with the GVL released.
const NOGVL_THRESHOLD: usize = 64 * 1024;

// `name`: the stdlib's data type name, which Ruby's "wrong argument type" errors quote
// (OpenSSL::HMAC given a Digest::SHA256 object, say).
#[magnus::wrap(class = "Digest::Base", name = "digest", free_immediately, size)]
pub struct DigestObject {
    hasher: RefCell<Hasher>,
    /// Set while a large update runs without the GVL on a copy of `hasher`; other threads
    /// that reach this object meanwhile wait, as they would have on the GVL.
    busy: Cell<bool>,
}

pub fn define_alloc_func(class: RClass, algorithm: Algorithm) {
    let alloc: unsafe extern "C" fn(rb_sys::VALUE) -> rb_sys::VALUE = match algorithm {
        Algorithm::Md5 => alloc::<0>,
        Algorithm::Sha1 => alloc::<1>,
        Algorithm::Sha256 => alloc::<2>,
        Algorithm::Sha384 => alloc::<3>,
        Algorithm::Sha512 => alloc::<4>,
        Algorithm::Rmd160 => alloc::<5>,
    };
    unsafe { rb_sys::rb_define_alloc_func(class.as_raw(), Some(alloc)) }
}

unsafe extern "C" fn alloc<const ALGORITHM: usize>(class: rb_sys::VALUE) -> rb_sys::VALUE {
    let ruby = Ruby::get_unchecked();
    let class = RClass::from_value(magnus::rb_sys::FromRawValue::from_raw(class))
        .expect("allocator called with a class");
    let object = DigestObject::new(Algorithm::ALL[ALGORITHM]);
    ruby.obj_wrap_as(object, class).as_raw()
}

/// `digest` result: a binary String.
fn binary_string(ruby: &Ruby, digest: &Digest) -> RString {
    ruby.str_from_slice(digest.as_bytes())
}

/// `hexdigest` result: a US-ASCII String, as `Digest.hexencode` makes it.
fn hex_string(ruby: &Ruby, digest: &Digest) -> RString {
    let mut buf = [0u8; 2 * rusty_core::digest::MAX_DIGEST_LENGTH];
    let len = digest.as_bytes().len() * 2;
    hex::encode_to_slice(digest.as_bytes(), &mut buf[..len]);
    ruby.enc_str_new(&buf[..len], ruby.usascii_encoding())
}

/// `rb_check_frozen`, whose FrozenError message includes the receiver's `inspect`.
fn check_frozen(object: Value) -> Result<(), Error> {
    if object.is_frozen() {
        magnus::rb_sys::protect(|| unsafe { rb_sys::rb_error_frozen_object(object.as_raw()) })?;
    }
    Ok(())
}

/// Calls the same method in `Digest::Instance` with the same arguments.
pub(super) fn call_super(args: &[Value]) -> Result<Value, Error> {
    let raw: Vec<rb_sys::VALUE> = args.iter().map(|v| v.as_raw()).collect();
    magnus::rb_sys::protect(|| unsafe { rb_sys::rb_call_super(raw.len() as i32, raw.as_ptr()) })
        .map(|v| unsafe { magnus::rb_sys::FromRawValue::from_raw(v) })
}

impl DigestObject {
    pub fn new(algorithm: Algorithm) -> DigestObject {
        DigestObject {
            hasher: RefCell::new(Hasher::new(algorithm)),
            busy: Cell::new(false),
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.hasher.borrow().algorithm()
    }

    /// Replaces the state with a fresh one of `algorithm` (`Digest::SHA2#initialize`).
    pub fn restart(&self, algorithm: Algorithm) -> Result<(), Error> {
        self.wait_idle()?;
        *self.hasher.borrow_mut() = Hasher::new(algorithm);
        Ok(())
    }

    /// Copies `other`'s state, algorithm included.
    pub fn copy_state_from(&self, other: &DigestObject) -> Result<(), Error> {
        other.wait_idle()?;
        self.wait_idle()?;
        let state = other.hasher.borrow().clone();
        *self.hasher.borrow_mut() = state;
        Ok(())
    }

    /// Waits until no other thread is hashing into this object without the GVL.
    fn wait_idle(&self) -> Result<(), Error> {
        while self.busy.get() {
            magnus::rb_sys::protect(|| {
                unsafe { rb_sys::rb_thread_schedule() };
                rb_sys::Qnil as rb_sys::VALUE
            })?;
        }
        Ok(())
    }

    fn feed(&self, string: RString) -> Result<(), Error> {
        self.wait_idle()?;
        if string.len() < NOGVL_THRESHOLD {
            // Short: no Ruby code runs while the bytes are borrowed.
            self.hasher
                .borrow_mut()
                .update(unsafe { string.as_slice() });
            return Ok(());
        }
        let Some(locked) = LockedStr::try_lock(string) else {
            self.hasher
                .borrow_mut()
                .update(unsafe { string.as_slice() });
            return Ok(());
        };
        let mut hasher = self.hasher.borrow().clone();
        self.busy.set(true);
        // One release for the whole string: each time we take the GVL back we may wait a
        // full thread quantum, so releasing per chunk would make busy processes slower.
        without_gvl(|| hasher.update(locked.bytes()));
        drop(locked);
        *self.hasher.borrow_mut() = hasher;
        self.busy.set(false);
        Ok(())
    }

    /// Whether a fast path may skip the stdlib's method dispatch: the receiver is exactly
    /// our class (no subclass or singleton that could override `update`/`finish`/`reset`).
    fn plain(rb_self: Obj<DigestObject>) -> bool {
        registry::is_builtin(rb_self.class().as_value(), rb_self.algorithm())
    }

    // --- Digest::Base primitives -------------------------------------------------------

    pub fn initialize_copy(
        ruby: &Ruby,
        rb_self: Obj<DigestObject>,
        other: Value,
    ) -> Result<Obj<DigestObject>, Error> {
        if rb_self.as_raw() == other.as_raw() {
            return Ok(rb_self);
        }
        check_frozen(rb_self.as_value())?;
        let other = match Obj::<DigestObject>::try_convert(other) {
            Ok(other) if other.algorithm() == rb_self.algorithm() => other,
            // The stdlib looks for the other object's algorithm in its class chain.
            _ if other.is_kind_of(rb_self.class().superclass()?) => {
                return Err(c_error(
                    ruby,
                    ruby.exception_type_error(),
                    "different algorithms",
                ));
            }
            _ => {
                return Err(c_error(
                    ruby,
                    ruby.exception_runtime_error(),
                    "Digest::Base cannot be directly inherited in Ruby",
                ));
            }
        };
        rb_self.copy_state_from(&other)?;
        Ok(rb_self)
    }

    pub fn update(rb_self: Obj<DigestObject>, data: Value) -> Result<Obj<DigestObject>, Error> {
        let string = RString::try_convert(data)?;
        rb_self.feed(string)?;
        Ok(rb_self)
    }

    pub fn reset(rb_self: Obj<DigestObject>) -> Result<Obj<DigestObject>, Error> {
        rb_self.wait_idle()?;
        rb_self.hasher.borrow_mut().reset();
        Ok(rb_self)
    }

    pub fn finish(ruby: &Ruby, rb_self: Obj<DigestObject>) -> Result<RString, Error> {
        rb_self.wait_idle()?;
        let digest = rb_self.hasher.borrow_mut().finish_reset();
        Ok(binary_string(ruby, &digest))
    }

    pub fn digest_length(rb_self: Obj<DigestObject>) -> usize {
        rb_self.algorithm().digest_length()
    }

    pub fn block_length(rb_self: Obj<DigestObject>) -> usize {
        rb_self.algorithm().block_length()
    }

    // --- fast paths over Digest::Instance ----------------------------------------------

    /// The digest `Digest::Instance#digest`/`#hexdigest` would compute: of the state so far
    /// (no argument), or of `string` alone with the state reset before and after.
    /// `None` when the stdlib's own method must run.
    fn instance_digest(
        rb_self: Obj<DigestObject>,
        args: &[Value],
    ) -> Result<Option<Digest>, Error> {
        if !Self::plain(rb_self) {
            return Ok(None);
        }
        match args {
            [] => {
                rb_self.wait_idle()?;
                Ok(Some(rb_self.hasher.borrow().peek()))
            }
            [arg] => {
                let Some(string) = RString::from_value(*arg) else {
                    return Ok(None);
                };
                rb_self.wait_idle()?;
                rb_self.hasher.borrow_mut().reset();
                rb_self.feed(string)?;
                Ok(Some(rb_self.hasher.borrow_mut().finish_reset()))
            }
            _ => Ok(None),
        }
    }

    pub fn digest(ruby: &Ruby, rb_self: Obj<DigestObject>, args: &[Value]) -> Result<Value, Error> {
        match Self::instance_digest(rb_self, args)? {
            Some(digest) => Ok(binary_string(ruby, &digest).as_value()),
            None => call_super(args),
        }
    }

    pub fn hexdigest(
        ruby: &Ruby,
        rb_self: Obj<DigestObject>,
        args: &[Value],
    ) -> Result<Value, Error> {
        match Self::instance_digest(rb_self, args)? {
            Some(digest) => Ok(hex_string(ruby, &digest).as_value()),
            None => call_super(args),
        }
    }

    fn bang(rb_self: Obj<DigestObject>) -> Result<Option<Digest>, Error> {
        if !Self::plain(rb_self) || rb_self.is_frozen() {
            return Ok(None);
        }
        rb_self.wait_idle()?;
        Ok(Some(rb_self.hasher.borrow_mut().finish_reset()))
    }

    pub fn digest_bang(ruby: &Ruby, rb_self: Obj<DigestObject>) -> Result<Value, Error> {
        match Self::bang(rb_self)? {
            Some(digest) => Ok(binary_string(ruby, &digest).as_value()),
            None => call_super(&[]),
        }
    }

    pub fn hexdigest_bang(ruby: &Ruby, rb_self: Obj<DigestObject>) -> Result<Value, Error> {
        match Self::bang(rb_self)? {
            Some(digest) => Ok(hex_string(ruby, &digest).as_value()),
            None => call_super(&[]),
        }
    }

    pub fn to_s(ruby: &Ruby, rb_self: Obj<DigestObject>) -> Result<Value, Error> {
        if !Self::plain(rb_self) {
            return call_super(&[]);
        }
        Self::hexdigest(ruby, rb_self, &[])
    }
}

/// One-shot digest of `string` for the class methods, with the GVL released when large.
pub fn digest_of(algorithm: Algorithm, string: RString) -> Result<Digest, Error> {
    let object = DigestObject::new(algorithm);
    object.feed(string)?;
    let digest = object.hasher.borrow_mut().finish_reset();
    Ok(digest)
}

pub(super) fn hex_result(ruby: &Ruby, digest: &Digest) -> RString {
    hex_string(ruby, digest)
}

pub(super) fn binary_result(ruby: &Ruby, digest: &Digest) -> RString {
    binary_string(ruby, digest)
}
