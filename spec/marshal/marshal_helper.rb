# frozen_string_literal: true

require "stringio"
require "tmpdir"

# Plain classes whose instances the native code writes and reads as `o` records.
module RustyMarshalSpec
  class Point
    attr_accessor :x, :y

    def initialize(x = nil, y = nil)
      @x = x
      @y = y
    end
  end

  class Node
    attr_accessor :value, :next_node
  end

  class Empty; end

  # Core subclasses: `C` records.
  class MyString < String; end
  class MyArray < Array; end
  class MyHash < Hash; end
  class SubMyHash < MyHash; end

  # A Hash subclass whose `default` is Ruby code (dumping it calls that): the stdlib's.
  class DefaultingHash < Hash
    def default(key = nil)
      key.nil? ? super() : "default for #{key}"
    end
  end

  # A String subclass with its own `hash` (inserting one as a key calls it): the stdlib's.
  class HashingString < String
    def hash
      0
    end
  end

  Pair = Struct.new(:left, :right)
  Keyed = Struct.new(:a, :b, keyword_init: true)
  KeyedOne = Struct.new(:a, keyword_init: true)
  One = Struct.new(:a)
  class SubPair < Pair; end
  class SubKeyed < Keyed; end

  # Marshal.load must not call a Struct's own initialize.
  Initialized = Struct.new(:left, :right) do
    def initialize(*args)
      super
      self.right = :initialized
    end
  end
  DataPoint = Data.define(:q) if defined?(Data) && Data.respond_to?(:define)

  # An exception class with an ivar of its own (beside mesg and bt).
  class SpecError < StandardError
    attr_accessor :extra
  end

  # Dump hooks. HOOK_LOG records every call, so specs can check that ours runs each hook
  # exactly as often, in the same order and with the same arguments, as the stdlib.
  HOOK_LOG = []

  # `U` records: marshal_dump's result is dumped in the object's place.
  class MDump
    attr_reader :data

    def initialize(data = nil)
      @data = data
    end

    def marshal_dump
      HOOK_LOG << [:marshal_dump, @data.class]
      @data
    end

    def marshal_load(data)
      HOOK_LOG << [:marshal_load, data.class]
      @data = data
    end
  end

  # `u` records: a String (with its encoding and any ivars) and the class's _load.
  class UDump
    attr_reader :text

    def initialize(text = "")
      @text = text
    end

    def _dump(level)
      HOOK_LOG << [:_dump, level]
      @text
    end

    def self._load(str)
      HOOK_LOG << [:_load, str, str.encoding.name, str.instance_variables.map { |iv| [iv, str.instance_variable_get(iv)] }]
      new(str)
    end
  end

  # marshal_dump returning the object's own data plus a private hook pair.
  class PrivateHooks
    attr_reader :v

    def initialize(v = nil)
      @v = v
    end

    private

    def marshal_dump = (HOOK_LOG << :private_marshal_dump) && [@v]
    def marshal_load(a) = (HOOK_LOG << :private_marshal_load) && (@v = a.first)
  end

  # Hooks that misbehave the ways MRI checks for.
  class RaisingDump
    def marshal_dump = raise(IOError, "marshal_dump failed")
  end

  class RaisingLoad
    def marshal_dump = 1
    def marshal_load(_) = raise(IOError, "marshal_load failed")
  end

  class RaisingUnderscoreLoad
    def _dump(_) = "x"
    def self._load(_) = raise(EncodingError, "_load failed")
  end

  class SameClassDump
    def marshal_dump = SameClassDump.allocate
  end

  class NonStringDump
    def _dump(_) = :not_a_string
  end

  # Hooks that keep a continuation of themselves (`callcc`), to be called after the
  # dump or load has ended: MRI's "Marshal.dump reentered at marshal_dump".
  class ReenterMarshalDump
    attr_reader :cc

    def marshal_dump
      callcc { |c| @cc = c }
      1
    end
  end

  class ReenterUnderscoreDump
    attr_reader :cc

    def _dump(_limit)
      callcc { |c| @cc = c }
      "d"
    end
  end

  class ReenterLoad
    class << self
      attr_accessor :cc
    end

    def marshal_dump = 1

    def marshal_load(_data)
      callcc { |c| ReenterLoad.cc = c }
    end
  end

  # A load port whose first `getbyte`/`read` keeps a continuation of itself.
  class ReenterPort
    attr_reader :cc

    def initialize(bytes, method)
      @io = StringIO.new(bytes)
      @method = method
    end

    def getbyte
      callcc { |c| @cc ||= c } if @method == :getbyte
      @io.getbyte
    end

    def read(n)
      callcc { |c| @cc ||= c } if @method == :read
      @io.read(n)
    end
  end

  # A new, empty class under the fixed name `name`. Ruby 3.3 gives a class's objects one
  # "too complex" shape (their ivars in a table) once the class has seen 8 shape
  # variations, after which adding an ivar no longer changes an object's shape, and
  # neither MRI nor ours then notices a hook adding one. A spec that runs the stdlib and
  # ours on objects of a shared class could see that limit reached between the two runs
  # (it depends on which specs ran before), so each run gets its own class.
  def self.fresh_class(name)
    remove_const(name) if const_defined?(name, false)
    const_set(name, Class.new)
  end

  # A dump hook that changes the object whose ivars are being written when it is
  # reached (MRI 3.1's countdown, 3.3's shape check: "instance variable added to ...").
  class IvarChanger
    def initialize(owner, change)
      @owner = owner
      @change = change
    end

    def marshal_dump
      case @change
      when :add then @owner.instance_variable_set(:@added, 1)
      when :remove_later then @owner.remove_instance_variable(:@z)
      when :remove_earlier then @owner.remove_instance_variable(:@a)
      when :set_later then @owner.instance_variable_set(:@z, "changed")
      when :freeze then @owner.freeze
      end
      [@change]
    end

    def marshal_load(data)
      @change = data.first
    end
  end

  class NoMarshalLoad
    def marshal_dump = 1
  end
end

# Helpers for the Marshal parity specs.
module MarshalHelper
  OURS = RustyStdlib::Marshal
  NOT_GIVEN = Object.new.freeze

  # The stdlib's Marshal with the same call shape as ours (RustyStdlib::Marshal.dump/load).
  module Stdlib
    # Explicit parameters: a splat would drop the ruby2_keywords flag of a Hash argument.
    def self.dump(obj, port = NOT_GIVEN, limit = NOT_GIVEN)
      if NOT_GIVEN.equal?(port)
        OURS.stdlib_dump(obj)
      elsif NOT_GIVEN.equal?(limit)
        OURS.stdlib_dump(obj, port)
      else
        OURS.stdlib_dump(obj, port, limit)
      end
    end

    def self.load(source, proc = nil, freeze: false)
      OURS.stdlib_load(source, proc, freeze: freeze)
    end
  end

  # `obj` with the given instance variables set (name, value, name, value, ...).
  def self.with_ivars(obj, *pairs)
    pairs.each_slice(2) { |name, value| obj.instance_variable_set(name, value) }
    obj
  end

  # A structural description of a loaded object graph: classes, values, encodings,
  # frozenness, default values, and which objects are the same object (shared
  # references and cycles). Two loads agree iff their descriptions are ==.
  def self.describe(obj, seen = {}.compare_by_identity)
    case obj
    when nil, true, false, Integer then return [obj.class, obj]
    when Symbol then return [Symbol, obj, obj.encoding]
    end
    return [:same_as, seen[obj]] if seen.key?(obj)

    seen[obj] = seen.size
    frozen = obj.frozen?
    # Instance variables of any object (Strings, Arrays, Hashes, Structs included).
    ivars = obj.instance_variables.map { |iv| [iv, describe(obj.instance_variable_get(iv), seen)] }
    case obj
    when Float
      [Float, [obj].pack("G"), frozen]
    when String
      # ascii_only? and valid_encoding? read the coderange, which String#eql? also uses.
      [obj.class, obj.b, obj.encoding, frozen, ivars, obj.ascii_only?, obj.valid_encoding?]
    when Array
      [obj.class, frozen, obj.map { |e| describe(e, seen) }, ivars]
    when Time
      [obj.class, frozen, obj.to_r, obj.utc_offset, obj.zone, obj.utc?, obj.instance_variables]
    when Hash
      [obj.class, frozen, obj.compare_by_identity?, describe(obj.default, seen), obj.default_proc&.class,
       Hash.ruby2_keywords_hash?(obj), obj.map { |k, v| [describe(k, seen), describe(v, seen)] }, ivars]
    when Regexp
      [obj.class, frozen, obj.source.b, obj.options, obj.encoding, obj.fixed_encoding?, ivars]
    else
      inspected = obj.inspect
      inspected = nil if inspected.match?(/0x\h{8,}/) # addresses differ between two loads
      [obj.class, frozen, inspected, ivars]
    end
  end

  # Seeded random object graphs of the natively supported types, with shared references,
  # cycles, every string encoding kind and awkward numbers.
  class GraphGenerator
    ENCODINGS = [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII, Encoding::Shift_JIS,
                 Encoding::EUC_JP, Encoding::Windows_1252, Encoding::UTF_16LE, Encoding::ISO_8859_1].freeze
    WORDS = ["", "a", "hello", "caf\u00e9", "\u65e5\u672c", "x" * 40, "tab\tnl\n", "\u00ff\u0100"].freeze

    def initialize(rng, max_nodes)
      @rng = rng
      @budget = max_nodes
      @pool = []
      @open = {}.compare_by_identity # Arrays, Hashes and Structs still being filled
    end

    def generate
      node(0)
    end

    private

    def node(depth)
      @budget -= 1
      if @pool.any? && @rng.rand < 0.12
        return @pool[@rng.rand(@pool.size)]
      end
      kind = depth > 5 || @budget <= 0 ? @rng.rand(7) : @rng.rand(11)
      value = case kind
              when 0 then scalar
              when 1, 5 then integer
              when 2 then float
              when 3 then string
              when 4 then symbol
              when 6 then time
              when 7 then array(depth)
              when 8 then hash(depth)
              when 9 then object(depth)
              else @rng.rand < 0.5 ? hooked(depth) : array(depth)
              end
      @pool << value unless value.nil? || value == true || value == false
      value
    end

    def scalar
      case @rng.rand(10)
      when 7 then regexp
      when 8 then [Rational(@rng.rand(-99..99), @rng.rand(1..99)), Complex(@rng.rand(9), float), Rational(2**70, 3)].sample(random: @rng)
      when 9 then [(@rng.rand(9)..@rng.rand(99)), (1.5...float.then { |f| f.nan? ? 2.0 : f }), ("a".."z"), (@rng.rand(9)..), (..2**70)].sample(random: @rng)
      else [nil, true, false, nil, String, Kernel, RustyMarshalSpec::Point][@rng.rand(7)]
      end
    end

    # Regexps with every kind of encoding MRI writes (none, US-ASCII, UTF-8, others).
    def regexp
      [/re/i, /a\d+b/mx, /caf\u00e9/, /x/n, Regexp.new("\u65e5".encode("EUC-JP")), Regexp.new("[/]", Regexp::EXTENDED)]
        .sample(random: @rng).then { |r| @rng.rand < 0.5 ? Regexp.new(r.source, r.options) : r }
    end

    # Instance variables on a String, Array or Hash (an `I` record around it).
    def maybe_ivars(obj, depth)
      obj.instance_variable_set(%i[@tag @meta].sample(random: @rng), node(depth + 1)) if @rng.rand < 0.1
      obj
    end

    def integer
      case @rng.rand(6)
      when 0 then @rng.rand(-130..130)
      when 1 then @rng.rand(-(2**31)..(2**31))
      when 2 then [2**30, 2**30 - 1, -(2**30), -(2**30) - 1, 2**62 - 1, -(2**62), 2**62, 2**64][@rng.rand(8)]
      when 3 then @rng.rand(2**200) * (@rng.rand(2).zero? ? 1 : -1)
      when 4 then @rng.rand(-(2**62)..(2**62))
      else @rng.rand(-70_000..70_000)
      end
    end

    def float
      case @rng.rand(4)
      when 0 then [0.0, -0.0, Float::NAN, Float::INFINITY, -Float::INFINITY, 1.0, 100.0, 0.1, 1e16, 1e-5,
                   5e-324, Float::MAX, Float::MIN, 123_456_789.0, 0.0001][@rng.rand(15)]
      when 1 then [@rng.rand(2**64)].pack("Q").unpack1("D").then { |f| f.nan? ? 1.5 : f }
      when 2 then (@rng.rand - 0.5) * (10**@rng.rand(-20..20))
      else @rng.rand(-1000..1000) / 8.0
      end
    end

    def string
      word = WORDS[@rng.rand(WORDS.size)]
      enc = ENCODINGS[@rng.rand(ENCODINGS.size)]
      s = begin
        word.encode(enc)
      rescue EncodingError
        word.dup.force_encoding(enc)
      end
      s = +s
      s = RustyMarshalSpec::MyString.new(s) if @rng.rand < 0.15
      s.instance_variable_set(:@note, @rng.rand(100)) if @rng.rand < 0.1
      s.freeze if @rng.rand < 0.2
      s
    end

    def symbol
      case @rng.rand(4)
      when 0 then %i[a b foo bar_baz E encoding].sample(random: @rng)
      when 1 then "dyn_#{@rng.rand(1000)}".to_sym
      when 2 then ["caf\u00e9", "\u65e5\u672c"].sample(random: @rng).to_sym
      else "caf\u00e9".encode(Encoding::ISO_8859_1).to_sym
      end
    end

    def array(depth)
      a = @rng.rand < 0.15 ? RustyMarshalSpec::MyArray.new : []
      @pool << a
      filling(a) do
        @rng.rand(0..5).times { a << node(depth + 1) }
        a << a if @rng.rand < 0.05
      end
      maybe_ivars(a, depth)
    end

    def filling(container)
      @open[container] = true
      yield
    ensure
      @open.delete(container)
    end

    # Whether `key`'s hash value (which for an Array, Hash, Struct or Range is made
    # from its contents) reads a container still being filled. Such a key goes into
    # its Hash with a hash value that is stale once the container is done, and so it
    # is at load time (the same containers are then being read). A later key eql? to
    # it then joins it only when the two hashes happen to agree in the bits a small
    # Hash compares first, which for objects hashed by address is chance: MRI itself
    # loads such bytes into different graphs from one load to the next. Keys that do
    # this are replaced, so that every graph has one outcome to compare.
    def reads_open_container?(key)
      stack = [key]
      seen = {}.compare_by_identity
      until stack.empty?
        obj = stack.pop
        next if seen.key?(obj)

        seen[obj] = true
        return true if @open.key?(obj)

        case obj
        when Array, Struct then stack.concat(obj.to_a)
        when Hash then stack.concat(obj.to_a.flatten(1))
        when Range then stack.push(obj.begin, obj.end)
        end
      end
      false
    end

    def time
      case @rng.rand(5)
      when 0 then Time.at(@rng.rand(-(2**34)..(2**34)), @rng.rand(10**9), :nsec)
      when 1 then Time.at(@rng.rand(2**31), in: format("%+03d:%02d", @rng.rand(-12..12), [0, 30, 45].sample(random: @rng)))
      when 2 then Time.at(@rng.rand(2**31)).utc
      when 3 then Time.at(Rational(@rng.rand(2**40), @rng.rand(1..999)))
      else Time.utc(@rng.rand(1..3000), @rng.rand(1..12), @rng.rand(1..28), 1, 2, @rng.rand(60) + @rng.rand(1000) / 1000r)
      end
    end

    def object(depth)
      return struct(depth) if @rng.rand < 0.35

      obj = [RustyMarshalSpec::Point, RustyMarshalSpec::Node, RustyMarshalSpec::Empty, Object][@rng.rand(4)].allocate
      @pool << obj
      names = %i[@x @y @value @next_node @other]
      @rng.rand(0..3).times { obj.instance_variable_set(names[@rng.rand(names.size)], node(depth + 1)) }
      obj
    end

    # Objects with dump hooks: marshal_dump data (which may hold the object itself) or a
    # _dump String with an encoding and ivars.
    def hooked(depth)
      if @rng.rand < 0.5
        obj = RustyMarshalSpec::MDump.new
        @pool << obj
        obj.instance_variable_set(:@data, [node(depth + 1), @rng.rand < 0.2 ? obj : node(depth + 1)])
        obj
      else
        text = string.dup
        text = +text.to_s unless text.instance_of?(String)
        text.instance_variable_set(:@meta, node(depth + 1)) if @rng.rand < 0.3
        RustyMarshalSpec::UDump.new(text)
      end
    end

    STRUCTS = [RustyMarshalSpec::Pair, RustyMarshalSpec::Keyed, RustyMarshalSpec::One, RustyMarshalSpec::KeyedOne,
               RustyMarshalSpec::SubPair, RustyMarshalSpec::SubKeyed].freeze

    def struct(depth)
      klass = STRUCTS[@rng.rand(STRUCTS.size)]
      obj = klass.allocate
      @pool << obj
      # Members filled after the struct is in the pool, so it may contain itself.
      filling(obj) { klass.members.each { |m| obj[m] = node(depth + 1) if @rng.rand < 0.8 } }
      obj
    end

    def hash(depth)
      h = @rng.rand < 0.15 ? Hash.new(node(depth + 1)) : {}
      h = RustyMarshalSpec::MyHash.new.replace(h).tap { |m| m.default = h.default } if @rng.rand < 0.15
      h = Hash.ruby2_keywords_hash(h) if h.instance_of?(Hash) && @rng.rand < 0.08
      h.compare_by_identity if @rng.rand < 0.1
      @pool << h
      filling(h) do
        @rng.rand(0..4).times do
          key = node(depth + 1)
          key = integer if reads_open_container?(key)
          h[key] = node(depth + 1)
        end
      end
      maybe_ivars(h, depth)
    end
  end
end
