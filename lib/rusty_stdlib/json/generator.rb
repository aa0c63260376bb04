# frozen_string_literal: true

# The Ruby half of RustyStdlib::JSON::Generator (the native extension defines State, the
# to_json methods and the String extras, as the gem's C does): on json 2.9, the State
# methods its state.rb writes in Ruby around the C ones.
module RustyStdlib
  module JSON
    module Generator
      # The State methods that differ between json versions are defined now that json
      # is loaded: "2.6" or "2.9".
      DIALECT = define_state_methods

      if DIALECT == "2.9"
        # json 2.9's State API in Ruby (its lib/json/ext/generator/state.rb), on our
        # native _configure and _generate.
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

          def generate(obj, io = nil)
            _generate(obj, io)
          end

          def to_h
            result = {
              indent: indent, space: space, space_before: space_before,
              object_nl: object_nl, array_nl: array_nl,
              allow_nan: allow_nan?, ascii_only: ascii_only?, max_nesting: max_nesting,
              script_safe: script_safe?, strict: strict?, depth: depth,
              buffer_initial_length: buffer_initial_length
            }
            instance_variables.each do |iv|
              name = iv.to_s[1..]
              result[name.to_sym] = self[name]
            end
            result
          end

          alias_method :to_hash, :to_h

          def [](name)
            if respond_to?(name)
              __send__(name)
            elsif instance_variables.include?(:"@#{name}")
              instance_variable_get("@#{name}")
            end
          end

          def []=(name, value)
            if respond_to?(name_writer = "#{name}=")
              __send__(name_writer, value)
            else
              instance_variable_set("@#{name}", value)
            end
          end
        end
      end
    end
  end
end
