# frozen_string_literal: true

require_relative "columns"
require_relative "format"

module Bench
  # A horizontal bar chart of the "vs MRI" ratios, as hand-written SVG (no gems): one
  # group of bars per workload, one bar per column other than the baseline, with a line
  # at 1.0x (as fast as `ruby`).
  class Chart
    COLORS = %w[#8da0cb #fc8d62 #66c2a5 #e78ac3 #a6d854 #ffd92f].freeze
    LABEL_W = 190
    BAR_W = 560
    BAR_H = 9
    GROUP_GAP = 8
    TOP = 40

    def initialize(results)
      @results = results
      @columns = results.flat_map(&:columns).uniq(&:id).reject { |c| c == Columns.baseline }
    end

    def svg
      max = [@results.flat_map { |r| @columns.map { |c| ratio(r, c) } }.compact.max || 1, 1.5].max
      y = TOP
      body = @results.map do |result|
        group = group_svg(result, y, max)
        y += @columns.size * BAR_H + GROUP_GAP
        group
      end
      width = LABEL_W + BAR_W + 70
      one_x = LABEL_W + BAR_W / max
      <<~SVG
        <svg xmlns="http://www.w3.org/2000/svg" width="#{width}" height="#{y + 10}" font-family="sans-serif" font-size="10">
        <rect width="100%" height="100%" fill="white"/>
        <text x="6" y="17" font-weight="bold">speed vs ruby (stdlib)</text>
        #{legend}
        #{body.join("\n")}
        <line x1="#{one_x.round(1)}" y1="#{TOP - 4}" x2="#{one_x.round(1)}" y2="#{y}" stroke="#333" stroke-dasharray="3,2"/>
        <text x="#{one_x.round(1)}" y="#{y + 9}" text-anchor="middle">1.0x = ruby (stdlib)</text>
        </svg>
      SVG
    end

    private

    def ratio(result, column)
      result.vs_mri(result.cells[column.id])
    end

    def legend
      @columns.each_with_index.map do |column, i|
        x = LABEL_W + i * 130
        %(<rect x="#{x}" y="8" width="10" height="10" fill="#{COLORS[i % COLORS.size]}"/>) +
          %(<text x="#{x + 14}" y="17">#{escape(column.label)}</text>)
      end.join("\n")
    end

    def group_svg(result, y, max)
      label = %(<text x="#{LABEL_W - 6}" y="#{y + @columns.size * BAR_H / 2.0 + 3}" text-anchor="end">#{escape(result.workload.name)}</text>)
      bars = @columns.each_with_index.map do |column, i|
        value = ratio(result, column)
        top = y + i * BAR_H
        next %(<text x="#{LABEL_W + 2}" y="#{top + BAR_H - 1}" fill="#999">n/a</text>) unless value

        w = (BAR_W * value / max).round(1)
        %(<rect x="#{LABEL_W}" y="#{top}" width="#{w}" height="#{BAR_H - 1}" fill="#{COLORS[i % COLORS.size]}"/>) +
          %(<text x="#{LABEL_W + w + 3}" y="#{top + BAR_H - 1}">#{Format.ratio(value)}</text>)
      end
      [label, *bars].join("\n")
    end

    def escape(text)
      text.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;")
    end
  end
end
