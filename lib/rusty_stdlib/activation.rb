# frozen_string_literal: true

require_relative "version"

# Loads the native extension and swaps stdlib modules in, one module at a time.
#
# A module is installed only when all of these hold:
# - the RUSTY_STDLIB environment variable allows it ("off" disables all,
#   "digest,json" picks modules; unset means every module);
# - the native extension loads on this Ruby (never on TruffleRuby, for one);
# - the stdlib it replaces is a version whose parity the specs prove.
# Otherwise the stdlib stays in place and RustyStdlib.status says why.
module RustyStdlib
  MODULES = %i[digest json marshal net_http].freeze
  DISABLED_WORDS = %w[off 0 false none no].freeze
  # Why this Ruby gets no native extension at all (extconf.rb builds none), or nil.
  NO_EXTENSION_REASON =
    if RUBY_ENGINE != "ruby"
      "#{RUBY_ENGINE} has no CRuby C API"
    elsif RUBY_VERSION < "3.1"
      "Ruby #{RUBY_VERSION} is older than any the extension supports (3.1)"
    end

  @installed = []
  @status = {}
  @native = nil
  @native_error = nil

  class << self
    # Modules swapped in, in the order they were installed.
    def installed
      @installed.dup
    end

    # Every module's state: :installed, or the reason it was left out.
    def status
      MODULES.to_h { |name| [name, @status.fetch(name, "not required")] }
    end

    # Whether RUSTY_STDLIB lets `name` be installed.
    def enabled?(name, env = ENV["RUSTY_STDLIB"])
      return true if env.nil? || env.strip.empty?

      words = env.downcase.split(/[\s,]+/).reject(&:empty?)
      return false if words.any? { |w| DISABLED_WORDS.include?(w) }

      words.include?(name.to_s) || words.include?("all")
    end

    # Installs `mod` (a module with `supported_reason` and `install!`) under `name`,
    # unless something says no. Returns whether it is installed.
    def activate(name, mod)
      return true if @installed.include?(name)

      reason = refusal(name, mod)
      if reason
        @status[name] = reason
        return false
      end
      mod.install!
      @installed << name
      @status[name] = :installed
      true
    end

    # For a module that installs lazily (it said :installed when its library was not
    # loaded yet, from the version it would load): the library that loaded is not one it
    # proves, so it stays out, and status says why.
    def withdraw(name, reason)
      @installed.delete(name)
      @status[name] = reason
      nil
    end

    # Whether the native extension is loaded; loads it on first call and warns once
    # if it cannot be loaded.
    def native?
      return @native unless @native.nil?

      @native = load_native
    end

    private

    def refusal(name, mod)
      return "disabled by RUSTY_STDLIB=#{ENV['RUSTY_STDLIB']}" unless enabled?(name)
      return "native extension unavailable (#{@native_error})" unless native?

      mod.unsupported_reason
    end

    def load_native
      # Expected, not a fault: the gem installs without the extension there (extconf.rb).
      @native_error = NO_EXTENSION_REASON
      if @native_error
        warn "rusty_stdlib: #{@native_error}; the stdlib stays in place" if $VERBOSE
        return false
      end

      abi = RUBY_VERSION[/\A\d+\.\d+/]
      begin
        require "rusty_stdlib/#{abi}/rusty_stdlib"
      rescue LoadError
        require "rusty_stdlib/rusty_stdlib"
      end
      true
    rescue LoadError => e
      @native_error = e.message
      warn "rusty_stdlib: native extension unavailable (#{e.message}); the stdlib stays in place"
      false
    end
  end
end
