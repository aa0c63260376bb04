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
  # No public home yet: homepage, source_code_uri and changelog_uri go here once there is
  # one (CHANGELOG.md ships in the gem meanwhile).
  spec.metadata = { "rubygems_mfa_required" => "true" }
  # The extension is proven on CRuby 3.1, 3.3 and 3.4.11 (README, "What is swapped"). On
  # other Rubies it installs and keeps the stdlib in place: JRuby 9.3 (Ruby 2.6 syntax)
  # and TruffleRuby build nothing; a CRuby no spec has proven (3.2, 4.0) builds, and no
  # module goes in. So the floor is what the shim's Ruby needs, not what is proven.
  spec.required_ruby_version = ">= 2.6"

  spec.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "exe/*", "ext/**/{*.rs,Cargo.toml,extconf.rb}", "Cargo.toml", "Cargo.lock",
        "README.md", "CHANGELOG.md", "LICENSE", "docs/**/*.md"]
  end
  spec.bindir = "exe"
  spec.executables = ["rusty_stdlib-bench"]
  spec.require_paths = ["lib"]
  spec.extensions = ["ext/rusty_stdlib/extconf.rb"]
end
