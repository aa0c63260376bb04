# frozen_string_literal: true

require_relative "marshal_helper"

# The native proc path as load/restore run it when RustyStdlib::Marshal::NATIVE_PROC_LOAD
# is on (it is off, see lib/rusty_stdlib/marshal.rb): native_load_proc, then the stdlib
# where it hands over. Kept proven here so that it can be turned on.
module RustyMarshalNativeProcLoad
  def self.load(source, proc = nil, freeze: false)
    fallback = RustyStdlib::Marshal::FALLBACK
    result = proc ? RustyStdlib::Marshal.native_load_proc(source, freeze, proc, fallback) : fallback
    fallback.equal?(result) ? RustyStdlib::Marshal.stdlib_load(source, proc, freeze: freeze) : result
  end
end

RSpec.describe "RustyStdlib::Marshal.load with a proc" do
  ours = RustyMarshalNativeProcLoad
  stdlib = MarshalHelper::Stdlib
  stress = Parity::GC_STRESS

  # What a proc saw: each argument described (class, value, encoding, frozenness).
  def self.seen(value)
    case value
    when String then [String, value.b, value.encoding.name, value.frozen?, value.instance_variables]
    when Symbol then [Symbol, value, value.encoding.name]
    when Array, Hash then [value.class, value.size, value.frozen?]
    else [value.class, value.inspect.gsub(/0x\h+/, "0x_"), value.frozen?]
    end
  end

  # Procs that record their calls and replace what they get in different ways.
  procs = {
    identity: ->(log) { ->(x) { log << seen(x); x } },
    doubling: ->(log) { ->(x) { log << seen(x); x.is_a?(Integer) ? x * 2 : x } },
    upcasing: ->(log) { ->(x) { log << seen(x); x.is_a?(String) && !x.frozen? ? x.upcase : x } },
    # Replaces the E flags of Strings and Symbols too, and Hash keys.
    flags: ->(log) { ->(x) { log << seen(x); x == true ? :yes : x == false ? 0 : x } },
    nils: ->(log) { ->(x) { log << seen(x); x.is_a?(Array) || x.is_a?(Hash) ? x : nil } },
    keys: ->(log) { ->(x) { log << seen(x); x.is_a?(Symbol) ? [x] : x } }
  }

  # Both load `bytes` with each proc: the calls it got, the result or the exception.
  def expect_same_proc_load(bytes, make_proc, freeze: false)
    expect_parity(MarshalHelper::Stdlib, RustyMarshalNativeProcLoad) do |m|
      log = []
      result = begin
        MarshalHelper.describe(m.load(bytes, make_proc.call(log), freeze: freeze))
      rescue StandardError => e
        [e.class, Parity.without_addresses(e.message)]
      end
      [result, log]
    end
  end

  def native_with_proc?(bytes)
    calls = 0
    fallback = RustyStdlib::Marshal::FALLBACK
    result = RustyStdlib::Marshal.native_load_proc(bytes, false, ->(x) { calls += 1; x }, fallback)
    [!fallback.equal?(result), calls]
  end

  shared = +"shared"
  cyclic = [1]
  cyclic << cyclic
  cyclic_hash = {}
  cyclic_hash[:self] = cyclic_hash
  values = [
    nil, true, false, 0, -1, 2**31, 2**70, -(2**64), 1.5, -0.0, Float::INFINITY, "abc", "abc".b, "caf\u00e9",
    "\u00ff".encode("ISO-8859-1").force_encoding("ASCII-8BIT"), :sym, :"caf\u00e9", [:a, :a, :b, :a],
    [shared, shared, [shared]], cyclic, cyclic_hash, { "k" => 1, k: [2.5, nil], 3 => "v" }, Hash.new("dflt").merge(a: 1),
    MarshalHelper.with_ivars(+"iv", :@a, 1, :@b, "x"), MarshalHelper.with_ivars([1, 2], :@c, [3]),
    MarshalHelper.with_ivars({ a: 1 }, :@d, :e), Hash.ruby2_keywords_hash({ k: 1, "s" => 2 }),
    [[[[[1]]]], { [1] => 2 }, { { a: 1 } => [1] }], Array.new(50) { |i| i.even? ? "s#{i}" : :"y#{i % 3}" }
  ]

  it "calls the proc for the same objects in the same order and uses what it returns" do
    under_stress_keep(values.shuffle(random: Random.new(8)), 8).each do |v|
      bytes = Marshal.dump(v)
      native, = native_with_proc?(bytes)
      expect(native).to be(true), "fell back for #{v.inspect}"
      under_stress_keep(procs.values, 3).each do |make|
        expect_same_proc_load(bytes, make)
        expect_same_proc_load(bytes, make, freeze: true) unless stress
      end
    end
  end

  it "matches the stdlib on seeded random graphs (natively for the plain ones)" do
    rng = Random.new(2024)
    native = 0
    (stress ? 6 : 80).times do
      bytes = Marshal.dump(MarshalHelper::GraphGenerator.new(rng, 25).generate)
      ok, = native_with_proc?(bytes)
      native += 1 if ok
      expect_same_proc_load(bytes, procs[:identity])
      expect_same_proc_load(bytes, procs[:flags], freeze: true)
    end
    expect(native).to be > 5 unless stress # too few graphs under GC.stress to count
  end

  it "leaves other records to the stdlib before the proc runs once" do
    [RustyMarshalSpec::Point.new(1, 2), [1, Time.at(0)], [RustyMarshalSpec::MDump.new(1)], [1..2], [/re/],
     ["s".encode("Shift_JIS")], RustyMarshalSpec::Pair.new(1, 2), [RustyMarshalSpec::MyString.new("c")]].each do |v|
      bytes = Marshal.dump(v)
      expect(native_with_proc?(bytes)).to eq([false, 0]), "did not fall back for #{v.inspect}"
      expect_same_proc_load(bytes, procs[:identity])
    end
  end

  it "raises, throws and re-enters Marshal inside the proc as the stdlib does" do
    bytes = Marshal.dump([1, "two", [3, :four], { five: 6 }])
    raising = ->(log) { ->(x) { log << x.inspect; raise ArgumentError, "no #{x}" if x == 3; x } }
    expect_same_proc_load(bytes, raising)
    expect_parity(stdlib, ours) do |m|
      log = []
      caught = catch(:stop) { m.load(bytes, ->(x) { log << x.inspect; throw :stop, :thrown if x == :four; x }) }
      [caught, log]
    end
    expect_parity(stdlib, ours) do |m|
      m.load(bytes, ->(x) { x.is_a?(String) ? Marshal.load(Marshal.dump([x, x]), ->(y) { y }) : x })
    end
    expect_parity(stdlib, ours) { |m| m.load(bytes, 5) }
  end

  it "is what the installed Marshal.load / Marshal.restore do with a proc" do
    skip "Marshal is not installed on this Ruby" unless RustyStdlib::Marshal.installed?
    bytes = Marshal.dump({ a: [1, "x"], b: 2**70 })
    %i[load restore].each do |name|
      expect_parity(stdlib, ::Marshal) do |m|
        log = []
        proc = ->(x) { log << x.inspect; x.is_a?(Integer) ? -x : x }
        result = m.equal?(stdlib) ? RustyStdlib::Marshal.stdlib_method(name).call(bytes, proc) : ::Marshal.public_send(name, bytes, proc)
        [result, log]
      end
    end
  end
end
