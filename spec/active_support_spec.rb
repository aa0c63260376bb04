# frozen_string_literal: true

require_relative "spec_helper"

# A Rails app's view of the gem: ActiveSupport (Debian's ruby-activesupport) patches
# #to_json on every core class, wraps JSON.generate in its encoder, and signs, encrypts
# and caches values with Marshal and Digest. The same script runs in a process with the
# stdlib alone and in one with rusty_stdlib required before, or after, ActiveSupport
# (Bundler.require loads a Gemfile's gems in either order), and every value it prints
# must be the same.
module ActiveSupportSpec
  SCRIPT = <<~'RUBY'
    require "json"
    require "stringio"
    Time.zone = "Tokyo"
    model = Class.new do
      def initialize = (@a = 1; @b = "x")
      def as_json(_options = nil) = { "model" => @a }
    end
    plain = Struct.new(:a, :b)
    t = Time.utc(2020, 1, 2, 3, 4, 5.123456r)
    values = {
      hash: { a: 1, b: [1.5, nil, "s", :sym] }.to_json,
      times: { t: t, d: Date.new(2020, 1, 2), tz: t.in_time_zone, dur: 3.days, bd: BigDecimal("1.50"),
               r: 1r, range: (1..3) }.to_json,
      objects: [model.new, plain.new(1, [t]), Object.new.then { |o| o.instance_variable_set(:@x, 1); o }].to_json,
      escapes: ["<script>&", "\u2028", "é".html_safe].to_json,
      nan: ({ a: Float::NAN }.to_json rescue [$!.class, $!.message]),
      only: { a: 1, b: 2 }.to_json(only: :a),
      generate: JSON.generate({ a: t, m: [model.new] }),
      pretty: JSON.pretty_generate({ a: [1, { b: t }] }),
      dump: JSON.dump({ a: t }),
      state: [1, { "a" => 2 }].to_json(JSON::State.new(indent: "  ")),
      encode: ActiveSupport::JSON.encode({ a: [1, t] }),
      decode: ActiveSupport::JSON.decode('{"a":[1,"2020-01-01T00:00:00Z"],"b":{"c":null}}'),
      indifferent: [JSON.parse('{"a":1}').with_indifferent_access, { "a" => 1 }.with_indifferent_access.to_json],
      marshal: Marshal.dump([{ "a" => 1 }.with_indifferent_access, t.in_time_zone, 3.days + 2.hours,
                             ActiveSupport::SafeBuffer.new("x<"), BigDecimal("1.5"),
                             ActiveSupport::OrderedOptions.new.tap { |o| o.a = 1 }]),
      marshal_load: Marshal.load(Marshal.dump([t.in_time_zone, 3.days, { "a" => 1 }.with_indifferent_access])).inspect,
      cache: ActiveSupport::Cache::MemoryStore.new.tap { |c| c.write("k", { a: [1, "x"] }) }.read("k"),
      verifier: ActiveSupport::MessageVerifier.new("secret").generate({ a: 1 }),
      verifier_json: ActiveSupport::MessageVerifier.new("secret", serializer: JSON).generate({ "a" => 1 }),
      encryptor: ActiveSupport::MessageEncryptor.new("x" * 32).then { |e| e.decrypt_and_verify(e.encrypt_and_sign({ a: 1 })) },
      digest: [ActiveSupport::Digest.hexdigest("abc"), Digest::SHA256.hexdigest("x" * 100)],
      query: [{ "a b" => [1, nil], c: { d: "é" } }.to_query, URI.encode_www_form(a: "b c")]
    }
    # As class names and inspect Strings (addresses masked): the spec process has no
    # ActiveSupport to load them.
    print Marshal.dump(values.transform_values { |v| [v.class.name, v.inspect.gsub(/0x\h+/, "0x_")] })
  RUBY
end

RSpec.describe "rusty_stdlib under ActiveSupport" do
  before(:all) do
    _, _, status = Open3.capture3(RbConfig.ruby, "-e", 'require "active_support"')
    @unavailable = "ActiveSupport is not installed (Debian's ruby-activesupport; bin/setup installs it)" unless status.success?
    raise "CI must run the ActiveSupport spec: #{@unavailable}" if @unavailable && ENV["CI"]
  end

  before { skip @unavailable if @unavailable }

  def outcome(prelude)
    # ActiveSupport's own files warn under -w; this spec is not about them.
    out, err, status = ruby_run("$VERBOSE = nil\n#{prelude}\n#{ActiveSupportSpec::SCRIPT}")
    expect(status).to be_success, err
    Marshal.load(out)
  end

  it "gives the values the stdlib gives, with rusty_stdlib required before or after it" do
    stdlib = outcome('require "active_support/all"')
    # ActiveSupport's encoder wrote this (the gem's #to_json would not write a Symbol so).
    expect(stdlib[:hash]).to eq(["String", '{"a":1,"b":[1.5,null,"s","sym"]}'.inspect])
    before = outcome('require "rusty_stdlib"; require "active_support/all"')
    after = outcome('require "active_support/all"; require "rusty_stdlib"')
    stdlib.each_key do |key|
      expect([key, before[key]]).to eq([key, stdlib[key]])
      expect([key, after[key]]).to eq([key, stdlib[key]])
    end
  end

  it "has rusty_stdlib's modules in place under ActiveSupport" do
    out, err, status = ruby_run(<<~'RUBY')
      $VERBOSE = nil
      require "rusty_stdlib"
      require "active_support/all"
      require "net/http"
      print RustyStdlib.status.values.uniq.inspect, " ", JSON.generator.name, " ", JSON::VERSION
    RUBY
    expect(status).to be_success, err
    # json 3's generator is its own class (lib/rusty_stdlib/json/generator_v3.rb).
    version = out.split.last
    generator = Gem::Version.new(version) >= Gem::Version.new("3") ? "V3::Generator" : "Generator"
    expect(out).to eq("[:installed] RustyStdlib::JSON::#{generator} #{version}")
  end
end
