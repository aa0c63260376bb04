# frozen_string_literal: true

require_relative "net_http_helper"

# Our Net::HTTP and URI methods, and the require watch, replace the stdlib's in the
# classes that define them (lib/rusty_stdlib/method_swap.rb), so an app's own patches of
# those methods work as they did over the stdlib. Each case runs in a child process
# (patches stay) with rusty_stdlib and without it, and the outcomes must agree.
RSpec.describe "Net::HTTP and URI under an app's own patches" do
  # [patch, code whose result is compared]; `ours` says whether rusty_stdlib is loaded
  # (before net/http, as an app's Gemfile would; the patches come after both).
  cases = {
    # The classic way to send header names as given: redefine capitalize.
    "a redefined Net::HTTPHeader#capitalize" => [<<~PATCH, <<~CODE],
      module Net::HTTPHeader
        remove_method :capitalize
        def capitalize(name) = name
      end
    PATCH
      req = Net::HTTP::Get.new("/", "x-MiXed" => "1")
      out = StringIO.new
      req.exec(Net::BufferedIO.new(out), "1.1", "/")
      [out.string, req.each_capitalized.to_a]
    CODE
    "an alias chain over Net::HTTPGenericRequest#write_header" => [<<~PATCH, <<~CODE],
      class Net::HTTPGenericRequest
        alias_method :write_header_before_patch, :write_header
        private def write_header(sock, ver, path)
          sock.write("X-Patched: 1\\r\\n")
          write_header_before_patch(sock, ver, path)
        end
      end
    PATCH
      out = StringIO.new
      Net::HTTP::Get.new("/").exec(Net::BufferedIO.new(out), "1.1", "/")
      out.string
    CODE
    "a module prepended to Net::HTTPResponse.read_new" => [<<~PATCH, <<~CODE],
      Net::HTTPResponse.singleton_class.prepend(Module.new do
        def read_new(sock) = super.tap { |res| res["x-seen"] = "1" }
      end)
    PATCH
      io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 OK\\r\\nA: b\\r\\n\\r\\n"))
      Net::HTTPResponse.read_new(io).to_hash
    CODE
    # read_new calls these two; a response whose head is all buffered must still.
    "a redefined Net::HTTPResponse.each_response_header and read_status_line" => [<<~PATCH, <<~CODE],
      class << Net::HTTPResponse
        alias_method :each_response_header_before_patch, :each_response_header
        alias_method :read_status_line_before_patch, :read_status_line
        private def each_response_header(sock)
          each_response_header_before_patch(sock) { |k, v| yield k.upcase, v }
        end
        private def read_status_line(sock) = read_status_line_before_patch(sock).tap { |s| s[2] = s[2].upcase }
      end
    PATCH
      io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 Fine\\r\\nA-b: c\\r\\n\\r\\n"))
      res = Net::HTTPResponse.read_new(io)
      [res.message, res.to_hash]
    CODE
    "an alias chain over URI.encode_www_form_component" => [<<~PATCH, <<~CODE],
      class << URI
        alias_method :encode_before_patch, :encode_www_form_component
        def encode_www_form_component(str, enc = nil) = encode_before_patch(str, enc).tr("+", "_")
      end
    PATCH
      [URI.encode_www_form_component("a b"), URI.encode_www_form(a: "c d")]
    CODE
    # Zeitwerk's Kernel#require wrapper, made after rusty_stdlib but before net/http.
    "a Zeitwerk-style alias chain over Kernel#require" => [<<~PATCH, <<~CODE],
      module Kernel
        module_function
        alias_method :original_require_before_patch, :require
        def require(path)
          (LOG << path) if path == "set"
          original_require_before_patch(path)
        end
      end
    PATCH
      [require("set"), Kernel.require("optparse"), LOG, Net::HTTP::Get.new("/").each_capitalized.to_a]
    CODE
  }

  def script(patch, code, ours, patch_before_net_http)
    <<~RUBY
      LOG = []
      #{ours ? 'require "rusty_stdlib"' : ''}
      #{patch_before_net_http ? patch : ''}
      require "net/http"
      require "stringio"
      #{patch_before_net_http ? '' : patch}
      result = begin
        #{code}
      end
      pieces = defined?(RustyStdlib::NetHttp) ? RustyStdlib::NetHttp.pieces : []
      print Marshal.dump([result, pieces])
    RUBY
  end

  cases.each do |name, (patch, code)|
    it "keeps #{name} working as over the stdlib" do
      before = name.include?("Kernel#require")
      ((ours, ours_pieces), ours_err), ((stdlib, _), stdlib_err) =
        run_with_and_without_ours { |with_ours| script(patch, code, with_ours, before) }
      expect(ours).to eq(stdlib)
      # No warning of ours. (Ruby's "method redefined" for the patch's own `def` under -w
      # depends on how many names the replaced definition has: ours, copied in, has two,
      # so replacing it may not warn where replacing the stdlib's does.)
      expect([stdlib_err, ""]).to include(ours_err)
      expect(ours_pieces).to eq(%i[uri_form header_names response_head request_head chunked_body])
    end
  end

  it "wraps a module that was prepended to Net::HTTPResponse.read_new before it was installed" do
    out, err, status = ruby_run(<<~RUBY)
      require "net/http"
      require "stringio"
      Net::HTTPResponse.singleton_class.prepend(Module.new do
        def read_new(sock) = super.tap { |res| res["x-seen"] = "1" }
      end)
      require "rusty_stdlib"
      io = Net::BufferedIO.new(StringIO.new("HTTP/1.1 200 OK\\r\\nA: b\\r\\n\\r\\n"))
      print Marshal.dump([Net::HTTPResponse.read_new(io).to_hash, RustyStdlib::NetHttp.pieces.include?(:response_head)])
    RUBY
    expect(err).to eq("")
    expect(Marshal.load(out)).to eq([{ "a" => ["b"], "x-seen" => ["1"] }, true])
    expect(status).to be_success
  end
end
