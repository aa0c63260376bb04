# frozen_string_literal: true

require "digest"

RSpec.describe "Digest on large strings" do
  let(:big) { ("0123456789abcdef" * (1 << 20)).b } # 16 MiB

  # Runs `block` on the main thread while a second thread keeps poking `big`; returns
  # how often the second thread ran, and how many of its writes were refused.
  def with_poker(string)
    stats = { runs: 0, locked: 0 }
    running = true
    poker = Thread.new do
      while running
        stats[:runs] += 1
        begin
          string.setbyte(0, string.getbyte(0)) # a write that keeps the content
        rescue RuntimeError => e
          raise unless e.message.include?("temporarily locked")

          stats[:locked] += 1
        end
        Thread.pass
      end
    end
    Thread.pass until stats[:runs].positive?
    before = stats.dup
    result = yield
    after = stats.dup
    running = false
    poker.join
    [result, after[:runs] - before[:runs], after[:locked] - before[:locked]]
  end

  it "lets other threads run while hashing, and refuses writes to the string meanwhile" do
    expected = RustyStdlib::Digest.stdlib(:SHA512).hexdigest(big)
    hex, runs, locked = with_poker(big) { Digest::SHA512.hexdigest(big) }
    expect(hex).to eq(expected)
    expect(runs).to be > 0
    expect(locked).to be > 0
    expect { big.setbyte(0, 48) }.not_to raise_error # unlocked afterwards
  end

  it "does the same for incremental updates and keeps the state right" do
    expected = RustyStdlib::Digest.stdlib(:SHA256).new.update("head").update(big).hexdigest
    hex, runs, = with_poker(big) { Digest::SHA256.new.update("head").update(big).hexdigest }
    expect(hex).to eq(expected)
    expect(runs).to be > 0
  end

  it "hashes a string another thread has locked without failing" do
    locked = big.dup
    Digest::SHA256.new.update(locked) # warm up
    # Lock it the way another hashing thread would, then hash it here.
    holder = Thread.new { Digest::SHA1.hexdigest(locked) }
    expect(Digest::SHA256.hexdigest(locked)).to eq(RustyStdlib::Digest.stdlib(:SHA256).hexdigest(locked))
    holder.join
  end
end
