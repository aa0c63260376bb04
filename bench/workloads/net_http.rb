# frozen_string_literal: true

# Net::HTTP's message codec and URI's form codec (DESIGN.md §6): request serialising,
# chunked response parsing, form encoding, header-name canonicalising.
module Bench
  module NetHttpInputs
    module_function

    # The net_http shim installs its pieces when net/http is required (after the
    # worker's activation check): a rusty column must not time the stdlib unnoticed.
    def check_pieces!
      return unless defined?(RustyStdlib::NetHttp) && RustyStdlib.installed.include?(:net_http)

      missing = RustyStdlib::NetHttp::SEAMS.map(&:first) - RustyStdlib::NetHttp.pieces
      raise "net_http pieces not installed: #{missing.join(', ')}" unless missing.empty?
    end

    # 20 pairs with spaces, reserved bytes, % and multibyte UTF-8.
    def form_pairs
      check_pieces!
      Array.new(20) { |i| ["key #{i}&=", "välue/#{i}?%+ ünï 東京 #{'x' * i}"] }
    end

    # 16 header fields in assorted cases.
    def header_fields
      check_pieces!
      %w[content-type ACCEPT user-agent x-request-id Cache-Control if-none-match
         x-forwarded-for accept-encoding AUTHORIZATION cookie x-custom-header-name
         content-length host connection referer x-a].to_h { |k| [k, "v"] }
    end

    # A ~4.5 KB chunked response with 10 headers, 3 of them Set-Cookie.
    def chunked_response
      check_pieces!
      body = Random.new(42).bytes(4500).unpack1("H*")[0, 4500]
      chunks = body.scan(/.{1,700}/m).map { |c| "#{c.bytesize.to_s(16)}\r\n#{c}\r\n" }.join
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n" \
        "Server: bench\r\nDate: Sun, 29 Nov 2026 12:00:00 GMT\r\nCache-Control: no-cache\r\n" \
        "X-Request-Id: 1234\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2; Path=/\r\n" \
        "Set-Cookie: c=3; HttpOnly\r\nVary: Accept\r\n\r\n#{chunks}0\r\n\r\n"
    end
  end
end

Bench.define(:net_http, requires: %w[net/http stringio uri], source: "generated, fixed inputs") do
  workload "net_http-form-encode",
           setup: -> { Bench::NetHttpInputs.form_pairs },
           op: "URI.encode_www_form(input)"
  workload "net_http-form-decode",
           setup: -> { URI.encode_www_form(Bench::NetHttpInputs.form_pairs) },
           bytes: ->(input) { input.bytesize },
           op: "URI.decode_www_form(input)",
           output: ->(value) { value.inspect }
  workload "net_http-header-canonicalize",
           setup: -> { Net::HTTP::Get.new("/", Bench::NetHttpInputs.header_fields) },
           op: "input.each_capitalized.to_a",
           output: ->(value) { value.inspect }
  workload "net_http-request-serialize",
           setup: -> { Bench::NetHttpInputs.form_pairs },
           op: "req = Net::HTTP::Post.new('/submit'); req.set_form_data(input); " \
               "out = StringIO.new; req.exec(Net::BufferedIO.new(out), '1.1', '/submit'); out.string"
  workload "net_http-response-parse",
           setup: -> { Bench::NetHttpInputs.chunked_response },
           bytes: ->(input) { input.bytesize },
           op: "io = Net::BufferedIO.new(StringIO.new(input)); res = Net::HTTPResponse.read_new(io); " \
               "res.reading_body(io, true) {}; [res.to_hash, res.body]",
           output: ->(value) { value.inspect }
end
