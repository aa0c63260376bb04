# frozen_string_literal: true

require_relative "json_helper"

# Seeded random documents (each example has its own fixed seed, so runs are repeatable
# whatever RSpec's order seed is), then the same documents broken in random ways:
# ours must match the gem's value or its error message byte for byte.
RSpec.describe "RustyStdlib::JSON::Parser on random documents" do
  include JSONParity

  before { skip JSONParity.unproven_message unless JSONParity.proven? }

  # Far fewer documents under GC.stress, where every allocation runs a full GC.
  SCALE = Parity::GC_STRESS ? 0.01 : 1.0

  def self.count(n)
    [(n * SCALE).round, 1].max
  end

  # Writes JSON text directly (not with JSON.generate) to reach the grammar's corners.
  class Writer
    CHARS = ["a", "Z", " ", "é", "ü", "€", "中", "😀", "\u007f", "'", "/", "*"].freeze
    ESCAPES = ["\\n", "\\t", "\\r", "\\b", "\\f", "\\\"", "\\\\", "\\/", "\\u0000", "\\u001f",
               "\\u00e9", "\\u20ac", "\\uFFFF", "\\ud83d\\ude00", "\\uD834\\uDD1E", "\\udc00",
               "\\ud800\\u0041", "\\ud800\\ud800", "\\x", "\\'", "\\q", "\\\u00e9"].freeze
    LITERALS = %w[null true false NaN Infinity -Infinity].freeze

    def initialize(rng, comments: true)
      @rng = rng
      @comments = comments
    end

    def document(max_depth)
      ws + value(0, max_depth) + ws
    end

    def value(depth, max_depth)
      kinds = depth >= max_depth ? 6 : 9
      case @rng.rand(kinds)
      when 0, 1 then number
      when 2, 3 then string
      when 4 then LITERALS[@rng.rand(@rng.rand(4).zero? ? 6 : 3)]
      when 5 then string(escapes: 0)
      when 6, 7 then array(depth, max_depth)
      else object(depth, max_depth)
      end
    end

    def array(depth, max_depth)
      items = Array.new(@rng.rand(5)) { ws + value(depth + 1, max_depth) + ws }
      "[#{ws}#{items.join(',')}#{ws}]"
    end

    def object(depth, max_depth)
      pairs = Array.new(@rng.rand(5)) do
        key = @rng.rand(3).zero? ? %w["a" "b" "a" ""].sample(random: @rng) : string
        "#{ws}#{key}#{ws}:#{ws}#{value(depth + 1, max_depth)}#{ws}"
      end
      "{#{ws}#{pairs.join(',')}#{ws}}"
    end

    def ws
      return "" if @rng.rand(3).positive?

      parts = Array.new(@rng.rand(1..3)) do
        case @rng.rand(@comments ? 6 : 4)
        when 0 then " "
        when 1 then "\n"
        when 2 then "\t"
        when 3 then "\r\n"
        when 4 then "/* c#{'*' * @rng.rand(3)} */"
        else "// c\n"
        end
      end
      parts.join
    end

    def string(escapes: 3)
      body = Array.new(@rng.rand(12)) do
        if @rng.rand(4) < escapes && @rng.rand(2).zero?
          ESCAPES.sample(random: @rng)
        else
          CHARS.sample(random: @rng)
        end
      end.join
      body += "\xff".b.force_encoding(Encoding::UTF_8) if @rng.rand(30).zero?
      "\"#{body}\""
    end

    def number
      sign = @rng.rand(3).zero? ? "-" : ""
      int = @rng.rand(5).zero? ? "0" : (@rng.rand(1..9).to_s + digits(@rng.rand(0..24)))
      case @rng.rand(6)
      when 0, 1 then "#{sign}#{int}"
      when 2 then "#{sign}#{int}.#{digits(@rng.rand(1..20))}"
      when 3 then "#{sign}#{int}#{%w[e E].sample(random: @rng)}#{['', '+', '-'].sample(random: @rng)}#{@rng.rand(0..400)}"
      else "#{sign}#{int}.#{digits(@rng.rand(1..18))}e#{@rng.rand(-330..310)}"
      end
    end

    def digits(count)
      Array.new(count) { @rng.rand(10) }.join
    end
  end

  NOISE = ["[", "]", "{", "}", ",", ":", "\"", "\\", "/", "*", "-", "+", ".", "e", "0", "9",
           "a", "n", "N", "I", " ", "\n", "\u0000", "\xff".b, "\u00e9", "\t", "u"].freeze

  def mutate(doc, rng)
    bytes = doc.b
    rng.rand(1..3).times do
      break if bytes.empty?

      pos = rng.rand(bytes.bytesize + 1)
      case rng.rand(5)
      when 0 then bytes = bytes.byteslice(0, pos) + bytes.byteslice(pos + 1..).to_s
      when 1 then bytes = bytes.byteslice(0, pos) + NOISE.sample(random: rng).b + bytes.byteslice(pos..).to_s
      when 2 then bytes = bytes.byteslice(0, pos)
      when 3
        len = rng.rand(1..8)
        bytes = bytes.byteslice(0, pos) + bytes.byteslice(pos, len).to_s * 2 + bytes.byteslice(pos + len..).to_s
      else
        other = pos.zero? ? 0 : rng.rand(pos)
        bytes = bytes.byteslice(0, other) + bytes.byteslice(pos..).to_s
      end
    end
    bytes.force_encoding(Encoding::UTF_8)
  end

  it "parses random valid-ish documents like the gem" do
    rng = Random.new(20_261_129)
    writer = Writer.new(rng)
    self.class.count(600).times do
      doc = writer.document(rng.rand(1..6))
      expect_json_parity(doc)
      expect_json_parity(doc, allow_nan: true, symbolize_names: rng.rand(2).zero?)
    end
  end

  it "rejects randomly broken documents with the gem's messages" do
    rng = Random.new(4242)
    writer = Writer.new(rng)
    self.class.count(2500).times do
      doc = mutate(writer.document(rng.rand(1..5)), rng)
      expect_json_parity(doc)
      expect_json_parity(doc, allow_nan: true)
    end
  end

  it "handles random deep nesting around max_nesting like the gem" do
    rng = Random.new(77)
    self.class.count(200).times do
      depth = rng.rand(90..110)
      opens = Array.new(depth) { rng.rand(2).zero? ? "[" : "{\"k\":" }
      inner = rng.rand(2).zero? ? "1" : "\"x\""
      closes = opens.reverse.map { |o| o == "[" ? "]" : "}" }
      doc = opens.join + inner + closes.join
      doc = mutate(doc, rng) if rng.rand(3).zero?
      expect_json_parity(doc)
      expect_json_parity(doc, max_nesting: rng.rand(95..105))
    end
  end

  it "converts random number literals exactly as Ruby does" do
    rng = Random.new(1_000_003)
    writer = Writer.new(rng)
    numbers = Array.new(self.class.count(6000)) { writer.number }
    numbers += %w[0.1e1 1.7976931348623158e308 1.7976931348623159e308 2.2250738585072014e-308
                  2.2250738585072012e-308 4.9406564584124654e-324 2.4703282292062328e-324
                  123456789012345678.5 0.000000000000000000000000000000000001
                  9007199254740992.0 9007199254740993 18446744073709551616 -9223372036854775809]
    expect_json_parity("[#{numbers.join(',')}]")
  end

  # Up to 17 mantissa digits is where ours converts without Ruby's strtod (canada.json's
  # 15-17 digit coordinates, doubles printed to 17 digits and nudged by one unit).
  it "converts random floats of up to 17 digits exactly as Ruby's strtod" do
    rng = Random.new(1_000_033)
    floats = Array.new(self.class.count(3000)) do
      digits = rng.rand(1..9).to_s + Array.new(rng.rand(0..16)) { rng.rand(10) }.join
      point = rng.rand(1..digits.size)
      text = "#{digits[0, point]}.#{digits[point..].then { |f| f.empty? ? '0' : f }}"
      text = "-#{text}" if rng.rand(2).zero?
      rng.rand(3).zero? ? "#{text}e#{rng.rand(-330..310)}" : text
    end
    floats += Array.new(self.class.count(3000)) do
      double = [rng.bytes(8)].pack("a*").unpack1("D")
      text = format("%.16e", double)
      text = text.sub(/(\d)e/) { "#{(Regexp.last_match(1).to_i + rng.rand(-1..1)).clamp(0, 9)}e" }
      double.finite? ? text : "1.5"
    end
    doc = "[#{floats.join(',')}]"
    # A valid document, not an error (its out-of-range warnings are the parity check's).
    size = begin
      saved, $stderr = $stderr, StringIO.new
      JSONParity::STDLIB.new(doc).parse.size
    ensure
      $stderr = saved
    end
    expect(size).to eq(floats.size)
    expect_json_parity(doc)
  end
end
