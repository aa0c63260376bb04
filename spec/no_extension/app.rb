# frozen_string_literal: true

# A small app touching every module rusty_stdlib swaps: its output must not change when
# rusty_stdlib is required first (on CRuby, ours runs; elsewhere, the stdlib stays).
require "json"
require "digest"
require "digest/sha2"
require "net/http"
require "stringio"

doc = { "name" => "café", "tags" => %w[a b], "n" => [1, 2.5, nil, true], "nested" => { "k" => -3 } }
text = JSON.generate(doc)
puts text, JSON.pretty_generate(doc), JSON.parse(text) == doc, JSON.dump([1, "x"])
puts((JSON.parse("{") rescue $!.class))

bytes = Marshal.dump([doc, :sym, 2**70, 1.5, "s" * 3])
puts bytes.unpack1("H*"), Marshal.load(bytes).inspect

puts Digest::MD5.hexdigest("abc"), Digest::SHA1.hexdigest("abc"), Digest::SHA256.base64digest("abc")
sha = Digest::SHA512.new
sha << "a" << "bc"
puts sha.hexdigest

puts URI.encode_www_form(q: "a b&c", lang: "é"), URI.decode_www_form("a=1&b=%20x").inspect
request = Net::HTTP::Post.new("/path?x=1", "content-type" => "text/plain", "x-custom" => "v")
puts request.each_capitalized.to_a.sort.inspect
io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\nhi"))
response = Net::HTTPResponse.read_new(io)
response.reading_body(io, true) { nil }
puts response.code, response.message, response.to_hash.inspect, response.body
