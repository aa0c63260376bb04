# frozen_string_literal: true

module RustyStdlib
  module Marshal
    # safe_load's check in plain Ruby, for Rubies where the extension is not loaded: the
    # walk of ext/rusty_core/src/marshal/vet.rs, record for record (read that file for
    # the rules), returning the same refusals: nil when the dump may be loaded, else
    # [:class, "Foo"], [:symbol, "a"], [:ivar, "@a", "String"], [:too_deep],
    # [:too_short], [:negative_size], [:negative_array_size], [:bad_symbol],
    # [:format, byte], [:symbol_format, byte] or [:symlink_with_encoding].
    # spec/marshal/safe_load_spec.rb checks that both walks agree.
    class Vet
      # Thrown with the refusal, out of any depth of the walk.
      REFUSED = :rusty_stdlib_marshal_refused
      CORE_FLAGS = %w[E encoding].freeze

      # Marshal 4.8's type bytes.
      NIL_TRUE_FALSE = "0TF".bytes.freeze
      ARRAY = "[".ord
      HASH = "{".ord
      HASH_DEFAULT = "}".ord
      FIXNUM = "i".ord
      BIGNUM = "l".ord
      FLOAT = "f".ord
      STRING = '"'.ord
      SYMBOL = ":".ord
      SYMLINK = ";".ord
      LINK = "@".ord
      IVAR = "I".ord
      REGEXP = "/".ord
      OBJECT_OR_STRUCT = "oS".bytes.freeze
      USERDEF = "u".ord
      USRMARSHAL_OR_DATA = "Ud".bytes.freeze
      EXTENDED = "e".ord
      UCLASS = "C".ord
      CLASS_REFS = "cmM".bytes.freeze

      def self.call(dump, permitted_classes, permitted_symbols, max_depth)
        new(dump, permitted_classes, permitted_symbols, max_depth).refusal
      end

      def initialize(dump, permitted_classes, permitted_symbols, max_depth)
        @input = dump.b
        @at = 0
        @symbols = []
        @classes = permitted_classes.map(&:b)
        @permitted_symbols = permitted_symbols&.map(&:b)
        @max_depth = max_depth
      end

      def refusal
        return [:too_short] if @input.bytesize < 2
        # Another format version is the loader's to refuse, before it reads a record.
        return nil if @input.getbyte(0) != 4 || @input.getbyte(1) > 8

        @at = 2
        catch(REFUSED) do
          value(1)
          nil
        end
      end

      private

      def refuse(*why)
        throw REFUSED, why
      end

      def byte
        b = @input.getbyte(@at) or refuse(:too_short)
        @at += 1
        b
      end

      def left
        @input.bytesize - @at
      end

      # MRI's r_long.
      def long
        c = byte
        c -= 256 if c > 127
        if c.zero? then 0
        elsif c >= 5 then c - 5
        elsif c.positive? then (0...c).sum { |i| byte << (8 * i) }
        elsif c <= -5 then c + 5
        else
          x = -1
          (0...-c).each { |i| x = (x & ~(0xff << (8 * i))) | (byte << (8 * i)) }
          x
        end
      end

      def count(min_bytes)
        n = [long, 0].max
        refuse(:too_short) if n > left / min_bytes
        n
      end

      def bytes
        n = long
        refuse(:negative_size) if n.negative?
        refuse(:too_short) if n > left
        @at += n
        @input.byteslice(@at - n, n)
      end

      def symbol(depth)
        case (type = byte)
        when IVAR
          inner = byte
          refuse(:symlink_with_encoding) if inner == SYMLINK
          refuse(:symbol_format, inner) unless inner == SYMBOL
          name = new_symbol
          ivars("Symbol", depth)
          name
        when SYMBOL then new_symbol
        when SYMLINK then symlink
        else refuse(:symbol_format, type)
        end
      end

      def new_symbol
        name = bytes
        @symbols << name
        name
      end

      def symlink
        index = long
        refuse(:bad_symbol) if index.negative? || index >= @symbols.size
        @symbols[index]
      end

      def permit_class(name)
        refuse(:class, name) unless @classes.include?(name)
      end

      def permit_symbol(name)
        refuse(:symbol, name) if @permitted_symbols && !@permitted_symbols.include?(name)
      end

      def class_name(depth)
        permit_class(symbol(depth))
      end

      def enter(depth)
        refuse(:too_deep) if depth > @max_depth
      end

      # `core` names the core class of what the ivars are set on; nil: a permitted class.
      def ivars(core, depth)
        n = count(2)
        enter(depth) if n.positive?
        n.times do
          name = symbol(depth)
          if core && !CORE_FLAGS.include?(name) && !(core == "Hash" && name == "K") && !@classes.include?(core)
            refuse(:ivar, name, core.b)
          end
          value(depth + 1)
        end
      end

      def members(depth)
        count(2).times do
          symbol(depth)
          value(depth + 1)
        end
      end

      # One record; returns the core class name of what it made, or nil for an object of
      # a permitted class.
      def value(depth)
        type = byte
        case type
        when *NIL_TRUE_FALSE, LINK
          long if type == LINK
          "Object"
        when FIXNUM, BIGNUM
          type == FIXNUM ? long : bignum
          "Integer"
        when FLOAT, STRING
          bytes
          type == FLOAT ? "Float" : "String"
        when SYMBOL, SYMLINK
          permit_symbol(type == SYMBOL ? new_symbol : symlink)
          "Symbol"
        when IVAR
          made = value(depth)
          ivars(made, depth)
          made
        when ARRAY then array(depth)
        when HASH, HASH_DEFAULT then hash(depth, type == HASH_DEFAULT)
        when REGEXP
          permit_class("Regexp")
          bytes
          byte
          "Regexp"
        else named(type, depth)
        end
      end

      def bignum
        byte # the sign
        shorts = long
        refuse(:negative_size) if shorts.negative?
        refuse(:too_short) if shorts * 2 > left
        @at += shorts * 2
      end

      def array(depth)
        enter(depth)
        n = long
        refuse(:negative_array_size) if n.negative?
        refuse(:too_short) if n > left
        n.times { value(depth + 1) }
        "Array"
      end

      def hash(depth, with_default)
        enter(depth)
        (count(2) * 2).times { value(depth + 1) }
        value(depth + 1) if with_default
        "Hash"
      end

      # Records that name a class or module.
      def named(type, depth)
        case type
        when *OBJECT_OR_STRUCT
          enter(depth)
          class_name(depth)
          members(depth)
        when USERDEF
          class_name(depth)
          bytes
        when *USRMARSHAL_OR_DATA
          enter(depth)
          class_name(depth)
          value(depth + 1)
        when EXTENDED
          class_name(depth) # the module; the object's own rules still hold
          return value(depth)
        when UCLASS
          class_name(depth)
          value(depth)
        when *CLASS_REFS then permit_class(bytes)
        else refuse(:format, type)
        end
        nil
      end
    end
  end
end
