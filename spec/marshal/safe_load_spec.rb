# frozen_string_literal: true

require "tmpdir"
require_relative "marshal_helper"

# RustyStdlib::Marshal.safe_load: what it loads equals the stdlib's Marshal.load; what it
# refuses, it refuses before any object of the class is made or any hook runs; and its
# two walks (Rust, and Ruby for Rubies without the extension) agree on every input.
module SafeLoadSpec
  # Each records, where the spec can see it, that Marshal made one or ran its hook.
  EVENTS = []

  class LoadHook
    def initialize(text) = (@text = text)
    def _dump(_level) = @text
    def self._load(text) = (EVENTS << [:_load, text]) && new(text)
  end

  # A _load that writes the file its dump names: what a refused class must never do.
  class WritingHook
    def initialize(path) = (@path = path)
    def _dump(_level) = @path
    def self._load(path) = File.write(path, "ran") && allocate
  end

  class MarshalLoadHook
    def marshal_dump = [1]
    def marshal_load(data) = EVENTS << [:marshal_load, data]
  end

  class Plain
    def initialize = (@a = 1)
  end

  Member = Struct.new(:x)

  module Tag; end
end

RSpec.describe "RustyStdlib::Marshal.safe_load" do
  ours = RustyStdlib::Marshal
  stress = Parity::GC_STRESS
  spec = SafeLoadSpec

  before { spec::EVENTS.clear }

  # Both walks on `dump` under the same policy must give the same answer.
  def expect_walks_agree(dump, classes, symbols, depth)
    ruby = RustyStdlib::Marshal::Vet.call(dump, classes, symbols, depth)
    # Under GC stress: every Ruby object the refusal is made of must be kept alive.
    native = begin
      GC.stress = Parity.stress_mode if Parity::GC_STRESS
      RustyStdlib::Marshal.native_vet(dump, classes, symbols, depth)
    ensure
      GC.stress = false
    end
    expect(native).to eq(ruby), "walks differ on #{dump.unpack1('H*')}: native #{native.inspect}, ruby #{ruby.inspect}"
    ruby
  end

  describe "on the stdlib's own dumps (seeded random graphs)" do
    it "loads what Marshal.load loads once every class in them is permitted, and says which it needs" do
      skip "the native extension is not loaded" unless RustyStdlib.native?
      rng = Random.new(Kernel.rand(2**32))
      (stress ? 10 : 300).times do
        graph = MarshalHelper::GraphGenerator.new(rng, stress ? 12 : 50).generate
        dump = ours.stdlib_dump(graph)
        freeze = rng.rand < 0.3
        permitted = []
        loaded = begin
          ours.safe_load(dump, permitted_classes: permitted, freeze: freeze)
        rescue RustyStdlib::Marshal::DisallowedClass => e
          # What it named must be in the dump (or be the core class of an object with
          # ivars), and permitting it moves the walk on.
          expect(dump.b).to include(e.class_name.b) unless e.message.include?("instance variable") ||
                                                           e.class_name == "Regexp"
          expect(permitted).not_to include(e.class_name)
          permitted << e.class_name
          retry
        end
        expected = MarshalHelper.describe(ours.stdlib_load(dump, freeze: freeze))
        expect(MarshalHelper.describe(loaded)).to eq(expected), "bytes (hex): #{dump.unpack1('H*')}"
        expect_walks_agree(dump, [], nil, 128)
        expect_walks_agree(dump, permitted, %w[a b], 3)
      end
    end

    it "loads every core type and the permitted classes as Marshal.load does" do
      values = [nil, true, false, 0, -1, 2**31, -(2**80), 1.5, -0.0, Float::NAN.to_s, "caf\u00e9", "x".b,
                "s".encode("Shift_JIS"), :sym, :"caf\u00e9", [1, [2, [3]]], { "a" => 1, b: [nil] },
                Hash.new(5).merge!(1 => 2), [s = +"shared", s]]
      # Pairs, not a Hash: a String key would be copied without its extension or ivars.
      permitted = [[Time.at(1_700_000_000, 123_456, :usec).utc, [Time]], [Time.at(0).localtime("+09:00"), [Time]],
                   [1..2, [Range]], [(1...), [Range]], [Rational(1, 3), [Rational]], [Complex(1, 2), [Complex]],
                   [/a.b/mi, [Regexp]], [spec::Member.new(1), [spec::Member]], [spec::Plain.new, [spec::Plain]],
                   [RuntimeError.new("boom"), [RuntimeError]], [(+"x").extend(spec::Tag), [spec::Tag]],
                   [MarshalHelper.with_ivars(+"iv", :@note, 1), [String]],
                   [spec::LoadHook.new("t"), ["SafeLoadSpec::LoadHook"]]]
      values.each do |value|
        dump = ours.stdlib_dump(value)
        loaded = Parity.outcome(stress: stress) { MarshalHelper.describe(ours.safe_load(dump)) }
        expect(loaded).to eq(Parity.outcome { MarshalHelper.describe(ours.stdlib_load(dump)) })
      end
      permitted.each do |value, classes|
        dump = ours.stdlib_dump(value)
        error = (ours.safe_load(dump) rescue $!) # rubocop:disable Style/RescueModifier
        expect(error).to be_a(RustyStdlib::Marshal::DisallowedClass), "#{value.inspect} gave #{error.inspect}"
        loaded = Parity.outcome(stress: stress) { MarshalHelper.describe(ours.safe_load(dump, permitted_classes: classes)) }
        expect(loaded).to eq(Parity.outcome { MarshalHelper.describe(ours.stdlib_load(dump)) })
        frozen = ours.safe_load(dump, permitted_classes: classes, freeze: true)
        expect(MarshalHelper.describe(frozen)).to eq(MarshalHelper.describe(ours.stdlib_load(dump, freeze: true)))
      end
    end
  end

  describe "refusals, before anything runs" do
    # Each dump would run code (a hook writing a file) or make an object if the check
    # were missing: the stdlib's load does both, which proves the spec can fail.
    it "runs no _load of a class not permitted" do
      Dir.mktmpdir do |dir|
        path = File.join(dir, "pwned")
        dump = ours.stdlib_dump(spec::WritingHook.new(path))
        expect { ours.safe_load(dump) }.to raise_error(RustyStdlib::Marshal::DisallowedClass,
                                                        "Tried to load unspecified class: SafeLoadSpec::WritingHook")
        expect(File).not_to exist(path)
        ours.stdlib_load(dump)
        expect(File).to exist(path)
      end
    end

    it "runs no marshal_load and makes no object of a class not permitted" do
      [[spec::MarshalLoadHook.new, spec::MarshalLoadHook], [spec::Plain.new, spec::Plain],
       [spec::Member.new(1), spec::Member], [[1, spec::Plain.new], spec::Plain]].each do |value, klass|
        dump = ours.stdlib_dump(value)
        GC.disable
        before = ObjectSpace.each_object(klass).count
        events = spec::EVENTS.dup
        expect { ours.safe_load(dump) }.to raise_error(RustyStdlib::Marshal::DisallowedClass) { |e|
          expect(e.class_name).to eq(klass.name)
          expect(e).to be_a(ArgumentError)
        }
        expect(ObjectSpace.each_object(klass).count).to eq(before)
        expect(spec::EVENTS).to eq(events)
        ours.stdlib_load(dump)
        expect(ObjectSpace.each_object(klass).count).to eq(before + 1)
      ensure
        GC.enable
      end
      expect(spec::EVENTS).to eq([[:marshal_load, [1]]])
    end

    it "refuses extensions, subclasses of core types, class references and ivars on core objects" do
      string_subclass = Class.new(String)
      stub_const("SafeLoadSpec::Text", string_subclass)
      refused = [[(+"x").extend(spec::Tag), "SafeLoadSpec::Tag"], [SafeLoadSpec::Text.new("t"), "SafeLoadSpec::Text"],
                 [String, "String"], [spec::Tag, "SafeLoadSpec::Tag"], [/re/, "Regexp"],
                 [MarshalHelper.with_ivars([1], :@x, 2), "Array"], [Time.now, "Time"]]
      refused.each do |value, name|
        error = (ours.safe_load(ours.stdlib_dump(value)) rescue $!) # rubocop:disable Style/RescueModifier
        expect(error).to be_a(RustyStdlib::Marshal::DisallowedClass), "#{value.inspect} gave #{error.inspect}"
        expect(error.class_name).to eq(name)
      end
      expect { ours.safe_load(ours.stdlib_dump(MarshalHelper.with_ivars(+"s", :@x, 2))) }
        .to raise_error(RustyStdlib::Marshal::DisallowedClass,
                        "Tried to load instance variable @x on a String (name String in permitted_classes to allow it)")
    end

    it "keeps to permitted_symbols when given" do
      dump = ours.stdlib_dump([:a, { b: :a }])
      expect(ours.safe_load(dump, permitted_symbols: %i[a b])).to eq([:a, { b: :a }])
      expect { ours.safe_load(dump, permitted_symbols: ["a"]) }
        .to raise_error(RustyStdlib::Marshal::DisallowedClass, "Tried to load unspecified symbol: :b")
      # Struct members and ivar names are no symbol values.
      expect(ours.safe_load(ours.stdlib_dump(spec::Member.new(1)), permitted_classes: [spec::Member],
                                                                   permitted_symbols: [])).to eq(spec::Member.new(1))
    end
  end

  describe "limits" do
    it "refuses nesting past max_depth" do
      nested = (1..5).reduce([0]) { |inner, _| [inner] } # 6 Arrays deep
      dump = ours.stdlib_dump(nested)
      expect(ours.safe_load(dump, max_depth: 6)).to eq(nested)
      expect { ours.safe_load(dump, max_depth: 5) }
        .to raise_error(ArgumentError, "marshal data nested deeper than max_depth (5)")
      deep = ours.stdlib_dump((1..200).reduce([]) { |inner, _| [inner] })
      expect { ours.safe_load(deep) }.to raise_error(ArgumentError, /max_depth \(128\)/)
    end

    it "refuses a declared length past the input's end before making anything" do
      huge_array = "\x04\x08[\x04\xff\xff\xff\x3f".b # 2**30 - 1 elements in 7 bytes
      huge_string = "\x04\x08\"\x04\xff\xff\xff\x3fabc".b
      huge_hash = "\x04\x08{\x04\xff\xff\xff\x3fi\x06i\x06".b
      [huge_array, huge_string, huge_hash].each do |dump|
        expect { ours.safe_load(dump) }.to raise_error(ArgumentError, "marshal data too short")
      end
    end

    it "refuses more input than max_bytes, from a String or an IO" do
      dump = ours.stdlib_dump("x" * 100)
      expect(ours.safe_load(dump, max_bytes: dump.bytesize)).to eq("x" * 100)
      expect { ours.safe_load(dump, max_bytes: 50) }.to raise_error(ArgumentError, "marshal data is over max_bytes (50)")
      expect { ours.safe_load(StringIO.new(dump), max_bytes: 50) }.to raise_error(ArgumentError, /max_bytes/)
      expect(ours.safe_load(StringIO.new(dump))).to eq("x" * 100)
    end

    it "raises what Marshal.load raises for truncated or damaged input" do
      dump = ours.stdlib_dump([1, "two", :three, { 4 => 5.0 }])
      (0...dump.bytesize).each do |cut|
        expect { ours.safe_load(dump.byteslice(0, cut)) }.to raise_error(ArgumentError, "marshal data too short")
        expect { ours.stdlib_load(dump.byteslice(0, cut)) }.to raise_error(ArgumentError, "marshal data too short")
      end
      expect { ours.safe_load("\x04\x08X".b) }.to raise_error(ArgumentError, "dump format error(0x58)")
      expect { ours.safe_load("\x03\x00[\x00".b) }.to raise_error(TypeError, /incompatible marshal file format/)
    end
  end

  it "gives both walks the same answer on damaged dumps" do
    skip "the native extension is not loaded" unless RustyStdlib.native?
    rng = Random.new(Kernel.rand(2**32))
    (stress ? 20 : 400).times do
      dump = ours.stdlib_dump(MarshalHelper::GraphGenerator.new(rng, 30).generate).b
      damaged = dump.dup
      rng.rand(1..4).times { damaged.setbyte(rng.rand(2...damaged.bytesize), rng.rand(256)) }
      damaged = damaged.byteslice(0, rng.rand(2..damaged.bytesize)) if rng.rand < 0.3
      names = dump.scan(/[A-Z][A-Za-z:]+/).uniq.sample(3, random: rng)
      expect_walks_agree(damaged, names, rng.rand < 0.5 ? nil : %w[a], rng.rand(1..8))
    end
  end

  it "serves as a cache coder (dump / load)" do
    coder = RustyStdlib::Marshal::SafeCoder.new(permitted_classes: [Time])
    time = Time.at(0).utc
    expect(coder.load(coder.dump([time, "v"]))).to eq([time, "v"])
    expect { coder.load(coder.dump(spec::Plain.new)) }.to raise_error(RustyStdlib::Marshal::DisallowedClass)
  end
end
