# frozen_string_literal: true

require "open3"
require "rbconfig"

# Runs Ruby code in a fresh process (the shim's effects are process-wide and one-way).
module Subprocess
  LIB = File.expand_path("../../lib", __dir__)

  # Returns [stdout, stderr, status] of `ruby -w -I lib -e code` with `env` added.
  def ruby_run(code, env: {}, lib: LIB, chdir: Dir.tmpdir)
    env = { "RUSTY_STDLIB" => nil }.merge(env)
    Open3.capture3(env, RbConfig.ruby, "-w", "-I", lib, "-e", code, chdir: chdir)
  end
end

RSpec.configure { |c| c.include Subprocess }
