# frozen_string_literal: true

module RustyStdlib
  # Puts a method of ours in place of a stdlib module function's singleton method
  # (Marshal.load, JSON.parse, ...), in the module's singleton class itself rather than
  # in a module prepended to it. An app then wraps ours exactly as it wrapped the stdlib's:
  # a module prepended before rusty_stdlib was required (ActiveSupport 6.1's
  # Marshal.load autoloading, say) still runs first and reaches ours through `super`;
  # one prepended later does the same; an alias_method chain made later captures ours;
  # and a library that redefines the method later (Oj.mimic_JSON) replaces ours. A
  # prepended module of ours would instead run before the first, answer without calling
  # it, and hide the others.
  #
  # The stdlib's method stays in the singleton class as a private alias (STDLIB_PREFIX +
  # name), which ours calls for whatever it leaves to the stdlib: a private method, so
  # `singleton_methods` and `respond_to?` do not show it, and unlike a Method object it
  # can be called inside any Ractor.
  module SingletonSwap
    STDLIB_PREFIX = "__rusty_stdlib_stdlib_"

    module_function

    # The name of the stdlib's `name` once swapped.
    def stdlib_name(name)
      :"#{STDLIB_PREFIX}#{name}"
    end

    # The method `target` (a module) has as its own singleton method `name`, below any
    # prepended module: what a swap would replace.
    def own_method(target, name)
      method = target.method(name)
      method = method.super_method while method.owner != target.singleton_class && method.super_method
      method
    end

    # Whether `target.name` is still the stdlib's own: defined in `file` (a path suffix,
    # or nil for a C function) and not already swapped.
    def stock?(target, name, file)
      method = own_method(target, name)
      return false unless method.owner == target.singleton_class
      return false if swapped?(target, name)

      location = method.source_location&.first
      file.nil? ? location.nil? : location.to_s.end_with?(file)
    end

    def swapped?(target, name)
      target.singleton_class.private_method_defined?(stdlib_name(name), false)
    end

    # Replaces `target.name` with `source`'s instance method `name`, keeping the stdlib's
    # as the private alias. Public, as the module functions are.
    def swap(target, name, source)
      singleton = target.singleton_class
      # Not alias_method: that would resolve `name` through modules prepended to the
      # singleton class and keep the first one's method.
      singleton.define_method(stdlib_name(name), own_method(target, name).unbind)
      singleton.send(:private, stdlib_name(name))
      singleton.define_method(name, source.instance_method(name))
      singleton.send(:public, name)
    end

    # The stdlib's `target.name` as a Method, swapped or not.
    def stdlib_method(target, name)
      return target.method(stdlib_name(name)) if swapped?(target, name)

      own_method(target, name)
    end
  end
end
