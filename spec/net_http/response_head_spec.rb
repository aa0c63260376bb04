# frozen_string_literal: true

require_relative "net_http_helper"

RSpec.describe "Net::HTTPResponse head parsing (RustyStdlib::NetHttp :response_head)" do
  include NetHttpHelper

  before do
    skip "response_head not installed: #{RustyStdlib::NetHttp.piece_status[:response_head]}" unless NetHttpHelper.piece?(:response_head)
  end

  # A socket object of the caller's own that returns UTF-8 lines (not BufferedIO).
  class NetHttpHelper::LineSock
    def initialize(text)
      @lines = text.force_encoding(Encoding::UTF_8).lines
    end

    def readline
      readuntil("\n").chomp("\n")
    end

    def readuntil(_terminator, ignore_eof = false)
      @lines.shift or (ignore_eof ? +"" : raise(EOFError))
    end
  end

  # A head with a repeated field read as each of `classes` (a sample of two) in turn,
  # the 200 response's class: the fields as the stdlib's add_field & co leave them.
  def expect_head_parity_with_classes(classes)
    text = "HTTP/1.1 200 OK\r\nA: 1\r\nA: 2\r\n\r\n"
    NetHttpHelper.sample(classes, 2).each do |klass|
      expect_codec_parity do
        stub_const("Net::HTTPResponse::CODE_TO_OBJ", Net::HTTPResponse::CODE_TO_OBJ.merge("200" => klass))
        read_head(Net::BufferedIO.new(StringIO.new(text.b)))[4]
      end
    end
  end

  # Keys: whether each is the interned String (Hash#[]= interns the stdlib's downcased key).
  def read_head(io)
    res = Net::HTTPResponse.read_new(io)
    keys = res.instance_variable_get(:@header).keys.map { |k| k.equal?(-k) }
    [res.class, res.code, res.message, res.http_version, deep(res.to_hash.to_a), res.each_capitalized.to_a, keys]
  end

  # log: with set_debug_output (every line read and logged one by one) or without
  # (a head already in the buffer is parsed in one go).
  def parse(text, chunks = [], log: true)
    log = log ? StringIO.new(+"") : nil
    io = Net::BufferedIO.new(NetHttpHelper::ChunkedIO.new(text.b, chunks), debug_output: log)
    [read_head(io), io.read_all, log&.string]
  end

  status_lines = ["HTTP/1.1 200 OK", "HTTP/1.0 404 Not Found", "http/1.1 301", "HTTP 200 ok", "HTTP/2.0 200  spaced  msg ",
                  "HTTP/1.1 200 OK\r", "HTTP/1.1 999 Custom", "HTTP/1.1 2000 OK", "HTTP/1.1 20 OK", "HTTP/1. 200 OK",
                  "HTTP/1.1.1 200", "HTTP/1.1200", " HTTP/1.1 200 OK", "ICY 200 OK", "", "HTTP/1.1 200 \xFF\xFE",
                  "HTTP/1.1\t100\tContinue", "HTTP/1.1 200\v\f", "HTTP/1.1 200 a\x00b", "HTTP/1.1 5xx Error"]
  header_blocks = [
    "Content-Type: text/html\r\nContent-Length: 4\r\n",
    "X-A:  1\r\n  folded  \r\n\tand tab\r\nX-B:\r\n  \r\n",
    "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nset-cookie : c\r\n",
    "Key : value : more\r\n:empty key\r\nx:\r\n",
    "\tleading-tab: first\r\nK: v\r\n",
    " leading-space: first\r\nK: v\r\n",
    "no colon here\r\n",
    "\x00: nul\r\nA\x00: b\x00\r\n",
    "UTF-8-\u00e9: \u00fc\r\nBin: \xFF\xFE\r\n",
    "A: 1\nB: 2\n",
    "A:\v1\f\r\n",
    "",
  ]

  it "reads status lines like the stdlib, including its errors" do
    NetHttpHelper.sample(status_lines, 3).each do |line|
      expect_codec_parity { parse("#{line}\r\nA: b\r\n\r\nbody") }
      expect_codec_parity { Net::HTTPResponse.send(:read_status_line, Net::BufferedIO.new(StringIO.new("#{line}\n".b))) }
    end
  end

  it "reads header blocks like the stdlib, including its errors" do
    NetHttpHelper.sample(status_lines.first(3).product(header_blocks), 3).each do |status, headers|
      expect_codec_parity { parse("#{status}\r\n#{headers}\r\nbody") }
      expect_codec_parity { parse("#{status}\r\n#{headers}\r\nbody", log: false) } unless Parity::GC_STRESS
    end
  end

  it "raises where the stdlib does for CR in a value, and yields fields to any block" do
    NetHttpHelper.sample(["A: 1\r\nB: x\ry\r\nC: 3\r\n", "A: 1\r\n  x\ry\r\n", "A: 1\r\nB: 2\r\n"], 1).each do |headers|
      text = "HTTP/1.1 200 OK\r\n#{headers}\r\nbody"
      NetHttpHelper.sample([false, true], 1).each do |log|
        expect_codec_parity { parse(text, log: log) }
        expect_codec_parity do
          io = Net::BufferedIO.new(StringIO.new(text.b))
          Net::HTTPResponse.send(:read_status_line, io)
          seen = []
          Net::HTTPResponse.send(:each_response_header, io) { |k, v| seen << k << v }
          [seen, io.read_all]
        end
      end
    end
  end

  # The stdlib yields a field once it has read the line after it: a block that stops
  # the loop (break, raise, throw) leaves the socket there.
  it "leaves the socket where the stdlib does when the block stops at a field" do
    text = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n  folded\r\nC: 3\r\n\r\nrest"
    each_header = ->(io, &block) { Net::HTTPResponse.send(:each_response_header, io, &block) }
    stops = {
      break: ->(io, at) { each_header.call(io) { |k, _| break k if at.include?(k) } },
      raise: lambda do |io, at|
        each_header.call(io) { |k, _| raise ArgumentError, k if at.include?(k) }
      rescue ArgumentError => e
        e.message
      end,
      throw: ->(io, at) { catch(:stop) { each_header.call(io) { |k, _| throw :stop, k if at.include?(k) } } }
    }
    stops.each_value do |stop|
      [%w[A], %w[B], %w[C], []].each do |at|
        expect_codec_parity do
          io = Net::BufferedIO.new(StringIO.new(text.b))
          Net::HTTPResponse.send(:read_status_line, io)
          [stop.call(io, at), io.read_all]
        end
      end
    end
    # read_new on a response class whose own add_field raises at a field.
    raising = Class.new(Net::HTTPOK) { def add_field(key, val) = key == "B" ? raise(ArgumentError, key) : super }
    reader = Class.new(Net::HTTPResponse) { define_singleton_method(:response_class) { |_| raising } }
    expect_codec_parity do
      io = Net::BufferedIO.new(StringIO.new(text.b))
      [(reader.read_new(io) rescue $!.message), io.read_all] # rubocop:disable Style/RescueModifier
    end
  end

  it "leaves sockets with their own reads (singleton methods, subclasses) to them" do
    text = "HTTP/1.1 200 OK\r\nA: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    make = [
      -> { Net::BufferedIO.new(StringIO.new(text.b)).tap { |io| def io.readuntil(*) = super.sub("A", "B") } },
      -> { Class.new(Net::BufferedIO) { def readline = super.sub("200", "201") }.new(StringIO.new(text.b)) }
    ]
    make.each do |io|
      expect_codec_parity do
        sock = io.call
        res = Net::HTTPResponse.read_new(sock)
        res.reading_body(sock, true) {}
        [res.code, res.to_hash, res.body]
      end
    end
  end

  it "leaves responses with their own add_field, set_field or append_field_value to them" do
    owns = [
      Class.new(Net::HTTPOK) { def add_field(key, val) = super("own-#{key}", val) },
      Class.new(Net::HTTPOK) { private def set_field(key, val) = super(key, "own-#{val}") },
      Class.new(Net::HTTPOK) { private def append_field_value(ary, val) = super(ary, "own-#{val}") },
      # Its own #method (as requests have) does not hide the stdlib's add_field.
      Class.new(Net::HTTPOK) { def method = "GET" },
    ]
    expect_head_parity_with_classes(owns)
  end

  it "leaves add_field & co to prepended modules, singleton methods, visibility changes and refinements" do
    own_add_field = Module.new { def add_field(key, val) = super("own-#{key}", val) }
    owns = [
      Class.new(Net::HTTPOK) { prepend own_add_field },
      Class.new(Net::HTTPOK) { def self.new(*) = super.extend(own_add_field) },
      Class.new(Net::HTTPOK) { private :add_field },
      Class.new(Net::HTTPOK) { alias_method :add_field, :set_field },
    ]
    expect_head_parity_with_classes(owns)
    # A refinement that no caller uses changes nothing (it does change the method table,
    # for good: so in a Ruby of its own).
    stdlib, ours = heads_in_fresh_process(<<~'RUBY')
      Module.new { refine(Net::HTTPHeader) { def add_field(key, val) = super("refined-#{key}", val) } }
    RUBY
    expect(ours).to eq(stdlib)
    expect(ours.first[4]).to eq([["a", ["1", "2"]]])
  end

  # What read_new makes of a head with a repeated field, in a new Ruby after `setup`
  # (code that changes the process for good: refinements, redefined stdlib methods),
  # with the stdlib's pieces and with ours: [[stdlib's, ...], [ours, ...]], one result
  # per `---` part of `setup`, each as read_head describes it.
  def heads_in_fresh_process(setup)
    script = <<~RUBY
      require "rusty_stdlib"; require "net/http"; require "stringio"
      def head
        io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 OK\\r\\nA: 1\\r\\nA: 2\\r\\n\\r\\n".b))
        res = Net::HTTPResponse.read_new(io)
        keys = res.instance_variable_get(:@header).keys.map { |k| k.equal?(-k) }
        [res.class.name, res.code, res.message, res.http_version, res.to_hash.to_a, res.each_capitalized.to_a, keys]
      end
      results = [#{setup.split(/^---\n/).map { |part| "(#{part.strip}\n[RustyStdlib::NetHttp.stdlib { head }, head])" }.join(", ")}]
      $stdout.write Marshal.dump(results.transpose)
    RUBY
    out = IO.popen([RbConfig.ruby, "-W0", "-I", File.expand_path("../../lib", __dir__), "-e", script], &:read)
    expect($?).to be_success
    Marshal.load(out) # rubocop:disable Security/MarshalLoad -- our own child's output
  end

  it "leaves a redefined Net::HTTPHeader#add_field to itself, where method entries are read" do
    skip "owners compared on this Ruby (no method entry lookup)" unless RustyStdlib::NetHttp.stock_methods_known?

    # In a Ruby of its own: redefining a stdlib method, and refining it, change the
    # process for good. Done here, in one random order of the suite the next examples
    # found "own-" before every header name, in the stdlib's run as in ours, and the
    # nginx specs waited forever for a body whose Content-Length no longer counted.
    redefine = <<~'RUBY'
      STOCK = Net::HTTPHeader.instance_method(:add_field)
      Net::HTTPHeader.define_method(:add_field) { |key, val| STOCK.bind_call(self, "own-#{key}", val) }
      ---
      Net::HTTPHeader.define_method(:add_field, STOCK)
    RUBY
    refine = "Module.new { refine(Net::HTTPHeader) { def add_field(key, val) = super(\"refined-\#{key}\", val) } }\n---\n"
    stdlib, ours = heads_in_fresh_process(redefine)
    expect(ours).to eq(stdlib)
    expect(ours.map { |head| head[4][0][0] }).to eq(%w[own-a a]) # redefined, then the stock one back
    # Under a refinement of add_field (which changes how calls reach it), whatever this
    # Ruby makes of the redefinition, ours makes too.
    stdlib, ours = heads_in_fresh_process(refine + redefine)
    expect(ours).to eq(stdlib)
  end

  it "takes the native path for stock add_field & co and leaves it for others (fresh process)" do
    skip "owners compared on this Ruby (no method entry lookup)" unless RustyStdlib::NetHttp.stock_methods_known?

    # Objects per read_new: the native path makes the fields' Strings and Arrays only;
    # once a refinement refines set_field, every read takes the stdlib's path.
    script = <<~'RUBY'
      require "rusty_stdlib"; require "net/http"; require "stringio"
      text = "HTTP/1.1 200 OK\r\nA: 1\r\nA: 2\r\n\r\n".b
      count = lambda do
        io = Net::BufferedIO.new(StringIO.new(text))
        before = GC.stat(:total_allocated_objects)
        Net::HTTPResponse.read_new(io)
        GC.stat(:total_allocated_objects) - before
      end
      count.call
      stock = count.call
      Module.new { refine(Net::HTTPHeader) { def set_field(key, val) = super } }
      print stock, " ", count.call
    RUBY
    out = IO.popen([RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), "-e", script], &:read)
    stock, refined = out.split.map { |n| Integer(n) }
    expect(stock).to be < refined
  end

  it "consumes the buffer through an rbuf_consume that is not net-protocol's own (fresh process)" do
    # The native side consumes in place only while Net::BufferedIO#rbuf_consume is the
    # stock one: once a module wraps it, every byte of head and body goes through it.
    script = <<~'RUBY'
      require "rusty_stdlib"; require "net/http"; require "stringio"
      text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nA: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n".b
      read = lambda do
        io = Net::BufferedIO.new(StringIO.new(text))
        res = Net::HTTPResponse.read_new(io)
        res.reading_body(io, true) {}
        [res.to_hash, res.body, io.instance_variable_get(:@rbuf)]
      end
      plain = read.call
      $consumed = 0
      Net::BufferedIO.prepend(Module.new { def rbuf_consume(len) = super.tap { $consumed += len } })
      wrapped = [RustyStdlib::NetHttp.stdlib { read.call }, $consumed]
      $consumed = 0
      print Marshal.dump([plain, wrapped, read.call, $consumed, text.bytesize])
    RUBY
    out = IO.popen([RbConfig.ruby, "-W0", "-I", File.expand_path("../../lib", __dir__), "-e", script], &:read)
    expect($?).to be_success
    plain, (stdlib, stdlib_consumed), ours, ours_consumed, size = Marshal.load(out) # rubocop:disable Security/MarshalLoad -- our own child's output
    expect(ours).to eq(stdlib)
    expect(plain).to eq(stdlib)
    expect(stdlib_consumed).to eq(size)
    expect(ours_consumed).to eq(size)
  end

  it "leaves the status line consumed when the response class's initialize raises or throws" do
    failing = [
      Class.new(Net::HTTPOK) { def initialize(*) = raise(ArgumentError, "no response") },
      Class.new(Net::HTTPOK) { def initialize(*) = throw(:no_response) },
    ]
    text = "HTTP/1.1 200 OK\r\nA: 1\r\n\r\nHTTP/1.1 404 Not Found\r\nB: 2\r\n\r\n"
    failing.each do |klass|
      expect_codec_parity do
        stub_const("Net::HTTPResponse::CODE_TO_OBJ", Net::HTTPResponse::CODE_TO_OBJ.merge("200" => klass))
        io = Net::BufferedIO.new(StringIO.new(text.b))
        first = outcome_of { catch(:no_response) { Net::HTTPResponse.read_new(io) } }
        # What the next read finds: the stdlib read "A: 1" as the next status line.
        [first.klass, first.value.to_s, outcome_of { read_head(io) }.value.to_s, io.read_all]
      end
    end
  end

  it "reads heads with many fields, repeated names and long names like the stdlib" do
    names = Array.new(80) { |i| i.even? ? "Set-Cookie" : "X-#{i}" }
    heads = [
      names.first(64), names.first(65), names.first(80),
      Array.new(40) { |i| "X-#{'n' * 60}-#{i}" }, # past 2 KB of names
      %w[A a A b B c] * 3,
    ]
    # Under GC stress (a full GC per allocation): a head with more names than a Hash
    # keeps in its small table, and repeated names.
    (Parity::GC_STRESS ? [names.first(20)] : heads).each do |head|
      fields = head.each_with_index.map { |name, i| "#{name}: v#{i}\r\n" }.join
      expect_codec_parity { parse("HTTP/1.1 200 OK\r\n#{fields}\r\nbody", log: false) }
    end
  end

  it "reads heads split at every byte boundary like the stdlib" do
    text = "HTTP/1.1 200 OK\r\n#{header_blocks[1]}#{header_blocks[2]}\r\nbody"
    NetHttpHelper.sample((0..text.bytesize).to_a, 3).each do |split|
      expect_codec_parity { parse(text, [split]) }
      expect_codec_parity { parse(text, [split], log: false) }
    end
    expect_codec_parity { parse(text, [1] * text.bytesize) } unless Parity::GC_STRESS
    expect_codec_parity { parse(text, [1] * text.bytesize, log: false) } unless Parity::GC_STRESS
  end

  it "reads seeded random heads like the stdlib" do
    rng = Random.new(NetHttpHelper::SEED + 20)
    parts = ["HTTP", "/1.1", " ", "\t", "200", "OK", ":", ": ", "Key", "v", "\r\n", "\n", "\r", "\x00", "\xFF", "-"]
    NetHttpHelper.count(300).times do
      status = rng.rand(3).zero? ? random_string(rng, parts, 6) : "HTTP/1.1 200 OK"
      headers = Array.new(rng.rand(5)) { random_string(rng, parts, 6) + "\r\n" }.join
      chunks = Array.new(3) { rng.rand(1..8) }
      log = rng.rand(2).zero?
      expect_codec_parity { parse("#{status}\r\n#{headers}\r\nbody", chunks, log: log) }
    end
  end

  # The stdlib's expressions for one line (each_response_header / read_status_line).
  def stdlib_header_line(raw)
    line = raw.sub(/\s+\z/, "")
    return false if line.empty?

    space = line[0] == " "
    tab = line[0] == "\t"
    [space, tab, (line.strip if space || tab), *line.strip.split(/\s*:\s*/, 2).then { |a| a + [nil] * (2 - a.size) }]
  end

  def stdlib_status_line(str)
    m = /\AHTTP(?:\/(\d+\.\d+))?\s+(\d\d\d)(?:\s+(.*))?\z/in.match(str)
    m ? m.captures : false
  end

  it "takes single lines apart like the stdlib's expressions (many lines, cheap under GC stress)" do
    rng = Random.new(NetHttpHelper::SEED + 21)
    parts = ["HTTP", "http", "/1.1", "/1.", "/12.34", " ", "\t", "\v", "\f", "\r", "\n", "200", "2000", "20", "OK",
             ":", " : ", "Key", "v", "\x00", "\xFF", "-", "."]
    lines = header_blocks.flat_map { |b| b.b.lines } + status_lines.map(&:b)
    lines += Array.new(NetHttpHelper.count(3000)) { random_string(rng, parts, 8).b }
    lines.each do |line|
      expected = Parity.outcome { [stdlib_header_line(line), stdlib_status_line(line)] }
      actual = Parity.outcome(stress: Parity::GC_STRESS) do
        [RustyStdlib::NetHttp::Native.header_line(line), RustyStdlib::NetHttp::Native.status_line(line)]
      end
      expect(actual).to eq(expected), "line #{line.inspect}"
    end
  end

  # Messages compared whole: on Ruby 3.1 a NoMethodError's quotes the line that raised
  # (error_highlight), which must be the stdlib's.
  it "raises the stdlib's errors for a socket argument that is no socket" do
    [nil, BasicObject.new, Object.new, 5].each do |sock|
      expect_codec_parity { Net::HTTPResponse.read_new(sock) }
    end
  end

  it "leaves lines from a caller's own socket object to the stdlib's code" do
    texts = ["HTTP/1.1 200 \u00e9\r\nA: \u00fc\r\n  more\r\nB: 1\r\n\r\n", "HTTP/1.1 2x\r\n\r\n", "HTTP/1.1 200\r\nbad\r\n\r\n",
             "HTTP/1.1 200 \xFF\r\nA: \xFF\r\n\r\n"]
    NetHttpHelper.sample(texts, 2).each do |text|
      verbose = $VERBOSE
      $VERBOSE = nil # the stdlib's regexp warns about /n against a UTF-8 string
      begin
        expect_codec_parity { read_head(NetHttpHelper::LineSock.new(text.dup)) }
      ensure
        $VERBOSE = verbose
      end
    end
  end
end
