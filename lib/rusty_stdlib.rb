# frozen_string_literal: true

# rusty_stdlib: JSON, Marshal, Digest and Net::HTTP's codec on Rust, as drop-ins.
#
#   require "rusty_stdlib"          # every module this Ruby supports
#   require "rusty_stdlib/digest"   # one module
#   RustyStdlib.installed           #=> [:digest, ...]
#   RUSTY_STDLIB=off                # keep the stdlib everywhere
require_relative "rusty_stdlib/activation"

RustyStdlib::MODULES.each { |name| require_relative "rusty_stdlib/#{name}" }
