# frozen_string_literal: true

# Ruby's main thread gets the machine stack `ulimit -s` gives; threads and fibers get fixed
# sizes. Running the gem or ours until that stack overflows takes time that grows with it:
# the gem's generator on a cyclic Array takes 0.8 s at the usual 8 MiB, 64 s at 64 MiB,
# and with no limit runs until memory does; a document deep enough to overflow 8 MiB
# parses at 16 MiB, and under GC.stress building it costs a collection per level. Specs
# that count on the main thread overflowing use a thread instead where its stack is larger.
module MainStack
  USUAL = 8 * 1024 * 1024

  # The soft limit in bytes, nil when there is none.
  def self.limit
    soft, = Process.getrlimit(:STACK)
    soft unless soft == Process::RLIM_INFINITY
  end

  def self.big?
    bytes = limit
    bytes.nil? || bytes > USUAL
  end
end
