# frozen_string_literal: true

require "json"
require "stringio"

# Helpers for the JSON parity specs: run the same parse through json's C parser and
# through ours, and compare everything a caller could observe.
module JSONParity
  STDLIB = RustyStdlib::JSON.stdlib_parser
  OURS = RustyStdlib::JSON.parser

  # Whether the shim proves parity on this json version; elsewhere (e.g. Ruby 3.3's
  # json 2.9.1, whose messages and quirks differ) the parity specs are skipped and
  # shim_spec.rb checks that the gem's parser stays in place.
  def self.proven?
    RustyStdlib::JSON.unsupported_reason.nil?
  end

  def self.unproven_message
    "#{RustyStdlib::JSON.unsupported_reason}: ours stays uninstalled (see shim_spec.rb)"
  end

  # Whether ours is the installed parser (false on a json the shim does not prove, e.g.
  # Ruby 3.3's json 2.9.1; the specs then still compare the two classes directly).
  def self.installed?
    RustyStdlib.installed.include?(:json)
  end

  # A structure that compares with == only when classes, values (-0.0 and NaN
  # included), string bytes, encodings and frozenness all agree, at every depth.
  def self.shape(value)
    case value
    when Hash then [:Hash, value.class, value.frozen?, value.map { |k, v| [shape(k), shape(v)] }]
    when Array then [:Array, value.class, value.frozen?, value.map { |v| shape(v) }]
    when String then [:String, value.class, value.b, value.encoding.name, value.frozen?]
    when Float then [:Float, value.nan? ? "NaN" : [value].pack("G"), value.frozen?]
    else [value.class, value, value.frozen?]
    end
  end

  # What running a block observably did. Compared with ==, it compares the value's
  # shape, or the exception's class, message bytes and message encoding. The shape is
  # computed only when compared, so that under GC.stress only the parse itself runs
  # with a GC per allocation.
  class Observed
    def initialize(raw)
      @raw = raw
    end

    # Warnings printed while the block ran (Ruby's "Float 1e400 out of range" under -w).
    attr_accessor :warnings

    def digest
      @digest ||= (@raw.first == :ok ? [:ok, JSONParity.shape(@raw.last)] : @raw) + [@warnings]
    end

    def ==(other)
      other.is_a?(Observed) && digest == other.digest
    end

    def frozen?
      false
    end

    def inspect
      digest.inspect
    end
  end

  # SystemStackError counts: the gem's parser recurses and raises it on very deep
  # documents.
  def self.observe
    Observed.new([:ok, yield])
  rescue StandardError, SystemStackError => e
    Observed.new([:raised, e.class, e.message.b, e.message.encoding.name] + position(e))
  end

  # json 3's ParserError#line, #column and #json_path (what building the path raises,
  # if it does: json 3.1.0's own code cannot build one that holds a Symbol key).
  def self.position(error)
    return [] unless error.is_a?(::JSON::ParserError) && error.respond_to?(:json_path)

    path = begin
      error.json_path
    rescue StandardError => e
      [e.class, e.message]
    end
    [error.line, error.column, path, error.instance_variables]
  end

  # Whether the loaded json is 3.x (keyword options, errors with positions).
  def self.v3?
    ::JSON::VERSION.split(".").first.to_i >= 3
  end

  # Skips an example about json 2's API (create_additions, JSON.create_id, ...), which
  # json 3 removed.
  def skip_on_json3(what)
    skip "json #{::JSON::VERSION} has no #{what}" if JSONParity.v3?
  end

  # Runs `block` with JSON.parser set to `parser`, restoring it afterwards.
  def self.with_parser(parser)
    saved = JSON.parser
    quietly { JSON.parser = parser } unless saved.equal?(parser)
    yield
  ensure
    quietly { JSON.parser = saved } unless saved.equal?(JSON.parser)
  end

  def self.quietly
    verbose = $VERBOSE
    $VERBOSE = nil
    yield
  ensure
    $VERBOSE = verbose
  end

  # Asserts the same observation for `JSON::Parser.new(source, **opts).parse` with both
  # parsers (`via` picks the entry point: :new, :parse, :parse!, :load).
  def expect_json_parity(source, via: :new, **opts)
    # The corpus's deepest documents overflow the gem's recursive parser. Shallow ones
    # cannot, and are not worth a child process each.
    deep = source.is_a?(String) && source.b.count("[{") > 1_000
    expect_parity(STDLIB, OURS) do |parser|
      JSONParity.with_warnings_captured do
        JSONParity.observe do
          Parity.overflowing_stdlib(parser.equal?(STDLIB), isolate: deep) do
            JSONParity.call(parser, source.dup, via, opts)
          end
        end
      end
    end
  end

  # Runs the block (which returns an Observed) with $stderr captured into its warnings.
  def self.with_warnings_captured
    saved = $stderr
    $stderr = StringIO.new
    observed = yield
    observed.warnings = same_frame($stderr.string)
    observed
  ensure
    $stderr = saved
  end

  # Runs the block with $VERBOSE true and $stderr set to `io`, both put back after.
  def self.verbosely_to(io)
    verbose = $VERBOSE
    err = $stderr
    $stderr = io
    $VERBOSE = true
    yield
  ensure
    $VERBOSE = verbose
    $stderr = err
  end

  # A warning raised by Ruby code that the parse calls (decimal_class's) names the
  # innermost Ruby frame: with json 3, each Parser#parse is Ruby, in the gem's
  # json/ext.rb and in our parser_v3.rb. That one frame is the same for both here.
  def self.same_frame(warnings)
    warnings.gsub(%r{^\S*(?:/json/ext\.rb|/rusty_stdlib/json/parser_v3\.rb):\d+: }, "Parser#parse: ")
  end

  def self.call(parser, source, via, opts)
    # Options as keywords (json 3 takes no other; json 2 reads them as its opts Hash).
    case via
    when :new then parser.new(source, **opts).parse
    when :parse then with_parser(parser) { JSON.parse(source, **opts) }
    # Ours parses JSON.parse(source) without a Parser object (lib/rusty_stdlib/json.rb).
    when :parse_plain then with_parser(parser) { JSON.parse(source) }
    when :parse! then with_parser(parser) { JSON.parse!(source, **opts) }
    when :load then with_parser(parser) { JSON.load(source, nil, **opts) }
    when :brackets then with_parser(parser) { JSON[source, opts] }
    # json 3's ParserConfig, which JSON::Coder and JSON::Parser.new hold.
    when :config then parser::Config.new(opts).parse(source)
    else raise ArgumentError, via.to_s
    end
  end
end
