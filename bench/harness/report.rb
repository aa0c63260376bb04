# frozen_string_literal: true

require_relative "child"
require_relative "format"
require_relative "machine"
require_relative "timing"
require_relative "corpus"

module Bench
  # Renders a run as Markdown: a header saying where the numbers come from, per group a
  # time table and a throughput/allocation table, per-byte ceilings, boot cost, notes.
  class Report
    DISTURBED_NOTE = "\\* even the best pass took over #{(DISTURBED_MARGIN * 100).round}% longer " \
                     "than its CPU time (the machine was busy): an upper bound, not the " \
                     "code's speed."
    ROUND_TRIP_NOTE = "Round trips (req/s) wait on a server process on the same cores, so " \
                      "their wall time includes the server's work and is never starred."

    # load_average: [at start, at end] of the run, as /proc/loadavg gives them.
    def initialize(results:, settings:, boot:, started_at:, load_average:)
      @results = results
      @settings = settings
      @boot = boot
      @started_at = started_at
      @load_average = load_average
      @notes = []
    end

    def markdown
      @notes = []
      sections = [header]
      @results.group_by { |r| r.workload.group }.each do |group, results|
        sections << group_section(group, results)
        sections.concat(results.filter_map { |r| ceiling_section(r) })
      end
      sections << boot_section if @boot
      sections << notes_section unless @notes.empty?
      "#{sections.join("\n\n")}\n"
    end

    private

    def header
      lines = ["# rusty_stdlib benchmarks", "",
               "- Machine: #{Machine.cpu}, #{Machine.cores} cores",
               "- Load average (1/5/15 min): #{@load_average.first} at start, " \
               "#{@load_average.last} at end",
               "- Ruby: #{ruby_line}",
               ("- Libraries timed: #{libraries_line}" unless libraries_line.empty?),
               "- Date: #{@started_at.strftime('%Y-%m-%d %H:%M UTC')}",
               "- rusty_stdlib: #{RustyStdlibVersion.current} @ #{Machine.revision}",
               "- Inputs: #{inputs}",
               "- Method: #{method_line}"]
      lines << "- Subset: #{@settings.filters.join(' ')}" unless @settings.filters.empty?
      lines.compact.join("\n")
    end

    # As each worker reported it: the --yjit columns say "+YJIT" when it really was on.
    def ruby_line
      descriptions = @results.flat_map { |r| r.cells.values.map(&:ruby_description) }.compact.uniq
      descriptions = [RUBY_DESCRIPTION] if descriptions.empty?
      descriptions.map { |d| "`#{d}`" }.join(", ")
    end

    # Every library version the workers loaded (json 3.1.0, Oj 3.17.7, ...), once each.
    def libraries_line
      @results.flat_map { |r| r.cells.values.map(&:libraries) }.compact
              .flat_map { |line| line.split(", ") }.reject(&:empty?).uniq.join(", ")
    end

    def inputs
      groups = @results.map { |r| Registry.group(r.workload.group) }.uniq
      sources = groups.map { |g| "#{g.module_name}: #{g.source}" }
      json_corpus = "JSON corpus: #{Corpus.json.description}"
      sources << json_corpus unless sources.any? { |s| s.include?(json_corpus) }
      sources.join("; ")
    end

    def method_line
      mode = @settings.quick ? "QUICK smoke-test mode, not for comparison: " : ""
      rounds = @settings.rounds == 1 ? "1 round" : "#{@settings.rounds} rounds"
      "#{mode}one fresh process per cell and round (#{rounds}); outputs " \
        "SHA-256-checked against `ruby` before timing; #{@settings.warmup} warm-up + " \
        "#{@settings.passes} timed passes of a fixed loop (calibrated per process to " \
        "~#{@settings.target_ms} ms); best pass of all rounds reported"
    end

    def group_section(group, results)
      columns = results.first.columns
      head = ["workload", *columns.map(&:label)]
      times = results.map { |r| [r.workload.name, *columns.map { |c| time_cell(r, c) }] }
      rates = results.map { |r| [r.workload.name, *columns.map { |c| rate_cell(r, c) }] }
      ["## #{group}",
       "Best pass in ns per op (lower is better), and in brackets speed vs `ruby` " \
       "(stdlib, no JIT; 2.00x = twice as fast).",
       table(head, times),
       (DISTURBED_NOTE if results.any? { |r| !r.workload.round_trip && r.cells.values.any?(&:disturbed?) }),
       (ROUND_TRIP_NOTE if results.any? { |r| r.workload.round_trip }),
       "Input MB/s (10^6 bytes per second) or requests per second, Ruby objects allocated per op, " \
       "and the share of wall time spent in Ruby's GC (`GC.stat(:time)` over #{Timing::GC_PASSES} " \
       "untimed passes).",
       table(head, rates)].compact.join("\n\n")
    end

    def time_cell(result, column)
      cell = result.cells[column.id]
      return status_cell(result, column, cell) unless cell.ok?

      star = cell.disturbed? && !result.workload.round_trip ? "*" : ""
      "#{Format.ns(cell.ns_per_op)}#{star} (#{Format.ratio(result.vs_mri(cell))})"
    end

    def rate_cell(result, column)
      cell = result.cells[column.id]
      return "—" unless cell.ok?

      rate = cell.ns_per_byte ? "#{Format.mb_per_s(1000.0 / cell.ns_per_byte)} MB/s, " : ""
      rate = "#{Format.thousands((1e9 / cell.ns_per_op).round)} req/s, " if result.workload.round_trip
      gc = cell.gc_share ? ", GC #{(cell.gc_share * 100).round}%" : ""
      "#{rate}#{Format.allocs(cell.allocs_per_op)} obj#{gc}"
    end

    # Anything but a timing, with the reason kept for the notes below the tables.
    def status_cell(result, column, cell)
      return "—" if cell.status == :na

      detail = if cell.status == :mismatch
                 "output SHA-256 #{cell.checksum} != #{result.checksum} (the `ruby` column)"
               else
                 cell.message
               end
      @notes << "#{result.workload.name}, #{column.label}: #{cell.status}: #{detail}"
      "**#{cell.status}** [#{@notes.size}]"
    end

    def ceiling_section(result)
      ceiling = result.ceiling or return nil
      rows = [[ceiling.label, ceiling.note || per_byte(ceiling.ns_per_byte)]]
      result.columns.each do |column|
        cell = result.cells[column.id]
        rows << [column.label, per_byte(cell.ns_per_byte)]
      end
      ["### Per-byte time, #{result.workload.name}",
       "The C library alone (no Ruby in the way) against each column.",
       table(["source", "ns per input byte (MB/s)"], rows)].join("\n\n")
    end

    def per_byte(ns)
      ns ? "#{format('%.3f', ns)} (#{Format.mb_per_s(1000.0 / ns)} MB/s)" : "—"
    end

    def boot_section
      floor = @boot.first.best_ms
      rows = @boot.map do |row|
        [row.label, format("%.1f", row.best_ms), format("%+.1f", row.best_ms - floor)]
      end
      ["## Boot cost",
       "Whole-process wall time, best of #{@settings.boot_runs}; `-I lib` because the gem " \
       "is run from the checkout.",
       table(["command", "ms", "vs `ruby -e ''` (ms)"], rows)].join("\n\n")
    end

    def notes_section
      (["## Notes", ""] + @notes.each_with_index.map { |n, i| "#{i + 1}. #{n}" }).join("\n")
    end

    def table(head, rows)
      align = ["---", *Array.new(head.size - 1, "---:")]
      [head, align, *rows].map { |cells| "| #{cells.map { |c| escape(c) }.join(' | ')} |" }
                          .join("\n")
    end

    def escape(cell)
      cell.to_s.gsub("|", "\\|")
    end
  end

  # rusty_stdlib's version without loading the gem (the parent must stay stdlib-only).
  module RustyStdlibVersion
    FILE = File.expand_path("../../lib/rusty_stdlib/version.rb", __dir__)

    def self.current
      File.read(FILE)[/VERSION = "([^"]+)"/, 1] || "unknown"
    end
  end
end
