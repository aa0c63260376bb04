# frozen_string_literal: true

module Bench
  # How much work a run does, from the command line (BENCH_ARGS under rake) and env.
  #
  #   ruby bench/run.rb [--quick] [--out=DIR] [--list] [FILTER...]
  #
  # A FILTER selects a group (`digest`), a workload by substring (`sha256`, `1MiB`), or
  # the boot-cost measurement (`boot`); no filter selects everything.
  # BENCH_QUICK=1 is the same as --quick; BENCH_ROUNDS=N overrides the rounds.
  Settings = Struct.new(:filters, :quick, :out_dir, :list, :warmup, :passes, :target_ms,
                        :boot_runs, :rounds, keyword_init: true) do
    def full?
      filters.empty? && !quick
    end

    def selects?(workload)
      filters.empty? || filters.any? { |f| f == workload.group.to_s || workload.name.include?(f) }
    end

    def boot?
      filters.empty? || filters.include?("boot")
    end
  end

  module Options
    # Full: the method DESIGN.md §6 fixes. Quick: enough to see the harness work.
    # rounds: processes per cell, each on a different stretch of the run (see Runner).
    FULL = { warmup: 3, passes: 25, target_ms: 25, boot_runs: 10, rounds: 3 }.freeze
    QUICK = { warmup: 1, passes: 3, target_ms: 5, boot_runs: 3, rounds: 1 }.freeze

    def self.parse(argv, env = ENV)
      quick = env["BENCH_QUICK"].to_s.match?(/\A(1|true|yes)\z/i)
      out_dir = nil
      list = false
      filters = argv.reject do |arg|
        case arg
        when "--quick" then quick = true
        when /\A--out=(.+)\z/ then out_dir = Regexp.last_match(1)
        when "--list" then list = true
        when /\A-/ then raise ArgumentError, "unknown option #{arg} (see bench/README.md)"
        end
      end
      amounts = quick ? QUICK : FULL
      rounds = env["BENCH_ROUNDS"] ? Integer(env["BENCH_ROUNDS"]) : amounts[:rounds]
      raise ArgumentError, "BENCH_ROUNDS must be at least 1" unless rounds.positive?

      Settings.new(filters: filters, quick: quick, out_dir: out_dir, list: list,
                   **amounts.merge(rounds: rounds))
    end
  end
end
