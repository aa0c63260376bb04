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

    # Whether two different outcomes are a difference README already describes.
    def known_difference?(_expected, _actual) = false
  end

  # Byte-level damage to a document: cuts, inserted tokens, deleted and replaced bytes.
  module Mutation
    module_function

    def mutate(bytes, rng, tokens, max_edits: 4)
      doc = bytes.b
      rng.rand(1..max_edits).times do
        pos = rng.rand(doc.bytesize + 1)
        case rng.rand(4)
        when 0 then doc = doc.byteslice(0, pos)
        when 1 then doc.insert(pos, tokens[rng.rand(tokens.size)].b)
        when 2 then doc[pos, rng.rand(1..3)] = "" if pos < doc.bytesize
        else doc.setbyte(pos, rng.rand(256)) if pos < doc.bytesize
        end
      end
      doc
    end

    # A window of at most `max` bytes of a large document.
    def window(doc, rng, max)
      return doc if doc.bytesize <= max

      doc.byteslice(rng.rand(doc.bytesize), rng.rand(1..max))
    end
  end
end
