# frozen_string_literal: true

require_relative "generator_helper"

# json's parser and generator work inside any Ractor, so ours must too: the calls below
# raised Ractor::UnsafeError before the extension declared them Ractor-safe. Several
# Ractors parse at once, each against its own key cache and value stacks (Ractor-local
# storage, ext/rusty_stdlib/src/json/sink.rs), with GCs in between.
#
# The Ractors run in a child process: once a process has made a Ractor, Ruby 3.1's VM
# locks stay in their multi-Ractor mode, where one run of this suite was seen spinning in
# them for good (inside MRI's own Marshal.load), so the suite's process makes none.
RSpec.describe "JSON inside Ractors" do
  JSON_RACTOR_DOCUMENT = '{"a":[1,2.5,-0.0,"x\u00e9\\n",{"b":null,"c":[true,false]}],' \
             '"key":"value","n":-12345678901234567890,"e":1.5e300,"s":"\\ud83d\\ude00"}'

  # Labelled calls, each made in a Ractor (and by the stdlib here, for comparison).
  JSON_RACTOR_CALLS = {
    parse: "JSON.parse(DOC)",
    symbolize: "JSON.parse(DOC, symbolize_names: true, freeze: true)",
    parse_error: "JSON.parse(DOC[0, 20])",
    generate: "JSON.generate(JSON.parse(DOC))",
    to_json: "JSON.parse(DOC).to_json",
    pretty: "JSON.pretty_generate(JSON.parse(DOC))",
    state: 'JSON::State.new(indent: "\t", space: " ").generate(JSON.parse(DOC))',
    nan_error: "JSON.generate([Float::NAN])"
  }.freeze

  # Prints, as Marshal data, [label, shape] for each call in each of three Ractors
  # (shapes: JSONParity.shape, or the exception's class, message and message encoding),
  # and the classes JSON::Parser and JSON.state name there.
  #
  # Between the rounds each Ractor runs a full GC, which marks the others' key caches and
  # value stacks: on Ruby 3.1 only. On Ruby 3.3.8 a full GC in a process whose Ractors
  # have used json now and then dies in MRI's marker ("[BUG] push_mark_stack() called
  # for broken object", "[BUG] Object ID seen, but not in mapping table"), with or
  # without rusty_stdlib: this child with RUSTY_STDLIB=off died in 8 of 500 runs, and in
  # 17 of 1,000 with the GC.start moved to the main Ractor while the others waited; with
  # ours in 4 of 1,358. Without the GC.start ours ran 1,500 times without a crash there;
  # on Ruby 3.1 the child with it ran 1,000 times without one.
  JSON_RACTOR_CHILD = <<~RUBY
    require "rusty_stdlib"
    require #{File.expand_path('json_helper', __dir__).dump}
    Warning[:experimental] = false
    DOC = #{JSON_RACTOR_DOCUMENT.dump}.freeze
    calls = Marshal.load(#{Marshal.dump(JSON_RACTOR_CALLS).dump})
    ractors = Array.new(3) do
      Ractor.new(calls) do |work|
        Array.new(3) do |round|
          GC.start if round == 1 && RUBY_VERSION < "3.3"
          work.map do |label, call|
            outcome = begin
              JSONParity.shape(eval(call))
            rescue StandardError => e
              [e.class.name, e.message, e.message.encoding.name]
            end
            [label, outcome]
          end
        end.last + [[:classes, [JSON::Parser.name, JSON.state.name]]]
      end
    end
    print Marshal.dump(ractors.map(&:take))
  RUBY

  def expected_outcomes
    JSONGenParity.with_generator(JSONGenParity::STDLIB) do
      JSONParity.with_parser(JSONParity::STDLIB) do
        JSON_RACTOR_CALLS.map do |label, call|
          outcome = begin
            JSONParity.shape(eval(call.gsub("DOC") { JSON_RACTOR_DOCUMENT.dump })) # rubocop:disable Security/Eval
          rescue StandardError => e
            [e.class.name, e.message, e.message.encoding.name]
          end
          [label, outcome]
        end
      end
    end
  end

  it "parses and generates as the gem does, with ours installed there too" do
    out, err, status = ruby_run(JSON_RACTOR_CHILD)
    expect([err, status.success?]).to eq(["", true])
    per_ractor = Marshal.load(out)
    expected = expected_outcomes
    expect(per_ractor.size).to eq(3)
    per_ractor.each do |outcomes|
      *compared, (_, classes) = outcomes
      expect(compared).to eq(expected)
      expect(classes).to eq([JSON::Parser.name, JSON.state.name])
    end
    expect(per_ractor.first.last.last.first).to start_with("RustyStdlib::") if JSONParity.installed?
  end

  it "gives every Ractor its own key cache: keys parsed in parallel stay right" do
    out, err, status = ruby_run(<<~RUBY)
      require "rusty_stdlib"
      require "json"
      Warning[:experimental] = false
      docs = Array.new(4) do |k|
        JSON.generate(Array.new(200) { |i| { "k\#{k}_\#{i % 37}" => i, "shared" => k, "v\#{i % 5}" => [k] } })
      end
      ractors = docs.map do |doc|
        Ractor.new(doc.freeze) { |d| Array.new(20) { JSON.generate(JSON.parse(d)) == d }.all? }
      end
      print ractors.map(&:take).inspect
    RUBY
    expect([out, err, status.success?]).to eq(["[true, true, true, true]", "", true])
  end
end
