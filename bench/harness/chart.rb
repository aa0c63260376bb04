# frozen_string_literal: true

require_relative "columns"
require_relative "format"

module Bench
  # A horizontal bar chart of the "vs ruby" ratios, as hand-written SVG (no gems): one
  # group of bars per workload, one bar per column other than the baseline. The scale is
  # logarithmic around the 1.0x line (as fast as `ruby`): a bar to the right is faster,
  # to the left slower, and 1.2x and 60x both read at a glance. The caption names the run.
  class Chart
    COLORS = %w[#4c72b0 #dd8452 #55a868 #c44e52 #8172b3 #937860].freeze
    BAR_W = 560
    BAR_H = 11
    GROUP_GAP = 8
    CHAR_W = 6.2 # a generous average glyph width at font-size 10, for layout
    TICKS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500].freeze

    # caption: who and what was measured (date, machine, Ruby, commit).
    def initialize(results, caption: nil)
      @results = results
      @caption = caption
      columns = results.flat_map(&:columns).uniq(&:id).reject { |c| c == Columns.baseline }
      # A column with no ratio anywhere (--yjit on a Ruby without YJIT, a peer that was
      # not loadable) would only add rows of "n/a": the report's Notes say why.
      @columns = columns.select { |c| results.any? { |r| ratio(r, c)&.positive? } }
    end

    def svg
      @label_w = ((@results.map { |r| r.workload.name.size }.max || 10) * CHAR_W).ceil + 12
      @width = @label_w + BAR_W + 60
      legend_rows = legend_layout
      top = 30 + legend_rows.size * 14 + (@caption ? 14 : 0) + 16
      @lo, @hi = scale
      y = top
      body = @results.map do |result|
        group = group_svg(result, y)
        y += @columns.size * BAR_H + GROUP_GAP
        group
      end
      <<~SVG
        <svg xmlns="http://www.w3.org/2000/svg" width="#{@width}" height="#{y + 24}" font-family="sans-serif" font-size="10">
        <rect width="100%" height="100%" fill="white"/>
        <text x="6" y="16" font-weight="bold" font-size="12">speed vs ruby (stdlib, no JIT), log scale: right of 1.0x is faster</text>
        #{caption_svg}
        #{legend_svg(legend_rows, @caption ? 44 : 30)}
        #{axis_svg(top - 4, y)}
        #{body.join("\n")}
        </svg>
      SVG
    end

    private

    def ratio(result, column)
      result.vs_mri(result.cells[column.id])
    end

    # The powers-of-ten-ish range that holds every ratio and 1.0x with some room.
    def scale
      values = @results.flat_map { |r| @columns.map { |c| ratio(r, c) } }.compact.select(&:positive?)
      lo = [values.min || 1, 0.5].min
      hi = [values.max || 1, 2].max
      [TICKS.select { |t| t <= lo }.max || lo, TICKS.find { |t| t >= hi * 1.15 } || hi * 1.5]
    end

    def x_of(value)
      value = value.clamp(@lo, @hi)
      @label_w + BAR_W * Math.log(value / @lo) / Math.log(@hi / @lo)
    end

    def caption_svg
      return "" unless @caption

      %(<text x="6" y="32" fill="#444">#{escape(@caption)}</text>)
    end

    # Rows of [column index, x] that fit the width.
    def legend_layout
      rows = [[]]
      x = 6
      @columns.each_with_index do |column, i|
        w = 18 + (column.label.size * CHAR_W).ceil + 14
        if x + w > @width && !rows.last.empty?
          rows << []
          x = 6
        end
        rows.last << [i, x]
        x += w
      end
      rows
    end

    def legend_svg(rows, y0)
      rows.each_with_index.flat_map do |row, r|
        y = y0 + r * 14
        row.map do |i, x|
          %(<rect x="#{x}" y="#{y - 9}" width="10" height="10" fill="#{COLORS[i % COLORS.size]}"/>) +
            %(<text x="#{x + 14}" y="#{y}">#{escape(@columns[i].label)}</text>)
        end
      end.join("\n")
    end

    def axis_svg(y_top, y_bottom)
      TICKS.select { |t| t >= @lo && t <= @hi }.map do |t|
        x = x_of(t).round(1)
        style = t == 1 ? %(stroke="#333" stroke-dasharray="3,2") : %(stroke="#ddd")
        %(<line x1="#{x}" y1="#{y_top}" x2="#{x}" y2="#{y_bottom}" #{style}/>) +
          %(<text x="#{x}" y="#{y_bottom + 12}" text-anchor="middle" fill="#444">#{t >= 1 ? t.to_i : t}x</text>)
      end.join("\n")
    end

    def group_svg(result, y)
      mid = y + @columns.size * BAR_H / 2.0 + 3
      label = %(<text x="#{@label_w - 6}" y="#{mid.round(1)}" text-anchor="end">#{escape(result.workload.name)}</text>)
      one = x_of(1.0)
      bars = @columns.each_with_index.map do |column, i|
        value = ratio(result, column)
        top = y + i * BAR_H
        text_y = top + BAR_H - 2
        next %(<text x="#{(one + 3).round(1)}" y="#{text_y}" fill="#999" font-size="9">n/a</text>) unless value&.positive?

        x = x_of(value)
        left, right = [one, x].minmax
        # The figure right of the bar when faster; when slower, right of the 1.0x line
        # (left of the bar it would run into the workload's label).
        text = %(<text x="#{((x >= one ? right : one) + 3).round(1)}" y="#{text_y}" font-size="9">#{Format.ratio(value)}</text>)
        %(<rect x="#{left.round(1)}" y="#{top}" width="#{[right - left, 1].max.round(1)}" height="#{BAR_H - 2}" fill="#{COLORS[i % COLORS.size]}"/>) + text
      end
      [label, *bars].join("\n")
    end

    def escape(text)
      text.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;")
    end
  end
end
