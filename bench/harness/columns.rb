# frozen_string_literal: true

module Bench
  # One way of running a workload, i.e. one column of the table; each runs in its own
  # process so that nothing (JIT state, loaded code, heap) carries over between columns.
  #
  #   rusty      true: `require "rusty_stdlib"` with every module on; false: the same
  #              require under RUSTY_STDLIB=off, so the stdlib is timed and the worker can
  #              prove nothing was swapped in
  #   reference  label of a group reference (e.g. "OpenSSL"): runs the workload's
  #              reference op instead of the stdlib one, under plain `ruby`
  Column = Struct.new(:id, :label, :ruby_flags, :rusty, :reference, keyword_init: true) do
    def yjit?
      ruby_flags.include?("--yjit")
    end

    def env
      # Set explicitly both ways so a RUSTY_STDLIB in the caller's shell cannot leak in.
      { "RUSTY_STDLIB" => rusty ? "all" : "off" }
    end
  end

  module Columns
    # The first one is the baseline: "vs MRI" ratios and the output checksum come from it.
    RUNTIMES = [
      Column.new(id: "mri", label: "ruby", ruby_flags: [], rusty: false),
      Column.new(id: "yjit", label: "ruby --yjit", ruby_flags: ["--yjit"], rusty: false),
      Column.new(id: "rusty", label: "ruby + rusty", ruby_flags: [], rusty: true),
      Column.new(id: "rusty-yjit", label: "ruby --yjit + rusty", ruby_flags: ["--yjit"],
                 rusty: true)
    ].freeze

    def self.baseline
      RUNTIMES.first
    end

    # The runtime columns plus the group's reference columns.
    def self.for(group)
      RUNTIMES + group.references.keys.map do |label|
        Column.new(id: "ref-#{label.downcase}", label: label, ruby_flags: [], rusty: false,
                   reference: label)
      end
    end

    def self.find(group, id)
      self.for(group).find { |c| c.id == id } or raise ArgumentError, "no column #{id}"
    end
  end
end
