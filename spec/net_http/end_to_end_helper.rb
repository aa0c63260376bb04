# frozen_string_literal: true

require "net/http"
require_relative "net_http_helper"

# Shared by the end-to-end specs (WEBrick, nginx, a raw server of malformed responses):
# describe a whole response, or a debug log, in a form that two runs against the same
# server produce identically (the Date header, per-connection counters and the validators
# of files a spec writes masked).
module EndToEndHelper
  include NetHttpHelper

  # Headers whose values change from one request to the next whoever parses them. A file
  # the spec PUTs is written once per run, so its Last-Modified and ETag (nginx's is
  # mtime-size) differ when the two runs fall in different seconds.
  VOLATILE = %w[date x-conn last-modified etag].freeze
  # The same headers in a debug log line, up to its escaped "\r\n" (past the escaped
  # quotes of an ETag).
  VOLATILE_LOGGED = /(#{VOLATILE.map { |name| Regexp.escape(name) }.join('|')}): (?:\\"|[^\\])*/i

  # Everything a caller can see of a response: class, status line, headers (as parsed
  # and as canonicalised), the body with its encoding, and what Net::HTTP derived.
  def response_summary(res)
    headers = res.to_hash.reject { |name, _| VOLATILE.include?(name) }
    capitalized = res.each_capitalized.reject { |name, _| VOLATILE.include?(name.downcase) }
    body = res.body
    body = body.class.name unless body.nil? || body.is_a?(String) # read_body's block had it
    [res.class, deep(res.code), deep(res.message), deep(res.http_version), deep(headers.to_a),
     deep(capitalized), deep(body), res.content_length, res.chunked?, res.decode_content,
     res.uri.to_s]
  end

  # A set_debug_output log with the volatile header values masked, and the pieces of
  # each "reading N bytes..." joined: BufferedIO logs every buffer fill, so how they
  # split depends on how the bytes arrived, not on who parses them.
  def masked_log(log)
    log.gsub(VOLATILE_LOGGED) { "#{Regexp.last_match(1)}: -" }.gsub(/^(reading \d+ bytes\.\.\.\n)((?:-> ".*"\n)+)/) do
      data = Regexp.last_match(2).lines.map { |line| line.chomp.delete_prefix("-> ").undump }.join
      "#{Regexp.last_match(1)}-> #{data.dump}\n"
    end
  end

  # "connection/requests" values of the X-Conn header nginx adds: how many connections
  # the requests used, and each request's number on its connection.
  def connection_use(values)
    pairs = values.map { |v| v.split("/").map { |n| Integer(n) } }
    [pairs.map(&:first).uniq.size, pairs.map(&:last)]
  end

  # expect_codec_parity(stress: false) with a failure message that points at the first
  # difference (whole responses and logs are too long to compare by eye). GC.stress
  # stays off: a request allocates thousands of objects; the unit specs cover GC safety.
  def expect_e2e_parity(&block)
    expected = outcome_of { RustyStdlib::NetHttp.stdlib { deep(block.call) } }
    actual = outcome_of { deep(block.call) }
    expect(actual).to eq(expected), -> { "stdlib vs ours: #{difference(expected, actual)}" }
    expected
  end

  def difference(expected, actual)
    return first_difference(expected.value, actual.value) unless expected.raised || actual.raised

    "\n  stdlib: #{expected.inspect[0, 1000]}\n  ours:   #{actual.inspect[0, 1000]}"
  end

  def first_difference(expected, actual, path = [])
    if expected.is_a?(Array) && actual.is_a?(Array)
      expected.zip(actual).each_with_index do |(e, a), i|
        return first_difference(e, a, path + [i]) unless e == a
      end
      return "at #{path.inspect}: sizes #{expected.size} vs #{actual.size}" if expected.size != actual.size
    end
    if expected.is_a?(String) && actual.is_a?(String) && (expected.size > 200 || actual.size > 200)
      at = (0...[expected.size, actual.size].min).find { |i| expected[i] != actual[i] } || [expected.size, actual.size].min
      from = [at - 150, 0].max
      return "at #{path.inspect}, offset #{at}:\n  stdlib: ...#{expected[from, 300].inspect}\n  " \
             "ours:   ...#{actual[from, 300].inspect}"
    end
    "at #{path.inspect}:\n  stdlib: #{expected.inspect}\n  ours:   #{actual.inspect}"
  end
end
