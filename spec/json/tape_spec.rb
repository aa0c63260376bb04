# frozen_string_literal: true

require_relative "json_helper"

# RustyStdlib::JSON::Tape, the floor `rake bench` compares a parse with: its #build must
# make what the stdlib's parse makes (classes, encodings, frozenness), or the floor would
# time other work.
RSpec.describe "RustyStdlib::JSON::Tape (the benchmarks' parse floor)" do
  include JSONParity

  before { skip "the native extension is not loaded" unless RustyStdlib.native? }

  bench_dir = CORPUS_DIR && File.join(CORPUS_DIR, "json", "bench")
  documents = [%({"a":[1,2.5,-0.0,"x\\u00e9\\n",null,true,false,{},[]],"b":{"c":12345678901234567890}}),
               %(["\\ud83d\\ude00", 1e300, -1e-300, 0.1, 123456789012345678901234567890.5]), %("just a string"),
               JSON.generate(Array.new(50) { |i| { "k#{i % 7}" => [i, i.to_f / 3, "v" * i] } })]

  it "builds what the stdlib's JSON.parse makes" do
    paths = bench_dir && File.directory?(bench_dir) ? Dir[File.join(bench_dir, "*.json")].sort : []
    (documents + paths.map { |p| File.read(p) }).each do |source|
      tape = RustyStdlib::JSON::Tape.new(source)
      expected = JSONParity.with_parser(JSONParity::STDLIB) { Parity.outcome { JSON.parse(source) } }
      expect(Parity.outcome(stress: Parity::GC_STRESS) { tape.build }).to eq(expected)
      # And again: a tape is built from as often as a benchmark asks.
      expect(Parity.outcome { tape.build }).to eq(expected)
    end
  end

  it "refuses a document json does not parse" do
    expect { RustyStdlib::JSON::Tape.new("[1,]") }.to raise_error(ArgumentError, /not a document json parses/)
  end
end
