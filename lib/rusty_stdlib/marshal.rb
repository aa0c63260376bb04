# frozen_string_literal: true

require_relative "activation"
require_relative "method_swap"

module RustyStdlib
  # Marshal.dump / Marshal.load / Marshal.restore on Rust for the core types: nil, true,
  # false, Integer, Float, String, Symbol, Array, Hash (with links, encodings and
  # defaults, as format 4.8 writes them), Time, classes and modules, plain objects of
  # named classes, Structs of named Struct.new classes, Strings, Arrays and Hashes of
  # named subclasses, objects of named classes with marshal_dump/marshal_load,
  # _dump/_load or _dump_data/_load_data (the hooks run exactly as the stdlib runs them),
  # objects extended with named modules, Regexps, instance variables on
  # Strings/Arrays/Hashes/Structs/Times, compare_by_identity and ruby2_keywords Hashes,
  # Ranges, Rationals, Complexes, exceptions and Regexp/Range subclasses.
  #
  # Marshal's own dump, load and restore are swapped for ours (MethodSwap: modules
  # the app prepends to Marshal, before or after, still wrap them). Ours try the native
  # code first; they answer only when the whole call is within what it supports, otherwise the stdlib
  # handles the whole call (other classes such as Data, raised exceptions' backtraces,
  # singletons with methods (on Ruby 3.1 any singleton class without a dump hook, see
  # docs/compatibility.md), objects extended with modules that have prepends,
  # a load proc with records other than nil, true, false, numbers, Strings, Symbols,
  # Arrays and Hashes, dumping objects with dump hooks to an IO, classes that would need
  # an autoload, unusual or malformed bytes).
  # Dumping to an IO port writes the same chunks through the same calls as the stdlib;
  # loading from one makes the stdlib's getbyte/read calls, and where the records need
  # the stdlib, it continues from those calls' answers (see ReplayPort). A depth limit's
  # error is raised natively, where MRI raises it. Native or stdlib is decided before any
  # hook runs, except for something unsupported inside a marshal_dump result: then the
  # stdlib runs the hooks again. The stdlib stays reachable through stdlib_dump /
  # stdlib_load / stdlib_restore. Everything here
  # also works inside a Ractor, as the stdlib's Marshal does.
  module Marshal
    # Rubies whose Marshal the specs prove we match: a major.minor entry stands for the
    # whole series, a full version for that release only (3.4.11 changed marshal.c's
    # checks within the series: short refills, Bignum signs).
    PROVEN_RUBIES = %w[3.1 3.3 3.4.11].freeze
    # What native_load returns when the stdlib must load the input instead.
    FALLBACK = Object.new.freeze
    # Whether load/restore with a proc try native_load_proc first. Off: before the proc
    # first runs, the native path proves the whole input loadable by loading it once (so
    # user code never sees a half-native load), which builds the graph twice; `rake bench`
    # measured it slower than the stdlib (marshal-load-proc-twitter 0.61x the stdlib's
    # speed, a 5-Array graph 1.65x its time). The native path stays tested for parity
    # (spec/marshal/marshal_proc_spec.rb) until that check stops allocating.
    NATIVE_PROC_LOAD = false
    # A sentinel for optional arguments that were not passed (nil means something).
    NOT_GIVEN = Object.new.freeze
    private_constant :NOT_GIVEN
    # The methods swapped for ours, and where the stdlib defines them (nil: in C).
    STDLIB_SOURCES = { dump: nil, load: "<internal:marshal>", restore: "<internal:marshal>" }.freeze

    class << self
      def unsupported_reason
        unless proven_ruby?
          return "Marshal on Ruby #{RUBY_VERSION} is not proven (#{PROVEN_RUBIES.join(', ')} are)"
        end
        return nil if installed?

        patched = STDLIB_SOURCES.reject { |name, file| MethodSwap.stock?(::Marshal.singleton_class, name, file) }
        return nil if patched.empty?

        "Marshal.#{patched.keys.join('/')} already redefined (not the stdlib's own); left as it is"
      end

      # Whether the specs prove our Marshal on this Ruby (its series, or this release).
      def proven_ruby?
        PROVEN_RUBIES.include?(RUBY_VERSION[/\A\d+\.\d+/]) || PROVEN_RUBIES.include?(RUBY_VERSION)
      end
      private :proven_ruby?

      # Swaps ours in now, or (json, net_http) once the app requires the library, unless
      # RustyStdlib.status gives a reason not to. Safe to call in any state; returns
      # whether ours is installed or pending.
      def install!
        RustyStdlib.send(:activate, :marshal, self)
      end

      # Puts the stdlib back (ours stays callable, as before install!). Safe to call in any
      # state; returns whether the stdlib is in place. If the app redefined a method of
      # ours since, nothing is undone: it warns which and returns false.
      def uninstall!
        RustyStdlib.send(:deactivate, :marshal, self)
      end

      # Called by RustyStdlib.activate once nothing stands in the way.
      def swap_in!
        STDLIB_SOURCES.each_key { |name| MethodSwap.swap(::Marshal.singleton_class, name, Overrides) }
      end
      private :swap_in!

      # Called by RustyStdlib.deactivate: nil once the stdlib is back, else why not.
      def swap_out!
        MethodSwap.unswap(::Marshal.singleton_class => STDLIB_SOURCES.keys)
      end
      private :swap_out!

      def installed?
        MethodSwap.swapped?(::Marshal.singleton_class, :load)
      end

      # The stdlib's Marshal.dump, whether or not ours is installed.
      def stdlib_dump(obj, port = NOT_GIVEN, limit = NOT_GIVEN)
        if NOT_GIVEN.equal?(port)
          stdlib_method(:dump).call(obj)
        elsif NOT_GIVEN.equal?(limit)
          stdlib_method(:dump).call(obj, port)
        else
          stdlib_method(:dump).call(obj, port, limit)
        end
      end

      # The stdlib's Marshal.load.
      def stdlib_load(source, proc = nil, freeze: false)
        stdlib_method(:load).call(source, proc, freeze: freeze)
      end

      # The stdlib's Marshal.restore.
      def stdlib_restore(source, proc = nil, freeze: false)
        stdlib_method(:restore).call(source, proc, freeze: freeze)
      end

      # Marshal's own method `name` (the stdlib's, below any module prepended to
      # Marshal). Looked up on each call (not kept in an ivar) so that it also works
      # inside a Ractor.
      def stdlib_method(name)
        MethodSwap.stdlib_method(::Marshal.singleton_class, name).bind(::Marshal)
      end

      # Ours, callable whether or not installed (the specs compare it with stdlib_dump).
      def dump(obj, port = NOT_GIVEN, limit = NOT_GIVEN)
        if NOT_GIVEN.equal?(port)
          native_dump(obj, nil) || stdlib_dump(obj)
        elsif NOT_GIVEN.equal?(limit)
          (Integer === port ? native_dump(obj, port) : native_dump_to(obj, port, nil)) || stdlib_dump(obj, port)
        else
          native_dump_to(obj, port, limit) || stdlib_dump(obj, port, limit)
        end
      end

      # Ours, callable whether or not installed.
      def load(source, proc = nil, freeze: false)
        if nil.equal?(proc)
          result = native_load(source, freeze, FALLBACK)
          return result unless FALLBACK.equal?(result)
        end
        load_rest(source, proc, freeze) { |input| stdlib_load(input, proc, freeze: freeze) }
      end

      # The rest of a load or restore once the String fast path (the caller's, kept
      # inline there) did not answer: a non-String source, or a proc. The stdlib's
      # method is the block, given what it must read instead of `source`.
      def load_rest(source, proc, freeze)
        if nil.equal?(proc)
          result, source = load_other(source, freeze)
        elsif NATIVE_PROC_LOAD
          result = native_load_proc(source, freeze, proc, FALLBACK)
        else
          result = FALLBACK
        end
        FALLBACK.equal?(result) ? yield(source) : result
      end

      # After native_load gave up on `source`: for a non-String (MRI converts it with
      # to_str if it can, else reads it as an IO-like port), the object loaded natively,
      # or FALLBACK; and what the stdlib must be given instead of `source` so that no
      # method of it runs twice: the String to_str gave, or a ReplayPort of the port.
      def load_other(source, freeze)
        return [FALLBACK, source] if String === source

        string = String.try_convert(source) # MRI's rb_check_string_type
        return [native_load(string, freeze, FALLBACK), string] if string

        log = []
        result = native_load_from(source, freeze, log, FALLBACK)
        [result, FALLBACK.equal?(result) ? ReplayPort.new(source, log) : source]
      end
    end

    # What the stdlib reads from when it takes over a load from an IO-like port that
    # native_load_from began: the port's answers to the calls already made (the same
    # calls the stdlib makes first, in the same order), then the port itself. MRI has
    # called the port's binmode already.
    class ReplayPort
      def initialize(port, log)
        @port = port
        @log = log
        @next = 0
      end

      def getbyte
        return @port.__send__(:getbyte) if @next == @log.size

        replay(:getbyte, nil)
      end

      def read(length)
        return @port.__send__(:read, length) if @next == @log.size

        replay(:read, length)
      end

      def binmode
        self
      end

      private

      def replay(name, arg)
        logged_name, logged_arg, result, content = @log[@next]
        unless logged_name == name && logged_arg == arg
          raise "rusty_stdlib: Marshal.load from a port replayed #{name}(#{arg.inspect}) " \
                "where #{logged_name}(#{logged_arg.inspect}) was made"
        end
        @next += 1
        # A String the port changed since it returned it (one buffer it reuses): as it was
        # then, as MRI saw it.
        changed = content && !(result.encoding == content.encoding && result == content)
        result.replace(content) if changed && !result.frozen?
        result
      end
    end

    # Swapped in for Marshal's own dump, load and restore by install! (so `self` is
    # Marshal, and the stdlib's are its private __rusty_stdlib_stdlib_* aliases).
    # Parameters are spelled out (no splat) so that calls reach the stdlib with the same
    # arguments and flags.
    module Overrides
      def dump(obj, port = NOT_GIVEN, limit = NOT_GIVEN)
        if NOT_GIVEN.equal?(port)
          RustyStdlib::Marshal.native_dump(obj, nil) || __rusty_stdlib_stdlib_dump(obj)
        elsif NOT_GIVEN.equal?(limit)
          ours = RustyStdlib::Marshal
          (Integer === port ? ours.native_dump(obj, port) : ours.native_dump_to(obj, port, nil)) ||
            __rusty_stdlib_stdlib_dump(obj, port)
        else
          RustyStdlib::Marshal.native_dump_to(obj, port, limit) || __rusty_stdlib_stdlib_dump(obj, port, limit)
        end
      end

      def load(source, proc = nil, freeze: false)
        if nil.equal?(proc)
          result = RustyStdlib::Marshal.native_load(source, freeze, FALLBACK)
          return result unless FALLBACK.equal?(result)
        end
        RustyStdlib::Marshal.load_rest(source, proc, freeze) do |input|
          __rusty_stdlib_stdlib_load(input, proc, freeze: freeze)
        end
      end

      def restore(source, proc = nil, freeze: false)
        if nil.equal?(proc)
          result = RustyStdlib::Marshal.native_load(source, freeze, FALLBACK)
          return result unless FALLBACK.equal?(result)
        end
        RustyStdlib::Marshal.load_rest(source, proc, freeze) do |input|
          __rusty_stdlib_stdlib_restore(input, proc, freeze: freeze)
        end
      end
    end
  end
end

require_relative "marshal/safe_load"

RustyStdlib::Marshal.install!
