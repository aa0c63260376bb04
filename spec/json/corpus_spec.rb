# frozen_string_literal: true

require_relative "json_helper"

# Every JSONTestSuite case and every benchmark document gets the gem's verdict from ours.
RSpec.describe "RustyStdlib::JSON::Parser on the shared corpus" do
  include JSONParity

  before { skip JSONParity.unproven_message unless JSONParity.proven? }

  suite_dir = CORPUS_DIR && File.join(CORPUS_DIR, "json", "JSONTestSuite", "test_parsing")
  bench_dir = CORPUS_DIR && File.join(CORPUS_DIR, "json", "bench")

  describe "JSONTestSuite test_parsing" do
    files = suite_dir && File.directory?(suite_dir) ? Dir[File.join(suite_dir, "*.json")].sort : []
    if files.empty?
      it("has the corpus") { skip "JSONTestSuite not found under #{CORPUS_DIR.inspect}" }
    end

    files.each do |path|
      name = File.basename(path)
      it "gives the gem's verdict on #{name}" do
        binary = File.binread(path)
        expect_json_parity(binary)
        # Under GC.stress (a full GC per allocation) the one variant above is enough.
        unless Parity::GC_STRESS
          expect_json_parity(binary.dup.force_encoding(Encoding::UTF_8), via: :parse!)
          expect_json_parity(binary, symbolize_names: true, freeze: true)
        end
      end
    end
  end

  describe "benchmark documents" do
    files = bench_dir && File.directory?(bench_dir) ? Dir[File.join(bench_dir, "*.json")].sort : []
    if files.empty?
      it("has the corpus") { skip "bench documents not found under #{CORPUS_DIR.inspect}" }
    end

    files.each do |path|
      name = File.basename(path)
      it "parses #{name} to the gem's result" do
        if Parity::GC_STRESS && File.size(path) > 4096
          skip "#{name} is too large to parse under GC.stress"
        end
        source = File.read(path)
        expect_json_parity(source)
        expect_json_parity(source, symbolize_names: true)
        expect_json_parity(source, freeze: true)
      end
    end
  end
end
