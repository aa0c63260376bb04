# frozen_string_literal: true

require "rbconfig"

module Bench
  # Whole-process start-up cost of `require "rusty_stdlib"` against requiring the stdlib
  # modules it replaces: what an app pays at boot, interpreter start included.
  module BootCost
    LIB = File.expand_path("../../lib", __dir__)
    Row = Struct.new(:label, :env, :args, :best_ms, keyword_init: true)

    STDLIB = 'require "digest"; require "digest/sha2"; require "json"; require "net/http"'
    RUSTY = 'require "rusty_stdlib"'

    # The first row is the floor every other row is compared with.
    def self.commands
      [
        Row.new(label: "ruby -e ''", env: {}, args: ["-e", ""]),
        Row.new(label: "ruby -e '#{STDLIB}'", env: {}, args: ["-e", STDLIB]),
        Row.new(label: "ruby -I lib -e '#{RUSTY}'", env: { "RUSTY_STDLIB" => "all" },
                args: ["-I", LIB, "-e", RUSTY]),
        Row.new(label: "RUSTY_STDLIB=off ruby -I lib -e '#{RUSTY}'",
                env: { "RUSTY_STDLIB" => "off" }, args: ["-I", LIB, "-e", RUSTY])
      ]
    end

    # Best of `runs` wall times per command, in milliseconds. The commands take turns,
    # one run each per round, so a burst of load elsewhere hits them all alike; one
    # untimed round first brings the files into the page cache.
    def self.measure(runs)
      rows = commands
      times = Hash.new { |h, k| h[k] = [] }
      (runs + 1).times do |round|
        rows.each do |row|
          ms = wall_ms(row)
          times[row.label] << ms unless round.zero?
        end
      end
      rows.each { |row| row.best_ms = times[row.label].min }
    end

    def self.wall_ms(row)
      start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      pid = Process.spawn(row.env, RbConfig.ruby, *row.args, out: File::NULL, err: File::NULL)
      Process.wait(pid)
      raise "boot cost: `#{row.label}` failed (#{$?})" unless $?.success?

      (Process.clock_gettime(Process::CLOCK_MONOTONIC) - start) * 1000
    end
  end
end
