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

module RustyMarshalSpec
  # An IO-like source over a String that records every call Marshal makes on it (into
  # `log`, which hooks may share), as MRI's load makes them: getbyte, read(n), binmode.
  class RecordingSource
    attr_reader :log, :io

    def initialize(bytes, log = [], short_reads: false)
      @io = StringIO.new(bytes)
      @log = log
      @short_reads = short_reads
    end

    def binmode
      @log << [:binmode]
      self
    end

    def getbyte
      byte = @io.getbyte
      @log << [:getbyte, byte]
      byte
    end

    def read(length)
      length -= 1 if @short_reads && length > 1
      data = @io.read(length)
      @log << [:read, length, data]
      data
    end
  end

  # getbyte answers with one-character Strings and read with objects that convert.
  class ConvertingSource < RecordingSource
    Chunk = Struct.new(:data) do
      def to_str = data
    end

    def getbyte
      byte = super
      byte&.chr
    end

    def read(length)
      data = super
      data && Chunk.new(data)
    end
  end

  # read returns frozen Strings, Strings of a subclass, or one reused buffer object.
  class OddStringSource < RecordingSource
    class Chunk < String; end

    def initialize(bytes, mode)
      super(bytes)
      @mode = mode
      @buffer = +""
    end

    def read(length)
      data = super
      return data if data.nil?

      case @mode
      when :frozen then data.freeze
      when :subclass then Chunk.new(data)
      else @buffer.replace(data)
      end
    end
  end

  # A source whose read fails after `ok_reads` calls.
  class FailingSource < RecordingSource
    def initialize(bytes, ok_reads)
      super(bytes)
      @ok_reads = ok_reads
    end

    def read(length)
      raise IOError, "read failed" if (@ok_reads -= 1).negative?

      super
    end
  end

  # Only getbyte (no read): not an IO for Marshal.
  class GetbyteOnly
    def getbyte = 0
  end

  # An object that converts to the String of a dump.
  class DumpString
    attr_reader :conversions

    def initialize(bytes)
      @bytes = bytes
      @conversions = 0
    end

    def to_str
      @conversions += 1
      @bytes
    end
  end
end

RSpec.describe "RustyStdlib::Marshal.load from an IO port" do
  ours = RustyStdlib::Marshal
  stdlib = MarshalHelper::Stdlib
  stress = Parity::GC_STRESS
  bufsiz = 8192

  # Both load from a fresh source (a block given the bytes): the loaded graph or the
  # exception, every call the source saw, and what is left unread must be the same.
  def expect_same_reads(bytes, freeze: false, &make_source)
    make_source ||= ->(b) { RustyMarshalSpec::RecordingSource.new(b) }
    expect_parity(MarshalHelper::Stdlib, RustyStdlib::Marshal) do |m|
      source = make_source.call(bytes + "TRAILER".b)
      loaded = begin
        MarshalHelper.describe(m.load(source, freeze: freeze))
      rescue StandardError => e
        [e.class, Parity.without_addresses(e.message)]
      end
      [loaded, source.log, source.io.read]
    end
  end

  # Whether ours loads `bytes` from a port with no help from the stdlib.
  def native_from_port?(bytes)
    source = RustyMarshalSpec::RecordingSource.new(bytes)
    log = []
    fallback = RustyStdlib::Marshal::FALLBACK
    !fallback.equal?(RustyStdlib::Marshal.native_load_from(source, false, log, fallback))
  end

  plain = [nil, true, 1, -70_000, 2**31, 2**40, 2**70, -(2**100), 1.5, Float::NAN, "abc", "abc".b, "caf\u00e9", :sym,
           :"caf\u00e9", [1, [2, [3]]], { a: 1, "b" => [2.5, nil] }, Hash.new(5).merge(1 => 2), [], {},
           MarshalHelper.with_ivars(+"s", :@a, 1), MarshalHelper.with_ivars([1], :@b, "x"),
           Hash.ruby2_keywords_hash({ k: 1 }), ["shared"] * 3, [:s, :s, "t", "t"]]

  # Read natively (a String read unbuffered, which MRI would make the loaded String
  # itself, goes to the stdlib: at the top level and as the last element).
  native_values = [nil, true, 1, -70_000, 2**31, 2**40, 2**70, -(2**100), 1.5, Float::NAN, :sym, [1, [2, [3]]],
                  Hash.new(5).merge(1 => 2), [], {}, Hash.ruby2_keywords_hash({ k: 1 }), ["shared"] * 3, ["a", "b", 1],
                  { "k" => "v", 1 => 2 }, [:s, :s, "t", "t", [:s]]]

  it "reads plain graphs with the stdlib's calls, never past the object, natively where it can" do
    native_values.each do |v|
      expect(native_from_port?(Marshal.dump(v))).to be(true), "fell back for #{v.inspect}"
    end
    under_stress_keep((native_values + plain).shuffle(random: Random.new(2)), 10).each do |v|
      bytes = Marshal.dump(v)
      expect_same_reads(bytes)
      expect_same_reads(bytes, freeze: true)
    end
  end

  it "reads ahead inside Arrays and Hashes exactly as the stdlib does, up to BUFSIZ" do
    rng = Random.new(3)
    count = stress ? 150 : 12_000
    shapes = [
      Array.new(count) { |i| i }, Array.new(count / 4) { |i| "s#{i}" * (i % 7) } + [0],
      ["x" * (bufsiz + 100), 1, "y" * (bufsiz - 3), [2]], Array.new(count / 10) { |i| { i => [i.to_s, :"k#{i % 9}"] } },
      Array.new(count / 20) { |i| 2**(20 + (i % 90)) }, Array.new(count / 10) { rng.rand * 10**rng.rand(-30..30) },
      Array.new(count / 10) { |i| ["caf\u00e9 #{i}", i] }
    ]
    shapes.each do |v|
      bytes = Marshal.dump(v)
      expect(native_from_port?(bytes)).to be(true)
      expect_same_reads(bytes)
    end
  end

  it "hands the stdlib the calls already made where it needs the stdlib, for seeded random graphs" do
    rng = Random.new(99)
    native = 0
    (stress ? 8 : 80).times do
      bytes = Marshal.dump(MarshalHelper::GraphGenerator.new(rng, 30).generate)
      native += 1 if native_from_port?(bytes)
      expect_same_reads(bytes)
    end
    expect(native).to be > (stress ? 1 : 10)
  end

  it "makes the port's own Strings the loaded Strings where MRI does, whatever they are" do
    ["top", [1, "last"], { k: "v" }, ["caf\u00e9"], [2**70], ["a", "b"] * 3].each do |v|
      bytes = Marshal.dump(v)
      expect(native_from_port?(bytes)).to be(true), "fell back for #{v.inspect}"
      expect_parity(stdlib, ours) do |m|
        source = RustyMarshalSpec::RecordingSource.new(bytes)
        loaded = [m.load(source)].flatten.flat_map { |x| x.is_a?(Hash) ? x.values : [x] }
        returned = source.log.select { |e| e[0] == :read }.map(&:last)
        [loaded.map { |x| returned.index { |r| r.equal?(x) } }, returned.map { |r| [r.encoding, r.bytesize] }]
      end
    end
    %i[frozen subclass reused].each do |mode|
      [Marshal.dump("top"), Marshal.dump([1, "caf\u00e9", "x"]), Marshal.dump({ a: "b" })].each do |bytes|
        expect_same_reads(bytes) { |b| RustyMarshalSpec::OddStringSource.new(b, mode) }
      end
    end
  end

  it "interleaves reads with load hooks as the stdlib does" do
    v = [1, RustyMarshalSpec::MDump.new(["a", 2]), "x" * 50, RustyMarshalSpec::UDump.new("u"), [3, 4]]
    bytes = Marshal.dump(v)
    expect_parity(stdlib, ours) do |m|
      RustyMarshalSpec::HOOK_LOG.clear
      source = RustyMarshalSpec::RecordingSource.new(bytes, RustyMarshalSpec::HOOK_LOG)
      m.load(source)
      RustyMarshalSpec::HOOK_LOG.dup
    end
  end

  it "loads dumps concatenated in one StringIO one after the other" do
    values = plain.first(stress ? 6 : plain.size) + [RustyMarshalSpec::Point.new(1, "p"), Time.at(0).utc]
    bytes = values.map { |v| Marshal.dump(v) }.join
    expect_parity(stdlib, ours) do |m|
      io = StringIO.new(bytes)
      values.map { MarshalHelper.describe(m.load(io)) } + [io.pos, io.eof?]
    end
  end

  it "raises the stdlib's errors for short, empty and odd sources at the same point" do
    bytes = Marshal.dump([1, "abcdef", [2**70, :sym], { "k" => 1.5 }])
    cuts = (0...bytes.bytesize).to_a
    cuts = cuts.sample(4, random: Random.new(5)) if stress
    cuts.each { |cut| expect_same_reads(bytes.byteslice(0, cut)) }
    expect_same_reads("\x04\x09i\x06".b)
    expect_same_reads("\x03\x08i\x06".b)
    expect_same_reads(bytes) { |b| RustyMarshalSpec::RecordingSource.new(b, short_reads: true) }
    expect_same_reads(bytes) { |b| RustyMarshalSpec::ConvertingSource.new(b) }
    [0, 1, 2].each { |n| expect_same_reads(bytes) { |b| RustyMarshalSpec::FailingSource.new(b, n) } }
  end

  it "raises the stdlib's TypeError for sources that are not IO-like, and converts with to_str once" do
    [Object.new, RustyMarshalSpec::GetbyteOnly.new, 12, nil, :sym].each do |source|
      expect_parity(stdlib, ours) { |m| m.load(source) }
    end
    bytes = Marshal.dump([1, "two"])
    expect_parity(stdlib, ours) do |m|
      source = RustyMarshalSpec::DumpString.new(bytes)
      [m.load(source), source.conversions]
    end
  end

  it "leaves a load proc with a port to the stdlib, and is what the installed Marshal.load/restore do" do
    bytes = Marshal.dump([1, "a"])
    expect_parity(stdlib, ours) do |m|
      seen = []
      source = RustyMarshalSpec::RecordingSource.new(bytes)
      [m.load(source, ->(x) { seen << x.inspect; x }), seen, source.log]
    end
    skip "Marshal is not installed on this Ruby" unless ours.installed?
    %i[load restore].each do |name|
      expect_parity(stdlib, ::Marshal) do |m|
        source = RustyMarshalSpec::RecordingSource.new(bytes + Marshal.dump(:next))
        loader = m.equal?(stdlib) ? ->(s) { ours.stdlib_method(name).call(s) } : ->(s) { ::Marshal.public_send(name, s) }
        [loader.call(source), loader.call(source), source.log]
      end
    end
  end
end
