//! `RustyStdlib::JSON::Tape`: a document parsed once (`Tape.new(source)`), whose `#build`
//! makes its Ruby objects again, as `JSON.parse(source)` makes them, with no parsing:
//! what any parser must pay for that document, the floor `rake bench` compares a parse
//! with (bench/workloads/json.rb). Not part of the drop-in.

use magnus::{
    rb_sys::{AsRawValue, FromRawValue},
    typed_data::Obj,
    DataTypeFunctions, Error, RString, Ruby, TypedData, Value,
};
use rb_sys::VALUE;
use rusty_core::json::v3::{Options, Tape};

use super::sink::{Flavour, RubySink};

#[derive(TypedData)]
#[magnus(class = "RustyStdlib::JSON::Tape", free_immediately, size, mark)]
pub struct TapeObject {
    tape: Tape,
    /// A frozen copy of the source, which the sink is given as a parse's would be.
    source: VALUE,
}

impl DataTypeFunctions for TapeObject {
    fn mark(&self, _marker: &magnus::gc::Marker) {
        unsafe { rb_sys::rb_gc_mark(self.source) };
    }
}

impl TapeObject {
    /// `Tape.new(source)`: ArgumentError naming the error where json 3 would not parse
    /// `source` with its defaults.
    pub fn new(ruby: &Ruby, source: RString) -> Result<Obj<TapeObject>, Error> {
        let copy = unsafe { rb_sys::rb_str_new_frozen(source.as_raw()) };
        let text = RString::from_value(unsafe { Value::from_raw(copy) }).expect("a String");
        // SAFETY: no Ruby code runs while the bytes are read, and the copy is frozen.
        let bytes = unsafe { text.as_slice() };
        let tape = Tape::record(bytes, &Options::default()).map_err(|e| {
            Error::new(
                ruby.exception_arg_error(),
                format!("not a document json parses ({:?} at byte {})", e.kind, e.at),
            )
        })?;
        let wrapped = ruby.obj_wrap(TapeObject { tape, source: copy });
        // Used after the wrap: until then the copy is held only by a Rust struct on the
        // heap, which the GC does not see, and the wrap allocates.
        std::hint::black_box(text);
        Ok(wrapped)
    }

    /// The document's objects, built by the sink `JSON.parse` uses.
    pub fn build(ruby: &Ruby, rb_self: Obj<TapeObject>) -> Result<Value, Error> {
        let flavour = Flavour {
            symbolize_names: false,
            freeze: false,
            create_additions: false,
        };
        let mut sink = RubySink::new(ruby, rb_self.source, flavour, None)?;
        let built = rb_self.tape.replay(&mut sink).map(|()| sink.result());
        sink.finish();
        built
    }
}
