# frozen_string_literal: true

require_relative "marshal_helper"

module RustyMarshalSpec
  # An IO-like port that records every call Marshal makes on it: which String object it
  # was handed (numbered in order of first appearance), its bytes, encoding and
  # frozenness at the time, and at the end what became of each String afterwards.
  class RecordingPort
    def initialize(raise_on_write: nil, freeze_buffer: false)
      @log = []
      @strings = []
      @raise_on_write = raise_on_write
      @freeze_buffer = freeze_buffer
    end

    def binmode
      @log << [:binmode]
      self
    end

    def write(str)
      index = @strings.index { |s| s.equal?(str) } || (@strings << str).size - 1
      @log << [:write, index, str.b, str.encoding.name, str.frozen?]
      raise IOError, "write failed" if @raise_on_write == @log.count { |entry| entry[0] == :write }

      str.freeze if @freeze_buffer
      str.bytesize
    end

    def summary
      @log + [[:after, @strings.map { |s| [s.b, s.encoding.name, s.frozen?] }]]
    end
  end

  # Only `write`: MRI checks for binmode and skips it.
  class WriteOnlyPort
    attr_reader :data

    def initialize
      @data = +""
    end

    def write(str)
      @data << str
      str.bytesize
    end
  end

  # `write` reached through method_missing, announced by respond_to_missing?.
  class GhostPort < WriteOnlyPort
    undef_method :write

    def respond_to_missing?(name, include_private = false)
      (@asked ||= []) << [name, include_private]
      name == :write || super
    end

    def method_missing(name, *args)
      return super unless name == :write

      @data << args.first
      args.first.bytesize
    end

    def asked = @asked
  end

  # A port that says it has no `write` although it has one.
  class DenyingPort < WriteOnlyPort
    def respond_to?(name, include_all = false)
      name == :write ? false : super
    end
  end

  # `write` is private: MRI asks respond_to? without private methods.
  class PrivateWritePort < WriteOnlyPort
    private :write
  end

  # `binmode` is private: MRI calls it anyway (rb_check_funcall).
  class PrivateBinmodePort < WriteOnlyPort
    attr_reader :binmode_called

    private

    def binmode
      @binmode_called = true
    end
  end
end

RSpec.describe "RustyStdlib::Marshal.dump to an IO port" do
  ours = RustyStdlib::Marshal
  stdlib = MarshalHelper::Stdlib
  stress = Parity::GC_STRESS
  bufsiz = 8192 # glibc's BUFSIZ, MRI's flush threshold; the specs below find it again

  # Both dump `obj` to a fresh recording port (with `limit` if given); the calls the
  # port saw, whether dump returned the port, and any exception must be the same.
  def expect_same_writes(obj, *limit, port: -> { RustyMarshalSpec::RecordingPort.new })
    expect_parity(MarshalHelper::Stdlib, RustyStdlib::Marshal) do |m|
      target = port.call
      begin
        result = m.dump(obj, target, *limit)
        [result.equal?(target), target.summary]
      rescue StandardError => e
        [e.class, e.message, target.summary]
      end
    end
  end

  # Whether ours writes `obj` natively (the stdlib is not asked).
  def native?(obj, limit = nil)
    !RustyStdlib::Marshal.native_dump_to(obj, RustyMarshalSpec::RecordingPort.new, limit).nil?
  end

  it "finds MRI's flush threshold where the specs assume it" do
    port = RustyMarshalSpec::RecordingPort.new
    ours.stdlib_dump(Array.new(bufsiz * 2), port)
    sizes = port.summary.select { |e| e[0] == :write }.map { |e| e[2].bytesize }
    expect(sizes.first).to eq(bufsiz)
  end

  it "writes small dumps with one write of MRI's buffer, after binmode, and returns the port" do
    [nil, 1, "caf\u00e9", :sym, [1, [2.5, { a: "b" }]], 2**70, Time.at(0, 5, :nsec).utc, 1..3].each do |v|
      expect(native?(v)).to be(true), "fell back for #{v.inspect}"
      expect_same_writes(v)
    end
  end

  it "flushes the buffer at the same piece boundaries for Strings of every length near BUFSIZ" do
    lengths = (bufsiz - 12..bufsiz + 2).to_a + [bufsiz * 2 + 7, bufsiz * 3]
    lengths = lengths.sample(4, random: Random.new(1)) if stress
    lengths.each do |n|
      expect(native?("x" * n)).to be(true)
      expect_same_writes("x" * n)
      expect_same_writes(["x" * n].pack("a*")) # binary: no encoding ivar
    end
  end

  it "flushes at the same points inside single bytes, longs, symbols, floats and bignums" do
    rng = Random.new(7)
    count = stress ? 900 : 3000
    shapes = [
      Array.new(count * 7), # one byte per element: flushes at exactly BUFSIZ
      Array.new(count) { |i| 70_000 + i * 1000 }, # 4-byte longs
      Array.new(count) { |i| :"symbol_number_#{i}" }, # symbol bytes after their length
      Array.new(count) { rng.rand * 10**rng.rand(-30..30) }, # float text
      Array.new(count / 3) { |i| 2**(64 + (i % 70)) + i }, # bignum digits, byte by byte
      Array.new(count) { |i| "caf\u00e9 #{i}" }, # encoding ivars
      Array.new(count / 10) { |i| RustyMarshalSpec::Point.new(i, "s#{i}") } # o records, links
    ]
    shapes.each do |v|
      expect(native?(v)).to be(true)
      expect_same_writes(v)
    end
  end

  it "writes seeded random graphs straddling the flush point as the stdlib does" do
    rng = Random.new(4242)
    native = 0
    (stress ? 6 : 60).times do
      graph = MarshalHelper::GraphGenerator.new(rng, 40).generate
      # A pad before the graph moves the flush point through the graph's bytes.
      v = ["p" * rng.rand(bufsiz - 300..bufsiz - 1), graph]
      native += 1 if native?(v)
      expect_same_writes(v)
    end
    expect(native).to be > (stress ? 2 : 30)
  end

  it "writes to StringIO and File ports the same bytes, with the same result" do
    v = [{ "k" => "v" * 9000 }, 1.5, :s]
    expect_parity(stdlib, ours) do |m|
      io = StringIO.new(+"")
      [m.dump(v, io).equal?(io), io.string, io.string.encoding]
    end
    Dir.mktmpdir do |dir|
      files = [stdlib, ours].map do |m|
        path = File.join(dir, m.name.tr(":", "_"))
        File.open(path, "w") { |f| expect(m.dump(v, f)).to equal(f) }
        File.binread(path)
      end
      expect(files[1]).to eq(files[0])
    end
  end

  it "applies a depth limit with a port as the stdlib does" do
    deep = [[[[1]]]]
    [nil, -1, 5, 4, 3, 1, 0].each { |limit| expect_same_writes(deep, limit) }
    expect(native?(deep, 5)).to be(true)
    # An error after a flush: the stdlib has written chunks before it raises.
    expect_same_writes(["x" * (bufsiz + 10), deep], 3)
    expect_same_writes([1], 2**40)
    expect_same_writes([1], 1.5)
    expect_same_writes([1], "3")
  end

  it "raises the stdlib's errors for ports without write" do
    ports = [-> { Object.new }, -> { RustyMarshalSpec::DenyingPort.new }, -> { RustyMarshalSpec::PrivateWritePort.new },
             -> { 12.5 }, -> { :sym }, -> { false }]
    ports.each { |port| expect_same_writes([1, "a"], port: port) }
    expect { ours.native_dump_to([1], Object.new, nil) }.to raise_error(TypeError, "instance of IO needed")
    expect_parity(stdlib, ours) { |m| m.dump([1], nil) }
    expect_parity(stdlib, ours) { |m| m.dump([1], nil, 3) }
    expect_parity(stdlib, ours) { |m| m.dump([1], nil, nil) }
  end

  it "asks and calls the port's methods as the stdlib does" do
    [RustyMarshalSpec::WriteOnlyPort, RustyMarshalSpec::GhostPort, RustyMarshalSpec::PrivateBinmodePort].each do |klass|
      expect_parity(stdlib, ours) do |m|
        port = klass.new
        result = m.dump(["y" * (bufsiz + 5), :z], port)
        [result.equal?(port), port.data, port.instance_variables.map { |iv| [iv, port.instance_variable_get(iv)] }]
      end
    end
  end

  it "stops where a write raises and leaves the buffer as the stdlib leaves it" do
    v = Array.new(3) { |i| "#{i}" * (bufsiz - 100) }
    [1, 2, 3, 4].each do |n|
      expect_same_writes(v, port: -> { RustyMarshalSpec::RecordingPort.new(raise_on_write: n) })
    end
    expect_same_writes(v, port: -> { RustyMarshalSpec::RecordingPort.new(freeze_buffer: true) })
  end

  it "leaves graphs with dump hooks to the stdlib before calling anything on the port" do
    v = ["x" * (bufsiz + 1), RustyMarshalSpec::MDump.new([1, 2]), RustyMarshalSpec::UDump.new("u")]
    port = RustyMarshalSpec::RecordingPort.new
    RustyMarshalSpec::HOOK_LOG.clear
    expect(ours.native_dump_to(v, port, nil)).to be_nil
    expect(port.summary).to eq([[:after, []]])
    expect(RustyMarshalSpec::HOOK_LOG).to be_empty
    expect_same_writes(v)
  end

  it "is what the installed Marshal.dump does" do
    skip "Marshal is not installed on this Ruby" unless ours.installed?
    v = { list: Array.new(5000) { |i| i * 3 }, text: "t" * 100 }
    expect_parity(stdlib, ::Marshal) do |m|
      port = RustyMarshalSpec::RecordingPort.new
      [m.dump(v, port).equal?(port), m.dump(v, port, 10).equal?(port), port.summary]
    end
  end
end
