# frozen_string_literal: true

require_relative "json_helper"

# When json was loaded before rusty_stdlib, the app may already have changed #to_json by
# then: ActiveSupport 7.1+ includes a module defining it into Hash, Array, String and the
# other core classes (above json's own modules, so that `obj.to_json` runs its encoder),
# and an app may define a class's #to_json itself. Installing ours must leave both in
# effect, as they are with the gem alone.
RSpec.describe "JSON generator installed after the app changed #to_json" do
  def script(ours)
    <<~RUBY
      require "json"
      module Wrapper
        def to_json(state = nil, *)
          state.is_a?(::JSON::State) ? super : "wrapped " + super
        end
      end
      # In ActiveSupport's order: a class that has Wrapper through Object would not take it again.
      [Object, Hash, Array, String, Integer, Float, NilClass, TrueClass, FalseClass].reverse_each { |c| c.include(Wrapper) }
      class Float
        def to_json(*) = '"own Float#to_json"'
      end
      class Integer
        def to_json(*) = '"own Integer#to_json"'
        protected :to_json
      end
      #{'require "rusty_stdlib"' if ours}
      generator = JSON.generator.name
      values = [
        { "a" => [1, "s", nil, true] }.to_json, [1, 2.5].to_json, "s".to_json, nil.to_json, true.to_json,
        false.to_json, Object.new.to_json.sub(/0x\\h+/, ""), (1.to_json rescue $!.class), 1.5.to_json,
        JSON.generate([{ "a" => 1.5 }, 2]), JSON.pretty_generate({ "a" => [1.5] }),
        [Hash, Array, String, Object, NilClass].map { |c| c.instance_method(:to_json).owner == Wrapper },
        Integer.protected_method_defined?(:to_json), Float.public_method_defined?(:to_json)
      ]
      print Marshal.dump([generator, values])
    RUBY
  end

  it "keeps modules included since json loaded above ours, and classes' own #to_json" do
    skip "the gem's generator stays: #{RustyStdlib::JSON.generator_status}" unless RustyStdlib::JSON.generator_unsupported_reason.nil?
    (ours, ours_err), (stdlib, stdlib_err) = run_with_and_without_ours { |o| script(o) }
    expect([ours_err, stdlib_err]).to eq(["", ""])
    expect([stdlib[0], ours[0]]).to eq(["JSON::Ext::Generator", RustyStdlib::JSON.generator.name])
    expect(ours[1]).to eq(stdlib[1])
    expect(stdlib[1][0]).to start_with("wrapped ") # the script tests what it means to
  end
end
