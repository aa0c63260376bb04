# frozen_string_literal: true

# Threads hammering shared objects: one Digest fed small and large (released-GVL) chunks,
# the parser's key cache (symbolize_names), generation with one options Hash, Marshal on
# one graph, the HTTP codec. (Not one JSON::State: the stdlib's is not thread-safe either,
# its depth counter is shared, and both sides give torn output.)
require_relative "../support"

doc = Soak.document(Soak.scale(300, 60))
text = JSON.generate(doc)
options = { indent: "  ", space: " ", object_nl: "\n", array_nl: "\n" }.freeze
# Each fed one chunk again and again, so the order the threads feed in does not matter.
digests = { "small chunk " * 10 => Digest::SHA256.new, "L" * (256 << 10) => Digest::SHA256.new }.freeze
per_thread = Soak.scale(300, 40)
response = Soak.http_response(30)
expected = { generate: JSON.generate(doc, options), parse: JSON.parse(text, symbolize_names: true),
             dump: Marshal.dump(doc), http: Soak.read_response(response) }
threads = Array.new(4) do |t|
  Thread.new do
    bad = 0
    per_thread.times do |i|
      bad += 1 unless JSON.generate(doc, options) == expected[:generate]
      bad += 1 unless JSON.parse(text, symbolize_names: true) == expected[:parse]
      bad += 1 unless Marshal.dump(Marshal.load(expected[:dump])) == expected[:dump]
      bad += 1 unless Soak.read_response(response) == expected[:http]
      chunk, digest = digests.to_a[(i + t) % 2]
      digest.update(chunk)
    end
    bad
  end
end
bad = threads.sum(&:value)
Soak.fail!("#{bad} results differed under threads") if bad.positive?
digests.each do |chunk, digest|
  Soak.result("shared digest #{chunk.size}", digest.hexdigest == Digest::SHA256.hexdigest(chunk * (2 * per_thread)))
end
Soak.figure("thread operations", 4 * per_thread * 5)
