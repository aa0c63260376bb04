# frozen_string_literal: true

# Marshal: dump (to a String and to a StringIO) and load (from a String, from a StringIO, with
# a proc) of a mixed graph (DESIGN.md §6) and of a large document-shaped graph (the parsed
# twitter.json, or its generated stand-in).
require_relative "../harness/corpus"
require_relative "../harness/json_shapes"

corpus = Bench::Corpus.json

mixed = lambda do
  shared_string = "shared string"
  shared_array = [1, 2, 3]
  Array.new(20) do |i|
    { name: "item #{i}", count: i, big: 2**70 + i, ratio: i / 7.0, kind: :widget,
      tags: %w[a b c], nested: { "list" => [i, i * 2, [i.to_s, nil, true]], "s" => shared_string },
      shared: shared_array }
  end
end
document = lambda do
  JSON.parse(corpus.read("twitter.json") { |r| JSON.generate(Bench::JsonShapes.twitter(r)) })
end

Bench.define(:marshal, requires: %w[json stringio], source: "JSON corpus: #{corpus.description}") do
  { "mixed" => mixed, "twitter" => document }.each do |name, graph|
    workload "marshal-dump-#{name}", setup: graph, op: "Marshal.dump(input)"
    # To an IO port: the same bytes, written in MRI's BUFSIZ chunks.
    workload "marshal-dump-io-#{name}", setup: graph, op: "Marshal.dump(input, StringIO.new(+''))",
                                        output: ->(io) { io.string }
    # Ours writes the stdlib's bytes (spec/marshal proves it), so every column loads the same.
    workload "marshal-load-#{name}",
             setup: -> { Marshal.dump(graph.call) },
             bytes: ->(input) { input.bytesize },
             op: "Marshal.load(input)",
             output: ->(value) { value.inspect }
    # From an IO port (MRI's getbyte/read calls), and with a proc (called once per object).
    workload "marshal-load-io-#{name}",
             setup: -> { Marshal.dump(graph.call) },
             bytes: ->(input) { input.bytesize },
             op: "Marshal.load(StringIO.new(input))",
             output: ->(value) { value.inspect }
    workload "marshal-load-proc-#{name}",
             setup: -> { Marshal.dump(graph.call) },
             bytes: ->(input) { input.bytesize },
             op: "Marshal.load(input, ->(x) { x })",
             output: ->(value) { value.inspect }
  end
end
