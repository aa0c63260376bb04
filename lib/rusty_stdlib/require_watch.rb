# frozen_string_literal: true

require_relative "method_swap"

module RustyStdlib
  # `require`, watched for the modules that install lazily (JSON, the Net::HTTP
  # pieces): requiring rusty_stdlib does not load the stdlib libraries they replace; each
  # goes in once the app has required its library. A listener is called only after a
  # require returned: a require of one of its features anywhere, or any outermost
  # require of the thread. Nested requires of other files return while the file that
  # required them is half loaded (net/http's own `require "uri"` returns before
  # Net::HTTP exists), so they are skipped. The outermost check catches a library loaded
  # by an absolute path, `Kernel.require`, a `.rb` suffix, or `require_relative`/`load`
  # (at the next require after them: those two are not watched, a Ruby wrapper would
  # change the file they resolve against).
  module RequireWatch
    DEPTH = :__rusty_stdlib_require_depth
    private_constant :DEPTH

    # [features, listener] pairs.
    @listeners = []

    class << self
      # Calls `listener` (anything with #call) after every require of one of `features`
      # and after every outermost require, from now on; swaps the require watch in.
      def watch(features, listener)
        @listeners << [features.freeze, listener] unless @listeners.any? { |_, l| l.equal?(listener) }
        return if @watching

        MethodSwap.swap(::Kernel, :require, RequireHook)
        # Kernel.require, Kernel's public singleton copy, which Kernel#require's watch misses.
        MethodSwap.swap(::Kernel.singleton_class, :require, RequireHook)
        @watching = true
      end

      # Whether `require` is watched.
      def watching?
        @watching == true
      end

      # Before a require: this thread's require depth so far, counted one deeper.
      def enter
        depth = Thread.current[DEPTH] || 0
        Thread.current[DEPTH] = depth + 1
        depth
      end

      # After a require that began at `depth` (see enter), however it ended.
      def leave(depth)
        Thread.current[DEPTH] = depth
      end

      # After a require of `path` that began at `depth` returned.
      def returned(path, depth)
        @listeners.each do |features, listener|
          listener.call if depth.zero? || features.include?(path)
        end
      end
    end

    # Kernel#require (private, as Kernel's own), swapped in for whatever Kernel#require
    # is (RubyGems', or another wrapper's): a later alias chain (Zeitwerk, Bootsnap)
    # wraps it as it would have wrapped that. It calls that require itself (no block in
    # between), so backtraces inside a required file gain this one frame only.
    module RequireHook
      def require(path)
        depth = RequireWatch.enter
        begin
          loaded = __rusty_stdlib_stdlib_require(path)
        ensure
          RequireWatch.leave(depth)
        end
        RequireWatch.returned(path, depth)
        loaded
      end
    end
  end
end
