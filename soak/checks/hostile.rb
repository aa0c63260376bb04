# frozen_string_literal: true

# Hostile input: declared lengths far beyond the input, deep nesting, truncation at every
# byte. Every outcome (value or exception class and message) is compared with the stdlib's.
require_relative "../support"

# Marshal: a String, Array, Hash, Bignum and symbol of about 2**31 declared in a few bytes.
["\x04\x08\"\x04\xff\xff\xff\x7fabc", "\x04\x08[\x04\xff\xff\xff\x7f0", "\x04\x08{\x04\xff\xff\xff\x7f00",
 "\x04\x08l+\x04\xff\xff\xff\x7f\x00", "\x04\x08:\x04\xff\xff\xff\x7fab", "\x04\x08o:\x06A\x04\xff\xff\xff\x7f",
 "\x04\x08[\xfa", "\x04\x08\"\xfa"].each_with_index do |bytes, i|
  Soak.outcome("marshal huge length #{i}") { Marshal.load(bytes.b) }
end
depth = Soak.scale(100_000, 20_000)
Soak.outcome("marshal deep") { Marshal.load("\x04\x08#{"[\x06" * depth}0".b).flatten.size }
Soak.outcome("json deep") { JSON.parse("[" * depth + "]" * depth) }
Soak.outcome("json deep, unlimited") { JSON.parse("[" * 5_000 + "]" * 5_000, max_nesting: false).flatten }
Soak.outcome("json generate deep") { JSON.generate((1..5_000).reduce([]) { |inner, _| [inner] }) }
Soak.outcome("http huge chunk") { Soak.read_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc".b) }
Soak.outcome("http huge length") { Soak.read_response("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nabc".b) }
Soak.outcome("http long header") { Soak.read_response("HTTP/1.1 200 OK\r\nX: #{'v' * (1 << 20)}\r\nContent-Length: 0\r\n\r\n".b) }

doc = Soak.document(Soak.scale(30, 6))
dumped = Marshal.dump(doc)
text = JSON.generate(doc)
response = Soak.http_response(8)
step = Soak.scale(1, 7)
(0...dumped.bytesize).step(step) { |n| Soak.outcome("marshal cut #{n}") { Marshal.load(dumped.byteslice(0, n)) } }
(0...text.bytesize).step(step) { |n| Soak.outcome("json cut #{n}") { JSON.parse(text.byteslice(0, n)) } }
(0...response.bytesize).step(step) { |n| Soak.outcome("http cut #{n}") { Soak.read_response(response.byteslice(0, n)) } }
invalid = text.b.sub("caf\xC3\xA9".b, "caf\xC3".b)
Soak.outcome("json invalid UTF-8") { JSON.parse(invalid) }
Soak.outcome("json generate invalid UTF-8") { JSON.generate(["caf\xC3"]) }
Soak.figure("truncations", (dumped.bytesize + text.bytesize + response.bytesize) / step)
