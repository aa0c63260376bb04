# frozen_string_literal: true

require_relative "net_http_helper"

RSpec.describe "Net::HTTPGenericRequest#write_header (RustyStdlib::NetHttp :request_head)" do
  include NetHttpHelper

  before do
    skip "request_head not installed: #{RustyStdlib::NetHttp.piece_status[:request_head]}" unless NetHttpHelper.piece?(:request_head)
  end

  # Records what write_header writes.
  class NetHttpHelper::HeadSock
    attr_reader :written

    def initialize
      @written = []
    end

    def write(buf)
      @written << buf.dup
      buf.bytesize
    end
  end

  def head_of(request, ver = "1.1", path = request.path)
    sock = NetHttpHelper::HeadSock.new
    request.send(:write_header, sock, ver, path)
    sock.written
  end

  def request(klass = Net::HTTP::Get, path = "/", headers = {})
    klass.new(path, headers)
  end

  it "writes heads like the stdlib for ordinary requests" do
    NetHttpHelper.sample([Net::HTTP::Get, Net::HTTP::Post, Net::HTTP::Head, Net::HTTP::Delete], 2).each do |klass|
      req = request(klass, "/p?q=1&r=%20", "x-custom-NAME" => "v", "content-type" => "text/plain")
      req.add_field("x-custom-name", "w")
      req.basic_auth("user", "pass")
      expect_codec_parity { head_of(req) }
      expect_codec_parity { head_of(req, "1.0", "http://example.com/abs") }
    end
  end

  it "writes heads like the stdlib for unusual headers, paths and encodings" do
    odd_headers = [
      { "---" => ["x"] }, { "" => ["x"] }, { "a" => [] }, { "a" => ["1", "2", ""] },
      { "utf8" => ["\u00e9"] }, { "bin" => ["\xFF".b] }, { "mixed" => ["\u00e9", "\xFF".b] },
      { "\u00e9-name" => ["v"] }, { "sym" => [:v] }, { "int" => 1 }, { :key => ["v"] },
      { "k" => ["v".encode("UTF-16LE")] }, { "k" => ["frozen".freeze] }, { "k" => nil },
      { "k" => [Class.new(String).new("sub")] }
    ]
    NetHttpHelper.sample(odd_headers, 4).each do |headers|
      req = request
      req.instance_variable_get(:@header).replace(headers)
      expect_codec_parity { head_of(req) }
    end
    NetHttpHelper.sample(["/a\r\nb", "/a\nb", "/\u00e9", "/\xFF".b, :"/sym", nil, 1], 3).each do |path|
      expect_codec_parity { head_of(request, "1.1", path) }
    end
    NetHttpHelper.sample([nil, 1.1, "1.1\r", "1.1".b], 2).each do |ver|
      expect_codec_parity { head_of(request, ver) }
    end
  end

  it "raises the stdlib's errors for a socket argument that is no socket" do
    [nil, BasicObject.new, Object.new].each do |sock|
      expect_codec_parity { request(Net::HTTP::Get, "/", "a-b" => "c").exec(sock, "1.1", "/") }
    end
  end

  it "leaves requests with their own each_capitalized or capitalize to the stdlib" do
    req = request(Net::HTTP::Get, "/", "a-b" => "c")
    def req.each_capitalized
      yield "Own-Name", "own value"
    end
    expect_codec_parity { head_of(req) }
    sub = Class.new(Net::HTTP::Get) do
      private def capitalize(name) = name.upcase
    end
    expect_codec_parity { head_of(sub.new("/", "a-b" => "c")) }
    expect(RustyStdlib::NetHttp::RequestHead.stock?(req)).to be(false)
    expect(RustyStdlib::NetHttp::RequestHead.stock?(request)).to be(true)
  end

  it "writes seeded random heads like the stdlib" do
    rng = Random.new(NetHttpHelper::SEED + 30)
    name_chars = ["a", "B", "-", "_", "0", "\u00e9"]
    value_chars = ["a", " ", ";", "=", "\u00e9", "\xFF", "\t"]
    NetHttpHelper.count(200).times do
      req = request(Net::HTTP::Post, "/#{random_string(rng, %w[a / ? = & %], 8)}")
      rng.rand(5).times do
        req.add_field(random_string(rng, name_chars, 8), random_string(rng, value_chars, 6).force_encoding([Encoding::UTF_8, Encoding::BINARY][rng.rand(2)]))
      rescue ArgumentError
        nil
      end
      expect_codec_parity { head_of(req) }
    end
  end
end
