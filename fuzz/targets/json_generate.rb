# frozen_string_literal: true

require "json"
require_relative "../../spec/json/generator_helper"

module Fuzz
  # JSON.generate / pretty_generate / #to_json of random values (odd encodings, invalid
  # bytes, every kind of Float, big Integers, Symbols, nesting) with random options. The
  # generators are switched once per batch, through the gem's own seam.
  class JsonGenerate < Target
    STRINGS = ["", "a", "\u00e9", "\u2028", "\"", "\\", "/", "\n", "\u0000", "\u001f", "\x7f", "\xff",
               "\xed\xa0\x80", "\u6771\u4eac", "\u{1f600}", "\xc3", "abc" * 20].freeze
    ENCODINGS = [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII, Encoding::ISO_8859_1,
                 Encoding::UTF_16LE, Encoding::Shift_JIS].freeze
    OPTIONS = [nil, {}, { allow_nan: true }, { ascii_only: true }, { escape_slash: true },
               { indent: "  ", space: " ", object_nl: "\n", array_nl: "\n" }, { max_nesting: 3 },
               { ascii_only: true, allow_nan: true, indent: "\t" }].freeze
    # json 3's: script_safe for escape_slash, and its own options.
    OPTIONS_V3 = (OPTIONS.map { |o| o && JSONGenParity.for_this_json(o) } +
                  [{ strict: true }, { strict: true, as_json: ->(o, k) { k ? o.to_s : [o.class.name] } },
                   { sort_keys: true }, { allow_duplicate_key: true }, { script_safe: true, ascii_only: true },
                   { depth: 2, indent: " ", array_nl: "\n" }]).freeze

    def skip_reason
      JSONGenParity.proven? ? nil : JSONGenParity.unproven_message
    end

    def next_case
      options = JSONParity.v3? ? OPTIONS_V3 : OPTIONS
      [value(0), options.sample(random: @rng), %i[generate pretty_generate to_json].sample(random: @rng)]
    end

    def outcomes(cases)
      [JSONGenParity::STDLIB, JSONGenParity::OURS].map do |generator|
        JSONGenParity.with_generator(generator) do
          cases.map { |kase| Parity.with_warnings { Parity.outcome { generate(*kase) } } }
        end
      end
    end

    private

    def generate(obj, opts, how)
      case how
      when :generate then opts ? JSON.generate(obj, opts) : JSON.generate(obj)
      # Option-less, ours writes it without json's Ruby (json 2.x; generator/plain_pretty.rs).
      when :pretty_generate then opts ? JSON.pretty_generate(obj, opts) : JSON.pretty_generate(obj)
      else obj.to_json(opts && JSON::State.new(opts))
      end
    end

    def value(depth)
      # Other objects (to_s, #to_json, strict mode's as_json, Fragments) on json 3 only.
      case @rng.rand(depth > 4 ? 5 : (JSONParity.v3? ? 8 : 7))
      when 0 then [nil, true, false].sample(random: @rng)
      when 1 then [@rng.rand(-2**70..2**70), @rng.rand(-100..100), 2**62, -2**62 - 1, 2**64].sample(random: @rng)
      when 2 then float
      when 3 then string
      when 4 then symbol
      when 5 then Array.new(@rng.rand(0..5)) { value(depth + 1) }
      when 6 then Array.new(@rng.rand(0..5)) { [[string, symbol, @rng.rand(10)].sample(random: @rng), value(depth + 1)] }.to_h
      else [Object.new.tap { |o| o.instance_variable_set(:@v, 1) }, 1r, (1..2), JSON::Fragment.new("[1]")].sample(random: @rng)
      end
    end

    def float
      case @rng.rand(4)
      when 0 then @rng.bytes(8).unpack1("D")
      when 1 then @rng.rand * 10**@rng.rand(-30..30)
      when 2 then [0.1, 1e15, 1e16, 1e-5, 1e-4, 123_456_789.123456789, -0.0, 5e-324, Float::MAX].sample(random: @rng)
      else @rng.rand(-1_000_000..1_000_000) / 10.0**@rng.rand(0..8)
      end
    end

    def string
      s = Array.new(@rng.rand(0..4)) { STRINGS.sample(random: @rng) }.join.b
      s.force_encoding(@rng.rand(3).zero? ? ENCODINGS.sample(random: @rng) : Encoding::UTF_8)
    end

    def symbol
      string.to_sym
    rescue EncodingError
      :symbol
    end
  end

  TARGETS["json_generate"] = JsonGenerate
end
