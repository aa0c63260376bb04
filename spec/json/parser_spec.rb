# frozen_string_literal: true

require_relative "json_helper"

RSpec.describe "RustyStdlib::JSON::Parser" do
  include JSONParity

  before { skip JSONParity.unproven_message unless JSONParity.proven? }

  VALID = [
    "[]", "{}", "[1]", "1", "-1", "0", "-0", "-0.0", "0.0", "\"x\"", "null", "true", "false",
    " [ 1 , 2 ] ", "\n\t\r[1]\n", "[1e400]", "[-1e400]", "[1e-400]", "[4e-320]", "[1E2, 1e+2, 1e-2]",
    "[123456789012345678901234567890, -123456789012345678901234567890]",
    "[999999999999999999, 1000000000000000000, 4611686018427387903, 4611686018427387904]",
    "[-4611686018427387904, -4611686018427387905, -9223372036854775808]",
    "[0.1, 0.30000000000000004, 2.2250738585072011e-308, 1.7976931348623157e308]",
    "[3.141592653589793238462643383279, 1.00000000000000000000000000000001]",
    "[2.4703282292062328e-324, 2.4703282292062327e-324, 9007199254740993, 9007199254740993.0]",
    # Either side of where Ruby's Floats stop being immediates (flonums): 2**-256, the one
    # excluded value 1.727233711018889e-77, and 2**257.
    "[8.636168555094444e-78, 8.636168555094445e-78, 1.727233711018889e-77, 1.7272337110188893e-77, " \
    "2.3158417847463237e77, 2.315841784746324e77, -2.315841784746324e77, -8.636168555094445e-78]",
    '{"a":1,"a":2}', '{"a":1,"b":{"a":[{"c":null}]}}', '{"":""}',
    '["\\u00e9\\u0000\\u001f", "\\ud83d\\ude00", "\\ud800\\udc00", "\\udc00", "\\ud800\\u0041"]',
    '["\\ud800\\ud800", "\\ud800\\x1234", "\\x\\\'\\/\\q", "a\\"b\\\\c\\b\\f\\n\\r\\t"]',
    "[\"\xff\xfe\", \"\xe9t\xe9\", \"\\\xc3\xa9\"]", "{\"\xff\":1}",
    "/* c */ [1, /* c */ 2] // c\n", "[1, // c\n 2]", "{\"a\"/**/:/**/1/**/,/**/\"b\":2}",
    "[/***/1/*/ */]", "[1]\n// trailing\n",
    "[#{'"' * 0}\"#{'x' * 200}\\n#{'y' * 200}\"]", "[\"#{'é' * 100}\"]",
    "[#{'[' * 99}#{']' * 99}]", "{\"a\":#{'{"a":' * 98}1#{'}' * 98}}",
    "[1,-1,-0.5,1e2,-1E-2,0.1e1,12345678901234567890,-0,-0.0,2.2250738585072011e-308,1e400,-1e-400]",
    "[[1.5,-2],[3,-4.25e1],[-0,0]]", "[1,/**/2,//\n-3]"
  ].freeze

  INVALID = [
    "", " ", "\n", "a", "[", "]", "{", "}", "[1,]", "[1 2]", "[,1]", "[1,,2]", "{\"a\":1,}",
    "{\"a\" 1}", "{a:1}", "{,}", "{\"a\":}", "{\"a\"}", "[{\"a\":1,}]", "{\"a\":[1,]}",
    "{\"a\":{\"b\":nul}}", "[{\"a\":{\"b\":x}}]", "NaN", "[NaN]", "Infinity", "[Infinity]",
    " Infinity", "[1,Infinity]", "-Infinity", "[-Infinity]", "[-Inf]", "[-Infinit]", "[Infinityx]",
    "[1.5-2]", "1.5e", "[1e]", "[1.]", "[.5]", "[01]", "[-01]", "[-]", "-", "[+1]", "[1.5.3]",
    "[1e5e]", "[1.5E+]", "[0x10]", "[1_000]", "[tru]", "[true", "[truex]", "nul", "[nullnull]",
    "[\"\\u12\"]", "[\"\\u\"]", "[\"\\ud800\"]", "[\"\\ud800x\"]", "[\"ab\\ud800\"]",
    "[\"\\ud800\\u\"]", "{\"\\ud800\":1}", "[\"a\u0000b\"]", "[\"\t\"]", "[\"\\\t\"]",
    "[\"abc", "\"abc", "[\"\\", "[1] x", "[1]x", "[1]\u0000", "\u0000[1]", "\f[1]",
    "[1] // c", "[/*]", "[/* */", "[1/]", "[1/x]", "[1/*", "/", "//", "/* */", "[1] /",
    "[\"a\"  \"b\"]", "{\"a\":1 \"b\":2}", "{\"a\":1}}", "[1]]", "[[1]", "{\"a\"::1}",
    "[1] x\xff", "[\"\xff\" x]", "{\"a\":1, \"b\"}", "[1, {\"a\":1}, x]", "{\"a\":-}",
    "{\"a\":\"\\ud800\"}", "[\"x\"\u0000]",
    # Numbers after a comma (read by the array's own shortcut): each way a number fails.
    "[1,-]", "[1,-Infinity]", "[1,-Inf]", "[1,-I]", "[1,01]", "[1,-01]", "[1,1.]", "[1,1e]", "[1,1e+]",
    "[1,--1]", "[1,-x]", "[1,0x10]", "[1,1.5.3]", "[1,1.5-2]", "[1,2", "[1,2,]", "[[1,-]]",
    "{\"a\":[1,1e]}", "[1,1]x", "[1,1 2]"
  ].freeze

  describe "valid documents" do
    VALID.each do |source|
      it "parses #{source[0, 60].inspect} like the gem" do
        expect_json_parity(source)
        expect_json_parity(source, via: :parse_plain)
        expect_json_parity(source.b, via: :parse_plain) unless Parity::GC_STRESS
        expect_json_parity(source.b)
        expect_json_parity(source, freeze: true)
        expect_json_parity(source, symbolize_names: true)
        expect_json_parity(source, allow_nan: true, max_nesting: false)
      end
    end
  end

  describe "invalid documents" do
    INVALID.each do |source|
      it "rejects #{source.inspect} with the gem's error" do
        expect_json_parity(source)
        # Under GC stress the valid documents cover this entry point's own code.
        expect_json_parity(source, via: :parse_plain) unless Parity::GC_STRESS
        expect_json_parity(source.b)
        expect_json_parity(source, allow_nan: true)
        expect_json_parity(source, symbolize_names: true, freeze: true)
      end
    end
  end

  describe "options" do
    it "allows NaN, Infinity and -Infinity only with allow_nan (identical objects)" do
      src = "[NaN, Infinity, -Infinity]"
      expect_json_parity(src)
      expect_json_parity(src, allow_nan: true)
      expect_json_parity(src, allow_nan: nil)
      expect_json_parity(src, allow_nan: 1)
      ours = JSONParity::OURS.new(src, allow_nan: true).parse
      expect(ours.map(&:object_id)).to eq([JSON::NaN, JSON::Infinity, JSON::MinusInfinity].map(&:object_id))
    end

    it "honours max_nesting like the gem (default 100, false/nil/0 off, negative)" do
      deep = ->(n) { "[" * n + "]" * n }
      obj = ->(n) { '{"a":' * n + "1" + "}" * n }
      limits = Parity::GC_STRESS ? [nil, 0, 2, -1] : [nil, false, 0, 1, 2, 3, 100, 101, -1, 2**31 - 1]
      depths = Parity::GC_STRESS ? [1, 2, 3, 101] : [1, 2, 3, 100, 101, 102]
      limits.each do |limit|
        depths.each do |depth|
          opts = limit.nil? ? {} : { max_nesting: limit }
          expect_json_parity(deep.call(depth), **opts)
          expect_json_parity(obj.call(depth), **opts)
        end
      end
      expect_json_parity(deep.call(Parity::GC_STRESS ? 150 : 1000), max_nesting: false)
    end

    it "hands bad max_nesting values to the gem's own checks" do
      ["1", 1.5, 2**31, 2**70, :a, Object.new].each do |limit|
        expect_json_parity("[[1]]", max_nesting: limit)
      end
    end

    it "symbolizes names and freezes values like the gem" do
      src = '{"a":{"b":["c", 1, 2.5, null, {"":{}}]}, "é":"\\u00e9"}'
      [true, false, nil, 1].each do |flag|
        expect_json_parity(src, symbolize_names: flag)
        expect_json_parity(src, freeze: flag)
        expect_json_parity(src, freeze: flag, symbolize_names: flag)
      end
    end

    # Ours keeps keys in a process-wide cache across parses (ext/rusty_stdlib/src/json/sink.rs).
    it "gives keys the gem's identity across parses, GCs and symbolize_names" do
      doc = %({"alpha":1,"beta":{"alpha":2,"k#{'x' * 70}":3}})
      identities = [JSONParity::STDLIB, JSONParity::OURS].map do |parser|
        a = parser.new(doc).parse
        GC.start
        b = parser.new(doc, symbolize_names: true).parse
        c = parser.new(doc).parse
        [a.keys[0].equal?(c.keys[0]), a.keys[0].equal?(a["beta"].keys[0]), a.keys[0].equal?(-"alpha"),
         a["beta"].keys[1].equal?(c["beta"].keys[1]), JSONParity.shape(b), JSONParity.shape(c)]
      end
      expect(identities[1]).to eq(identities[0])
    end

    it "raises the gem's EncodingError for an invalid UTF-8 name with symbolize_names" do
      expect_json_parity("{\"\xff\":1}", symbolize_names: true)
    end

    it "delegates create_additions, object_class, array_class and decimal_class to the gem" do
      skip_on_json3 "create_additions, match_string or JSON::GenericObject (parser_v3_spec.rb has its own)"
      require "bigdecimal"
      require "json/add/core"
      src = '{"json_class":"Range","a":[1,2,"1..3"],"f":1.5}'
      expect_json_parity(src, create_additions: true)
      expect_json_parity(src, create_additions: true, match_string: { /\A\d\.\.\d\z/ => Range })
      expect_json_parity(src, create_additions: true, create_id: "a")
      expect_json_parity(src, create_additions: false)
      expect_json_parity(src, create_additions: true, symbolize_names: true)
      expect_json_parity(src, decimal_class: BigDecimal)
      expect_json_parity(src, decimal_class: nil, object_class: nil, array_class: nil)
      expect_json_parity(src, object_class: JSON::GenericObject)
      expect_json_parity(src, array_class: Class.new(Array))
      expect_json_parity("[1", create_additions: true)
    end

    it "runs create_additions (natively) like the gem, in the same order" do
      skip_on_json3 "create_additions"
      require "json/add/core"
      log = []
      creatable = Class.new do
        define_singleton_method(:json_creatable?) { true }
        define_singleton_method(:json_create) { |h| log << h.dup; [:created, h] }
      end
      shy = Class.new do
        define_singleton_method(:json_creatable?) { false }
        define_singleton_method(:json_create) { |_h| raise "not called" }
      end
      failing = Class.new do
        define_singleton_method(:json_creatable?) { true }
        define_singleton_method(:json_create) { |_h| raise ArgumentError, "boom" }
      end
      stub_const("JSONParitySpecCreatable", creatable)
      stub_const("JSONParitySpecShy", shy)
      stub_const("JSONParitySpecFailing", failing)
      docs = [
        '{"json_class":"Range","a":[1,2,false]}',
        '[{"json_class":"JSONParitySpecCreatable","v":{"json_class":"JSONParitySpecCreatable"}}, 1]',
        '{"json_class":"JSONParitySpecShy","v":1}',
        '{"json_class":"JSONParitySpecFailing"}',
        '{"json_class":"NoSuchClassAnywhere"}',
        '{"json_class":null,"json_class":"Range","a":[1,3,true]}',
        '{"json_class":"JSONParitySpecCreatable"} x',
        '[{"json_class":"JSONParitySpecCreatable"}, {"a":1,}]',
        '{"type":"JSONParitySpecCreatable"}',
        '{"json_class":"Rational","n":1,"d":3}'
      ]
      docs.each do |doc|
        [{}, { freeze: true }, { create_id: "type" }, { create_id: nil }, { max_nesting: 1 }].each do |extra|
          expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
            log.clear
            observed = JSONParity.observe { parser.new(doc, create_additions: true, **extra).parse }
            [observed, JSONParity::Observed.new([:ok, log.dup])]
          end
          expect_json_parity(doc, via: :load, **extra)
        end
      end
    end

    it "reads the thread's JSON.create_id like the gem" do
      skip_on_json3 "JSON.create_id"
      require "json/add/core"
      begin
        JSON.create_id = "kind"
        expect_json_parity('{"kind":"Range","a":[1,2,false]}', create_additions: true)
        expect_json_parity('{"kind":"Range","a":[1,2,false]}', via: :load)
      ensure
        JSON.create_id = "json_class"
      end
    end

    it "keeps create_additions' user code side effects in the gem's order" do
      skip_on_json3 "create_additions"
      calls = Hash.new { |h, k| h[k] = [] }
      klass = Class.new do
        define_singleton_method(:json_creatable?) { true }
        define_singleton_method(:json_create) { |h| Thread.current[:json_spec_calls] << h["n"]; h["n"] }
      end
      stub_const("JSONParitySpecOrder", klass)
      doc = '[{"json_class":"JSONParitySpecOrder","n":1,"c":{"json_class":"JSONParitySpecOrder","n":2}},' \
            '{"json_class":"JSONParitySpecOrder","n":3}, x]'
      [JSONParity::STDLIB, JSONParity::OURS].each do |parser|
        Thread.current[:json_spec_calls] = calls[parser]
        JSONParity.observe { parser.new(doc, create_additions: true).parse }
      end
      expect(calls[JSONParity::OURS]).to eq(calls[JSONParity::STDLIB])
      expect(calls[JSONParity::STDLIB]).to eq([2, 1, 3])
    end

    # json 2 ignores them; json 3 raises ArgumentError naming them.
    it "treats unknown options like the gem" do
      expect_json_parity("[1]", bogus: true, quirks_mode: true)
      expect_json_parity("[1]", bogus: true)
      expect_json_parity("[1]", "max_nesting" => 1)
      vias = JSONParity.v3? ? %i[new parse config] : %i[new parse]
      vias.each { |via| expect_json_parity("[1]", via: via, create_additions: true, x: nil) }
    end

    # json 2.9 reads it (ours hands it to the gem's parser); 2.6 ignores it.
    it "reads allow_trailing_comma where the gem does" do
      ["[1,]", "[1, /**/ ]", "{\"a\":1,}", "{\"a\":1 , }", "[1,,]", "[,]", "{,}", "[[1,],]", "{\"a\":[1,],}"].each do |src|
        [true, false, nil].each { |flag| expect_json_parity(src, allow_trailing_comma: flag) }
        expect_json_parity(src, via: :parse, allow_trailing_comma: true)
      end
    end

    # JSON.load passes create_additions: nil, which json 2.9 takes as "create, with a
    # deprecation warning"; 2.9 also takes a nil or false create_id as JSON.create_id.
    it "treats create_additions: nil and a false create_id like the gem" do
      skip_on_json3 "create_additions"
      require "json/add/core"
      doc = '{"json_class":"Range","a":[1,2,false]}'
      expect_json_parity(doc, create_additions: nil)
      expect_json_parity(doc, create_additions: true, create_id: false)
      expect_json_parity(doc, create_additions: true, create_id: nil)
      deprecated = Warning[:deprecated]
      [true, false].each do |flag|
        Warning[:deprecated] = flag
        expect_json_parity(doc, via: :load)
        expect_json_parity(doc, via: :load, create_additions: nil)
      end
    ensure
      Warning[:deprecated] = deprecated
    end
  end

  describe "entry points" do
    it "routes JSON.parse, parse!, load and JSON[] through the installed parser" do
      skip "json #{JSON::VERSION}: the parser is not installed here" unless JSONParity.installed?
      expect(JSON.parser).to equal(RustyStdlib::JSON.parser)
      expect(JSON::Parser).to equal(RustyStdlib::JSON.parser)
      expect(JSON.parse("[1]")).to eq([1])
    end

    ["[1, NaN]", "[" * 200 + "]" * 200, '{"a":[1,2.5,"x"]}', "[1,]", "", "null"].each do |src|
      it "gives the gem's result for #{src[0, 20].inspect} through every entry point" do
        %i[parse parse! load brackets].each { |via| expect_json_parity(src, via: via) }
        expect_json_parity(src, via: :parse, symbolize_names: true)
      end
    end

    it "treats a nil or empty source like the gem in load (allow_blank)" do
      expect_json_parity(nil, via: :load)
      expect_json_parity("", via: :load)
    end
  end

  describe "arguments and sources" do
    # json 2.9 takes the options as a positional Hash or nil too; 2.6 raises.
    it "rejects what the gem rejects" do
      [nil, 1, :sym, Object.new].each { |source| expect_json_parity(source) }
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        JSONParity.observe { parser.new }
      end
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        JSONParity.observe { parser.new("[[1]]", { max_nesting: 1 }).parse }
      end
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        JSONParity.observe { parser.new("[1]", nil).parse }
      end
      # Options that are no Hash (even without #nil?) reach the gem's own conversion.
      gem_parse = RustyStdlib::MethodSwap.stdlib_method(JSON.singleton_class, :parse).bind(JSON)
      [BasicObject.new, 5, false].each do |opts|
        expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
          parse = parser.equal?(JSONParity::STDLIB) ? gem_parse : JSON.method(:parse)
          JSONParity.observe { JSONParity.with_parser(parser) { parse.call("[1]", opts) } }
        end
      end
      # json 2's C initialize refuses a second call; json 3's (Ruby) takes it.
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        JSONParity.observe { parser.new("[1]").tap { |p| p.send(:initialize, "[2]") }.parse }
      end
    end

    # JSON.parse calls it in json 2.9; 2.6 has no such method.
    it "has the class method Parser.parse exactly where the gem has it, with its results" do
      expect(JSONParity::OURS.respond_to?(:parse)).to eq(JSONParity::STDLIB.respond_to?(:parse))
      next unless JSONParity::STDLIB.respond_to?(:parse)

      source = Object.new
      def source.to_str = "[2]"
      [["[1]", nil], ["[1]", {}], ['{"a":[1.5]}', { symbolize_names: true, freeze: true }], ["[1,]", nil],
       ["[1,]", { allow_trailing_comma: true }], ["[[1]]", { max_nesting: 1 }], ["[1]", "x"], ["[1]", []],
       [1, nil], [nil, {}], [source, nil], ["[1]", { max_nesting: "x" }], ["[NaN]", { allow_nan: true }],
       ["[\"\xc3\xa9\"]".b, nil], ["[1] x" + "y" * 40, nil]].each do |src, opts|
        expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
          JSONParity.observe { parser.parse(src, opts) }
        end
      end
      expect { JSONParity::OURS.parse("[1]") }.to raise_error(ArgumentError)
    end

    it "accepts anything with to_str like the gem" do
      source = Object.new
      def source.to_str = "[1]"
      expect_json_parity(source)
    end

    it "re-tags a binary source as UTF-8 (in place unless frozen) like the gem" do
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        s = "[\"\xc3\xa9\"]".b
        frozen = "[\"\xc3\xa9\"]".b.freeze
        [JSONParity.observe { parser.new(s).parse }, s.encoding.name,
         JSONParity.observe { parser.new(frozen).parse }, frozen.encoding.name,
         JSONParity.observe { parser.new(frozen).source }]
      end
    end

    # Where the gem parses a UTF-8 copy of a binary source, ours reads the caller's String
    # in place, and makes the copy only when Ruby code is to run mid-parse (a warning):
    # the String must come out as the gem leaves it, and that code must be free to change
    # it (the gem locks only its copy).
    it "leaves a binary source as the gem does, also to code that runs mid-parse" do
      json_parse = lambda do |parser, source, opts|
        JSONParity.observe do
          JSONParity.with_parser(parser) { opts ? JSON.parse(source, **opts) : JSON.parse(source) }
        end
      end
      ["[\"\xc3\xa9\", 1.5]", "[1e400, \"x\"]", "{\"a\": x}", "{\"a\":1,\"a\":2}"].each do |text|
        [nil, { symbolize_names: true }].each do |opts|
          expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
            parse = ->(source) { JSONParity.with_warnings_captured { json_parse.call(parser, source, opts) } }
            source = text.b
            frozen = text.b.freeze
            [parse.call(source), source, source.encoding.name, source.frozen?, parse.call(frozen)]
          end
        end
      end
      # json 2.6 parses the caller's own String (re-tagged in place), unlocked, so code
      # that changes it mid-parse leaves the gem reading a buffer that may be gone; ours
      # locks it there. From 2.7 on the gem parses a copy.
      next if Gem::Version.new(JSON::VERSION) < Gem::Version.new("2.7")

      [nil, { symbolize_names: true }].each do |opts|
        expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
          source = "[1e400, 12345678901234567890e400, 2]".b
          # The float range warning is written here, and the write appends to the source.
          hook = Object.new
          hook.define_singleton_method(:write) { |*parts| source << "!"; parts.sum(&:bytesize) }
          value = JSONParity.verbosely_to(hook) { json_parse.call(parser, source, opts) }
          [value, source, source.encoding.name]
        end
      end
    end

    it "converts other encodings to UTF-8 like the gem" do
      ['["\\u00e9é"]', "{\"é\":\"ü\"}"].each do |text|
        %w[UTF-16LE UTF-16BE UTF-32LE ISO-8859-1 Windows-1252 Shift_JIS EUC-JP].each do |enc|
          encoded = begin
            text.encode(enc)
          rescue EncodingError
            next
          end
          expect_json_parity(encoded)
          expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
            JSONParity.observe { parser.new(encoded).source }
          end
        end
      end
      expect_json_parity("[\"\xff\"]".dup.force_encoding("US-ASCII"))
      expect_json_parity("[\"\xff\"]".dup.force_encoding("Shift_JIS"))
      expect_json_parity("[\"\xe9\"]".dup.force_encoding("ISO-8859-1"))
      expect_json_parity("[1] x\xff".dup.force_encoding("ISO-8859-1"))
    end

    it "returns a copy of the converted source from #source" do
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        s = +"[1]"
        p = parser.new(s)
        JSONParity.observe { [p.source, p.source.equal?(s), p.parse, p.parse] }
      end
    end
  end

  describe "GC" do
    # Ruby 3.1's auto-compaction under GC.stress can abort the process on its own, without
    # rusty_stdlib loaded ("[BUG] try to mark T_NONE object" after a 16 MiB String and a
    # json 2.6.1 create_additions parse; it depended on which examples ran before). There
    # the json_create above still compacts in the middle of our parse, once per document.
    def with_compaction_on_every_gc
      return yield if RUBY_VERSION < "3.2"

      GC.auto_compact = true
      GC.stress = true
      yield
    ensure
      GC.stress = false
      GC.auto_compact = false if RUBY_VERSION >= "3.2"
    end

    it "survives GC.compact inside json_create and compaction on every GC" do
      require "json/add/core"
      compactor = Class.new do
        def self.json_creatable? = true
        def self.json_create(hash) = (GC.compact; hash.merge("compacted" => true))
      end
      stub_const("JSONParitySpecCompactor", compactor)
      docs = ['{"a":[1,2.5,"x",{"b":null}],"c":"\u00e9","d":12345678901234567890123}',
              '[{"json_class":"JSONParitySpecCompactor","k":[1,{"x":"y"}]},"s",{"key":{"key":1}}]',
              '[1e400, "' + "z" * 40 + '"]', '{"a":[1,2,']
      docs.each do |doc|
        run = lambda do |parser|
          JSONParity.with_warnings_captured do
            JSONParity.observe { parser.new(doc, create_additions: true).parse }
          end
        end
        expected = run.call(JSONParity::STDLIB)
        actual = with_compaction_on_every_gc { run.call(JSONParity::OURS) }
        # MRI's warning_string (error.c) takes the file name as a C pointer into the
        # caller's path String, then allocates the message: a compaction there moves an
        # embedded path, and the warning names a stale (often empty) file. Seen on 3.4.11
        # with "Float 1e400 out of range", which Ruby's strtod raises for both parsers;
        # so under compaction the warnings are compared from the line number on.
        expect(without_warning_files(actual)).to eq(without_warning_files(expected))
      end
    end

    def without_warning_files(observed)
      observed.warnings = observed.warnings.gsub(/^[^\n]*?(:\d+: warning: )/, "\\1")
      observed
    end

    it "keeps interleaved parses (threads, nested parses in json_create) apart" do
      skip_on_json3 "create_additions (parser_v3_spec.rb interleaves parses in threads)"
      yielder = Class.new do
        def self.json_creatable? = true

        def self.json_create(hash)
          Thread.pass
          GC.start if hash["i"].to_i.odd?
          JSONParity::OURS.new('{"nested":[1,"x"]}').parse.merge(hash)
        end
      end
      stub_const("JSONParitySpecYielder", yielder)
      count = Parity::GC_STRESS ? 3 : 12
      docs = Array.new(count) do |i|
        inner = Array.new(i) { |j| { "json_class" => "JSONParitySpecYielder", "j" => j, "s" => "v" * j } }
        JSON.generate("json_class" => "JSONParitySpecYielder", "i" => i, "list" => inner)
      end
      expected = docs.map { |d| JSONParity.shape(JSONParity::STDLIB.new(d, create_additions: true).parse) }
      results = Array.new(4) do |t|
        Thread.new do
          Array.new(count) do |k|
            i = (t * 5 + k) % count
            [i, JSONParity.shape(JSONParity::OURS.new(docs[i], create_additions: true).parse)]
          end
        end
      end.flat_map(&:value)
      results.each { |i, shape| expect(shape).to eq(expected[i]) }
    end

    it "raises the gem's error for an uninitialized instance" do
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        initialized = parser.new("[1]")
        [JSONParity.observe { parser.allocate.parse }, JSONParity.observe { parser.allocate.source },
         JSONParity.observe { initialized.dup.parse }, JSONParity.observe { initialized.clone.source },
         JSONParity.observe { initialized.freeze.parse }]
      end
    end
  end

  describe "very deep documents without max_nesting" do
    # The gem's parser recurses and raises SystemStackError when the machine stack runs
    # out; ours does not recurse but raises the same beyond the depth the gem would reach
    # (estimated from the remaining stack). Checked well away from that boundary.
    def deep_outcome(parser, depth, kind)
      doc = kind == :array ? "[" * depth + "]" * depth : '{"a":' * depth + "1" + "}" * depth
      JSONParity.observe do
        value = Parity.overflowing_stdlib(parser.equal?(JSONParity::STDLIB)) do
          parser.new(doc, max_nesting: false).parse
        end
        levels = 0
        while value.is_a?(Array) || value.is_a?(Hash)
          levels += 1
          value = value.is_a?(Array) ? value.first : value["a"]
        end
        levels
      end
    end

    def expect_deep_parity(depth, kind, where)
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        case where
        when :main then deep_outcome(parser, depth, kind)
        when :thread then Thread.new { deep_outcome(parser, depth, kind) }.value
        when :fiber then Fiber.new { deep_outcome(parser, depth, kind) }.resume
        end
      end
    end

    it "parses or overflows like the gem on the main thread, in threads and in fibers" do
      depths = { main: [20_000, 100_000], thread: [4_000, 30_000], fiber: [2_000, 10_000] }
      # Under GC.stress 100,000 levels that parse (a main stack above 8 MiB) take hours.
      depths.delete(:main) if Parity::GC_STRESS && MainStack.big?
      # json 3's parser does not recurse: every depth parses, and under GC.stress (a GC
      # per allocation, each costing more the more levels are alive) only shallow ones.
      depths = depths.transform_values { |pair| pair.map { |d| d / 20 } } if Parity::GC_STRESS && JSONParity.v3?
      depths.each do |where, (fine, deep)|
        %i[array object].each do |kind|
          expect_deep_parity(fine, kind, where) unless Parity::GC_STRESS
          expect_deep_parity(deep, kind, where)
        end
      end
    end

    # Between the two gems' limits (json 2.6.1 on Ruby 3.1 reaches about 58200 levels on
    # the main thread, 7240 in a thread and 3630 in a Fiber; json 2.9.1 on Ruby 3.3 about
    # 52300, 6500 and 3240): parsed by one, overflowing with the other.
    it "overflows at the gem's own depth, not another version's" do
      skip "a GC per allocation makes these documents too slow" if Parity::GC_STRESS
      { main: 55_000, thread: 6_850, fiber: 3_430 }.each do |where, depth|
        expect_deep_parity(depth, :array, where)
      end
    end
  end

  describe "messages" do
    # json 2.9 quotes at most 32 bytes of the source (cutting through a character), from
    # where 2.6 started its whole-rest quote.
    it "quotes the source like the gem" do
      long = "x" * 40
      ["[1, 2 #{long}]", long, "[#{'é' * 40}]", "[1#{'é' * 40}]", "{\"a\":1 #{'€' * 20}}",
       "[Infinity#{long}]", "Infinity#{long}", "[1,Infinity]", "[-Infinity#{long}]", "[NaN#{long}]",
       "[\"#{'a' * 40}\\ud800\"]", "[\"\\ud800#{long}", "[1.5e#{long}]", "[x\u0000#{long}]",
       "[1] #{long}", "[1] x\xff#{long}"].each do |src|
        expect_json_parity(src)
        expect_json_parity(src, allow_nan: true)
      end
    end
  end

  describe "warnings" do
    it "prints Ruby's float range warnings under -w like the gem" do
      src = "[1e400, 1e-400, 1.5]"
      expect_parity(JSONParity::STDLIB, JSONParity::OURS) do |parser|
        err = StringIO.new
        value = JSONParity.verbosely_to(err) { JSONParity.observe { parser.new(src).parse } }
        [value, err.string.gsub(/^.*?: warning: /, "")]
      end
    end
  end

  describe "keys" do
    it "returns frozen, deduplicated String keys like the gem" do
      [JSONParity::STDLIB, JSONParity::OURS].each do |parser|
        a, b = parser.new('[{"key":1},{"key":2}]').parse
        expect(a.keys.first).to be_frozen
        expect(a.keys.first).to equal(b.keys.first)
      end
    end

    # On Ruby 3.1, 3.3 and 3.4 Hashes of up to 8 pairs are filled without
    # rb_hash_bulk_insert (ext/rusty_stdlib/src/helpers/fresh_hash.rs): each key's lookup
    # hint, the order, duplicates and the pair count must be what Ruby itself would have
    # made. Arrays of up to 16 elements are filled without rb_ary_new_from_values
    # (helpers/fresh_array.rs): embedded in the object or in a heap buffer (on 3.1 from 4
    # elements on), their length where Ruby keeps it.
    it "fills new Hashes and Arrays itself on the Rubies whose layouts it knows" do
      known = RUBY_VERSION.start_with?("3.1.", "3.3.", "3.4.")
      expect([RustyStdlib::JSON.direct_hash_fill?, RustyStdlib::JSON.direct_array_fill?]).to eq([known, known])
    end

    it "builds Hashes that look up, compare, change and grow like the gem's" do
      random = Random.new(20_261_201)
      names = ["", "a", "b", "id", "é", "日本", "\\u0000", "\\n", "x" * 64, "y" * 65, "z" * 300, "\xff", "a\xffb", "k1", "k2"]
      sources = (1..10).flat_map do |size|
        Array.new(12) do
          pairs = Array.new(size) { [names.sample(random: random), random.rand(100)] }
          "{" + pairs.map { |k, v| "\"#{k}\":#{v}" }.join(",") + "}"
        end
      end
      # json 3 refuses repeated keys unless told otherwise.
      opts = JSONParity.v3? ? { allow_duplicate_key: true } : {}
      sources.product(JSONParity.v3? ? [:new, :parse] : [:new, :parse_plain]).each do |source, via|
        gem_hash = JSONParity::STDLIB.new(source.dup, **opts).parse
        JSONParity.call(JSONParity::OURS, source.dup, via, opts).then do |ours|
          expect(ours.to_a).to eq(gem_hash.to_a), -> { "#{source}: #{ours.to_a.inspect} against #{gem_hash.to_a.inspect}" }
          expect(ours).to eq(gem_hash)
          expect(ours.hash).to eq(gem_hash.hash)
          # Lookups by Strings that are not the keys themselves, and by the keys.
          gem_hash.each_key { |k| expect(ours.fetch(+k)).to eq(gem_hash[k]) }
          ours.each_key { |k| expect(ours.key?(k)).to be(true) }
          expect(ours["absent"]).to be_nil
          ours["added"] = 1
          ours.delete(ours.keys.first)
          gem_hash["added"] = 1
          gem_hash.delete(gem_hash.keys.first)
          expect(ours.to_a).to eq(gem_hash.to_a)
          10.times { |i| ours["grown #{i}"] = i }
          expect(ours.keys.last(11)).to eq(["added"] + Array.new(10) { |i| "grown #{i}" })
          expect(ours.rehash.keys).to eq(ours.keys)
          expect(ours.compare_by_identity.size).to eq(ours.size)
        end
      end
    end

    it "builds Arrays that read, change and grow like the gem's" do
      random = Random.new(20_261_207)
      leaves = ['"s"', "\"long string #{'x' * 40}\"", "1", "-2.5", "null", "true", "[]", "{}", '{"k":[1]}', "[[1,2],[3]]"]
      sources = (0..20).flat_map do |len|
        Array.new(4) { "[" + Array.new(len) { leaves.sample(random: random) }.join(",") + "]" }
      end
      sources.each do |source|
        gem_ary = JSONParity::STDLIB.new(source).parse
        ours = JSONParity::OURS.new(source).parse
        expect(ours).to eq(gem_ary), -> { "#{source}: #{ours.inspect}" }
        expect(ours.size).to eq(gem_ary.size)
        expect(ours.each_with_index.map { |v, i| [i, v] }).to eq(gem_ary.each_with_index.map { |v, i| [i, v] })
        [ours, gem_ary].each do |a|
          a << "pushed"
          a.unshift(0)
          a.insert(a.size / 2, :middle)
          a.concat(Array.new(20) { |i| i })
          a.pop(3)
          a.shift
        end
        expect(ours).to eq(gem_ary)
        expect(ours.dup).to eq(gem_ary)
        expect(ours.hash).to eq(gem_ary.hash)
      end
    end

    # Hashes of more than 8 pairs whose keys came before are copies of a template
    # (fresh_hash::Shape): each must hold its own values and stay independent.
    it "builds Hashes of keys seen before that stay apart and behave like the gem's" do
      random = Random.new(20_261_202)
      key_sets = [9, 10, 16, 33, 64, 65, 100].map { |n| Array.new(n) { |i| "k#{i}#{'x' * (i % 3) * 40}" } }
      key_sets << key_sets[1].reverse << (key_sets[1] + ["k0"]) << (["é"] + key_sets[0])
      objects = Array.new(4) do
        key_sets.shuffle(random: random).map { |keys| keys.to_h { |k| [k, [random.rand(1000), { "n" => k }]] } }
      end
      source = objects.to_json
      [[:new, {}], [:parse_plain, {}], [:new, { freeze: true }]].each do |via, opts|
        gem_result = JSONParity::STDLIB.new(source.dup, **opts).parse
        ours = JSONParity.call(JSONParity::OURS, source.dup, via, opts)
        expect(ours).to eq(gem_result)
        ours.flatten.zip(gem_result.flatten).each do |h, g|
          expect(h.to_a).to eq(g.to_a)
          expect(h.frozen?).to eq(g.frozen?)
          g.each_key { |k| expect(h.fetch(+k)).to eq(g[k]) }
        end
        next if opts[:freeze]

        first, second = ours[0].find { |h| h.size == 16 }, ours[1].find { |h| h.size == 16 }
        k1, k2 = first.keys[1, 2]
        first[k1] = :changed
        first.delete(k2)
        expect(second[k1]).not_to eq(:changed)
        expect(second.key?(k2)).to be(true)
        expect(first.size).to eq(15)
      end
    end
  end
end
