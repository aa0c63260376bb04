# frozen_string_literal: true

require "fileutils"
require "tmpdir"

RSpec.describe "The shim (lib/rusty_stdlib)" do
  # Prints what a user would look at: installed modules, whose SHA256 this is, a digest
  # (requiring digest first, as an app does: rusty_stdlib loads it only to install ours).
  report = <<~RUBY
    p RustyStdlib.installed
    require "digest"
    p Digest::SHA256.instance_method(:update).owner == Digest::Base ? :stdlib : :ours
    puts Digest::SHA256.hexdigest("abc")
  RUBY
  abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

  it "installs every module on require, without warnings under ruby -w" do
    out, err, status = ruby_run(%(require "rusty_stdlib"\n#{report}))
    expect([err, status.success?]).to eq(["", true])
    # json and net_http are :pending there until required (the report requires neither).
    expect(out.lines.map(&:chomp)).to eq([(RustyStdlib.installed - %i[json net_http]).inspect, ":ours", abc])
  end

  it "works when digest was required before, or after" do
    before, = ruby_run(%(require "digest/sha2"\nrequire "rusty_stdlib"\n#{report}))
    after, = ruby_run(%(require "rusty_stdlib"\nrequire "digest"\nrequire "digest/sha2"\n#{report}))
    expect(before.lines[1..]).to eq([":ours\n", "#{abc}\n"])
    expect(after.lines[1..]).to eq([":ours\n", "#{abc}\n"])
  end

  it "installs one module with require \"rusty_stdlib/digest\"" do
    out, err, = ruby_run(%(require "rusty_stdlib/digest"\n#{report}))
    expect(err).to eq("")
    expect(out.lines.first(2)).to eq(["[:digest]\n", ":ours\n"])
  end

  it "keeps the stdlib with RUSTY_STDLIB=off, and picks modules by name" do
    # Off, it loads none of the libraries it would replace.
    loaded, err, = ruby_run(%(require "rusty_stdlib"\np $LOADED_FEATURES.grep(%r{/(digest|json|net/http|uri)\\.(rb|so)\\z}).grep_v(/rusty_stdlib/)),
                            env: { "RUSTY_STDLIB" => "off" })
    expect([loaded, err]).to eq(["[]\n", ""])
    off, err, = ruby_run(%(require "rusty_stdlib"\n#{report}\np RustyStdlib.status[:digest]),
                         env: { "RUSTY_STDLIB" => "off" })
    expect(err).to eq("")
    expect(off.lines.map(&:chomp)).to eq(["[]", ":stdlib", abc, '"disabled by RUSTY_STDLIB=off"'])

    picked, = ruby_run(%(require "rusty_stdlib"\n#{report}), env: { "RUSTY_STDLIB" => "json,digest" })
    expect(picked.lines[1]).to eq(":ours\n")
    other, = ruby_run(%(require "rusty_stdlib"\n#{report}), env: { "RUSTY_STDLIB" => "json" })
    expect(other.lines[1]).to eq(":stdlib\n")
  end

  # Versions proven on another Ruby (each Ruby's own digest) are not proven on this one.
  it "stays out of a digest version it has not proven, on this Ruby" do
    others = RustyStdlib::Digest::PROVEN_BY_RUBY.values.flatten - RustyStdlib::Digest::PROVEN_VERSIONS
    expect(others).not_to be_empty
    ["9.9.9", *others].each do |version|
      out, err, = ruby_run(<<~RUBY)
        require "digest"
        Digest.send(:remove_const, :VERSION)
        Digest::VERSION = #{version.inspect}
        require "rusty_stdlib"
        #{report}
        p RustyStdlib.status[:digest]
      RUBY
      expect(err).to eq("")
      reason = "digest #{version} is not proven on Ruby #{RustyStdlib::RUBY_SERIES} " \
               "(proven: #{RustyStdlib::Digest::PROVEN_VERSIONS.join(', ')})"
      expect(out.lines[1..].map(&:chomp)).to eq([":stdlib", abc, reason.inspect])
    end
  end

  # An installed gem's layout without its build for this Ruby: a source gem (ext/ beside
  # lib/, no Rakefile) or a precompiled one (builds for other Rubies only).
  def copy_installed_gem(dir, ext:, builds: [])
    lib = File.join(dir, "lib")
    Dir[File.join(Subprocess::LIB, "**", "*.rb")].each do |rb|
      dest = File.join(lib, rb.delete_prefix(Subprocess::LIB))
      FileUtils.mkdir_p(File.dirname(dest))
      FileUtils.cp(rb, dest)
    end
    if ext
      FileUtils.mkdir_p(File.join(dir, "ext", "rusty_stdlib"))
      FileUtils.touch(File.join(dir, "ext", "rusty_stdlib", "extconf.rb"))
    end
    builds.each do |abi|
      FileUtils.mkdir_p(File.join(lib, "rusty_stdlib", abi))
      FileUtils.touch(File.join(lib, "rusty_stdlib", abi, "rusty_stdlib.so"))
    end
    lib
  end

  it "warns once and keeps the stdlib when the native extension cannot load" do
    Dir.mktmpdir do |dir|
      lib = copy_installed_gem(dir, ext: true)
      code = %(require "rusty_stdlib"\nrequire "rusty_stdlib/digest"\n#{report}\np RustyStdlib.status[:digest])
      out, err, status = ruby_run(code, lib: lib, env: { "RUBYLIB" => nil })
      expect(status.success?).to be(true)
      expect(err.lines.size).to eq(1)
      # Both paths it tried, and the command that builds it for this copy.
      abi = RUBY_VERSION[/\A\d+\.\d+/]
      expect(err).to start_with("rusty_stdlib: native extension unavailable (neither rusty_stdlib/#{abi}/rusty_stdlib " \
                                "nor rusty_stdlib/rusty_stdlib could be loaded: cannot load such file")
      expect(err).to end_with("the stdlib stays in place. To build it: gem pristine rusty_stdlib --version #{RustyStdlib::VERSION}\n")
      lines = out.lines.map(&:chomp)
      expect(lines.first(3)).to eq(["[]", ":stdlib", abc])
      expect(lines.last).to start_with('"native extension unavailable (neither')
    end
  end

  it "names the builds a precompiled gem has, and the source gem, on another Ruby" do
    Dir.mktmpdir do |dir|
      lib = copy_installed_gem(dir, ext: false, builds: %w[9.8 9.9])
      _, err, status = ruby_run(%(require "rusty_stdlib"\np RustyStdlib.installed), lib: lib, env: { "RUBYLIB" => nil })
      expect(status.success?).to be(true)
      expect(err).to end_with("the stdlib stays in place. This precompiled gem has builds for Ruby 9.8, 9.9. To build one " \
                              "for this Ruby: gem install rusty_stdlib --version #{RustyStdlib::VERSION} --platform ruby\n")
    end
  end

  it "leaves the stdlib in place on Ruby engines other than CRuby" do
    out, err, = ruby_run(<<~RUBY)
      Object.send(:remove_const, :RUBY_ENGINE)
      RUBY_ENGINE = "truffleruby"
      require "rusty_stdlib"
      #{report}
      p RustyStdlib.status.values.uniq
    RUBY
    # Expected there, so only -w (which ruby_run passes) shows it.
    expect(err).to eq("rusty_stdlib: truffleruby has no CRuby C API; the stdlib stays in place\n")
    expect(out.lines.values_at(0, 1, -1)).to eq(["[]\n", ":stdlib\n", %(["native extension unavailable (truffleruby has no CRuby C API)"]\n)])
  end

  it "reports the state of every module" do
    expect(RustyStdlib.status.keys).to eq(RustyStdlib::MODULES)
    expect(RustyStdlib.status[:digest]).to eq(:installed)
  end

  it "warns once about a RUSTY_STDLIB word it does not know, and then keeps the stdlib everywhere" do
    out, err, status = ruby_run(%(require "rusty_stdlib"\n#{report}\np RustyStdlib.status.values.uniq),
                                env: { "RUSTY_STDLIB" => "jsno,digest" })
    expect(status).to be_success
    expect(err.lines.size).to eq(1)
    expect(err).to start_with('rusty_stdlib: RUSTY_STDLIB=jsno,digest: unknown "jsno", so every module keeps the stdlib. ' \
                              "RUSTY_STDLIB takes module names (digest, json, marshal, net_http)")
    expect(out.lines.map(&:chomp)).to eq(["[]", ":stdlib", abc, '["disabled: RUSTY_STDLIB=jsno,digest has unknown \\"jsno\\""]'])
  end

  it "says :pending for a module that waits for its library (json, net/http), :installed once it loads" do
    lazy = %i[json net_http].select { |name| %i[installed pending].include?(RustyStdlib.status[name]) }
    skip "neither json nor net_http is proven here" if lazy.empty?

    states = "p RustyStdlib.status.values_at(#{lazy.map(&:inspect).join(', ')})"
    out = ruby_run_lines(%(require "rusty_stdlib"\n#{states}\nrequire "json"\nrequire "net/http"\n#{states}))
    expect(out).to eq([Array.new(lazy.size, :pending).inspect, Array.new(lazy.size, :installed).inspect])
  end

  it "makes each module's install! safe to call in any state" do
    # Already in: nothing changes. Refused (RUSTY_STDLIB=off, or no extension): the stdlib
    # keeps working and install! says false.
    out = ruby_run_lines(<<~RUBY, env: { "RUSTY_STDLIB" => "off" })
      require "rusty_stdlib"
      p [RustyStdlib::Marshal.install!, RustyStdlib::Digest.install!, RustyStdlib::JSON.install!, RustyStdlib::NetHttp.install!]
      p Marshal.load(Marshal.dump([1, "a"]))
      p RustyStdlib.installed
      p RustyStdlib::Marshal.respond_to?(:swap_in!)
    RUBY
    expect(out).to eq(["[false, false, false, false]", '[1, "a"]', "[]", "false"])
    out = ruby_run_lines(%(require "rusty_stdlib"\np RustyStdlib::Marshal.install!\np Marshal.load(Marshal.dump(:x))))
    expect(out).to eq(%w[true :x])
  end

  describe ".enabled?" do
    it "reads RUSTY_STDLIB" do
      expect(RustyStdlib.enabled?(:net_http, "net-http")).to be(true)
      expect(RustyStdlib.enabled?(:digest, "digest jsno")).to be(false)
      expect(RustyStdlib.enabled?(:digest, nil)).to be(true)
      expect(RustyStdlib.enabled?(:digest, "")).to be(true)
      expect(RustyStdlib.enabled?(:digest, "off")).to be(false)
      expect(RustyStdlib.enabled?(:digest, "OFF")).to be(false)
      expect(RustyStdlib.enabled?(:digest, "json, digest")).to be(true)
      expect(RustyStdlib.enabled?(:digest, "json")).to be(false)
      expect(RustyStdlib.enabled?(:digest, "all")).to be(true)
    end
  end
end
