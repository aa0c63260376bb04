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
  # its output checksum is the one the others must match before they are timed.
  #
  # With several rounds, every workload runs once per round and a cell keeps its best
  # round: a build hogging the shared cores for a minute then spoils one round of a
  # cell, not its number. A refusal or mismatch in any round is what the cell reports.
  class Runner
    def initialize(settings, log: $stderr)
      @settings = settings
      @log = log
    end

    def run(workloads)
      rounds = Array.new(@settings.rounds) do |round|
        workloads.map { |workload| run_workload(workload, round) }
      end
      rounds.transpose.map { |per_round| merge(per_round) }
    end

    private

    def run_workload(workload, round)
      columns = Columns.for(Registry.group(workload.group))
      @log.print "[round #{round + 1}/#{@settings.rounds}] #{workload.name}:"
      cells = {}
      expected = nil
      columns.each do |column|
        cells[column.id] = cell_for(workload, column, expected)
        expected = cells[column.id].checksum if column == Columns.baseline && cells[column.id].ok?
      end
      @log.puts
      WorkloadResult.new(workload: workload, columns: columns, cells: cells, checksum: expected)
    end

    def cell_for(workload, column, expected)
      return Cell.new(status: :na) if column.reference && !workload.reference_op(column.reference)
      # Ruby 3.3 as Debian builds it has no YJIT: `--yjit` would only warn and run the
      # interpreter, so the column is refused here rather than spawned.
      if column.yjit? && !defined?(RubyVM::YJIT)
        return Cell.new(status: :skipped, message: "this Ruby has no YJIT")
      end
      if expected.nil? && column != Columns.baseline
        return Cell.new(status: :skipped, message: "the `ruby` column failed: nothing to check against")
      end

      # Each process calibrates its own loop count (unless the workload fixes one), so
      # a fast column's passes are as long, and as measurable, as a slow one's.
      loops = workload.loops || 0
      cell = Child.run(workload, column, loops: loops, settings: @settings) do |checksum|
        expected.nil? || checksum == expected
      end
      @log.print " #{column.label} #{cell.ok? ? "#{cell.ns_per_op.round} ns" : cell.status};"
      cell
    end

    def merge(per_round)
      first = per_round.first
      cells = first.columns.to_h do |column|
        candidates = per_round.map { |r| r.cells[column.id] }
        worst = candidates.find { |c| !c.ok? }
        [column.id, worst || candidates.min_by(&:ns_per_op)]
      end
      checksum = per_round.map(&:checksum).compact.first
      WorkloadResult.new(workload: first.workload, columns: first.columns, cells: cells,
                         checksum: checksum, ceiling: first.workload.ceiling&.call)
    end
  end
end
