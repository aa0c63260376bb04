# frozen_string_literal: true

module Bench
  # Times one operation: compiles it into a counted loop, then runs warm-up, allocation
  # and timed passes. Runs inside the worker process only.
  class Timing
    # times_ns: wall time of each timed pass (CLOCK_MONOTONIC, what is reported);
    # cpu_ns: this process's CPU time in the same passes, which shows how long a pass sat
    # waiting for a core on a busy machine; gc_share: the part of the wall time that Ruby's
    # GC took in passes of their own (nil where GC.stat has no :time, before Ruby 3.1).
    Result = Struct.new(:loops, :times_ns, :cpu_ns, :allocs_per_op, :gc_share, keyword_init: true)

    # Untimed passes whose GC time is read: GC.stat(:time) counts whole milliseconds, so
    # a share read over three ~25 ms passes is good to about a percent.
    GC_PASSES = 3

    # `op` is inlined (not yielded to) so the loop adds only a counter and a compare.
    # `_ =` keeps `ruby -w` quiet about ops like `a == b` used in void context.
    def self.compile(op, name)
      code = Module.new
      code.module_eval(<<~RUBY, "(workload #{name})", 1)
        def self.once(input)
          #{op}
        end

        def self.pass(input, loops)
          i = 0
          while i < loops
            _ = (#{op})
            i += 1
          end
          nil
        end
      RUBY
      new(code)
    end

    def initialize(code)
      @code = code
    end

    def once(input)
      @code.once(input)
    end

    # loops == 0 asks for calibration: as many ops as fill about target_ms per pass.
    def measure(input, loops:, warmup:, passes:, target_ms:)
      loops = calibrate(input, target_ms) if loops.zero?
      warmup.times { @code.pass(input, loops) }
      allocs = allocations(input, loops)
      gc_share = gc_share(input, loops)
      times = []
      cpu = []
      passes.times do
        cpu_start = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond)
        times << time_pass(input, loops)
        cpu << Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond) - cpu_start
      end
      Result.new(loops: loops, times_ns: times, cpu_ns: cpu, allocs_per_op: allocs, gc_share: gc_share)
    end

    private

    def time_pass(input, loops)
      start = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
      @code.pass(input, loops)
      Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) - start
    end

    # Grows the count until a pass is long enough to scale from without the clock's
    # resolution or a stray interrupt dominating, then scales it to the target.
    def calibrate(input, target_ms)
      target_ns = target_ms * 1_000_000
      loops = 1
      loop do
        ns = time_pass(input, loops)
        return [(loops * target_ns.to_f / ns).round, 1].max if ns >= target_ns / 8

        loops *= 4
      end
    end

    # In a pass of its own, so the timed passes do nothing but the op. An empty pass is
    # subtracted: counting itself costs an object or two, which would show as a fraction
    # per op when a pass has only a few ops (1 MiB inputs).
    def allocations(input, loops)
      (count_allocations { @code.pass(input, loops) } -
        count_allocations { @code.pass(input, 0) }).to_f / loops
    end

    # What share of the wall time of GC_PASSES passes went to Ruby's GC: the part of a
    # cell's time that allocating the same objects costs any implementation (a parse
    # that builds the same Hashes as the stdlib's triggers as many collections).
    def gc_share(input, loops)
      return nil unless GC.stat.key?(:time)

      gc_before = GC.stat(:time)
      wall_ns = Array.new(GC_PASSES) { time_pass(input, loops) }.sum
      (GC.stat(:time) - gc_before) * 1_000_000.0 / wall_ns
    end

    def count_allocations
      before = GC.stat(:total_allocated_objects)
      yield
      GC.stat(:total_allocated_objects) - before
    end
  end
end
