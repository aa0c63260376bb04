# frozen_string_literal: true

# A hook that keeps a continuation (`callcc`) and calls it after the JSON call ended
# returns into the ended walk a second time. The json gem's C code then reads its freed
# buffer (json 2.6.1 crashes, so there is no stdlib outcome to compare with); ours raises
# instead of writing into memory it gave back, and later calls are unaffected.
module RustyJsonReenter
  class ToJson
    attr_reader :cc

    def to_json(*)
      callcc { |c| @cc = c }
      '"x"'
    end
  end

  class Created
    class << self
      attr_accessor :cc
    end

    def self.json_creatable? = true

    def self.json_create(hash)
      callcc { |c| self.cc ||= c }
      hash["v"]
    end
  end
end

RSpec.describe "JSON and continuations" do
  before(:all) do
    verbose, $VERBOSE = $VERBOSE, nil
    require "continuation"
    $VERBOSE = verbose
  end

  before { skip "rusty_stdlib's JSON is not installed" unless RustyStdlib.installed.include?(:json) }

  # Runs `call`, then the continuation it left, once; what the call returned and raised.
  def reenter(call, continuation)
    results = []
    error = begin
      results << call.call
      continuation.call.call if results.size == 1
      nil
    rescue RuntimeError => e
      e
    end
    [results, error&.message]
  end

  it "raises when a continuation returns into a finished generation" do
    skip "the gem's generator is in place: #{RustyStdlib::JSON.generator_status}" unless RustyStdlib::JSON.generator_status == :installed
    obj = RustyJsonReenter::ToJson.new
    results, message = reenter(-> { JSON.generate([obj, "after" * 20, { "k" => 1 }]) }, -> { obj.cc })
    expect(results).to eq([%(["x","#{'after' * 20}",{"k":1}])])
    expect(message).to eq("JSON.generate reentered at to_json")
    expect(JSON.generate(["still", { "fine" => [1, 2.5] }])).to eq('["still",{"fine":[1,2.5]}]')
  end

  it "raises when a continuation returns into a finished parse" do
    # json 3's options that call user code during a parse (on_load, decimal_class) are
    # the gem's: ours runs none.
    skip "json #{JSON::VERSION} has no create_additions" if JSON::VERSION.to_i >= 3
    RustyJsonReenter::Created.cc = nil
    doc = '[{"json_class":"RustyJsonReenter::Created","v":1},"after",{"k":[2]}]'
    parse = -> { JSON.parse(doc, create_additions: true) }
    results, message = reenter(parse, -> { RustyJsonReenter::Created.cc })
    expect(results).to eq([[1, "after", { "k" => [2] }]])
    expect(message).to eq("JSON.parse reentered at json_create")
    expect(JSON.parse('{"still":[1,"fine"]}')).to eq({ "still" => [1, "fine"] })
  end
end
