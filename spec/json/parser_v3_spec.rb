# frozen_string_literal: true

require_relative "json_helper"

# json 3's parser: its options, its errors (message, line, column, json_path), its
# number rules, ParserConfig and JSON::Coder, each compared with the gem (json 3.1.0 in
# the json3.1 leg). The shared examples in parser_spec.rb, corpus_spec.rb and
# random_spec.rb run here too.
RSpec.describe "RustyStdlib::JSON::V3 (json 3's parser)" do
  include JSONParity

  before do
    skip "json #{JSON::VERSION} is not json 3" unless JSONParity.v3?
    skip JSONParity.unproven_message unless JSONParity.proven?
  end

  # Every way of calling the parser with options (Parser.new, JSON.parse, ParserConfig).
  def expect_v3_parity(source, **opts)
    %i[new parse config].each { |via| expect_json_parity(source, via: via, **opts) }
  end

  ALL_OPTIONS = { allow_nan: true, allow_trailing_comma: true, allow_comments: true, allow_control_characters: true,
                  allow_invalid_escape: true, allow_duplicate_key: true }.freeze

  describe "errors" do
    # Each kind of error json 3 raises, at the start, middle and end of documents, on
    # several lines, after multi-byte characters (the column counts characters).
    SOURCES = [
      "tru}", "[1,2,tru}]", '{"a": {"b": [1, 2, x]}}', '{"a":1,"a":2}', '{"b":0,"a":1,"c":{"x":1},"a":2,"d":3}',
      '[1,{"x":[{"k":1,"k":2}]}]', '{"é":1,"é":2}', "[1] /* c */", "[01]", "[1.]", "\"abc", "[\"a\nb\"]",
      "{\"é\": x}", "[\"éé\", x]", "[1,]", '{"a" 1}', '{"a":1 "b"}', "{1:2}", '{"a":1, 2}', "", "  ", "\n",
      "[" * 101, "[[[[1,2,{\"a\":[3,{\"b\":tru}]}]]]]", "nul", "[nul", "[1", '{"a":1', '{"a"', '{"a', "-", "-x",
      "- 1", "NaN", "-Infinity", "-Inf", "[1] x", "[1]\n\n  x", "\"\\u12\"", "\"\\ud800\"", "\"\\ud800\\u0041\"",
      "\"\\udc00\"", "\"\\x\"", "\"a\tb\"", "\"a\\\nb\"", "\u0000", "[1,\u0000]", "[1]\u0000", "é",
      "[\"日本\", 日本]", "\n\n[1,\n 2,\n x]", "[1,\r\n2,\r\nx]", "[1,\r2,\rx]", '{"a b":[x]}', "{\"a\\\"b\":[x]}",
      "[,]", "[1,,]", "[ ,]", "{,}", "{\"a\":1,,}", "[/x]", "[/*x*/1]", "[ /", "{/", "{\"a\":/", "{\"a\":1/",
      "[1/", "[1,2]/", "[", "[/*x*/", "{", '{"a":', '{"a":1,', "[1,", '{"a":1,}', "[1]/*", "[1]/*x", "[1]/**",
      "[1]/", "[1]/x", "/", "/x", "[1]//x", "\"ab\\ud800x\"", "\"ab\\udc00x\"", "\"x\\n\\ud800\"", "\"ab\\u12\"",
      "\"ab\\q\"", "\"ab\\\u0000\"", "\"ab\u0000\"", "\"ab\\\u0001\"", "\"ab\\\n\"", "\"\\\\", "\"\\u", "\"\\u00",
      "\"\\ud800\\u", "\"\\ud800\\\"", "\"\\ud800\\\\u1234\"", "\"\\ud800\\u12345\"", "\"\\u00zz\"",
      "[truex]", "[1 2]", "truex", "true false", "\"a\" \"b\"", "[-NaN]", "[NaNx]", "[Inf]", "[1.5ex]",
      "[\"#{'a' * 40}\\ud800\"]", "[#{'x' * 40}]", "[x#{'é' * 30}]", "[#{'a' * 29}😀\x80]",
      "[\"a\xffb\", x]", "[\xff\xfe\xfd, x]", "[\"\xe6\x97\", x]", "[x\xe6\x97", "{\"a\":1}x", "{\"a\":1} /",
      "#{'[' * 5}{\"k\":[1,{\"z\":[#{'{"y":' * 3}x"
    ].freeze

    SOURCES.each do |source|
      it "raises the gem's error for #{source[0, 40].inspect}" do
        expect_v3_parity(source)
        expect_json_parity(source, via: :parse_plain) unless Parity::GC_STRESS
        expect_json_parity(source.b)
        expect_v3_parity(source, **ALL_OPTIONS) unless Parity::GC_STRESS
        expect_json_parity(source, symbolize_names: true, freeze: true)
      end
    end

    # json 3.1.0's ParserError#json_path cannot build a path through a Symbol key
    # (Symbol#valid_encoding?): ours records the same path, so it fails the same way.
    it "records json_path like the gem, Symbol keys included" do
      ['{"a b": {"c": x}}', '{"a": [{"b": 1, "b": 2}]}', '{"é": x}'].each do |source|
        expect_json_parity(source, symbolize_names: true)
        expect_json_parity(source, symbolize_names: true, freeze: true)
      end
    end

    it "counts lines and columns on long documents like the gem" do
      doc = (Array.new(200) { |i| %({"k#{i}": ["é#{'x' * (i % 7)}", #{i}]}) } + ["x"]).join(",\n")
      expect_json_parity("[#{doc}]")
      expect_json_parity("[#{doc.tr("\n", "\r")}]")
    end
  end

  describe "options" do
    DOCS = ["[1,]", "[1, ]", '{"a":1,}', "[1,/*c*/]", "/* c */ [1, // c\n 2]", "[NaN, Infinity, -Infinity]",
            "\"a\\q\"", "\"a\tb\\\u0001\"", '{"a":1,"a":2}', '{"a":{"b":1,"b":[2]}}', '{"a":"x","b":["y"]}',
            "[[[1]]]", '{"a":[1,{"b":null}]}', "[1.5, 2, -0.0, 1e400]"].freeze
    FLAGS = %i[allow_nan allow_trailing_comma allow_comments allow_control_characters allow_invalid_escape
               allow_duplicate_key symbolize_names freeze].freeze

    DOCS.each do |doc|
      it "reads every option like the gem for #{doc.inspect}" do
        FLAGS.each do |flag|
          [true, false, nil, 1].each { |value| expect_json_parity(doc, flag => value) }
        end
        expect_v3_parity(doc, **ALL_OPTIONS, symbolize_names: true, freeze: true)
        [nil, false, 0, 1, 2, 3, -1, 1.5, "1", 2**40, 2**70].each do |limit|
          expect_json_parity(doc, via: :config, max_nesting: limit)
        end
      end
    end

    it "refuses unknown options like the gem, naming them" do
      key = Object.new
      def key.to_s = "custom key"
      [{ foo: 1 }, { foo: 1, bar: 2 }, { "max_nesting" => 1 }, { key => 1 }, { [1, 2] => 1, zz: 2 },
       { create_additions: true }, { foo: 1, max_nesting: "x" }, { max_nesting: 2**70, foo: 1 }].each do |opts|
        expect_v3_parity("[1]", **opts)
      end
    end

    it "hands on_load, object_class, array_class and decimal_class to the gem" do
      require "bigdecimal"
      seen = []
      object_class = Class.new(Hash)
      array_class = Class.new(Array)
      source = '{"a":[1,2.5,{"b":"c"}],"d":1e400}'
      [{ on_load: ->(v) { seen << v; v } }, { on_load: :to_s }, { on_load: 1 }, { on_load: nil },
       { object_class: object_class }, { array_class: array_class }, { decimal_class: BigDecimal },
       { decimal_class: Rational }, { decimal_class: Float }, { decimal_class: Object }, { decimal_class: nil },
       { on_load: proc(&:itself), symbolize_names: true, foo: 1 }].each do |opts|
        %i[parse config].each { |via| expect_json_parity(source, via: via, **opts) }
        expect_json_parity('{"a":1,"a":2}', **opts)
      end
    end
  end

  describe "numbers" do
    NUMBERS = %w[
      1.5e-99999999999999999999 1e99999999999999999999 1.5e-9223372036854775807 1.5e-9223372036854775808
      1e-2147483648 1e-2147483649 1.25e2147483648 1e2147483647 1e-310 1e-308 1e-324 1e-325 1.5e-323
      1234567890123456789e400 1234567890123456789e-400 1234567890123456789e-330 12345678901234567.5e-330 1e400
      0e999999999999 0.000000000000000000001e-300 123456789012345678 1234567890123456789 -1234567890123456789
      0.1234567890123456789 17976931348623157e292 17976931348623159e292 4.9406564584124654e-324
      2.4703282292062327e-324 2.4703282292062328e-324 0e2147483647 0e2147483646 0.0e2147483647
      0.0e99999999999999999999 0e99999999999999999999 0.0e9223372036854775807 0.0e9223372036854775808
      0.05e-9223372036854775807 0.05e-9223372036854775806 0.00e-9223372036854775807
      0.000000000000000000001e00000000000000000000001 1000000000000000000000e2147483647
      1000000000000000000000e2147483646 123.456789e000000000000000000001 -0.1e000000000000000000001
      12345678e-315 2.2250738585072011e-308 -0 -0.0 -0e-400 1E+5 1.5E-3 0.30000000000000004
    ].freeze

    it "reads every number like the gem, warnings under -w included" do
      verbose = $VERBOSE
      [true, false].each do |flag|
        $VERBOSE = flag
        NUMBERS.each do |n|
          expect_json_parity(n, via: :parse)
          expect_json_parity("[#{n}]", via: :config)
        end
      end
    ensure
      $VERBOSE = verbose
    end

    it "reads seeded random numbers like the gem" do
      rng = Random.new(20_261_205)
      count = Parity::GC_STRESS ? 20 : 3000
      numbers = Array.new(count) do
        int = rng.rand(3).zero? ? "0" : (1 + rng.rand(9)).to_s + Array.new(rng.rand(25)) { rng.rand(10) }.join
        frac = rng.rand(2).zero? ? "" : "." + ("0" * rng.rand(30)) + Array.new(rng.rand(1..20)) { rng.rand(10) }.join
        exp = ["", "e#{rng.rand(-400..400)}", "E-#{300 + rng.rand(50)}", "e#{'0' * rng.rand(25)}#{rng.rand(2**rng.rand(64))}"]
              .sample(random: rng)
        (rng.rand(2).zero? ? "-" : "") + int + frac + exp
      end
      expect_json_parity("[#{numbers.join(',')}]")
    end
  end

  describe "ParserConfig" do
    # Its FrozenError names its class, which is ours (docs/compatibility.md).
    def expect_config_parity(&block)
      expect_parity(JSONParity::STDLIB::Config, JSONParity::OURS::Config) do |config|
        observed = JSONParity.observe { block.call(config) }
        observed.instance_variable_get(:@raw).map! do |part|
          part.is_a?(String) ? part.gsub("RustyStdlib::JSON::V3::ParserConfig", "JSON::Ext::ParserConfig").gsub(/0x\h+/, "0x_") : part
        end
        observed
      end
    end

    it "reads its options like the gem's" do
      expect_config_parity { |c| c.new(nil).parse("[1]") }
      expect_config_parity { |c| c.new({}).parse("[[[1]]]") }
      expect_config_parity { |c| c.new([]).parse("[1]") }
      expect_config_parity { |c| c.new("x").parse("[1]") }
      expect_config_parity { |c| c.new }
      expect_config_parity { |c| c.new(max_nesting: 1).parse("[[1]]") }
    end

    it "starts from nothing when only allocated, like the gem's" do
      ["[1]//x", '{"a":1,"a":2}', "[" * 200 + "]" * 200, "[NaN]", "[1,]", "\"\\q\""].each do |source|
        expect_config_parity { |c| c.allocate.parse(source) }
      end
    end

    it "keeps the options a second initialize does not give, like the gem's" do
      expect_config_parity do |c|
        config = c.new(allow_nan: true, allow_comments: true, max_nesting: 3)
        config.send(:initialize, { symbolize_names: true })
        [config.parse('[NaN, /* c */ {"a":1}]'), config.parse("[[[[1]]]]")]
      end
      expect_config_parity do |c|
        config = c.new(allow_nan: true)
        [(config.send(:initialize, { foo: 1 }) rescue $!.message), config.parse("[NaN]")]
      end
      expect_config_parity { |c| c.new({}).freeze.tap { |config| config.send(:initialize, {}) } }
    end

    it "can be frozen and shared between Ractors like the gem's" do
      [JSONParity::STDLIB::Config, JSONParity::OURS::Config].each do |config_class|
        config = config_class.new(symbolize_names: true).freeze
        expect(Ractor.shareable?(config)).to be(true)
        expect(config.parse('{"a":1}')).to eq({ a: 1 })
      end
    end

    it "converts sources like the gem's" do
      source = Object.new
      def source.to_str = "[1]"
      bad = Object.new
      def bad.to_str = 1
      ["[1]".b, "[\"\xc3\xa9\"]".b, "[\"é\"]".encode("UTF-16LE"), (+"[\"\xe9\"]").force_encoding("ISO-8859-1"),
       (+"[\"\x81\"]").force_encoding("Shift_JIS"), (+"\xff").force_encoding("Windows-1252"), source, bad, nil, 1,
       :sym].each do |src|
        expect_config_parity { |c| c.new({}).parse(src) }
      end
    end
  end

  describe "JSON::Coder" do
    it "parses through our ParserConfig, like the gem's" do
      coder = JSON::Coder.new(symbolize_names: true)
      expect(coder.instance_variable_get(:@parser_config)).to be_a(RustyStdlib::JSON::V3::ParserConfig)
      expect(coder.instance_variable_get(:@parser_config)).to be_frozen
      [{}, { symbolize_names: true }, { allow_nan: true, allow_duplicate_key: true }, { max_nesting: 1 },
       { allow_comments: true, freeze: true }, { decimal_class: Rational }].each do |opts|
        ['{"a":[1,2.5]}', '{"a":1,"a":2}', "[NaN]", "[[1]]", "/* x */ 1", "[1.5]", "x"].each do |source|
          expect_parity(JSON::Ext::ParserConfig, :coder) do |side|
            JSONParity.observe do
              side == :coder ? JSON::Coder.new(**opts).load(source) : side.new(opts).parse(source)
            end
          end
        end
      end
    end

    it "keeps the gem's config for on_load, object_class and array_class" do
      [{ on_load: proc(&:itself) }, { object_class: Class.new(Hash) }, { array_class: Class.new(Array) }].each do |opts|
        config = JSON::Coder.new(**opts).instance_variable_get(:@parser_config)
        expect(config).to be_a(JSON::Ext::ParserConfig)
      end
      expect { JSON::Coder.new(strict: false) }.to raise_error(ArgumentError, "JSON::Coder requires strict mode")
    end
  end

  describe "entry points" do
    it "routes JSON.parse, parse!, load, unsafe_load, load_file and JSON[] through ours like the gem" do
      ["[1, NaN]", '{"a":[1,2.5,"x"]}', "[1,]", "", "null", "/*c*/[1]", '{"a":1,"a":2}'].each do |src|
        %i[parse parse! load brackets].each { |via| expect_json_parity(src, via: via) }
        expect_json_parity(src, via: :load, allow_comments: true)
        expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
          JSONParity.observe { JSONParity.with_parser(parser) { JSON.unsafe_load(src) } }
        end
      end
      Dir.mktmpdir do |dir|
        path = File.join(dir, "doc.json")
        File.write(path, '{"a": [1, "é"]}')
        expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
          JSONParity.observe { JSONParity.with_parser(parser) { [JSON.load_file(path), JSON.load_file!(path, symbolize_names: true)] } }
        end
      end
    end

    it "takes JSON.parse's fast path only without options" do
      expect(RustyStdlib::JSON.plain?(:parse)).to be(true)
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        JSONParity.observe { JSONParity.with_parser(parser) { JSON.parse("[1]", {}) } }
      end
    end
  end

  describe "GC" do
    it "keeps parses in several threads apart" do
      count = Parity::GC_STRESS ? 3 : 12
      docs = Array.new(count) { |i| JSON.generate("i" => i, "list" => Array.new(i) { |j| { "j" => j, "s" => "v" * j } }) }
      expected = docs.map { |d| JSONParity.shape(JSONParity::STDLIB.new(d).parse) }
      results = Array.new(4) do |t|
        Thread.new do
          Array.new(count) do |k|
            i = (t * 5 + k) % count
            GC.start if k.odd?
            [i, JSONParity.shape(JSONParity::OURS.new(docs[i]).parse)]
          end
        end
      end.flat_map(&:value)
      results.each { |i, shape| expect(shape).to eq(expected[i]) }
    end
  end
end
