# frozen_string_literal: true

# Thread#raise and Timeout aimed at long operations. An operation that never calls Ruby
# holds the GVL to its end (the stdlib's C code too), so the interrupts land inside the
# Ruby code the modules call back (to_json, marshal_dump, _load), in a Digest hashing
# without the GVL, or in Net::HTTP waiting on a slow pipe: wherever they land, the process
# must keep working and later results must be right.
require_relative "../support"
require "timeout"

# Yields the GVL inside the modules' callbacks, so another thread can run (and raise) there.
class Yielding
  attr_reader :n

  def initialize(n)
    @n = n
  end

  def to_json(*args)
    Thread.pass
    @n.to_json(*args)
  end

  def _dump(_level)
    Thread.pass
    @n.to_s
  end

  def self._load(text)
    Thread.pass
    new(text.to_i)
  end

  def ==(other)
    other.is_a?(Yielding) && other.n == n
  end

  def inspect
    "#<Yielding #{@n}>"
  end
end

count = Soak.scale(3_000, 600)
doc = Soak.document(200)
slow = Array.new(count) { |i| [Yielding.new(i), doc[i % 200]] }
slow_dump = Marshal.dump(slow)
blob = "x" * Soak.scale(32 << 20, 8 << 20)
response = Soak.http_response(200)
# Net::HTTP reading a response that arrives in pieces.
read_slowly = lambda do
  reader, writer = IO.pipe
  feeder = Thread.new do
    response.bytes.each_slice(512) { |piece| writer.write(piece.pack("C*")) && Thread.pass }
    writer.close
  end
  Soak.read_response_from(reader)
ensure
  feeder&.kill
  reader&.close
  writer&.close unless writer&.closed?
end
work = [-> { JSON.generate(slow) }, -> { Marshal.load(slow_dump) }, -> { Marshal.dump(slow) },
        -> { Digest::SHA256.hexdigest(blob) }, read_slowly]
expected = work.map(&:call).map { |value| Soak.describe(value) }
timed_out = 0
raised_into = 0
random = Random.new(7)
rounds = Soak.scale(100, 20)
rounds.times do |i|
  op = work[i % work.size]
  begin
    Timeout.timeout(0.0005 + random.rand * 0.005) { op.call }
  rescue Timeout::Error
    timed_out += 1
  rescue EOFError
    # The stdlib's own outcome, now and then (seen on Ruby 3.4.11 without rusty_stdlib: 9
    # in 3,000 timed reads): Net::BufferedIO#rbuf_fill reads into its buffer in place while
    # it is marked empty, so a Timeout landing before the mark is cleared leaves the bytes
    # just read open to being overwritten by the next fill; read_chunked's `ensure`, which
    # reads the chunk's CRLF, then runs into the end of the pipe, its EOFError replacing
    # the Timeout. Only the timed read may end so; every later result is still checked.
    raise unless op.equal?(read_slowly)

    timed_out += 1
  end
  worker = Thread.new do
    op.call
    :finished
  rescue IOError
    :interrupted
  end
  sleep(random.rand * 0.003)
  worker.raise(IOError, "stop") if worker.alive?
  raised_into += 1 if worker.value == :interrupted
  # Right after each interruption, every operation gives its answer again.
  got = work.map(&:call).map { |value| Soak.describe(value) }
  Soak.fail!("results changed after interruption #{i} (#{work.size.times.reject { |k| got[k] == expected[k] }})") if got != expected
end
Soak.result("after interrupts", Soak.every_module(doc.first(50)))
Soak.figure("operations interrupted by Timeout", "#{timed_out} of #{rounds}")
Soak.figure("operations stopped by Thread#raise", "#{raised_into} of #{rounds}")
