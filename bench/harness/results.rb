# frozen_string_literal: true

require "fileutils"

module Bench
  # Where a run's report goes. A full run (every workload, full passes) writes
  # bench/results/latest.{md,svg}, a copy named by its start time, and the README's
  # results block; a subset or quick run writes only to bench/results/partial/ (ignored
  # by git), so latest.md is always one complete, comparable run. --out=DIR sends either
  # kind to DIR instead.
  class Results
    RESULTS = File.expand_path("../results", __dir__)
    README = File.expand_path("../../README.md", __dir__)
    START = "<!-- results:start -->"
    FINISH = "<!-- results:end -->"

    def initialize(settings, started_at)
      @settings = settings
      # The start time to the minute (UTC), so that two runs on one day keep both reports.
      @dated = "#{started_at.utc.strftime('%Y-%m-%d-%H%M')}-ruby#{RUBY_VERSION}"
    end

    def dir
      @settings.out_dir || (@settings.full? ? RESULTS : File.join(RESULTS, "partial"))
    end

    # Returns the paths written.
    def write(markdown, svg)
      FileUtils.mkdir_p(dir)
      paths = { "latest.md" => markdown, "#{@dated}.md" => markdown,
                "latest.svg" => svg, "#{@dated}.svg" => svg }.map do |name, text|
        path = File.join(dir, name)
        # Write and rename, so an interrupted run never leaves half a report behind.
        File.write("#{path}.tmp", text)
        File.rename("#{path}.tmp", path)
        path
      end
      paths << update_readme(markdown) if @settings.full? && @settings.out_dir.nil?
      paths.compact
    end

    private

    # Replaces the block between the markers; the report's own title is dropped since
    # the README has its heading for it.
    def update_readme(markdown)
      text = File.read(README)
      return nil unless text.include?(START) && text.include?(FINISH)

      body = markdown.sub(/\A# .*\n\n/, "").gsub(/^## /, "### ")
      # Block form: the tables contain backslashes, which a replacement string would eat.
      File.write(README, text.sub(/#{START}.*#{FINISH}/m) { "#{START}\n#{body}#{FINISH}" })
      README
    end
  end
end
