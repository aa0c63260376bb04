# frozen_string_literal: true

require "json"
require_relative "../../spec/json/json_helper"

module Fuzz
  # JSON::Parser.new(doc, **opts).parse on damaged JSONTestSuite cases and windows of the
  # benchmark documents (generated documents without a corpus), in UTF-8 and binary.
  class JsonParse < Target
    TOKENS = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\ud800", "\\udc00", "/*", "*/", "//", "\n",
              "-", "0", "1e", "E+", ".", "NaN", "Infinity", "-Infinity", "true", "nul", "\xff", "\xc3",
              "\u00e9", "\u2028", " ", "\t", "\0", "1" * 30, "9" * 400, "1e400", "-0", "-0.0", "0x1",
              # Exponents at the edges of json 3's arithmetic (i32 and i64 limits, 20 digits).
              "e2147483647", "e-2147483648", "e9223372036854775807", "e-9223372036854775807",
              "e#{'0' * 20}1", "0.0", "0.#{'0' * 20}1"].freeze
    OPTIONS = [{}, { allow_nan: true }, { symbolize_names: true }, { freeze: true }, { max_nesting: 3 },
               { max_nesting: false }, { create_additions: true }, { allow_nan: true, max_nesting: 0 }].freeze
    # json 3's options instead of create_additions, which it no longer has.
    OPTIONS_V3 = (OPTIONS - [{ create_additions: true }] +
                  [{ allow_comments: true }, { allow_trailing_comma: true, allow_comments: true },
                   { allow_control_characters: true, allow_invalid_escape: true }, { allow_duplicate_key: true },
                   { symbolize_names: true, allow_duplicate_key: false }, { decimal_class: Rational }]).freeze

    def skip_reason
      JSONParity.proven? ? nil : JSONParity.unproven_message
    end

    def next_case
      doc = Mutation.mutate(Mutation.window(documents.sample(random: @rng), @rng, 2000), @rng, TOKENS)
      doc.force_encoding(Encoding::UTF_8) unless @rng.rand(4).zero?
      [doc, (JSONParity.v3? ? OPTIONS_V3 : OPTIONS).sample(random: @rng)]
    end

    def outcome(side, (doc, opts))
      parser = side == :stdlib ? JSONParity::STDLIB : JSONParity::OURS
      # A copy with bytes of its own: json 2.6.1 quotes from the byte before a document
      # that starts with Infinity (docs/compatibility.md, JSON), which a shared buffer would make visible.
      source = (+"").force_encoding(doc.encoding) << doc
      JSONParity.with_warnings_captured { JSONParity.observe { parser.new(source, **opts).parse } }
    end

    private

    def documents
      @documents ||= corpus_documents || Array.new(50) { JSON.generate(random_value(0)) }
    end

    def corpus_documents
      return nil unless @corpus_dir

      dir = File.join(@corpus_dir, "json")
      docs = Dir[File.join(dir, "JSONTestSuite", "**", "*.json")].sort.map { |f| File.binread(f) }
      docs += Dir[File.join(dir, "bench", "*.json")].sort.map { |f| File.binread(f) }
      docs.empty? ? nil : docs
    end

    def random_value(depth)
      case depth > 4 ? @rng.rand(4) : @rng.rand(6)
      when 0 then [nil, true, false, -0.0, 1e300, 2**70].sample(random: @rng)
      when 1 then @rng.rand(-1e6..1e6).round(@rng.rand(0..6))
      when 2 then ["", "x", "\u00e9t\u00e9", "\u{1f600}", "\"\\/\n"].sample(random: @rng) * @rng.rand(1..3)
      when 3 then @rng.rand(-2**40..2**40)
      when 4 then Array.new(@rng.rand(0..4)) { random_value(depth + 1) }
      else Array.new(@rng.rand(0..4)) { |i| ["k#{i}", random_value(depth + 1)] }.to_h
      end
    end
  end

  TARGETS["json_parse"] = JsonParse
end
