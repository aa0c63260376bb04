# frozen_string_literal: true

# `rake bench`: times every workload in bench/workloads/ in every column (stdlib and
# rusty_stdlib, with and without YJIT, plus references), then the boot cost, and
# prints and writes a Markdown report. See bench/README.md.
#
#   ruby bench/run.rb [--quick] [--out=DIR] [--list] [FILTER...]
#
# This process never loads rusty_stdlib: each cell runs in a fresh worker process
# (bench/harness/worker.rb), and this one only spawns, checks outputs and reports.
require_relative "harness/options"
require_relative "harness/registry"
require_relative "harness/runner"
require_relative "harness/boot_cost"
require_relative "harness/report"
require_relative "harness/chart"
require_relative "harness/results"

module Bench
  def self.main(argv)
    settings = begin
      Options.parse(argv)
    rescue ArgumentError => e
      abort "bench: #{e.message}"
    end
    workloads = Registry.workloads.select { |w| settings.selects?(w) }
    if settings.list
      Registry.workloads.each { |w| puts "#{w.group}\t#{w.name}" }
      return
    end
    if workloads.empty? && !settings.boot?
      abort "bench: nothing matches #{settings.filters.join(' ')} (try --list)"
    end

    started_at = Machine.now
    load_at_start = Machine.load_average
    results = Runner.new(settings).run(workloads)
    boot = settings.boot? ? BootCost.measure(settings.boot_runs) : nil
    load_average = [load_at_start, Machine.load_average]
    markdown = Report.new(results: results, settings: settings, boot: boot,
                          started_at: started_at, load_average: load_average).markdown
    puts markdown
    caption = "#{started_at.strftime('%Y-%m-%d %H:%M UTC')}, #{Machine.cpu} (#{Machine.cores} cores), " \
              "Ruby #{RUBY_VERSION}, rusty_stdlib @ #{Machine.revision}"
    paths = Results.new(settings, started_at).write(markdown, Chart.new(results, caption: caption).svg)
    warn "bench: wrote #{paths.join(', ')}"
    warn "bench: `rake bench:publish` copies this run into bench/results/ and docs/speed.md" if settings.full? && settings.out_dir.nil?
  end
end

Bench.main(ARGV) if $PROGRAM_NAME == __FILE__
