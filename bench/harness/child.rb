# frozen_string_literal: true

require "digest"
require "rbconfig"
require "tmpdir"

module Bench
  # How much longer than its CPU time the best pass of a cell may take (a fraction)
  # before the cell counts as disturbed by other work on the machine.
  DISTURBED_MARGIN = 0.10

  # What one worker process reported: one cell of the table.
  #
  #   status  :ok, :mismatch (output differs from the baseline's), :skipped (the column
  #           cannot run here, e.g. module not installed), :error, or :na (no such op)
  #   gc_share  the part of the wall time Ruby's GC took (untimed passes), or nil
  Cell = Struct.new(:status, :message, :loops, :times_ns, :cpu_ns, :allocs_per_op, :gc_share,
                    :bytes, :checksum, :ruby_description, :libraries, keyword_init: true) do
    def ok?
      status == :ok
    end

    # Best pass, per op: the pass least disturbed by the machine's other work.
    def ns_per_op
      ok? ? times_ns.min.to_f / loops : nil
    end

    # Per input byte, when the workload has a byte size.
    def ns_per_byte
      ok? && bytes ? ns_per_op / bytes : nil
    end

    # Whether even the best pass spent a good part of its wall time off-CPU: its number
    # is then an upper bound, not the code's speed.
    def disturbed?
      return false unless ok?

      best = times_ns.index(times_ns.min)
      times_ns[best] > cpu_ns[best] * (1 + DISTURBED_MARGIN)
    end
  end

  # Spawns the worker for one (workload, column) and speaks its line protocol.
  module Child
    ROOT = File.expand_path("../..", __dir__)
    WORKER = File.join(__dir__, "worker.rb")

    # Yields the SHA-256 of the worker's output once it is written; the block answers
    # whether that is acceptable (then the worker times, else it stops untimed). The
    # checksum is taken here, in the parent, which never loads rusty_stdlib: the code
    # under test does not get to vouch for itself.
    def self.run(workload, column, loops:, settings:, &accept)
      Dir.mktmpdir("rusty-bench") do |dir|
        output = File.join(dir, "output")
        cmd = [RbConfig.ruby, *column.ruby_flags, "-I", File.join(ROOT, "lib"), WORKER,
               workload.name, column.id, output, loops, settings.warmup, settings.passes,
               settings.target_ms].map(&:to_s)
        errors = File.join(dir, "stderr")
        lines, checksum, accepted = converse(column.env, cmd, errors, output, accept)
        process = $?
        stderr = File.read(errors)
        # Warnings and the like would otherwise vanish with the temporary folder.
        stderr.each_line { |line| warn "[#{workload.name} / #{column.label}] #{line}" }
        cell(lines, checksum, accepted, process, stderr)
      end
    end

    def self.converse(env, cmd, errors, output, accept)
      lines = {}
      checksum = accepted = nil
      IO.popen(env, cmd, "r+", err: [errors, "w"]) do |io|
        io.each_line do |line|
          key, value = line.chomp.split("\t", 2)
          lines[key] = value
          next unless key == "output"

          checksum = ::Digest::SHA256.file(output).hexdigest
          accepted = accept.call(checksum)
          begin
            io.puts(accepted ? "time" : "skip")
            io.flush
          rescue Errno::EPIPE # the worker died after writing; its status says how
            nil
          end
        end
      end
      [lines, checksum, accepted]
    end

    def self.cell(lines, checksum, accepted, process, stderr)
      status, message = lines.fetch("status", "").split("\t", 2)
      common = { ruby_description: lines["ruby"], libraries: lines["libraries"], checksum: checksum }
      if status.nil? || status.empty?
        detail = stderr.lines.first&.strip || "no output"
        return Cell.new(status: :error, message: "worker died (#{process}): #{detail}", **common)
      end
      return Cell.new(status: :mismatch, **common) if accepted == false
      return Cell.new(status: status.to_sym, message: message, **common) unless status == "ok"

      Cell.new(status: :ok, loops: Integer(lines["loops"]), allocs_per_op: Float(lines["allocs"]),
               gc_share: lines["gc"] && Float(lines["gc"]),
               times_ns: integers(lines["times"]), cpu_ns: integers(lines["cpu"]),
               bytes: lines["bytes"] && Integer(lines["bytes"]), **common)
    end

    def self.integers(text)
      text.split.map { |t| Integer(t) }
    end
  end
end
