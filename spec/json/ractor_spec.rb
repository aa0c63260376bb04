# frozen_string_literal: true

require_relative "generator_helper"

# json's parser and generator work inside any Ractor, so ours must too: the calls below
# raised Ractor::UnsafeError before the extension declared them Ractor-safe. Several
# Ractors parse at once, each against its own key cache and value stacks (Ractor-local
# storage, ext/rusty_stdlib/src/json/sink.rs), with GCs in between.
RSpec.describe "JSON inside Ractors" do
  DOCUMENT = '{"a":[1,2.5,-0.0,"x\u00e9\\n",{"b":null,"c":[true,false]}],' \
             '"key":"value","n":-12345678901234567890,"e":1.5e300,"s":"\\ud83d\\ude00"}'

  # What each Ractor does, as [label, outcome] pairs; outcomes are compared by shape.
  RACTOR_WORK = <<~RUBY
    doc, round_count = args
    results = []
    round_count.times do |i|
      GC.start if i == 1
      parsed = JSON.parse(doc)
      results = [
        [:parse, parsed],
        [:symbolize, JSON.parse(doc, symbolize_names: true, freeze: true)],
        [:parse_error, (JSON.parse(doc[0, 20]) rescue [$!.class, $!.message])],
        [:generate, JSON.generate(parsed)],
        [:to_json, parsed.to_json],
        [:pretty, JSON.pretty_generate(parsed)],
        [:state, JSON::State.new(indent: "\\t", space: " ").generate(parsed)],
        [:nan_error, (JSON.generate([Float::NAN]) rescue [$!.class, $!.message])],
        [:parser_class, JSON::Parser.name, JSON.state.name],
      ]
    end
    results
  RUBY

  def outcomes_in_ractors(count, rounds)
    experimental = Warning[:experimental]
    Warning[:experimental] = false
    ractors = Array.new(count) do
      Ractor.new([DOCUMENT, rounds].freeze, RACTOR_WORK) { |args, work| eval(work) } # rubocop:disable Security/Eval
    end
    ractors.map(&:take)
  ensure
    Warning[:experimental] = experimental
  end

  def expected_outcomes
    JSONGenParity.with_generator(JSONGenParity::STDLIB) do
      parse = ->(src, opts = nil) { JSONParity::STDLIB.new(src, **(opts || {})).parse }
      parsed = parse.call(DOCUMENT)
      [
        [:parse, parsed],
        [:symbolize, parse.call(DOCUMENT, symbolize_names: true, freeze: true)],
        [:parse_error, (parse.call(DOCUMENT[0, 20]) rescue [$!.class, $!.message])],
        [:generate, JSON.generate(parsed)],
        [:to_json, parsed.to_json],
        [:pretty, JSON.pretty_generate(parsed)],
        [:state, JSON::State.new(indent: "\t", space: " ").generate(parsed)],
        [:nan_error, (JSON.generate([Float::NAN]) rescue [$!.class, $!.message])],
      ]
    end
  end

  it "parses and generates as the gem does, with ours installed there too" do
    expected = expected_outcomes.map { |label, *value| [label, JSONParity.shape(value)] }
    outcomes = outcomes_in_ractors(3, 3)
    outcomes.each do |results|
      *compared, (_, parser_class, state_class) = results
      expect(compared.map { |label, *value| [label, JSONParity.shape(value)] }).to eq(expected)
      expect(parser_class).to eq(JSON::Parser.name)
      expect(state_class).to eq(JSON.state.name)
    end
    expect(outcomes.first.last[1]).to start_with("RustyStdlib::") if JSONParity.installed?
  end

  it "gives every Ractor its own key cache: keys parsed in parallel stay right" do
    experimental = Warning[:experimental]
    Warning[:experimental] = false
    docs = Array.new(4) do |k|
      JSON.generate(Array.new(200) { |i| { "k#{k}_#{i % 37}" => i, "shared" => k, "v#{i % 5}" => [k] } })
    end
    ractors = docs.map do |doc|
      Ractor.new(doc.dup.freeze) do |d|
        Array.new(20) { JSON.generate(JSON.parse(d)) == d }.all?
      end
    end
    expect(ractors.map(&:take)).to eq([true] * 4)
  ensure
    Warning[:experimental] = experimental
  end
end
