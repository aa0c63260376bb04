# frozen_string_literal: true

module RustyStdlib
  module JSON
    # json 3.x's parser API on ours: JSON::Ext::Parser's shape (json/ext.rb) with our
    # ParserConfig (native: ext/rusty_stdlib/src/json/v3) as its Config. `Parser.parse`,
    # which JSON.parse calls, is native too.
    module V3
      class Parser
        Config = ParserConfig

        def initialize(source, opts = nil)
          @source = source
          @config = Config.new(opts)
        end

        def source
          @source.dup
        end

        def parse
          @config.parse(@source)
        end
      end

      # `JSON.parse(source)` with no options, without the options Hash and the
      # Parser.parse call: Parser.try_parse parses it as `Parser.parse(source, {})`
      # would, or gives Parser itself (nothing done) where the gem's way must run.
      # Swapped in for json 3's JSON.parse, which stays as JSON's private
      # __rusty_stdlib_stdlib_parse.
      module PlainParse
        def parse(source, **opts)
          if opts.empty? && ::JSON::Parser.equal?(Parser)
            result = Parser.try_parse(source)
            return result unless result.equal?(Parser)
          end
          __rusty_stdlib_stdlib_parse(source, **opts)
        end
      end

      # JSON::Coder's parsing on our ParserConfig: the gem builds its own config from the
      # options first (and raises what it raises), then ours takes its place, made from
      # the same options. With `object_class`, `array_class` or `on_load` (user code
      # called in the middle of the walk) the gem's stays.
      module CoderParsing
        def initialize(object_class: nil, array_class: nil, on_load: nil, strict: true, **options, &as_json)
          super
          return unless object_class.nil? && array_class.nil? && on_load.nil? && RustyStdlib::JSON.installed_now?

          @parser_config = ParserConfig.new(options.slice(*PARSER_OPTIONS)).freeze
        end
      end
    end
  end
end
