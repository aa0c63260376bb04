# frozen_string_literal: true

require "stringio"
require "net/http" # after rusty_stdlib (spec_helper): the pieces go in lazily

# Shared by spec/net_http: run code on the stdlib's methods or ours, and describe results
# deeply (Arrays of Strings compared with each String's encoding, class and frozenness).
module NetHttpHelper
  # An IO that hands out its data in the given chunk sizes (then the rest), so that
  # Net::BufferedIO's buffer boundaries fall everywhere.
  class ChunkedIO < StringIO
    def initialize(data, chunks)
      super(data)
      @chunks = chunks.dup
    end

    def read_nonblock(len, buf = nil, exception: true)
      size = @chunks.shift || len
      size = 1 if size < 1
      readpartial([len, size].min, *buf)
    rescue EOFError
      raise if exception

      nil
    end
  end

  # Fixed seeds: the random inputs are the same on every run and every Ruby.
  SEED = 20_261_129

  # Runs the block once with the stdlib's methods (every piece taken out) and once with
  # ours, and expects the same outcome (see Parity). Results are described deeply.
  #
  # stress: false runs ours without GC.stress even under RUSTY_GC_STRESS (end-to-end
  # requests allocate thousands of objects each; the unit specs cover GC safety).
  def expect_codec_parity(stress: Parity::GC_STRESS, &block)
    expected = outcome_of { RustyStdlib::NetHttp.stdlib { deep(block.call) } }
    actual = outcome_of(stress: stress) { deep(block.call) }
    expect(actual).to eq(expected)
    expected
  end

  def deep(value)
    case value
    when String then [value.class, value.b, value.encoding, value.frozen?, value.valid_encoding?]
    when Array then [Array, value.frozen?, value.map { |v| deep(v) }]
    else value
    end
  end

  # Under RUSTY_GC_STRESS every call of ours runs a full GC per allocation (tens of ms),
  # so loops run a deterministic subset there: that run checks GC safety; the normal run
  # checks parity on everything.
  def self.count(n)
    Parity::GC_STRESS ? [n / 100, 3].max : n
  end

  # `list`, or every k-th element of it under GC stress (at most about `max`).
  def self.sample(list, max = 12)
    return list unless Parity::GC_STRESS

    max = [max, 12].min
    step = (list.size / max.to_f).ceil
    step <= 1 ? list : list.each_slice(step).map(&:first)
  end

  def random_string(rng, alphabet, max_len)
    Array.new(rng.rand(max_len + 1)) { alphabet[rng.rand(alphabet.size)] }.join
  end

  def self.piece?(name)
    RustyStdlib::NetHttp.pieces.include?(name)
  end
end
