# frozen_string_literal: true

require_relative "marshal"

module Fuzz
  # safe_load's check on damaged dumps of random graphs, under random policies: the Rust
  # walk (the "ours" side) must give the refusal the Ruby walk (the "stdlib" side, which
  # JRuby runs) gives. And where the check passes a dump with nothing permitted, loading it
  # with the stdlib must run no hook and make nothing but the default types: a pass the
  # check should have refused shows as a mismatch.
  class MarshalSafeLoad < Target
    CORE = [NilClass, TrueClass, FalseClass, Integer, Float, String, Symbol, Array, Hash].freeze

    def next_case
      bytes = begin
        MarshalHelper::Stdlib.dump(MarshalHelper::GraphGenerator.new(@rng, 25).generate)
      rescue StandardError
        retry
      end
      bytes = Mutation.mutate(bytes, @rng, MarshalLoad::TOKENS, max_edits: 3) if @rng.rand < 0.7
      names = bytes.b.scan(/[A-Z][A-Za-z:]+/).uniq
      classes = @rng.rand < 0.4 ? [] : names.sample(@rng.rand(0..names.size), random: @rng)
      [bytes, classes, @rng.rand < 0.8 ? nil : %w[a b E], @rng.rand(1..12)]
    end

    def outcome(side, (bytes, classes, symbols, depth))
      if side == :stdlib
        [RustyStdlib::Marshal::Vet.call(bytes, classes, symbols, depth), true]
      else
        refusal = RustyStdlib::Marshal.native_vet(bytes, classes, symbols, depth)
        [refusal, refusal ? true : classes.any? || core_only?(bytes)]
      end
    end

    # Whether the stdlib's load of `bytes` ran no hook and made only default types (an
    # error is fine: nothing of a refused class was made before it).
    def core_only?(bytes)
      RustyMarshalSpec::HOOK_LOG.clear
      loaded = begin
        MarshalHelper::Stdlib.load(bytes)
      rescue StandardError
        return RustyMarshalSpec::HOOK_LOG.empty?
      end
      RustyMarshalSpec::HOOK_LOG.empty? && core?(loaded, {}.compare_by_identity)
    end

    # MRI's `Marshal.load(freeze: true)` gives a binary String subclass instance (a `C`
    # record) the interned String of its bytes and then sets that String's class (ours hands
    # such loads to it; Ruby 3.1, 3.3 and 3.4 alike). While that object lives, every String
    # interned with those bytes is it: a plain String Hash key of a later dump, too. The
    # marshal_load target makes such loads, so a dump with no class in it can load a key of
    # a class it does not name, which is MRI's table, not the check, letting it through.
    def interned_subclass?(value)
      value.is_a?(String) && value.frozen? && value.equal?(-String.new(value))
    end

    def core?(value, seen)
      return true if seen.key?(value)

      seen[value] = true
      return false unless CORE.any? { |c| value.instance_of?(c) } || interned_subclass?(value)
      return false unless value.instance_variables.empty?

      case value
      when Array then value.all? { |v| core?(v, seen) }
      when Hash then core?(value.default, seen) && value.all? { |k, v| core?(k, seen) && core?(v, seen) }
      else true
      end
    end
  end

  TARGETS["marshal_safe_load"] = MarshalSafeLoad
end
