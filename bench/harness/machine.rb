# frozen_string_literal: true

require "etc"
require "time"

module Bench
  # The facts that make a results table comparable with another one.
  module Machine
    ROOT = File.expand_path("../..", __dir__)

    def self.cpu
      model = File.foreach("/proc/cpuinfo").grep(/\Amodel name/).first
      model ? model.split(":", 2).last.strip : RbConfig::CONFIG["host_cpu"]
    rescue SystemCallError
      RbConfig::CONFIG["host_cpu"]
    end

    def self.cores
      Etc.nprocessors
    end

    # The load when the run started: other work on the machine inflates every number.
    def self.load_average
      File.read("/proc/loadavg").split.first(3).join(" ")
    rescue SystemCallError
      "unknown"
    end

    # Which code was measured: the commit, and whether the tree had local changes.
    # RUSTY_BENCH_REVISION names it where git cannot (a chroot without git).
    def self.revision
      return ENV["RUSTY_BENCH_REVISION"] if ENV["RUSTY_BENCH_REVISION"].to_s.strip != ""

      sha = `git -C #{ROOT} rev-parse --short HEAD 2>/dev/null`.strip
      return "unknown" if sha.empty?

      changes = `git -C #{ROOT} status --porcelain -- ext lib 2>/dev/null`.strip
      changes.empty? ? sha : "#{sha} + local changes"
    end

    def self.now
      Time.now.utc
    end
  end
end
