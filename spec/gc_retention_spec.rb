# frozen_string_literal: true

# Ruby's GC scans the machine stack conservatively, so a stale copy of a returned document
# in a dead stack slot keeps the whole document alive. The gem's C parser and MRI's
# Marshal.load return in a register; our methods return through Rust's result slots, which
# the next call did not overwrite until it ended (ext/rusty_stdlib/src/helpers/stack_scrub.rs).
# A child process parses a document, drops it, parses a tiny one under GC.stress and counts
# how many of the first document's objects are still alive, at several Ruby call depths
# (each adds C frames above ours, moving every slot). A control keeps the document in a
# local variable, so a count that cannot see retention fails the spec.
# The stdlib is not the reference: its results are kept the same way, by stale slots in
# Ruby's own frames, in some layouts (on Ruby 3.1 JSON::Parser#parse at depth 2 of a
# variant of this script; on Ruby 3.3 one tracked object in most rows of this one, where
# ours also keeps one in some rows, Marshal.load's among them). So this runs on 3.1 only,
# where the stdlib keeps nothing here and our JSON.parse kept its result before the fix.
RSpec.describe "objects a parse returned" do
  script = <<~'RUBY'
    require "rusty_stdlib"
    require "json"
    first = JSON.generate({ "list" => (1..10).map { |i| { "id" => i, "name" => "n#{i}", "tags" => ["x#{i}", "y"] } } })
    tiny = '{"a":[1,2,{"b":null}],"c":"d"}'
    dumped = { first => Marshal.dump(JSON.parse(first)), tiny => Marshal.dump(JSON.parse(tiny)) }
    WAYS = {
      "JSON.parse" => ->(s) { JSON.parse(s) },
      "JSON.parse with options" => ->(s) { JSON.parse(s, symbolize_names: false) },
      "JSON::Parser#parse" => ->(s) { JSON::Parser.new(s).parse },
      "JSON.load" => ->(s) { JSON.load(s) },
      "Marshal.load" => ->(s) { Marshal.load(dumped.fetch(s)) },
    }.freeze
    TRACKED = ObjectSpace::WeakMap.new

    # How many tracked objects of `first`'s document outlive parsing `tiny` right after it.
    def alive_after_next(parse, first, tiny, depth, keep)
      return [0].each { return alive_after_next(parse, first, tiny, depth - 1, keep) } unless depth.zero?

      GC.stress = true
      doc = parse.call(first)
      TRACKED[doc] = true
      TRACKED[doc["list"]] = true
      TRACKED[doc["list"][3]] = true
      doc = nil unless keep
      parse.call(tiny)
      # Off before counting: Ruby 3.1's WeakMap#keys can abort under GC.stress.
      GC.stress = false
      TRACKED.keys.size
    end

    counts = WAYS.to_h do |name, parse|
      [name, (0..3).map { |depth| alive_after_next(parse, first, tiny, depth, false) }]
    end
    control = alive_after_next(WAYS.fetch("JSON.parse"), first, tiny, 0, true)
    print Marshal.dump([counts, control])
  RUBY

  it "are freed by the GCs of the next parse" do
    skip "Ruby #{RUBY_VERSION}'s own frames keep results alive in this script" unless RUBY_VERSION.start_with?("3.1.")
    out, err, status = ruby_run(script)
    expect([err, status.success?]).to eq(["", true])
    counts, control = Marshal.load(out)
    expect(control).to eq(3)
    expect(counts).to eq(counts.transform_values { [0, 0, 0, 0] })
  end
end
