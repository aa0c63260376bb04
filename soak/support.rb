# frozen_string_literal: true

# What every soak check (soak/checks/*.rb) shares. A check runs in its own process, twice:
# with the stdlib (RUSTY_STDLIB=off) and with ours. It prints
#   result <label> <sha256>   what an operation gave (value or exception), to compare the sides
#   figure<TAB><name><TAB><value>  a measurement for the report
#   failed <why>              an invariant the check itself saw broken
# soak/run.rb compares the result lines of both sides and reports the figures.
$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "rusty_stdlib"
require "json"
require "digest"
require "net/http"
require "stringio"

module Soak
  SHORT = ENV["SOAK_SHORT"] == "1"
  OURS = !%w[off 0].include?(ENV["RUSTY_STDLIB"])

  module_function

  # `full` in a full soak, `short` in CI's short form.
  def scale(full, short)
    SHORT ? short : full
  end

  def result(label, value)
    puts "result #{label} #{Digest::SHA256.hexdigest(describe(value))}"
  end

  # What running the block gave, as a result line: its value or its exception.
  def outcome(label)
    result(label, yield)
  rescue StandardError, NoMemoryError, SystemStackError => e
    result(label, [:raised, e.class.name, e.message])
  end

  def figure(name, value)
    puts "figure\t#{name}\t#{value}"
  end

  def fail!(why)
    puts "failed #{why}"
  end

  # Values as comparable text: classes, encodings and frozenness included.
  def describe(value)
    case value
    when String then "#{value.class}:#{value.encoding}:#{value.frozen?}:#{value.b.inspect}"
    when Array then "[#{value.map { |v| describe(v) }.join(',')}]"
    when Hash then "{#{value.map { |k, v| "#{describe(k)}=>#{describe(v)}" }.join(',')}}"
    when Float then [value].pack("G").unpack1("H*")
    else "#{value.class}:#{value.inspect}"
    end
  end

  # Resident set size of this process in kB (Linux).
  def rss_kb
    File.read("/proc/self/status")[/^VmRSS:\s+(\d+)/, 1].to_i
  end

  # A seeded JSON-shaped document of about `items` records.
  def document(items, seed: 42)
    random = Random.new(seed)
    Array.new(items) do |i|
      { "id" => i, "name" => "user #{random.rand(10_000)} caf\u00e9", "score" => random.rand.round(8),
        "tags" => Array.new(random.rand(4)) { |t| "t#{t}" }, "ok" => i.even?, "none" => nil,
        "nested" => { "big" => 2**64 + i, "list" => [1.5, -2, "x" * random.rand(40)] } }
    end
  end

  # An HTTP response with a chunked body of `chunks` chunks.
  def http_response(chunks)
    body = Array.new(chunks) { |i| "#{(i % 90 + 10).to_s(16)}\r\n#{'b' * (i % 90 + 10)}\r\n" }.join
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n" \
      "X-Request-Id: 42\r\nTransfer-Encoding: chunked\r\n\r\n#{body}0\r\n\r\n".b
  end

  # The response `bytes` parsed by Net::HTTP: status, headers, body.
  def read_response(bytes)
    read_response_from(StringIO.new(bytes))
  end

  def read_response_from(source)
    io = Net::BufferedIO.new(source)
    response = Net::HTTPResponse.read_new(io)
    response.reading_body(io, true) {}
    [response.code, response.to_hash, response.body]
  end

  # One of each module's operations on `doc` (and its text): what they gave.
  def every_module(doc, text = JSON.generate(doc))
    dumped = Marshal.dump(doc)
    [JSON.parse(text), JSON.generate(doc), JSON.pretty_generate(doc), Marshal.load(dumped), dumped,
     Digest::SHA256.hexdigest(text), Digest::MD5.digest(dumped), read_response(http_response(20)),
     URI.encode_www_form("q" => text[0, 200], "n" => 1)]
  end
end
