# frozen_string_literal: true

require "digest"
require "tempfile"

RSpec.describe "Digest parity" do
  base_names = %i[MD5 SHA1 SHA256 SHA384 SHA512 RMD160]

  def stdlib(name) = RustyStdlib::Digest.stdlib(name)
  def ours(name) = ::Digest.const_get(name)

  # Seeded inputs around block boundaries (0..3 blocks) plus a few larger ones.
  def sample_inputs
    rng = Random.new(20_261_129)
    lengths = [0, 1, 3, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129, 191, 192, 255, 256, 383, 384]
    lengths += Array.new(12) { rng.rand(0..384) }
    inputs = lengths.map { |n| rng.bytes(n) }
    inputs << "abc" << "ünïcödé ✓".encode("UTF-8") << "caf\xE9".dup.force_encoding("ISO-8859-1")
    inputs << rng.bytes(70_000) << ("x" * 200_000)
    under_stress_keep(inputs, 8) + inputs.last(1)
  end

  it "is installed, and the classes are ours under the stdlib's names" do
    expect(RustyStdlib.installed).to include(:digest)
    (base_names + [:SHA2]).each do |name|
      expect(ours(name)).not_to equal(stdlib(name))
      expect(ours(name).name).to eq("Digest::#{name}")
      expect(ours(name).superclass).to equal(stdlib(name).superclass)
      expect(ours(name).ancestors.drop(1)).to eq(stdlib(name).ancestors.drop(1))
    end
  end

  base_names.each do |name|
    describe "Digest::#{name}" do
      let(:ours_class) { ours(name) }
      let(:stdlib_class) { stdlib(name) }

      def parity(&block)
        expect_parity(stdlib_class, ours_class, &block)
      end

      it "matches the class methods on seeded inputs" do
        sample_inputs.each do |input|
          parity { |k| k.digest(input) }
          parity { |k| k.hexdigest(input) }
          parity { |k| k.base64digest(input) }
        end
      end

      it "matches incremental updates split at random points" do
        rng = Random.new(name.hash & 0xffff)
        sample_inputs.each do |input|
          cuts = Array.new(rng.rand(0..4)) { rng.rand(0..input.bytesize) }.sort
          pieces = ([0] + cuts).zip(cuts + [input.bytesize]).map { |a, b| input.byteslice(a...b) }
          parity { |k| pieces.each_with_object(k.new) { |p, d| d << p }.hexdigest }
          parity { |k| pieces.each_with_object(k.new) { |p, d| d.update(p) }.digest }
        end
      end

      it "matches every instance method" do
        parity { |k| k.new.update("abc").hexdigest }
        parity { |k| k.new.update("abc").digest }
        parity { |k| k.new.update("abc").base64digest }
        parity { |k| k.new.update("ab").digest("xyz") }
        parity { |k| k.new.update("ab").hexdigest("xyz") }
        parity { |k| k.new.update("ab").base64digest("xyz") }
        parity { |k| d = k.new.update("ab"); d.hexdigest("xyz"); d.hexdigest } # reset after
        parity { |k| d = k.new.update("ab"); [d.digest!, d.hexdigest] }
        parity { |k| d = k.new.update("ab"); [d.hexdigest!, d.hexdigest] }
        parity { |k| d = k.new.update("ab"); [d.base64digest!, d.hexdigest] }
        parity { |k| d = k.new.update("ab"); d.hexdigest; d.update("c").hexdigest } # state kept
        parity { |k| k.new.update("abc").reset.hexdigest }
        parity { |k| k.new.update("abc").to_s }
        parity { |k| k.new.update("abc").inspect }
        parity { |k| k.new.update("abc").new.hexdigest }
        parity { |k| [k.new.length, k.new.size, k.new.digest_length, k.new.block_length] }
        parity { |k| k.new.update("abc") == k.new.update("abc") }
        parity { |k| k.new.update("abc") == k.new.update("abd") }
        parity { |k| k.new.update("abc") == k.hexdigest("abc") }
        parity { |k| k.new.update("abc") == k.hexdigest("abc").upcase }
        parity { |k| k.new.update("abc") == 42 }
        parity { |k| k.new.update("abc").update("").hexdigest }
        parity { |k| (k.new << "a" << "b").hexdigest }
        parity { |k| k.new.update("x").instance_eval { finish } }
        parity { |k| k.new.respond_to?(:finish) }
      end

      it "keeps state in dup and clone, independently of the original" do
        parity do |k|
          d = k.new.update("abc")
          copies = [d.dup, d.clone]
          d.update("more")
          copies.map { |c| c.update("!").hexdigest } + [d.hexdigest]
        end
        parity { |k| d = k.new.update("a").freeze; c = d.clone; [c.frozen?, c.hexdigest] }
        parity { |k| d = k.new.update("a").freeze; c = d.dup; [c.frozen?, c.update("b").hexdigest] }
      end

      it "behaves the same when frozen" do
        %i[hexdigest digest to_s inspect digest_length block_length].each do |m|
          parity { |k| k.new.update("a").freeze.public_send(m) }
        end
        parity { |k| k.new.freeze.update("a").hexdigest }
        parity { |k| k.new.freeze.reset }
        parity { |k| k.new.update("a").freeze.hexdigest! }
        parity { |k| k.new.update("a").freeze.digest! }
        parity { |k| k.new.freeze.hexdigest("abc") }
        parity { |k| k.new.freeze.send(:initialize_copy, k.new) }
      end

      it "raises what the stdlib raises for bad arguments" do
        to_str = Object.new
        def to_str.to_str = "converted"
        under_stress_keep([to_str, nil, 1, :sym, 1.5, [], Object.new], 2).each do |arg|
          parity { |k| k.hexdigest(arg) }
          parity { |k| k.digest(arg) }
          parity { |k| k.new.update(arg).hexdigest }
          parity { |k| k.new << arg }
          parity { |k| k.new.hexdigest(arg) }
          parity { |k| d = k.new.update("kept?"); (d.digest(arg) rescue nil); d.hexdigest }
        end
        parity { |k| k.digest }
        parity { |k| k.hexdigest }
        parity { |k| k.hexdigest("a", "b") }
        parity { |k| k.new("a") }
        parity { |k| k.new.hexdigest("a", "b") }
        parity { |k| k.new.send(:initialize_copy, Object.new) }
        other = name == :MD5 ? :SHA1 : :MD5
        parity { |k| k.new.send(:initialize_copy, (k == ours_class ? ours(other) : stdlib(other)).new) }
      end

      it "hashes files like the stdlib" do
        Tempfile.create("digest") do |f|
          f.binmode
          f.write(Random.new(7).bytes(40_000))
          f.flush
          parity { |k| k.file(f.path).hexdigest }
          parity { |k| k.new.file(f.path).hexdigest }
          parity { |k| k.new.update("prefix").file(f.path).hexdigest }
        end
        parity { |k| k.file("/nonexistent/rusty_stdlib") }
      end

      it "goes through subclasses' overrides the way the stdlib does" do
        make = lambda do |parent|
          Class.new(parent) do
            def update(str) = super(str.upcase)
            alias_method :<<, :update
          end
        end
        pair = [make.call(stdlib_class), make.call(ours_class)]
        expect_parity(*pair) { |k| k.hexdigest("abc") }
        expect_parity(*pair) { |k| k.new.hexdigest("abc") }
        expect_parity(*pair) { |k| (k.new << "abc").hexdigest }
        expect_parity(*pair) { |k| k.digest("abc") }
        expect_parity(*pair) { |k| k.new.update("x").inspect.split(": ").last }
        expect_parity(*pair) { |k| k.new.is_a?(::Digest::Base) && k.new.is_a?(::Digest::Instance) }

        singleton = lambda do |k|
          d = k.new
          def d.finish = "finished by singleton"
          [d.hexdigest, d.digest, d.to_s]
        end
        expect(outcome_of { singleton.call(ours_class) }).to eq(outcome_of { singleton.call(stdlib_class) })
      end

      it "cannot be marshalled, like the stdlib" do
        parity { |k| Marshal.dump(k.new) }
      end

      # C code that type-checks its argument quotes the object's data type name.
      it "is rejected by OpenSSL with the stdlib's message" do
        require "openssl"
        parity { |k| OpenSSL::HMAC.hexdigest(k.new, "key", "data") }
      end
    end
  end

  describe "Digest::SHA2" do
    def parity(&block)
      expect_parity(stdlib(:SHA2), ours(:SHA2), &block)
    end

    it "matches every bit length and method" do
      [[], [256], [384], [512], [256.0]].each do |args|
        parity { |k| k.new(*args).update("abc").hexdigest }
        parity { |k| k.new(*args).update("abc").inspect }
        parity { |k| d = k.new(*args); [d.block_length, d.digest_length, d.length] }
        parity { |k| d = k.new(*args).update("abc"); c = d.dup; d.update("x"); [c.hexdigest, d.hexdigest!, d.hexdigest] }
        parity { |k| k.hexdigest("abc", *args) }
        parity { |k| k.new(*args).update("ab").reset.update("c").digest }
      end
    end

    it "raises what the stdlib raises" do
      inspect_raises = Class.new { def inspect = raise(NameError, "no inspect") }
      [[1], [255], ["256"], [nil], [256, 1], [BasicObject.new], [inspect_raises.new], ["\u00e9"]].each do |args|
        parity { |k| k.new(*args) }
      end
      parity { |k| k.new.update(nil) }
    end
  end

  describe "Digest module functions" do
    it "leaves hexencode and Digest() as they were" do
      expect_parity(nil, nil) { ::Digest.hexencode("\x00\xffab") }
      expect(Digest(:SHA256)).to equal(ours(:SHA256))
      expect(Digest(:MD5)).to equal(ours(:MD5))
    end

    it "keeps bubblebabble working" do
      require "digest/bubblebabble"
      expect_parity(stdlib(:SHA256), ours(:SHA256)) { |k| k.bubblebabble("abc") }
      expect_parity(stdlib(:MD5), ours(:MD5)) { |k| k.new.update("abc").bubblebabble }
    end
  end
end
