# frozen_string_literal: true

module Bench
  # Number formatting shared by the Markdown report and the chart.
  module Format
    def self.ns(value)
      value >= 100 ? thousands(value.round) : format("%.1f", value)
    end

    def self.ratio(value)
      format("%.2fx", value)
    end

    def self.mb_per_s(value)
      value >= 100 ? thousands(value.round) : format("%.1f", value)
    end

    def self.allocs(value)
      format("%.1f", value)
    end

    def self.thousands(integer)
      integer.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
    end
  end
end
