# frozen_string_literal: true

require_relative "end_to_end_helper"

begin
  require "webrick"
rescue LoadError
  nil
end

# Net::HTTP against a WEBrick server on 127.0.0.1: the same requests made with the
# stdlib's codec and with ours must put the same bytes on the wire and read back the
# same responses.
RSpec.describe "Net::HTTP end to end with RustyStdlib::NetHttp" do
  include EndToEndHelper

  # The server echoes what it received (request line, raw header lines, body) in the
  # body, and a few headers with unusual names back.
  before(:context) do
    raise "CI must run the WEBrick end-to-end specs: webrick is missing (Debian ruby-webrick)" if ENV["CI"] && !defined?(WEBrick)
    next unless defined?(WEBrick)

    @server = WEBrick::HTTPServer.new(BindAddress: "127.0.0.1", Port: 0,
                                      Logger: WEBrick::Log.new(File::NULL), AccessLog: [])
    @server.mount_proc("/echo") do |req, res|
      res.status = req.query_string.to_s.include?("status=404") ? 404 : 200
      res["content-type"] = "text/plain; charset=utf-8"
      res["x-echo-QUERY"] = req.query_string.to_s
      res["x-multi-part-name"] = "1"
      res.body = ["#{req.request_method} #{req.unparsed_uri}", *req.raw_header.map(&:chomp),
                  "", req.body.to_s].join("\n")
    end
    @server.mount_proc("/chunked") do |req, res|
      res.chunked = true
      res["x-query"] = req.query_string.to_s
      res.body = "chunked body for #{req.query_string} " * 50
    end
    # The client's port: the same for every request of a kept-alive connection.
    @server.mount_proc("/peer") do |req, res|
      res["x-conn"] = "#{req.peeraddr[1]}/0"
      res.body = "peer"
    end
    @server.mount_proc("/cookies") do |_req, res|
      %w[a=1 b=2 c=3].each { |c| res.cookies << WEBrick::Cookie.parse_set_cookie("#{c}; Path=/") }
      res.body = "cookies"
    end
    @server.mount_proc("/no-content") { |_req, res| res.status = 204 }
    # Answers `Expect: 100-continue` (WEBrick leaves that to the handler), then echoes.
    @server.mount_proc("/continue") do |req, res|
      req.continue
      res.body = "#{req.request_method} #{req.body}"
    end
    @files = Dir.mktmpdir("rusty-webrick")
    File.write(File.join(@files, "file.txt"), "static file\n" * 100)
    @server.mount("/files", WEBrick::HTTPServlet::FileHandler, @files)
    @port = @server.config[:Port]
    @thread = Thread.new { @server.start }
  end

  after(:context) do
    @server&.shutdown
    @thread&.join
    FileUtils.remove_entry(@files) if @files
  end

  before do
    skip "webrick is not available" unless defined?(WEBrick)
    skip "uri_form not installed" unless NetHttpHelper.piece?(:uri_form)
  end

  def http
    Net::HTTP.start("127.0.0.1", @port) { |h| yield h }
  end

  forms = [
    { "q" => "ruby on rails", "lang" => "日本語", "empty" => "", "nil" => nil, "tags" => ["a&b", "c=d", nil] },
    [["a", 1], ["a", 2], ["sym", :x], ["bin", "\xFF\x00".b], ["tilde", "~*-._"]],
    {},
  ]

  it "posts form data (set_form_data) identically" do
    forms.each do |form|
      expect_codec_parity(stress: false) do
        http do |h|
          req = Net::HTTP::Post.new("/echo")
          req.set_form_data(form)
          req["x-custom-header-NAME"] = "v"
          response_summary(h.request(req))
        end
      end
    end
  end

  it "sends GET queries built with encode_www_form and decodes the echo identically" do
    forms.each do |form|
      expect_codec_parity(stress: false) do
        http do |h|
          query = URI.encode_www_form(form)
          res = h.get("/echo?#{query}", "x-a-b" => "c")
          [response_summary(res), URI.decode_www_form(res["x-echo-query"]),
           URI.decode_www_form(res["x-echo-query"], Encoding::BINARY)]
        end
      end
    end
  end

  it "reads chunked responses and logs set_debug_output identically" do
    expect_codec_parity(stress: false) do
      log = StringIO.new(+"")
      http = Net::HTTP.new("127.0.0.1", @port)
      http.set_debug_output(log)
      segments = []
      res = http.start do |h|
        h.request_get("/chunked?#{URI.encode_www_form(a: [1, 2], b: 'x y')}") { |r| r.read_body { |s| segments << s } }
      end
      [response_summary(res).first(5), segments.join, log.string.gsub(/Date: [^\\]*/, "Date: -")]
    end
  end

  it "reads a non-200 response and posts with Net::HTTP.post_form identically" do
    expect_codec_parity(stress: false) do
      http { |h| response_summary(h.get("/echo?status=404")) }
    end
    expect_codec_parity(stress: false) do
      response_summary(Net::HTTP.post_form(URI("http://127.0.0.1:#{@port}/echo"), "k" => "v w", "é" => "ü"))
    end
  end

  it "keeps the connection alive across GET, HEAD, PUT and chunked POST (then a DELETE)" do
    peers = nil
    expect_e2e_parity do
      http do |h|
        put = Net::HTTP::Put.new("/echo", "Content-Type" => "text/plain")
        put.body = "put body"
        chunked = Net::HTTP::Post.new("/echo", "Transfer-Encoding" => "chunked", "Content-Type" => "text/plain")
        chunked.body_stream = StringIO.new("chunked request body " * 200)
        responses = [h.get("/peer"), h.head("/echo?head"), h.request(put), h.get("/peer"),
                     h.request(chunked), h.get("/peer"),
                     h.request(Net::HTTP::Delete.new("/echo"))] # 405, and WEBrick closes
        peers = connection_use(responses.values_at(0, 3, 5).map { |r| r["x-conn"] })
        responses.map { |r| response_summary(r) }
      end
    end
    expect(peers.first).to eq(1) # one client port: one connection
  end

  it "reads several Set-Cookie headers, 204, 304 and Range responses" do
    expect_e2e_parity do
      http do |h|
        cookies = h.get("/cookies")
        file = h.get("/files/file.txt")
        [response_summary(cookies), cookies.get_fields("set-cookie"), cookies["set-cookie"],
         [file, h.get("/files/file.txt", "If-Modified-Since" => file["last-modified"]),
          h.get("/files/file.txt", "If-None-Match" => file["etag"]), h.head("/files/file.txt"),
          h.get("/files/file.txt", "Range" => "bytes=5-20"), h.get("/files/missing"),
          h.get("/no-content")].map { |r| response_summary(r) }]
      end
    end
  end

  it "waits for WEBrick's 100 continue before sending the body" do
    log = nil
    expect_e2e_parity do
      debug = StringIO.new(+"")
      http = Net::HTTP.new("127.0.0.1", @port)
      http.set_debug_output(debug)
      http.continue_timeout = 5 # WEBrick answers at once; a missed 100 would wait this long
      value = http.start do |h|
        req = Net::HTTP::Post.new("/continue", "Expect" => "100-continue", "Content-Type" => "text/plain")
        req.body = "after continue"
        response_summary(h.request(req))
      end
      log = masked_log(debug.string)
      [value, log]
    end
    expect(log).to include("HTTP/1.1 100 continue")
  end

  it "answers Net::HTTP.get and Net::HTTP.start with a block identically" do
    expect_e2e_parity do
      uri = URI("http://127.0.0.1:#{@port}/files/file.txt")
      [Net::HTTP.get(uri), Net::HTTP.start(uri.host, uri.port) { |h| response_summary(h.request(Net::HTTP::Get.new(uri))) }]
    end
  end
end
