# frozen_string_literal: true

require "zlib"
require_relative "net_http_helper"

RSpec.describe "Net::HTTPResponse#read_chunked (RustyStdlib::NetHttp :chunked_body)" do
  include NetHttpHelper

  before do
    skip "chunked_body not installed: #{RustyStdlib::NetHttp.piece_status[:chunked_body]}" unless NetHttpHelper.piece?(:chunked_body)
  end

  def chunked(body_chunks, size_lines: nil, trailers: "", gzip: false)
    head = +"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
    head << "Content-Encoding: gzip\r\n" if gzip
    lines = body_chunks.each_with_index.map do |chunk, i|
      "#{size_lines ? size_lines[i] : chunk.bytesize.to_s(16)}\r\n#{chunk}\r\n"
    end
    "#{head}\r\n#{lines.join}0\r\n#{trailers}\r\n"
  end

  # Reads the head and then the body (as #body or through read_body's block), with
  # Net::BufferedIO's reads cut by `chunks`; returns everything observable.
  #
  # log: whether set_debug_output logs (which keeps every read in Ruby); dest: a String
  # for read_body(dest). Errors are returned with what had been read by then.
  def read_response(text, chunks: [], decode: false, block: false, log: false, dest: nil)
    log = log ? StringIO.new(+"") : nil
    io = Net::BufferedIO.new(NetHttpHelper::ChunkedIO.new(text.b, chunks), debug_output: log)
    res = Net::HTTPResponse.read_new(io)
    res.decode_content = decode
    segments = []
    error = nil
    begin
      res.reading_body(io, true) do
        if block
          res.read_body { |s| segments << s.dup }
        elsif dest
          res.read_body(dest)
        end
        segments << res.body unless block # with a block, #body is the ReadAdapter
      end
    rescue StandardError => e
      error = [e.class, Parity.without_addresses(e.message)]
    end
    [res.code, res.to_hash, segments, dest, error, log&.string, io.read_all]
  end

  bodies = [[], ["a"], ["hello", " ", "world"], ["\xFF\x00".b * 10, "x" * 300], ["\r\n", "0\r\n"]]

  it "reads chunked bodies like the stdlib, as #body and through read_body's block" do
    NetHttpHelper.sample(bodies.product([false, true], [false, true]), 3).each do |body, block, log|
      expect_codec_parity { read_response(chunked(body), block: block, log: log) }
    end
  end

  it "finds bodies chunked (read_body_0's plain case) as the stdlib's chunked? does" do
    encodings = ["chunked", "Chunked", "gzip, chunked", "chunked-ext", "x_chunked", "chunked\r\nTransfer-Encoding: gzip",
                 "gzip\r\nTransfer-Encoding: chunked", "ch\u00fcnked, chunked", "identity"]
    NetHttpHelper.sample(encodings, 4).each do |encoding|
      body = "5\r\nhello\r\n0\r\n\r\n"
      text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: #{encoding}\r\nContent-Length: #{body.bytesize}\r\n\r\n#{body}"
      [false, true].each do |decode|
        expect_codec_parity { read_response(text, decode: decode) }
        expect_codec_parity { read_response(text, decode: decode, block: true) }
      end
    end
  end

  it "leaves read_body_0 to responses with their own chunked?, [] or inflater, and to decoded bodies" do
    owns = [
      Class.new(Net::HTTPOK) { def chunked? = false },
      Class.new(Net::HTTPOK) { def [](key) = key.casecmp?("transfer-encoding") ? "identity" : super },
      Class.new(Net::HTTPOK) { private def inflater = yield(StringIO.new("3\r\nabc\r\n0\r\n\r\n")) },
    ]
    text = chunked(["hello", " world"])
    NetHttpHelper.sample(owns, 2).each do |own|
      expect_codec_parity do
        stub_const("Net::HTTPResponse::CODE_TO_OBJ", Net::HTTPResponse::CODE_TO_OBJ.merge("200" => own))
        read_response(text)
      end
    end
    gzipped = chunked([Zlib.gzip("hello")], gzip: true)
    expect_codec_parity { read_response(gzipped, decode: true) }
  end

  it "appends to a read_body(dest) String like the stdlib, whatever its encoding" do
    body = ["abc", "\xFF\xFE".b, "d"]
    dests = [-> { +"" }, -> { "".b }, -> { +"pre" }, -> { +"é" }, -> { "x".encode("UTF-16LE") },
             -> { "".encode("UTF-16LE") }, -> { "".freeze }, -> { "pre".encode("Shift_JIS") }]
    NetHttpHelper.sample(dests, 3).each do |dest|
      expect_codec_parity { read_response(chunked(body), dest: dest.call) }
      expect_codec_parity { read_response(chunked(["abc"]), dest: dest.call) }
    end
  end

  it "stops where the stdlib stops on truncated and malformed chunked bodies" do
    good = chunked(["hello", "x" * 40], trailers: "T: 1\r\n")
    cuts = NetHttpHelper.sample((good.index("\r\n\r\n") + 4...good.bytesize).to_a, 3)
    cuts.each_with_index do |cut, i|
      NetHttpHelper.sample([false, true], 1).each do |block|
        expect_codec_parity { read_response(good[0, cut], block: block ^ i.odd?) }
        expect_codec_parity { read_response(good[0, cut], chunks: [cut - 3, 1]) } unless Parity::GC_STRESS && i.odd?
      end
    end
    malformed = ["3\r\nabcXY1\r\nz\r\n0\r\n\r\n", "3\nabc\n\n0\n\n", "3\r\nabc\r\nzz\r\n",
                 "3\r\nabc\r\n0\r\nT: 1\r\n", "10000000000000000\r\nab", "-1\r\nx\r\n0\r\n\r\n",
                 "3\r\nabc", "3\r\nab", "0\r\n", "3 ; x\r\nabc\r\n0\r\n  \r\n\r\n"]
    NetHttpHelper.sample(malformed, 4).each do |body|
      text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n#{body}"
      NetHttpHelper.sample([[], [text.index("\r\n\r\n") + 6, 2]], 1).each do |chunks|
        expect_codec_parity { read_response(text, chunks: chunks) }
      end
    end
  end

  it "reads chunk-size lines like the stdlib, including extensions and bad lines" do
    size_lines = ["5", "05", "5;ext=1", " 5 ", "x5", "5g", "0x5", "+5", "-5", "", "zz", "5\t;a", "F" * 20,
                  "8000000000000000", "7FFFFFFFFFFFFFFF", "0000000000000000000005", "\xFF5"]
    NetHttpHelper.sample(size_lines, 4).each do |line|
      expect_codec_parity { read_response(chunked(["hello"], size_lines: [line])) }
    end
    expect_codec_parity { read_response(chunked(["a"], trailers: "X-Trailer: 1\r\nY: 2\r\n")) }
    expect_codec_parity { read_response(chunked(["abc"]).sub("0\r\n\r\n", "")) }
  end

  it "inflates gzip chunked bodies like the stdlib" do
    gz = Zlib.gzip("compressed body " * 20)
    parts = [gz[0, 7], gz[7, 30], gz[37..]]
    [false, true].each do |block|
      expect_codec_parity { read_response(chunked(parts, gzip: true), decode: true, block: block) }
    end
  end

  it "reads chunked bodies split at every byte boundary like the stdlib" do
    text = chunked(["hello", "chunked", "x" * 20], trailers: "T: 1\r\n")
    NetHttpHelper.sample((0..text.bytesize).to_a, 3).each_with_index do |split, i|
      NetHttpHelper.sample([false, true], 1).each do |block|
        expect_codec_parity { read_response(text, chunks: [split], block: block ^ i.odd?) }
        expect_codec_parity { read_response(text, chunks: [split, 3], block: block) } unless Parity::GC_STRESS
      end
    end
    unless Parity::GC_STRESS
      [false, true].each do |block|
        expect_codec_parity { read_response(text, chunks: [1] * text.bytesize, block: block) }
        expect_codec_parity { read_response(text, chunks: [1] * text.bytesize, block: block, log: true) }
      end
    end
  end

  it "reads seeded random chunk layouts cut into random reads like the stdlib" do
    rng = Random.new(NetHttpHelper::SEED + 41)
    NetHttpHelper.count(300).times do
      body = Array.new(rng.rand(5)) { rng.bytes(rng.rand(1..30)) }
      sizes = body.map { |c| c.bytesize.to_s(16).then { |h| [h, h.upcase, "0#{h}", "#{h};e=1", " #{h}"][rng.rand(5)] } }
      text = chunked(body, size_lines: sizes, trailers: rng.rand(2).zero? ? "" : "A: b\r\n")
      text = text.gsub("\r\n", "\n") if rng.rand(4).zero?
      chunks = Array.new(rng.rand(6)) { rng.rand(1..20) }
      block = rng.rand(3).zero?
      expect_codec_parity { read_response(text, chunks: chunks, block: block) }
    end
  end

  it "takes chunk-size lines apart like the stdlib's expressions" do
    rng = Random.new(NetHttpHelper::SEED + 40)
    parts = %w[0 1 9 a f A F g G x ; = - +] + [" ", "\t", "\xFF", "\x00"]
    lines = Array.new(NetHttpHelper.count(2000)) { random_string(rng, parts, 24).b } + ["F" * 16, "F" * 17, "1" + "0" * 16]
    lines.each do |line|
      expected = Parity.outcome { (hex = line.slice(/[0-9a-fA-F]+/)) ? hex.hex : false }
      actual = Parity.outcome(stress: Parity::GC_STRESS) do
        RustyStdlib::NetHttp::Native.chunk_size(line).then { |len| len.nil? ? line.slice(/[0-9a-fA-F]+/).hex : len }
      end
      expect(actual).to eq(expected), "line #{line.inspect}"
    end
  end
end
