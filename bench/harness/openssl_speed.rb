# frozen_string_literal: true

require "open3"

module Bench
  # A per-byte figure measured outside Ruby, shown beside a workload's columns.
  # ns_per_byte is nil when it could not be measured; `note` then says why.
  Ceiling = Struct.new(:label, :ns_per_byte, :note, keyword_init: true) do
    def mb_per_s
      ns_per_byte && 1000.0 / ns_per_byte
    end
  end

  # `openssl speed` for one algorithm: the C library's hashing speed with no Ruby in the
  # way, so the report can say how close each column gets to it.
  module OpensslSpeed
    BLOCK = 16_384

    def self.command(algorithm)
      ["openssl", "speed", "-bytes", BLOCK.to_s, "-seconds", "1", algorithm]
    end

    def self.measure(algorithm)
      cmd = command(algorithm)
      label = "`#{cmd.join(' ')}`"
      out, status = Open3.capture2e(*cmd)
      rate = parse(out, algorithm) if status.success?
      return Ceiling.new(label: label, note: "no result (exit #{status.exitstatus})") unless rate

      Ceiling.new(label: label, ns_per_byte: 1e9 / rate)
    rescue Errno::ENOENT # no openssl binary: say so, keep the rest of the run
      Ceiling.new(label: label, note: "not measured: no `openssl` binary on PATH")
    rescue SystemCallError => e
      Ceiling.new(label: label, note: "not measured: #{e.message}")
    end

    # Bytes per second from the summary line, e.g. "sha256   1388576.77k": openssl
    # prints thousands of bytes per second, one column per block size (we ask for one).
    def self.parse(output, algorithm)
      line = output.lines.reverse.find { |l| l.split.first == algorithm }
      value = line && line.split[1]
      return nil unless value&.match?(/\A[\d.]+k\z/)

      value.to_f * 1000
    end
  end
end
