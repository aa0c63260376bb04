//! `RustyStdlib::Marshal.native_vet(source, classes, symbols, max_depth)`: the binding of
//! `rusty_core::marshal::vet` that `safe_load` asks before it loads anything. Returns nil
//! when the dump may be loaded, else the refusal as an Array (`[:class, "Foo"]`,
//! `[:too_deep]`, ...), the same Arrays the pure-Ruby walk returns
//! (lib/rusty_stdlib/marshal/vet.rb); lib/rusty_stdlib/marshal/safe_load.rb turns them
//! into exceptions.

use magnus::{prelude::*, Error, RArray, RString, Ruby, Value};
use rusty_core::marshal::vet::{vet, Policy, Refusal};

/// The names in an Array of Strings, as bytes.
fn names(list: RArray) -> Result<Vec<Vec<u8>>, Error> {
    list.into_iter()
        .map(|name| RString::try_convert(name).map(|s| unsafe { s.as_slice() }.to_vec()))
        .collect()
}

pub fn native_vet(
    ruby: &Ruby,
    source: RString,
    classes: RArray,
    symbols: Option<RArray>,
    max_depth: usize,
) -> Result<Value, Error> {
    let classes = names(classes)?;
    let symbols = symbols.map(names).transpose()?;
    let class_refs: Vec<&[u8]> = classes.iter().map(Vec::as_slice).collect();
    let symbol_refs: Option<Vec<&[u8]>> = symbols
        .as_ref()
        .map(|s| s.iter().map(Vec::as_slice).collect());
    let policy = Policy {
        permitted_classes: &class_refs,
        permitted_symbols: symbol_refs.as_deref(),
        max_depth,
    };
    // SAFETY: no Ruby code runs while the walk reads the bytes.
    let outcome = std::panic::catch_unwind(|| vet(unsafe { source.as_slice() }, &policy));
    let refusal = match outcome {
        Ok(Ok(())) => return Ok(ruby.qnil().as_value()),
        Ok(Err(refusal)) => refusal,
        Err(_) => {
            return Err(Error::new(
                ruby.exception_runtime_error(),
                "rusty_stdlib: Marshal vet failed",
            ))
        }
    };
    // Each part goes into the Array as soon as it is made: a Rust Vec of Values is not
    // seen by the GC, so a String kept there could be freed by the next allocation.
    let array = ruby.ary_new_capa(3);
    let kind = |name: &str| array.push(ruby.to_symbol(name));
    let bytes = |b: &[u8]| array.push(ruby.str_from_slice(b));
    let byte = |b: u8| array.push(ruby.integer_from_i64(b as i64));
    match refusal {
        Refusal::Class(name) => kind("class").and_then(|_| bytes(&name)),
        Refusal::Symbol(name) => kind("symbol").and_then(|_| bytes(&name)),
        Refusal::Ivar { name, on } => kind("ivar")
            .and_then(|_| bytes(&name))
            .and_then(|_| bytes(on.as_bytes())),
        Refusal::TooDeep => kind("too_deep"),
        Refusal::TooShort => kind("too_short"),
        Refusal::NegativeSize => kind("negative_size"),
        Refusal::NegativeArraySize => kind("negative_array_size"),
        Refusal::BadSymbol => kind("bad_symbol"),
        Refusal::Format(b) => kind("format").and_then(|_| byte(b)),
        Refusal::SymbolFormat(b) => kind("symbol_format").and_then(|_| byte(b)),
        Refusal::SymlinkWithEncoding => kind("symlink_with_encoding"),
    }?;
    Ok(array.as_value())
}
