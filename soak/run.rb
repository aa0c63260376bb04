# frozen_string_literal: true

# The soak and fault check: every module under a moving GC, interrupts, fork, threads on
# shared objects, memory over many rounds, and hostile input (soak/checks/*.rb). Each
# check runs in a fresh process with the stdlib and another with ours; the results must be
# the same, and no check may see its own invariants broken.
#
#   ruby soak/run.rb [--short] [check ...]     (rake soak; rake soak:short in `rake test`)
#
# --short (SOAK_SHORT=1) is CI's form, about a minute; the full form takes several and
# gives the figures in README's reliability section.
require "open3"
require "rbconfig"

module SoakRun
  CHECKS = Dir[File.join(__dir__, "checks", "*.rb")].sort.to_h { |path| [File.basename(path, ".rb"), path] }

  module_function

  def main(argv)
    short = argv.delete("--short") || ENV["SOAK_SHORT"] == "1"
    names = argv.empty? ? CHECKS.keys : argv
    unknown = names - CHECKS.keys
    abort "soak: unknown check(s) #{unknown.join(', ')}; known: #{CHECKS.keys.join(', ')}" if unknown.any?

    puts "soak (#{short ? 'short' : 'full'}) on #{RUBY_DESCRIPTION}"
    failures = names.flat_map { |name| run_check(name, short) }
    if failures.empty?
      puts "soak: all #{names.size} checks passed"
    else
      puts "soak: FAILED", failures.map { |f| "  #{f}" }
      exit 1
    end
  end

  # Runs one check on both sides; the failures it found, as lines.
  def run_check(name, short)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    sides = { "stdlib" => "off", "ours" => "" }.to_h do |side, switch|
      env = { "RUSTY_STDLIB" => switch, "SOAK_SHORT" => short ? "1" : "0" }
      out, err, status = Open3.capture3(env, RbConfig.ruby, "-w", CHECKS.fetch(name))
      [side, parse(out, err, status)]
    end
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    failures = sides.flat_map { |side, run| run[:problems].map { |p| "#{name} (#{side}): #{p}" } }
    failures.concat(differences(name, sides["stdlib"][:results], sides["ours"][:results]))
    puts format("  %-11s %-6s %5.1f s  %s", name, failures.empty? ? "ok" : "FAILED", seconds,
                sides["ours"][:figures].map { |k, v| "#{k}: #{v}" }.join("; "))
    sides["stdlib"][:figures].each { |k, v| puts "  #{' ' * 27}stdlib #{k}: #{v}" } if name == "memory"
    failures
  end

  def parse(out, err, status)
    results = {}
    figures = {}
    problems = []
    out.each_line do |line|
      case line.chomp
      when /\Aresult (.+) (\h{64})\z/ then results[Regexp.last_match(1)] = Regexp.last_match(2)
      when /\Afigure\t(.+)\t(.*)\z/ then figures[Regexp.last_match(1)] = Regexp.last_match(2)
      when /\Afailed (.*)\z/ then problems << Regexp.last_match(1)
      end
    end
    problems << "exited #{status.exitstatus || status.termsig && "by signal #{status.termsig}"}" unless status.success?
    problems << "warned or wrote to stderr: #{err.lines.first(3).join.strip}" unless err.empty?
    { results: results, figures: figures, problems: problems }
  end

  def differences(name, stdlib, ours)
    labels = (stdlib.keys | ours.keys)
    labels.reject { |label| stdlib[label] && stdlib[label] == ours[label] }
          .first(10).map { |label| "#{name}: '#{label}' differs from the stdlib's (or is missing on one side)" }
  end
end

SoakRun.main(ARGV.dup)
