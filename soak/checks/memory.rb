# frozen_string_literal: true

# Resident memory over repeated rounds of many small and a few large operations: after the
# first round (caches and heap settle) it must not keep growing.
require_relative "../support"

small = Soak.document(2)
small_text = JSON.generate(small)
small_dump = Marshal.dump(small)
large = Soak.document(2_000)
large_text = JSON.generate(large)
large_dump = Marshal.dump(large)
response = Soak.http_response(20)
megabyte = "m" * (1 << 20)
rounds = Soak.scale(6, 3)
small_ops = Soak.scale(100_000, 10_000)
large_ops = Soak.scale(1_000, 60)
rss = []
rounds.times do
  small_ops.times do
    JSON.parse(small_text)
    JSON.generate(small)
    Marshal.load(small_dump)
    Marshal.dump(small)
    Digest::SHA256.hexdigest(small_text)
    Soak.read_response(response)
  end
  large_ops.times do
    JSON.parse(large_text)
    JSON.generate(large)
    Marshal.load(large_dump)
    Marshal.dump(large)
    Digest::SHA256.digest(megabyte)
  end
  GC.start(full_mark: true, immediate_sweep: true)
  rss << Soak.rss_kb
end
growth = rss.last - rss.first
Soak.figure("rounds (#{small_ops} small + #{large_ops} large ops each)", rounds)
Soak.figure("RSS per round, MB", rss.map { |kb| (kb / 1024.0).round(1) }.join(" "))
Soak.figure("RSS growth after round 1, MB", (growth / 1024.0).round(1))
# A leak of one small object per op would add megabytes a round.
Soak.fail!("RSS grew #{growth} kB after the first round") if growth > 16 * 1024
Soak.result("after rounds", Soak.every_module(small))
