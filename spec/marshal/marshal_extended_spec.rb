# frozen_string_literal: true

require_relative "marshal_helper"

# Extended objects (`e` records) and `_dump_data`/`_load_data` objects (`d` records),
# compared with the stdlib: dump bytes, loaded graphs (with the modules each object is
# extended with), hook calls in order, and errors.
module RustyMarshalExtSpec
  LOG = []

  module Inner; end

  # Extending with Outer also brings Inner: MRI writes both as `e` records.
  module Outer
    include Inner
  end

  module Other; end

  module Nested
    module Deep; end
  end

  # A module with a prepended one: left to the stdlib on dump.
  module Prepended; end

  module WithPrepend
    prepend Prepended
  end

  # A module whose marshal_dump turns an extended object into a `U` record.
  module Dumping
    def marshal_dump = (LOG << :module_marshal_dump) && 1
    def marshal_load(_) = LOG << :module_marshal_load
  end

  # Gives an extended T_DATA object the _dump_data its class lacks.
  module DataDumping
    def _dump_data = (LOG << :module_dump_data) && 7
  end

  # A module that would make an extended Hash key hash in Ruby.
  module Hashing
    def hash
      LOG << :hash
      1
    end
  end

  # Records whether Marshal.load calls a module's extension hooks (MRI does not).
  module Hooked
    def self.extend_object(obj)
      LOG << :extend_object
      super
    end

    def self.extended(_obj) = LOG << :extended
  end

  class Plain
    def initialize(a = 1) = @a = a
  end

  Pair = Struct.new(:left, :right)
  class Str < String; end
  class Rng < Range; end
  class Re < Regexp; end

  # A Range subclass whose initialize is Ruby code: loading it is the stdlib's.
  class OwnInitRange < Range
    def initialize(*args)
      LOG << :range_initialize
      super
    end
  end
  class Ary < Array; end
  class Hsh < Hash; end

  # T_DATA classes (Mutex and Queue are core T_DATA) with `_dump_data`/`_load_data`.
  # The payload is kept outside the object: ivars on a T_DATA object make an `I` record.
  class Data < Thread::Mutex
    PAYLOADS = {}.compare_by_identity

    def self.with(payload) = new.tap { |d| PAYLOADS[d] = payload }

    def payload = PAYLOADS[self]

    def _dump_data
      LOG << [:_dump_data, payload.class]
      payload
    end

    def _load_data(data)
      LOG << [:_load_data, data.class]
      PAYLOADS[self] = data
    end
  end

  # An Enumerator (T_DATA too), loaded uninitialized.
  class EnumData < Enumerator
    def _dump_data = (LOG << :enum_dump) && [:e]
    def _load_data(data) = LOG << [:enum_load, data]
  end

  class NoLoadData < Thread::Mutex
    def _dump_data = (LOG << :no_load_dump) && "x"
  end

  class SameClassData < Thread::Mutex
    def _dump_data = SameClassData.new
  end

  class RaisingDumpData < Thread::Mutex
    def _dump_data = raise(IOError, "_dump_data failed")
  end

  class RaisingLoadData < Thread::Mutex
    def _dump_data = 1
    def _load_data(_) = raise(EncodingError, "_load_data failed")
  end

  # _dump_data adds (`@add`), removes (`@remove`) or swaps (`@swap`) ivars.
  class IvarData < Thread::Mutex
    def _dump_data
      LOG << [:ivar_dump, instance_variables]
      if instance_variable_defined?(:@add) then instance_variable_set(:"@n#{instance_variables.size}", 1)
      elsif instance_variable_defined?(:@remove) then remove_instance_variable(:@remove)
      elsif instance_variable_defined?(:@swap) then remove_instance_variable(:@swap) && instance_variable_set(:@new, 2)
      end
      0
    end

    def _load_data(data) = LOG << [:ivar_load, data]
  end

  NotAModule = 5

  # Objects the examples gave a singleton class (by extending them or asking for it).
  WITH_SINGLETON = {}.compare_by_identity

  def self.ext(obj, *modules)
    modules.each { |m| obj.extend(m) }
    WITH_SINGLETON[obj] = true
    obj
  end

  def self.with_singleton(obj)
    obj.singleton_class
    WITH_SINGLETON[obj] = true
    obj
  end

  # Whether dumping `value` asks whether a singleton class is bare: some object in it
  # has a singleton class and no marshal_dump/_dump (those are written without the check).
  def self.checks_a_singleton?(value, seen = {}.compare_by_identity)
    return false if seen.key?(value) || value.is_a?(Module)

    seen[value] = true
    return true if WITH_SINGLETON.key?(value) && !value.respond_to?(:marshal_dump, true) && !value.respond_to?(:_dump, true)

    parts = value.instance_variables.map { |iv| value.instance_variable_get(iv) }
    parts += value.to_a if value.is_a?(Array) || value.is_a?(Struct)
    parts += value.to_a.flatten(1) if value.is_a?(Hash)
    parts << value.payload if value.is_a?(Data)
    parts.any? { |part| checks_a_singleton?(part, seen) }
  end
end

RSpec.describe "RustyStdlib::Marshal extended and _dump_data objects, Time ivars, Range and Regexp subclasses" do
  spec = RustyMarshalExtSpec
  ours = RustyStdlib::Marshal
  stdlib = MarshalHelper::Stdlib
  fallback = RustyStdlib::Marshal::FALLBACK

  def native_dump(obj) = RustyStdlib::Marshal.native_dump(obj, nil)

  # A `:` record of an ASCII name.
  def sym(name) = ":#{(name.size + 5).chr}#{name}"

  def native_load(bytes, freeze: false) = RustyStdlib::Marshal.native_load(bytes, freeze, RustyStdlib::Marshal::FALLBACK)

  # The modules `obj` is extended with (nil without a singleton class worth naming).
  def self.extensions(obj)
    return nil if obj.frozen? || obj.is_a?(Module) || [nil, true, false].include?(obj) || obj.is_a?(Numeric) || obj.is_a?(Symbol)

    obj.singleton_class.ancestors.take_while { |m| m != obj.class }.map { |m| m.singleton_class? ? :singleton : m }
  end

  # MarshalHelper.describe plus the extension modules of every object in the graph.
  def self.describe_graph(obj)
    seen = {}.compare_by_identity
    exts = []
    walk = lambda do |o|
      next if seen.key?(o) || o.is_a?(Module)

      seen[o] = true
      exts << extensions(o)
      case o
      when Array, Struct then o.to_a.each(&walk)
      when Hash then o.each { |k, v| walk.(k); walk.(v) }
      end
      o.instance_variables.each { |iv| walk.(o.instance_variable_get(iv)) }
      if o.is_a?(RustyMarshalExtSpec::Data)
        exts << :payload
        walk.(o.payload)
      end
    end
    walk.(obj)
    payloads = seen.keys.grep(RustyMarshalExtSpec::Data).map { |d| MarshalHelper.describe(d.payload) }
    [MarshalHelper.describe(obj), exts, payloads]
  end

  def expect_same_dump(obj)
    expect_parity(MarshalHelper::Stdlib, RustyStdlib::Marshal) { |m| m.dump(obj) }.value
  end

  # Runs the block with both implementations, comparing results and the hook calls.
  def expect_same_calls(&block)
    results = [MarshalHelper::Stdlib, RustyStdlib::Marshal].map do |m|
      RustyMarshalExtSpec::LOG.clear
      outcome = Parity.outcome(stress: m == RustyStdlib::Marshal && Parity::GC_STRESS) { block.call(m) }
      [outcome, RustyMarshalExtSpec::LOG.dup]
    end
    expect(results[1]).to eq(results[0])
    results[0]
  end

  def expect_same_load(bytes, freeze: false)
    expect_same_calls { |m| self.class.describe_graph(m.load(bytes, freeze: freeze)) }
  end

  shared = Object.new
  native = {
    "a plain object extended with a module that includes another" => -> { spec.ext(spec::Plain.new, spec::Outer) },
    "an object extended with two modules and a nested one" =>
      -> { spec.ext(spec::Plain.new, spec::Other, spec::Outer, spec::Nested::Deep) },
    "an extended object linked twice" => -> { [spec.ext(shared, spec::Other)] * 2 },
    "Strings (with encodings and ivars)" =>
      -> { [spec.ext(+"abc", spec::Other), spec.ext("caf\u00e9".encode("ISO-8859-1"), spec::Outer), spec.ext("b".b, spec::Other),
            spec.ext(MarshalHelper.with_ivars(+"iv", :@x, 1), spec::Other)] },
    "a Regexp" => -> { spec.ext(Regexp.new("re", "i"), spec::Other) },
    "Arrays and Hashes (with defaults and ivars)" =>
      -> { [spec.ext([1, [2]], spec::Outer), spec.ext({ a: 1 }, spec::Other), spec.ext(Hash.new(5), spec::Other),
            spec.ext(MarshalHelper.with_ivars([], :@y, 2), spec::Other), spec.ext({}.compare_by_identity, spec::Other)] },
    "subclasses of String, Array and Hash" =>
      -> { [spec.ext(spec::Str.new("s"), spec::Other), spec.ext(spec::Ary.new([1]), spec::Outer), spec.ext(spec::Hsh.new, spec::Other)] },
    "a Struct" => -> { spec.ext(spec::Pair.new(1, spec.ext(+"x", spec::Other)), spec::Outer) },
    "an exception" => -> { spec.ext(RuntimeError.new("boom"), spec::Other) },
    # (A String key is copied without its singleton class: an Array is not.)
    "an extended Hash key" => -> { { spec.ext([1], spec::Other) => spec.ext([], spec::Other) } },
    "an object with a bare singleton class" => -> { spec.with_singleton(spec::Plain.new) },
    "a _dump_data object" => -> { spec::Data.with([1, "two", :three]) },
    "_dump_data objects linked, nested and extended" =>
      -> { d = spec::Data.with([spec::Data.with(nil)]); [d, d, spec.ext(spec::Data.with([spec.ext(+"in", spec::Other)]), spec::Outer)] },
    "a _dump_data object whose data holds itself" => -> { d = spec::Data.new; spec::Data::PAYLOADS[d] = [d]; d },
    "an Enumerator subclass with _dump_data" => -> { spec::EnumData.allocate },
    # MRI asks the object for marshal_dump/_dump and writes no `e` records for them.
    "hooked objects with singleton methods and extensions" =>
      -> { [RustyMarshalSpec::MDump.new([1]).tap { |o| def o.x = 1 }, spec.ext(RustyMarshalSpec::UDump.new("u"), spec::Other)] },
    "an extended Time and one with a singleton method" =>
      -> { [spec.ext(Time.at(0, in: "+09:00"), spec::Other), Time.at(1).tap { |t| def t.x = 1 }] },
    "_dump_data objects with ivars" =>
      -> { d = MarshalHelper.with_ivars(spec::Data.with(1), :@iv, [2], :@other, "x"); [d, spec.ext(d, spec::Other), d] },
    "an extended _dump_data object with ivars" =>
      -> { spec.ext(MarshalHelper.with_ivars(spec::Data.with([1]), :@iv, 2), spec::Outer) }
  }

  # Range subclasses (o records through Range's compat dumper and loader).
  native["Range subclasses, one extended"] =
    -> { r = spec::Rng.new(1, 2); [r, r, spec::Rng.new("a", "c", true), spec.ext(spec::Rng.new(nil, 2.5), spec::Other)] }

  # Regexp subclasses: MRI reads the Regexp inside the `C` without its encoding ivar (so
  # with Ruby 1.8's escape step) and sets the encoding on the Regexp afterwards.
  native["Regexp subclasses"] = lambda do
    [spec::Re.new("ab+c", "i"), spec::Re.new("\\d+\\h\\\\k\\S"), spec::Re.new("caf\u00e9"), spec::Re.new("x".b),
     spec::Re.new("\u65e5".encode("EUC-JP")), spec::Re.new("(?<n>x)\\k<n>", Regexp::EXTENDED | Regexp::MULTILINE),
     MarshalHelper.with_ivars(spec::Re.new("iv"), :@note, [1]), spec.ext(spec::Re.new("e"), spec::Other)]
  end

  # Times with instance variables (Time#_dump copies them onto its String).
  native["Times with ivars"] = lambda do
    t = MarshalHelper.with_ivars(Time.at(0, 5, :nsec, in: "+09:00"), :@note, "n", :@list, [1])
    [t, t, MarshalHelper.with_ivars(Time.at(1).utc, :@n, 1), MarshalHelper.with_ivars(Time.now, :@m, { k: Time.at(2) })]
  end

  # Ruby 3.1 dumps the Time again inside itself (and loads it); 3.3 raises.
  dump_only = {
    "a Time with an ivar that holds it" =>
      -> { t = Time.at(0, 5, :nsec, in: "+09:00"); t.instance_variable_set(:@self_ref, [t]); [t, t] }
  }

  # Dumped natively; loading them is MRI's TypeError (Plain has no marshal_load).
  dump_only.merge!(
    "a T_DATA object given _dump_data by a module" =>
      -> { [spec.ext(spec::NoLoadData.new, spec::DataDumping), spec.ext(Thread::Mutex.new, spec::DataDumping)] },
    "marshal_dump from an extended module" =>
      -> { [spec.ext(spec::Plain.new, spec::Dumping), spec.ext(+"str", spec::Dumping), spec.ext({}, spec::Other, spec::Dumping)] }
  )

  # MRI raises "singleton can't be dumped" for a singleton class with undef_method
  # entries; only Ruby 3.2+ lists them (undefined_instance_methods), so on 3.1 objects
  # with a singleton class and no dump hook are dumped by the stdlib.
  singletons_native = Module.method_defined?(:undefined_instance_methods)

  describe "dump" do
    native.merge(dump_only).each do |label, build|
      it "writes the stdlib's bytes for #{label}, natively, running the hooks as the stdlib does" do
        value = build.call
        if singletons_native || !spec.checks_a_singleton?(value)
          # Decided natively: the bytes, or MRI's error raised natively.
          expect(begin; native_dump(value); rescue RuntimeError => e; e; end).not_to be_nil
        else
          expect(native_dump(value)).to be_nil
        end
        expect_same_calls { |m| m.dump(value) }
      end
    end

    fallbacks = {
      "a singleton class with a method" => -> { spec.ext(spec::Plain.new, spec::Other).tap { |o| def o.x = 1 } },
      "a singleton class with an ivar" =>
        -> { spec.ext(spec::Plain.new, spec::Other).tap { |o| o.singleton_class.instance_variable_set(:@i, 1) } },
      "a singleton class with a class variable" =>
        -> { spec::Plain.new.tap { |o| o.singleton_class.class_variable_set(:@@cv, 1) } },
      "a singleton class whose only entry is an undef_method" =>
        -> { spec.ext(spec::Plain.new, spec::Other).tap { |o| o.singleton_class.send(:undef_method, :to_s) } },
      "a singleton class with a private method" =>
        -> { spec::Plain.new.tap { |o| o.singleton_class.send(:define_method, :pm) { 1 }; o.singleton_class.send(:private, :pm) } },
      "an anonymous module" => -> { [spec.ext(+"s", Module.new)] },
      "a module with a prepended module" => -> { spec.ext(spec::Plain.new, spec::WithPrepend) },
      "a module prepended to the singleton class" => -> { spec::Plain.new.tap { |o| o.singleton_class.prepend(spec::Other) } },
      "a singleton class whose respond_to? is Ruby code" =>
        -> { spec.ext(spec::Plain.new, spec::Other).tap { |o| def o.respond_to?(*) = super } },
      "a T_DATA object without _dump_data" => -> { [1, Thread::Mutex.new] },
      "an extended T_DATA object without _dump_data" => -> { spec.ext(Thread::Mutex.new, spec::Other) },
      "a T_DATA object without _dump_data after one given it by a module" =>
        -> { [spec.ext(Thread::Mutex.new, spec::DataDumping), Thread::Mutex.new] },
      "a _dump_data object of an anonymous class" => -> { Class.new(spec::Data).with(1) },
    }
    fallbacks.each do |label, build|
      it "leaves #{label} to the stdlib before any hook runs" do
        value = build.call
        expect(native_dump(value)).to be_nil
        expect_same_calls { |m| m.dump(value) }
      end
    end

    it "raises what _dump_data raises, and MRI's error for a result of the object's own class" do
      [spec::RaisingDumpData.new, [1, spec::SameClassData.new]].each do |value|
        expect { native_dump(value) }.to raise_error(StandardError)
        expect_same_calls { |m| m.dump(value) }
      end
    end

    it "writes (or raises) what the stdlib does when _dump_data changes the object's ivars" do
      [[], [:@add], %i[@add @x], [:@remove], %i[@remove @x], [:@swap], %i[@x @swap]].each do |names|
        build = -> { names.each_with_object(spec::IvarData.new) { |n, d| d.instance_variable_set(n, 1) } }
        results = [stdlib, ours].map do |m|
          spec::LOG.clear
          [Parity.outcome(stress: m == ours && Parity::GC_STRESS) { m.dump([build.call]) }, spec::LOG.dup]
        end
        expect(results[1]).to eq(results[0]), names.inspect
        expect(native_dump([build.call])).not_to be_nil unless results[0][0].raised
      end
    end

    it "honours a depth limit through d and e records as the stdlib does" do
      value = [spec::Data.with([[1]]), spec.ext([spec.ext(spec::Plain.new, spec::Other)], spec::Outer)]
      (1..5).each do |limit|
        expect_same_calls { |m| m.dump(value, limit) }
      end
    end
  end

  describe "seeded random graphs" do
    # Extends some of the graph's objects (not frozen ones, which can't be).
    def extend_some(obj, rng, seen = {}.compare_by_identity)
      return if seen.key?(obj) || obj.frozen? || obj.is_a?(Module)

      seen[obj] = true
      modules = [RustyMarshalExtSpec::Other, RustyMarshalExtSpec::Outer, RustyMarshalExtSpec::Nested::Deep]
      obj.extend(modules[rng.rand(modules.size)]) if rng.rand < 0.5
      children = case obj
                 when Array, Struct then obj.to_a
                 when Hash then obj.keys + obj.values
                 else []
                 end
      children += obj.instance_variables.map { |iv| obj.instance_variable_get(iv) }
      children.each { |c| extend_some(c, rng, seen) }
    end

    it "dumps and loads them like the stdlib, both ways" do
      rng = Random.new(20_261_130)
      extended = 0
      under_stress_keep((1..60).to_a, 6).each do
        graph = MarshalHelper::GraphGenerator.new(rng, 25).generate
        extend_some(graph, rng)
        outcome, = expect_same_calls { |m| m.dump(graph) }
        next if outcome.raised

        extended += 1 if outcome.value.include?("e:")
        expect_same_load(outcome.value)
        expect_same_load(outcome.value, freeze: true)
      end
      expect(extended).to be >= (Parity::GC_STRESS ? 1 : 10) # the graphs did hold extended objects
    end
  end

  describe "load" do
    # With freeze: true a String subclass is the stdlib's (MRI re-classes an interned one).
    freeze_fallbacks = ["subclasses of String, Array and Hash"]
    native.each do |label, build|
      it "loads the stdlib's dump of #{label} like the stdlib, natively, with and without freeze" do
        bytes = stdlib.dump(build.call)
        expect(native_load(bytes)).not_to equal(fallback)
        expect_same_load(bytes)
        expect(native_load(bytes, freeze: true)).not_to equal(fallback) unless freeze_fallbacks.include?(label)
        expect_same_load(bytes, freeze: true)
      end
    end

    dump_only.each do |label, build|
      it "loads the stdlib's dump of #{label} like the stdlib" do
        value = build.call
        bytes = begin
          stdlib.dump(value)
        rescue RuntimeError
          next # Ruby 3.3 can't dump it
        end
        expect_same_load(bytes)
      end
    end

    it "does not call extend_object or extended, as the stdlib does not" do
      bytes = stdlib.dump(spec.ext(spec::Plain.new, spec::Hooked))
      expect(native_load(bytes)).not_to equal(fallback)
      result = expect_same_load(bytes)
      expect(result.last).to eq([])
    end

    it "leaves extended Hash keys whose modules hash in Ruby to the stdlib" do
      bytes = stdlib.dump({ spec.ext([1], spec::Hashing) => 1 })
      expect(native_load(bytes)).to equal(fallback)
      expect_same_load(bytes)
    end

    it "leaves what MRI treats specially after e records to the stdlib, with its errors" do
      prepended = stdlib.dump(spec::Plain.new.tap { |o| o.singleton_class.prepend(spec::Other) })
      other = "e#{sym('RustyMarshalExtSpec::Other')}"
      [prepended,
       "\x04\be#{sym('RustyMarshalExtSpec::NotAModule')}o#{sym('Object')}\x00", # not a module: ArgumentError
       "\x04\b#{other}i\x06", # a Fixnum can't be extended: TypeError
       "\x04\b[\x06#{other}@\x00", # a link to an Array being read
       "\x04\b#{other}c\vObject", # a class
       "\x04\b#{other}U#{sym('RustyMarshalExtSpec::Dumping')}i\x06", # extended before marshal_load
       "\x04\b#{other}Iu#{sym('RustyMarshalExtSpec::Str')}\x06x\x00"].map(&:b).each do |bytes|
        expect(native_load(bytes)).to equal(fallback), bytes.inspect
        expect_parity(stdlib, ours) { |m| self.class.describe_graph(m.load(bytes)).to_s }
      end
    end

    it "leaves d records it cannot load to the stdlib, with its errors" do
      no_load = stdlib.dump(spec::NoLoadData.new)
      not_data = "\x04\bd#{sym('Object')}0".b # an allocated object that is not T_DATA
      no_alloc = "\x04\bd#{sym('Integer')}0".b
      [no_load, not_data, no_alloc].each do |bytes|
        expect(native_load(bytes)).to equal(fallback), bytes.inspect
        expect_same_calls { |m| m.load(bytes) }
      end
    end

    it "leaves an extended d record whose data takes MRI's module list to the stdlib" do
      # MRI hands the `e` modules to the data record: here the String gets them all.
      bytes = stdlib.dump(spec.ext(spec::Data.with(spec.ext(+"in", spec::Other)), spec::Outer))
      expect(native_load(bytes)).to equal(fallback)
      expect_same_load(bytes)
    end

    it "leaves Range subclasses with their own initialize or with ivars to the stdlib" do
      [spec::OwnInitRange.new(1, 2), spec::Rng.new(1, 2).tap { |r| r.instance_variable_set(:@iv, 1) }].each do |v|
        bytes = stdlib.dump(v)
        expect(native_load(bytes)).to equal(fallback)
        expect_same_load(bytes)
      end
    end

    it "raises what _load_data raises" do
      bytes = stdlib.dump([1, spec::RaisingLoadData.new])
      expect { native_load(bytes) }.to raise_error(EncodingError, "_load_data failed")
      expect_same_calls { |m| m.load(bytes) }
    end

    it "runs no hook before finding the input outside the native set" do
      bytes = stdlib.dump([spec::Data.with(1), spec::Plain.new.tap { |o| o.singleton_class.prepend(spec::Other) }])
      spec::LOG.clear
      expect(native_load(bytes)).to equal(fallback)
      expect(spec::LOG).to eq([])
      expect_same_load(bytes)
    end
  end
end
