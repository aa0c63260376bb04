# frozen_string_literal: true

require_relative "activation"

module RustyStdlib
  # JSON parsing on Rust: RustyStdlib::JSON::Parser replaces JSON::Ext::Parser through
  # the json gem's own seam (`JSON.parser = ...`), so JSON.parse, JSON.parse!, JSON.load,
  # JSON[...] and JSON::Parser.new(...).parse use it. Generation stays with the gem.
  #
  # Calls with create_additions, object_class, array_class or decimal_class are handed
  # to the gem's parser (see ext/rusty_stdlib/src/json). The gem's parser stays
  # reachable as RustyStdlib::JSON.stdlib_parser.
  module JSON
    # json gem versions whose parser spec/json proves we match (Ruby 3.1 ships 2.6.1).
    PROVEN_VERSIONS = %w[2.6.1].freeze

    class << self
      def unsupported_reason
        require "json"
        return nil if PROVEN_VERSIONS.include?(::JSON::VERSION)

        "json #{::JSON::VERSION} is not proven (proven: #{PROVEN_VERSIONS.join(', ')})"
      end

      # The gem's C parser, whether or not ours is installed.
      def stdlib_parser
        require "json"
        ::JSON::Ext::Parser
      end

      def install!
        ::JSON.parser = Parser
      end
    end
  end
end

RustyStdlib.activate(:json, RustyStdlib::JSON)
