# frozen_string_literal: true

module RustyStdlib
  VERSION = "0.1.0"
end
