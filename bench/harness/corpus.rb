# frozen_string_literal: true

module Bench
  # Where file-based workloads (JSON now, others later) read their documents from, and a
  # line for the report saying which source was used. First match wins:
  #   1. ../shared/corpus/json/bench beside the checkout (the team's shared corpus);
  #   2. the folder named by RUSTY_BENCH_CORPUS;
  #   3. nothing: workloads generate seeded documents of the same shapes instead.
  #
  #   Bench::Corpus.json.read("twitter.json") { |random| generated_twitter(random) }
  class Corpus
    ROOT = File.expand_path("../..", __dir__)
    SHARED_JSON = File.expand_path("../shared/corpus/json/bench", ROOT)
    SEED = 42

    def self.json(env = ENV)
      candidates = [[SHARED_JSON, "shared corpus"],
                    [env["RUSTY_BENCH_CORPUS"], "RUSTY_BENCH_CORPUS"]]
      dir, origin = candidates.find { |path, _| path && File.directory?(path) }
      new(dir, origin)
    end

    attr_reader :dir

    def initialize(dir, origin)
      @dir = dir
      @origin = origin
    end

    def generated?
      @dir.nil?
    end

    # For the report header.
    def description
      return "generated (seeded Random.new(#{SEED}), no corpus folder found)" if generated?

      "#{@dir} (#{@origin})"
    end

    # The file's bytes, or what the block generates (given a seeded Random) when there is
    # no corpus folder. A folder that lacks the file is an error, not a silent fallback:
    # the numbers would no longer be comparable with earlier runs.
    def read(name)
      return yield(Random.new(SEED)) if generated?

      File.binread(File.join(@dir, name))
    end
  end
end
