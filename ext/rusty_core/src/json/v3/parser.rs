//! The document walk: json 3.x's `json_parse_any`, one loop over an explicit frame stack
//! whose top frame's phase says what comes next, and `cParser_parse` around it.

use super::error::{Error, ErrorKind, Message, Segment};
use super::number;
use super::string::{self, Scanned};
use crate::json::parser::{lone_space, skip_spaces};

/// The parser options that change the walk (`JSON::Ext::ParserConfig`'s, less those the
/// binding handles: `symbolize_names`, `freeze`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Deepest allowed container nesting; 0 disables the check, and a negative limit
    /// (the gem's C `int`) rejects the first container.
    pub max_nesting: i64,
    pub allow_nan: bool,
    pub allow_trailing_comma: bool,
    pub allow_comments: bool,
    pub allow_control_characters: bool,
    pub allow_invalid_escape: bool,
}

impl Default for Options {
    /// What `ParserConfig.new` starts from.
    fn default() -> Self {
        Options {
            max_nesting: 100,
            allow_nan: false,
            allow_trailing_comma: false,
            allow_comments: false,
            allow_control_characters: false,
            allow_invalid_escape: false,
        }
    }
}

/// A float literal's value where json computes it, or `Ruby` where json has Ruby's
/// `rb_cstr_to_dbl` convert the text (far out of range, or more than 18 digits: Ruby
/// then warns under `-w` when the result overflows or underflows).
pub type FloatValue = Option<f64>;

/// Receives the values of a document in order; containers arrive after their contents.
/// The walk counts what it pushed, so the sink's stack positions are the walk's: each
/// call but `array`/`object` pushes one value, `array(n)` replaces the last `n` with one
/// and `object(n)` the last `n` key/value pairs.
pub trait Sink {
    type Error;
    fn null(&mut self) -> Result<(), Self::Error>;
    fn boolean(&mut self, value: bool) -> Result<(), Self::Error>;
    fn nan(&mut self) -> Result<(), Self::Error>;
    fn infinity(&mut self, negative: bool) -> Result<(), Self::Error>;
    /// An integer literal, and its value when it has at most 18 digits.
    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), Self::Error>;
    fn float(&mut self, text: &[u8], value: FloatValue) -> Result<(), Self::Error>;
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), Self::Error>;
    fn array(&mut self, len: usize) -> Result<(), Self::Error>;
    /// Builds the object; `Some(i)` when its `i`th key (from 0) repeats an earlier one,
    /// with the pairs left on the stack (the walk then fails, naming that key).
    fn object(&mut self, pairs: usize) -> Result<Option<usize>, Self::Error>;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Array,
    Object,
}

/// What the top frame expects next.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// A value: the document, an array element, or an object member's value.
    Value,
    /// `,` or `]` after an element.
    ArrayComma,
    /// A key, after `{` or `,`.
    ObjectKey,
    /// `:` after a key.
    ObjectColon,
    /// `,` or `}` after a member's value.
    ObjectComma,
}

struct Frame {
    kind: Kind,
    /// How many values the sink held when the container opened.
    start: usize,
    /// The container's opening bracket (where a duplicate key is reported).
    open: usize,
}

struct Walk<'a, 'o, S> {
    src: &'a [u8],
    p: usize,
    options: &'o Options,
    sink: &'o mut S,
    scratch: &'o mut Vec<u8>,
    /// Values on the sink's stack.
    values: usize,
    /// Open containers, outermost first (the document itself has none).
    frames: Vec<Frame>,
    nesting: i64,
}

/// A syntax error's message and the byte it is reported at.
type Fail = (Message, usize);

/// Parses `src` (the whole document) into `sink`. `scratch` is reused for unescaping.
pub fn parse<S: Sink>(
    src: &[u8],
    options: &Options,
    sink: &mut S,
    scratch: &mut Vec<u8>,
) -> Result<(), Error<S::Error>> {
    let mut walk = Walk {
        src,
        p: 0,
        options,
        sink,
        scratch,
        values: 0,
        frames: Vec::new(),
        nesting: 0,
    };
    walk.run()
}

impl<S: Sink> Walk<'_, '_, S> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.src.get(self.p).copied()
    }

    /// Whitespace and, with `allow_comments`, comments. Without it a `/` is an
    /// "unexpected token"; a `/` that starts no comment is one too.
    #[inline(always)]
    fn skip_ws(&mut self) -> Result<(), Fail> {
        loop {
            match self.src.get(self.p) {
                Some(b' ') if lone_space(self.src, self.p) => {
                    self.p += 1;
                    return Ok(());
                }
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.p = skip_spaces(self.src, self.p + 1),
                Some(b'/') => self.comment()?,
                _ => return Ok(()),
            }
        }
    }

    #[cold]
    fn comment(&mut self) -> Result<(), Fail> {
        let start = self.p;
        if !self.options.allow_comments {
            return Err((Message::UnexpectedToken, start));
        }
        let src = self.src;
        let p = start + 1;
        self.p = match src.get(p) {
            Some(b'/') => memchr::memchr(b'\n', &src[p..]).map_or(src.len(), |k| p + k + 1),
            Some(b'*') => {
                let mut q = p + 1;
                loop {
                    let Some(k) = memchr::memchr(b'*', &src[q..]) else {
                        return Err((Message::UnterminatedBlockComment, start));
                    };
                    q += k + 1;
                    if src.get(q) == Some(&b'/') {
                        break q + 1;
                    }
                }
            }
            _ => return Err((Message::UnexpectedToken, start)),
        };
        Ok(())
    }

    /// The path to the value the walk is in, for an error met in `phase`.
    fn path(&self, phase: Phase) -> Vec<Segment> {
        let mut path = Vec::with_capacity(self.frames.len());
        for (i, frame) in self.frames.iter().enumerate() {
            let top = i + 1 == self.frames.len();
            let end = if top {
                self.values
            } else {
                self.frames[i + 1].start
            };
            let entries = end - frame.start;
            match frame.kind {
                Kind::Array => {
                    let index = if top && phase == Phase::ArrayComma {
                        entries - 1
                    } else {
                        entries
                    };
                    path.push(Segment::Index(index));
                }
                Kind::Object => {
                    if entries % 2 == 1 {
                        path.push(Segment::Key(frame.start + entries - 1));
                    } else if top && phase == Phase::ObjectComma && entries > 0 {
                        path.push(Segment::Key(frame.start + entries - 2));
                    }
                }
            }
        }
        path
    }

    #[cold]
    fn syntax(&self, phase: Phase, (message, at): Fail) -> Error<S::Error> {
        Error {
            kind: ErrorKind::Syntax(message),
            at,
            path: self.path(phase),
        }
    }

    /// The phase after a value was pushed for the top frame; `None` once the document's
    /// value is complete.
    #[inline(always)]
    fn completed(&mut self) -> Option<Phase> {
        self.values += 1;
        self.frames.last().map(|frame| match frame.kind {
            Kind::Array => Phase::ArrayComma,
            Kind::Object => Phase::ObjectComma,
        })
    }

    fn run(&mut self) -> Result<(), Error<S::Error>> {
        let mut phase = Phase::Value;
        loop {
            // The runs of steps a document is mostly made of go on in `elements` and
            // `members`, without coming back here between steps.
            let next = match phase {
                Phase::Value | Phase::ArrayComma => self.elements(&mut phase),
                Phase::ObjectKey => self.members(&mut phase),
                Phase::ObjectColon => self.object_colon(),
                Phase::ObjectComma => self.object_comma(),
            };
            match next {
                Ok(Some(next)) => phase = next,
                Ok(None) => break,
                Err(Step::Syntax(fail)) => return Err(self.syntax(phase, fail)),
                Err(Step::Other(e)) => return Err(e),
            }
        }
        // `json_ensure_eof`.
        let mut tail = self.skip_ws();
        if tail.is_ok() && self.p < self.src.len() {
            tail = Err((Message::EndOfStream, self.p));
        }
        tail.map_err(|fail| Error {
            kind: ErrorKind::Syntax(fail.0),
            at: fail.1,
            path: Vec::new(),
        })
    }

    /// The steps from a value or an array's `,` on (`phase`), as `run` would take them one
    /// at a time, while each leads to the other: value, `,`, value... in arrays, arrays
    /// opened and closed included. Each step's phase is set in `phase` before it runs,
    /// since a failure's path depends on it. Returns the next phase where `run` takes
    /// over: an object's, or the document done.
    #[inline(always)]
    fn elements(&mut self, phase: &mut Phase) -> Result<Option<Phase>, Step<S::Error>> {
        let mut next = *phase;
        loop {
            // An array opened, or one closed inside an array, leads to another of these
            // two steps: they go on here too (canada's `[[x, y], [x, y], ...]`).
            next = match next {
                Phase::Value => {
                    *phase = Phase::Value;
                    match self.value()? {
                        Some(next) => next,
                        None => return Ok(None),
                    }
                }
                Phase::ArrayComma => {
                    *phase = Phase::ArrayComma;
                    match self.array_comma()? {
                        Some(next) => next,
                        None => return Ok(None),
                    }
                }
                other => return Ok(Some(other)),
            };
        }
    }

    /// `elements` for an object's members: key, `:`, value, `,`, key...
    #[inline(always)]
    fn members(&mut self, phase: &mut Phase) -> Result<Option<Phase>, Step<S::Error>> {
        loop {
            *phase = Phase::ObjectKey;
            match self.object_key()? {
                Some(Phase::ObjectColon) => {}
                other => return Ok(other),
            }
            *phase = Phase::ObjectColon;
            match self.object_colon()? {
                Some(Phase::Value) => {}
                other => return Ok(other),
            }
            *phase = Phase::Value;
            match self.value()? {
                Some(Phase::ObjectComma) => {}
                other => return Ok(other),
            }
            *phase = Phase::ObjectComma;
            match self.object_comma()? {
                Some(Phase::ObjectKey) => {}
                other => return Ok(other),
            }
        }
    }

    #[inline(always)]
    fn keyword(&mut self, word: &[u8]) -> Result<(), Step<S::Error>> {
        if self.src[self.p..].starts_with(word) {
            self.p += word.len();
            Ok(())
        } else {
            Err(Step::Syntax((Message::UnexpectedToken, self.p)))
        }
    }

    /// A value (or, with `allow_trailing_comma`, the `]` after a trailing comma).
    #[inline(always)]
    fn value(&mut self) -> Result<Option<Phase>, Step<S::Error>> {
        self.skip_ws()?;
        let start = self.p;
        let Some(c) = self.peek() else {
            return Err(Step::Syntax((Message::UnexpectedEnd, start)));
        };
        match c {
            b'"' => {
                self.string(false)?;
                return Ok(self.completed());
            }
            b'0'..=b'9' => {
                self.number(start, false)?;
                return Ok(self.completed());
            }
            b'-' => {
                self.number(start, true)?;
                return Ok(self.completed());
            }
            b'[' => return self.open_array(start),
            b'{' => return self.open_object(start),
            b']' if self.options.allow_trailing_comma
                && self.frames.last().is_some_and(|f| f.kind == Kind::Array) =>
            {
                return self.array_comma();
            }
            b'n' => {
                self.keyword(b"null")?;
                self.sink.null()
            }
            b't' => {
                self.keyword(b"true")?;
                self.sink.boolean(true)
            }
            b'f' => {
                self.keyword(b"false")?;
                self.sink.boolean(false)
            }
            b'N' | b'I' => {
                if !self.options.allow_nan {
                    return Err(Step::Syntax((Message::UnexpectedToken, start)));
                }
                if c == b'N' {
                    self.keyword(b"NaN")?;
                    self.sink.nan()
                } else {
                    self.keyword(b"Infinity")?;
                    self.sink.infinity(false)
                }
            }
            0 => return Err(Step::Syntax((Message::UnexpectedNull, start))),
            _ => return Err(Step::Syntax((Message::UnexpectedCharacter, start))),
        }
        .map_err(|e| Step::Other(Error::sink(e)))?;
        Ok(self.completed())
    }

    #[inline(always)]
    fn number(&mut self, start: usize, negative: bool) -> Result<(), Step<S::Error>> {
        let digits = start + negative as usize;
        let n = match number::scan(self.src, digits, negative) {
            Ok(n) => n,
            Err(stopped) => {
                if negative && self.options.allow_nan && self.src.get(stopped) == Some(&b'I') {
                    self.p = start;
                    self.keyword(b"-Infinity")?;
                    return self
                        .sink
                        .infinity(true)
                        .map_err(|e| Step::Other(Error::sink(e)));
                }
                return Err(Step::Syntax((Message::InvalidNumber, start)));
            }
        };
        let text = &self.src[start..n.end];
        self.p = n.end;
        let pushed = if n.integer {
            self.sink.integer(text, number::integer_value(&n))
        } else {
            self.sink.float(text, number::float_value(&n))
        };
        pushed.map_err(|e| Step::Other(Error::sink(e)))
    }

    /// A string (an object key if `key`) at the quote under the cursor.
    #[inline(always)]
    fn string(&mut self, key: bool) -> Result<(), Step<S::Error>> {
        let start = self.p;
        let options = self.options;
        match string::scan(self.src, start, options.allow_control_characters) {
            Scanned::Closed { end, escaped } => {
                let pushed = if escaped {
                    self.scratch.clear();
                    string::unescape(
                        self.src,
                        start + 1,
                        end,
                        options.allow_control_characters,
                        options.allow_invalid_escape,
                        self.scratch,
                    )
                    .map_err(|r| Step::Syntax((r.message, r.at)))?;
                    self.sink.string(self.scratch, key)
                } else {
                    self.sink.string(&self.src[start + 1..end], key)
                };
                self.p = end + 1;
                pushed.map_err(|e| Step::Other(Error::sink(e)))
            }
            Scanned::Unterminated => {
                Err(Step::Syntax((Message::UnterminatedString, self.src.len())))
            }
            Scanned::Control { at } => Err(Step::Syntax((Message::ControlCharacter, at))),
        }
    }

    /// One more level of nesting, or the gem's NestingError.
    #[inline(always)]
    fn nest(&mut self) -> Result<(), Step<S::Error>> {
        self.nesting += 1;
        let max = self.options.max_nesting;
        if max != 0 && max < self.nesting {
            return Err(Step::Other(Error {
                kind: ErrorKind::Nesting(self.nesting),
                at: self.p,
                path: Vec::new(),
            }));
        }
        Ok(())
    }

    #[inline(always)]
    fn open_array(&mut self, start: usize) -> Result<Option<Phase>, Step<S::Error>> {
        self.p += 1;
        // Still the enclosing value's business: errors here have its path.
        self.skip_ws()?;
        if self.peek() == Some(b']') {
            self.p += 1;
            self.sink
                .array(0)
                .map_err(|e| Step::Other(Error::sink(e)))?;
            return Ok(self.completed());
        }
        self.nest()?;
        self.frames.push(Frame {
            kind: Kind::Array,
            start: self.values,
            open: start,
        });
        Ok(Some(Phase::Value))
    }

    #[inline(always)]
    fn open_object(&mut self, start: usize) -> Result<Option<Phase>, Step<S::Error>> {
        self.p += 1;
        self.skip_ws()?;
        if self.peek() == Some(b'}') {
            self.p += 1;
            self.sink
                .object(0)
                .map_err(|e| Step::Other(Error::sink(e)))?;
            return Ok(self.completed());
        }
        self.nest()?;
        self.frames.push(Frame {
            kind: Kind::Object,
            start: self.values,
            open: start,
        });
        Ok(Some(Phase::ObjectKey))
    }

    #[inline(always)]
    fn entries(&self) -> usize {
        self.values - self.frames.last().map_or(0, |f| f.start)
    }

    #[inline(always)]
    fn array_comma(&mut self) -> Result<Option<Phase>, Step<S::Error>> {
        // A comma most often follows its value at once (as in `object_comma`).
        if self.peek() == Some(b',') {
            self.p += 1;
            return Ok(Some(Phase::Value));
        }
        self.skip_ws()?;
        match self.peek() {
            Some(b',') => {
                self.p += 1;
                Ok(Some(Phase::Value))
            }
            Some(b']') => {
                self.p += 1;
                let frame = self.frames.pop().expect("an array frame");
                let len = self.values - frame.start;
                self.nesting -= 1;
                self.sink
                    .array(len)
                    .map_err(|e| Step::Other(Error::sink(e)))?;
                self.values = frame.start;
                Ok(self.completed())
            }
            _ => Err(Step::Syntax((Message::ArrayComma, self.p))),
        }
    }

    #[inline(always)]
    fn object_key(&mut self) -> Result<Option<Phase>, Step<S::Error>> {
        self.skip_ws()?;
        match self.peek() {
            Some(b'"') => {
                self.string(true)?;
                self.values += 1;
                Ok(Some(Phase::ObjectColon))
            }
            Some(b'}') if self.options.allow_trailing_comma => self.object_comma(),
            _ => {
                let message = if self.entries() == 0 {
                    Message::FirstObjectKey
                } else {
                    Message::ObjectKey
                };
                Err(Step::Syntax((message, self.p)))
            }
        }
    }

    #[inline(always)]
    fn object_colon(&mut self) -> Result<Option<Phase>, Step<S::Error>> {
        // A colon most often follows its key at once.
        if self.peek() == Some(b':') {
            self.p += 1;
            return Ok(Some(Phase::Value));
        }
        self.skip_ws()?;
        if self.peek() == Some(b':') {
            self.p += 1;
            return Ok(Some(Phase::Value));
        }
        let message = if self.entries() == 1 {
            Message::FirstColon
        } else {
            Message::Colon
        };
        Err(Step::Syntax((message, self.p)))
    }

    #[inline(always)]
    fn object_comma(&mut self) -> Result<Option<Phase>, Step<S::Error>> {
        if self.peek() == Some(b',') {
            self.p += 1;
            return Ok(Some(Phase::ObjectKey));
        }
        self.skip_ws()?;
        match self.peek() {
            Some(b',') => {
                self.p += 1;
                Ok(Some(Phase::ObjectKey))
            }
            Some(b'}') => {
                self.p += 1;
                let (start, open) = {
                    let frame = self.frames.last().expect("an object frame");
                    (frame.start, frame.open)
                };
                let pairs = (self.values - start) / 2;
                self.nesting -= 1;
                let duplicate = self
                    .sink
                    .object(pairs)
                    .map_err(|e| Step::Other(Error::sink(e)))?;
                if let Some(i) = duplicate {
                    return Err(Step::Other(self.duplicate(start + 2 * i, open)));
                }
                self.frames.pop();
                self.values = start;
                Ok(self.completed())
            }
            _ => Err(Step::Syntax((Message::ObjectComma, self.p))),
        }
    }

    /// A duplicate key error: reported at the object's `{`, its path ending in the key.
    #[cold]
    fn duplicate(&self, key: usize, open: usize) -> Error<S::Error> {
        let mut path = self.path(Phase::ObjectComma);
        path.pop();
        path.push(Segment::Key(key));
        Error {
            kind: ErrorKind::DuplicateKey(key),
            at: open,
            path,
        }
    }
}

/// How a step of the walk failed.
enum Step<E> {
    /// A syntax error, whose path the walk adds.
    Syntax(Fail),
    /// Anything else, complete.
    Other(Error<E>),
}

impl<E> From<Fail> for Step<E> {
    fn from(fail: Fail) -> Self {
        Step::Syntax(fail)
    }
}
