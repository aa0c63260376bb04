# frozen_string_literal: true

# Each module's uninstall! (and install! after it), in fresh processes: the swaps are
# process-wide.
RSpec.describe "uninstall!" do
  modules = "RustyStdlib::Marshal, RustyStdlib::Digest, RustyStdlib::JSON, RustyStdlib::NetHttp"

  # Prints, per module, whose code is in place now (looked at where the stdlib keeps it,
  # not asked of the shim), then what an app computes with it.
  probe = <<~'RUBY'
    def whose(stdlib) = stdlib ? :stdlib : :ours
    def places
      {
        marshal: whose(Marshal.method(:load).source_location&.first == "<internal:marshal>"),
        digest: whose(Digest::SHA256.equal?(RustyStdlib::Digest.stdlib(:SHA256))),
        json_parser: whose(JSON.parser.equal?(JSON::Ext::Parser)),
        json_state: whose(JSON::State.equal?(JSON::Ext::Generator::State)),
        # json 3's #to_json is its Ruby code, on JSON::State (json_state above).
        to_json: (whose(!{}.method(:to_json).owner.name.to_s.start_with?("RustyStdlib")) if JSON::VERSION < "3"),
        json_parse: whose(JSON.method(:parse).source_location&.first.to_s.end_with?("/json/common.rb")),
        net_http: whose(Net::HTTPHeader.instance_method(:capitalize).source_location&.first.to_s.end_with?("/net/http/header.rb")),
      }
    end
    def results
      data = { "a" => [1, 2.5, nil, "é\u2028"], "b" => { "c" => true } }
      [Marshal.dump(data), Marshal.load(Marshal.dump(data)), Digest::SHA256.hexdigest("abc"),
       JSON.generate(data), data.to_json, JSON.pretty_generate(data), JSON.parse(JSON.generate(data)),
       Net::HTTP::Get.new("/", "x-a" => "1").each_capitalized.to_a]
    end
  RUBY

  it "puts the stdlib back in every module, with the same results, and install! brings ours back" do
    out = ruby_run_lines(<<~RUBY)
      require "rusty_stdlib"
      require "json"
      require "net/http"
      #{probe}
      before = RustyStdlib.installed
      ours = results
      p places.values.compact.uniq
      p [#{modules}].map(&:uninstall!)
      p places.values.compact.uniq
      p RustyStdlib.installed, RustyStdlib.status[:marshal], RustyStdlib::JSON.generator_status
      p results == ours
      p [#{modules}].map(&:uninstall!) # again: nothing left to undo
      p [#{modules}].map(&:install!)
      p RustyStdlib.installed.sort == before.sort, places.values.compact.uniq, results == ours
    RUBY
    proven = RustyStdlib.status.values.all? { |state| %i[installed pending].include?(state) }
    skip "not every module is proven here: #{RustyStdlib.status}" unless proven

    expect(out).to eq(["[:ours]", "[true, true, true, true]", "[:stdlib]", "[]",
                       '"uninstalled by RustyStdlib::Marshal.uninstall!"', '"json is not installed: uninstalled by RustyStdlib::JSON.uninstall!"',
                       "true", "[true, true, true, true]", "[true, true, true, true]", "true", "[:ours]", "true"])
  end

  it "stops a pending module from going in when its library is required later" do
    out = ruby_run_lines(<<~RUBY)
      require "rusty_stdlib"
      p RustyStdlib.status.values_at(:json, :net_http)
      p [RustyStdlib::JSON.uninstall!, RustyStdlib::NetHttp.uninstall!]
      require "json"
      require "net/http"
      p JSON.parser.equal?(JSON::Ext::Parser), RustyStdlib::NetHttp.pieces
      p RustyStdlib.status.values_at(:json, :net_http).map { |s| s.to_s[/\\Auninstalled/] }
    RUBY
    skip "json and net_http are not both proven here" unless out.first == "[:pending, :pending]"

    expect(out.drop(1)).to eq(["[true, true]", "true", "[]", '["uninstalled", "uninstalled"]'])
  end

  it "is safe where nothing was installed (RUSTY_STDLIB=off)" do
    out = ruby_run_lines(<<~RUBY, env: { "RUSTY_STDLIB" => "off" })
      require "rusty_stdlib"
      p [#{modules}].map(&:uninstall!)
      p Marshal.load(Marshal.dump([1, "a"])), RustyStdlib.status[:marshal]
    RUBY
    expect(out).to eq(["[true, true, true, true]", '[1, "a"]', '"disabled by RUSTY_STDLIB=off"'])
  end

  it "leaves ours and the app's wrapper in place when the app wrapped ours since" do
    out, err, status = ruby_run(<<~RUBY)
      require "rusty_stdlib"
      module Marshal
        class << self
          alias_method :load_before_app, :load
          def load(*args, **opts) = [:app, load_before_app(*args, **opts)]
        end
      end
      p RustyStdlib::Marshal.uninstall!, RustyStdlib.installed.include?(:marshal)
      p Marshal.load(Marshal.dump(1))
    RUBY
    skip "Marshal is not proven here" unless RustyStdlib.installed.include?(:marshal)

    expect(status).to be_success
    expect(out.lines.map(&:chomp)).to eq(%w[false true [:app,\ 1]])
    expect(err).to eq("rusty_stdlib: marshal stays installed: Marshal.load changed since rusty_stdlib swapped it in\n")
  end

  it "leaves the Digest classes in place when the app replaced one since" do
    out, err, status = ruby_run(<<~RUBY)
      require "rusty_stdlib"
      require "digest"
      Digest.send(:remove_const, :MD5)
      Digest::MD5 = Class.new(RustyStdlib::Digest.stdlib(:SHA1))
      p RustyStdlib::Digest.uninstall!, RustyStdlib.installed.include?(:digest)
      p Digest::SHA256.equal?(RustyStdlib::Digest::SHA256)
    RUBY
    skip "Digest is not proven here" unless RustyStdlib.installed.include?(:digest)

    expect(status).to be_success
    expect(out.lines.map(&:chomp)).to eq(%w[false true true])
    expect(err).to eq("rusty_stdlib: digest stays installed: Digest::MD5 replaced since rusty_stdlib swapped it in\n")
  end
end
