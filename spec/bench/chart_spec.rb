# frozen_string_literal: true

require_relative "../../bench/harness/runner"
require_relative "../../bench/harness/chart"

RSpec.describe "rake bench's chart" do
  timed = ->(ns) { Bench::Cell.new(status: :ok, times_ns: [ns], loops: 1, cpu_ns: [ns]) }
  skipped = Bench::Cell.new(status: :skipped, message: "this Ruby has no YJIT")
  columns = Bench::Columns::RUNTIMES
  workload = Struct.new(:name)

  it "leaves out a column that has no ratio in any workload" do
    results = %w[one two].map do |name|
      Bench::WorkloadResult.new(workload: workload.new(name), columns: columns,
                                cells: { "mri" => timed[200], "yjit" => skipped, "rusty" => timed[100],
                                         "rusty-yjit" => skipped })
    end
    svg = Bench::Chart.new(results).svg
    expect(svg).to include(">ruby + rusty<", "2.00x")
    expect(svg).not_to include("ruby --yjit", "n/a")
  end
end
