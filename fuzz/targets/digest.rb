# frozen_string_literal: true

require "digest"
require "tempfile"

module Fuzz
  # Digest objects driven through random sequences of calls (updates of random lengths
  # around block boundaries, finishing with and without reset, copies, freezing,
  # comparisons, files, bad arguments): the outcome of every call, so a state that goes
  # wrong after a copy or a reset shows at the call that reads it.
  class DigestCalls < Target
    NAMES = %i[MD5 SHA1 SHA256 SHA384 SHA512 RMD160 SHA2].freeze
    SHA2_ARGS = [[], [256], [384], [512], [224], ["256"], [nil]].freeze
    # Lengths near the 64- and 128-byte blocks and the 8/16-byte length fields.
    LENGTHS = [0, 1, 3, 55, 56, 57, 63, 64, 65, 111, 112, 113, 119, 120, 127, 128, 129, 255, 256, 1000].freeze
    ENCODINGS = [Encoding::BINARY, Encoding::UTF_8, Encoding::US_ASCII, Encoding::UTF_16LE, Encoding::ISO_8859_1].freeze
    CALLS = %i[update shovel digest hexdigest base64digest digest_with hexdigest_with digest_bang hexdigest_bang
               base64digest_bang reset dup clone freeze equal_to equal_to_hex length block_length inspect to_s
               file class_digest class_hexdigest bubblebabble new].freeze

    # A String-like argument that is not a String: the stdlib's to_str conversion.
    class StrLike
      def initialize(s) = @s = s
      def to_str = @s
      def inspect = "#<StrLike #{@s.inspect}>"
    end

    def initialize(rng, corpus_dir)
      super
      @files = Array.new(3) do |i|
        file = Tempfile.new(["rusty_fuzz_digest", ".bin"])
        file.binmode
        file.write(Random.new(i).bytes([0, 64, 70_000][i]))
        file.close
        file
      end
    end

    def next_case
      name = NAMES.sample(random: @rng)
      args = name == :SHA2 ? SHA2_ARGS.sample(random: @rng) : []
      [name, args, Array.new(@rng.rand(1..12)) { call }]
    end

    def outcome(side, (name, args, calls))
      klass = side == :stdlib ? RustyStdlib::Digest.stdlib(name) : ::Digest.const_get(name)
      results = []
      digest = Parity.outcome { klass.new(*args) }
      results << summary(digest)
      return results if digest.raised

      digest = digest.value
      calls.each do |call, arg|
        outcome = Parity.outcome { run(klass, args, digest, call, arg) }
        results << summary(outcome)
        # A copy becomes the object the next calls go to; the original must not change.
        digest = outcome.value if %i[dup clone new].include?(call) && !outcome.raised
      end
      results
    end

    private

    def call
      call = CALLS.sample(random: @rng)
      case call
      when :update, :shovel, :digest_with, :hexdigest_with, :class_digest, :class_hexdigest, :bubblebabble
        [call, data]
      when :file then [call, @rng.rand(5).zero? ? "/nonexistent/rusty_fuzz" : @files.sample(random: @rng).path]
      when :equal_to, :equal_to_hex then [call, data]
      else [call, nil]
      end
    end

    # Mostly Strings of block-boundary lengths in various encodings (frozen or not), now
    # and then something else.
    def data
      case @rng.rand(12)
      when 0 then [nil, 1, :sym, 1.5, [], Object.new].sample(random: @rng)
      when 1 then StrLike.new(@rng.bytes(@rng.rand(0..70)))
      else
        s = @rng.bytes(LENGTHS.sample(random: @rng)).force_encoding(ENCODINGS.sample(random: @rng))
        @rng.rand(4).zero? ? s.freeze : s
      end
    end

    def run(klass, args, digest, call, arg)
      case call
      when :update then digest.update(arg).equal?(digest)
      when :shovel then (digest << arg).equal?(digest)
      when :digest then digest.digest
      when :hexdigest then digest.hexdigest
      when :base64digest then digest.base64digest
      when :digest_with then digest.digest(arg)
      when :hexdigest_with then digest.hexdigest(arg)
      when :digest_bang then digest.digest!
      when :hexdigest_bang then digest.hexdigest!
      when :base64digest_bang then digest.base64digest!
      when :reset then digest.reset.equal?(digest)
      when :dup, :clone then digest.public_send(call)
      when :freeze then digest.freeze.frozen?
      when :equal_to then digest == klass.new(*args).update(arg)
      when :equal_to_hex then digest == klass.hexdigest(arg, *args)
      when :length then [digest.length, digest.size, digest.digest_length]
      when :block_length then digest.block_length
      when :inspect then digest.inspect
      when :to_s then digest.to_s
      when :file then digest.file(arg).equal?(digest)
      when :class_digest then klass.digest(arg, *args)
      when :class_hexdigest then klass.hexdigest(arg, *args)
      when :bubblebabble then klass.bubblebabble(arg)
      when :new then digest.new
      end
    end

    # Digest objects are compared by what they hold and their class, not by identity.
    def summary(outcome)
      value = outcome.value
      return outcome unless value.is_a?(::Digest::Instance)

      [outcome.klass, value.frozen?, value.hexdigest]
    end
  end

  TARGETS["digest"] = DigestCalls
end
