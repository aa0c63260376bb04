# frozen_string_literal: true

require "tmpdir"
require "rubygems/package"

# Builds the gem, installs it into a private GEM_HOME as a user would (compiling the
# extension through extconf.rb), and requires it from an unrelated directory.
RSpec.describe "gem build + gem install", :slow do
  root = File.expand_path("..", __dir__)

  # Requires the gem installed in GEM_HOME `home` from the unrelated directory `dir`, as an
  # app would, and checks that Digest is ours and gives the stdlib's digest, with no
  # warning. Returns the path of the extension that loaded.
  # `runner` (e.g. `bundle exec`) runs the Ruby instead, with `env`.
  def expect_installed_from(home, dir, runner: [], env: { "GEM_HOME" => home, "GEM_PATH" => home })
    code = 'require "rusty_stdlib"; p RustyStdlib.installed.include?(:digest); ' \
           'puts $LOADED_FEATURES.grep(/rusty_stdlib\.so\z/); puts Digest::MD5.hexdigest("")'
    env = env.merge("RUBYLIB" => nil, "RUSTY_STDLIB" => nil)
    out, err, status = Open3.capture3(env, *runner, RbConfig.ruby, "-w", "-e", code, chdir: dir)
    expect([status.success?, err]).to eq([true, ""])
    installed, so_path, md5 = out.lines.map(&:chomp)
    expect([installed, md5]).to eq(["true", RustyStdlib::Digest.stdlib(:MD5).hexdigest("")])
    so_path
  end

  it "compiles, installs and loads from any directory" do
    Dir.mktmpdir do |dir|
      gem_file = File.join(dir, "rusty_stdlib.gem")
      _, err, status = Open3.capture3("gem", "build", "rusty_stdlib.gemspec", "--output", gem_file, chdir: root)
      expect(status.success?).to be(true), err

      home = File.join(dir, "gems")
      # Reuse the checkout's compiled dependencies; only our crates build again.
      env = { "CARGO_TARGET_DIR" => ENV.fetch("CARGO_TARGET_DIR", File.join(root, "target")) }
      out, err, status = Open3.capture3(env, "gem", "install", "--local", "--no-document",
                                        "--install-dir", home, gem_file, chdir: dir)
      expect(status.success?).to be(true), out + err
      gem_dir = Dir[File.join(home, "gems", "rusty_stdlib-*")].first
      size = Dir[File.join(gem_dir, "**", "*")].sum { |f| File.file?(f) ? File.size(f) : 0 }
      expect(size).to be < 10 * 1024 * 1024, "the installed gem holds #{size} bytes"
      stray = File.join(RbConfig::CONFIG["sitearchdir"], "rusty_stdlib")
      expect(File.exist?(stray)).to be(false), "gem install wrote outside its GEM_HOME: #{stray}"

      so_path = expect_installed_from(home, dir)
      expect(so_path).to start_with(home)
    end
  end

  it "packs a precompiled gem (bin/build-native-gem) that installs without Rust and loads its build" do
    abi = RUBY_VERSION[/\A\d+\.\d+/]
    Dir.mktmpdir do |dir|
      out, err, status = Open3.capture3(RbConfig.ruby, File.join(root, "bin", "build-native-gem"), abi, "--output", dir)
      expect(status.success?).to be(true), out + err
      gem_file = Dir[File.join(dir, "rusty_stdlib-#{RustyStdlib::VERSION}-#{Gem::Platform.local}.gem")].first
      expect(gem_file).not_to be_nil, out
      spec = Gem::Package.new(gem_file).spec
      expect([spec.extensions, spec.files.grep(/\.so\z/)]).to eq([[], ["lib/rusty_stdlib/#{abi}/rusty_stdlib.so"]])
      expect(spec.required_ruby_version.to_s).to eq(">= #{abi}, < #{abi.split('.').then { |a, b| "#{a}.#{b.to_i + 1}" }}.dev")

      # No Rust on the PATH: nothing may try to build.
      home = File.join(dir, "gems")
      env = { "PATH" => "/usr/bin:/bin", "CARGO_TARGET_DIR" => nil, "GEM_HOME" => nil }
      out, err, status = Open3.capture3(env, RbConfig.ruby, "-S", "gem", "install", "--local", "--no-document",
                                        "--install-dir", home, gem_file, chdir: dir)
      expect(status.success?).to be(true), out + err
      expect(out + err).not_to include("Building native extensions")

      so_path = expect_installed_from(home, dir)
      expect(so_path).to eq(File.join(home, "gems", spec.full_name, "lib", "rusty_stdlib", abi, "rusty_stdlib.so"))
    end
  end

  # Bundler builds a git: source's extension as `gem install` does (a path: source it does
  # not: spec/shim_spec.rb checks the warning's hint there). Of this checkout's HEAD commit.
  it "installs from a Bundler git: source, building the extension, and loads it from there" do
    git_ok = system("git", "-C", root, "rev-parse", "HEAD", out: File::NULL, err: File::NULL)
    skip "needs git and this checkout's history, which this environment lacks" unless git_ok

    head = IO.popen(["git", "-C", root, "rev-parse", "HEAD"], &:read).strip
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "Gemfile"), %(source "https://rubygems.org"\ngem "rusty_stdlib", git: #{root.inspect}, ref: #{head.inspect}\n))
      env = { "BUNDLE_GEMFILE" => File.join(dir, "Gemfile"), "BUNDLE_PATH" => File.join(dir, "vendor"),
              "BUNDLE_APP_CONFIG" => File.join(dir, ".bundle"), "BUNDLE_DISABLE_SHARED_GEMS" => "true",
              "BUNDLE_SILENCE_ROOT_WARNING" => "true", "RUBYOPT" => nil,
              # Reuse the checkout's compiled dependencies; only our crates build again.
              "CARGO_TARGET_DIR" => ENV.fetch("CARGO_TARGET_DIR", File.join(root, "target")) }
      bundle = [RbConfig.ruby, "-S", "bundle"]
      out, err, status = Open3.capture3(env, *bundle, "install", "--local", chdir: dir)
      expect(status.success?).to be(true), out + err
      so_path = expect_installed_from(nil, dir, runner: [*bundle, "exec"], env: env)
      expect(so_path).to start_with(File.join(dir, "vendor"))
    end
  end

  # The run above shares the checkout's cargo directory (CARGO_TARGET_DIR) to save a full
  # build; a user's install has its own, which `make install` removes afterwards.
  it "builds in a cargo directory of its own unless given one, and removes it on install" do
    Dir.mktmpdir do |dir|
      _, err, status = Open3.capture3({ "CARGO_TARGET_DIR" => nil }, RbConfig.ruby,
                                      File.join(root, "ext", "rusty_stdlib", "extconf.rb"), chdir: dir)
      expect(status.success?).to be(true), err
      own = File.join(root, "ext", "rusty_stdlib", "target")
      install = File.read(File.join(dir, "Makefile"))[/^install:.*?\n\n/m]
      expect(install.lines.map(&:strip).reject(&:empty?).last).to eq("rm -rf #{own}")
    end
  end
end
