# frozen_string_literal: true

require_relative "net_http_helper"

begin
  require "webrick"
rescue LoadError
  nil
end

# Net::HTTP against a WEBrick server on 127.0.0.1: the same requests made with the
# stdlib's codec and with ours must put the same bytes on the wire and read back the
# same responses.
RSpec.describe "Net::HTTP end to end with RustyStdlib::NetHttp" do
  include NetHttpHelper

  # The server echoes what it received (request line, raw header lines, body) in the
  # body, and a few headers with unusual names back.
  before(:context) do
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
    @port = @server.config[:Port]
    @thread = Thread.new { @server.start }
  end

  after(:context) do
    @server&.shutdown
    @thread&.join
  end

  before do
    skip "webrick is not available" unless defined?(WEBrick)
    skip "uri_form not installed" unless NetHttpHelper.piece?(:uri_form)
  end

  def response_summary(res)
    [res.code, res.message, res.http_version, res.class, res.each_capitalized.to_a.reject { |k, _| k == "Date" },
     res.body, res.body.encoding]
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
end
