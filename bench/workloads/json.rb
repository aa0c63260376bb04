# frozen_string_literal: true

# JSON: parse and generate of the standard benchmark documents, with reference columns:
# Oj compat mode (Oj.load / Oj.dump) and, for parse, Oj's newer Oj::Parser.usual; nosj
# (a Rust JSON gem, where it is on the load path: bench/README.md); and for parse, the
# floor: the same Ruby objects built from a recorded parse, with no parsing at all
# (RustyStdlib::JSON::Tape), what any parser must pay.
require_relative "../harness/corpus"
require_relative "../harness/json_shapes"

corpus = Bench::Corpus.json
documents = {
  "small" => ->(r) { Bench::JsonShapes.generic(r, 3) },
  "medium" => ->(r) { Bench::JsonShapes.generic(r, 60) },
  "large" => ->(r) { Bench::JsonShapes.generic(r, 3000) },
  "twitter" => ->(r) { Bench::JsonShapes.twitter(r) },
  "citm_catalog" => ->(r) { Bench::JsonShapes.citm(r) },
  "canada" => ->(r) { Bench::JsonShapes.canada(r) },
  "activitypub" => ->(r) { Bench::JsonShapes.generic(r, 40) },
  "ohai" => ->(r) { Bench::JsonShapes.generic(r, 300) }
}.freeze

# Oj::Parser.usual with `decimal = :ruby` (Ruby converts long decimals, as the gem does):
# its default (:auto) turns canada's 17-digit floats into BigDecimal, which would not
# match the gem's output; :float matches too but is several times slower.
JSON_OJ_USUAL = "($oj_usual ||= Oj::Parser.usual.tap { |p| p.decimal = :ruby }).parse(input)"
# The tape is recorded on the first call (untimed: calibration and warm-up come first).
JSON_FLOOR = "($rusty_tape ||= (RustyStdlib.native? && RustyStdlib::JSON::Tape.new(input))).build"

# nosj takes UTF-8 only; json converts a binary source to UTF-8 on a copy each call, and
# so does this.
JSON_NOSJ_PARSE = "NOSJ.parse(input.dup.force_encoding(Encoding::UTF_8))"
JSON_REFERENCES = { "Oj compat" => %w[oj], "Oj usual" => %w[oj], "nosj" => %w[nosj], "floor" => %w[rusty_stdlib] }.freeze

Bench.define(:json, requires: %w[json], references: JSON_REFERENCES, source: "JSON corpus: #{corpus.description}") do
  documents.each do |name, shape|
    read = -> { corpus.read("#{name}.json") { |random| JSON.generate(shape.call(random)) } }
    workload "json-parse-#{name}",
             setup: read,
             bytes: ->(input) { input.bytesize },
             op: "JSON.parse(input)",
             output: ->(value) { value.inspect },
             references: { "Oj compat" => "Oj.load(input, mode: :compat)", "Oj usual" => JSON_OJ_USUAL,
                           "nosj" => JSON_NOSJ_PARSE, "floor" => JSON_FLOOR }
  end

  %w[small twitter citm_catalog canada activitypub ohai].each do |name|
    shape = documents.fetch(name)
    workload "json-generate-#{name}",
             setup: -> { JSON.parse(corpus.read("#{name}.json") { |r| JSON.generate(shape.call(r)) }) },
             op: "JSON.generate(input)",
             references: { "Oj compat" => "Oj.dump(input, mode: :compat)", "nosj" => "NOSJ.generate(input)" }
  end

  # The other ways apps write JSON, each its own path through json's Ruby code and State:
  # with options (Rails passes some on every call), pretty_generate, dump and #to_json.
  {
    "generate_options" => "JSON.generate(input, max_nesting: false)",
    "pretty_generate" => "JSON.pretty_generate(input)",
    "dump" => "JSON.dump(input)",
    "to_json" => "input.to_json"
  }.each do |kind, op|
    %w[small twitter].each do |name|
      shape = documents.fetch(name)
      workload "json-#{kind}-#{name}",
               setup: -> { JSON.parse(corpus.read("#{name}.json") { |r| JSON.generate(shape.call(r)) }) },
               op: op
    end
  end
end
