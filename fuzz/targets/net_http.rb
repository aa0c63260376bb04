# frozen_string_literal: true

require "net/http"
require_relative "../../spec/net_http/net_http_helper"

module Fuzz
  # The Net::HTTP targets run the same code on both sides, the stdlib's with every piece
  # taken out (RustyStdlib::NetHttp.stdlib); each defines `run(kase)`.
  module NetHttpSides
    include NetHttpHelper

    def outcome(side, kase)
      side == :stdlib ? RustyStdlib::NetHttp.stdlib { run(kase) } : run(kase)
    end
  end

  # Net::HTTPResponse.read_new + reading_body over damaged responses (status lines, folded
  # and malformed headers, chunked and Content-Length bodies, 1xx), handed out by the
  # socket in random pieces: status, headers, body, each_capitalized and what is left
  # unread, or the error.
  class NetHttpResponse < Target
    include NetHttpSides

    RESPONSES = [
      "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\n" \
      "Set-Cookie: b=2\r\n\r\nhello",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n5\r\nhello\r\n" \
      "3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n",
      "HTTP/1.0 404 Not Found\nServer: x\n\nbody until eof",
      "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
      "HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
      "http/1.1 500\r\nX-Folded: a\r\n  b\r\nContent-Length: 3\r\n\r\nerr",
      "HTTP/1.1 200 OK\r\nContent-Range: bytes 0-4/10\r\n\r\n01234",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    ].freeze
    TOKENS = ["\r\n", "\n", "\r", ":", " ", "\t", "0", "f", "F" * 20, ";", "Content-Length: ",
              "Transfer-Encoding: chunked\r\n", "\xff", "\0", "HTTP/", "-1", "Connection: close\r\n"].freeze

    def next_case
      bytes = Mutation.mutate(RESPONSES.sample(random: @rng), @rng, TOKENS, max_edits: 3)
      [bytes, Array.new(@rng.rand(0..4)) { @rng.rand(1..40) }, @rng.rand(6).zero?]
    end

    def run((bytes, pieces, head))
      Parity.outcome do
        io = Net::BufferedIO.new(ChunkedIO.new(bytes, pieces))
        res = Net::HTTPResponse.read_new(io)
        res.reading_body(io, !head) {}
        # What is left unread: where each side stopped consuming the socket's buffer.
        rest = io.read_all
        deep([res.class.name, res.code, res.message, res.http_version, res.to_hash.to_a.flatten,
              res.body.to_s, res.each_capitalized.to_a.flatten, rest])
      end
    end
  end

  # Request heads: Net::HTTP requests with random header names and values (CR/LF, odd
  # encodings, Arrays, non-Strings), paths, versions and form data, executed into a
  # BufferedIO: the bytes written, or the error.
  class NetHttpRequest < Target
    include NetHttpSides

    PIECES = ["a", "X-Name", "-", "", " ", "\r", "\n", "\r\n", "\t", ":", "\u00e9", "\xff", "\0", "v", "1"].freeze
    KLASSES = [Net::HTTP::Get, Net::HTTP::Post, Net::HTTP::Head, Net::HTTP::Put, Net::HTTP::Delete].freeze

    def next_case
      headers = Array.new(@rng.rand(0..5)) { [text(4), [text(6), [text(3), text(3)], 1, nil].sample(random: @rng)] }
      form = @rng.rand(3).zero? ? Array.new(@rng.rand(0..3)) { [text(3), text(3)] } : nil
      [KLASSES.sample(random: @rng), "/#{text(5)}", headers, form, ["1.1", "1.0", "1.1\r"].sample(random: @rng)]
    end

    def run(kase)
      klass, path, headers, form, version = kase
      Parity.with_warnings do
        Parity.outcome do
          request = klass.new(path, headers.to_h)
          request.set_form_data(form) if form && request.request_body_permitted?
          out = StringIO.new
          request.exec(Net::BufferedIO.new(out), version, path)
          deep(out.string)
        end
      end
    end

    private

    def text(max)
      s = Array.new(@rng.rand(0..max)) { PIECES.sample(random: @rng) }.join.b
      @rng.rand(3).zero? ? s : s.force_encoding(Encoding::UTF_8)
    end
  end

  # URI's form codec on random strings in random encodings, with random separators.
  class UriForm < Target
    include NetHttpSides

    PIECES = ["a", "Z", "0", " ", "+", "%", "%2", "%41", "%zz", "%e9", "%C3%A9", "&", "=", ";", "~", "*", "-",
              ".", "_", "\u00e9", "\u6771", "\xff", "\x80", "\0", "\n", "%%", "=%", "&&", "%2B", "%20"].freeze
    ENCODINGS = [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII, Encoding::ISO_8859_1, Encoding::Shift_JIS,
                 Encoding::EUC_JP, Encoding::UTF_16LE, Encoding::Windows_1252].freeze
    CALLS = %i[encode_component encode_component_in decode_component decode_component_in decode decode_in
               decode_with_options encode encode_in].freeze

    def next_case
      s = Array.new(@rng.rand(0..12)) { PIECES.sample(random: @rng) }.join.b
      s.force_encoding(ENCODINGS.sample(random: @rng))
      pairs = Array.new(@rng.rand(0..4)) do
        [s.byteslice(0, @rng.rand(0..s.bytesize)), [nil, s, [s, nil], 1, :sym].sample(random: @rng)]
      end
      [CALLS.sample(random: @rng), s, ENCODINGS.sample(random: @rng), pairs,
       ["&", ";", "&;"].sample(random: @rng), @rng.rand(2).zero?]
    end

    def run(kase)
      call, s, enc, pairs, separator, isindex = kase
      Parity.outcome do
        deep(case call
             when :encode_component then URI.encode_www_form_component(s)
             when :encode_component_in then URI.encode_www_form_component(s, enc)
             when :decode_component then URI.decode_www_form_component(s)
             when :decode_component_in then URI.decode_www_form_component(s, enc)
             when :decode then URI.decode_www_form(s)
             when :decode_in then URI.decode_www_form(s, enc)
             when :decode_with_options
               URI.decode_www_form(s, enc, separator: separator, use__charset_: true, isindex: isindex)
             when :encode then URI.encode_www_form(pairs)
             else URI.encode_www_form(pairs, enc)
             end)
      end
    end
  end

  TARGETS["net_http_request"] = NetHttpRequest
  TARGETS["net_http_response"] = NetHttpResponse
  TARGETS["uri_form"] = UriForm
end
