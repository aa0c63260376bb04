# frozen_string_literal: true

require_relative "activation"
require_relative "method_swap"
require_relative "require_watch"

module RustyStdlib
  # JSON parsing on Rust: RustyStdlib::JSON::Parser replaces JSON::Ext::Parser through
  # the json gem's own seam (`JSON.parser = ...`), so JSON.parse, JSON.parse!, JSON.load,
  # JSON[...] and JSON::Parser.new(...).parse use it (json 2.9's JSON.parse through the
  # class method Parser.parse, which ours has where the gem's Parser has it).
  #
  # JSON generation on Rust: RustyStdlib::JSON::Generator replaces JSON::Ext::Generator
  # through `JSON.generator = ...` (JSON.generate, fast_generate, pretty_generate, dump,
  # #to_json, JSON::State) on the json versions spec/json/generator_spec.rb proves;
  # elsewhere the gem's generator stays and generator_status says why. The gem's
  # generator stays reachable as RustyStdlib::JSON.stdlib_generator; a #to_json called
  # with the gem's own State runs the gem's method.
  #
  # Calls with object_class, array_class, decimal_class or match_string (and on json 2.9
  # allow_trailing_comma, or JSON.load's create_additions: nil) are handed to the gem's
  # parser (see ext/rusty_stdlib/src/json). The gem's parser stays
  # reachable as RustyStdlib::JSON.stdlib_parser.
  #
  # The option-less JSON.parse(source) and JSON.generate(obj), the commonest calls, skip
  # making a Parser or State object (PlainParse below, and the native PlainGenerate), and
  # otherwise run the gem's own JSON.parse / JSON.generate. They are swapped in for the
  # gem's in JSON's singleton class (MethodSwap: an app's own wrappers, made before
  # or after, wrap them), and only where JSON.parse / JSON.generate are still the gem's
  # (not after Oj.mimic_JSON, say, which replaces them).
  #
  # Lazy install: requiring rusty_stdlib does not load json (an app that never asks
  # for it, or asks later, sees no JSON constant, no #to_json, and libraries that pick
  # a JSON backend by what is loaded pick as before). If json is loaded, ours goes in at
  # once; otherwise when the app requires json (RequireWatch, FEATURES). RustyStdlib.status
  # reports :json :installed from the start when the json version `require "json"` would
  # load is proven (see predicted_version), i.e. "installed or installs on require";
  # `installed_now?` tells which. If the json that then loads is another,
  # unproven version, ours stays out and RustyStdlib.status says why.
  module JSON
    # What RequireWatch calls us after: a require of one of these, or any outermost one.
    # (Not json/ext: json.rb requires it before it is done itself.)
    FEATURES = %w[json].freeze
    # json gem versions whose parser and generator spec/json proves we match, per Ruby
    # series: Ruby 3.1 ships 2.6.1 and Debian's ruby-json package 2.6.3 for it (rake
    # spec:json_package); Ruby 3.3 and 3.4 ship 2.9.1; Debian sid's ruby-json 3.1.0 is
    # built for Ruby 3.3 (bin/test-in-chroot json3.1). json 3.1.0 on Ruby 3.4 is not
    # proven: Debian builds it for 3.3 only and serves no source to build it for 3.4.
    # (2.9.1's State API and differences: ext/rusty_stdlib/src/json/generator/state_v2_9.rs.)
    PROVEN_BY_RUBY = { "3.1" => %w[2.6.1 2.6.3], "3.3" => %w[2.9.1 3.1.0], "3.4" => %w[2.9.1] }.freeze
    # This Ruby's proven versions, of the parser and of the generator.
    PROVEN_VERSIONS = RustyStdlib.proven_here(PROVEN_BY_RUBY)
    GENERATOR_PROVEN_VERSIONS = PROVEN_VERSIONS

    @generator_installed = false

    class << self
      def unsupported_reason
        version_refusal(PROVEN_VERSIONS, "")
      end

      # The gem's C parser, whether or not ours is installed.
      def stdlib_parser
        require "json"
        ::JSON::Ext::Parser
      end

      # Our parser class. json 2.9's JSON.parse calls the class method
      # `Parser.parse(source, opts)`, which 2.6 does not have: ours has it exactly when
      # the gem's Parser does.
      def parser
        return v3_parser if v3?

        if ::JSON::Ext::Parser.respond_to?(:parse) && !Parser.respond_to?(:parse)
          Parser.singleton_class.alias_method(:parse, :parse_with)
        end
        Parser
      end

      # Whether the loaded json is 3.x, whose parser API (ParserConfig, keyword options,
      # errors with positions) ours follows in V3.
      def v3?
        ::JSON::VERSION.split(".").first.to_i >= 3
      end

      # Why the generator is left to the gem (nil when ours is proven on this json).
      def generator_unsupported_reason
        version_refusal(GENERATOR_PROVEN_VERSIONS, " generator")
      end

      # :installed, or why the gem's generator was kept (RustyStdlib.status[:json] tells
      # about the parser, which the generator needs installed first).
      def generator_status
        return :installed if @generator_installed
        return "waiting for json to be required" if RustyStdlib.send(:activated?, :json) && !loaded?

        generator_unsupported_reason || "json is not installed: #{RustyStdlib.status[:json]}"
      end

      # Whether ours is in place now (RustyStdlib.status[:json] also says :installed
      # while it waits for json to be required).
      def installed_now?
        @installed_now == true
      end

      # Whether ours waits for json to be required (RustyStdlib.status says :pending).
      def pending?
        !installed_now?
      end

      # The gem's C generator, whether or not ours is installed.
      def stdlib_generator
        require "json"
        ::JSON::Ext::Generator
      end

      # The gem's own #to_json of its GeneratorMethods::<name> module (`name` a String or
      # Symbol: "Hash", "Object", ...), also once ours is prepended to that module.
      def stdlib_to_json(name)
        own_to_json_method(stdlib_generator::GeneratorMethods.const_get(name, false))
      end

      # Our generator module tree (native State and to_json, plus the Ruby extras; on
      # json 3 a module holding our State).
      def generator
        if v3?
          require_relative "json/generator_v3"
          return V3::Generator
        end
        require_relative "json/generator"
        Generator
      end

      # Installs ours now if json is loaded, else once it is (RequireWatch).
      # Swaps ours in now, or (json, net_http) once the app requires the library, unless
      # RustyStdlib.status gives a reason not to. Safe to call in any state; returns
      # whether ours is installed or pending.
      def install!
        RustyStdlib.send(:activate, :json, self)
      end

      # Puts the stdlib back (ours stays callable, as before install!). Safe to call in any
      # state; returns whether the stdlib is in place. If the app redefined a method of
      # ours since, nothing is undone: it warns which and returns false.
      def uninstall!
        RustyStdlib.send(:deactivate, :json, self)
      end

      # Called by RustyStdlib.activate once nothing stands in the way.
      def swap_in!
        loaded? ? install_now : RequireWatch.watch(FEATURES, self)
      end
      private :swap_in!

      # Called by RustyStdlib.deactivate: nil once the gem's parser, generator, JSON.parse
      # and JSON.generate are back, else why not. While pending (json not loaded) there is
      # nothing to undo: `call` sees the module deactivated and leaves json alone.
      def swap_out!
        return nil unless @installed_now

        reason = MethodSwap.unswap(::JSON.singleton_class => %i[parse generate pretty_generate])
        return reason if reason

        ::JSON.parser = @gem_parser
        if @generator_installed
          v3? ? (::JSON.generator = @gem_generator) : uninstall_generator
        end
        @installed_now = @generator_installed = false
        nil
      end
      private :swap_out!

      # Called by RequireWatch after a require returned (see FEATURES): installs ours once
      # json is loaded, unless the json that loaded is not one we prove.
      def call
        return if @installed_now || !loaded? || !RustyStdlib.send(:activated?, :json)

        reason = unsupported_reason
        return RustyStdlib.send(:withdraw, :json, reason) if reason

        install_now
      end

      # Whether JSON.parse / JSON.generate (`name`) take our option-less fast path.
      def plain?(name)
        MethodSwap.swapped?(::JSON.singleton_class, name)
      end

      private

      def install_now
        @installed_now = true
        @gem_parser = ::JSON.parser
        @gem_generator = ::JSON.generator
        ::JSON.parser = parser
        if v3?
          swap_plain(:parse, V3::PlainParse)
          ::JSON::Coder.prepend(V3::CoderParsing) if defined?(::JSON::Coder)
        else
          swap_plain(:parse, PlainParse)
        end
        return if generator_unsupported_reason

        if v3?
          ::JSON.generator = generator
          swap_plain(:generate, V3::PlainGenerate)
        else
          install_generator(generator)
          swap_plain(:generate, PlainGenerate)
          swap_pretty
        end
        @generator_installed = true
      end

      # `JSON.generator = generator`, with the #to_json methods in the place the gem's
      # hold. The gem's `generator=` includes each GeneratorMethods module into its core
      # class, which puts it above every module included there since json loaded, and
      # removes the class's own #to_json. json does that once, as it loads, before app
      # code; ours may come later, after ActiveSupport 7.1+ has included its
      # ToJsonWithActiveSupportEncoder into Hash, Array and the rest (above the gem's
      # modules, so that `obj.to_json` runs its encoder), or after an app's own
      # `def to_json`. So each of our modules is first prepended to the gem's one
      # (Ruby carries that into every class that includes it): it then sits just above
      # the gem's, `generator=`'s include finds it there and changes nothing, and a
      # to_json the class defines itself is put back after `generator=` removed it.
      def install_generator(generator)
        gem_methods = stdlib_generator::GeneratorMethods
        ours = generator::GeneratorMethods
        ours.constants.each do |name|
          next unless gem_methods.const_defined?(name, false)

          gem_methods.const_get(name, false).prepend(ours.const_get(name, false))
        end
        @parked&.each { |mod, methods| methods.each { |name, method, visibility| MethodSwap.put(mod, name, method, visibility) } }
        @parked = nil
        assign_generator(generator)
      end

      # Undoes install_generator. Ruby cannot take a prepended module out, so each of ours
      # gives up its methods (kept in @parked for the next install!) and calls pass through
      # it to the gem's; then the gem's generator goes back in.
      def uninstall_generator
        ours = generator::GeneratorMethods
        @parked = ours.constants.to_h do |name|
          mod = ours.const_get(name, false)
          methods = (mod.instance_methods(false) + mod.private_instance_methods(false)).map do |method|
            [method, mod.instance_method(method), MethodSwap.visibility(mod, method)]
          end
          methods.each { |method, *| mod.send(:remove_method, method) }
          [mod, methods]
        end
        assign_generator(@gem_generator)
      end

      # `JSON.generator = generator`, putting back the #to_json that a core class defines
      # itself, which json 2's `generator=` removes.
      def assign_generator(generator)
        own = own_to_json(generator::GeneratorMethods.constants)
        ::JSON.generator = generator
        own.each do |klass, method, visibility|
          klass.send(:define_method, :to_json, method)
          klass.send(visibility, :to_json)
        end
      end

      # [class, its own #to_json, visibility] of the core classes `names` that define
      # #to_json themselves (public or protected: what `generator=` removes).
      def own_to_json(names)
        names.filter_map do |name|
          klass = ::Object.const_get(name, false)
          next unless klass.instance_methods(false).include?(:to_json)

          visibility = klass.protected_method_defined?(:to_json, false) ? :protected : :public
          [klass, own_to_json_method(klass), visibility]
        end
      end

      # The #to_json `owner` defines itself (a module prepended to `owner` may define one
      # too, and `instance_method` finds that first).
      def own_to_json_method(owner)
        method = owner.instance_method(:to_json)
        method = method.super_method until method.owner.equal?(owner)
        method
      end

      # Whether the json gem's C extension is loaded (completely: we look only after a
      # require returned, see RequireWatch).
      def loaded?
        return false unless defined?(::JSON::VERSION) && defined?(::JSON::Ext::Parser)

        defined?(::JSON::Ext::Generator::State) ? true : false
      end

      # Why the loaded json (or, before it loads, the one predicted_version expects) is
      # not among `versions`, or nil.
      def version_refusal(versions, what)
        loaded = loaded?
        version = loaded ? ::JSON::VERSION : predicted_version
        return nil if versions.include?(version)
        return "json not found on the load path" if version.nil?

        source = loaded ? "" : " (expected, not loaded yet)"
        "json #{version}#{source}#{what} is not proven #{RustyStdlib.proven_note(versions)}"
      end

      # The json version `require "json"` would load, without loading it: the json gem
      # RubyGems has activated (Bundler's, say), else the newest one installed (json is a
      # default gem, and RubyGems' require activates the newest version of a default
      # gem: Debian's Ruby 3.3 ships json 2.7.2 and loads an installed 2.9.1), else what
      # json/version.rb on the load path states (no RubyGems); nil if none is found.
      def predicted_version
        if defined?(::Gem::Specification)
          spec = ::Gem.loaded_specs["json"] || ::Gem::Specification.find_all_by_name("json").max_by(&:version)
          return spec.version.to_s if spec
        end
        type, path = $LOAD_PATH.resolve_feature_path("json/version")
        return nil unless type == :rb

        File.read(path)[/^\s*VERSION\s*=\s*['"]([^'"]+)['"]/, 1]
      rescue LoadError, SystemCallError
        nil
      end

      # json 3's parser classes (lib/rusty_stdlib/json/parser_v3.rb).
      def v3_parser
        require_relative "json/parser_v3"
        unless V3::CoderParsing.const_defined?(:PARSER_OPTIONS, false)
          options = defined?(::JSON::Coder) ? ::JSON::Coder.const_get(:PARSER_OPTIONS) : [].freeze
          V3::CoderParsing.const_set(:PARSER_OPTIONS, options)
        end
        V3::Parser
      end

      # json 2.x's JSON.pretty_generate(obj) is `create_pretty_state.generate(obj)`; ours
      # writes that layout itself while create_pretty_state is json's own method, which
      # PlainPrettyGenerate (native) checks at every call against the one remembered here.
      def swap_pretty
        return unless MethodSwap.stock?(::JSON.singleton_class, :create_pretty_state, "/json/common.rb")

        PlainPrettyGenerate.remember_pretty_state(::JSON.method(:create_pretty_state))
        swap_plain(:pretty_generate, PlainPrettyGenerate)
      end

      def swap_plain(name, source)
        owner = ::JSON.singleton_class
        MethodSwap.swap(owner, name, source) if MethodSwap.stock?(owner, name, "/json/common.rb")
      end
    end
  end
end

module RustyStdlib
  module JSON
    # `JSON.parse(source)` with no options is `Parser.new(source).parse` in the gem; while
    # our Parser is JSON::Parser, Parser.try_parse does the same without making the
    # Parser object, and gives Parser itself (nothing done) where the gem's way must run:
    # a source that is not a String, a warning to print. Swapped in for the gem's
    # JSON.parse, which stays as JSON's private __rusty_stdlib_stdlib_parse.
    module PlainParse
      NOT_GIVEN = Object.new.freeze
      private_constant :NOT_GIVEN

      def parse(source, opts = NOT_GIVEN)
        given = !NOT_GIVEN.equal?(opts)
        if (!given || nil.equal?(opts)) && ::JSON::Parser.equal?(Parser)
          result = Parser.try_parse(source)
          return result unless result.equal?(Parser)
        end
        given ? __rusty_stdlib_stdlib_parse(source, opts) : __rusty_stdlib_stdlib_parse(source)
      end
    end

    # PlainGenerate, whose #generate writes `JSON.generate(obj)` without making a State
    # and otherwise calls the gem's, is native: ext/rusty_stdlib/src/json/generator.rs;
    # so is PlainPrettyGenerate (json 2.x's JSON.pretty_generate(obj), generator/plain_pretty.rs).
  end
end

RustyStdlib::JSON.install!
