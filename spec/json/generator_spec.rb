# frozen_string_literal: true

require_relative "generator_helper"

# Custom objects the generator meets. Defined once so both generators see the same ones.
module GenSpecTypes
  class WithToS
    def to_s
      "with to_s \u00e9"
    end
  end

  class WithToJson
    def initialize(payload)
      @payload = payload
    end

    def to_json(*args)
      { "custom" => @payload, "args" => args.size }.to_json(*args)
    end
  end

  class StateReader
    def to_json(state = nil, *)
      "[#{state.class.name.to_s.include?('State') ? state.depth : -1}]"
    end
  end

  class BadToJson
    def to_json(*)
      42
    end
  end

  class BadToS
    def to_s
      :sym
    end
  end

  class NoToJson < BasicObject
    def respond_to?(*)
      false
    end

    def to_s
      "basic"
    end
  end

  class SubHash < Hash; end
  class SubArray < Array; end
  class SubString < String; end

  class ToJsonString < String
    def to_json(*)
      '"overridden"'
    end
  end

  class ToSString < String
    def to_s
      "from to_s"
    end
  end

  class Key
    def to_s
      "key!"
    end
  end

  # Changes the Hash being generated from inside the walk: deleting a key is allowed
  # during iteration, adding one raises.
  class HashChanger
    def initialize(hash, add)
      @hash = hash
      @add = add
    end

    def to_json(*)
      @add ? @hash["added"] = 1 : @hash.delete("later")
      '"changed"'
    end
  end

  # Runs whole generations of its own from inside the outer one's walk (other layouts,
  # enough keys to use the key table, a thread switch first): the output buffer and key
  # table of the outer generation must not be shared with them.
  class NestedGenerate
    # More keys than a generation writes before it makes its key table.
    KEYS = (1..33).to_h { |i| ["k#{i}", i] }.freeze

    def initialize(depth)
      @depth = depth
    end

    def to_json(*)
      Thread.pass
      inner = { "n" => @depth.zero? ? "leaf" : NestedGenerate.new(@depth - 1), "keys" => KEYS, "again" => KEYS }
      [JSON.generate(inner), JSON.pretty_generate(inner)].to_json
    end
  end

  # Frees the keys of one Hash and gives another Hash new keys (which may take the freed
  # objects' places) between the two Hashes' walks.
  class KeyRecycler
    def initialize(freed, refilled, count)
      @freed = freed
      @refilled = refilled
      @count = count
    end

    def to_json(*)
      @freed.clear
      GC.start
      @count.times { |i| @refilled[+"new#{i}"] = i }
      "0"
    end
  end
end

RSpec.describe "RustyStdlib::JSON::Generator" do
  include Parity
  include JSONGenParity

  before { skip JSONGenParity.unproven_message unless JSONGenParity.proven? }

  T = GenSpecTypes

  OPTION_SETS = [
    {}, { indent: "  " }, { indent: "\t" }, { space: " " }, { space_before: " " },
    { object_nl: "\n" }, { array_nl: "\n" }, { object_nl: "" }, { array_nl: "" }, { indent: "" },
    { allow_nan: true }, { ascii_only: true }, { escape_slash: true }, { max_nesting: 2 },
    { max_nesting: false }, { max_nesting: 0 }, { depth: 2 }, { depth: 2, indent: "  ", object_nl: "\n" },
    { buffer_initial_length: 1 }, { buffer_initial_length: 0 },
    { indent: "  ", object_nl: "" }, { indent: "  ", array_nl: "" },
    { indent: "  ", space: " ", object_nl: "\n", array_nl: "\n" },
    { indent: "\t", space: "  ", space_before: " ", object_nl: "\r\n", array_nl: "\n", ascii_only: true,
      escape_slash: true, allow_nan: true, max_nesting: 10 },
    { indent: nil, space: false, allow_nan: nil, ascii_only: 1, escape_slash: "yes" },
    { "indent" => "x", "space" => "y" }
  ].freeze

  NESTED = {
    "a" => [1, -2, 3.25, "x", nil, true, false, [], {}, [[]], [{}]],
    "b" => { "c" => { "d" => [1, { "e" => "f" }] }, "" => "" },
    "é" => ["\u{1f600}", "/\\\"", "\u0000\u001f\u007f\u2028"]
  }.freeze

  VALUES = [
    nil, true, false, 0, 1, -1, 2**62 - 1, -2**62, 2**62, 2**64, -2**70, 1.0, -0.0, 0.1, 1.5e300, 1e-7,
    12_345_678.9, 1e16, 1e15, Float::NAN, Float::INFINITY, -Float::INFINITY,
    "", "plain", "quote\" backslash\\ slash/ nl\n cr\r tab\t ff\f bs\b nul\u0000 us\u001f del\u007f",
    "é ü 中文 \u{1f600} \u{10ffff} \u2028\u2029", "\xff", "a\xe9b", "\xed\xa0\x80", "\xf4\x90\x80\x80",
    "\xc0\x80", "\xe2\x82", "\xf0\x9f\x98", "\xf8\x88\x80\x80\x80", "\x80",
    "abc".b, "\xff".b, "\xc3\xa9".b, "\xe9".dup.force_encoding("ISO-8859-1"), "é".encode("UTF-16LE"),
    "abc".encode("US-ASCII"), "\xff".dup.force_encoding("US-ASCII"), "\x82\xa0".dup.force_encoding("Shift_JIS"),
    :sym, :"é", [], {}, [[[[1]]]], [[[[[[1]]]]]], { "a" => { "b" => { "c" => 1 } } },
    { 1 => 2, nil => 3, sym: 4, 1.5 => 5, [1] => 6, "s" => 7, T::Key.new => 8, T::SubString.new("sub") => 9,
      T::ToJsonString.new("tjs") => 10, T::ToSString.new("tss") => 11, :"é" => 12 },
    NESTED, [NESTED, [NESTED]],
    T::WithToS.new, T::WithToJson.new([1, "a"]), T::WithToJson.new({ "x" => [2.5] }), [T::StateReader.new],
    [[T::StateReader.new]], { "k" => [T::StateReader.new] },
    T::SubHash[{ "a" => 1, "b" => [2] }], T::SubArray[1, [2, T::SubArray[3]]], T::SubString.new("sub\n"),
    T::ToJsonString.new("x"), T::ToSString.new("y"), [T::SubHash[{ "in" => T::SubArray[{ "deep" => 1 }] }]],
    1..3, Rational(1, 3), Complex(1, 2), Struct.new(:a).new(1), Time.at(0).utc, Object, Comparable,
    [T::BadToJson.new], [T::BadToS.new], { T::BadToS.new => 1 }, [T::NoToJson.new],
    { "a" => T::NestedGenerate.new(1), "b" => T::NestedGenerate::KEYS }
  ].freeze

  describe "values and options" do
    VALUES.each_with_index do |value, i|
      it "generates value ##{i} (#{value.class}) like the gem with every option set" do
        under_stress_keep(OPTION_SETS, 2).each do |opts|
          expect_all_entry_points(value, opts)
        end
      end
    end

    it "generates singleton-class containers through their #to_json" do
      hash = { "a" => 1 }
      def hash.to_json(*)
        '"singleton hash"'
      end
      array = [1]
      array.extend(Comparable)
      expect_all_entry_points([hash, array, { "h" => hash }])
    end

    it "reports errors with the gem's class and message" do
      a = []
      a << a
      h = {}
      h["h"] = h
      [a, h, [Float::NAN], { "x" => -Float::INFINITY }, ["\xff"], [T::BadToJson.new], { T::BadToS.new => 1 }]
        .each do |value|
          expect_gen_parity { JSON.generate(value) }
          expect_gen_parity { JSON.pretty_generate(value) }
          expect_gen_parity { JSON.generate(value, max_nesting: 3) }
        end
      expect_gen_parity { JSON.generate([1], 1) }
      expect_gen_parity { JSON.generate([1], indent: 1) }
      expect_gen_parity { JSON.generate([1], max_nesting: "1") }
      expect_gen_parity { JSON.generate([1], max_nesting: 2**70) }
      expect_gen_parity { JSON.generate([1], depth: 1.5) }
      expect_gen_parity { JSON.generate([1], buffer_initial_length: "x") }
      expect_gen_parity { JSON::State.new(space_before: :x) }
      expect_gen_parity { JSON::State.new(1) }
      expect_gen_parity { JSON::State.new({}, 1) }
      # Options are applied in the Hash's order, up to the first one of the wrong type.
      expect_gen_parity { |g| s = g::State.new; [(s.configure(indent: "x", space: 1) rescue $!.class), s.indent, s.space] }
      expect_gen_parity { |g| s = g::State.new; [(s.configure(space: "y", buffer_initial_length: "x", indent: "z") rescue $!.message), s.space, s.indent] }
      expect_gen_parity { |g| [g::State.new(script_safe: true, escape_slash: false).generate(["/"]), g::State.new(escape_slash: false, script_safe: true).generate(["/"])] }
      expect_gen_parity { |g| g::State.new("indent" => "x", indent: "  ", unknown: 1).indent }
      overflow = lambda do |stdlib|
        Parity.overflowing_stdlib(stdlib) { JSON.fast_generate(a) }
      rescue SystemStackError => e
        [e.class, Parity.without_addresses(e.message)]
      end
      expect_gen_parity do |g|
        stdlib = g.equal?(JSONGenParity::STDLIB)
        MainStack.big? ? Thread.new { overflow.call(stdlib) }.value : overflow.call(stdlib)
      end
    end

    # Ours writes Hashes of core values without protect and writes the outermost one
    # again when user code turns up inside it (ext/rusty_stdlib/src/json/generator.rs).
    it "writes Hashes again, protected, when user code turns up deep inside" do
      late = { "a" => 1, "b" => { "c" => [{ "d" => "x" * 40 }, { "e" => T::StateReader.new }] }, "f" => 2 }
      expect_all_entry_points([{ "first" => { "k" => 1 } }, late, { "after" => { "k" => T::WithToS.new } }])
      expect_all_entry_points({ "x" => { "y" => { "z" => [1, Float::NAN] } } }, { allow_nan: true })
      # After a Symbol's #to_json (json 2.9 hands out its State then), a Hash written again:
      # its depth counts in two States (found by fuzz/, the nesting check was one off).
      [[:a, { 8 => [[1]] }], [:a, { k: [[2**64]] }], [[[[:s, { "\xE6\x9D\xB1".b => :x }]]]]].each do |value|
        [{ max_nesting: 3 }, { indent: "\t" }, { indent: "  ", object_nl: "\n", array_nl: "\n" }].each do |opts|
          expect_gen_parity { JSON.generate(value, opts) }
        end
      end
      [false, true].each do |add|
        expect_gen_parity do |_g|
          hash = { "before" => 1 }
          hash["changer"] = { "in" => T::HashChanger.new(hash, add) }
          hash["later"] = 2
          JSON.generate({ "outer" => hash })
        end
      end
    end

    # A String whose code range Ruby has not cached yet (fresh from `force_encoding`, as
    # from a database driver or a file) gets it from our own scan for UTF-8 and US-ASCII
    # (`scan_coderange` in helpers/raw.rs), cached in the String as Ruby's scan would: its
    # output must be the gem's, and what Ruby answers about the String afterwards too.
    it "finds and caches the code range of fresh Strings as Ruby's scan would" do
      long = "a" * 40
      samples = ["", "plain", "caf\u00e9 \u6771\u4eac \u{1f600}", "\u{10ffff}\u{d7ff}\u{e000}",
                 "\xed\xa0\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
                 "abc\xe6\x9d", "\x80", "\xff", "#{long}\u00e9#{long}", "#{long}\xff#{long}", "#{long}\t"]
      samples.map(&:b).product(%w[UTF-8 US-ASCII]).each do |bytes, encoding|
        expect_gen_parity do
          # (A Hash key would not do: making one scans the String for its hash.)
          string = bytes.dup.force_encoding(encoding)
          written = begin
            JSON.generate([1, { "k" => string }])
          rescue JSON::GeneratorError => e
            [e.class, e.message]
          end
          [written, string.valid_encoding?, string.ascii_only?]
        end
      end
    end

    # Hashes of core values are walked table by table, not through rb_hash_foreach, and on
    # Ruby 3.1, 3.3 and 3.4 read straight from Ruby's tables (ext/rusty_stdlib/src/helpers/hash.rs
    # and hash_layout.rs): the order must stay the gem's in small and large tables alike,
    # past deleted entries and after a rehash.
    it "reads Hash tables directly on the Rubies whose layout it knows" do
      known = RUBY_VERSION.start_with?("3.1.", "3.3.", "3.4.")
      expect(RustyStdlib::JSON.direct_hash_walk?).to be(known)
    end

    it "writes the pairs of changed, rehashed and identity Hashes in the gem's order" do
      small = { "a" => 1, "b" => 2, "c" => 3, "d" => 4 }
      small.delete("b")
      small["b"] = 5
      small.shift
      large = (0...40).to_h { |i| ["k#{i}", i] }
      (0...40).step(3) { |i| large.delete("k#{i}") }
      large["k0"] = "back"
      large.shift
      rehashed = (0...20).to_h { |i| [[i], i] }
      rehashed.each_key { |k| k << 0 if k.first.even? }
      rehashed.rehash
      identity = { "x" => 1 }.compare_by_identity
      identity["x".dup] = 2
      emptied = { "gone" => 1 }
      emptied.delete("gone")
      [small, large, rehashed, identity, emptied].each do |hash|
        expect_all_entry_points(hash)
        expect_all_entry_points({ "in" => [hash, { "again" => hash }] }, { indent: "  ", object_nl: "\n" })
      end
    end

    # Ours answers JSON.generate(obj) and JSON.generate(obj, nil) natively and hands every
    # other argument shape to the gem's JSON.generate (PlainGenerate in generator.rs).
    it "takes every argument shape of JSON.generate like the gem" do
      to_h_opts = Struct.new(:to_h).new({ indent: "  " })
      to_hash_opts = Struct.new(:to_hash).new({ space: " " })
      doc = { "a" => [1, "x"], "b" => { "c" => nil } }
      expect_gen_parity { JSON.generate(doc) }
      expect_gen_parity { JSON.generate(doc, nil) }
      expect_gen_parity { JSON.generate(doc, false) }
      expect_gen_parity { JSON.generate(doc, {}) }
      expect_gen_parity { JSON.generate(doc, { indent: "\t" }) }
      expect_gen_parity { JSON.generate(doc, indent: "\t", space: " ") }
      expect_gen_parity { JSON.generate(doc, **{}) }
      expect_gen_parity { JSON.generate(doc, to_h_opts) }
      expect_gen_parity { JSON.generate(doc, to_hash_opts) }
      expect_gen_parity { |g| JSON.generate(doc, g::State.new(object_nl: "\n")) }
      expect_gen_parity { JSON.generate(doc, Object.new) }
      expect_gen_parity { JSON.generate }
      expect_gen_parity { JSON.generate(doc, nil, 1) }
      expect_gen_parity { JSON.generate(T::WithToJson.new([1])) }
      expect_gen_parity { JSON.generate([T::StateReader.new], nil) }
      expect_gen_parity { JSON.generate([Float::NAN], nil) }
    end

    # Ours remembers written keys by key object while no Ruby code can run
    # (ext/rusty_stdlib/src/json/key_cache.rs).
    it "writes repeated keys like the gem" do
      keys = ["id", "a\"b", "\u00e9t\u00e9", "/path", "k" * 49, "k" * 60, :sym, :"s y", "", "\n"]
      rows = Array.new(30) { |i| keys.to_h { |k| [k, i] } }
      doc = { "rows" => rows, "nested" => { "rows" => rows.first(3) }, "id" => rows.last }
      expect_all_entry_points(doc)
      expect_all_entry_points(doc, { ascii_only: true, escape_slash: true })
      expect_all_entry_points(doc, { space: " ", space_before: "\t", indent: "  ", object_nl: "\n" })
      expect_gen_parity { JSON.generate([rows, T::WithToS.new, rows]) }
      expect_gen_parity { JSON.generate([rows, { "x" => T::StateReader.new }, rows]) }
    end

    # Whether a new key takes a freed one's place is up to the GC (a table that kept its
    # keys across Ruby code wrote "old..." keys here in a plain script, where 13 of the 40
    # places were taken again; within this suite's larger heap they mostly are not).
    it "forgets written keys once Ruby code has run" do
      # Under GC.stress every allocation is a collection: one round, fewer new keys.
      (Parity::GC_STRESS ? 1 : 3).times do
        expect_gen_parity do
          freed = (0...40).to_h { |i| [+"old#{i}", i] }
          refilled = {}
          JSON.generate([freed, T::KeyRecycler.new(freed, refilled, Parity::GC_STRESS ? 50 : 2000), refilled])
        end
      end
    end

    # The same in a fresh process, whose small heap gives freed places back (the gem's
    # output of the same steps is the expected one).
    it "forgets written keys once Ruby code has run, in a fresh process" do
      code = <<~RUBY
        require "rusty_stdlib"
        require "json"
        recycler = Class.new do
          def initialize(freed, refilled) = (@freed, @refilled = freed, refilled)
          def to_json(*) = (@freed.clear; GC.start; 2000.times { |i| @refilled[+"new\#{i}"] = i }; "0")
        end
        run = lambda do
          freed = (0...40).to_h { |i| [+"old\#{i}", i] }
          refilled = {}
          JSON.generate([freed, recycler.new(freed, refilled), refilled])
        end
        ours = Array.new(3) { run.call }
        JSON.generator = RustyStdlib::JSON.stdlib_generator
        print Marshal.dump([ours, Array.new(3) { run.call }])
      RUBY
      out, err, status = ruby_run(code)
      expect([err, status.success?]).to eq(["", true])
      ours, gems = Marshal.load(out)
      expect(ours).to eq(gems)
    end

    # Ours writes an empty Array in the compact layout without touching the depth.
    it "writes empty Arrays at and past the nesting limit like the gem" do
      # Under GC.stress (every allocation a collection) the deepest value and two limits.
      values = [[], [[]], [[[]]], { "a" => [[], {}, [[]]] }]
      (Parity::GC_STRESS ? values.last(1) : values).each do |value|
        (Parity::GC_STRESS ? [2, false] : [1, 2, 3, false]).each do |max|
          expect_gen_parity { JSON.generate(value, max_nesting: max) }
          expect_gen_parity { JSON.pretty_generate(value, max_nesting: max) }
        end
        expect_gen_parity { |g| s = g::State.new(depth: 2, max_nesting: 3); [(s.generate(value) rescue $!.message), s.depth] }
        expect_gen_parity { JSON.generate(value, array_nl: "\n", indent: " ") }
      end
    end

    # In the compact layout the insides of a Hash are written by a walk of its own
    # (ext/rusty_stdlib/src/json/generator/compact.rs) that gives up, deep inside, at
    # anything needing Ruby: the output so far must be dropped and the Hash written the
    # gem's way, with the same text, error and State depth.
    it "writes compact Hashes that need Ruby deep inside like the gem" do
      to_json = Class.new { def to_json(*a) = "{\"depth\":#{a.first&.depth.inspect}}" }
      inner = ->(v) { { "k" => [1, "s", { "x" => [nil, v] }], sym: 2.5 } }
      [to_json.new, Float::NAN, 2**70, "\xff", :sym, Object.new, [[[[1]]]],
       { 1 => 2 }, { nil => 1 }, "\u2028/".encode("UTF-16LE"), 1, [], { "e" => {} }].each do |tail|
        value = inner.call(tail)
        [[value], value, { "outer" => value }].each do |doc|
          expect_gen_parity { JSON.generate(doc) }
          [{ max_nesting: 4 }, { max_nesting: 5 }, { max_nesting: 6 }, { ascii_only: true },
           { allow_nan: true }, { escape_slash: true }].each do |opts|
            expect_gen_parity { JSON.generate(doc, opts) }
          end
          expect_gen_parity { |g| s = g::State.new(depth: 1, max_nesting: 7); [(s.generate(doc) rescue $!.message), s.depth] }
        end
      end
    end

    # Written keys are remembered by key object across generations
    # (ext/rusty_stdlib/src/json/key_cache.rs): only frozen Strings and Symbols, kept
    # alive by the table, with the escaping switches they were written with.
    describe "keys written before" do
      it "stay right when their objects are freed and others take their place" do
        expected = JSONGenParity.with_generator(JSONGenParity::STDLIB) do
          Array.new(300) { |i| JSON.generate({ "key #{i}".freeze => i, "#{i}/é" => [i] }) }
        end
        written = Array.new(300) do |i|
          GC.start if (i % 25).zero?
          JSON.generate({ "key #{i}".freeze => i, "#{i}/é" => [i] })
        end
        expect(written).to eq(expected)
      end

      it "stay right when more keys than the table holds come back, under other switches" do
        keys = Array.new(3000) { |i| (i.even? ? "k#{i}/é\u2028" : "k#{i}").freeze }
        hash = keys.each_with_index.to_h
        expect_gen_parity do
          [{}, {}, { script_safe: true }, {}, { ascii_only: true }, {}, { indent: "  ", object_nl: "\n" },
           { space: " " }, {}, { space_before: " ", space: "\t" }, { space: " ", ascii_only: true },
           {}].map do |opts|
            JSON.generate(hash, opts)
          end + [JSON.pretty_generate(hash), JSON.generate(hash)]
        end
      end

      it "are not remembered when a compare_by_identity Hash holds them unfrozen" do
        expect_gen_parity do
          key = +"first"
          hash = {}.compare_by_identity
          hash[key] = 1
          [JSON.generate(hash), JSON.generate([hash]), key.replace("second"), JSON.generate(hash),
           JSON.generate([hash])]
        end
      end

      it "are written again for other escaping switches, Symbols and encodings" do
        expect_gen_parity do
          hash = { "a/é\u2028" => 1, "a/é\u2028": 2, "é".encode("ISO-8859-1") => 3, "\xC3\xA9".b => 4 }
          [{}, { ascii_only: true }, { escape_slash: true }, { script_safe: true }, {},
           { space: " " }, {}].map do |opts|
            JSON.generate(hash, opts)
          rescue JSON::GeneratorError => e
            e.class
          end
        end
      end
    end

    it "generates deep structures without max_nesting like the gem" do
      deep = [1]
      3000.times { deep = [deep] }
      expect_gen_parity { JSON.generate(deep, max_nesting: false) }
      expect_gen_parity { JSON.generate(deep, max_nesting: 3001) }
      expect_gen_parity { JSON.generate(deep, max_nesting: 3000) }
    end
  end

  describe "JSON.dump" do
    it "dumps like the gem, with IO and limit" do
      [[1, "a", nil], { "a" => [[[1]]] }, "str", 1, nil, [Float::NAN]].each do |value|
        expect_gen_parity { JSON.dump(value) }
        expect_gen_parity { io = StringIO.new; JSON.dump(value, io); io.string }
        expect_gen_parity { JSON.dump(value, StringIO.new).class }
        expect_gen_parity { JSON.dump(value, 2) }
        expect_gen_parity { JSON.dump(value, nil, 2) }
        expect_gen_parity { io = StringIO.new; JSON.dump(value, io, 4); io.string }
      end
    end
  end

  describe "#to_json" do
    it "runs on every core type with nil, a Hash or a State" do
      { Hash => { "a" => [1] }, Array => [1, { "b" => 2 }], String => "s/é", Integer => 2**70,
        Float => 2.5, TrueClass => true, FalseClass => false, NilClass => nil, Object => T::WithToS.new }
        .each do |klass, value|
          name = klass.name.to_sym
          expect_gen_parity { |g| JSONGenParity.to_json(g, value, name) }
          expect_gen_parity { |g| JSONGenParity.to_json(g, value, name, nil) }
          expect_gen_parity { |g| JSONGenParity.to_json(g, value, name, indent: "  ", array_nl: "\n", object_nl: "\n") }
          expect_gen_parity { |g| JSONGenParity.to_json(g, value, name, g::State.new(escape_slash: true, depth: 3)) }
          expect_gen_parity { |g| JSONGenParity.to_json(g, value, name, 1) }
          expect_gen_parity { |g| JSONGenParity.to_json(g, value, name, nil, 2) }
        end
      expect_gen_parity { |g| JSONGenParity.to_json(g, Float::NAN, :Float) }
      expect_gen_parity { |g| JSONGenParity.to_json(g, Float::NAN, :Float, allow_nan: true) }
      expect_gen_parity { |g| JSONGenParity.to_json(g, "\xff", :String) }
      bad_to_s = T::BadToS.new
      expect_gen_parity { |g| JSONGenParity.to_json(g, bad_to_s, :Object) }
    end

    it "has the String extras (raw forms, String::Extend)" do
      skip "json #{JSON::VERSION} has no GeneratorMethods::String" if JSONParity.v3?
      expect_gen_parity { |g| g::GeneratorMethods::String.instance_method(:to_json_raw_object).bind_call("ab\xff") }
      expect_gen_parity { |g| g::GeneratorMethods::String.instance_method(:to_json_raw).bind_call("ab\xff") }
      expect_gen_parity do |g|
        g::GeneratorMethods::String.instance_method(:to_json_raw).bind_call("ab", indent: "  ", object_nl: "\n")
      end
      expect_gen_parity { |g| g::GeneratorMethods::String::Extend.instance_method(:json_create).bind_call(String, { "raw" => [97, 255] }) }
      expect_gen_parity { |g| g::GeneratorMethods::String::Extend.instance_method(:json_create).bind_call(String, [1]) }
      expect_gen_parity { |g| c = Class.new; c.include(g::GeneratorMethods::String); c.singleton_class.include?(g::GeneratorMethods::String::Extend) }
      expect_gen_parity { |g| g::GeneratorMethods.constants.sort }
      expect_gen_parity { |g| g::GeneratorMethods::String.instance_methods(false).sort }
      expect_gen_parity { "x".to_json_raw }
      expect_gen_parity { String.json_create({ "raw" => [104, 105] }) }
    end

    # The gem writes these in C: the class's path (not `name` or `class`), its own raw
    # object, binary literals, Check_Type's words, and errors from C frames (whose
    # NoMethodError message carries the caller's error_highlight snippet).
    it "makes the String extras as the gem's C does" do
      skip "json #{JSON::VERSION} has no GeneratorMethods::String" if JSONParity.v3?
      renamed = Class.new(String) { def self.name = "Renamed" }
      classless = Class.new(String) { def class = Integer }
      own_raw = Class.new(String) { def to_json_raw_object = { "own" => 1 } }
      keyed = Class.new(Hash) { def [](_key) = [120] }
      raw_object = ->(g, s) { g::GeneratorMethods::String.instance_method(:to_json_raw_object).bind_call(s) }
      json_create = ->(g, o) { g::GeneratorMethods::String::Extend.instance_method(:json_create).bind_call(String, o) }
      [renamed.new("ab"), classless.new("ab"), Class.new(String).new("ab")].each do |string|
        expect_gen_parity { |g| raw_object.call(g, string).map { |k, v| [k, k.encoding, k.frozen?, v] } }
      end
      expect_gen_parity { |g| g::GeneratorMethods::String.instance_method(:to_json_raw).bind_call(own_raw.new("ab")) }
      [nil, 1, :sym, "s", {}, { "raw" => nil }, { "raw" => ["x"] }, keyed.new, keyed[{ "raw" => [104] }]].each do |object|
        expect_gen_parity { |g| json_create.call(g, object) }
      end
      expect_gen_parity { JSON.load('{"json_class":"String"}') }
      expect_gen_parity { |g| g::GeneratorMethods::String.instance_method(:to_json_raw).source_location }
      expect_gen_parity { |g| g::GeneratorMethods::String::Extend.instance_method(:json_create).source_location }
      expect_gen_parity { |g| g::GeneratorMethods::String.method(:included).source_location }
    end

    it "calls super from String.included where the gem does (json 2.9)" do
      skip "json #{JSON::VERSION} has no GeneratorMethods::String" if JSONParity.v3?
      expect_gen_parity do |g|
        # Below the module's own `included`: reached only through its super.
        log = []
        g::GeneratorMethods::String.extend(Module.new { define_method(:included) { |base| log << base; super(base) } })
        Class.new.include(g::GeneratorMethods::String)
        log.size
      end
    end
  end

  describe "State" do
    def state_calls(opts)
      [
        ->(s) { s.to_h },
        ->(s) { s.to_hash },
        ->(s) { [s.indent, s.space, s.space_before, s.object_nl, s.array_nl].map { |x| [x, x.encoding] } },
        ->(s) { [s.allow_nan?, s.ascii_only?, s.escape_slash?, s.escape_slash, s.max_nesting, s.depth, s.check_circular?] },
        ->(s) { s.buffer_initial_length },
        ->(s) { %i[indent space allow_nan ascii_only max_nesting depth escape_slash foo].map { |k| s[k] } },
        ->(s) { s["indent"] = "  "; s[:foo] = 1; s["bar baz"] = 2; [s.to_h, s[:foo], s["bar baz"]] },
        ->(s) { s.configure(indent: "x").to_h },
        ->(s) { s.merge(array_nl: "\n").equal?(s) },
        ->(s) { s.configure({}).to_h },
        ->(s) { s.configure(Struct.new(:to_h).new({ space: " " })).to_h },
        ->(s) { s.configure(1) },
        ->(s) { s.dup.to_h },
        ->(s) { s.clone.generate([{ "a" => 1 }]) },
        ->(s) { s.indent = "\t"; s.space = " "; s.space_before = ""; s.object_nl = "\n"; s.array_nl = "\n"; [s.to_h, s.generate({ "a" => [1] })] },
        ->(s) { s.indent = nil },
        ->(s) { s.max_nesting = 3; s.depth = 1; [s.to_h, s.check_circular?, s.generate([[1]])] },
        ->(s) { s.max_nesting = 0; s.check_circular? },
        ->(s) { s.max_nesting = "3" },
        ->(s) { s.depth = nil },
        ->(s) { s.buffer_initial_length = 5; s.buffer_initial_length = -1; s.buffer_initial_length },
        ->(s) { s.buffer_initial_length = 1.0 },
        ->(s) { s.escape_slash = true; [s.escape_slash?, s.generate(["/"])] },
        ->(s) { [(s.generate([[Float::NAN]]) rescue $!.message), s.depth, s.to_h[:depth]] },
        ->(s) { a = []; a << a; [(s.generate(a) rescue $!.message), s.depth] },
        ->(s) { [s.generate(1), s.generate(nil), s.generate("s"), s.generate(1.5)] },
        ->(s) { s.generate([1], 2) },
        ->(s) { s.instance_variable_set(:@x, 1); s.to_h },
        ->(s) { JSON.generate([1], s).equal?(nil) }
      ].map { |call| [opts, call] }
    end

    # json 3's State (no [] / []=, no escape_slash; as_json, sort_keys, strict, rfc8785).
    def state_calls_v3(opts)
      proc2 = ->(o, _key) { o.to_s }
      [
        ->(s) { s.to_h },
        ->(s) { s.to_hash },
        ->(s) { [s.indent, s.space, s.space_before, s.object_nl, s.array_nl].map { |x| [x, x.encoding, x.frozen?] } },
        ->(s) { [s.allow_nan?, s.ascii_only?, s.script_safe?, s.script_safe, s.strict, s.strict?, s.max_nesting, s.depth, s.check_circular?] },
        ->(s) { [s.buffer_initial_length, s.as_json, s.sort_keys, s.rfc8785?, s.send(:allow_duplicate_key?)] },
        ->(s) { s.configure(indent: "x").to_h },
        ->(s) { s.merge(array_nl: "\n").equal?(s) },
        ->(s) { s.configure({}).to_h },
        ->(s) { s.configure(Struct.new(:to_h).new({ space: " " })).to_h },
        ->(s) { s.configure(1) },
        ->(s) { s.configure(foo: 1, indent: "y", bar: 2) },
        ->(s) { s.dup.to_h },
        ->(s) { s.clone.generate([{ "a" => 1 }]) },
        ->(s) { s.indent = "\t"; s.space = " "; s.space_before = ""; s.object_nl = "\n"; s.array_nl = "\n"; [s.to_h, s.generate({ "a" => [1] })] },
        ->(s) { s.indent = nil; s.indent },
        ->(s) { s.max_nesting = 3; s.depth = 1; [s.to_h, s.check_circular?, s.generate([[1]])] },
        ->(s) { s.max_nesting = 0; s.check_circular? },
        ->(s) { s.max_nesting = "3" },
        ->(s) { s.depth = nil; s.depth },
        ->(s) { s.depth = -1 },
        ->(s) { s.buffer_initial_length = 5; s.buffer_initial_length = -1; s.buffer_initial_length },
        ->(s) { s.buffer_initial_length = 1.0 },
        ->(s) { s.script_safe = true; [s.script_safe?, s.generate(["/\u2028"])] },
        ->(s) { s.strict = 1; [s.strict?, (s.generate([Object.new]) rescue $!.message)] },
        ->(s) { s.as_json = proc2; s.strict = true; [s.as_json.equal?(proc2), s.generate([Object])] },
        ->(s) { s.as_json = :to_s; [s.as_json.class, s.as_json.lambda?] },
        ->(s) { s.as_json = nil },
        ->(s) { s.sort_keys = true; [s.sort_keys.lambda?, s.generate({ "b" => 1, "a" => 2 })] },
        ->(s) { s.sort_keys = ->(h) { h.to_a.reverse.to_h }; s.generate({ "b" => 1, "a" => 2 }) },
        ->(s) { s.sort_keys = 1 },
        ->(s) { s.rfc8785 = true; [s.rfc8785?, (s.generate({ "b" => 1.5, "a" => [1e21] }) rescue $!.message)] },
        ->(s) { [(s.generate([[Float::NAN]]) rescue $!.message), s.depth, s.to_h[:depth]] },
        ->(s) { a = []; a << a; [(s.generate(a) rescue $!.message), s.depth] },
        ->(s) { [s.generate(1), s.generate(nil), s.generate("s"), s.generate(1.5)] },
        ->(s) { s.generate([1], 2) },
        ->(s) { s.instance_variable_set(:@x, 1); s.to_h },
        ->(s) { JSON.generate([1], s).equal?(nil) },
        lambda { |s|
          s.freeze
          [s.generate([1]), begin; s.indent = "x"; rescue FrozenError => e; e.class; end]
        }
      ].map { |call| [opts, call] }
    end

    [{}, { indent: "  ", space: " ", max_nesting: 5, depth: 1, allow_nan: true, ascii_only: true,
           escape_slash: true, buffer_initial_length: 64, object_nl: "\n", array_nl: "" }].each do |opts|
      it "answers every State method like the gem (#{opts.keys.join(', ')})" do
        calls = JSONParity.v3? ? state_calls_v3(JSONGenParity.for_this_json(opts)) : state_calls(opts)
        calls.each do |o, call|
          expect_gen_parity { |g| call.call(g::State.new(o)) }
          expect_gen_parity { call.call(JSON::State.new(o)) }
        end
      end
    end

    it "has the gem's class-level API" do
      expect_gen_parity { |g| g::State.from_state(nil).to_h }
      expect_gen_parity { |g| g::State.from_state(1).class.equal?(g::State) }
      expect_gen_parity { |g| g::State.from_state(indent: "x").to_h }
      expect_gen_parity { |g| s = g::State.new; g::State.from_state(s).equal?(s) }
      expect_gen_parity { |g| g::State.instance_methods(false).sort }
      # Ours adds State.=== (see "a State made as JSON::Ext::Generator::State" below).
      expect_gen_parity { |g| g::State.singleton_methods.sort - (g.equal?(JSONGenParity::OURS) ? [:===] : []) }
      expect(JSONGenParity::OURS::State.singleton_methods(false)).to include(:===)
      expect_gen_parity { |g| g::State.instance_method(:merge) == g::State.instance_method(:configure) }
      expect_gen_parity { JSON::State.new.to_h }
      expect_gen_parity { JSON::SAFE_STATE_PROTOTYPE.to_h }
      expect_gen_parity { JSON::FAST_STATE_PROTOTYPE.to_h }
      expect_gen_parity { JSON::PRETTY_STATE_PROTOTYPE.to_h }
      expect_gen_parity { JSON.state.new(indent: "i").to_h }
    end
  end

  # Once ours is in, JSON::State is ours, but an app can still make the gem's own State by
  # name; with the gem installed that is JSON::State itself, so json's Ruby code treats it
  # as the State to generate with. Ours must too (on json 2.9 JSON.generate raised a
  # TypeError for it, on 2.6 its depth and the class a #to_json sees differed).
  describe "a State made as JSON::Ext::Generator::State" do
    def gem_state(**opts)
      JSON::Ext::Generator::State.new(**opts)
    end

    it "generates with the gem's generator, as when the gem's is JSON's" do
      value = [1, { "a" => [2.5, nil, "s"] }, GenSpecTypes::StateReader.new, GenSpecTypes::WithToJson.new([1])]
      class_seen = Class.new { def to_json(state = nil, *) = state.class.name.to_json }.new
      layout = { indent: " ", object_nl: "\n", array_nl: "\n", space: " " }
      [{}, layout, { depth: 2, indent: "\t" }, { max_nesting: 2 }].each do |opts|
        expect_gen_parity { JSON.generate(value, gem_state(**opts)) }
        expect_gen_parity { JSON.fast_generate(value, gem_state(**opts)) }
        expect_gen_parity { JSON.pretty_generate(value, gem_state(**opts)) }
        expect_gen_parity { value.to_json(gem_state(**opts)) }
        expect_gen_parity { JSON.generate([class_seen], gem_state(**opts)) }
        expect_gen_parity { s = gem_state(**opts); JSON.generate(value, s); [s.depth, s.to_h] }
      end
      expect_gen_parity { JSON.generate(1.0 / 0, gem_state) }
      expect_gen_parity { JSON.generate([1.0 / 0], gem_state(allow_nan: true)) }
    end

    it "is a JSON::State to State.=== and State.from_state, as with the gem" do
      expect_gen_parity { JSON::State === gem_state }
      expect_gen_parity { s = gem_state(indent: "x"); JSON::State.from_state(s).equal?(s) }
      expect_gen_parity { JSON::State.from_state(gem_state(indent: "x")).indent }
      expect_gen_parity { [JSON::State === JSON::State.new, JSON::State === {}, JSON::State === nil] }
      expect_gen_parity { [JSON::State === Object.new, JSON::State === JSON::State] }
      expect_gen_parity do
        subclass = Class.new(JSON::State)
        [subclass === gem_state, subclass === subclass.new, subclass.from_state(gem_state).class.equal?(subclass)]
      end
    end
  end

  # json 2.9's additions (script_safe, strict, generate(obj, io), GeneratorError#invalid_object,
  # State.generate, binary/non-UTF-8 Strings). On json 2.6, which ignores those options and
  # lacks those methods, the same calls check that ours ignores and lacks them too.
  describe "json 2.9 options and methods" do
    def error_details(error)
      [error.class, Parity.without_addresses(error.message),
       error.respond_to?(:invalid_object) ? error.invalid_object : :none]
    end

    it "writes script_safe (and escape_slash) like the gem" do
      text = "a/b\u2028c\u2029d\u00e9\u{1f600}</script>"
      [{ script_safe: true }, { escape_slash: true }, { script_safe: true, ascii_only: true },
       { script_safe: false, escape_slash: true }, { escape_slash: true, script_safe: false }].each do |opts|
        expect_all_entry_points([text, { text => [text] }], opts)
      end
      expect_gen_parity { |g| g::State.new.respond_to?(:script_safe=) }
      unless JSONParity.v3? # json 3 has no escape_slash
        expect_gen_parity { |g| s = g::State.new; s.escape_slash = true; [s.escape_slash?, s.to_h, s.generate([text])] }
        expect_gen_parity { |g| s = g::State.new(script_safe: true); s.escape_slash = false; [s.to_h, s.generate([text])] }
      end
      next unless JSON::State.method_defined?(:script_safe=)

      expect_gen_parity do |g|
        s = g::State.new
        s.script_safe = true
        [s.script_safe?, JSONParity.v3? || s.escape_slash?, s.generate([text])]
      end
    end

    it "raises in strict mode like the gem, carrying the invalid object" do
      values = [[1, "a", nil, true, 1.5, 2**70, { "k" => [] }], [:sym], [Object], [1..2], [T::WithToJson.new(1)],
                [T::SubString.new("s")], [T::SubHash.new], { T::Key.new => 1 }, { sym: 1 }, [Float::NAN]]
      values.each do |value|
        [{ strict: true }, { strict: true, allow_nan: true }, { strict: false }].each do |opts|
          expect_gen_parity do
            JSON.generate(value, opts)
          rescue JSON::GeneratorError => e
            error_details(e)
          end
          expect_gen_parity do |g|
            g::State.new(opts).generate(value)
          rescue JSON::GeneratorError => e
            error_details(e)
          end
        end
      end
      expect_gen_parity { |g| g::State.method_defined?(:strict=) }
      next unless JSON::State.method_defined?(:strict=)

      expect_gen_parity { |g| s = g::State.new; s.strict = 1; [s.strict, s.strict?, s.to_h] }
    end

    it "carries the invalid object in GeneratorErrors like the gem" do
      [[Float::NAN], { "x" => -Float::INFINITY }, ["\xff"], ["a\xe2\x82"], ["\xff".b],
       ["\x81".dup.force_encoding("Shift_JIS")], ["\xff".dup.force_encoding("US-ASCII")]].each do |value|
        [{}, { ascii_only: true }].each do |opts|
          expect_gen_parity do
            JSON.generate(value, opts)
          rescue JSON::GeneratorError => e
            error_details(e)
          end
        end
      end
    end

    it "converts binary and other encodings like the gem, warning alike" do
      ["\u00e9".b, "ab".b, "\xe9".dup.force_encoding("ISO-8859-1"), "a".encode("UTF-16LE"),
       { "\u00e9".b => "x".encode("UTF-16BE") }].each do |value|
        expect_all_entry_points([value], {})
      end
    end

    it "writes to an io argument like the gem" do
      expect_gen_parity do |g|
        io = StringIO.new
        result = g::State.new(indent: " ", array_nl: "\n").generate([1, { "a" => "b" }], io)
        [result.equal?(io), io.string, io.string.encoding]
      end
      expect_gen_parity { |g| g::State.new.generate([1], nil) }
      expect_gen_parity { |g| g::State.new.generate([1], 1) }
      expect_gen_parity do
        io = StringIO.new
        result = JSON.dump({ "a" => [1, :b] }, io)
        [result.equal?(io), io.string]
      end
    end

    it "has State.generate like the gem (when the gem has it)" do
      expect_gen_parity { |g| g::State.respond_to?(:generate) }
      next unless JSON::State.respond_to?(:generate)

      [nil, {}, { indent: " ", array_nl: "\n" }, { "indent" => " " }, [], { max_nesting: 1 }].each do |opts|
        expect_gen_parity { |g| g::State.generate([[1], { "a" => :b }], opts, nil) }
      end
      expect_gen_parity { |g| io = StringIO.new; [g::State.generate({ "a" => 1 }, nil, io).equal?(io), io.string] }
    end

    it "keeps the State options it is not given, as the gem does" do
      expect_gen_parity { |g| s = g::State.new(max_nesting: 5, indent: "x", depth: 2); s.configure(allow_nan: true); s.to_h }
      expect_gen_parity { |g| s = g::State.new(indent: "\t".b, space: "x".encode("ISO-8859-1")); [s.indent.encoding, s.space.encoding, s.indent.frozen?, s.object_nl.frozen?] }
      expect_gen_parity { |g| s = g::State.new(indent: "x"); s.indent = nil; s.indent }
      expect_gen_parity { |g| s = g::State.new; s.max_nesting = nil; s.depth = false; [s.max_nesting, s.depth] }
      expect_gen_parity { |g| s = g::State.new; s.allow_nan = true if s.respond_to?(:allow_nan=); s.allow_nan? }
      expect_gen_parity { |g| g::State.private_instance_methods(false).sort }
    end

    it "writes what follows a #to_json in a Hash like the gem (json 2.9's copied State)" do
      value = [{ "a" => [:x, { "b" => :y }], "c" => [1], "d" => { "e" => 1 } }, :z, { "f" => [] }]
      [{ indent: " ", space: " ", object_nl: "\n", array_nl: "\n" }, { max_nesting: 3 }, { max_nesting: 4 }].each do |opts|
        expect_gen_parity { JSON.generate(value, opts) }
        expect_gen_parity { JSON.pretty_generate(value, opts) }
        expect_gen_parity { |g| g::State.new(opts).generate(value) }
      end
    end
  end

  describe "floats" do
    it "writes random doubles exactly as Float#to_s and the gem" do
      Kernel.srand(20_261_129)
      count = Parity::GC_STRESS ? 200 : 50_000
      bits = Array.new(count) { [rand(2**64)].pack("Q").unpack1("D") }
      scaled = Array.new(count) { rand * (10**rand(-30..30)) * (rand < 0.5 ? -1 : 1) }
      ints = Array.new(count / 10) { rand(-(2**60)..2**60).to_f }
      short = Array.new(count / 10) { (rand * 1000).round(rand(0..6)) }
      edges = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e16, 9.999999999999998e15,
               1e-4, 9.999999999999999e-5, 1e-5, 0.1, 0.2, 0.3, 1 / 3.0, 2**53, 2**53 + 1.0, 123_456_789_012_345_680.0]
      floats = (bits + scaled + ints + short + edges.map(&:to_f)).select(&:finite?)
      # json 2 writes Float#to_s's text; json 3 its own (Grisu2, another layout).
      ours = RustyStdlib::JSON.generator::State.new
      floats.each_slice(1000) do |slice|
        expect_gen_parity { JSON.generate(slice) }
        expect(ours.generate(slice)).to eq("[#{slice.map(&:to_s).join(',')}]") unless JSONParity.v3?
      end
      nonfinite = [Float::NAN, Float::INFINITY, -Float::INFINITY, -Float::NAN]
      expect_gen_parity { JSON.generate(nonfinite, allow_nan: true) }
    end

    it "follows a redefined Float#to_s like the gem" do
      Float.class_eval do
        alias_method :__gen_spec_to_s, :to_s
        def to_s
          "F#{__gen_spec_to_s}"
        end
      end
      expect_gen_parity { JSON.generate([1.5, 2.0e20]) }
      expect_gen_parity { JSON.generate([Float::NAN]) }
    ensure
      Float.class_eval do
        remove_method :to_s
        alias_method :to_s, :__gen_spec_to_s
        remove_method :__gen_spec_to_s
      end
    end
  end

  describe "seeded random documents" do
    def random_value(rng, depth)
      case depth > 4 ? rng.rand(6) : rng.rand(9)
      when 0 then nil
      when 1 then rng.rand < 0.5
      when 2 then rng.rand(-(2**70)..2**70) >> rng.rand(70)
      when 3 then (rng.rand - 0.5) * (10**rng.rand(-20..20))
      when 4 then random_string(rng)
      when 5 then random_string(rng).to_sym
      when 6, 7 then Array.new(rng.rand(5)) { random_value(rng, depth + 1) }
      else Array.new(rng.rand(5)) { [rng.rand < 0.3 ? random_string(rng).to_sym : random_string(rng), random_value(rng, depth + 1)] }.to_h
      end
    end

    ALPHABET = ["a", "b", " ", "\"", "\\", "/", "\n", "\t", "\u0001", "\u001f", "\u007f", "é", "中", "\u{1f600}", "\u2028"].freeze

    def random_string(rng)
      Array.new(rng.rand(8)) { ALPHABET[rng.rand(ALPHABET.size)] }.join
    end

    it "generates them identically in every mode" do
      rng = Random.new(4242)
      docs = Array.new(Parity::GC_STRESS ? 5 : 300) { random_value(rng, 0) }
      modes = [{}, { ascii_only: true }, { escape_slash: true }, { indent: " ", space: " ", object_nl: "\n", array_nl: "\n" }]
      docs.each do |doc|
        modes.each do |opts|
          expect_gen_parity { JSON.generate(doc, opts) }
        end
        expect_gen_parity { JSON.pretty_generate(doc) }
        expect_gen_parity { JSON.dump(doc) }
      end
    end
  end

  describe "the benchmark corpus" do
    bench_dir = CORPUS_DIR && File.join(CORPUS_DIR, "json", "bench")
    files = bench_dir && File.directory?(bench_dir) ? Dir[File.join(bench_dir, "*.json")].sort : []
    it("has the corpus") { skip "bench corpus not found under #{CORPUS_DIR.inspect}" } if files.empty?

    files.each do |path|
      it "generates #{File.basename(path)} identically in every mode" do
        skip "too large for GC.stress" if Parity::GC_STRESS && File.size(path) > 20_000
        doc = JSON.parse(File.read(path))
        expect_gen_parity { JSON.generate(doc) }
        expect_gen_parity { JSON.pretty_generate(doc) }
        expect_gen_parity { JSON.generate(doc, ascii_only: true, escape_slash: true) }
        expect_gen_parity { JSON.fast_generate(doc) }
        expect_gen_parity { JSON.dump(doc) }
      end
    end
  end
end
