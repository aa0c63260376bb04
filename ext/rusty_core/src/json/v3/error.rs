//! What json 3.x's parser raises, before the binding turns it into a Ruby exception.

/// The fixed text of a syntax error; [`Message::format`] holds `%s` where the excerpt
/// of the source at the error goes ([`super::position::snippet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    UnexpectedToken,
    UnexpectedCharacter,
    UnexpectedNull,
    InvalidNumber,
    UnexpectedEnd,
    UnterminatedString,
    UnterminatedBlockComment,
    FirstObjectKey,
    ObjectKey,
    FirstColon,
    Colon,
    ArrayComma,
    ObjectComma,
    EndOfStream,
    IncompleteUnicode,
    InvalidSurrogate,
    IncompleteSurrogate,
    UnpairedTrailingSurrogate,
    UnescapedNewline,
    UnescapedNull,
    ControlCharacter,
    InvalidEscape,
}

impl Message {
    /// The gem's format string (a `%s` at most once).
    pub fn format(self) -> &'static str {
        match self {
            Message::UnexpectedToken => "unexpected token %s",
            Message::UnexpectedCharacter => "unexpected character: %s",
            Message::UnexpectedNull => "unexpected NULL byte: %s",
            Message::InvalidNumber => "invalid number: %s",
            Message::UnexpectedEnd => "unexpected end of input",
            Message::UnterminatedString => "unexpected end of input, expected closing \"",
            Message::UnterminatedBlockComment => "unterminated comment, expected closing '*/'",
            Message::FirstObjectKey => "expected object key, got %s",
            Message::ObjectKey => "expected object key, got: %s",
            Message::FirstColon => "expected ':' after object key",
            Message::Colon => "expected ':' after object key, got: %s",
            Message::ArrayComma => "expected ',' or ']' after array value",
            Message::ObjectComma => "expected ',' or '}' after object value, got: %s",
            Message::EndOfStream => "unexpected token at end of stream %s",
            Message::IncompleteUnicode => "incomplete unicode character escape sequence at %s",
            Message::InvalidSurrogate => "invalid surrogate pair at %s",
            Message::IncompleteSurrogate => "incomplete surrogate pair at %s",
            Message::UnpairedTrailingSurrogate => "unpaired trailing surrogate at %s",
            Message::UnescapedNewline => "Invalid unescaped newline character (\\n) in string: %s",
            Message::UnescapedNull => "Invalid unescaped NULL character (\\0) in string: %s",
            Message::ControlCharacter => "invalid ASCII control character in string: %s",
            Message::InvalidEscape => "invalid escape character in string: %s",
        }
    }
}

/// One step of the path to the value an error happened in (`ParserError#json_path`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// An array element's index.
    Index(usize),
    /// An object member: the key is the sink's value at this position of its stack (the
    /// gem's path holds the key object as parsed: a String, or a Symbol).
    Key(usize),
}

#[derive(Debug, PartialEq, Eq)]
pub enum ErrorKind<E> {
    /// A `JSON::ParserError` with this message.
    Syntax(Message),
    /// `duplicate key <key.inspect>`: the key is the sink's value at this stack position.
    DuplicateKey(usize),
    /// `JSON::NestingError`: "nesting of <depth> is too deep" (no position, no path).
    Nesting(i64),
    /// The sink failed.
    Sink(E),
}

/// A rejected document: what, where (the byte offset the gem's cursor was at, which the
/// message's excerpt, line and column describe) and in which value ([`Segment`]s, outermost
/// first; empty for the document itself).
#[derive(Debug, PartialEq, Eq)]
pub struct Error<E> {
    pub kind: ErrorKind<E>,
    pub at: usize,
    pub path: Vec<Segment>,
}

impl<E> Error<E> {
    pub(super) fn sink(e: E) -> Self {
        Error {
            kind: ErrorKind::Sink(e),
            at: 0,
            path: Vec::new(),
        }
    }
}
