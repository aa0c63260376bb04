# frozen_string_literal: true

require_relative "end_to_end_helper"

# Net::HTTP against a real nginx on 127.0.0.1 (Debian nginx-light, started by this file
# from a config in a temporary directory): each exchange runs with the stdlib's codec and
# with ours, and the responses (status, headers, bodies, encodings, exceptions) and the
# debug logs (the bytes on the wire) must match.
RSpec.describe "Net::HTTP end to end against nginx with RustyStdlib::NetHttp" do
  include EndToEndHelper

  # Text above gzip_min_length is served gzipped (chunked); smaller text, binary types
  # and `Accept-Encoding: identity` get Content-Length bodies.
  files = {
    "static/small.txt" => "small file\n",
    "static/big.txt" => (1..400).map { |i| "line #{i}: the quick brown fox jumps over the lazy dog\n" }.join,
    "static/data.json" => %({"k":"#{'v' * 3000}","u":"\u00fc\u6771"}\n),
    "static/bytes.bin" => Random.new(NetHttpHelper::SEED).bytes(5000),
    "static/utf8.txt" => "gr\u00fc\u00dfe \u6771\u4eac\n" * 3,
    "static/dir/index.html" => "<p>index</p>\n",
  }.freeze

  # X-Conn "connection serial/request number on it" shows keep-alive reuse; /echo (the
  # echo module) returns the request line, some request headers and the body it read
  # (reading it is what makes nginx answer `Expect: 100-continue`); /dav/ stores PUTs.
  server = <<~CONF
    charset utf-8;
    charset_types text/plain application/json;
    gzip on;
    gzip_types text/plain application/json;
    gzip_min_length 1000;
    gzip_vary on;
    keepalive_requests 10000;
    client_max_body_size 1m;
    add_header X-Conn "$connection/$connection_requests" always;
    location /static/ { root %<root>s; }
    location /dav/ {
      root %<root>s;
      dav_methods PUT DELETE;
      create_full_put_path on;
    }
    location = /echo {
      echo_read_request_body;
      echo "$request_method $request_uri";
      echo "type=$http_content_type length=$http_content_length te=$http_transfer_encoding expect=$http_expect";
      echo_request_body;
    }
    location = /big-chunked { echo_duplicate 4000 "0123456789abcdef-"; }
    location = /cookies {
      add_header X-Conn "$connection/$connection_requests" always;
      add_header Set-Cookie "a=1; Path=/" always;
      add_header Set-Cookie "b=2; HttpOnly" always;
      add_header Set-Cookie "c=3, with comma; Expires=Wed, 21 Oct 2037 07:28:00 GMT" always;
      return 200 "cookies\\n";
    }
    location /limited/ { keepalive_requests 2; alias %<root>s/static/; }
    location = /no-content { return 204; }
    location = /teapot { return 418 "short and stout\\n"; }
    location = /moved { return 301 /static/small.txt; }
  CONF

  before(:context) do
    reason = NginxServer.unavailable_reason
    raise "CI must run the nginx end-to-end specs: #{reason}" if reason && ENV["CI"]
    next if reason

    @server = NginxServer.start(server, files: files)
  end

  after(:context) { @server&.stop }

  before do
    skip "nginx end-to-end specs skipped: #{NginxServer.unavailable_reason}" unless @server
  end

  def base
    "http://127.0.0.1:#{@server.port}"
  end

  # Several requests on one Net::HTTP connection; yields it, returns [block value, log].
  def session
    log = StringIO.new(+"")
    http = Net::HTTP.new("127.0.0.1", @server.port)
    http.set_debug_output(log)
    value = http.start { |h| yield h }
    [value, masked_log(log.string)]
  end

  it "GETs and HEADs Content-Length, gzip-chunked and identity bodies on one kept-alive connection" do
    use = log = nil
    expect_e2e_parity do
      value, log = session do |h|
        conns = []
        results = %w[small.txt big.txt data.json bytes.bin utf8.txt dir/].map do |name|
          res = h.get("/static/#{name}")
          conns << res["x-conn"]
          response_summary(res)
        end
        identity = h.get("/static/big.txt", "Accept-Encoding" => "identity")
        raw_gzip = h.get("/static/big.txt", "Accept-Encoding" => "gzip")
        range = h.get("/static/big.txt", "Range" => "bytes=10-99")
        head = h.head("/static/big.txt")
        conns.concat([identity, raw_gzip, range, head].map { |r| r["x-conn"] })
        use = connection_use(conns)
        [results, [identity, raw_gzip, range, head].map { |r| response_summary(r) }, use]
      end
      [value, log]
    end
    connections, numbers = use
    expect(connections).to eq(1) # all on one connection, numbered 1, 2, 3...
    expect(numbers).to eq((1..10).to_a)
    expect(log).to include("Content-Encoding: gzip", "Transfer-Encoding: chunked", "Content-Length: ")
  end

  it "reconnects when nginx closes a connection after its keepalive_requests" do
    use = nil
    expect_e2e_parity do
      session do |h|
        responses = Array.new(5) { h.get("/limited/small.txt") }
        use = connection_use(responses.map { |r| r["x-conn"] })
        responses.map { |r| response_summary(r) }
      end
    end
    expect(use).to eq([3, [1, 2, 1, 2, 1]]) # "Connection: close" on every 2nd response
  end

  it "sends bodies with POST and PUT (Content-Length, chunked, form) and reads them back" do
    expect_e2e_parity do
      session do |h|
        form = Net::HTTP::Post.new("/echo")
        form.set_form_data("q" => "a b&c", "\u00e9" => "\u00fc", "list" => %w[1 2])
        plain = h.post("/echo", "raw body\r\nwith CRLF", "Content-Type" => "application/octet-stream")
        chunked = Net::HTTP::Post.new("/echo", "Transfer-Encoding" => "chunked", "Content-Type" => "text/plain")
        chunked.body_stream = StringIO.new("streamed " * 500)
        put = h.put("/dav/up/file.txt", "first version\n", "Content-Type" => "text/plain")
        put_again = Net::HTTP::Put.new("/dav/up/file.txt", "Transfer-Encoding" => "chunked", "Content-Type" => "text/plain")
        put_again.body_stream = StringIO.new("second version, chunked\n" * 100)
        [h.request(form), plain, h.request(chunked), put, h.request(put_again), h.get("/dav/up/file.txt"),
         h.request(Net::HTTP::Delete.new("/dav/up/file.txt")), h.get("/dav/up/file.txt"),
         h.delete("/dav/up/x")].map { |r| response_summary(r) } # Depth: Infinity: 400, closes
      end
    end
  end

  it "waits for 100 Continue before sending the body (Expect: 100-continue)" do
    log = nil
    expect_e2e_parity do
      value, log = session do |h|
        h.continue_timeout = 5 # nginx answers at once; a missed 100 would wait this long
        post = Net::HTTP::Post.new("/echo", "Expect" => "100-continue", "Content-Type" => "text/plain")
        post.body = "sent after 100 Continue"
        put = Net::HTTP::Put.new("/dav/continue.txt", "Expect" => "100-continue", "Content-Type" => "text/plain")
        put.body = "put after 100 Continue"
        [h.request(post), h.request(put), h.get("/dav/continue.txt"),
         h.request(Net::HTTP::Delete.new("/dav/continue.txt"))].map { |r| response_summary(r) }
      end
      [value, log]
    end
    expect(log.scan("HTTP/1.1 100 Continue").size).to eq(2)
  end

  it "reads several Set-Cookie headers, 204, 304, 301, 404, 405 and 418 responses" do
    expect_e2e_parity do
      session do |h|
        cookies = h.get("/cookies")
        first = h.get("/static/small.txt")
        etag = h.get("/static/small.txt", "If-None-Match" => first["etag"])
        since = h.get("/static/small.txt", "If-Modified-Since" => first["last-modified"])
        others = [h.get("/no-content"), h.get("/moved"), h.get("/static/missing.txt"),
                  h.post("/static/small.txt", "x", "Content-Type" => "text/plain"), h.get("/teapot"), h.head("/no-content")]
        [response_summary(cookies), cookies.get_fields("set-cookie"), cookies["set-cookie"],
         [etag, since, *others].map { |r| response_summary(r) }]
      end
    end
  end

  it "reads a large chunked (and gzipped) body in segments with read_body" do
    expect_e2e_parity do
      session do |h|
        [{}, { "Accept-Encoding" => "identity" }].map do |headers|
          segments = []
          res = h.request_get("/big-chunked", headers) { |r| r.read_body { |s| segments << s } }
          [response_summary(res).first(6), segments.join.bytesize, segments.join.hash, segments.map(&:encoding).uniq]
        end
      end
    end
  end

  it "serves Net::HTTP.get, get_response, post_form, post and start with a block" do
    expect_e2e_parity do
      uri = URI("#{base}/static/utf8.txt")
      started = Net::HTTP.start(uri.host, uri.port) do |h|
        res = h.request(Net::HTTP::Get.new(uri))
        [response_summary(res), res.body]
      end
      [Net::HTTP.get(uri), response_summary(Net::HTTP.get_response(URI("#{base}/static/big.txt"))),
       response_summary(Net::HTTP.post_form(URI("#{base}/echo?x=1"), "k" => "v w", "\u00e9" => "\u00fc")),
       response_summary(Net::HTTP.post(URI("#{base}/echo"), %({"a":1}), "Content-Type" => "application/json")),
       started]
    end
  end

  it "decodes bodies by their charset where Net::HTTP supports it (response_body_encoding)" do
    skip "Net::HTTP #{Net::HTTP::VERSION} has no response_body_encoding" unless Net::HTTP.method_defined?(:response_body_encoding=)

    expect_e2e_parity do
      http = Net::HTTP.new("127.0.0.1", @server.port)
      http.response_body_encoding = true
      http.start { |h| %w[utf8.txt data.json bytes.bin].map { |f| response_summary(h.get("/static/#{f}")) } }
    end
  end
end
