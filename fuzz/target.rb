# frozen_string_literal: true

module Fuzz
  # Targets by name (each registers itself).
  TARGETS = {}

  # What every target shares: a seeded Random, the corpus folder, and by default each
  # case run by the stdlib and then by ours before the next case (a target that must
  # switch implementations per batch overrides `outcomes`).
  class Target
    def initialize(rng, corpus_dir)
      @rng = rng
      @corpus_dir = corpus_dir
    end

    # Why this target cannot run on this Ruby (nil when it can).
    def skip_reason = nil

    # [the stdlib's outcomes, ours] for a batch of cases.
    def outcomes(cases)
      cases.map { |kase| [outcome(:stdlib, kase), outcome(:ours, kase)] }.transpose
    end
  end
end
