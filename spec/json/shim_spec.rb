# frozen_string_literal: true

require_relative "json_helper"

RSpec.describe "rusty_stdlib/json shim" do
  it "installs the parser exactly on the json versions it proves" do
    if !RustyStdlib.enabled?(:json)
      expect(RustyStdlib.installed).not_to include(:json)
    elsif JSONParity.proven?
      expect(RustyStdlib.installed).to include(:json)
      expect(RustyStdlib.status[:json]).to eq(:installed)
      expect(JSON.parser).to equal(RustyStdlib::JSON::Parser)
    else
      expect(RustyStdlib.installed).not_to include(:json)
      expect(RustyStdlib.status[:json]).to match(/json #{Regexp.escape(JSON::VERSION)} is not proven/)
      expect(JSON.parser).to equal(JSON::Ext::Parser)
    end
  end

  it "keeps the gem's parser reachable" do
    expect(RustyStdlib::JSON.stdlib_parser).to equal(JSON::Ext::Parser)
  end

  it "installs the generator exactly where generator_spec.rb proves it, else keeps the gem's" do
    if RustyStdlib.installed.include?(:json) && RustyStdlib::JSON.generator_unsupported_reason.nil?
      expect(RustyStdlib::JSON.generator_status).to eq(:installed)
      expect(JSON.generator).to equal(RustyStdlib::JSON::Generator)
      expect(JSON::State).to equal(RustyStdlib::JSON::Generator::State)
      expect(JSON.state).to equal(RustyStdlib::JSON::Generator::State)
      expect(Hash.ancestors.first(2)).to include(RustyStdlib::JSON::Generator::GeneratorMethods::Hash)
      expect(String.singleton_class).to include(RustyStdlib::JSON::Generator::GeneratorMethods::String::Extend)
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
