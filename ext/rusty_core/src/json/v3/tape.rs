//! A parse recorded as the calls it made to its [`Sink`], to be replayed into another
//! sink later. Replaying into the Ruby sink builds a document's Ruby objects with no
//! parsing at all: the floor the benchmarks compare a parse with (what any parser must
//! pay). Parsing itself never uses it.

use std::convert::Infallible;

use super::parser::{parse, FloatValue, Options, Sink};
use super::Error;

/// One sink call. Text (an integer's or float's literal, a string's unescaped bytes) is
/// a range of [`Tape::text`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Event {
    Null,
    Boolean(bool),
    Nan,
    Infinity(bool),
    Integer {
        start: usize,
        end: usize,
        value: Option<i64>,
    },
    Float {
        start: usize,
        end: usize,
        value: FloatValue,
    },
    String {
        start: usize,
        end: usize,
        key: bool,
    },
    Array(usize),
    Object(usize),
}

/// The sink calls of one successful parse, in order.
#[derive(Debug, Default, PartialEq)]
pub struct Tape {
    events: Vec<Event>,
    text: Vec<u8>,
}

impl Tape {
    /// Parses `src` with `options`, recording what the sink is told. A document with a
    /// duplicate key is recorded with its objects built anyway (the recorder does not
    /// look for them).
    pub fn record(src: &[u8], options: &Options) -> Result<Tape, Error<Infallible>> {
        let mut tape = Tape::default();
        parse(src, options, &mut tape, &mut Vec::new())?;
        Ok(tape)
    }

    /// Tells `sink` what the recorded parse told its sink, stopping at its first error
    /// (or at an object it reports a duplicate key in).
    pub fn replay<S: Sink>(&self, sink: &mut S) -> Result<(), S::Error> {
        for &event in &self.events {
            match event {
                Event::Null => sink.null()?,
                Event::Boolean(value) => sink.boolean(value)?,
                Event::Nan => sink.nan()?,
                Event::Infinity(negative) => sink.infinity(negative)?,
                Event::Integer { start, end, value } => {
                    sink.integer(&self.text[start..end], value)?
                }
                Event::Float { start, end, value } => sink.float(&self.text[start..end], value)?,
                Event::String { start, end, key } => sink.string(&self.text[start..end], key)?,
                Event::Array(len) => sink.array(len)?,
                Event::Object(pairs) => {
                    if sink.object(pairs)?.is_some() {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    fn keep(&mut self, bytes: &[u8]) -> (usize, usize) {
        let start = self.text.len();
        self.text.extend_from_slice(bytes);
        (start, self.text.len())
    }
}

impl Sink for Tape {
    type Error = Infallible;

    fn null(&mut self) -> Result<(), Infallible> {
        self.events.push(Event::Null);
        Ok(())
    }

    fn boolean(&mut self, value: bool) -> Result<(), Infallible> {
        self.events.push(Event::Boolean(value));
        Ok(())
    }

    fn nan(&mut self) -> Result<(), Infallible> {
        self.events.push(Event::Nan);
        Ok(())
    }

    fn infinity(&mut self, negative: bool) -> Result<(), Infallible> {
        self.events.push(Event::Infinity(negative));
        Ok(())
    }

    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), Infallible> {
        let (start, end) = self.keep(text);
        self.events.push(Event::Integer { start, end, value });
        Ok(())
    }

    fn float(&mut self, text: &[u8], value: FloatValue) -> Result<(), Infallible> {
        let (start, end) = self.keep(text);
        self.events.push(Event::Float { start, end, value });
        Ok(())
    }

    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), Infallible> {
        let (start, end) = self.keep(bytes);
        self.events.push(Event::String { start, end, key });
        Ok(())
    }

    fn array(&mut self, len: usize) -> Result<(), Infallible> {
        self.events.push(Event::Array(len));
        Ok(())
    }

    fn object(&mut self, pairs: usize) -> Result<Option<usize>, Infallible> {
        self.events.push(Event::Object(pairs));
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_what_it_recorded() {
        let src =
            br#"{"a":[1,2.5,-0.0,"x\u00e9",null,true,false,{}],"b":{"c":12345678901234567890}}"#;
        let tape = Tape::record(src, &Options::default()).unwrap();
        let mut again = Tape::default();
        tape.replay(&mut again).unwrap();
        assert_eq!(again, tape);
        assert_eq!(tape.events.len(), 15);
        assert_eq!(&tape.text[..1], b"a");
    }

    #[test]
    fn refuses_what_the_parse_refuses() {
        assert!(Tape::record(b"[1,]", &Options::default()).is_err());
    }
}
