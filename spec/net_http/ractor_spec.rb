# frozen_string_literal: true

require_relative "net_http_helper"

# URI's form codec works inside any Ractor (and on Ruby 3.3 Net::HTTPHeader's
# each_capitalized too), so ours must: each call below runs in a Ractor with the stdlib's
# methods in place and with ours, and must end the same way (value, or exception class
# and message). Where the stdlib fails in a Ractor (Ruby 3.1's Net::HTTP constants are
# not shareable), ours fails there with the same error.
RSpec.describe "Net::HTTP codec and URI form codec inside Ractors" do
  HTTP_RACTOR_CALLS = [
    'URI.encode_www_form([["a b", "c&d"], ["\u00fc", nil], ["k", ["1", nil]]])',
    'URI.encode_www_form_component("a b~*\u3042".encode("Shift_JIS"), Encoding::Shift_JIS)',
    'URI.decode_www_form("a+b=c%26d&e=%E3%81%82;f", Encoding::UTF_8, separator: "&")',
    'URI.decode_www_form_component("a+b%7E%E3%81%82")',
    'URI.decode_www_form_component("%zz")',
    'Net::HTTP::Get.new("/", { "x-a" => "1", "CONTENT-type" => "t" }).each_capitalized.to_a',
    'Net::HTTP::Get.new("/").tap { |r| r["x-b-c"] = "2" }.to_enum(:each_capitalized).map { |k, v| k + v }',
    # Outside the main Ractor the response, request and body pieces are the stdlib's
    # (Ruby 3.3 writes a request there; reading a response fails in both Rubies).
    'out = StringIO.new; Net::HTTP::Get.new("/", "x-a" => "1").exec(Net::BufferedIO.new(out), "1.1", "/"); out.string',
    'io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 OK\r\nA: b\r\n\r\n")); Net::HTTPResponse.read_new(io).to_hash',
    'io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 OK\r\n")); Net::HTTPResponse.send(:read_status_line, io)',
    'io = Net::BufferedIO.new(StringIO.new("A: b\r\n\r\n")); r = []; Net::HTTPResponse.send(:each_response_header, io) { |*kv| r << kv }; r'
  ].freeze

  # Prints, as Marshal data, each call's outcome in a Ractor with the stdlib's methods in
  # place, then with ours. In a child process: once a process has made a Ractor, Ruby
  # 3.1's VM locks stay in their multi-Ractor mode, where one run of this suite was seen
  # spinning in them for good, so the suite's process makes none.
  HTTP_RACTOR_CHILD = <<~RUBY
    require "rusty_stdlib"
    require "net/http"
    require "uri"
    require "stringio"
    Warning[:experimental] = false
    calls = #{HTTP_RACTOR_CALLS.inspect}.freeze
    run = lambda do
      Ractor.new(calls) do |work|
        work.map do |call|
          value = eval(call)
          [:ok, value, value.respond_to?(:encoding) ? value.encoding.name : nil]
        rescue StandardError => e
          [:raised, e.class.name, e.message]
        end
      end.take
    end
    installed = RustyStdlib::NetHttp.pieces.include?(:uri_form)
    print Marshal.dump([installed, RustyStdlib::NetHttp.stdlib { run.call }, run.call])
  RUBY

  it "ends every call as the stdlib does" do
    out, err, status = ruby_run(HTTP_RACTOR_CHILD)
    expect([err, status.success?]).to eq(["", true])
    installed, expected, actual = Marshal.load(out)
    skip "uri_form not installed in the child" unless installed

    HTTP_RACTOR_CALLS.each_with_index do |call, i|
      expect([call, actual[i]]).to eq([call, expected[i]])
    end
    # The form codec works in a Ractor on every Ruby we support.
    expect(actual.first(4).map(&:first)).to eq(%i[ok ok ok ok])
  end
end
