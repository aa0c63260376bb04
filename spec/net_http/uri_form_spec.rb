# frozen_string_literal: true

require_relative "net_http_helper"

RSpec.describe "URI form codec (RustyStdlib::NetHttp :uri_form)" do
  include NetHttpHelper

  before do
    skip "uri_form not installed: #{RustyStdlib::NetHttp.piece_status[:uri_form]}" unless NetHttpHelper.piece?(:uri_form)
  end

  all_bytes = (0..255).map(&:chr).join.b
  encodings = [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII, Encoding::ISO_8859_1,
               Encoding::Shift_JIS, Encoding::EUC_JP, Encoding::UTF_16LE, Encoding::UTF_16,
               Encoding::Windows_1252, Encoding::GB18030]
  samples = ["", "abc", "a b+c", "*-._~!'()", "é ü", "\u3042\u{1F600}", "\xFF\xFE%", all_bytes,
             "%41%e3%81%82", "%", "%4", "%zz", "%%41", "a=1&b=2", "100%"]
  # Every sample in every encoding (force_encoding: valid or not).
  strings = samples.product(encodings).map { |s, e| s.dup.force_encoding(e) }
  strings += samples.map { |s| s.encode("UTF-16LE", invalid: :replace, undef: :replace) rescue s }
  strings += ["é".encode("ISO-8859-1"), "\u3042".encode("Shift_JIS"), "\u3042".encode("EUC-JP"),
              "plain".freeze, +"mutable"]

  it "installs in URI's singleton class and keeps the stdlib reachable" do
    source = ->(name) { URI.method(name).source_location.first }
    expect(URI.method(:encode_www_form).owner).to eq(URI.singleton_class)
    expect(source.call(:encode_www_form)).to end_with("/rusty_stdlib/net_http.rb")
    RustyStdlib::NetHttp.stdlib do
      expect(source.call(:encode_www_form)).to end_with("/uri/common.rb")
    end
    expect(source.call(:decode_www_form)).to end_with("/rusty_stdlib/net_http.rb")
  end

  describe ".encode_www_form_component" do
    it "matches for every sample in every encoding, with and without enc" do
      encs = [nil, Encoding::UTF_8, Encoding::BINARY, Encoding::ISO_8859_1, Encoding::Shift_JIS, "UTF-8", false]
      NetHttpHelper.sample(encs.product(strings), 60).each do |enc, s|
        expect_codec_parity { URI.encode_www_form_component(s, enc) }
      end
    end

    it "matches for non-String arguments (to_s) and String subclasses" do
      sub = Class.new(String)
      singleton = +"x y"
      def singleton.to_s = "redefined to_s"
      obj = Object.new
      def obj.to_s = "obj to_s é"
      args = [nil, :sym, :"é sym", 1, -2**70, 1.5, Float::NAN, true, false, obj, sub.new("s u b"),
              singleton, [1, 2], { a: 1 }, 1r, Object.new.tap { |o| def o.to_s = 5 }]
      NetHttpHelper.sample(args.product([nil, Encoding::UTF_8])).each do |arg, enc|
        expect_codec_parity { URI.encode_www_form_component(arg, enc) }
      end
    end

    it "matches for seeded random strings" do
      rng = Random.new(NetHttpHelper::SEED)
      alphabet = ["a", "Z", "0", " ", "+", "%", "*", "~", "-", ".", "_", "&", "=", "é", "\u3042", "\xFF", "\x00"]
      NetHttpHelper.count(300).times do
        s = random_string(rng, alphabet, 20).force_encoding(encodings[rng.rand(encodings.size)])
        expect_codec_parity { URI.encode_www_form_component(s) }
      end
    end
  end

  describe ".decode_www_form_component" do
    it "matches for every sample in every encoding, including invalid %-encodings" do
      encs = [Encoding::UTF_8, Encoding::BINARY, Encoding::ISO_8859_1, Encoding::Shift_JIS, Encoding::UTF_16LE,
              "ISO-8859-1", "no-such-encoding", nil]
      NetHttpHelper.sample(encs.product(strings), 60).each do |enc, s|
        expect_codec_parity { URI.decode_www_form_component(s, enc) }
      end
    end

    it "matches for the default encoding and non-String arguments" do
      NetHttpHelper.sample(strings + [nil, :sym, :"a%", 1, String.new("a+b")]).each do |s|
        expect_codec_parity { URI.decode_www_form_component(s) }
      end
      sub = Class.new(String)
      expect_codec_parity { URI.decode_www_form_component(sub.new("a%2"), Encoding::UTF_8) }
      expect_codec_parity { URI.decode_www_form_component(sub.new("a%20"), Encoding::UTF_8) }
    end

    it "round-trips every byte" do
      encoded = URI.encode_www_form_component(all_bytes)
      expect_codec_parity { URI.decode_www_form_component(encoded, Encoding::BINARY) }
      expect(URI.decode_www_form_component(encoded, Encoding::BINARY)).to eq(all_bytes)
    end

    it "matches for seeded random strings" do
      rng = Random.new(NetHttpHelper::SEED + 1)
      alphabet = %w[a Z 0 9 f F g + % %4 %41 %e3%81%82 %ff %FF * ~ & =] + ["é", "\u3042", "\xFF", " "]
      NetHttpHelper.count(400).times do
        s = random_string(rng, alphabet, 12).force_encoding(encodings[rng.rand(encodings.size)])
        enc = [Encoding::UTF_8, Encoding::BINARY, Encoding::Shift_JIS][rng.rand(3)]
        expect_codec_parity { URI.decode_www_form_component(s, enc) }
      end
    end
  end

  describe ".encode_www_form" do
    fixed = [
      [], {}, [[]], [["a"]], [["a", nil]], [["a", "1", "ignored"]], ["a", :b, 1, nil, 1.5, true],
      { a: [1, nil], b: [] }, { a: [nil] }, { "a b" => "é~", d: nil, e: [nil, nil, "x"] },
      { q: "ruby", lang: "en" }, { "q" => %w[ruby perl], "lang" => "en" }, [%w[q ruby], %w[q perl]],
      { 1 => 2, nil => nil, true => false, :"s y" => 2**80 }, [[nil, nil]], [[nil, 1]],
      [["k", [1, [2, 3]]]], { k: { nested: 1 } }, { k: Struct.new(:a).new(1) }, [[[1, 2], 3]],
      [Object.new], { Object.new => 1 }, [["k", Object.new]], { k: [Object.new] },
      ["bin\xFF".b, "utf \u3042"], { "\xFF".b => "\xE3\x81".b }, { "\u3042".encode("Shift_JIS") => "x" },
      { "k" => "\u3042".encode("UTF-16LE") }, [Class.new(Array).new([1, 2])], Class.new(Hash)[a: 1],
      { "k".freeze => "v".freeze }, [1..2], (1..3), [[:a, 1]].each, { a: 1 }.each_pair
    ]

    it "matches for fixed enums, with and without enc" do
      NetHttpHelper.sample(fixed.product([nil, Encoding::BINARY, Encoding::UTF_8, Encoding::Shift_JIS]), 60).each do |enum, enc|
        expect_codec_parity { URI.encode_www_form(enum, enc) }
      end
    end

    it "calls to_s as often and in the same order as the stdlib" do
      calls = []
      counter = Module.new do
        define_method(:to_s) do
          calls << inspect
          super()
        end
      end
      Symbol.prepend(counter)
      Integer.prepend(counter)
      begin
        [{ a: [:x, nil, 1], b: [], c: nil, d: :v }, [[:k, [nil]], [:j], :i, [2, 3]], { k: Object.new }].each do |form|
          expect_codec_parity do
            calls.clear
            [URI.encode_www_form(form), calls.dup]
          end
        end
      ensure
        counter.send(:remove_method, :to_s)
      end
    end

    it "matches for malformed arguments" do
      [nil, 1, "a=b", :sym, Object.new].each do |enum|
        expect_codec_parity { URI.encode_www_form(enum) }
      end
    end

    it "matches for seeded random forms" do
      rng = Random.new(NetHttpHelper::SEED + 2)
      alphabet = ["a", "Z", "0", " ", "+", "%", "*", "~", "&", "=", "é", "\u3042", "\xFF"]
      scalar = lambda do
        case rng.rand(8)
        when 0 then nil
        when 1 then rng.rand(-1000..1000)
        when 2 then random_string(rng, alphabet, 6).scrub.to_sym
        else random_string(rng, alphabet, 10).force_encoding(encodings[rng.rand(encodings.size)])
        end
      end
      value = -> { rng.rand(4).zero? ? Array.new(rng.rand(4)) { scalar.call } : scalar.call }
      NetHttpHelper.count(200).times do
        pairs = Array.new(rng.rand(6)) { [scalar.call, value.call] }
        enum = rng.rand(2).zero? ? pairs.to_h : pairs
        expect_codec_parity { URI.encode_www_form(enum) }
      end
    end
  end

  describe ".decode_www_form" do
    forms = ["", "a=1", "a=1&a=2&b=3", "a=1&&b&=&c=x=y&", "&", "=", "==", "a", "+%20+=%2B",
             "k=%E3%81%82&v=%FF%FE&w=%e3%81", "%zz=%4&%=%%41", "a=1;b=2", "a=1\r\nb=2\r", "a=1\nb=2\r",
             "_charset_=sjis&k=%82%A0", "_charset_=utf-8&k=%E3%81%82", "_charset_=bogus&k=1",
             "q&r=1", "aaa", "é=1", "\xFF=1", "k=v".encode("UTF-16LE"), "k=v".b, "k=%E9".encode("US-ASCII")]
    separators = ["&", ";", "&&", "aa", "\n", "\r\n", "", "é", nil, :"&", 1]

    it "matches for fixed forms, separators, isindex and use__charset_" do
      NetHttpHelper.sample(forms.product(separators, [false, true, nil, 1]), 60).each do |form, sep, isindex|
        expect_codec_parity { URI.decode_www_form(form, separator: sep, isindex: isindex) }
        expect_codec_parity { URI.decode_www_form(form, separator: sep, use__charset_: isindex) }
      end
    end

    it "matches for every enc argument, including names and bad ones" do
      encs = [Encoding::UTF_8, Encoding::BINARY, Encoding::ISO_8859_1, Encoding::Shift_JIS, Encoding::EUC_JP,
              Encoding::UTF_16LE, Encoding::UTF_16, Encoding::US_ASCII, "UTF-8", "sjis", "no-such", nil, 1]
      NetHttpHelper.sample(forms.product(encs), 60).each do |form, enc|
        expect_codec_parity { URI.decode_www_form(form, enc) }
      end
    end

    it "matches when the enc argument's to_str changes the string or the separator" do
      [->(str, _sep) { str.replace("b=%FF&\u00e9=1") }, ->(str, _sep) { str.clear },
       ->(_str, sep) { sep.replace("\n") }, ->(_str, sep) { sep.replace(";") }].each do |change|
        expect_codec_parity do
          str = +"a=1&b=2;c"
          sep = +"&"
          enc = Object.new
          enc.define_singleton_method(:to_str) do
            change.call(str, sep)
            "UTF-8"
          end
          URI.decode_www_form(str, enc, separator: sep)
        end
      end
    end

    it "matches for non-String arguments" do
      [nil, :"a=1", 1, Class.new(String).new("a=1&b"), ["a=1"]].each do |str|
        expect_codec_parity { URI.decode_www_form(str) }
      end
    end

    it "matches for seeded random forms" do
      rng = Random.new(NetHttpHelper::SEED + 3)
      alphabet = %w[a Z 0 + % %4 %41 %e3%81%82 %ff %C3 & & = = ; _charset_] + [" "]
      NetHttpHelper.count(400).times do
        s = random_string(rng, alphabet, 14)
        enc = [Encoding::UTF_8, Encoding::BINARY, Encoding::Shift_JIS, Encoding::ISO_8859_1][rng.rand(4)]
        sep = ["&", ";", "&;"][rng.rand(3)]
        isindex = rng.rand(2).zero?
        expect_codec_parity { URI.decode_www_form(s, enc, separator: sep, isindex: isindex) }
      end
    end
  end
end
