# frozen_string_literal: true

# Every module with objects moving under it: a compacting GC on, GC.verify_compaction_references
# (which moves every object it can) between operations, and GC.compact from inside the
# callbacks the modules make into Ruby (to_json, marshal_dump, _load, a Hash default).
require_relative "../support"

# Compacts from inside a generate, a dump and a load.
class Mover
  attr_reader :n

  def initialize(n)
    @n = n
  end

  def to_json(*args)
    GC.compact
    { "mover" => @n }.to_json(*args)
  end

  def marshal_dump
    GC.compact
    [@n, "moved" * 3]
  end

  def marshal_load(data)
    GC.compact
    @n = data.first
  end

  def ==(other)
    other.is_a?(Mover) && other.n == n
  end
end

GC.auto_compact = true
verify = RUBY_VERSION >= "3.2" ? { expand_heap: true, toward: :empty } : { double_heap: true, toward: :empty }
doc = Soak.document(Soak.scale(400, 60))
text = JSON.generate(doc)
rounds = Soak.scale(40, 6)
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
rounds.times do |i|
  GC.verify_compaction_references(**verify) if i % 3 == 0
  Soak.result("every_module #{i}", Soak.every_module(doc, text))
  movers = Array.new(5) { |k| Mover.new(i * 10 + k) }
  Soak.result("generate with callbacks #{i}", JSON.generate([doc.first, movers, { "m" => movers.last }]))
  loaded = Marshal.load(Marshal.dump([movers, doc.first(3), movers]))
  Soak.result("marshal hooks #{i}", [loaded[0].map(&:n), loaded[1], loaded[0].equal?(loaded[2])])
  GC.compact
  Soak.result("parse after compact #{i}", JSON.parse(text, symbolize_names: true).last)
end
Soak.figure("compaction rounds", rounds)
Soak.figure("compaction seconds", (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).round(1))
