# frozen_string_literal: true

# The Ruby half of RustyStdlib::JSON::Generator (the native extension defines State and
# the to_json methods): the String extras the gem's C generator also defines, and on
# json 2.9 the State methods its state.rb writes in Ruby around the C ones.
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

      module GeneratorMethods
        module String
          # Like the gem: a class that includes this module is extended with Extend.
          def self.included(modul)
            modul.extend(Extend)
          end

          # The gem's raw form of a String: its class name and bytes.
          def to_json_raw_object
            result = {}
            result[::JSON.create_id] = self.class.name
            result["raw"] = unpack("C*")
            result
          end

          def to_json_raw(*args)
            GeneratorMethods::Hash.instance_method(:to_json).bind_call(to_json_raw_object, *args)
          end

          # `String.json_create` for the raw form.
          module Extend
            def json_create(object)
              unless object.is_a?(::Hash)
                # Binary, as the gem's Check_Type (C's rb_raise) makes the message.
                raise TypeError, "wrong argument type #{object.class} (expected Hash)".b
              end

              object["raw"].pack("C*")
            end
          end
        end
      end
    end
  end
end
