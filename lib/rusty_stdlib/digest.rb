# frozen_string_literal: true

require_relative "activation"

module RustyStdlib
  # Digest::MD5, SHA1, SHA256, SHA384, SHA512, RMD160 and SHA2 on Rust.
  #
  # The stdlib's classes are replaced by native ones of the same names and ancestry
  # (Digest::Base / Digest::Class), so `is_a?`, `name`, `inspect` and everything
  # Digest::Instance offers behave as before. The stdlib classes stay reachable
  # through RustyStdlib::Digest.stdlib(:SHA256).
  module Digest
    CLASS_NAMES = %i[MD5 SHA1 SHA256 SHA384 SHA512 RMD160 SHA2].freeze
    # digest gem versions whose behaviour spec/digest proves we match, per Ruby series
    # (each Ruby's own), and this Ruby's.
    PROVEN_BY_RUBY = { "3.1" => %w[3.1.0], "3.3" => %w[3.1.1], "3.4" => %w[3.2.0] }.freeze
    PROVEN_VERSIONS = RustyStdlib.proven_here(PROVEN_BY_RUBY)

    @stdlib = {}

    class << self
      # Loads digest (only here, once the module is enabled: with RUSTY_STDLIB=off,
      # requiring rusty_stdlib loads nothing of the stdlib).
      def unsupported_reason
        require "digest"
        return nil if PROVEN_VERSIONS.include?(::Digest::VERSION)

        "digest #{::Digest::VERSION} is not proven #{RustyStdlib.proven_note(PROVEN_VERSIONS)}"
      end

      # The stdlib's class `name`, whether or not ours replaced it.
      def stdlib(name)
        @stdlib.fetch(name) do
          load_stdlib
          ::Digest.const_get(name)
        end
      end

      # Swaps ours in now, or (json, net_http) once the app requires the library, unless
      # RustyStdlib.status gives a reason not to. Safe to call in any state; returns
      # whether ours is installed or pending.
      def install!
        RustyStdlib.send(:activate, :digest, self)
      end

      # Puts the stdlib back (ours stays callable, as before install!). Safe to call in any
      # state; returns whether the stdlib is in place. If the app replaced one of our
      # Digest classes since, nothing is undone: it warns which and returns false.
      def uninstall!
        RustyStdlib.send(:deactivate, :digest, self)
      end

      # Called by RustyStdlib.activate once nothing stands in the way.
      def swap_in!
        load_stdlib
        CLASS_NAMES.each do |name|
          next if @stdlib.key?(name)

          original = ::Digest.const_get(name)
          # native: an anonymous class until named here; the same one again after uninstall!
          ours = const_defined?(name, false) ? const_get(name, false) : build_class(name.to_s)
          ::Digest.send(:remove_const, name)
          ::Digest.const_set(name, ours)
          const_set(name, ours) unless const_defined?(name, false)
          @stdlib[name] = original
        end
      end
      private :swap_in!

      # Called by RustyStdlib.deactivate: nil once the stdlib's classes are back, else why
      # not. Digest objects made before keep their class (ours).
      def swap_out!
        changed = @stdlib.keys.reject { |name| ::Digest.const_get(name, false).equal?(const_get(name, false)) }
        return "Digest::#{changed.join(', Digest::')} replaced since rusty_stdlib swapped it in" unless changed.empty?

        @stdlib.each do |name, original|
          ::Digest.send(:remove_const, name)
          ::Digest.const_set(name, original)
        end
        @stdlib.clear
        nil
      end
      private :swap_out!

      private

      # Loaded first so that a later `require "digest/sha2"` is a no-op and cannot
      # redefine what we installed.
      def load_stdlib
        %w[digest digest/md5 digest/sha1 digest/sha2 digest/rmd160].each { |lib| require lib }
      end
    end
  end
end

RustyStdlib::Digest.install!
