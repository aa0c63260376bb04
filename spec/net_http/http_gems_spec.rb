# frozen_string_literal: true

require_relative "../spec_helper"

# HTTP client gems built on Net::HTTP (Debian's ruby-httparty, ruby-rest-client,
# ruby-faraday) and WebMock, which test suites use to stub Net::HTTP: the same script runs
# with the stdlib alone and with rusty_stdlib required first, and everything it prints
# (statuses, parsed bodies, headers, cookies, encodings, exceptions) must be the same.
module HttpGemsSpec
  GEMS = %w[httparty rest-client faraday webmock].freeze

  # Against a WEBrick server on 127.0.0.1 (the Date and Server headers and its port masked).
  CLIENTS = <<~'RUBY'
    require "webrick"
    require "net/http"
    require "json"
    require "zlib"
    require "stringio"
    require "httparty"
    require "rest-client"
    require "faraday"
    server = WEBrick::HTTPServer.new(Port: 0, BindAddress: "127.0.0.1", Logger: WEBrick::Log.new(File::NULL),
                                     AccessLog: [])
    server.mount_proc("/json") do |req, res|
      res["Content-Type"] = "application/json"
      # WEBrick's query keys are binary Strings, which json 3 refuses to write when not
      # ASCII ("é" below): they are UTF-8, as the client sent them.
      query = req.query.to_h { |k, v| [k.dup.force_encoding(Encoding::UTF_8), v.to_s.dup.force_encoding(Encoding::UTF_8)] }
      res.body = JSON.generate("q" => query, "m" => req.request_method, "b" => req.body,
                               "ct" => req["content-type"], "headers" => req.header.keys.sort)
    end
    server.mount_proc("/chunked") do |_req, res|
      res.chunked = true
      res["Set-Cookie"] = "a=1"
      res.cookies << WEBrick::Cookie.new("b", "2")
      res.body = "x" * 5000
    end
    server.mount_proc("/gzip") do |_req, res|
      res["Content-Encoding"] = "gzip"
      io = StringIO.new
      Zlib::GzipWriter.new(io).tap { |z| z.write("hello " * 100) }.close
      res.body = io.string
    end
    server.mount_proc("/redirect") { |_req, res| res.set_redirect(WEBrick::HTTPStatus::Found, "/json?r=1") }
    server.mount_proc("/status") { |_req, res| res.status = 422; res.body = "bad" }
    thread = Thread.new { server.start }
    base = "http://127.0.0.1:#{server.config[:Port]}"
    cases = {
      httparty_get: -> { r = HTTParty.get("#{base}/json", query: { a: "b c", "é" => [1, 2] }); [r.code, r.parsed_response, r.headers["content-type"]] },
      httparty_post: -> { r = HTTParty.post("#{base}/json", body: { x: "1 2", y: %w[a b] }); [r.code, r.parsed_response] },
      httparty_json: -> { HTTParty.post("#{base}/json", body: { x: 1 }.to_json, headers: { "Content-Type" => "application/json" }).parsed_response },
      httparty_chunked: -> { r = HTTParty.get("#{base}/chunked"); [r.code, r.body.size, r.headers.get_fields("set-cookie"), r.body.encoding] },
      httparty_gzip: -> { r = HTTParty.get("#{base}/gzip"); [r.body[0, 20], r.body.encoding] },
      httparty_redirect: -> { r = HTTParty.get("#{base}/redirect"); [r.code, r.parsed_response["q"]] },
      httparty_422: -> { r = HTTParty.get("#{base}/status"); [r.code, r.body] },
      rest_get: -> { r = RestClient.get("#{base}/json", params: { a: 1, b: "x y" }); [r.code, JSON.parse(r.body), r.headers[:content_type]] },
      rest_post: -> { JSON.parse(RestClient.post("#{base}/json", { x: "1 2", nested: { a: 1 } }).body) },
      rest_chunked: -> { r = RestClient.get("#{base}/chunked"); [r.body.size, r.cookies, r.body.encoding] },
      rest_gzip: -> { RestClient.get("#{base}/gzip").body[0, 12] },
      rest_422: -> { RestClient.get("#{base}/status") },
      faraday_get: -> { r = Faraday.get("#{base}/json", { a: "1 2" }, { "X-Thing" => "v" }); [r.status, JSON.parse(r.body), r.headers["content-type"]] },
      faraday_post: -> { r = Faraday.post("#{base}/json", URI.encode_www_form(a: "b c"), "Content-Type" => "application/x-www-form-urlencoded"); JSON.parse(r.body) },
      faraday_chunked: -> { r = Faraday.get("#{base}/chunked"); [r.body.size, r.headers["set-cookie"]] },
      net_http_head: -> { Net::HTTP.start("127.0.0.1", server.config[:Port]) { |h| r = h.head("/json"); [r.code, r.body, r.to_hash.keys.sort] } },
      post_form: -> { r = Net::HTTP.post_form(URI("#{base}/json"), "a" => "1 2", "b" => %w[x y]); [r.code, JSON.parse(r.body)] }
    }
    results = cases.transform_values do |call|
      call.call.inspect.gsub(/0x\h+/, "0x_").gsub(/\d\d:\d\d:\d\d GMT/, "T").gsub(/127\.0\.0\.1:\d+/, "127.0.0.1:port")
    rescue StandardError => e
      "raised #{e.class}: #{e.message}"
    end
    server.shutdown
    thread.join
    print Marshal.dump(results)
  RUBY

  # WebMock's stubs: Net::HTTP with no server at all.
  WEBMOCK = <<~'RUBY'
    require "net/http"
    require "json"
    require "webmock"
    include WebMock::API
    WebMock.enable!
    stub_request(:get, "http://example.com/a")
      .to_return(status: 201, body: "hi", headers: { "X-A" => "1", "Set-Cookie" => ["a=1", "b=2"] })
    stub_request(:post, "http://example.com/form").with(body: { "a" => "b c" }).to_return(body: ->(r) { r.body })
    stub_request(:get, "http://example.com/json").to_return(body: { x: [1, 2.5] }.to_json)
    stub_request(:get, "http://example.com/timeout").to_timeout
    cases = {
      get: -> { r = Net::HTTP.get_response(URI("http://example.com/a")); [r.class, r.code, r.body, r.to_hash, r.each_capitalized.to_a] },
      post_form: -> { r = Net::HTTP.post_form(URI("http://example.com/form"), "a" => "b c"); [r.code, r.body] },
      json: -> { JSON.parse(Net::HTTP.get(URI("http://example.com/json"))) },
      timeout: -> { Net::HTTP.get(URI("http://example.com/timeout")) },
      unstubbed: -> { Net::HTTP.get(URI("http://example.com/none")) },
      start: -> { Net::HTTP.start("example.com") { |h| r = h.request(Net::HTTP::Get.new("/a", "Accept" => "x")); [r.body, r["x-a"]] } },
      read_body: -> { Net::HTTP.start("example.com") { |h| parts = []; h.request_get("/a") { |r| r.read_body { |s| parts << s } }; parts } },
      requested: -> { WebMock::RequestRegistry.instance.requested_signatures.hash.keys.map(&:to_s).sort }
    }
    results = cases.transform_values do |call|
      call.call.inspect.gsub(/0x\h+/, "0x_")
    rescue Exception => e # rubocop:disable Lint/RescueException -- Net::OpenTimeout and WebMock's errors
      "raised #{e.class}: #{e.message}"
    end
    print Marshal.dump(results)
  RUBY
end

RSpec.describe "HTTP client gems and WebMock on rusty_stdlib's Net::HTTP codec" do
  before(:all) do
    code = HttpGemsSpec::GEMS.map { |name| "require #{name.inspect}" }.join("; ")
    _, err, status = Open3.capture3(RbConfig.ruby, "-e", code)
    unless status.success?
      @unavailable = "#{err.lines.first&.strip} (Debian's ruby-httparty, ruby-rest-client, ruby-faraday, " \
                     "ruby-webmock; bin/setup installs them)"
    end
    raise "CI must run the HTTP gems spec: #{@unavailable}" if @unavailable && ENV["CI"]
  end

  before { skip @unavailable if @unavailable }

  # The gems' own files warn under -w; this spec is not about them.
  def results(script, ours)
    out, err, status = ruby_run("$VERBOSE = nil\n#{'require "rusty_stdlib"' if ours}\n#{script}\n" \
                                "#{'warn RustyStdlib.status.inspect unless RustyStdlib.status[:net_http] == :installed' if ours}")
    expect([status.success?, err]).to eq([true, ""])
    Marshal.load(out)
  end

  { "httparty, rest-client and faraday against WEBrick" => HttpGemsSpec::CLIENTS,
    "WebMock's stubs" => HttpGemsSpec::WEBMOCK }.each do |what, script|
    it "gives the stdlib's results with #{what}" do
      stdlib = results(script, false)
      ours = results(script, true)
      expect(stdlib.values.grep(/\Araised/).size).to be < stdlib.size / 2 # the script mostly works
      stdlib.each_key { |key| expect([key, ours[key]]).to eq([key, stdlib[key]]) }
    end
  end
end
