# frozen_string_literal: true

require_relative "json_helper"

# JSON.parse and JSON.generate are swapped for ours in JSON's singleton class (see
# lib/rusty_stdlib/method_swap.rb), so an app's own wrappers and replacements of them
# keep working as they did over the gem's. Each case runs in a child process (wrappers
# stay), and its outcome is compared with the same script without rusty_stdlib.
RSpec.describe "JSON.parse / JSON.generate under an app's wrappers" do
  # Ruby code that wraps or replaces both methods, logging to LOG.
  JSON_WRAPPERS = {
    prepend: <<~RUBY,
      JSON.singleton_class.prepend(Module.new do
        def parse(source, *opts, **kw) = (LOG << :parse; super)
        def generate(obj, opts = nil) = (LOG << :generate; super)
      end)
    RUBY
    alias: <<~RUBY,
      class << JSON
        alias_method :parse_before_wrapper, :parse
        alias_method :generate_before_wrapper, :generate
        def parse(*args, **kw) = (LOG << :parse; parse_before_wrapper(*args, **kw))
        def generate(*args) = (LOG << :generate; generate_before_wrapper(*args))
      end
    RUBY
    # What Oj.mimic_JSON does: new definitions in JSON's singleton class.
    replace: <<~RUBY
      $VERBOSE = nil # "method redefined"
      class << JSON
        def parse(source, _opts = nil) = (LOG << :parse; [:replaced, source])
        def generate(obj, _opts = nil) = (LOG << :generate; "replaced:\#{obj.size}")
      end
      $VERBOSE = true
    RUBY
  }.freeze

  def script(wrapper, order, with_ours)
    <<~RUBY
      LOG = []
      require "json"
      #{order == :before ? wrapper : ''}
      #{with_ours ? 'require "rusty_stdlib"' : ''}
      #{order == :after ? wrapper : ''}
      doc = { "a" => [1, 2.5, nil, "\\u2028"] }
      # json 3 takes keyword options only.
      nil_opts = JSON::VERSION.to_i >= 3 ? [] : [nil]
      results = [JSON.parse('{"a":[1]}'), JSON.parse('[1]', *nil_opts), JSON.generate(doc), JSON.generate(doc, nil),
                 JSON.parse('[2]', symbolize_names: true)]
      plain = defined?(RustyStdlib::JSON) ? %i[parse generate].map { |m| RustyStdlib::JSON.plain?(m) } : nil
      print Marshal.dump([results, LOG, plain])
    RUBY
  end

  JSON_WRAPPERS.each_key do |kind|
    %i[before after].each do |order|
      it "keeps a #{kind} wrapper made #{order} rusty_stdlib working as over the gem" do
        outcomes = run_with_and_without_ours { |ours| script(JSON_WRAPPERS.fetch(kind), order, ours) }
        expect(outcomes.map(&:last)).to eq(["", ""])
        ((results, log, plain), _), ((stdlib_results, stdlib_log, _), _) = outcomes
        expect([results, log]).to eq([stdlib_results, stdlib_log])
        # Ours is swapped in unless the gem's methods were already redefined in JSON's
        # singleton class (replaced, or wrapped by an alias chain).
        expected_plain = kind != :prepend && order == :before ? [false, false] : [true, true]
        # JSON.generate is swapped only with our generator.
        expected_plain[1] = false unless RustyStdlib::JSON.generator_status == :installed
        expect(plain).to eq(expected_plain) if JSONParity.installed?
      end
    end
  end

  # The gem's JSON.generate(obj) is `State.new.generate(obj)` (json 2.9:
  # `State.generate(obj, nil, nil)`) with whatever JSON::State names at that moment;
  # ours writes it natively only while that is our State, and remembers that answer
  # until a constant changes (ext/rusty_stdlib/src/helpers/constants.rs). An app that
  # points JSON::State elsewhere after a first generate, and back, must see its State
  # used and then ours again, as with the gem.
  it "follows JSON::State when an app replaces it between calls" do
    script = lambda do |ours|
      <<~RUBY
        #{'require "rusty_stdlib"' if ours}
        require "json"
        doc = { "a" => [1, "x"] }
        results = [JSON.generate(doc)]
        original = JSON::State
        # json 2.6 calls State.new.generate(obj), json 2.9 State.generate(obj, nil, nil).
        logging = Class.new(original) do
          def self.generate(obj, *) = "logged:" + super
          def generate(obj, *) = "logged:" + super
        end
        $VERBOSE = nil # "already initialized constant"
        JSON.const_set(:State, logging)
        results << JSON.generate(doc) << JSON.generate(doc, nil)
        JSON.const_set(:State, original)
        $VERBOSE = true
        results << JSON.generate(doc)
        results << #{ours ? '(RustyStdlib::JSON.plain?(:generate) || RustyStdlib::JSON.generator_status != :installed)' : 'true'}
        print Marshal.dump(results)
      RUBY
    end
    (ours, ours_err), (stdlib, stdlib_err) = run_with_and_without_ours { |with_ours| script.call(with_ours) }
    expect([ours, ours_err]).to eq([stdlib, stdlib_err])
    expect(stdlib).to eq(['{"a":[1,"x"]}', 'logged:{"a":[1,"x"]}', 'logged:{"a":[1,"x"]}', '{"a":[1,"x"]}', true])
  end

  # json 2.x's JSON.pretty_generate(obj) is `create_pretty_state.generate(obj)`; ours writes
  # that layout itself only while create_pretty_state is json's own method (compared at
  # every call, ext/rusty_stdlib/src/json/generator/plain_pretty.rs). An app that redefines
  # it, makes it private, puts the original back or wraps it must see what the gem does.
  it "follows JSON.create_pretty_state when an app changes it between calls" do
    skip "json 3's JSON.pretty_generate makes no pretty State (it is the gem's there)" if JSONParity.v3?
    script = lambda do |ours|
      <<~RUBY
        #{'require "rusty_stdlib"' if ours}
        require "json"
        doc = { "a" => [1, { "b" => "x" }, []], "c" => {} }
        results = [JSON.pretty_generate(doc)]
        original = JSON.method(:create_pretty_state)
        $VERBOSE = nil # "method redefined"
        def JSON.create_pretty_state = JSON::State.new(indent: "    ", object_nl: "\\n", array_nl: "\\n")
        results << JSON.pretty_generate(doc) << JSON.pretty_generate(doc, nil)
        JSON.define_singleton_method(:create_pretty_state, original)
        results << JSON.pretty_generate(doc)
        JSON.singleton_class.send(:private, :create_pretty_state)
        results << begin
          JSON.pretty_generate(doc)
        rescue NoMethodError => e
          [e.class, e.message]
        end
        JSON.singleton_class.send(:public, :create_pretty_state)
        results << JSON.pretty_generate(doc)
        JSON.singleton_class.prepend(Module.new { def create_pretty_state = super.tap { |s| s.indent = "\\t" } })
        results << JSON.pretty_generate(doc)
        $VERBOSE = true
        results << #{ours ? 'RustyStdlib::JSON.plain?(:pretty_generate)' : 'nil'}
        print Marshal.dump(results)
      RUBY
    end
    (ours, ours_err), (stdlib, stdlib_err) = run_with_and_without_ours { |with_ours| script.call(with_ours) }
    expect([ours_err, stdlib_err]).to eq(["", ""])
    expect(ours[0...-1]).to eq(stdlib[0...-1])
    # The redefinition and the wrapper do change the gem's text (so a fast path that
    # ignored them would fail above).
    expect(stdlib[1]).to include('    "a"')
    expect(stdlib[6]).to include("\t\"a\"")
    expect(stdlib[4].first).to eq(NoMethodError)
    # Swapped in wherever our json 2.x generator is installed.
    expected = RustyStdlib::JSON.generator_status == :installed && !JSONParity.v3?
    expect(ours.last).to eq(expected) if JSONParity.installed?
  end

  # docs/compatibility.md, JSON: the option-less JSON.parse(source) / JSON.generate(obj) make no Parser
  # or State, so a patch of JSON::Parser#parse or JSON::State#generate does not see them
  # (it does with json 2.6.1, whose Ruby code calls both; json 2.9.1 calls neither); every
  # other call is the same on both sides.
  it "skips patches of Parser#parse and State#generate only in the option-less calls" do
    script = lambda do |ours|
      <<~RUBY
        #{'require "rusty_stdlib"' if ours}
        require "json"
        LOG = []
        JSON::State.prepend(Module.new { def generate(*) = (LOG << :generate; super) })
        JSON::Parser.prepend(Module.new { def parse = (LOG << :parse; super) })
        calls = {
          plain_parse: -> { JSON.parse("[1]") }, plain_generate: -> { JSON.generate([1]) },
          nil_generate: -> { JSON.generate([1], nil) },
          parse_opts: -> { JSON.parse("[1]", symbolize_names: true) },
          generate_opts: -> { JSON.generate([1], indent: "") }, dump: -> { JSON.dump([1]) },
          pretty: -> { JSON.pretty_generate([1]) }, load: -> { JSON.load("[1]") },
          to_json: -> { [1].to_json }, state: -> { JSON::State.new.generate([1]) }
        }
        print Marshal.dump(calls.transform_values { |call| LOG.clear; [call.call, LOG.dup] })
      RUBY
    end
    (ours, ours_err), (stdlib, stdlib_err) = run_with_and_without_ours { |with_ours| script.call(with_ours) }
    expect([ours_err, stdlib_err]).to eq(["", ""])
    skipped = JSONParity.installed? ? %i[plain_parse plain_generate nil_generate] : []
    # json 2.x's option-less JSON.pretty_generate too (json 3's is State.generate(obj, opts)).
    skipped << :pretty if defined?(RustyStdlib::JSON) && RustyStdlib::JSON.plain?(:pretty_generate)
    expected = stdlib.to_h { |name, (result, log)| [name, [result, skipped.include?(name) ? [] : log]] }
    expect(ours).to eq(expected)
    expect(stdlib.fetch(:state).last).to eq([:generate])
  end
end
