# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))

# Under `bundle exec rspec`, Ruby processes the specs start (gem builds, fresh shims, bench
# workers) must not inherit Bundler's RUBYOPT: it would put this checkout's lib/ ahead of
# the copy they are meant to test. This process has its load path already.
ENV.replace(Bundler.unbundled_env) if defined?(Bundler) && Bundler.respond_to?(:unbundled_env)
require "rusty_stdlib"

unless RustyStdlib.native?
  abort "spec: the native extension did not load; run `rake compile` first (specs would " \
        "otherwise compare the stdlib with itself)"
end

Dir[File.join(__dir__, "support", "**", "*.rb")].sort.each { |f| require f }

# Where the shared test data lives (../shared beside the checkout); nil on a user's machine.
CORPUS_DIR = [ENV["RUSTY_CORPUS"], File.expand_path("../../shared/corpus", __dir__)]
             .compact.find { |dir| File.directory?(dir) }

RSpec.configure do |config|
  config.include Parity
  config.disable_monkey_patching!
  config.order = :random
  # Random test data must not depend on the order seed: every example starts from the
  # same Kernel.rand state, so a failure reproduces on any run.
  config.before { Kernel.srand(20_261_129) }
  config.before { Parity.new_example! }
  # rake spec:gc_stress names the example a shard was in if CI stops the run.
  if (trace = ENV.fetch("RUSTY_SPEC_TRACE", nil))
    config.before { |example| File.write(trace, "#{example.location} #{example.full_description}\n") }
  end
  config.filter_run_when_matching :focus
  config.expect_with(:rspec) { |c| c.max_formatted_output_length = 2000 }
end
