# frozen_string_literal: true

require_relative "json_helper"
require "stringio"

# Helpers for the generator parity specs: run the same generation with json's C
# generator installed (JSON.generator = JSON::Ext::Generator) and with ours, and compare
# the outcome (string bytes, encoding, frozenness, or exception class and message).
module JSONGenParity
  STDLIB = RustyStdlib::JSON.stdlib_generator
  OURS = RustyStdlib::JSON.generator

  def self.proven?
    RustyStdlib::JSON.generator_unsupported_reason.nil?
  end

  def self.unproven_message
    "#{RustyStdlib::JSON.generator_unsupported_reason}: ours stays uninstalled (see shim_spec.rb)"
  end

  # Runs the block with `generator` installed through the gem's seam, then puts back
  # whichever generator was there.
  def self.with_generator(generator)
    saved = JSON.generator
    JSONParity.quietly { JSON.generator = generator } unless saved.equal?(generator)
    yield
  ensure
    JSONParity.quietly { JSON.generator = saved } unless saved.equal?(JSON.generator)
  end

  # `generator`'s own #to_json for `object` (GeneratorMethods::<name>), whatever the
  # object's ancestors say (ours is prepended to the gem's module).
  def self.to_json(generator, object, name, *args)
    # json 3's #to_json is its Ruby code in JSON::GeneratorMethods, which calls JSON::State.
    return object.to_json(*args) if JSONParity.v3?

    method = if generator.equal?(STDLIB)
               RustyStdlib::JSON.stdlib_to_json(name)
             else
               generator::GeneratorMethods.const_get(name).instance_method(:to_json)
             end
    method.bind_call(object, *args)
  end

  # Asserts the same outcome for the block run under each generator (only our run
  # itself under GC stress, not the switching of generators).
  # The warnings printed are compared too, without their "file:line: " (json 2.9 warns
  # about binary strings from whichever Ruby frame called it, the gem's state.rb or ours).
  def expect_gen_parity(&block)
    expected = JSONGenParity.with_generator(STDLIB) do
      Parity.with_warnings { outcome_of { block.call(STDLIB) } }
    end
    actual = JSONGenParity.with_generator(OURS) do
      Parity.with_warnings { outcome_of(stress: Parity::GC_STRESS) { block.call(OURS) } }
    end
    expect(actual).to eq(expected)
    expected
  end

  # Every public way of generating `value` with `opts`, compared one by one.
  ENTRY_POINTS = {
    generate: ->(_g, v, o) { JSON.generate(v, o) },
    # Ours writes JSON.generate(value) without a State (lib/rusty_stdlib/json.rb).
    generate_plain: ->(_g, v, _o) { JSON.generate(v) },
    fast_generate: ->(_g, v, o) { JSON.fast_generate(v, o) },
    pretty_generate: ->(_g, v, o) { JSON.pretty_generate(v, o) },
    # And JSON.pretty_generate(value) without a State (json/generator/plain_pretty.rs).
    pretty_plain: ->(_g, v, _o) { JSON.pretty_generate(v) },
    state_generate: ->(_g, v, o) { JSON::State.new(o).generate(v) },
    generate_with_state: ->(_g, v, o) { JSON.generate(v, JSON::State.new(o)) },
    brackets: ->(_g, v, o) { JSON[v, o] },
    to_json_state: lambda { |g, v, o|
      name = { Hash => :Hash, Array => :Array, String => :String, Integer => :Integer, Float => :Float,
               TrueClass => :TrueClass, FalseClass => :FalseClass, NilClass => :NilClass }
               .fetch(v.class, :Object)
      JSONGenParity.to_json(g, v, name, g::State.new(o))
    }
  }.freeze

  # json 3's: no fast_generate, no GeneratorMethods (#to_json is json's Ruby code, which
  # calls JSON::State), keyword options, JSON.dump and JSON::Coder.
  ENTRY_POINTS_V3 = {
    generate: ->(_g, v, o) { JSON.generate(v, o) },
    generate_plain: ->(_g, v, _o) { JSON.generate(v) },
    pretty_generate: ->(_g, v, o) { JSON.pretty_generate(v, o) },
    state_generate: ->(_g, v, o) { JSON::State.new(o).generate(v) },
    generate_with_state: ->(_g, v, o) { JSON.generate(v, JSON::State.new(o)) },
    brackets: ->(_g, v, o) { JSON[v, o] },
    to_json_state: ->(_g, v, o) { v.to_json(JSON::State.new(o)) },
    to_json_plain: ->(_g, v, _o) { v.to_json },
    dump: ->(_g, v, o) { JSON.dump(v, nil, nil, o.transform_keys { |k| k.is_a?(String) ? k.to_sym : k }) },
    coder: ->(_g, v, o) { JSON::Coder.new(**o.transform_keys(&:to_sym)).dump(v) }
  }.freeze

  # Under GC stress, four entry points stand for the others (they share one path:
  # generate with options is state_generate's).
  STRESS_ENTRY_POINTS = %i[generate_plain pretty_plain state_generate to_json_state].freeze

  def expect_all_entry_points(value, opts = {})
    points = JSONParity.v3? ? ENTRY_POINTS_V3 : ENTRY_POINTS
    opts = JSONGenParity.for_this_json(opts)
    entries = Parity::GC_STRESS ? points.slice(*STRESS_ENTRY_POINTS) : points
    entries.each_value do |entry|
      expect_gen_parity { |g| entry.call(g, value, opts) }
    end
  end

  # json 2's options in json 3's words: escape_slash is script_safe there.
  def self.for_this_json(opts)
    return opts unless JSONParity.v3?

    opts.to_h { |k, v| [k == :escape_slash ? :script_safe : k, v] }
  end
end
