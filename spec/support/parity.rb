# frozen_string_literal: true

require "stringio"

# Runs the same code against the stdlib and against rusty_stdlib and compares what
# happened: the value (==, class, encoding, frozen?) or the exception (class, message
# and its encoding).
#
#   expect_parity(RustyStdlib::Digest.stdlib(:MD5), Digest::MD5) { |md5| md5.hexdigest(s) }
#
# With RUSTY_GC_STRESS=1 our side runs under GC.stress, which turns a missing GC mark
# into a crash or a wrong value instead of a rare flake.
module Parity
  GC_STRESS = !ENV.fetch("RUSTY_GC_STRESS", "").empty?

  # Under GC stress, the first FULL_STRESS_CALLS stressed calls of each example collect
  # with a full mark at every allocation (GC.stress = true); its later ones with a minor
  # GC at every allocation (GC.stress = 1, "no major"), which still frees, at once, every
  # new object nothing marks (what a missing mark or write barrier of ours leaves
  # behind), at about a hundredth of the cost: a full mark walks the whole spec process
  # (60,000 objects) each time, and on a slow machine the module specs under full stress
  # took over 45 minutes per Ruby. What only a full mark can catch, an old object freed
  # while ours still holds it, is still looked for at the start of every example.
  FULL_STRESS_CALLS = 2
  MINOR_STRESS = 1 # bit 0 of GC.stress's mode: no major GC

  # Called before each example (spec_helper).
  def self.new_example!
    @stressed_calls = 0
  end

  def self.stress_mode
    @stressed_calls = (@stressed_calls || 0) + 1
    @stressed_calls <= FULL_STRESS_CALLS ? true : MINOR_STRESS
  end

  # Runs the block, which may overflow the machine stack inside the stdlib (a recursive
  # JSON parse or generate, or Marshal dump or load, of something very deep), with the
  # GC off when `stdlib` is true.
  # Raising SystemStackError allocates; if that allocation starts a collection, Ruby 3.1
  # aborts the whole process ("[BUG] system stack overflow during GC") instead: it
  # happened in the GC.stress leg (parser_spec's deep documents) and in the json_package
  # leg (JSONTestSuite's n_structure_100000_opening_arrays.json and the like), every C
  # frame the gem's. The stdlib's outcome does not depend on the GC. Ours raises before
  # the stack runs out, and keeps the GC (under GC.stress in that leg).
  #
  # With the GC off the stack can still run out inside malloc (a new heap page, a
  # Hash's table), and Ruby's SIGSEGV handler then allocates the error's backtrace while
  # the interrupted malloc holds its lock: the process hangs for good (seen once, in the
  # GC.stress leg on Ruby 3.1, parser_spec's 100,000 levels on the main thread). So with
  # `isolate` the block runs first in a forked child, which is killed and tried again if
  # it hangs; where it overflowed there, this raises the same error without overflowing
  # here, and otherwise runs the block here (from the same stack depth it cannot
  # overflow here either).
  def self.overflowing_stdlib(stdlib, isolate: true, &block)
    return yield unless stdlib

    if isolate && Process.respond_to?(:fork)
      message = overflow_in_child(&block)
      raise SystemStackError, message if message
    end
    without_gc(&block)
  end

  # With `settle`, a full collection first: an incremental one still under way goes on
  # marking at each allocation even with the GC disabled, and a stack overflow in one of
  # its steps is "[BUG] system stack overflow during GC" (Ruby 3.4, in a forked child,
  # whose fork and pipe had allocated just before).
  def self.without_gc(settle: false)
    GC.start if settle
    was_disabled = GC.disable
    begin
      yield
    ensure
      GC.enable unless was_disabled
    end
  end

  # How long one child may take, and how many are tried, before the example fails.
  CHILD_SECONDS = 120
  CHILD_TRIES = 3

  # The message of the SystemStackError the block raises in a forked child, or nil when
  # it raises none there.
  def self.overflow_in_child(&block)
    in_child do
      without_gc(settle: true, &block)
      nil
    rescue SystemStackError => e
      e.message
    rescue Exception # whatever else it is, the parent meets it too
      nil
    end
  end

  # The block's value (which Marshal must carry), computed in a forked child: one that
  # hangs or dies (a [BUG] of the stdlib's) is killed or reaped and another is tried.
  def self.in_child
    CHILD_TRIES.times do
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        writer.write(Marshal.dump([:done, yield]))
        writer.close
        exit!(0) # no at_exit hooks: the child is not the spec run
      end
      writer.close
      report = IO.select([reader], nil, nil, CHILD_SECONDS) && reader.read
      reader.close
      Process.kill(:KILL, pid) unless report
      Process.wait(pid)
      done, value = Marshal.load(report) if report && !report.empty?
      return value if done == :done
    end
    raise "the stdlib's call hung or died in #{CHILD_TRIES} child processes (#{CHILD_SECONDS} s each)"
  end

  # What running a block did, in a form that compares with ==.
  Outcome = Struct.new(:raised, :klass, :value, :encoding, :frozen) do
    def inspect
      if raised
        "raised #{klass}: #{value.inspect} (#{encoding}#{frozen ? ', frozen' : ''})"
      else
        "#{klass} #{value.inspect} (#{encoding || 'no encoding'}, #{frozen ? 'frozen' : 'not frozen'})"
      end
    end
  end

  # NoMemoryError and SystemStackError count too: a damaged length or a deep document
  # makes the stdlib raise them, and ours must raise the same.
  def self.outcome(stress: false)
    value = begin
      GC.stress = stress_mode if stress
      yield
    ensure
      GC.stress = false if stress
    end
    encoding = value.encoding if value.respond_to?(:encoding)
    Outcome.new(false, class_name(value.class), value, encoding, value.frozen?)
  rescue StandardError, ScriptError, NoMemoryError, SystemStackError => e
    message = e.message
    # Whether the message is frozen too: a caller may append to the stdlib's.
    Outcome.new(true, class_name(e.class), without_addresses(message), message.encoding, message.frozen?)
  end

  # Two runs cannot raise about the same object, so `#<Foo:0x000...>` addresses in
  # messages are masked before comparing.
  def self.without_addresses(message)
    return message unless message.valid_encoding? # e.g. quoting invalid UTF-8 input

    message.gsub(/0x\h{8,16}/, "0x_")
  end

  # The block's value and what it wrote to $stderr, without the "file:line: " before each
  # warning (the stdlib's and ours come from different files).
  def self.with_warnings
    saved = $stderr
    $stderr = StringIO.new
    value = yield
    # Binary: a warning may quote invalid UTF-8 (a header value, say).
    [value, $stderr.string.b.gsub(/^.*?:\d+: warning: /n, "warning: ")]
  ensure
    $stderr = saved
  end

  # Compared by name: a swapped-in class (Digest::MD5) is another object with the same name.
  def self.class_name(klass)
    klass.name || klass.inspect
  end

  # Under GC stress every allocation runs a full GC, so long input lists are cut to a
  # few entries (always the first ones, to stay deterministic).
  def under_stress_keep(list, count)
    GC_STRESS ? list.first(count) : list
  end

  def outcome_of(stress: false, &block)
    Parity.outcome(stress: stress, &block)
  end

  # Asserts that `block.call(stdlib)` and `block.call(ours)` have the same outcome and
  # returns it.
  # With `stdlib_in_child`, the stdlib's side runs in a forked child (Parity.in_child):
  # for calls the stdlib itself sometimes crashes on.
  def expect_parity(stdlib, ours, stdlib_in_child: false, &block)
    expected = if stdlib_in_child && Process.respond_to?(:fork)
                 Parity.in_child { outcome_of { block.call(stdlib) } }
               else
                 outcome_of { block.call(stdlib) }
               end
    actual = outcome_of(stress: GC_STRESS) { block.call(ours) }
    expect(actual).to eq(expected)
    expected
  end
end
