# frozen_string_literal: true

# Differential fuzzing: seeded random and mutated inputs go through the stdlib and through
# ours, and the outcomes are compared the way the parity specs compare them (values with
# classes, encodings and frozenness; exceptions by class and message).
#
#   ruby fuzz/run.rb [--seconds=N] [--seed=S] [target ...]    (or: rake fuzz)
#
# Targets (fuzz/targets/): json_parse, json_generate, marshal_dump, marshal_load, marshal_safe_load,
# net_http_request, net_http_response, uri_form, digest; all by default, each for N seconds
# (default 30). Open-ended, so not part of `rake test`: the specs keep the cases that
# matter. Each mismatch is written to target/fuzz/<target>-<seed>.txt with the input that
# produced it; the exit status is 1 if there was any.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "rusty_stdlib"
abort "fuzz: the native extension did not load; run `rake compile` first" unless RustyStdlib.native?

spec = File.expand_path("../spec", __dir__)
require File.join(spec, "support", "parity")
require_relative "target"
require_relative "mutation"
Dir[File.join(__dir__, "targets", "*.rb")].sort.each { |f| require f }

module Fuzz
  # Where the shared test data lives (as spec/spec_helper.rb finds it); nil on a user's
  # machine, where targets that read documents generate their own.
  CORPUS_DIR = [ENV["RUSTY_CORPUS"], File.expand_path("../../shared/corpus", __dir__)]
               .compact.find { |dir| File.directory?(dir) }
  OUT_DIR = File.expand_path("../target/fuzz", __dir__)
  BATCH = 200
  MAX_REPORTED = 20

  def self.main(argv)
    seconds = 30
    seed = Random.new_seed % 2**32
    names = []
    argv.each do |arg|
      case arg
      when /\A--seconds=(\d+)\z/ then seconds = Integer(Regexp.last_match(1))
      when /\A--seed=(\d+)\z/ then seed = Integer(Regexp.last_match(1))
      else names << arg
      end
    end
    names = TARGETS.keys if names.empty?
    unknown = names - TARGETS.keys
    abort "fuzz: unknown target(s) #{unknown.join(', ')}; known: #{TARGETS.keys.join(', ')}" if unknown.any?

    puts "fuzz: seed #{seed}, #{seconds} s per target, corpus: #{CORPUS_DIR || 'none (generated documents)'}"
    failed = names.count { |name| !run_target(name, TARGETS.fetch(name), seed, seconds) }
    exit(failed.zero? ? 0 : 1)
  end

  # The module each target compares with the stdlib, by the target's name.
  def self.module_of(name)
    case name
    when /\Ajson_/ then :json
    when /\Amarshal_/ then :marshal
    when /\Anet_http_/, "uri_form" then :net_http
    else name.to_sym
    end
  end

  # Why the target's module is not ours now (so the target would compare the stdlib with
  # itself), or nil. JSON and the Net::HTTP pieces go in when the targets require json
  # and net/http.
  def self.not_ours(name)
    mod = module_of(name)
    return "#{mod} not installed: #{RustyStdlib.status[mod]}" unless RustyStdlib.status[mod] == :installed
    if mod == :json && !RustyStdlib::JSON.installed_now?
      return "json not installed yet: #{RustyStdlib::JSON.generator_status}"
    end

    missing = mod == :net_http ? RustyStdlib::NetHttp::SEAMS.map(&:first) - RustyStdlib::NetHttp.pieces : []
    missing.empty? ? nil : "net_http pieces not installed: #{missing.join(', ')}"
  end

  # Runs batches of cases until the time is up; true when every outcome matched.
  def self.run_target(name, klass, seed, seconds)
    target = klass.new(Random.new(seed), CORPUS_DIR)
    if (reason = not_ours(name) || target.skip_reason)
      puts "#{name}: skipped (#{reason})"
      return true
    end
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    count = mismatches = 0
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline && mismatches < MAX_REPORTED
      cases = Array.new(BATCH) { target.next_case }
      expected, actual = target.outcomes(cases)
      cases.each_index do |i|
        count += 1
        next if expected[i] == actual[i]

        mismatches += 1
        report(name, seed, cases[i], expected[i], actual[i])
      end
    end
    file = mismatches.zero? ? "" : " (#{File.join(OUT_DIR, "#{name}-#{seed}.txt")})"
    puts "#{name}: #{count} cases, #{mismatches} mismatches#{file}"
    mismatches.zero?
  end

  def self.report(name, seed, kase, expected, actual)
    Dir.mkdir(OUT_DIR) unless File.directory?(OUT_DIR)
    File.open(File.join(OUT_DIR, "#{name}-#{seed}.txt"), "a") do |f|
      f.puts "input:  #{kase.inspect}", "stdlib: #{expected.inspect}", "ours:   #{actual.inspect}", ""
    end
  end
end

Fuzz.main(ARGV) if $PROGRAM_NAME == __FILE__
