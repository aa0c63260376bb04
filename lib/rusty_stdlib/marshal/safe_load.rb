# frozen_string_literal: true

require_relative "vet"

module RustyStdlib
  module Marshal
    # Raised by safe_load for a class, module, symbol or instance variable the caller did
    # not permit, before any object of it is made and before any hook runs.
    class DisallowedClass < ArgumentError
      # The class or module the dump names ("Symbol" for a symbol not permitted).
      attr_reader :class_name

      def initialize(message, class_name)
        super(message)
        @class_name = class_name
      end
    end

    # What safe_load needs of Marshal where data may come from someone else: a cache,
    # a cookie, a queue. A Rails.cache or Dalli coder, say:
    #
    #   coder = RustyStdlib::Marshal::SafeCoder.new(permitted_classes: [ActiveSupport::Cache::Entry, Time])
    #   config.cache_store = :mem_cache_store, { coder: coder }
    class SafeCoder
      def initialize(**safe_load_options)
        @options = safe_load_options
      end

      def dump(value)
        ::Marshal.dump(value)
      end

      def load(source)
        Marshal.safe_load(source, **@options)
      end
    end

    # The refusals' exceptions, by the kind the walk reports; MRI's own messages where
    # MRI's loader would have raised too.
    FORMAT_ERRORS = {
      too_short: "marshal data too short",
      negative_size: "negative string size (or size too big)",
      negative_array_size: "negative array size (or size too big)",
      bad_symbol: "bad symbol",
      format: "dump format error(0x%x)",
      symbol_format: "dump format error for symbol(0x%x)",
      symlink_with_encoding: "dump format error (symlink with encoding)"
    }.freeze
    private_constant :FORMAT_ERRORS

    class << self
      # Marshal.load for bytes an attacker may have touched. Only nil, true, false,
      # Integer, Float, String, Symbol, Array and Hash load, plus the classes and modules
      # named in permitted_classes (classes or their names): their objects, Structs,
      # _load/marshal_load data, extensions, subclasses of core types, references to them,
      # and, for a core class named there (String, say), instance variables on its objects
      # beyond the encoding. Regexp, Range, Time, Rational, Complex and exceptions load
      # only when named. permitted_symbols (nil: any) lists the symbols that may load as
      # values. The whole dump is checked before anything loads: a refusal raises
      # DisallowedClass; records nested deeper than max_depth, a declared length past the
      # end of the input, or more than max_bytes of input raise ArgumentError. Then
      # Marshal.load (ours where installed) loads it, with `freeze`.
      # An IO-like source is read to its end (at most max_bytes + 1 bytes).
      def safe_load(source, permitted_classes: [], permitted_symbols: nil, max_depth: 128, max_bytes: nil,
                    freeze: false)
        dump = safe_load_input(source, max_bytes)
        classes = permitted_classes.map { |c| permitted_name(c) }
        symbols = permitted_symbols&.map { |s| String(s) }
        raise ArgumentError, "max_depth must be an Integer >= 0, not #{max_depth.inspect}" unless
          max_depth.is_a?(Integer) && !max_depth.negative?

        refusal = if native_vet?
                    native_vet(dump, classes, symbols, max_depth)
                  else
                    Vet.call(dump, classes, symbols, max_depth)
                  end
        raise refusal_error(refusal, max_depth) if refusal

        # Without the keyword where it is not asked for: Rubies before 3.1 (JRuby 9.3) lack it.
        freeze ? ::Marshal.load(dump, freeze: true) : ::Marshal.load(dump)
      end

      private

      def safe_load_input(source, max_bytes)
        unless max_bytes.nil? || (max_bytes.is_a?(Integer) && !max_bytes.negative?)
          raise ArgumentError, "max_bytes must be nil or an Integer >= 0, not #{max_bytes.inspect}"
        end

        dump = String.try_convert(source)
        if dump.nil?
          raise TypeError, "instance of IO needed" unless source.respond_to?(:read)

          dump = source.read(*max_bytes&.succ).to_s
        end
        if max_bytes && dump.bytesize > max_bytes
          raise ArgumentError, "marshal data is over max_bytes (#{max_bytes})"
        end

        dump
      end

      def permitted_name(entry)
        case entry
        when Module
          entry.name or raise ArgumentError, "permitted_classes: #{entry.inspect} has no name to find it by"
        when String, Symbol then entry.to_s
        else raise TypeError, "permitted_classes takes classes, modules or their names, not #{entry.inspect}"
        end
      end

      # The walk in Rust on a Ruby whose Marshal the specs prove, else the same in Ruby.
      def native_vet?
        RustyStdlib.native? && respond_to?(:native_vet) && proven_ruby?
      end

      def refusal_error(refusal, max_depth)
        kind, *details = refusal
        name = ->(bytes) { bytes.dup.force_encoding(Encoding::UTF_8).scrub }
        case kind
        when :class
          DisallowedClass.new("Tried to load unspecified class: #{name[details[0]]}", name[details[0]])
        when :symbol
          DisallowedClass.new("Tried to load unspecified symbol: #{name[details[0]].to_sym.inspect}", "Symbol")
        when :ivar
          ivar, core = details.map(&name)
          article = core.match?(/\A[AEIOU]/) ? "an" : "a"
          DisallowedClass.new("Tried to load instance variable #{ivar} on #{article} #{core} " \
                              "(name #{core} in permitted_classes to allow it)", core)
        when :too_deep
          ArgumentError.new("marshal data nested deeper than max_depth (#{max_depth})")
        else
          ArgumentError.new(format(FORMAT_ERRORS.fetch(kind), *details))
        end
      end
    end
  end
end
