# frozen_string_literal: true

require_relative "json_helper"

RSpec.describe "rusty_stdlib/json shim" do
  it "installs the parser exactly on the json versions it proves" do
    if !RustyStdlib.enabled?(:json)
      expect(RustyStdlib.installed).not_to include(:json)
    elsif JSONParity.proven?
      expect(RustyStdlib.installed).to include(:json)
      expect(RustyStdlib.status[:json]).to eq(:installed)
      expect(JSON.parser).to equal(RustyStdlib::JSON.parser)
    else
      expect(RustyStdlib.installed).not_to include(:json)
      expect(RustyStdlib.status[:json]).to match(/json #{Regexp.escape(JSON::VERSION)} is not proven/)
      expect(JSON.parser).to equal(JSON::Ext::Parser)
    end
  end

  # Requiring rusty_stdlib loads no json: libraries that choose a JSON backend by what is
  # loaded (MultiJson prefers Oj unless json is already loaded) choose as before.
  describe "lazy install" do
    report = 'p [defined?(::JSON).inspect, RustyStdlib.status[:json], RustyStdlib::JSON.installed_now?, ' \
             'defined?(::JSON) && ::JSON.parser, RustyStdlib::JSON.generator_status]'

    it "loads no json, and installs when the app requires it, directly or inside another file" do
      skip "json not proven here: #{RustyStdlib.status[:json]}" unless JSONParity.installed?

      installed = %(["\\"constant\\"", :installed, true, #{RustyStdlib::JSON.parser}, #{RustyStdlib::JSON.generator_status.inspect}])
      expect(ruby_run_lines(%(require "rusty_stdlib"\np $LOADED_FEATURES.grep(%r{/json/(common|version|ext)})\n#{report}\nrequire "json"\n#{report})))
        .to eq(["[]", '["nil", :pending, false, nil, "waiting for json to be required"]', installed])
      Dir.mktmpdir do |dir|
        File.write(File.join(dir, "lib.rb"), %(require "json/ext"\n$during = RustyStdlib::JSON.installed_now?\n))
        out = ruby_run_lines(%(require "rusty_stdlib"\nrequire #{File.join(dir, 'lib').inspect}\np $during\n#{report}))
        expect(out).to eq(["false", installed])
      end
      expect(ruby_run_lines(%(require "json"\nrequire "rusty_stdlib"\n#{report}))).to eq([installed])
    end

    # "on Ruby 3.4 (proven: 2.9.1)", as refusals end.
    proven_here = lambda do |versions|
      "on Ruby #{RustyStdlib::RUBY_SERIES} (proven: #{versions.empty? ? 'none' : versions.join(', ')})"
    end
    refused = lambda do |version|
      ["[\"nil\", \"json #{version} (expected, not loaded yet) is not proven " \
       "#{proven_here.call(RustyStdlib::JSON::PROVEN_VERSIONS)}\", false, nil, " \
       "\"json #{version} (expected, not loaded yet) generator is not proven " \
       "#{proven_here.call(RustyStdlib::JSON::GENERATOR_PROVEN_VERSIONS)}\"]"]
    end

    # json 3.1.0 is proven on Ruby 3.3 only, 2.6.x on 3.1 only: the same json on another
    # Ruby has not been through the specs there.
    it "stays out of a json version proven only on another Ruby" do
      others = RustyStdlib::JSON::PROVEN_BY_RUBY.values.flatten.uniq - RustyStdlib::JSON::PROVEN_VERSIONS
      expect(others).not_to be_empty
      Dir.mktmpdir do |dir|
        others.each do |version|
          FileUtils.mkdir_p(File.join(dir, version, "json"))
          File.write(File.join(dir, version, "json", "version.rb"), "module JSON\n  VERSION = '#{version}'\nend\n")
          out = ruby_run_lines(%($LOAD_PATH.unshift(#{File.join(dir, version).inspect})\nrequire "rusty_stdlib"\n#{report}),
                               env: { "RUBYOPT" => "--disable-gems" })
          expect(out).to eq(refused.call(version))
        end
      end
    end

    it "stays out when the json it expects, or the one that loads, is not proven" do
      Dir.mktmpdir do |dir|
        # RubyGems' require loads the newest installed json gem: a json 9.9.9 installed.
        FileUtils.mkdir_p(File.join(dir, "gems", "specifications"))
        File.write(File.join(dir, "gems", "specifications", "json-9.9.9.gemspec"),
                   %(Gem::Specification.new { |s| s.name = "json"; s.version = "9.9.9"; s.summary = "fake"; s.authors = ["x"] }\n))
        gem_path = [File.join(dir, "gems"), *Gem.path].join(File::PATH_SEPARATOR)
        out = ruby_run_lines(%(require "rusty_stdlib"\n#{report}), env: { "GEM_PATH" => gem_path })
        expect(out).to eq(refused.call("9.9.9"))
        # Without RubyGems: json/version.rb on the load path.
        FileUtils.mkdir_p(File.join(dir, "predicted", "json"))
        File.write(File.join(dir, "predicted", "json", "version.rb"), "module JSON\n  VERSION = '9.9.8'\nend\n")
        out = ruby_run_lines(%($LOAD_PATH.unshift(#{File.join(dir, 'predicted').inspect})\nrequire "rusty_stdlib"\n#{report}),
                        env: { "RUBYOPT" => "--disable-gems" })
        expect(out).to eq(refused.call("9.9.8"))

        # A json.rb that loads the real one and then says it is another version.
        real = $LOAD_PATH.resolve_feature_path("json").last
        FileUtils.mkdir_p(File.join(dir, "other"))
        File.write(File.join(dir, "other", "json.rb"),
                   %(require #{real.inspect}\nJSON.send(:remove_const, :VERSION)\nJSON::VERSION = "9.9.9"\n))
        out, err, status = ruby_run(%($LOAD_PATH.unshift(#{File.join(dir, 'other').inspect})\nrequire "rusty_stdlib"\n) +
                                    %(p RustyStdlib.status[:json]\nrequire "json"\n#{report}\np RustyStdlib.installed))
        expect(status).to be_success
        out = out.lines.map(&:chomp)
        next unless out.first == ":pending" # the real json is not proven here either

        # The withdrawal is said under -w (ruby_run passes it), once.
        expect(err).to eq("rusty_stdlib: json stays on the stdlib: json 9.9.9 is not proven " \
                          "#{proven_here.call(RustyStdlib::JSON::PROVEN_VERSIONS)}\n")
        expect(out.drop(1)).to eq(['["\"constant\"", "json 9.9.9 is not proven ' \
                                   "#{proven_here.call(RustyStdlib::JSON::PROVEN_VERSIONS)}\", false, JSON::Ext::Parser, " \
                                   "\"json 9.9.9 generator is not proven " \
                                   "#{proven_here.call(RustyStdlib::JSON::GENERATOR_PROVEN_VERSIONS)}\"]",
                                   "[:digest, :marshal]"])
      end
    end
  end

  it "keeps the gem's parser reachable" do
    expect(RustyStdlib::JSON.stdlib_parser).to equal(JSON::Ext::Parser)
  end

  it "installs the generator exactly where generator_spec.rb proves it, else keeps the gem's" do
    if RustyStdlib.installed.include?(:json) && RustyStdlib::JSON.generator_unsupported_reason.nil?
      expect(RustyStdlib::JSON.generator_status).to eq(:installed)
      ours = RustyStdlib::JSON.generator
      expect(JSON.generator).to equal(ours)
      expect(JSON::State).to equal(ours::State)
      expect(JSON.state).to equal(ours::State)
      # json 3 has no GeneratorMethods: #to_json is its Ruby code, which calls JSON::State.
      unless JSONParity.v3?
        expect(Hash.ancestors.first(2)).to include(ours::GeneratorMethods::Hash)
        expect(String.singleton_class).to include(ours::GeneratorMethods::String::Extend)
      end
    else
      expect(JSON.generator).to equal(JSON::Ext::Generator)
      expect(JSON::State).to equal(JSON::Ext::Generator::State)
      expect(RustyStdlib::JSON.generator_status).to match(/json #{Regexp.escape(JSON::VERSION)} generator is not proven|json is not installed/)
    end
  end

  it "keeps the gem's generator reachable" do
    expect(RustyStdlib::JSON.stdlib_generator).to equal(JSON::Ext::Generator)
  end

  it "leaves JSON working wherever it is (installed or not)" do
    expect(JSON.parse('{"a":[1,2.5,"x",null]}')).to eq("a" => [1, 2.5, "x", nil])
    expect(JSON.parse('{"a":1}', symbolize_names: true)).to eq(a: 1)
    expect { JSON.parse("[1,]") }.to raise_error(JSON::ParserError)
    expect(JSON.generate([1, "a"])).to eq('[1,"a"]')
  end
end
