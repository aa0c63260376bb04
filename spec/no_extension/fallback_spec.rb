# frozen_string_literal: true

require "open3"
require "rbconfig"
require "tmpdir"

# rusty_stdlib on any Ruby, with or without its native extension. `rake test:jruby` runs
# this file on Debian's JRuby (no CRuby C API, as on TruffleRuby), with no spec_helper:
# there the gem must install without compiling and keep every stdlib module in place,
# quietly. On CRuby it runs in `rake spec` too (the app's output is unchanged there).
RSpec.describe "rusty_stdlib on #{RUBY_ENGINE} #{RUBY_VERSION}" do
  root = File.expand_path("../..", __dir__)
  lib = File.join(root, "lib")
  app = File.join(__dir__, "app.rb")
  off_cruby = RUBY_ENGINE != "ruby"
  clean_env = { "RUSTY_STDLIB" => nil, "RUBYOPT" => nil, "RUBYLIB" => nil }

  def run_ruby(env, *args, chdir: Dir.tmpdir)
    Open3.capture3(env, RbConfig.ruby, *args, chdir: chdir)
  end

  it "leaves an app's output unchanged" do
    plain = run_ruby(clean_env, app)
    ours = run_ruby(clean_env, "-I", lib, "-r", "rusty_stdlib", app)
    expect(plain.last).to be_success, plain[1]
    expect(ours[0..1]).to eq(plain[0..1])
    expect(ours.last.exitstatus).to eq(plain.last.exitstatus)
  end

  # On a Ruby without the extension, safe_load's check is the pure-Ruby walk.
  it "gives RustyStdlib::Marshal.safe_load, which refuses before any hook runs" do
    code = <<~'RUBY'
      require "rusty_stdlib"; require "tmpdir"
      class Hook
        def initialize(path); @path = path; end
        def _dump(_level); @path; end
        def self._load(path); File.write(path, "ran"); end
      end
      value = [1, "caf\u00e9", :s, { "k" => [nil, 2.5, 2**70] }]
      p RustyStdlib::Marshal.safe_load(Marshal.dump(value)) == Marshal.load(Marshal.dump(value))
      Dir.mktmpdir do |dir|
        path = File.join(dir, "ran")
        begin
          RustyStdlib::Marshal.safe_load(Marshal.dump(Hook.new(path)))
        rescue RustyStdlib::Marshal::DisallowedClass => e
          p e.message
        end
        p File.exist?(path)
      end
      p RustyStdlib::Marshal.safe_load(Marshal.dump(Time.at(0)), permitted_classes: [Time]) == Time.at(0)
    RUBY
    out, err, status = run_ruby(clean_env, "-I", lib, "-e", code)
    expect([err, status.success?]).to eq(["", true])
    expect(out.lines.map(&:chomp)).to eq(["true", '"Tried to load unspecified class: Hook"', "false", "true"])
  end

  context "without the C API", if: off_cruby do
    reason = "native extension unavailable (#{RUBY_ENGINE} has no CRuby C API)"

    it "requires the shim and each module without a word; each says why it stays out" do
      %w[rusty_stdlib rusty_stdlib/digest rusty_stdlib/json rusty_stdlib/marshal rusty_stdlib/net_http].each do |name|
        code = %(require #{name.inspect}; p RustyStdlib.installed; p RustyStdlib.status)
        out, err, status = run_ruby(clean_env, "-I", lib, "-e", code)
        expect([err, status.success?]).to eq(["", true]), "require #{name}: #{err}"
        installed, statuses = out.lines.map { |line| eval(line) } # rubocop:disable Security/Eval
        expect(installed).to eq([])
        picked = name == "rusty_stdlib" ? %i[digest json marshal net_http] : [name.split("/").last.to_sym]
        expect(statuses.slice(*picked).values.uniq).to eq([reason]), "require #{name}: #{statuses}"
      end
    end

    it "says so in one line under -w" do
      _, err, status = run_ruby(clean_env, "-W2", "-I", lib, "-e", 'require "rusty_stdlib"')
      expect(status).to be_success
      expect(err).to eq("rusty_stdlib: #{RUBY_ENGINE} has no CRuby C API; the stdlib stays in place\n")
    end

    it "builds and installs as a gem without compiling, and loads from it" do
      Dir.mktmpdir do |dir|
        gem_file = File.join(dir, "rusty_stdlib.gem")
        env = clean_env.merge("GEM_HOME" => File.join(dir, "gems"), "GEM_PATH" => File.join(dir, "gems"),
                              "PATH" => "/usr/bin:/bin") # no cargo: nothing may need it
        out, err, status = run_ruby(env, "-S", "gem", "build", "rusty_stdlib.gemspec", "--output", gem_file,
                                    chdir: root)
        expect(status).to be_success, out + err
        # In its own folder: `gem install --local` also reads every *.gem in the current one.
        out, err, status = run_ruby(env, "-S", "gem", "install", "--local", "--no-document", gem_file, chdir: dir)
        expect(status).to be_success, out + err
        out, err, status = run_ruby(env, "-e", 'require "rusty_stdlib"; p RustyStdlib.installed; ' \
                                               'puts $LOADED_FEATURES.grep(%r{/rusty_stdlib\.rb\z})')
        expect([err, status.success?]).to eq(["", true])
        expect(out.lines.map(&:chomp)).to match(["[]", start_with(File.join(dir, "gems"))])
      end
    end
  end
end
