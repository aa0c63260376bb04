# frozen_string_literal: true

module RustyStdlib
  module JSON
    module V3
      # json 3's State on ours: the native part (ext/rusty_stdlib/src/json/v3/state.rs)
      # and what json writes in Ruby (its lib/json/ext/generator/state.rb), here.
      class State
        def initialize(opts = nil)
          configure(opts) if opts && !opts.empty?
        end

        def configure(opts)
          unless opts.is_a?(::Hash)
            if opts.respond_to?(:to_hash)
              opts = opts.to_hash
            elsif opts.respond_to?(:to_h)
              opts = opts.to_h
            else
              raise TypeError, "can't convert #{opts.class} into Hash"
            end
          end
          _configure(opts)
        end

        alias_method :merge, :configure

        def to_h
          result = {
            indent: indent, space: space, space_before: space_before, object_nl: object_nl,
            array_nl: array_nl, as_json: as_json, allow_nan: allow_nan?, ascii_only: ascii_only?,
            max_nesting: max_nesting, script_safe: script_safe?, strict: strict?, depth: depth,
            buffer_initial_length: buffer_initial_length, sort_keys: sort_keys, rfc8785: rfc8785?
          }
          allow_duplicate_key = allow_duplicate_key?
          result[:allow_duplicate_key] = allow_duplicate_key unless allow_duplicate_key.nil?
          result
        end

        alias_method :to_hash, :to_h

        class << self
          # RFC 8785 output is written by the gem's generator (see generate.rs), which
          # holds json's own procs: ours are kept only so that the API is the same.
          %i[rfc8785_number_formatter_proc rfc8785_sort_keys_proc].each do |name|
            define_method(:"#{name}=") do |proc|
              raise TypeError, "#{name} must be a Proc" unless proc.is_a?(Proc)
              raise ArgumentError, "#{name} can only be set once" if instance_variable_get(:"@#{name}")

              instance_variable_set(:"@#{name}", proc)
            end
          end
        end

        # What `sort_keys: true` sorts with (json 3 sets the same on its own State).
        sort = ->(hash) { hash.sort.to_h }
        self.default_sort_keys_proc = defined?(::Ractor) ? ::Ractor.make_shareable(sort) : sort
      end

      # What `JSON.generator = ` takes: a module with a State (json 3 defines no
      # GeneratorMethods: #to_json is json's Ruby code, which calls JSON::State).
      module Generator
        State = V3::State
      end
    end
  end
end
