# frozen_string_literal: true

# JSON.parse fills new Hashes and Arrays directly and, where the object was allocated with
# nothing allocated since (an ar_table Hash on Ruby 3.3 and 3.4, an embedded Array), tells
# the GC nothing of the writes: a new object is young and unmarked. These parses run while
# an incremental mark is under way (GC.start with immediate_mark: false, over a heap large
# enough that marking spans many allocations), and GC.verify_internal_consistency after
# each one finds no marked object pointing to an unmarked one, and no old object to a
# young one unremembered (it aborts the process if it does). The results must equal the
# stdlib's, made the same way.
RSpec.describe "JSON.parse during an incremental GC mark" do
  script = <<~'RUBY'
    require "json"
    random = Random.new(20_261_207)
    doc = Array.new(20) do |i|
      { "id" => "n#{i}", "name" => "user #{random.rand(1000)}",
        "tags" => %w[a bb ccc].sample(2, random: random).map { |t| "#{t}#{i}" },
        "nested" => { "note" => "x" * (i % 7), "list" => Array.new(i % 20) { |j| "v#{j}" } },
        "wide" => (0..9).to_h { |k| ["k#{k}", "w#{i}-#{k}"] } }
    end
    text = JSON.generate(doc)
    $retained = Array.new(100_000) { |i| "r#{i}" } # marking then takes many steps
    parsed = []
    during_marks = 0
    10.times do
      GC.start(full_mark: true, immediate_mark: false, immediate_sweep: false)
      while GC.latest_gc_info(:state) == :marking
        during_marks += 1
        parsed << JSON.parse(text) << JSON.parse(text, symbolize_names: true)
        GC.verify_internal_consistency
      end
    end
    print Marshal.dump([during_marks.positive?, parsed.uniq.size, parsed.first(2)])
  RUBY

  it "leaves the heap consistent and gives the stdlib's results" do
    ((ours, ours_err), (stdlib, stdlib_err)) = run_with_and_without_ours do |with_ours|
      (with_ours ? %(require "rusty_stdlib"\n) : "") + script
    end
    expect([ours_err, stdlib_err]).to eq(["", ""])
    expect(ours).to eq(stdlib)
    expect(ours.first(2)).to eq([true, 2])
  end
end
