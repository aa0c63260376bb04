# frozen_string_literal: true

module Fuzz
  # Byte-level damage to a document: cuts, inserted tokens, deleted and replaced bytes.
  module Mutation
    module_function

    def mutate(bytes, rng, tokens, max_edits: 4)
      doc = bytes.b
      rng.rand(1..max_edits).times do
        pos = rng.rand(doc.bytesize + 1)
        case rng.rand(4)
        when 0 then doc = doc.byteslice(0, pos)
        when 1 then doc.insert(pos, tokens[rng.rand(tokens.size)].b)
        when 2 then doc[pos, rng.rand(1..3)] = "" if pos < doc.bytesize
        else doc.setbyte(pos, rng.rand(256)) if pos < doc.bytesize
        end
      end
      doc
    end

    # A window of at most `max` bytes of a large document.
    def window(doc, rng, max)
      return doc if doc.bytesize <= max

      doc.byteslice(rng.rand(doc.bytesize), rng.rand(1..max))
    end
  end
end
