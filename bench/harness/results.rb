# frozen_string_literal: true

require "fileutils"

module Bench
  # Where a run's report goes. Every run writes to tmp/bench/ (ignored by git, so
  # benchmarking leaves a clone clean): a full run (every workload, full passes) as
  # latest.{md,svg} plus a copy named by its start time, a subset or quick run under
  # tmp/bench/partial/. --out=DIR sends either kind to DIR instead.
  #
  # Publishing is a separate, explicit step (`rake bench:publish`, Results.publish): it
  # copies the last full run into the tracked bench/results/ and docs/speed.md's block.
  class Results
    LOCAL = File.expand_path("../../tmp/bench", __dir__)
    PUBLISHED = File.expand_path("../results", __dir__)
    # The full report's place in the docs (the README's short table is written by hand
    # from a published run, naming it).
    DOCS = File.expand_path("../../docs/speed.md", __dir__)
    START = "<!-- results:start -->"
    FINISH = "<!-- results:end -->"
    # Holds the dated name of the run latest.md is, for publish.
    STEM_FILE = "latest.name"

    def initialize(settings, started_at)
      @settings = settings
      # The start time to the minute (UTC), so that two runs on one day keep both reports.
      @dated = "#{started_at.utc.strftime('%Y-%m-%d-%H%M')}-ruby#{RUBY_VERSION}"
    end

    def dir
      @settings.out_dir || (@settings.full? ? LOCAL : File.join(LOCAL, "partial"))
    end

    # Returns the paths written.
    def write(markdown, svg)
      files = { "latest.md" => markdown, "#{@dated}.md" => markdown,
                "latest.svg" => svg, "#{@dated}.svg" => svg, STEM_FILE => "#{@dated}\n" }
      files.map { |name, text| Results.put(File.join(dir, name), text) }
    end

    # Write and rename, so an interrupted run never leaves half a report behind.
    def self.put(path, text)
      FileUtils.mkdir_p(File.dirname(path))
      File.write("#{path}.tmp", text)
      File.rename("#{path}.tmp", path)
      path
    end

    # Copies the last full run in `from` (tmp/bench/) to bench/results/ (latest and dated)
    # and into docs/speed.md's block. Returns the paths written.
    def self.publish(from = LOCAL, to: PUBLISHED, readme: DOCS)
      stem_file = File.join(from, STEM_FILE)
      raise ArgumentError, "no full run in #{from} (run `rake bench` without filters first)" unless File.exist?(stem_file)

      stem = File.read(stem_file).strip
      markdown = File.read(File.join(from, "#{stem}.md"))
      svg = File.read(File.join(from, "#{stem}.svg"))
      paths = { "latest.md" => markdown, "#{stem}.md" => markdown, "latest.svg" => svg, "#{stem}.svg" => svg }
              .map { |name, text| put(File.join(to, name), text) }
      paths << update_readme(readme, markdown)
      paths.compact
    end

    # Replaces the block between the markers; the report's own title is dropped since
    # the page has its heading for it.
    def self.update_readme(readme, markdown)
      text = File.read(readme)
      return nil unless text.include?(START) && text.include?(FINISH)

      body = markdown.sub(/\A# .*\n\n/, "")
      # Block form: the tables contain backslashes, which a replacement string would eat.
      put(readme, text.sub(/#{START}.*#{FINISH}/m) { "#{START}\n#{body}#{FINISH}" })
    end
  end
end
