# frozen_string_literal: true

require_relative "child"
require_relative "columns"

module Bench
  # A workload's cells, column id => Cell, plus what is shared across its columns.
  WorkloadResult = Struct.new(:workload, :columns, :cells, :checksum, :ceiling,
                              keyword_init: true) do
    def baseline
      cells[Columns.baseline.id]
    end

    # How many times faster than the plain `ruby` stdlib column (> 1 is faster).
    def vs_mri(cell)
      return nil unless cell&.ok? && baseline&.ok?

      baseline.ns_per_op / cell.ns_per_op
    end
  end

  # Runs every column of each workload, one fresh process at a time, the baseline first:
  # its output checksum is the one the others must match before they are timed, and its
  # calibrated loop count is the one they all use.
  class Runner
    def initialize(settings, log: $stderr)
      @settings = settings
      @log = log
    end

    def run(workloads)
      workloads.map { |workload| run_workload(workload) }
    end

    private

    def run_workload(workload)
      columns = Columns.for(Registry.group(workload.group))
      @log.print "#{workload.name}:"
      cells = {}
      expected = nil
      loops = workload.loops || 0 # 0: the baseline calibrates
      columns.each do |column|
        cells[column.id] = cell_for(workload, column, expected, loops)
        next unless column == Columns.baseline

        expected = cells[column.id].checksum if cells[column.id].ok?
        loops = cells[column.id].loops if cells[column.id].ok?
      end
      @log.puts
      WorkloadResult.new(workload: workload, columns: columns, cells: cells, checksum: expected,
                         ceiling: workload.ceiling&.call)
    end

    def cell_for(workload, column, expected, loops)
      if column.reference && !workload.reference_op(column.reference)
        return Cell.new(status: :na)
      end
      if expected.nil? && column != Columns.baseline
        return Cell.new(status: :skipped, message: "baseline column failed")
      end

      cell = Child.run(workload, column, loops: loops, settings: @settings) do |checksum|
        expected.nil? || checksum == expected
      end
      @log.print " #{column.label} #{summary(cell)};"
      cell
    end

    def summary(cell)
      cell.ok? ? "#{cell.ns_per_op.round} ns" : cell.status.to_s
    end
  end
end
