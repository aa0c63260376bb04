# frozen_string_literal: true

require "open3"
require "rbconfig"
require "tmpdir"

# Runs `bench/run.rb --quick` on one Digest workload and the harness fixtures, and checks
# the report's shape: header, tables, refusals and notes. No timing assertions: the
# numbers belong to `rake bench`, not to specs.
RSpec.describe "rake bench harness" do
  root = File.expand_path("../..", __dir__)
  # Debian's Ruby 3.3 has no YJIT: its --yjit columns are reported as skipped instead.
  yjit = defined?(RubyVM::YJIT) ? true : false
  timed = /\A[\d,.]+\*? \(\d+\.\d\dx\)\z/

  before(:all) do
    @out = Dir.mktmpdir("bench-spec")
    env = { "BENCH_EXTRA_WORKLOADS" => File.join(__dir__, "fixtures", "workloads"),
            "RUBYOPT" => "-w" } # the workers inherit it: warnings would show on stderr
    cmd = [RbConfig.ruby, File.join(root, "bench", "run.rb"), "--quick", "--out=#{@out}",
           "digest-md5-64B", "harness_fixture"]
    @stdout, @stderr, @status = Open3.capture3(env, *cmd)
    @report = File.exist?(File.join(@out, "latest.md")) ? File.read(File.join(@out, "latest.md")) : ""
  end

  after(:all) { FileUtils.remove_entry(@out) }

  # The cells of the Markdown table row for `workload`.
  def row(workload)
    line = @report.lines.find { |l| l.start_with?("| #{workload} |") }
    expect(line).not_to be_nil, "no row for #{workload} in:\n#{@report}"
    line.strip.delete_prefix("|").delete_suffix("|").split(" | ").map(&:strip).drop(1)
  end

  it "exits cleanly, without warnings, and prints what it writes" do
    expect(@status).to be_success, @stderr
    expect(@stderr).not_to include("warning:")
    expect(@stdout).to eq(@report)
  end

  it "heads the report with machine, Ruby, date, inputs and method" do
    %w[Machine Ruby Date Inputs Method].each do |field|
      expect(@report).to match(/^- #{field}: \S/)
    end
    expect(@report).to include("JSON corpus: ")
    expect(@report).to include("QUICK")
  end

  it "times a Digest workload in every column, with a ratio against ruby" do
    expect(@report).to include("| workload | ruby | ruby --yjit | ruby + rusty | ruby --yjit + rusty | OpenSSL |")
    cells = row("digest-md5-64B")
    expect(cells.size).to eq(5)
    expect(cells.values_at(0, 2, 4)).to all(match(timed))
    expect(cells.values_at(1, 3)).to all(yjit ? match(timed) : start_with("**skipped**"))
    expect(cells.first).to end_with("(1.00x)")
  end

  it "reports a column whose module is not installed instead of timing the stdlib" do
    cells = row("fixture-upcase")
    expect(cells[2]).to start_with("**skipped**")
    expect(cells[3]).to start_with("**skipped**")
    expect(@report).to match(/fixture-upcase, ruby \+ rusty: skipped: harness_fixture not installed/)
  end

  it "reports an output that differs from ruby's as a mismatch, untimed" do
    skip "needs a Ruby with YJIT (the fixture differs under YJIT only)" unless yjit
    cells = row("fixture-mismatch")
    expect(cells[0]).to match(/\(1\.00x\)/)
    expect(cells[1]).to start_with("**mismatch**")
    expect(@report).to match(
      /fixture-mismatch, ruby --yjit: mismatch: output SHA-256 \h{64} != \h{64} \(the `ruby` column\)/
    )
  end

  it "merges a group defined by several files and rates round trips in requests per second" do
    expect(@report).to include("harness_fixture: constants; more constants")
    time_row, rate_row = @report.lines.select { |l| l.start_with?("| fixture-round-trip |") }
    expect(time_row).to match(/\| fixture-round-trip \| [\d,.]+ \(1\.00x\) \|/)
    expect(rate_row).to match(%r{\| fixture-round-trip \| [\d,]+ req/s, [\d.]+ obj(, GC \d+%)? \|})
  end

  it "gives the share of a cell's wall time that Ruby's GC took" do
    skip "GC.stat has no :time before Ruby 3.1" unless GC.stat.key?(:time)
    rate_cell = lambda do |workload|
      line = @report.lines.select { |l| l.start_with?("| #{workload} |") }.last
      line.split(" | ")[1]
    end
    expect(rate_cell["fixture-no-gc"]).to eq("0.0 obj, GC 0%")
    share = rate_cell["fixture-gc"][/, GC (\d+)%\z/, 1]
    expect(share).not_to be_nil, "no GC share in #{rate_cell['fixture-gc'].inspect}"
    expect(Integer(share)).to be >= 50 # every op is a GC.start
  end

  it "writes a dated copy and an SVG chart" do
    files = Dir.children(@out)
    expect(files).to include("latest.md", "latest.svg")
    expect(files.grep(/\A\d{4}-\d\d-\d\d-\d{4}-ruby#{Regexp.escape(RUBY_VERSION)}\.md\z/)).not_to be_empty
    svg = File.read(File.join(@out, "latest.svg"))
    expect(svg).to start_with("<svg")
    # The picture names its run and its scale.
    expect(svg).to include("log scale", "Ruby #{RUBY_VERSION}", "rusty_stdlib @ ")
  end

  it "keeps the reports of two runs made on the same day" do
    require File.join(root, "bench", "harness", "results")
    Dir.mktmpdir("bench-results") do |dir|
      settings = Struct.new(:out_dir, :full?).new(dir, false)
      [Time.utc(2026, 12, 2, 7, 28), Time.utc(2026, 12, 2, 9, 5)].each_with_index do |time, i|
        Bench::Results.new(settings, time).write("# run #{i}\n", "<svg/>")
      end
      name = "2026-12-02-%s-ruby#{RUBY_VERSION}.md"
      expect(File.read(File.join(dir, format(name, "0728")))).to eq("# run 0\n")
      expect(File.read(File.join(dir, format(name, "0905")))).to eq("# run 1\n")
      expect(File.read(File.join(dir, "latest.md"))).to eq("# run 1\n")
    end
  end

  it "publishes only on request: the last full run into results/ and the docs block" do
    require File.join(root, "bench", "harness", "results")
    Dir.mktmpdir("bench-publish") do |dir|
      local = File.join(dir, "local")
      settings = Struct.new(:out_dir, :full?).new(local, true)
      Bench::Results.new(settings, Time.utc(2026, 12, 4, 22, 10)).write("# report\n\n## json\n| a |\n", "<svg/>")
      readme = File.join(dir, "README.md")
      File.write(readme, "intro\n<!-- results:start -->\nold\n<!-- results:end -->\nend\n")
      published = File.join(dir, "results")
      paths = Bench::Results.publish(local, to: published, readme: readme)
      stem = "2026-12-04-2210-ruby#{RUBY_VERSION}"
      expect(Dir.children(published).sort).to eq(["#{stem}.md", "#{stem}.svg", "latest.md", "latest.svg"])
      expect(paths).to include(readme)
      expect(File.read(readme)).to eq("intro\n<!-- results:start -->\n## json\n| a |\n<!-- results:end -->\nend\n")
      expect { Bench::Results.publish(File.join(dir, "none"), to: published, readme: readme) }
        .to raise_error(ArgumentError, /no full run/)
    end
  end

  it "leaves tracked files alone: a run's default place is the ignored tmp/bench/" do
    require File.join(root, "bench", "harness", "results")
    settings = Struct.new(:out_dir, :full?).new(nil, true)
    dir = Bench::Results.new(settings, Time.now).dir
    expect(dir).to eq(File.join(root, "tmp", "bench"))
    if system("git", "-C", root, "rev-parse", out: File::NULL, err: File::NULL)
      expect(system("git", "-C", root, "check-ignore", "-q", File.join(dir, "latest.md"))).to be(true)
    else # a chroot leg has no git
      expect(File.readlines(File.join(root, ".gitignore"), chomp: true)).to include("/tmp/")
    end
  end
end
