# frozen_string_literal: true

require_relative "../../spec/marshal/marshal_helper"

module Fuzz
  # Marshal.dump of seeded random object graphs (shared references, cycles, hooks, every
  # string encoding): the bytes, or the error.
  class MarshalDump < Target
    def next_case
      [MarshalHelper::GraphGenerator.new(@rng, 25).generate, @rng.rand(4).zero? ? @rng.rand(1..6) : -1]
    end

    def outcome(side, (graph, limit))
      marshal = Fuzz.marshal(side)
      Fuzz.with_hook_log { Parity.outcome { marshal.dump(graph, limit) } }
    end
  end

  # Marshal.load (with and without freeze:) of damaged dumps of such graphs: the loaded
  # graph's description (MarshalHelper.describe), or the error.
  class MarshalLoad < Target
    TOKENS = ["\x00", "\x06", "\x7f", "\xff", "0", "T", "F", "i", "l", "\"", ":", ";", "@", "[", "{", "}",
              "o", "u", "U", "e", "I", "C", "S", "/", "f", "c", "m", "d", "E"].freeze

    def next_case
      bytes = begin
        MarshalHelper::Stdlib.dump(MarshalHelper::GraphGenerator.new(@rng, 25).generate)
      rescue StandardError # a graph MRI refuses to dump ("can't dump recursive object"...)
        retry
      end
      [Mutation.mutate(bytes, @rng, TOKENS, max_edits: 3), @rng.rand(4).zero?]
    end

    def outcomes(cases)
      # Loaded graphs stay alive to the end of the batch (each case loaded by both sides
      # in turn): MRI's freeze: true load of a binary String subclass changes the class of
      # an interned String while it lives (docs/compatibility.md, Marshal), and both sides must meet the
      # same table.
      @alive = []
      GC.start
      super
    end

    def outcome(side, (bytes, freeze))
      marshal = Fuzz.marshal(side)
      Fuzz.with_hook_log do
        Parity.outcome do
          loaded = marshal.load(bytes, freeze: freeze)
          @alive << loaded
          MarshalHelper.describe(loaded)
        end
      end
    end
  end

  # The Marshal a side runs: the stdlib's, or ours.
  def self.marshal(side)
    side == :stdlib ? MarshalHelper::Stdlib : RustyStdlib::Marshal
  end

  # The block's value, the dump hooks it ran (RustyMarshalSpec::HOOK_LOG, addresses
  # masked) and the warnings it printed (without their "file:line: ").
  def self.with_hook_log
    RustyMarshalSpec::HOOK_LOG.clear
    value, warnings = Parity.with_warnings { yield }
    [value, hook_log, warnings]
  end

  def self.hook_log
    Parity.without_addresses(RustyMarshalSpec::HOOK_LOG.inspect)
  rescue EncodingError # inspecting a loaded object can meet incompatible encodings
    RustyMarshalSpec::HOOK_LOG.flatten.map(&:class).inspect
  end

  TARGETS["marshal_dump"] = MarshalDump
  TARGETS["marshal_load"] = MarshalLoad
end
