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

  it "leaves the generator to the gem" do
    expect(JSON.generator).to equal(JSON::Ext::Generator)
  end

  it "leaves JSON working wherever it is (installed or not)" do
    expect(JSON.parse('{"a":[1,2.5,"x",null]}')).to eq("a" => [1, 2.5, "x", nil])
    expect(JSON.parse('{"a":1}', symbolize_names: true)).to eq(a: 1)
    expect { JSON.parse("[1,]") }.to raise_error(JSON::ParserError)
    expect(JSON.generate([1, "a"])).to eq('[1,"a"]')
  end
end
