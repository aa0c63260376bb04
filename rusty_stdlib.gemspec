# frozen_string_literal: true

require_relative "lib/rusty_stdlib/version"

Gem::Specification.new do |spec|
  spec.name = "rusty_stdlib"
  spec.version = RustyStdlib::VERSION
  spec.authors = ["rusty_stdlib developers"]
  spec.summary = "Drop-in Rust implementations of Ruby's JSON, Marshal, Digest and Net::HTTP codec"
  spec.description = "A native extension (Rust, magnus) that swaps faster, byte-identical " \
                     "implementations in for stdlib modules on the Ruby versions it has proven."
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/**/{*.rs,Cargo.toml,extconf.rb}", "Cargo.toml", "Cargo.lock",
        "README.md", "LICENSE"]
  end
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/rusty_stdlib/extconf.rb"]
end
