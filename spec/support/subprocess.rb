# frozen_string_literal: true

require "open3"
require "rbconfig"

# Runs Ruby code in a fresh process (the shim's effects are process-wide and one-way).
module Subprocess
  LIB = File.expand_path("../../lib", __dir__)

  # A child that runs longer than this is killed and its run fails, so a hang (a deadlock
  # between Ractors, say) fails the spec instead of stalling CI until its limit.
  CHILD_SECONDS = 300

  # Returns [stdout, stderr, status] of `ruby -w -I lib -e code` with `env` added.
  def ruby_run(code, env: {}, lib: LIB, chdir: Dir.tmpdir, seconds: CHILD_SECONDS)
    env = { "RUSTY_STDLIB" => nil }.merge(env)
    Open3.popen3(env, RbConfig.ruby, "-w", "-I", lib, "-e", code, chdir: chdir) do |stdin, stdout, stderr, child|
      stdin.close
      readers = [stdout, stderr].map { |io| Thread.new { io.read } }
      unless child.join(seconds)
        Process.kill("KILL", child.pid)
        child.join
        readers.each(&:join)
        return [readers[0].value, "#{readers[1].value}\nchild killed: still running after #{seconds} s", child.value]
      end
      [readers[0].value, readers[1].value, child.value]
    end
  end

  # `ruby_run` of code that must succeed without a word on stderr: its stdout's lines.
  def ruby_run_lines(code, env: {})
    out, err, status = ruby_run(code, env: env)
    expect([err, status.success?]).to eq(["", true])
    out.lines.map(&:chomp)
  end

  # Runs the code the block gives for `ours` = true (it should require rusty_stdlib) and
  # for `ours` = false (the stdlib alone), each in its own process that must succeed and
  # print a Marshal dump. Returns [[ours_value, ours_stderr], [stdlib_value, stdlib_stderr]].
  def run_with_and_without_ours
    [true, false].map do |ours|
      out, err, status = ruby_run(yield(ours))
      expect(status).to be_success, err
      [Marshal.load(out), err]
    end
  end
end

RSpec.configure { |c| c.include Subprocess }
