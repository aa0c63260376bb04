# frozen_string_literal: true

# Shared by spec/net_http: run code on the stdlib's methods or ours, and describe results
# deeply (Arrays of Strings compared with each String's encoding, class and frozenness).
module NetHttpHelper
  # Fixed seeds: the random inputs are the same on every run and every Ruby.
  SEED = 20_261_129

  # Runs the block once with the stdlib's methods (every piece taken out) and once with
  # ours, and expects the same outcome (see Parity). Results are described deeply.
  def expect_codec_parity(&block)
    expect_parity(:stdlib, :ours) do |side|
      if side == :stdlib
        RustyStdlib::NetHttp.stdlib { deep(block.call) }
      else
        deep(block.call)
      end
    end
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
    Parity::GC_STRESS ? [n / 25, 4].max : n
  end

  # `list`, or every k-th element of it under GC stress (at most about `max`).
  def self.sample(list, max = 25)
    return list unless Parity::GC_STRESS

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
