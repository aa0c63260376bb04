# frozen_string_literal: true

module Bench
  # One benchmark: what to prepare, what to time, and how to check its output.
  #
  # `op` is Ruby source, not a block: the worker compiles it inline into a `while` loop,
  # so a 300 ns digest is not measured together with a 50 ns block call.
  Workload = Struct.new(:name, :group, :bytes, :setup, :op, :output, :references, :loops,
                        :ceiling, :round_trip, keyword_init: true) do
    # Ruby source of the reference column's operation (e.g. OpenSSL), or nil.
    def reference_op(label)
      references[label]
    end

    # Input bytes per op for this setup's input, or nil.
    def bytes_for(input)
      bytes.respond_to?(:call) ? bytes.call(input) : bytes
    end
  end

  # A stdlib module's workloads, declared in bench/workloads/<module>.rb.
  #
  #   module_name  the RustyStdlib module the rusty columns must have installed (:digest)
  #   requires     what every column loads before setup (the stdlib libraries timed)
  #   references   extra columns that are not stdlib: label => libraries they need
  #   source       where the inputs come from, for the report header
  Group = Struct.new(:module_name, :requires, :references, :source, :workloads,
                     keyword_init: true)

  # Collects the groups that the files in bench/workloads/ declare, plus those in the
  # folder named by BENCH_EXTRA_WORKLOADS (the harness spec's fixtures, or a workload
  # being tried out before it moves into bench/workloads/).
  module Registry
    WORKLOAD_DIR = File.expand_path("../workloads", __dir__)

    @groups = {}

    class << self
      def groups
        load_all
        @groups.values
      end

      def workloads
        groups.flat_map(&:workloads)
      end

      def find(name)
        workloads.find { |w| w.name == name } or raise ArgumentError, "no workload #{name}"
      end

      def group(module_name)
        load_all
        @groups.fetch(module_name.to_sym)
      end

      # Called by each workload file; the block runs in a GroupBuilder. Several files
      # may add to one module's group (net_http.rb and net_http_keepalive.rb): their
      # requires, references and sources are combined.
      def define(module_name, requires: [], references: {}, source:, &block)
        group = @groups[module_name.to_sym] ||=
          Group.new(module_name: module_name.to_sym, requires: [], references: {}, workloads: [])
        group.requires |= requires
        group.references = group.references.merge(references)
        group.source = [group.source, source].compact.uniq.join("; ")
        GroupBuilder.new(group).instance_eval(&block)
        group
      end

      private

      def load_all
        return if @loaded

        @loaded = true
        dirs = [WORKLOAD_DIR, ENV.fetch("BENCH_EXTRA_WORKLOADS", nil)].compact
        files = dirs.flat_map { |dir| Dir[File.join(File.expand_path(dir), "*.rb")].sort }
        files.each { |file| require file }
      end
    end
  end

  # The `workload` method available inside Bench.define blocks.
  class GroupBuilder
    def initialize(group)
      @group = group
    end

    # name:       unique, used by filters and shown in the table
    # bytes:      input bytes per op (gives MB/s): an Integer, a lambda given the setup's
    #             input (`->(input) { input.bytesize }`: evaluated in the worker, so a
    #             corpus file is read only by the processes that time it), or nil
    # setup:      lambda returning the `input` the op sees; runs once, untimed
    # op:         Ruby source using `input`; its value is the output checked across columns
    # output:     lambda turning the op's value into the bytes to checksum (default: a String
    #             as is); must not call the module under test, or it would check itself
    # references: reference label => Ruby source of the same operation in that library
    # loops:      ops per timed pass; nil lets the first column calibrate it
    # ceiling:    lambda returning a Bench::Ceiling (a per-byte figure from outside Ruby)
    # round_trip: true when each op waits on a server process (a request to nginx): its
    #             wall time includes the server's CPU time, so it is not starred as
    #             disturbed, and the rate table gives requests per second
    def workload(name, setup:, op:, bytes: nil, output: nil, references: {}, loops: nil,
                 ceiling: nil, round_trip: false)
      @group.workloads << Workload.new(
        name: name, group: @group.module_name, bytes: bytes, setup: setup, op: op,
        output: output, references: references, loops: loops, ceiling: ceiling,
        round_trip: round_trip
      )
    end
  end

  def self.define(module_name, **options, &block)
    Registry.define(module_name, **options, &block)
  end
end
