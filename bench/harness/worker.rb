# frozen_string_literal: true

# The child process behind one table cell: one workload in one column.
#
#   ruby [--yjit] -I lib bench/harness/worker.rb \
#        WORKLOAD COLUMN OUTPUT_FILE LOOPS WARMUP PASSES TARGET_MS
#
# It writes the op's output to OUTPUT_FILE, says "output" and waits for the parent to
# answer "time" (the checksum matched the baseline) or "skip". Results go to stdout as
# "key<TAB>value" lines. No JSON, Marshal or Digest here: those are modules under test,
# and loading them would change what a column measures.
require_relative "registry"
require_relative "columns"
require_relative "timing"

module Bench
  module Worker
    def self.run(argv, out: $stdout, commands: $stdin)
      name, column_id, output_path, *numbers = argv
      loops, warmup, passes, target_ms = numbers.map { |n| Integer(n) }
      workload = Registry.find(name)
      group = Registry.group(workload.group)
      column = Columns.find(group, column_id)
      say(out, "ruby", RUBY_DESCRIPTION)
      refusal = refusal(column, group)
      return say(out, "status", "skipped", refusal) if refusal

      libraries = group.requires + group.references.fetch(column.reference, [])
      libraries.each { |lib| require lib }
      say(out, "libraries", library_versions(libraries))
      # Asked again: a module that installs lazily (JSON, Net::HTTP) may have found, on
      # the require above, a version it does not prove, and stayed out.
      refusal = refusal(column, group)
      return say(out, "status", "skipped", refusal) if refusal
      op = column.reference ? workload.reference_op(column.reference) : workload.op
      timing = Timing.compile(op, name)
      input = workload.setup.call
      bytes = workload.bytes_for(input)
      say(out, "bytes", bytes) if bytes
      File.binwrite(output_path, output_bytes(workload, timing.once(input)))
      say(out, "output", output_path)
      return say(out, "status", "skipped", "parent said skip") unless commands.gets&.chomp == "time"

      result = timing.measure(input, loops: loops, warmup: warmup, passes: passes,
                                     target_ms: target_ms)
      say(out, "loops", result.loops)
      say(out, "allocs", result.allocs_per_op)
      say(out, "gc", result.gc_share) if result.gc_share
      say(out, "times", result.times_ns.join(" "))
      say(out, "cpu", result.cpu_ns.join(" "))
      say(out, "status", "ok")
    rescue LoadError => e
      # A reference library that is not installed here (nosj is built by hand): the
      # column cannot run, which is not the workload's fault.
      raise unless column.reference

      say(out, "status", "skipped", "#{column.reference} not loadable: #{e.message}")
    rescue StandardError, ScriptError => e
      say(out, "status", "error", "#{e.class}: #{e.message}")
    end

    # Where a library keeps its version when it was not loaded as a gem (nosj from a
    # checkout on RUBYLIB, say).
    VERSION_CONSTANTS = { "json" => "JSON::VERSION", "oj" => "Oj::VERSION", "nosj" => "NOSJ::VERSION" }.freeze

    # "json 3.1.0, oj 3.17.7": what this process timed, for the report header.
    def self.library_versions(libraries)
      libraries.map do |lib|
        version = Gem.loaded_specs[lib]&.version&.to_s
        constant = VERSION_CONSTANTS[lib]
        version ||= Object.const_get(constant) if constant && Object.const_defined?(constant)
        version ? "#{lib} #{version}" : lib
      end.join(", ")
    end

    # Why this process cannot stand for its column, or nil. A rusty column whose module
    # did not install would otherwise time the stdlib under our name, and the reverse.
    def self.refusal(column, group)
      if column.yjit? && !(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?)
        return "YJIT unavailable on this Ruby"
      end
      return nil if column.reference

      require "rusty_stdlib"
      # :pending (json, net_http before their require) counts: the second call, after
      # the require, sees whether it went in.
      state = RustyStdlib.status.fetch(group.module_name, "rusty_stdlib has no such module")
      ours = RustyStdlib.status.select { |_, s| s.is_a?(Symbol) }.keys
      if column.rusty && !%i[installed pending].include?(state)
        "#{group.module_name} not installed: #{state}"
      elsif column.rusty && state == :pending && group.requires.empty?
        "#{group.module_name} still pending: the workload requires nothing"
      elsif !column.rusty && !ours.empty?
        "RUSTY_STDLIB=off yet #{ours.join(', ')} installed or pending"
      end
    end

    def self.output_bytes(workload, value)
      bytes = workload.output ? workload.output.call(value) : value
      return bytes if bytes.is_a?(String)

      raise TypeError, "#{workload.name}: output is a #{bytes.class}; give the workload an " \
                       "`output:` that turns it into bytes"
    end

    def self.say(out, key, *values)
      out.puts([key, *values].join("\t").tr("\n", " "))
      out.flush
    end
  end
end

Bench::Worker.run(ARGV) if $PROGRAM_NAME == __FILE__
