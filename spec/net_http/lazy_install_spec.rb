# frozen_string_literal: true

require "net/http"
require "tmpdir"

# require "rusty_stdlib" does not load net/http or uri; the Net::HTTP pieces go in when
# the app requires them (before or after rusty_stdlib), and never with RUSTY_STDLIB=off.
RSpec.describe "RustyStdlib::NetHttp's lazy install" do
  report = <<~RUBY
    p [RustyStdlib.installed.include?(:net_http), RustyStdlib.status[:net_http], RustyStdlib::NetHttp.pieces]
  RUBY

  all = %i[uri_form header_names response_head request_head chunked_body]

  it "loads neither net/http nor uri, and installs each piece when its stdlib is required" do
    out = ruby_run_lines(<<~RUBY)
      require "rusty_stdlib"
      p $LOADED_FEATURES.grep(%r{/(net/http|uri)\\.rb\\z})
      #{report}
      require "uri"
      #{report}
      require "net/http"
      #{report}
      p RustyStdlib::MethodSwap.swapped?(Net::HTTPHeader, :capitalize)
    RUBY
    expect(out).to eq(["[]", "[false, :pending, []]", "[true, :installed, [:uri_form]]",
                       "[true, :installed, #{all.inspect}]", "true"])
  end

  it "installs at once when net/http was required first, or via net/https and a nested require" do
    installed = ["[true, :installed, #{all.inspect}]"]
    expect(ruby_run_lines(%(require "net/http"\nrequire "rusty_stdlib"\n#{report}))).to eq(installed)
    expect(ruby_run_lines(%(require "rusty_stdlib"\nrequire "net/https"\n#{report}))).to eq(installed)
    expect(ruby_run_lines(%(require "rusty_stdlib"\nrequire "open-uri"\nrequire "net/http"\n#{report}))).to eq(installed)
  end

  it "installs after net/http is loaded by Kernel.require, an absolute path or a .rb suffix" do
    absolute = $LOADED_FEATURES.grep(%r{/net/http\.rb\z}).first
    ["Kernel.require 'net/http'", "require #{absolute.inspect}", "require 'net/http.rb'"].each do |load|
      out = ruby_run_lines(%(require "rusty_stdlib"\n#{load}\n#{report}))
      expect(out).to eq(["[true, :installed, #{all.inspect}]"]), load
    end
  end

  it "installs after net/http is required inside another file, once that file's require returns" do
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "client.rb"), %(require "json"\nrequire_relative "deeper"\n))
      File.write(File.join(dir, "deeper.rb"), %(require_relative "uses_http"\n$during = RustyStdlib::NetHttp.pieces\n))
      File.write(File.join(dir, "uses_http.rb"), %(require "net/http.rb"\n))
      out = ruby_run_lines(%(require "rusty_stdlib"\nrequire #{File.join(dir, 'client').inspect}\np $during\n#{report}))
      expect(out).to eq(["[:uri_form]", "[true, :installed, #{all.inspect}]"])
    end
  end

  # The watch wraps Kernel#require: code in a required file sees one more frame (ours)
  # in its backtrace, and no other change.
  it "adds one frame, its own, to the backtrace inside a required file" do
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "inner.rb"), "$frames = caller(0)\n")
      code = ->(ours) { %(#{ours ? 'require "rusty_stdlib"' : ''}\nrequire #{File.join(dir, 'inner').inspect}\nprint Marshal.dump($frames)) }
      (ours, _), (stdlib, _) = run_with_and_without_ours { |with_ours| code.call(with_ours) }
      added = ours - stdlib
      expect(added.size).to eq(1)
      expect(added.first).to match(%r{lib/rusty_stdlib/require_watch\.rb:\d+:in [`'](Kernel#)?require'})
      expect(ours.size).to eq(stdlib.size + 1)
    end
  end

  it "installs at the next require after a require_relative of net/http's files" do
    http = $LOADED_FEATURES.grep(%r{/net/http\.rb\z}).first
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "main.rb"), <<~RUBY)
        require "rusty_stdlib"
        require_relative #{http.inspect}
        p RustyStdlib::NetHttp.pieces
        require "set"
        #{report}
      RUBY
      out, err, status = ruby_run(%(load #{File.join(dir, 'main.rb').inspect}))
      expect([err, status.success?]).to eq(["", true])
      expect(out.lines.map(&:chomp)).to eq(["[:uri_form]", "[true, :installed, #{all.inspect}]"])
    end
  end

  it "installs nothing and watches no require with RUSTY_STDLIB=off" do
    out = ruby_run_lines(%(require "rusty_stdlib"\nrequire "net/http"\n#{report}\np [Kernel.ancestors, Kernel.singleton_class.ancestors].flatten.grep(/RustyStdlib/)),
              env: { "RUSTY_STDLIB" => "off" })
    expect(out).to eq(['[false, "disabled by RUSTY_STDLIB=off", []]', "[]"])
  end

  it "predicts the versions it will find from the stdlib's source files" do
    predicted = %w[Net::HTTP::VERSION URI::VERSION].map { |c| RustyStdlib::NetHttp.send(:predicted_version, c) }
    expect(predicted).to eq([Net::HTTP::VERSION, URI::VERSION])
  end
end
