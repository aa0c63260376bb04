# frozen_string_literal: true

# The Ruby half of RustyStdlib::JSON::Generator (the native extension defines State and
# the to_json methods): the String extras json 2.6.1's C generator also defines.
module RustyStdlib
  module JSON
    module Generator
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
                raise TypeError, "wrong argument type #{object.class} (expected Hash)"
              end

              object["raw"].pack("C*")
            end
          end
        end
      end
    end
  end
end
