# frozen_string_literal: true

require "digest"

RSpec.describe "Digest on large strings" do
  let(:big) { ("0123456789abcdef" * (1 << 20)).b } # 16 MiB

  # Hashes with `block` on the main thread, again and again, while a second thread keeps
  # writing to `string`, until one of those writes is refused because the string is locked
  # for hashing (or `patience` seconds pass). A refused write proves the other thread ran
  # *while* the hash ran without the GVL: with the GVL held throughout, no write could ever
  # meet the lock, however long we tried. Retrying instead of timing one hash keeps this
  # deterministic on machines where a hash can finish before the OS schedules the writer.
  # Returns every hash's result and how many writes were refused.
  def hash_while_poking(string, patience: 20)
    locked = 0
    started = false
    running = true
    poker = Thread.new do
      while running
        started = true
        begin
          string.setbyte(0, string.getbyte(0)) # a write that keeps the content
        rescue RuntimeError => e
          raise unless e.message.include?("temporarily locked")

          locked += 1
        end
        Thread.pass
      end
    end
    Thread.pass until started
    results = []
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + patience
    loop do
      results << yield
      break if locked.positive? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    end
    running = false
    poker.join
    [results, locked]
  end

  it "lets other threads run while hashing, and refuses writes to the string meanwhile" do
    expected = RustyStdlib::Digest.stdlib(:SHA512).hexdigest(big)
    hexes, locked = hash_while_poking(big) { Digest::SHA512.hexdigest(big) }
    expect(hexes.uniq).to eq([expected])
    expect(locked).to be > 0
    expect { big.setbyte(0, 48) }.not_to raise_error # unlocked afterwards
  end

  it "does the same for incremental updates and keeps the state right" do
    expected = RustyStdlib::Digest.stdlib(:SHA256).new.update("head").update(big).hexdigest
    hexes, locked = hash_while_poking(big) { Digest::SHA256.new.update("head").update(big).hexdigest }
    expect(hexes.uniq).to eq([expected])
    expect(locked).to be > 0
    expect { big.setbyte(0, 48) }.not_to raise_error
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
