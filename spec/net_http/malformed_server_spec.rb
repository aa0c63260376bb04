# frozen_string_literal: true

require "zlib"
require_relative "end_to_end_helper"

# Net::HTTP against a raw TCP server that answers with fixed, mostly malformed bytes:
# what the stdlib makes of them (a response, or an exception's class and message) must
# be what ours makes of them, and so must the set_debug_output log.
RSpec.describe "Net::HTTP end to end against malformed responses with RustyStdlib::NetHttp" do
  include EndToEndHelper

  ok = "Content-Length: 2\r\n\r\nok"
  gzipped = Zlib.gzip("gzipped body " * 40)
  chunked = ->(*chunks) { "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n#{chunks.join}" }
  responses = {
    "/bad-status" => "HTTP/1.1 abc OK\r\n#{ok}",
    "/icy-status" => "ICY 200 OK\r\n#{ok}",
    "/status-2000" => "HTTP/1.1 2000 OK\r\n#{ok}",
    "/status-999" => "HTTP/1.1 999 Weird\r\n#{ok}",
    "/tab-status" => "HTTP/1.1\t200\tOK\r\n#{ok}",
    "/no-reason" => "HTTP/1.1 200\r\n#{ok}",
    "/lower-case-version" => "http/1.1 200 OK\r\n#{ok}",
    "/no-version" => "HTTP 200 OK\r\n#{ok}",
    "/binary-reason" => "HTTP/1.1 200 \xFF\xFEok\r\n#{ok}",
    "/empty" => "",
    "/eof-mid-status" => "HTTP/1.1 20",
    "/eof-mid-headers" => "HTTP/1.1 200 OK\r\nContent-Type: te",
    "/eof-after-headers" => "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n",
    "/eof-mid-body" => "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
    "/http10-until-eof" => "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the server closes",
    "/bare-lf" => "HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 5\n\nhello",
    "/mixed-line-ends" => "HTTP/1.1 200 OK\r\nA: 1\nB: 2\r\n\nok",
    "/folded" => "HTTP/1.1 200 OK\r\nX-Folded: first\r\n  second\r\n\tthird\r\nX-Next: n\r\n#{ok}",
    "/leading-fold" => "HTTP/1.1 200 OK\r\n folded first\r\n#{ok}",
    "/bad-header" => "HTTP/1.1 200 OK\r\nno colon here\r\n#{ok}",
    "/space-before-colon" => "HTTP/1.1 200 OK\r\nX-Space : v\r\nX-Empty:\r\n:no-name\r\nX-Colons: a: b: c\r\n#{ok}",
    "/odd-bytes-in-headers" => "HTTP/1.1 200 OK\r\nX-Bin: \xFF\xFE\r\nX-Utf8: \u00e9\u6771\r\nX-Nul: a\x00b\r\nX-VT: \v1\f\r\n#{ok}",
    "/duplicates" => "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nSET-COOKIE: c=3\r\nX-Dup: 1\r\nx-dup: 2\r\n#{ok}",
    "/long-header" => "HTTP/1.1 200 OK\r\nX-Long: #{'v' * 20_000}\r\n#{ok}",
    "/many-headers" => "HTTP/1.1 200 OK\r\n#{(1..300).map { |i| "X-H-#{i}: #{i}\r\n" }.join}#{ok}",
    "/length-with-junk" => "HTTP/1.1 200 OK\r\nContent-Length: 2abc\r\n\r\nokEXTRA",
    "/length-not-a-number" => "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok",
    "/length-negative" => "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok",
    "/length-twice" => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk",
    "/no-content-with-body" => "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
    "/continue-then-ok" => "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n#{ok}",
    "/bad-chunk-size" => chunked.call("zz\r\nabc\r\n0\r\n\r\n"),
    "/chunk-size-junk" => chunked.call("3zz\r\nabc\r\n0\r\n\r\n"),
    "/chunk-extension" => chunked.call("5;name=value\r\nhello\r\n0;last\r\n\r\n"),
    "/chunk-trailer" => chunked.call("5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"),
    "/chunk-hex-forms" => chunked.call("0000A\r\n0123456789\r\n a \r\nabcdefghij\r\n0\r\n\r\n"),
    "/chunk-bare-lf" => chunked.call("3\nabc\n0\n\n"),
    "/chunk-huge-size" => chunked.call("FFFFFFFFFFFFFFFFFFFFFF\r\nabc"),
    "/eof-mid-chunk" => chunked.call("10\r\nabc"),
    "/eof-before-last-chunk" => chunked.call("3\r\nabc\r\n"),
    "/chunked-and-length" => "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "/gzip-chunked" => "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" \
                       "#{gzipped.scan(/.{1,7}/m).map { |c| "#{c.bytesize.to_s(16)}\r\n#{c}\r\n" }.join}0\r\n\r\n",
    "/gzip-broken" => "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello",
    "/trailing-spaces" => "HTTP/1.1 200 OK  \r\nX-Trail: v  \t\r\nX-Lead:   v\r\n#{ok}",
    "/cr-cr-lf" => "HTTP/1.1 200 OK\r\r\nX-A: 1\r\r\n#{ok}",
    "/utf8-reason" => "HTTP/1.1 200 \u00c7a va\r\n#{ok}",
    "/te-capitalised" => "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "/te-gzip-chunked" => "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "/keep-alive-close" => "HTTP/1.1 200 OK\r\nConnection: close\r\nKeep-Alive: timeout=5\r\n#{ok}",
    "/gzip-truncated" => "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\n\r\n#{gzipped.b[0, 20]}",
  }

  # The same bytes arriving in small pieces: reads end inside status lines, header
  # lines, chunk-size lines, chunk data and CRLFs (seeded, so the same split every run).
  rng = Random.new(NetHttpHelper::SEED)
  split = ->(bytes) { bytes.b.chars.slice_when { rng.rand(9).zero? }.map(&:join) }
  trickled = {
    "/trickle-chunked" => chunked.call("5;ext\r\nhello\r\n1a\r\n#{'z' * 26}\r\n0\r\nX-Trailer: t\r\n\r\n"),
    "/trickle-folded" => "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n#{ok}",
    "/trickle-gzip" => responses.fetch("/gzip-chunked")[0, 400],
    "/trickle-bad-chunk" => chunked.call("3\r\nabc\r\nxyz\r\n"),
  }.transform_values { |bytes| split.call(bytes) }
  responses.merge!(trickled)

  before(:context) { @server = CannedHttpServer.start(responses) }
  after(:context) { @server&.stop }

  # GET and HEAD (retried once by Net::HTTP on EOF: idempotent) and POST (not retried),
  # bodies read in segments, each on a fresh connection with its debug log. Where the
  # segments split depends on how the bytes arrived, so only their sum is compared.
  def exchange(path)
    [Net::HTTP::Get.new(path), Net::HTTP::Head.new(path),
     Net::HTTP::Post.new(path, "Content-Type" => "text/plain")].map do |req|
      req.body = "posted" if req.request_body_permitted?
      log = StringIO.new(+"")
      http = Net::HTTP.new("127.0.0.1", @server.port)
      http.read_timeout = 5 # every response ends by closing the connection; this only bounds a bug
      http.set_debug_output(log)
      segments = []
      outcome = outcome_of do
        http.start { |h| h.request(req) { |res| res.read_body { |s| segments << s } } }
      end
      [outcome.raised, outcome.klass, outcome.raised ? deep(outcome.value) : response_summary(outcome.value),
       deep(segments.join), segments.map(&:encoding).uniq, masked_log(log.string)]
    end
  end

  responses.each_key do |path|
    it "reads #{path} as the stdlib does" do
      expect_e2e_parity { exchange(path) }
    end
  end
end
