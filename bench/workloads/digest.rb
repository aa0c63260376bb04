# frozen_string_literal: true

# Digest: `Digest::X.hexdigest(str)` (the class-method form apps use most) at three sizes.
# 64 B shows per-call overhead, 4 KiB a typical payload, 1 MiB raw hashing speed.
# OpenSSL::Digest is the reference: what a Ruby app could switch to instead of us.
require_relative "../harness/openssl_speed"

Bench.define(:digest,
             requires: %w[digest digest/md5 digest/sha1 digest/sha2],
             references: { "OpenSSL" => %w[openssl] },
             source: "generated: Random.new(42).bytes(size)") do
  # The C library's own speed with no Ruby in the way, where it is most telling.
  openssl_sha256 = -> { Bench::OpensslSpeed.measure("sha256") }

  { "64B" => 64, "4KiB" => 4 * 1024, "1MiB" => 1024 * 1024 }.each do |label, size|
    %w[MD5 SHA1 SHA256 SHA512].each do |algorithm|
      workload "digest-#{algorithm.downcase}-#{label}",
               bytes: size,
               setup: -> { Random.new(42).bytes(size) },
               op: "Digest::#{algorithm}.hexdigest(input)",
               references: { "OpenSSL" => "OpenSSL::Digest::#{algorithm}.hexdigest(input)" },
               ceiling: (openssl_sha256 if algorithm == "SHA256" && label == "1MiB")
    end
  end
end
