# frozen_string_literal: true

# JSON: parse (and generate) of the standard benchmark documents, with Oj's compat mode
# as the reference column. Generate stays on the json gem's C generator until ours is
# proven; its rows show that honestly (about 1.00x).
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

Bench.define(:json, requires: %w[json], references: { "Oj compat" => %w[oj] },
                    source: "JSON corpus: #{corpus.description}") do
  documents.each do |name, shape|
    read = -> { corpus.read("#{name}.json") { |random| JSON.generate(shape.call(random)) } }
    workload "json-parse-#{name}",
             setup: read,
             bytes: ->(input) { input.bytesize },
             op: "JSON.parse(input)",
             output: ->(value) { value.inspect },
             references: { "Oj compat" => "Oj.load(input, mode: :compat)" }
  end

  %w[small twitter citm_catalog canada].each do |name|
    shape = documents.fetch(name)
    workload "json-generate-#{name}",
             setup: -> { JSON.parse(corpus.read("#{name}.json") { |r| JSON.generate(shape.call(r)) }) },
             op: "JSON.generate(input)",
             references: { "Oj compat" => "Oj.dump(input, mode: :compat)" }
  end
end
