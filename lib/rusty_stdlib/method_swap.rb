# frozen_string_literal: true

module RustyStdlib
  # Puts a method of ours in place of a stdlib method, in the method table of the module
  # or class that defines it (`owner`: Marshal's singleton class for Marshal.load,
  # Net::HTTPHeader for #capitalize, ...) rather than in a module prepended to it. An app
  # then wraps or replaces ours exactly as it did the stdlib's: a module prepended before
  # rusty_stdlib was required (ActiveSupport 6.1's Marshal.load autoloading, say) or after
  # it still runs first and reaches ours through `super`; an alias_method chain made later
  # (Zeitwerk's Kernel#require) captures ours; a later redefinition (Oj.mimic_JSON, a
  # patched Net::HTTPHeader#capitalize) replaces ours. A prepended module of ours would
  # run before all of them and hide the later ones.
  #
  # The replaced method stays in `owner` as a private alias (STDLIB_PREFIX + name), which
  # ours calls for whatever it leaves to the stdlib: private, so `respond_to?`,
  # `singleton_methods` and `instance_methods` do not show it, and unlike a Method object
  # it can be called inside any Ractor.
  module MethodSwap
    STDLIB_PREFIX = "__rusty_stdlib_stdlib_"

    # [owner, name] => the UnboundMethod `swap` put there, to tell at `unswap` whether it
    # is still ours (a later redefinition or alias chain must not be undone). Touched only
    # when installing or uninstalling, in the main Ractor.
    @swapped_in = {}

    module_function

    # The name of the replaced `name` once swapped.
    def stdlib_name(name)
      :"#{STDLIB_PREFIX}#{name}"
    end

    # `owner`'s own method `name` (below any module prepended to it), as an UnboundMethod.
    def own_method(owner, name)
      method = owner.instance_method(name)
      method = method.super_method while method.owner != owner && method.super_method
      method
    end

    # Whether `owner` has its own method `name`, defined in a file ending in `file` (nil:
    # a C function), and not swapped yet.
    def stock?(owner, name, file)
      return false unless owner.method_defined?(name) || owner.private_method_defined?(name)

      method = own_method(owner, name)
      return false if method.owner != owner || swapped?(owner, name)

      location = method.source_location&.first
      file.nil? ? location.nil? : location.to_s.end_with?(file)
    end

    def swapped?(owner, name)
      owner.private_method_defined?(stdlib_name(name), false)
    end

    # Replaces `owner`'s own `name` with `source`'s instance method `name` (with the
    # replaced method's visibility), keeping the replaced one as the private alias.
    def swap(owner, name, source)
      visibility = visibility(owner, name)
      # Not alias_method: that would resolve `name` through modules prepended to `owner`
      # and keep the first one's method.
      put(owner, stdlib_name(name), own_method(owner, name), :private)
      put(owner, name, source.instance_method(name), visibility)
      @swapped_in[[owner, name]] = owner.instance_method(name)
    end

    # Puts the stdlib's methods back for each [owner, names] of `swaps` and drops the
    # aliases, all or none: if the app redefined one of ours since (an alias_method chain,
    # a new def), nothing is undone and the answer says which
    # (nil when done). A module prepended to `owner` stays and reaches the stdlib's.
    def unswap(swaps)
      pairs = swaps.flat_map { |owner, names| names.map { |name| [owner, name] } }
                   .select { |owner, name| swapped?(owner, name) }
      changed = pairs.reject { |owner, name| ours_in_place?(owner, name) }
      return "#{changed.map { |owner, name| describe(owner, name) }.join(', ')} changed since rusty_stdlib swapped it in" unless changed.empty?

      pairs.each do |owner, name|
        put(owner, name, owner.instance_method(stdlib_name(name)), visibility(owner, name))
        owner.send(:remove_method, stdlib_name(name))
        @swapped_in.delete([owner, name])
      end
      nil
    end

    # Whether `owner`'s own `name` is still what `swap` put there.
    def ours_in_place?(owner, name)
      own_method(owner, name) == @swapped_in[[owner, name]]
    end

    # "Marshal.load" or "Net::HTTPHeader#capitalize", as a user would write it.
    def describe(owner, name)
      owner.singleton_class? ? "#{owner.inspect[/\A#<Class:(.*)>\z/, 1]}.#{name}" : "#{owner}##{name}"
    end

    # The replaced `name` of `owner`, as an UnboundMethod (the current one if not swapped).
    def stdlib_method(owner, name)
      swapped?(owner, name) ? owner.instance_method(stdlib_name(name)) : own_method(owner, name)
    end

    # Runs the block with the stdlib's methods back in place of ours, for each
    # [owner, names] of `swaps` (specs compare the two).
    def with_stdlib(swaps)
      ours = swaps.flat_map do |owner, names|
        names.select { |name| swapped?(owner, name) }
             .map { |name| [owner, name, own_method(owner, name), visibility(owner, name)] }
      end
      ours.each { |owner, name, _, visibility| put(owner, name, owner.instance_method(stdlib_name(name)), visibility) }
      yield
    ensure
      ours&.each { |owner, name, method, visibility| put(owner, name, method, visibility) }
    end

    def visibility(owner, name)
      if owner.private_method_defined?(name) then :private
      elsif owner.protected_method_defined?(name) then :protected
      else :public
      end
    end

    def put(owner, name, method, visibility)
      owner.define_method(name, method)
      owner.send(visibility, name)
    end
  end
end
