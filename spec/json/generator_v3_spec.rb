# frozen_string_literal: true

require_relative "generator_helper"

# json 3's generator: its options and State API, strict mode with as_json, Fragments,
# sort_keys, colliding String and Symbol keys, RFC 8785 (the gem's), floats in json 3's
# own text, and what a #to_json sees of the State. Each compared with the gem (json 3.1.0
# in the json3.1 leg); generator_spec.rb's shared examples run there too.
RSpec.describe "RustyStdlib::JSON::V3 (json 3's generator)" do
  include Parity
  include JSONGenParity

  before do
    skip "json #{JSON::VERSION} is not json 3" unless JSONParity.v3?
    skip JSONGenParity.unproven_message unless JSONGenParity.proven?
  end

  # Class names in messages and results: ours where the gem names its own State class.
  def normalized(value)
    case value
    when String
      value.gsub("RustyStdlib::JSON::V3::State", "JSON::Ext::Generator::State").gsub(/0x\h+/, "0x_")
    when Array then value.map { |v| normalized(v) }
    when Module then normalized(value.name.to_s)
    else value
    end
  end

  def expect_v3_gen_parity(&block)
    expect_gen_parity do |g|
      block.call(g)
    rescue StandardError => e
      [e.class, normalized(e.message), e.message.encoding, e.respond_to?(:invalid_object) ? normalized(e.invalid_object.inspect) : nil,
       e.cause&.class]
    end
  end

  def gen(value, **opts)
    expect_v3_gen_parity { JSON.generate(value, **opts) }
    expect_v3_gen_parity { JSON::State.new(**opts).generate(value) }
  end

  describe "floats" do
    it "writes json 3's text for every kind of double" do
      gen([1e20, 1e-5, 2.5e-7, 1e16, 1.0, 0.1, -0.0, 0.0, 123456789.123, 1e15, 1e14, 1e-7, 1e-10, 5e-324,
           1.7976931348623157e308, 100.0, 1.5e300, -1.5e-300, 12345678901234567.0, 0.1 + 0.2, 1e-6, 1.5e-6,
           9.999999999999999e14, 2.2250738585072014e-308, 4.35, 5e-5, 123456.789e-10])
      [Float::NAN, Float::INFINITY, -Float::INFINITY].each do |f|
        gen([f])
        gen([f], allow_nan: true)
        gen([f], strict: true, as_json: ->(o, _k) { o.to_s })
        gen([f], strict: true, as_json: ->(o, _k) { o })
      end
    end

    # Ours finds fpconv's digits its own way (rusty_core json/v3/fpconv.rs): any double
    # whose digits or layout came out otherwise would show here.
    it "writes json 3's text for seeded random doubles" do
      rng = Random.new(20_261_206)
      doubles = Array.new(4000) { rng.bytes(8).unpack1("E") }.select(&:finite?)
      decimals = Array.new(4000) { rng.rand(10**rng.rand(1..17)) / (10.0**rng.rand(0..20)) }
      gen(doubles + decimals + decimals.map(&:-@) + decimals.map { |d| d * 1e-300 })
    end
  end

  describe "options" do
    it "refuses unknown options and bad values like the gem" do
      key = Object.new
      def key.to_s = "custom"
      [{ foo: 1 }, { foo: 1, bar: 2 }, { "indent" => "x" }, { key => 1 }, { escape_slash: true },
       { depth: -1 }, { depth: 2**40 }, { depth: 1.5 }, { max_nesting: "x" }, { max_nesting: 2**70 },
       { buffer_initial_length: "x" }, { buffer_initial_length: nil }, { indent: 1 }, { as_json: 1 },
       { as_json: nil }, { sort_keys: 1 }, { sort_keys: :x }, { indent: "x", foo: 1 }, { foo: 1, indent: 2 }].each do |opts|
        gen([1], **opts)
        expect_v3_gen_parity { JSON.dump([1], opts) }
      end
    end

    it "writes script_safe and ascii_only like the gem" do
      text = "a/b\u2028c\u2029d\u00e9\u{1f600}</script>\u007f\u0001\"\\"
      [{ script_safe: true }, { ascii_only: true }, { script_safe: true, ascii_only: true }].each do |opts|
        gen([text, { text => text }], **opts)
      end
    end

    it "sorts keys like the gem" do
      hash = { "b" => 1, "a" => { "d" => 2, "c" => [3] } }
      gen(hash, sort_keys: true)
      gen(hash, sort_keys: ->(h) { h.to_a.reverse.to_h })
      gen(hash, sort_keys: ->(_h) { 1 })
      gen({ b: 1, "a" => 2 }, sort_keys: true)
      gen({ 1 => 1, "a" => 2 }, sort_keys: true)
      gen(hash, sort_keys: false, indent: "  ", object_nl: "\n")
    end

    it "writes Hashes whose String and Symbol keys collide like the gem" do
      [{ a: 1, "a" => 2 }, { a: 1, "b" => 2 }, { "a" => 1, a: 2, b: 3, "b" => 4 }, { 1 => 1, "1" => 2 },
       { nil => 1, "" => 2 }, { a: { "x" => 1, x: 2 } }].each do |hash|
        [{}, { allow_duplicate_key: true }, { allow_duplicate_key: false }, { allow_duplicate_key: nil }].each do |opts|
          gen(hash, **opts)
        end
      end
    end

    it "hands RFC 8785 to the gem, with its checks" do
      doc = { "b" => 1, "a" => [1.5, "x", 1e21, 0.1, -0.0, 1e-7, 2**60], "é" => { "\u{1f600}" => nil } }
      gen(doc, rfc8785: true)
      gen(doc, rfc8785: true, strict: true, sort_keys: true)
      %i[indent space space_before object_nl array_nl].each { |k| gen([1], rfc8785: true, k => " ") }
      %i[ascii_only script_safe allow_nan].each { |k| gen([1], rfc8785: true, k => true) }
      gen([[[1]]], rfc8785: true, max_nesting: 2)
      expect_v3_gen_parity { s = JSON::State.new(rfc8785: true); s.indent = "x"; s.generate([1]) }
      expect_v3_gen_parity { s = JSON::State.new; s.rfc8785 = true; [s.rfc8785?, s.to_h, s.generate(doc)] }
      expect_v3_gen_parity { JSON.dump(doc, rfc8785: true) }
    end
  end

  describe "strict mode" do
    it "calls as_json like the gem, for values and keys" do
      obj = Object.new
      def obj.to_s = "obj"
      [->(o, k) { [o.to_s, k] }, ->(o, _k) { o.to_s }, ->(_o, _k) { Object.new }, ->(o) { o.to_s },
       ->(o, k) { k ? 1 : o.to_s }, proc { |o| o.to_s }].each do |as_json|
        gen([obj, 1r, :sym, Object], strict: true, as_json: as_json)
        gen({ obj => 1, 1 => 2, "k" => obj }, strict: true, as_json: as_json)
        gen(["\xff", { "\xff" => 1 }], strict: true, as_json: as_json)
      end
      gen([obj], strict: true)
      gen({ obj => 1 }, strict: true)
      gen([:sym, :"é"], strict: true)
      # What as_json gives for an invalid String (or a Symbol's) is written as any value
      # (found by fuzz/: ours once wrote it as a String, and crashed on an Array).
      binary = "\xE2\x80\xA8".dup.force_encoding("BINARY").to_sym
      sub_string = Class.new(String)
      [->(_o, _k) { [1] }, ->(_o, _k) { Object.new }, ->(_o, _k) { sub_string.new("s") }, ->(_o, _k) { 1.5 },
       ->(_o, _k) { "\xfe".b }, ->(o, _k) { o }].each do |as_json|
        gen([binary, "\xff", { binary => 1 }], strict: true, as_json: as_json)
        gen({ "\xff" => 1 }, strict: true, as_json: as_json)
      end
      gen(["\xff"], strict: true, as_json: ->(_o, _k) { "fixed" })
      gen(["\xff"], strict: true, as_json: ->(_o, _k) { "\xfe" })
      gen({ "\xff" => 1 }, strict: true, as_json: ->(_o, _k) { 1 })
    end

    it "writes a key afresh when other options would write it differently" do
      # One interned key object, written first without strict mode (converted from
      # UTF-16LE or binary), then with it: as_json must see it each time (fuzz/ found
      # ours reusing the first written form).
      as_json = ->(o, k) { k ? o.to_s : [o.class.name] }
      ["".encode("UTF-16LE"), "\xff".b, "é".encode("ISO-8859-1"), "\xff"].each do |text|
        hash = { text.dup.freeze => 1, "b" => 2 }
        gen(hash)
        gen(hash, strict: true, as_json: as_json)
        gen(hash, strict: true, as_json: ->(o, _k) { o.b.to_s.force_encoding("UTF-8").scrub })
        gen(hash)
      end
    end

    it "writes JSON::Coder's output like the gem" do
      obj = Object.new
      def obj.to_s = "obj"
      expect_v3_gen_parity { JSON::Coder.new.dump([1, obj]) }
      expect_v3_gen_parity { JSON::Coder.new { |o, _k| o.to_s }.dump([1, obj, { obj => 2 }]) }
      expect_v3_gen_parity { JSON::Coder.new(indent: "  ", space: " ", object_nl: "\n").dump({ "a" => [1] }) }
      expect_v3_gen_parity { JSON::Coder.new(script_safe: true).dump(["/"]) }
      expect_v3_gen_parity { JSON::Coder.new(foo: 1) }
      expect_v3_gen_parity { io = StringIO.new; JSON::Coder.new.dump([1], io); io.string }
    end
  end

  describe "Fragments and other values" do
    it "writes Fragments, Strings of every encoding and objects like the gem" do
      gen([JSON::Fragment.new("[1, 2]"), { "a" => JSON::Fragment.new(" 3 ") }])
      gen(["é".b, "abc".b, "\xff".b, "é".encode("ISO-8859-1"), "\xff", "é".encode("UTF-16LE")])
      gen({ "é".b => 1 })
      gen({ "é".encode("UTF-16LE") => 1 })
      gen({ "\xff" => 1 })
      gen([Object.new, 1r, 2**70, -(2**70), :sym, Class.new, 1..2])
      gen({ 1 => 2, nil => 3, 1.5 => 4, [1] => 5 })
      expect_v3_gen_parity { JSON::Fragment.new("x").to_json }
      expect_v3_gen_parity { JSON::Fragment.new(1) }
    end

    it "nests to max_nesting like the gem" do
      a = []
      a << a
      gen(a)
      gen([[[1]]], max_nesting: 2)
      gen([[[[]]]], max_nesting: 3)
      gen({ "a" => { "b" => {} } }, max_nesting: 2)
      gen([[1]], max_nesting: 0)
      gen([1], depth: 1, indent: "  ", array_nl: "\n")
    end
  end

  describe "what #to_json sees" do
    it "hands one copied State to every #to_json, as the gem does" do
      seen = Class.new do
        def to_json(state = nil, *)
          [state.class.name.to_s.end_with?("State"), state.depth, state.indent, state.frozen?].to_json
        end
      end
      mutator = Class.new { def to_json(s) = (s.indent = "Z"; "1") }
      deepener = Class.new { def to_json(s) = (s.depth = 5; "1") }
      gen([seen.new, [seen.new], { "k" => seen.new }], indent: "i", array_nl: "\n")
      gen([[seen.new]], depth: 2)
      gen([mutator.new, [2, 3]], indent: "i", array_nl: "\n")
      gen([deepener.new, [2, 3]], indent: "i", array_nl: "\n")
      expect_v3_gen_parity { s = JSON::State.new(depth: 3); s.generate([seen.new]); s.depth }
      expect_v3_gen_parity do
        ids = []
        k = Class.new { define_method(:to_json) { |s| ids << s.object_id; "1" } }
        JSON.generate([k.new, [k.new]])
        ids.uniq.size
      end
    end

    it "calls #to_json of subclasses and singletons like the gem" do
      sub_hash = Class.new(Hash) { def to_json(*) = '"custom hash"' }
      sub_string = Class.new(String) { def to_json(*) = '"custom string"' }
      singleton = { "a" => 1 }
      def singleton.to_json(*) = '"singleton"'
      gen([sub_hash.new, sub_string.new("x"), singleton, 1.5])
      expect_v3_gen_parity { sub_hash.new.merge("a" => 1).to_json }
      expect_v3_gen_parity { JSON::State._generate_no_fallback(Class.new(Hash)[1, 2], nil, nil) }
      expect_v3_gen_parity { JSON::State.generate(Class.new(Hash)[1, 2], nil, nil) }
      expect_v3_gen_parity { JSON::State._generate_no_fallback(Class.new(String).new("x"), nil, nil) }
    end
  end

  describe "State" do
    it "answers the class-level calls like the gem" do
      expect_v3_gen_parity { |g| normalized([JSON::State.from_state(nil).class, JSON::State.from_state(1).class]) }
      expect_v3_gen_parity { JSON::State.from_state({ indent: "x" }).indent }
      expect_v3_gen_parity { k = Class.new(JSON::State); [k.from_state(nil).class == JSON::State, k.from_state({}).class == k] }
      expect_v3_gen_parity { JSON::State.generate([1], nil, nil) }
      expect_v3_gen_parity { JSON::State.generate([1], JSON::State.new, nil) }
      expect_v3_gen_parity { JSON::State.generate([1]) }
      expect_v3_gen_parity { io = StringIO.new; [JSON::State.generate({ "a" => 1 }, nil, io).equal?(io), io.string] }
      expect_v3_gen_parity { JSON::State.default_sort_keys_proc = 1 }
      expect_v3_gen_parity { JSON::State.new.generate }
      expect_v3_gen_parity { JSON::State.new.generate(1, nil, 3) }
      expect_v3_gen_parity { JSON::State.new.generate([1], 1) }
      expect_v3_gen_parity { JSON::State.new([]).to_h }
      expect_v3_gen_parity { o = Object.new; def o.to_h = { indent: "z" }; JSON::State.new(o) }
      expect_v3_gen_parity { s = JSON::State.new(indent: "x"); s.send(:initialize, { space: "y" }); [s.indent, s.space] }
    end

    it "keeps layout Strings like the gem" do
      expect_v3_gen_parity { s = JSON::State.new; x = +"ab"; s.indent = x; [s.indent.equal?(x), s.indent.frozen?, x.frozen?] }
      expect_v3_gen_parity { s = JSON::State.new; x = "ab".freeze; s.indent = x; s.indent.equal?(x) }
      expect_v3_gen_parity { s = JSON::State.new(indent: "\t"); [s.indent.equal?(s.indent), s.space.equal?(s.space)] }
      expect_v3_gen_parity { s = JSON::State.new(indent: "\t".b, space: "x".encode("ISO-8859-1")); [s.indent.encoding, s.space.encoding] }
      expect_v3_gen_parity { s = JSON::State.new(indent: "", space: nil, object_nl: false); s.to_h }
    end
  end
end
