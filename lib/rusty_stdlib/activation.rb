# frozen_string_literal: true

require_relative "version"

# Loads the native extension and swaps stdlib modules in, one module at a time.
#
# A module is installed only when all of these hold:
# - the RUSTY_STDLIB environment variable allows it (see SELECTION_HELP);
# - the native extension loads on this Ruby (never on TruffleRuby, for one);
# - the stdlib it replaces is a version whose parity the specs prove.
# Otherwise the stdlib stays in place and RustyStdlib.status says why.
module RustyStdlib
  MODULES = %i[digest json marshal net_http].freeze
  DISABLED_WORDS = %w[off 0 false none no].freeze
  # Every word RUSTY_STDLIB may hold ("net-http" reads as net_http).
  KNOWN_WORDS = (MODULES.map(&:to_s) + ["all"] + DISABLED_WORDS).freeze
  SELECTION_HELP = "RUSTY_STDLIB takes module names (#{MODULES.join(', ')}) or all, separated by " \
                   "commas or spaces, or one of #{DISABLED_WORDS.join(', ')} for none"
  # Why this Ruby gets no native extension at all (extconf.rb builds none), or nil.
  NO_EXTENSION_REASON =
    if RUBY_ENGINE != "ruby"
      "#{RUBY_ENGINE} has no CRuby C API"
    elsif RUBY_VERSION < "3.1"
      "Ruby #{RUBY_VERSION} is older than any the extension supports (3.1)"
    end
  # The Ruby series ("3.4") that the modules' tables of proven stdlib versions are keyed by.
  RUBY_SERIES = RUBY_VERSION[/\A\d+\.\d+/]

  @activated = [] # in place, or waiting for their library to load (:pending)
  @status = {}
  @native = nil
  @native_error = nil
  @selection_warned = false
  @modules_by_name = {}

  class << self
    # Modules swapped in now, in the order they were installed.
    def installed
      @activated.select { |name| status[name] == :installed }
    end

    # Every module's state: :installed; :pending when it goes in as soon as the app
    # requires the library it replaces (json, net/http); or why it was left out.
    def status
      MODULES.to_h { |name| [name, state(name)] }
    end

    # Whether RUSTY_STDLIB lets `name` be installed. A word it does not know turns every
    # module off (the safe reading of a typo: the stdlib everywhere), with a warning.
    def enabled?(name, env = ENV["RUSTY_STDLIB"])
      words = selection_words(env)
      return true if words.empty?
      return false if words.any? { |w| DISABLED_WORDS.include?(w) } || !unknown_words(words).empty?

      words.include?(name.to_s) || words.include?("all")
    end

    # The stdlib versions `table` (Ruby series => versions) lists for this Ruby. A version
    # proven on one Ruby is not taken as proven on another: the library's C code and the
    # Ruby it runs on both shape what a caller sees, and the specs ran on that pair only.
    def proven_here(table)
      table.fetch(RUBY_SERIES, []).freeze
    end

    # How a refusal names what is proven: "on Ruby 3.4 (proven: 2.9.1)".
    def proven_note(versions)
      "on Ruby #{RUBY_SERIES} (proven: #{versions.empty? ? 'none' : versions.join(', ')})"
    end

    # Whether the native extension is loaded; loads it on first call and warns once
    # if it cannot be loaded.
    def native?
      return @native unless @native.nil?

      @native = load_native
    end

    private

    # Installs `mod` (a module with `unsupported_reason` and a private `swap_in!`) under
    # `name`, unless something says no. Returns whether it is installed or pending.
    # Each module's own `install!` calls it (private: the modules' install! are the API),
    # so that is safe in any state.
    def activate(name, mod)
      return true if @activated.include?(name)

      reason = refusal(name, mod)
      if reason
        @status[name] = reason
        return false
      end
      mod.send(:swap_in!)
      @activated << name
      @modules_by_name[name] = mod
      @status[name] = :installed
      true
    end

    # Puts the stdlib back for `name` (`mod`'s private `swap_out!` does it and says why not,
    # or nil). Each module's own `uninstall!` calls it; safe in any state. Returns whether
    # the stdlib is in place for `name` now.
    def deactivate(name, mod)
      return true unless @activated.include?(name)

      reason = mod.send(:swap_out!)
      if reason
        warn "rusty_stdlib: #{name} stays installed: #{reason}"
        return false
      end
      @activated.delete(name)
      @status[name] = "uninstalled by #{mod}.uninstall!"
      true
    end

    # For a module that said :pending (it installs lazily), the library that
    # loaded is not one it proves, so it stays out; status says why, and -w shows it.
    def withdraw(name, reason)
      @activated.delete(name)
      @status[name] = reason
      warn "rusty_stdlib: #{name} stays on the stdlib: #{reason}" if $VERBOSE
      nil
    end

    # Whether `name` is installed or pending.
    def activated?(name)
      @activated.include?(name)
    end

    def state(name)
      mod = @modules_by_name[name]
      return :pending if @activated.include?(name) && mod.respond_to?(:pending?) && mod.pending?

      @status.fetch(name, "not required")
    end

    def selection_words(env)
      env.to_s.downcase.tr("-", "_").split(/[\s,]+/).reject(&:empty?)
    end

    def unknown_words(words)
      words - KNOWN_WORDS
    end

    def refusal(name, mod)
      unless enabled?(name)
        unknown = unknown_words(selection_words(ENV["RUSTY_STDLIB"]))
        return "disabled by RUSTY_STDLIB=#{ENV['RUSTY_STDLIB']}" if unknown.empty?

        warn_selection(unknown)
        return "disabled: RUSTY_STDLIB=#{ENV['RUSTY_STDLIB']} has unknown #{unknown.map(&:inspect).join(', ')}"
      end
      return "native extension unavailable (#{@native_error})" unless native?

      mod.unsupported_reason
    end

    def warn_selection(unknown)
      return if @selection_warned

      @selection_warned = true
      warn "rusty_stdlib: RUSTY_STDLIB=#{ENV['RUSTY_STDLIB']}: unknown #{unknown.map(&:inspect).join(', ')}, " \
           "so every module keeps the stdlib. #{SELECTION_HELP}."
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
      rescue LoadError => e
        first = e
        require "rusty_stdlib/rusty_stdlib"
      end
      true
    rescue LoadError => e
      @native_error = "neither rusty_stdlib/#{abi}/rusty_stdlib nor rusty_stdlib/rusty_stdlib could be " \
                      "loaded: #{first&.message || e.message}"
      warn "rusty_stdlib: native extension unavailable (#{@native_error}); the stdlib stays in place. " \
           "#{build_hint}"
      false
    end

    # The command that builds the extension where this copy of the gem lives: a source
    # checkout (a Bundler path: or git: source) builds with rake, an installed source gem
    # with gem pristine; a precompiled gem (bin/build-native-gem) has no sources, so the
    # source gem must be installed.
    def build_hint
      root = File.expand_path("../..", __dir__)
      if File.exist?(File.join(root, "Rakefile")) && File.exist?(File.join(root, "Cargo.toml"))
        "To build it: cd #{root} && rake compile"
      elsif File.exist?(File.join(root, "ext", "rusty_stdlib", "extconf.rb"))
        "To build it: gem pristine rusty_stdlib --version #{VERSION}"
      else
        built = Dir[File.join(__dir__, "*", "rusty_stdlib.so")].map { |path| File.basename(File.dirname(path)) }
        has = built.empty? ? "This copy has no build" : "This precompiled gem has builds for Ruby #{built.sort.join(', ')}"
        "#{has}. To build one for this Ruby: gem install rusty_stdlib --version #{VERSION} --platform ruby"
      end
    end
  end
end
