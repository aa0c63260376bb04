# frozen_string_literal: true

require_relative "net_http_helper"

RSpec.describe RustyStdlib::NetHttp::Native do
  # The parity specs would also pass if every call fell back to the stdlib; these make
  # sure the common calls take the native path (nil means "fall back").
  it "takes the common form calls natively" do
    expect(described_class.encode_www_form_component("a b", nil)).to eq("a+b")
    expect(described_class.encode_www_form_component(:sym, nil)).to eq("sym")
    expect(described_class.encode_www_form({ q: "ruby", page: 1, tags: %w[a b] }, nil)).to eq("q=ruby&page=1&tags=a&tags=b")
    expect(described_class.encode_www_form([%w[a 1], ["b"]], nil)).to eq("a=1&b")
    expect(described_class.decode_www_form_component("a+%41", Encoding::UTF_8)).to eq("a A")
    expect(described_class.decode_www_form("a=1&b=2", Encoding::UTF_8, "&", false)).to eq([%w[a 1], %w[b 2]])
    expect(described_class.decode_www_form("a=1", "UTF-8", ";", true)).to eq([%w[a 1]])
    expect(described_class.capitalize("content-type")).to eq("Content-Type")
    expect(described_class.status_line("HTTP/1.1 200 OK".b)).to eq(%w[1.1 200 OK])
    expect(described_class.status_line("HTTP/1.1 20 OK".b)).to be(false)
    expect(described_class.header_line("A : b\r\n".b)).to eq([false, false, nil, "A", "b"])
    expect(described_class.header_line("\r\n".b)).to be(false)
    expect(described_class.chunk_size("1a;ext".b)).to eq(26)
    expect(described_class.chunk_size("zz".b)).to be(false)
    expect(described_class.request_head("GET", "/", "1.1", { "a-b" => %w[1 2] })).to eq("GET / HTTP/1.1\r\nA-B: 1, 2\r\n\r\n")
  end

  it "falls back for what it does not take" do
    expect(described_class.encode_www_form_component(Object.new, nil)).to be_nil
    expect(described_class.encode_www_form_component("é", Encoding::UTF_8)).to be_nil
    expect(described_class.encode_www_form({ a: 1 }.each, nil)).to be_nil
    expect(described_class.decode_www_form_component("%", Encoding::UTF_8)).to be_nil
    expect(described_class.decode_www_form("a=1\n", Encoding::UTF_8, "\n", false)).to be_nil
    expect(described_class.capitalize("stra\u00dfe")).to be_nil
    expect(described_class.status_line("HTTP/1.1 200 OK")).to be_nil
    expect(described_class.header_line("A: b\r\n")).to be_nil
    expect(described_class.chunk_size("1a")).to be_nil
    expect(described_class.chunk_size(("F" * 17).b)).to be_nil
    expect(described_class.request_head("GET", "/\u00e9", "1.1", {})).to be_nil
    expect(described_class.request_head("GET", "/", "1.1", { "a" => "1" })).to be_nil
  end
end

RSpec.describe RustyStdlib::NetHttp do
  it "keeps every replaced method's visibility" do
    described_class::SEAMS.each do |piece, mod, target_proc, _file|
      next unless described_class.pieces.include?(piece)

      target = target_proc.call
      names = mod.instance_methods(false) + mod.private_instance_methods(false)
      ours = names.to_h { |n| [n, target.private_method_defined?(n)] }
      stdlib = described_class.stdlib { names.to_h { |n| [n, target.private_method_defined?(n)] } }
      expect(ours).to eq(stdlib)
    end
  end

  it "installs every piece whose stdlib version is proven" do
    skip "net_http is not activated: #{RustyStdlib.status[:net_http]}" unless RustyStdlib.installed.include?(:net_http)

    described_class.piece_status.each_value do |status|
      expect(status).to eq(:installed).or(match(/is not proven/))
    end
  end
end

RSpec.describe "RustyStdlib::NetHttp install checks" do
  def refusal(*args)
    RustyStdlib::NetHttp.send(:refusal, *args)
  end

  it "refuses stdlib versions the specs do not prove" do
    stub_const("URI::VERSION", "9.9.9")
    stub_const("Net::HTTP::VERSION", "9.9.9")
    expect(refusal(:uri_form, RustyStdlib::NetHttp::URIForm, URI.singleton_class, "uri/common.rb"))
      .to match(/URI::VERSION 9\.9\.9 is not proven/)
    expect(refusal(:response_head, RustyStdlib::NetHttp::ResponseHead, Net::HTTPResponse.singleton_class, "net/http/response.rb"))
      .to match(/Net::HTTP::VERSION 9\.9\.9 is not proven/)
  end

  it "refuses versions proven only on another Ruby" do
    here = "on Ruby #{RustyStdlib::RUBY_SERIES} (proven: "
    uris = RustyStdlib::NetHttp::URI_PROVEN_BY_RUBY.values.flatten - [URI::VERSION]
    net_https = RustyStdlib::NetHttp::NET_HTTP_PROVEN_BY_RUBY.values.flatten - [Net::HTTP::VERSION]
    expect([uris.size, net_https.size]).to eq([2, 2])
    uris.zip(net_https).each do |uri, net_http|
      stub_const("URI::VERSION", uri)
      stub_const("Net::HTTP::VERSION", net_http)
      expect(refusal(:uri_form, RustyStdlib::NetHttp::URIForm, URI.singleton_class, "uri/common.rb"))
        .to start_with("URI::VERSION #{uri} is not proven for uri_form #{here}")
      expect(refusal(:chunked_body, RustyStdlib::NetHttp::ChunkedBody, Net::HTTPResponse, "net/http/response.rb"))
        .to start_with("Net::HTTP::VERSION #{net_http} is not proven for chunked_body #{here}")
    end
  end

  it "refuses a seam someone else already patched" do
    redefined = Class.new do
      def each_capitalized = nil
      def capitalize(name) = name
    end
    expect(refusal(:header_names, RustyStdlib::NetHttp::HeaderNames, redefined, "net/http/header.rb"))
      .to match(/#each_capitalized is not the stdlib's/)
    expect(refusal(:header_names, RustyStdlib::NetHttp::HeaderNames, Class.new, "net/http/header.rb"))
      .to match(/#each_capitalized is not the stdlib's \(not defined\)/)
    prepended = Class.new { include Net::HTTPHeader }.prepend(Module.new { def write_header(*) = nil })
    expect(refusal(:request_head, RustyStdlib::NetHttp::RequestHead, prepended, "net/http/generic_request.rb"))
      .to match(/write_header is not the stdlib's/)
  end
end
