# frozen_string_literal: true

require_relative "generator_helper"

# Large output: ours writes into the thread's reused buffer (kept up to 256 KiB, grown past
# it) and copies it into the result String at the end, as the gem does, unless the thread's
# last output had 16 KiB to 1 MiB: then it writes into a String of that size from the start,
# grows it when the text is longer and shrinks it to the text at the end (json/output.rs).
# These documents cross those points in every way a generation can: plainly, with an escape
# rewritten across 256 KiB, in a #to_json that generates a large document itself, failing
# after it, and in sizes that repeat, grow, shrink and jump after each other. Built here, so
# they run without the corpus.
RSpec.describe "RustyStdlib::JSON generating large output" do
  include Parity
  include JSONGenParity

  before { skip JSONGenParity.unproven_message unless JSONGenParity.proven? }

  # A #to_json that writes a large document of its own into the one being written.
  class LargeInner
    def initialize(doc)
      @doc = doc
    end

    def to_json(*)
      JSON.generate(@doc)
    end
  end

  # About `size` bytes of JSON: long strings (few objects, so GC.stress stays quick),
  # with escapes, non-ASCII text and numbers between them.
  def self.document(size, seed)
    rng = Random.new(seed)
    pieces = []
    total = 0
    while total < size
      text = Array.new(rng.rand(2_000..9_000)) { "abc é中\"\\/\n\u2028x"[rng.rand(14)] }.join
      pieces << { "text" => text, "n" => rng.rand(-10**12..10**12), "f" => rng.rand * 1e3, "ok" => rng.rand < 0.5 }
      total += text.bytesize + 60
    end
    pieces
  end

  LARGE = document(600_000, 1).freeze
  # Just under 256 KiB of output.
  SPARE_SIZED = ["é\n" * 63_000].freeze

  def self.script_safe?
    JSON::State.new.respond_to?(:script_safe)
  end

  # The generated String from the gem's generator and from ours, compared whole (and
  # reported by first difference, not by printing both).
  def expect_same_output(stress: Parity::GC_STRESS, &block)
    expected = JSONGenParity.with_generator(JSONGenParity::STDLIB, &block)
    actual = JSONGenParity.with_generator(JSONGenParity::OURS) do
      GC.stress = true if stress
      block.call
    ensure
      GC.stress = false
    end
    at = (0...[expected.bytesize, actual.bytesize].min).find { |i| expected.getbyte(i) != actual.getbyte(i) }
    expect([actual.bytesize, at]).to eq([expected.bytesize, nil])
    expect([actual.encoding, actual.frozen?, actual.valid_encoding?])
      .to eq([expected.encoding, expected.frozen?, expected.valid_encoding?])
    [expected, actual]
  end

  it "writes a document past 256 KiB as the gem does, in each layout" do
    forget_last_size
    expect_same_output { JSON.generate(LARGE) }
    expect_same_output { JSON.pretty_generate(LARGE) }
    expect_same_output { JSON.generate(LARGE, ascii_only: true) }
    expect_same_output { JSON.dump(LARGE) }
  end

  # Ours guesses a generation's size from the last one on the thread: a small one first
  # makes the next start small.
  def forget_last_size
    JSONGenParity.with_generator(JSONGenParity::OURS) { JSON.generate([]) }
  end

  it "writes one that crosses 256 KiB only near its end" do
    forget_last_size
    expect(JSONGenParity.with_generator(JSONGenParity::OURS) { JSON.generate(SPARE_SIZED) }.bytesize).to be_between(250_000, 262_144)
    forget_last_size
    expect_same_output { JSON.generate(SPARE_SIZED + [{ "tail" => "x" * 20_000 }]) }
  end

  it "writes documents of every size after each other, each guessing from the last" do
    sizes = [600_000, 5, 20_000, 17_000, 70_000, 60_000, 15_000, 2_000_000, 16_500, 300_000, 300_000, 900_000,
             1_500_000, 0, 40_000, 100]
    sizes.each_with_index do |size, i|
      doc = size.zero? ? [] : self.class.document(size, 10 + sizes.index(size))
      expect_same_output(stress: false) { JSON.generate(doc) }
    end
  end

  it "rewrites U+2028 past 256 KiB under script_safe" do
    skip "json #{JSON::VERSION} has no script_safe" unless self.class.script_safe?
    expect_same_output { JSON.generate(LARGE + ["\u2028" * 1_000], script_safe: true) }
  end

  it "writes a #to_json's own large document into a large one" do
    expect_same_output { JSON.generate([SPARE_SIZED, LargeInner.new(LARGE), SPARE_SIZED]) }
  end

  it "raises the gem's error when it fails past 256 KiB" do
    outcomes = [JSONGenParity::STDLIB, JSONGenParity::OURS].map do |generator|
      JSONGenParity.with_generator(generator) do
        JSON.generate(LARGE + [Float::NAN])
      rescue JSON::GeneratorError => e
        [e.class, e.message[0, 200]]
      end
    end
    expect(outcomes[1]).to eq(outcomes[0])
    expect(outcomes[0][0]).to eq(JSON::GeneratorError)
  end

  it "gives a String that holds about as much memory as the gem's" do
    require "objspace"
    expected, actual = expect_same_output(stress: false) { JSON.generate(LARGE) }
    # Ruby shrinks a String's buffer when more than 1 KiB of it is left over.
    expect(ObjectSpace.memsize_of(actual)).to be <= ObjectSpace.memsize_of(expected) + 1024
    # And one written into a String of the last one's size (kept: it is full).
    medium = self.class.document(40_000, 3)
    2.times { expected, actual = expect_same_output(stress: false) { JSON.generate(medium) } }
    expect(ObjectSpace.memsize_of(actual)).to be <= ObjectSpace.memsize_of(expected) + 1024
    # And a much shorter one after a larger one (the String made for it, shrunk).
    expect_same_output(stress: false) { JSON.generate(self.class.document(200_000, 4)) }
    expected, actual = expect_same_output(stress: false) { JSON.generate(medium) }
    expect(ObjectSpace.memsize_of(actual)).to be <= ObjectSpace.memsize_of(expected) + 1024
  end
end
