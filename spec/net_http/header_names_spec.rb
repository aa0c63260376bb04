# frozen_string_literal: true

require_relative "net_http_helper"

RSpec.describe "Net::HTTPHeader header names (RustyStdlib::NetHttp :header_names)" do
  include NetHttpHelper

  before do
    skip "header_names not installed: #{RustyStdlib::NetHttp.piece_status[:header_names]}" unless NetHttpHelper.piece?(:header_names)
  end

  let(:header) { Net::HTTP::Get.new("/") }

  it "replaces Net::HTTPHeader's own methods, private as they are, for requests and responses" do
    # Ours are native (no source location); the stdlib's come from header.rb.
    ours = ->(klass, name) { klass.instance_method(name).source_location.nil? }
    [Net::HTTPHeader, Net::HTTP::Get, Net::HTTPOK].each do |klass|
      expect([ours.call(klass, :capitalize), ours.call(klass, :each_capitalized)]).to eq([true, true])
    end
    expect(Net::HTTPHeader.instance_method(:capitalize).owner).to eq(Net::HTTPHeader)
    expect(Net::HTTPHeader.private_method_defined?(:capitalize)).to be(true)
    expect { header.capitalize("a") }.to raise_error(NoMethodError)
    RustyStdlib::NetHttp.stdlib do
      expect(ours.call(Net::HTTPHeader, :capitalize)).to be(false)
      expect(Net::HTTPHeader.private_method_defined?(:capitalize)).to be(true)
    end
    expect(ours.call(Net::HTTPHeader, :capitalize)).to be(true)
    expect(Net::HTTPHeader.private_method_defined?(:capitalize)).to be(true)
  end

  names = ["", "-", "---", "a", "content-type", "CONTENT-TYPE", "x-Request-ID", "--a", "a--b--",
           "www-authenticate", "te", "x_y z", "x1-2y", "\u00df-stra\u00dfe", "\u01c6-x", "\u0131d",
           "é-É", "\xFF-a", "a\x00-b"]
  encodings = [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII, Encoding::ISO_8859_1,
               Encoding::Shift_JIS, Encoding::UTF_16LE]

  it "capitalizes like the stdlib in every encoding" do
    NetHttpHelper.sample(names.product(encodings)).each do |name, enc|
      s = name.dup.force_encoding(enc)
      expect_codec_parity { header.send(:capitalize, s) }
    end
  end

  it "capitalizes non-String names like the stdlib" do
    sub = Class.new(String)
    odd = +"odd-name"
    def odd.to_s = "REDEFINED-to_s"
    [nil, :"content-type", 1, sub.new("sub-class"), odd, Object.new, "frozen-name".freeze].each do |name|
      expect_codec_parity { header.send(:capitalize, name) }
    end
  end

  it "capitalizes seeded random names like the stdlib" do
    rng = Random.new(NetHttpHelper::SEED + 10)
    alphabet = ["a", "B", "z", "Z", "0", "-", "-", "_", " ", "é", "\u00df", "\xFF"]
    NetHttpHelper.count(500).times do
      s = random_string(rng, alphabet, 12).force_encoding(encodings[rng.rand(encodings.size)])
      expect_codec_parity { header.send(:capitalize, s) }
    end
  end

  it "gives each_capitalized, canonical_each and each_capitalized_name like the stdlib" do
    req = Net::HTTP::Post.new("/", "x-custom-HEADER" => "1", "set-cookie" => "a")
    req.add_field("set-cookie", "b")
    req["ÉTAG-é"] = "x"
    expect_codec_parity { req.each_capitalized.to_a }
    expect_codec_parity { req.canonical_each.to_a }
    expect_codec_parity { req.each_capitalized_name.to_a }
  end

  it "walks each_capitalized like the stdlib: values, return value, size, break, raise, mutation" do
    build = lambda do
      req = Net::HTTP::Post.new("/", "x-a" => "1", "set-cookie" => "a")
      req.add_field("set-cookie", "b")
      req["ÉTAG-é"] = "x"
      req
    end
    expect_codec_parity { pairs = []; [build.call.each_capitalized { |k, v| pairs << [k, v] }, pairs].flatten }
    expect_codec_parity { e = build.call.each_capitalized; [e.inspect, e.size, e.next, e.to_a, e.with_index.to_a].flatten }
    expect_codec_parity { build.call.each_capitalized { |k, _| break k } }
    expect_codec_parity { build.call.each_capitalized { |k, _| raise ArgumentError, k } }
    expect_codec_parity { req = build.call; req.each_capitalized { |k, _| req["new-#{k}"] = "1" } }
    # Names and joined values are fresh Strings: changing them leaves the header alone.
    expect_codec_parity { req = build.call; req.each_capitalized { |k, v| k << "!"; v << "!" }; req.to_hash.to_a.flatten }
    expect_codec_parity { req = build.call; req.each_capitalized { |k, _| req.delete("set-cookie") }; req.to_hash.keys }
    expect_codec_parity { catch(:out) { build.call.each_capitalized { |k, v| throw :out, [k, v] } } }
  end

  it "gives each_capitalized like the stdlib for odd @header contents and own capitalize/join" do
    odd = [{ "int" => 1 }, { "nil" => nil }, { "a" => ["1", 2, :three, nil] }, { "sym" => [:v] },
           { "k" => [Class.new(Array).new(["x"])] }, { "k" => Class.new(Array).new(%w[x y]) },
           { "e" => ["\u00e9", "\xFF".b] }, { "u16" => ["v".encode("UTF-16LE")] }, { 1 => ["v"] },
           { "sub" => [Class.new(String).new("s")] }, { "frozen" => ["f".freeze] }, { "empty" => [+""] },
           { "broken" => [(+"\xFF\u00e9").force_encoding("UTF-8")] }, { "sjis" => [(+"\x82\xA0").force_encoding("Shift_JIS")] },
           { "dummy" => [(+"\x00v").force_encoding("UTF-16")] }, { "long" => ["v" * 300] }]
    NetHttpHelper.sample(odd, 4).each do |headers|
      expect_codec_parity do
        req = Net::HTTP::Get.new("/")
        req.instance_variable_get(:@header).replace(headers)
        req.each_capitalized.to_a
      end
    end
    expect_codec_parity do
      own_join = %w[p q]
      def own_join.join(sep) = "own #{sep.inspect}"
      req = Net::HTTP::Get.new("/")
      req.instance_variable_get(:@header).replace("k" => own_join, "l" => ["z"])
      req.each_capitalized.to_a
    end
    own_capitalize = Class.new(Net::HTTP::Get) { private def capitalize(name) = "own-#{name}" }
    expect_codec_parity { own_capitalize.new("/", "a-b" => "c").each_capitalized.to_a }
    expect_codec_parity { Class.new(Net::HTTP::Get) { def initialize_http_header(*) = @header = nil }.new("/").each_capitalized.to_a }
  end

  # On Ruby 3.1 ours makes the names without calling capitalize while the one the
  # request reaches is ours, asked again at every pair (ext/rusty_stdlib/src/net_http/header.rs).
  it "calls a capitalize defined anywhere, also one defined by the block in the middle of the walk" do
    fields = { "a-b" => "1", "c-d" => "2", "e-f" => "3" }
    own = ->(prefix) { Module.new { define_method(:capitalize) { |name| "#{prefix}-#{name}" } } }
    expect_codec_parity { Net::HTTP::Get.new("/", fields).extend(own.call("singleton")).each_capitalized.to_a }
    expect_codec_parity { Class.new(Net::HTTP::Get) { prepend(own.call("prepended")) }.new("/", fields).each_capitalized.to_a }
    expect_codec_parity do
      with_super = Module.new { private def capitalize(name) = "super-#{super}" }
      Class.new(Net::HTTP::Get) { include(with_super) }.new("/", fields).each_capitalized.to_a
    end
    expect_codec_parity do
      req = Net::HTTP::Get.new("/", fields)
      names = []
      req.each_capitalized do |name, _|
        names << name
        req.extend(own.call("late")) if names.size == 2
      end
      names
    end
    # A redefinition in Net::HTTPHeader itself (of ours, or of the stdlib's while the
    # specs compare), put back afterwards (removed first: no "method redefined" warning).
    expect_codec_parity do
      stock = Net::HTTPHeader.instance_method(:capitalize)
      begin
        Net::HTTPHeader.send(:remove_method, :capitalize)
        Net::HTTPHeader.class_eval { private def capitalize(name) = "app-#{name}" }
        Net::HTTP::Get.new("/", fields).each_capitalized.to_a
      ensure
        Net::HTTPHeader.send(:remove_method, :capitalize) if Net::HTTPHeader.private_method_defined?(:capitalize, false)
        RustyStdlib::MethodSwap.put(Net::HTTPHeader, :capitalize, stock, :private)
      end
    end
    expect(Net::HTTPHeader.instance_method(:capitalize).source_location).to be_nil # ours again
  end
end
