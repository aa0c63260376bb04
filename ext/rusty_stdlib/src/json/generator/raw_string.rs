//! The String extras the gem's generator writes in C: `String#to_json_raw_object`,
//! `#to_json_raw`, `String.json_create` and the `included` hook that adds the last.
//!
//! Native, as the gem's are, because a Ruby version is observably different: it would
//! ask `self.class.name` where the gem takes the class's path (a class that overrides
//! `name`, or an instance that overrides `class`, gets another `json_class`), dispatch
//! `to_json_raw_object` where the gem calls its own function, word the TypeError for
//! `nil` as "NilClass" where Check_Type says "nil", and give errors raised inside it (a
//! record without "raw") a Ruby frame, and with it another error_highlight snippet in
//! the message.

use std::sync::OnceLock;

use magnus::{
    function, method,
    prelude::*,
    rb_sys::{protect, AsRawValue, FromRawValue},
    value::Opaque,
    Error, RHash, RModule, RString, Ruby, Value,
};
use rb_sys::ruby_value_type;

use crate::json::dialect::Dialect;

/// `GeneratorMethods::String::Extend`, which `included` adds (the gem keeps it in a C
/// global the same way; a constant's module is never collected).
static EXTEND: OnceLock<Opaque<RModule>> = OnceLock::new();

/// Defines the extras on our `GeneratorMethods::String` (`string`).
pub fn define(string: RModule) -> Result<(), Error> {
    string.define_method("to_json_raw", method!(to_json_raw, -1))?;
    string.define_method("to_json_raw_object", method!(to_json_raw_object, 0))?;
    let extend = string.define_module("Extend")?;
    extend.define_method("json_create", method!(json_create, 1))?;
    // Before `included` can run.
    EXTEND.get_or_init(|| extend.into());
    string.define_singleton_method("included", function!(included, 1))?;
    Ok(())
}

/// `GeneratorMethods::String.included(modul)`: `modul.extend(String::Extend)`, and on
/// json 2.9 `super`.
fn included(ruby: &Ruby, modul: Value) -> Result<Value, Error> {
    let extend = EXTEND
        .get()
        .expect("String::Extend is defined with `included`");
    let result = modul.funcall("extend", (ruby.get_inner(*extend),))?;
    if Dialect::current().string_included_calls_super() {
        ruby.call_super::<_, Value>((modul,))?;
    }
    Ok(result)
}

/// `{JSON.create_id => <class path>, "raw" => unpack("C*")}`, in the gem's order.
fn to_json_raw_object(ruby: &Ruby, rb_self: Value) -> Result<RHash, Error> {
    let result = ruby.hash_new();
    let json: RModule = ruby.class_object().const_get("JSON")?;
    let create_id: Value = json.funcall("create_id", ())?;
    // rb_class_name(rb_obj_class(self)): the real class's path, not a `name` or
    // `class` method (an anonymous class gets its "#<Class:0x…>").
    let raw = rb_self.as_raw();
    let class_name = protect(|| unsafe { rb_sys::rb_class_name(rb_sys::rb_obj_class(raw)) })?;
    result.aset(create_id, unsafe { Value::from_raw(class_name) })?;
    let bytes: Value = rb_self.funcall("unpack", (binary(ruby, "C*"),))?;
    let key = if Dialect::current().utf8_raw_key() {
        ruby.str_new("raw")
    } else {
        binary(ruby, "raw")
    };
    result.aset(key, bytes)?;
    Ok(result)
}

/// `to_json_raw(*args)`: Hash#to_json(*args) of the raw object.
fn to_json_raw(ruby: &Ruby, rb_self: Value, args: &[Value]) -> Result<Value, Error> {
    let object = to_json_raw_object(ruby, rb_self)?;
    super::hash_to_json(ruby, object.as_value(), args)
}

/// `String.json_create(object)`: `object["raw"].pack("C*")` for a Hash (of any class;
/// Check_Type's TypeError otherwise), reading "raw" as C's rb_hash_aref does.
fn json_create(ruby: &Ruby, _rb_self: Value, object: Value) -> Result<Value, Error> {
    let raw = object.as_raw();
    let key = binary(ruby, "raw").as_raw();
    let bytes = protect(|| unsafe {
        rb_sys::rb_check_type(raw, ruby_value_type::RUBY_T_HASH as _);
        rb_sys::rb_hash_aref(raw, key)
    })?;
    unsafe { Value::from_raw(bytes) }.funcall("pack", (binary(ruby, "C*"),))
}

/// A new binary String, as the gem's `rb_str_new2` literals are (json 2.6's "raw" key
/// of the raw object is ASCII-8BIT).
fn binary(ruby: &Ruby, text: &str) -> RString {
    ruby.str_from_slice(text.as_bytes())
}
